//! What an agent leaves running: a process in a new session, a double fork ignoring SIGTERM, a late
//! writer of git config, a planted git under the shared home; each is gone (or never run) before the
//! runner's git and push.

use super::*;

/// With a remote, so that the runner fetches and pushes (with the token) after the agent.
fn with_origin(a: &Attack) {
    let origin = common::bare_origin(a.jail.g.tools_path());
    git(
        a.jail.g.path(),
        &["remote", "add", "origin", origin.to_str().unwrap()],
    );
    git(a.jail.g.path(), &["push", "-q", "origin", "main"]);
}

/// A program the agent leaves behind with `launch` (`{}`: the program), running `body`, which
/// says `steal <name>`: it ran inside the sandbox (the twin), it is gone after the tick, it found
/// nothing, and the work landed on the remote the runner pushed to meanwhile.
fn left_behind(name: &str, body: &str, launch: &str) {
    let a = Attack::plain();
    with_origin(&a);
    let script = leftover(&a, &format!("{name}.sh"), body);
    a.agent(&format!("{}\nsleep 0.3", launch.replace("{}", &script)));
    a.tasks(&[]);
    a.ticks(&[]);
    assert!(a.loot().contains(&format!("ran: {name}")), "{}", a.loot());
    assert!(a.landed("attacked.txt") && a.landed("plain.txt"));
}

#[test]
fn a_process_left_in_a_new_session_is_gone_before_the_runner_pushes() {
    left_behind(
        "searcher",
        "i=0\nwhile [ $i -lt 400 ]; do steal searcher; i=$((i+1)); sleep 0.05; done",
        "setsid {} </dev/null >/dev/null 2>&1 &",
    );
}

#[test]
fn a_double_forked_process_ignoring_sigterm_is_gone_after_its_run() {
    left_behind(
        "stubborn",
        "trap '' TERM HUP INT\nwhile :; do steal stubborn; sleep 0.1; done",
        "( ( setsid {} </dev/null >/dev/null 2>&1 & ) & )",
    );
}

/// A process the agent leaves behind rewriting git configuration while the runner works: it
/// is reaped with the run, and what it wrote went to the agent's own repository (the runner's
/// is out of its reach), which the runner never reads.
#[test]
fn a_late_writer_of_git_config_cannot_race_the_runner() {
    let a = Attack::plain();
    with_origin(&a);
    let runner = a.jail.g.path().join(".git");
    let before = std::fs::read_to_string(runner.join("config")).unwrap();
    let script = leftover(
        &a,
        "rewriter.sh",
        "i=0\nwhile [ $i -lt 150 ]; do\n  for COMMON in \"$1\" \"$2\"; do\n    git config --file \"$COMMON/config\" filter.evil.clean \"sh -c 'echo ran: filter >> $LOOT'\" 2>/dev/null\n    mkdir -p \"$COMMON/info\" 2>/dev/null; echo '* filter=evil' > \"$COMMON/info/attributes\"\n  done 2>/dev/null\n  i=$((i+1)); sleep 0.1\ndone",
    );
    a.agent(&format!(
        "setsid {script} \"$(git rev-parse --git-common-dir)\" {runner} </dev/null >/dev/null 2>&1 &\nsleep 0.5",
        runner = runner.display()
    ));
    let (attack, _) = a.tasks(&[]);
    a.ticks(&[]);
    let run = &a.runs(&attack)[0];
    assert_eq!(run["status"], "success", "{run}");
    let after = std::fs::read_to_string(runner.join("config")).unwrap();
    assert!(!after.contains("evil"), "{after}");
    assert!(after.starts_with(&before), "{after}");
    assert!(!runner.join("info/attributes").exists());
    assert!(!a.loot().contains("ran: filter"), "{}", a.loot());
    assert!(a.landed("plain.txt"));
    assert!(a.landed("attacked.txt"));
}

#[test]
fn with_the_runner_s_home_shared_a_planted_git_is_still_never_run_by_the_runner() {
    // `sandbox.agent_home: runner` lets the agent write the runner's home: the planted programs
    // stay there, but the runner resolved its git at start, away from $HOME.
    let a = Attack::new(Setup {
        extra: "sandbox:\n  filesystem: none\n  agent_home: runner\n",
        ..Setup::default()
    });
    a.agent(&plant(".local/bin", a.runner_home()));
    a.tasks(&[]);
    for i in 0..6 {
        let out = a.jail.run(&minute(i * 10), &["tick"], &[]);
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    }
    assert!(
        a.runner_home().join(".local/bin/git").exists(),
        "the twin: it was planted"
    );
    assert!(!a.loot().contains("ran: planted"), "{}", a.loot());
    assert!(a.landed("attacked.txt") && a.landed("plain.txt"));
}

#[test]
fn a_git_found_only_under_home_is_refused_with_the_fix() {
    let a = Attack::plain();
    let bin = a.runner_home().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(which("git").unwrap(), bin.join("git")).unwrap();
    let path = format!("{}:/nonexistent", bin.display());
    let out = a
        .jail
        .run(common::NOW, &["status"], &[("PATH", path.as_str())]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("git was found only where an agent could write it")
            && out.stderr.contains("OPENTIGER_GIT"),
        "{}",
        out.stderr
    );
    // doctor reports it among its checks instead of stopping.
    let out = a
        .jail
        .run(common::NOW, &["doctor"], &[("PATH", path.as_str())]);
    assert!(out.stdout.contains("runner's git"), "{}", out.stdout);
}

#[test]
fn in_github_mode_a_leftover_searching_during_the_push_is_gone_and_finds_nothing() {
    let a = Attack::new(Setup {
        mode: "github",
        extra: "report:\n  dashboard_issue: false\n",
        ..Setup::default()
    });
    with_origin(&a);
    let origin = a.jail.g.tools_path().join("origin.git");
    // The server merges in the origin as this process's user while the tick, another user,
    // pushes there: the folders either makes stay writable by both.
    git(&origin, &["config", "core.sharedRepository", "0777"]);
    let server =
        common::github::GithubServer::with_token("acme", "widgets", CANARY).with_git(&origin);
    server.add_issue(
        "ATTACK the pushes",
        "Write attacked.txt.",
        &["opentiger"],
        "alice",
        "OWNER",
    );
    let searcher = leftover(
        &a,
        "searcher.sh",
        "i=0\nwhile [ $i -lt 400 ]; do steal searcher; i=$((i+1)); sleep 0.05; done",
    );
    let stubborn = leftover(
        &a,
        "stubborn.sh",
        "trap '' TERM HUP INT\nwhile :; do steal stubborn; sleep 0.1; done",
    );
    a.agent(&format!(
        "setsid {searcher} </dev/null >/dev/null 2>&1 &\n( ( setsid {stubborn} </dev/null >/dev/null 2>&1 & ) & )\nsleep 0.3"
    ));
    let url = server.base_url();
    let env = [
        ("GITHUB_API_URL", url.as_str()),
        ("GITHUB_REPOSITORY", "acme/widgets"),
    ];
    for i in 0..3 {
        a.tick(i * 10, &env);
    }
    // The twin: both ran before their run ended, and the runner pushed and opened the PR with
    // the token meanwhile.
    assert!(a.loot().contains("ran: searcher"), "{}", a.loot());
    assert!(a.loot().contains("ran: stubborn"), "{}", a.loot());
    assert!(!server.pulls().is_empty(), "no PR was opened");
}

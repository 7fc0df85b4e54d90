//! The ways out of the sandbox of issues 25 and 31, each tried by a scripted agent as GitHub's
//! runner user would meet it: the ticks run as an unprivileged user, from a shell whose
//! environment holds the forge token, with `$HOME/.local/bin` first on `PATH`
//! (`common::unprivileged`). Agents run under Landlock and may write a loot folder
//! (`sandbox.writable`): whatever an agent, a check it rewrote or a program it planted finds, it
//! drops there. The canary is never found there, nothing is planted where the runner's user
//! finds it, no process of an agent is alive after a tick, and a plain task next to the attack
//! still lands.
//!
//! The agent script reads its prompt: a task whose title says ATTACK runs the attack, any other
//! task writes `plain.txt`.

#[path = "attacks_escape/checks.rs"]
mod checks;
use crate::common;
#[path = "attacks_escape/git_dir.rs"]
mod git_dir;
#[path = "attacks_escape/leftovers.rs"]
mod leftovers;
#[path = "attacks_escape/roles.rs"]
mod roles;

use std::path::Path;

use common::unprivileged::{Jail, CANARY};
use common::{git, minute, Setup};

/// A shell fragment that looks for the token everywhere a process of the agent's could, and
/// says it ran, into the loot folder (`$1`: who is looking).
const STEAL: &str = r#"steal() {
  echo "ran: $1 uid=$(id -u)" >> "$LOOT"
  for f in /proc/[0-9]*/environ; do tr '\0' '\n' < "$f" 2>/dev/null | grep -a TOKEN >> "$LOOT"; done
  grep -ra ghp_ "$HOME" /tmp "${TMPDIR:-/tmp}/.." 2>/dev/null | head -5 >> "$LOOT"
}
"#;

struct Attack {
    jail: Jail,
}

impl Attack {
    fn new(setup: Setup) -> Attack {
        Attack {
            jail: Jail::confined(setup),
        }
    }

    fn plain() -> Attack {
        Attack::new(Setup::default())
    }

    /// The runner user's real home, which agents must not write.
    fn runner_home(&self) -> &Path {
        self.jail.home.path()
    }

    /// An agent script: `attack` (shell lines, with `steal` and `$LOOT` defined) for a task
    /// titled ATTACK, else a plain change.
    fn agent(&self, attack: &str) {
        let script = format!(
            "#!/bin/sh\nLOOT={loot}\n{STEAL}if grep -q ATTACK \"$OPENTIGER_PROMPT_FILE\"; then\n{attack}\necho attacked > attacked.txt\nelse\necho plain > plain.txt\nfi\n",
            loot = self.jail.loot.display(),
        );
        self.jail.g.agent(&script);
    }

    /// Adds the attack task (with these `--command` checks) and a plain one; their ids.
    fn tasks(&self, commands: &[&str]) -> (String, String) {
        let mut args = vec!["--title", "ATTACK", "--goal", "anything"];
        for c in commands {
            args.extend(["--command", c]);
        }
        let attack = self.jail.add_task(&args);
        let plain = self
            .jail
            .add_task(&["--title", "Plain", "--goal", "plain.txt says plain"]);
        (attack, plain)
    }

    fn tick(&self, at: u32, env: &[(&str, &str)]) -> common::Out {
        let out = self.jail.run(&minute(at), &["tick"], env);
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        self.assert_clean(&out);
        out
    }

    /// Ticks until both tasks are done or failed (at most 8 ticks, `limits` permitting).
    fn ticks(&self, env: &[(&str, &str)]) {
        for i in 0..8 {
            self.tick(i * 10, env);
        }
    }

    /// The canary nowhere, nothing of the agent's alive, nothing planted in the runner's home.
    fn assert_clean(&self, out: &common::Out) {
        let loot = self.jail.loot_text();
        assert!(!loot.contains(CANARY), "the token was found:\n{loot}");
        assert!(!out.stdout.contains(CANARY) && !out.stderr.contains(CANARY));
        let all = git(self.jail.g.path(), &["log", "--all", "-p", "--format=%B"]);
        assert!(!all.contains(CANARY), "{all}");
        let marker = self.jail.g.tools_path().display().to_string();
        let alive = self.jail.alive_with(&marker);
        assert!(
            alive.is_empty(),
            "processes of an agent outlived the tick: {alive:?}"
        );
        for planted in [
            ".local/bin/git",
            ".local/bin/ssh",
            ".cargo/bin/git",
            ".ssh/config",
            ".bashrc",
            ".local/lib/evil.so",
        ] {
            let path = self.runner_home().join(planted);
            assert!(!path.exists(), "the agent planted {}", path.display());
        }
    }

    /// Whether the task's change reached `main` (the remote's, when there is one).
    fn landed(&self, file: &str) -> bool {
        let origin = self.jail.g.tools_path().join("origin.git");
        if origin.exists() {
            let spec = format!("main:{file}");
            return std::process::Command::new("git")
                .args(["-c", "safe.directory=*", "-C"])
                .arg(&origin)
                .args(["cat-file", "-e", &spec])
                .status()
                .is_ok_and(|s| s.success());
        }
        self.jail.g.file_on_main(file).is_some()
    }

    fn runs(&self, id: &str) -> Vec<serde_json::Value> {
        self.jail.runs(id)
    }

    fn loot(&self) -> String {
        self.jail.loot_text()
    }

    /// The start of a script that steals into the loot folder when it runs (`steal WHO`).
    fn stealer(&self) -> String {
        format!("LOOT={}\n{STEAL}", self.jail.loot.display())
    }
}

/// A program planted on the runner's `PATH` (`dir` under the home) that steals when run.
fn plant(dir: &str, home: &Path) -> String {
    let mut lines = String::new();
    for target in [format!("$HOME/{dir}"), format!("{}/{dir}", home.display())] {
        for program in ["git", "ssh"] {
            lines.push_str(&format!(
                "mkdir -p {target} 2>/dev/null\nprintf '#!/bin/sh\\nLOOT=%s\\necho \"ran: planted {program} $(id -u)\" >> \"$LOOT\"\\ncat /proc/*/environ >> \"$LOOT\" 2>/dev/null\\nexit 1\\n' \"$LOOT\" > {target}/{program} 2>/dev/null && chmod +x {target}/{program}\n"
            ));
        }
    }
    lines
}

fn planted_programs_never_run(dir: &str) {
    let a = Attack::plain();
    a.agent(&plant(dir, a.runner_home()));
    let (attack, _) = a.tasks(&[]);
    a.ticks(&[]);
    assert!(!a.loot().contains("ran: planted"), "{}", a.loot());
    assert_eq!(a.runs(&attack)[0]["failure_code"], serde_json::Value::Null);
    assert!(a.landed("attacked.txt") && a.landed("plain.txt"));
}

#[test]
fn a_git_planted_in_local_bin_is_never_run() {
    planted_programs_never_run(".local/bin");
}

#[test]
fn a_git_planted_in_cargo_bin_is_never_run() {
    planted_programs_never_run(".cargo/bin");
}

/// A check the agent can rewrite: committed on `main` first.
fn commit_on_main(a: &Attack, files: &[(&str, &str)]) {
    for (path, text) in files {
        a.jail.g.repo.file(path, text);
    }
    git(a.jail.g.path(), &["add", "-A"]);
    git(a.jail.g.path(), &["commit", "-q", "-m", "checks"]);
}

/// The attack task's verification ran the agent's code (it left its mark), inside the
/// sandbox (no token, nothing planted), and the change landed.
fn check_ran_confined(a: &Attack, who: &str) {
    let loot = a.loot();
    assert!(
        loot.contains(&format!("ran: {who}")),
        "the check did not run:\n{loot}"
    );
    assert!(
        a.landed("attacked.txt"),
        "the attack task's check passed: {}",
        a.jail.run(common::NOW, &["status", "--all"], &[]).stdout
    );
    assert!(a.landed("plain.txt"));
}

#[test]
fn a_rewritten_check_script_runs_in_the_agent_s_sandbox() {
    let a = Attack::plain();
    commit_on_main(&a, &[("check.sh", "#!/bin/sh\nexit 0\n")]);
    let home = a.runner_home().display().to_string();
    let check = format!(
        "{}steal check.sh\nmkdir -p {home}/.local/bin && echo x > {home}/.local/bin/git\nexit 0",
        a.stealer()
    );
    a.agent(&format!("cat > check.sh <<'EOF'\n{check}\nEOF"));
    a.tasks(&["sh check.sh"]);
    a.ticks(&[]);
    check_ran_confined(&a, "check.sh");
}

#[test]
fn a_makefile_target_runs_in_the_agent_s_sandbox() {
    let a = Attack::plain();
    commit_on_main(&a, &[("Makefile", "check:\n\ttrue\n")]);
    a.agent(
        "printf 'check:\\n\\techo \"ran: make $$(id -u)\" >> %s\\n\\tcat /proc/*/environ >> %s 2>/dev/null || true\\n' \"$LOOT\" \"$LOOT\" > Makefile",
    );
    a.tasks(&["make check"]);
    a.ticks(&[]);
    check_ran_confined(&a, "make");
}

#[test]
fn npm_pretest_and_postinstall_run_in_the_agent_s_sandbox() {
    let a = Attack::plain();
    commit_on_main(
        &a,
        &[
            ("package.json", "{\"name\": \"t\", \"version\": \"1.0.0\", \"scripts\": {\"test\": \"node test.js\"}}\n"),
            ("test.js", "require('assert').strictEqual(1 + 1, 2);\n"),
        ],
    );
    a.agent(&format!(
        "cat > steal.sh <<'EOF'\n{}steal npm-$1\nEOF\nprintf '{{\"name\": \"t\", \"version\": \"1.0.0\", \"scripts\": {{\"pretest\": \"sh steal.sh pretest\", \"postinstall\": \"sh steal.sh postinstall\", \"test\": \"node test.js\"}}}}\\n' > package.json",
        a.stealer()
    ));
    a.tasks(&["npm test"]);
    a.ticks(&[]);
    check_ran_confined(&a, "npm-pretest");
}

#[test]
fn build_rs_run_by_a_cargo_test_check_runs_in_the_agent_s_sandbox() {
    let a = Attack::plain();
    let Some(env) = cargo_env(&a) else {
        return;
    };
    commit_on_main(&a, &small_crate());
    let loot = a.jail.loot.with_file_name("build-rs.txt");
    let build_rs = format!(
        r#"fn main() {{
    let mut text = format!("ran: build.rs {{}}\n", std::process::id());
    for e in std::fs::read_dir("/proc").unwrap().flatten() {{
        if let Ok(b) = std::fs::read(e.path().join("environ")) {{
            text.push_str(&String::from_utf8_lossy(&b));
        }}
    }}
    let _ = std::fs::write("{}", text);
}}"#,
        loot.display()
    );
    a.agent(&format!("cat > build.rs <<'EOF'\n{build_rs}\nEOF"));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    a.tasks(&["cargo test --offline -q"]);
    a.ticks(&env);
    check_ran_confined(&a, "build.rs");
}

/// A crate with one test and no dependencies.
fn small_crate() -> Vec<(&'static str, &'static str)> {
    vec![
        (
            "Cargo.toml",
            "[package]\nname = \"small\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
        ),
        (
            "src/lib.rs",
            "pub fn add(a: i32, b: i32) -> i32 { a + b }\n#[cfg(test)]\nmod tests { #[test] fn adds() { assert_eq!(super::add(1, 2), 3); } }\n",
        ),
        (".gitignore", "/.opentiger/state.sqlite*\n/target\n"),
    ]
}

/// The tick's environment for a `cargo test` check as the runner's user: the toolchain's
/// folders and `cargo` on `PATH`. `None` (said loudly) when that user cannot run cargo here.
fn cargo_env(a: &Attack) -> Option<Vec<(&'static str, String)>> {
    let cargo = which("cargo")?;
    let bin = cargo.parent()?.to_path_buf();
    let mut env = vec![("PATH", format!("{}:{}", a.jail.path_var(), bin.display()))];
    for (var, default) in [("CARGO_HOME", ".cargo"), ("RUSTUP_HOME", ".rustup")] {
        let value = std::env::var(var).ok().or_else(|| {
            let home = std::env::var("HOME").ok()?;
            Some(format!("{home}/{default}"))
        })?;
        env.push((var, value));
    }
    let probe: Vec<(&str, &str)> = env
        .iter()
        .map(|(k, v)| (*k, v.as_str()))
        .chain([("HOME", "/")])
        .collect();
    if a.jail.user.can_run("cargo", &probe) {
        Some(env)
    } else {
        eprintln!(
            "\n!!! SKIPPED: the runner's user cannot run cargo at {} (a toolchain under a home it cannot enter; `.ci/run` makes it reachable) !!!\n",
            cargo.display()
        );
        None
    }
}

fn which(program: &str) -> Option<std::path::PathBuf> {
    std::env::var("PATH")
        .ok()?
        .split(':')
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file())
}

/// Issue 35: hooks, attributes, excludes, alternates and a moved `main`, written into the
/// agent's own repository (the one `git` finds in its workspace) and tried on the runner's by
/// its path: the runner's repository is out of reach, its own is never read by the runner, so
/// nothing is put back and nothing fails — both tasks land and no hook ever ran.
#[test]
fn hooks_attributes_and_alternates_in_any_git_folder_never_reach_the_runner() {
    let a = Attack::plain();
    let runner = a.jail.g.path().join(".git");
    let main_before = git(a.jail.g.path(), &["rev-parse", "main"]);
    a.agent(&format!(
        // The hooks last: the agent's own git would run them (in its sandbox) if it ran again.
        "for COMMON in \"$(git rev-parse --git-common-dir)\" {runner}; do\ngit --git-dir=\"$COMMON\" update-ref refs/heads/main \"$(git -c user.name=a -c user.email=a@a commit-tree 'HEAD^{{tree}}' -m evil)\" 2>/dev/null\nmkdir -p \"$COMMON/info\" 2>/dev/null\necho '* filter=evil ident' > \"$COMMON/info/attributes\"\necho '*.txt' >> \"$COMMON/info/exclude\"\necho /tmp > \"$COMMON/objects/info/alternates\"\nfor h in post-commit pre-push reference-transaction post-checkout; do printf '#!/bin/sh\\necho \"ran: hook\" >> %s\\n' \"$LOOT\" > \"$COMMON/hooks/$h\"; chmod +x \"$COMMON/hooks/$h\"; done 2>/dev/null\ndone",
        runner = runner.display()
    ));
    let (attack, _) = a.tasks(&[]);
    a.ticks(&[]);
    let run = &a.runs(&attack)[0];
    assert_eq!(run["status"], "success", "{run}");
    assert!(!runner.join("info/attributes").exists());
    assert!(!runner.join("objects/info/alternates").exists());
    assert!(!runner.join("hooks/post-commit").exists());
    let log = git(a.jail.g.path(), &["log", "--format=%s", "main"]);
    assert!(!log.contains("evil"), "{log}");
    assert!(
        git(
            a.jail.g.path(),
            &["merge-base", "--is-ancestor", &main_before, "main"]
        )
        .is_empty(),
        "main only moved forward"
    );
    assert!(!a.loot().contains("ran: hook"), "{}", a.loot());
    assert!(a.landed("plain.txt"));
    assert!(a.landed("attacked.txt"), "an ordinary change, after all");
}

#[test]
fn an_ssh_config_and_a_bashrc_never_reach_the_runner_s_home() {
    let a = Attack::new(Setup {
        default_agent: "    env_passthrough: [BASH_ENV]\n",
        ..Setup::default()
    });
    let home = a.runner_home().display().to_string();
    let bash_env = format!("{home}/.bashrc");
    a.agent(&format!(
        "for h in \"$HOME\" {home}; do mkdir -p \"$h/.ssh\" 2>/dev/null; printf 'Host *\\n  ProxyCommand sh -c \"echo ran: ssh >> %s\"\\n' \"$LOOT\" > \"$h/.ssh/config\" 2>/dev/null; echo 'echo ran: bashrc >> '\"$LOOT\" >> \"$h/.bashrc\" 2>/dev/null; done\necho 'echo ran: bash_env >> '\"$LOOT\" >> \"$BASH_ENV\" 2>/dev/null"
    ));
    commit_on_main(&a, &[("check.sh", "exit 0\n")]);
    a.tasks(&["bash check.sh"]);
    a.ticks(&[("BASH_ENV", bash_env.as_str())]);
    assert!(!a.loot().contains("ran:"), "{}", a.loot());
    assert!(a.landed("attacked.txt") && a.landed("plain.txt"));
}

#[test]
fn ld_preload_passed_through_loads_nothing_the_agent_wrote() {
    let a = Attack::new(Setup {
        default_agent: "    env_passthrough: [LD_PRELOAD]\n",
        ..Setup::default()
    });
    let lib = a.runner_home().join(".local/lib/evil.so");
    let lib_text = lib.display().to_string();
    a.agent(&format!(
        "mkdir -p {dir} 2>/dev/null\nprintf '#include <stdio.h>\\n__attribute__((constructor)) static void f(void) {{ FILE *l = fopen(\"%s\", \"a\"); if (l) {{ fputs(\"ran: preload\\\\n\", l); fclose(l); }} }}\\n' \"$LOOT\" > \"$TMPDIR/evil.c\"\ncc -shared -fPIC -o {lib_text} \"$TMPDIR/evil.c\" 2>/dev/null\ncc -shared -fPIC -o \"$HOME/evil.so\" \"$TMPDIR/evil.c\" 2>/dev/null",
        dir = lib.parent().unwrap().display(),
    ));
    a.tasks(&[]);
    a.ticks(&[("LD_PRELOAD", lib_text.as_str())]);
    assert!(!lib.exists());
    assert!(!a.loot().contains("ran: preload"), "{}", a.loot());
    assert!(a.landed("attacked.txt") && a.landed("plain.txt"));
}

#[test]
fn links_from_the_agent_s_home_to_the_runner_s_folders_find_no_token() {
    let a = Attack::plain();
    a.agent(
        "ln -s \"$TMPDIR/..\" \"$HOME/runner-temp\"\nln -s /proc/$PPID/environ \"$HOME/runner-environ\"\nln -s /proc/1/environ \"$HOME/init-environ\"\nls \"$HOME/runner-temp/\" | sed 's/^/listed: /' >> \"$LOOT\"\ncat \"$HOME/runner-environ\" \"$HOME/init-environ\" >> \"$LOOT\" 2>/dev/null\ngrep -ra ghp_ \"$HOME/runner-temp/\" >> \"$LOOT\" 2>/dev/null",
    );
    a.tasks(&[]);
    a.ticks(&[]);
    // The twin: the links were followed (the runner's temp folder was listed).
    assert!(a.loot().contains("listed: "), "{}", a.loot());
    assert!(a.landed("attacked.txt") && a.landed("plain.txt"));
}

#[test]
fn a_check_refused_a_write_by_the_sandbox_names_the_path_and_the_setting() {
    let a = Attack::plain();
    let cache = a.jail.g.tools_path().join("cache");
    std::fs::create_dir_all(&cache).unwrap();
    commit_on_main(
        &a,
        &[(
            "check.sh",
            &format!("echo built > {}/out.txt\n", cache.display()),
        )],
    );
    a.agent("true");
    let (attack, _) = a.tasks(&["sh check.sh"]);
    let mut at = 0;
    while a.runs(&attack).is_empty() && at < 40 {
        a.tick(at, &[]);
        at += 10;
    }
    let error = a.runs(&attack)[0]["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        error.contains(&format!(
            "the sandbox refused a write to {}/out.txt",
            cache.display()
        )) && error.contains(&format!("sandbox: {{writable: [\"{}\"]}}", cache.display())),
        "{error}"
    );
    // The twin: with the folder named in the setting, the same check passes.
    let config_path = a.jail.g.path().join(".opentiger.yml");
    let config = std::fs::read_to_string(&config_path).unwrap();
    let loot_dir = a.jail.loot.parent().unwrap().display().to_string();
    std::fs::write(
        &config_path,
        config.replace(
            &format!("writable: [\"{loot_dir}\"]"),
            &format!("writable: [\"{loot_dir}\", \"{}\"]", cache.display()),
        ),
    )
    .unwrap();
    git(a.jail.g.path(), &["commit", "-qam", "allow the cache"]);
    // At the failing tick's time: the task is queued again on its cooldown by then (the
    // tick's next round applied the retry rule, issue 38), and a person's retry skips it.
    let retried = a
        .jail
        .run(&minute(at - 10), &["task", "retry", &attack], &[]);
    assert_eq!(retried.code, 0, "{}", retried.stderr);
    for i in at / 10 + 1..at / 10 + 8 {
        a.tick(i * 10, &[]);
    }
    assert_eq!(
        std::fs::read_to_string(cache.join("out.txt")).unwrap(),
        "built\n"
    );
    assert!(a.landed("attacked.txt"));
}

/// Without a view (`sandbox.view: none`, or where the kernel refuses one) what an agent left in
/// a session of its own outlives a tick killed with `SIGKILL`: the next tick ends it.
#[test]
fn after_a_killed_tick_the_next_one_ends_what_its_agent_left_in_another_session() {
    agent_leftover_of_a_killed_tick(false);
}

/// In its view, what an agent left in a session of its own is in its PID namespace, which
/// ends with the namespace's first process, which dies with the runner (issue 47).
#[test]
fn a_tick_killed_in_a_view_takes_what_its_agent_left_with_it() {
    agent_leftover_of_a_killed_tick(true);
}

fn agent_leftover_of_a_killed_tick(view: bool) {
    let a = Attack::new(without_view(view));
    let script = leftover(
        &a,
        "lingerer.sh",
        "while :; do steal lingerer; sleep 0.2; done",
    );
    // The first run leaves it and waits to be killed with its tick; a later run finishes.
    a.agent(&format!(
        "if mkdir \"$LOOT.first\" 2>/dev/null; then setsid {script} </dev/null >/dev/null 2>&1 & sleep 60; fi"
    ));
    // Only the attack: the first tick runs it.
    a.jail
        .add_task(&["--title", "ATTACK", "--goal", "anything"]);
    let shell = a.jail.spawn(&minute(0), &["tick"], &[]);
    kill_the_tick_once_left(&a, shell, &script, !view);
    a.tick(10, &[]);
    assert!(a.loot().contains("ran: lingerer"), "{}", a.loot());
}

/// A case in a view of its own (the default), or without (`sandbox.view: none`).
fn without_view(view: bool) -> Setup {
    Setup {
        extra: if view {
            ""
        } else {
            "sandbox:\n  filesystem: none\n  view: none\n"
        },
        ..Setup::default()
    }
}

/// A program the agent leaves behind, in the tools folder so that its command line names the
/// case (`alive_with`).
fn leftover(a: &Attack, name: &str, body: &str) -> String {
    let path = a.jail.g.tools_path().join(name);
    std::fs::write(
        &path,
        format!("#!/bin/sh\nLOOT={}\n{STEAL}{body}\n", a.jail.loot.display()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path.display().to_string()
}

/// Kills the tick `shell` runs, as a cancelled job's would be (with no chance to sweep), once
/// the leftover `script` (from [`leftover`]) is alive; then: the leftover outlived it
/// (`survives`: without a view, for the next tick to end), or it died with it (in a view).
fn kill_the_tick_once_left(
    a: &Attack,
    mut shell: std::process::Child,
    script: &str,
    survives: bool,
) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while a.jail.alive_with(script).is_empty() {
        if std::time::Instant::now() > deadline || shell.try_wait().unwrap().is_some() {
            let out = common::unprivileged::wait_bounded(shell);
            panic!(
                "the leftover never started:\n{}\n{}\n{}",
                out.stdout,
                out.stderr,
                a.loot()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let tick = opentiger::reaper::children_of(shell.id());
    assert_eq!(tick.len(), 1, "{tick:?}");
    // SAFETY: kill has no memory effects; the pid is our grandchild, still unreaped.
    unsafe { libc::kill(tick[0] as i32, libc::SIGKILL) };
    // Only the status: the leftovers still hold the tick's output pipes open.
    assert!(!shell.wait().unwrap().success());
    std::thread::sleep(std::time::Duration::from_millis(300));
    if survives {
        assert!(
            !a.jail.alive_with(script).is_empty(),
            "the twin: it outlived the killed tick"
        );
        return;
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while !a.jail.alive_with(script).is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "it outlived the killed tick: {:?}",
            a.jail.alive_with(script)
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

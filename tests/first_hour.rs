//! A new user's first hour (issue 15): every mistake caught before an agent runs, and output that
//! shows the cause. Each test drives the real binary the way a person would.

use crate::common;
#[path = "first_hour/failures.rs"]
mod failures;
#[path = "first_hour/readme.rs"]
mod readme;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::{git, Out, TestRepo, NOW};

/// Runs the binary in `cwd` with `args` as given: no `--repo` is added.
fn run_in(cwd: &Path, args: &[&str]) -> Out {
    run_in_env(cwd, args, &[])
}

/// [`run_in`] with extra environment variables.
fn run_in_env(cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .current_dir(cwd)
        .args(args)
        .env_remove("OPENTIGER_CONFIG")
        .env_remove("OPENTIGER_REPO")
        .env_remove("OPENTIGER_NOW")
        .env_remove("GITHUB_RUN_ID")
        .env_remove("GITHUB_STEP_SUMMARY")
        .envs(env.iter().copied())
        .output()
        .expect("run opentiger");
    Out::from(out)
}

fn executable(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A git repository whose agent is the README's `./scripts/agent.sh`, committed on `main`.
fn repo_with_relative_agent() -> TestRepo {
    let repo = TestRepo::bare();
    repo.file(".gitignore", "/.opentiger/state.sqlite*\n");
    repo.file(
        ".opentiger.yml",
        "mode: local-git\nagents:\n  default:\n    executor: command\n    command: [\"./scripts/agent.sh\"]\n    timeout_minutes: 1\n  judge:\n    review: false\n",
    );
    executable(
        &repo.path().join("scripts/agent.sh"),
        "#!/bin/sh\necho hello > hello.txt\n",
    );
    git(repo.path(), &["init", "-q", "-b", "main"]);
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "initial"]);
    repo
}

fn status_of(cwd: &Path, repo_args: &[&str], id: &str) -> String {
    let mut args = repo_args.to_vec();
    args.extend(["--now", NOW, "task", "show", id, "--json"]);
    let out = run_in(cwd, &args).ok();
    out.json()["task"]["status"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Item 1: a relative agent command works with `--repo` unset and with `--repo .`.
#[test]
fn a_relative_agent_command_runs_from_the_repository_root() {
    for repo_args in [&[][..], &["--repo", "."][..]] {
        let repo = repo_with_relative_agent();
        let mut add = repo_args.to_vec();
        add.extend([
            "--now", NOW, "task", "add", "--title", "Hello", "--goal", "g",
        ]);
        let id = run_in(repo.path(), &add).ok().stdout.trim().to_string();
        for m in 0..3 {
            let now = common::minute(m * 10);
            let mut tick = repo_args.to_vec();
            tick.extend(["--now", now.as_str(), "tick"]);
            let out = run_in(repo.path(), &tick);
            assert!(
                !out.stdout.contains("could not run") && !out.stderr.contains("could not run"),
                "{repo_args:?}: {}\n{}",
                out.stdout,
                out.stderr
            );
        }
        assert_eq!(
            status_of(repo.path(), repo_args, &id),
            "done",
            "{repo_args:?}"
        );
        assert_eq!(
            git(repo.path(), &["show", "main:hello.txt"]),
            "hello",
            "{repo_args:?}"
        );
    }
}

/// A local-git repository with `config` and an agent that leaves a mark when it runs.
/// A repository whose agents may also write `.git/loot` (`sandbox.writable`), where the test
/// agents leave what they saw: the runner's repository is otherwise not theirs to write.
fn repo_with_config(config: &str) -> TestRepo {
    let repo = repo_with_relative_agent();
    std::fs::create_dir_all(repo.path().join(".git/loot")).unwrap();
    let marker = repo.path().join(".git/loot/agent-ran");
    executable(
        &repo.path().join("scripts/agent.sh"),
        &format!(
            "#!/bin/sh\ntouch {}\necho hello > hello.txt\n",
            marker.display()
        ),
    );
    repo.file(
        ".opentiger.yml",
        &format!(
            "mode: local-git\nagents:\n  default:\n    executor: command\n    command: [\"./scripts/agent.sh\"]\n  judge:\n    review: false\n{config}{sandbox}",
            sandbox = if config.contains("sandbox:") {
                String::new()
            } else {
                format!(
                    "sandbox:\n  writable: [\"{}\"]\n",
                    repo.path().join(".git/loot").display()
                )
            }
        ),
    );
    repo
}

fn refused(out: &Out, needles: &[&str]) {
    assert_eq!(
        out.code, 2,
        "expected exit 2\nstdout:\n{}\nstderr:\n{}",
        out.stdout, out.stderr
    );
    for needle in needles {
        assert!(
            out.stderr.contains(needle),
            "`{needle}` missing from:\n{}",
            out.stderr
        );
    }
}

/// Item 2: a command or path that cannot run is refused where it enters, with the fix.
#[test]
fn commands_and_paths_that_cannot_run_are_refused_at_config_load() {
    for (config, needles) in [
        (
            "verify:\n  commands: [\"cat a.txt | grep hi\"]\n",
            &["verify.commands[0]", "`|`", "script"][..],
        ),
        (
            "verify:\n  commands: [\"cargo build; cargo test\"]\n",
            &["verify.commands[0]", "`;`", "&&"][..],
        ),
        (
            "verify:\n  commands: [\"cargo test > out.txt\"]\n",
            &["verify.commands[0]", "`>`"][..],
        ),
        (
            "verify:\n  by_role:\n    tester: [\"echo $HOME\"]\n",
            &["verify.by_role.tester[0]", "$HOME"][..],
        ),
        (
            "verify:\n  when_changed:\n    - paths: [\"src/**\"]\n      commands: [\"cd src && make\"]\n",
            &["verify.when_changed[0].commands[0]", "builtin"][..],
        ),
        (
            "policy:\n  allowed_paths: [\"../other/**\"]\n",
            &["policy.allowed_paths[0]", "`..`"][..],
        ),
        (
            "policy:\n  allowed_paths: [\"/etc/**\"]\n",
            &["policy.allowed_paths[0]", "relative to the repository root"][..],
        ),
        (
            "policy:\n  denied_paths: [\"{a,b}/**\"]\n",
            &["policy.denied_paths[0]", "alternatives"][..],
        ),
    ] {
        let repo = repo_with_config(config);
        refused(&run_in(repo.path(), &["--now", NOW, "task", "list"]), needles);
        let doctor = run_in(repo.path(), &["--now", NOW, "doctor"]);
        assert_ne!(doctor.code, 0, "{}", doctor.stdout);
        for needle in needles {
            assert!(doctor.stdout.contains(needle), "doctor: `{needle}` missing:\n{}", doctor.stdout);
        }
    }
}

#[test]
fn task_add_refuses_commands_and_paths_that_cannot_run() {
    let repo = repo_with_config("");
    for (flags, needles) in [
        (
            &["--command", "cat a.txt | grep hi"][..],
            &["--command", "`|`", "script"][..],
        ),
        (
            &["--command", "make check; make"][..],
            &["--command", "`;`"][..],
        ),
        (
            &["--command", "sudo make"][..],
            &["--command", "denied"][..],
        ),
        (
            &["--allowed-path", "../x/**"][..],
            &["--allowed-path", "`..`"][..],
        ),
        (
            &["--allowed-path", "/abs/**"][..],
            &["--allowed-path", "relative to the repository root"][..],
        ),
    ] {
        let mut args = vec!["--now", NOW, "task", "add", "--title", "T", "--goal", "g"];
        args.extend_from_slice(flags);
        refused(&run_in(repo.path(), &args), needles);
    }
    let plan = repo.path().join(".git/plan.json");
    std::fs::write(
        &plan,
        r#"{"tasks": [{"key": "a", "title": "A", "goal": "g", "commands": ["cargo test"]},
                      {"key": "b", "title": "B", "goal": "g", "commands": ["cat a | grep b"]},
                      {"key": "c", "title": "C", "goal": "g", "allowed_paths": ["/etc/**"]}]}"#,
    )
    .unwrap();
    let out = run_in(
        repo.path(),
        &[
            "--now",
            NOW,
            "task",
            "add",
            "--from",
            plan.to_str().unwrap(),
        ],
    );
    refused(
        &out,
        &["`b`", "commands[0]", "`|`", "`c`", "allowed_paths[0]"],
    );
    let list = run_in(repo.path(), &["--now", NOW, "task", "list", "--json"]).ok();
    assert_eq!(
        list.json().as_array().map(Vec::len),
        Some(0),
        "nothing was added: {}",
        list.stdout
    );
}

/// Item 2: a task whose commands stopped being runnable (the config changed after it was added)
/// is never dispatched: it waits for a person, and the agent never runs.
#[test]
fn a_task_whose_commands_cannot_run_is_never_dispatched() {
    let repo = repo_with_config("");
    let add = [
        "--now",
        NOW,
        "task",
        "add",
        "--title",
        "T",
        "--goal",
        "g",
        "--command",
        "make check",
    ];
    let id = run_in(repo.path(), &add).ok().stdout.trim().to_string();
    let config = std::fs::read_to_string(repo.path().join(".opentiger.yml")).unwrap();
    repo.file(
        ".opentiger.yml",
        &format!("{config}verify:\n  denied_commands: [make]\n"),
    );
    let out = run_in(repo.path(), &["--now", NOW, "tick"]).ok();
    assert!(
        !repo.path().join(".git/loot/agent-ran").exists(),
        "the agent ran:\n{}",
        out.stdout
    );
    let show = run_in(repo.path(), &["--now", NOW, "task", "show", &id, "--json"])
        .ok()
        .json();
    assert_eq!(show["task"]["status"], "blocked", "{show}");
    assert_eq!(show["task"]["block_reason"], "awaiting_human", "{show}");
    let reason = show["task"]["status_reason"].as_str().unwrap_or_default();
    assert!(
        reason.contains("make check") && reason.contains("denied_commands"),
        "{reason}"
    );
    assert!(
        out.stdout.contains("make check"),
        "the tick says why:\n{}",
        out.stdout
    );
}

/// Item 6: a reader that quits early (`| head -1`, `| grep -q .`) ends the command quietly.
#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    use std::process::Stdio;
    let repo = repo_with_config("");
    let id = run_in(
        repo.path(),
        &["--now", NOW, "task", "add", "--title", "T", "--goal", "g"],
    )
    .ok()
    .stdout
    .trim()
    .to_string();
    for args in [
        &["config", "schema"][..],
        &["config", "show"][..],
        &["task", "list"][..],
        &["task", "show", &id][..],
        &["status"][..],
        &["tick", "--dry-run"][..],
        &["doctor"][..],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_opentiger"))
            .current_dir(repo.path())
            .args(["--now", NOW])
            .args(args)
            .env_remove("OPENTIGER_REPO")
            .env_remove("OPENTIGER_CONFIG")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        drop(child.stdout.take()); // the reader is gone before anything is written
        let out = child.wait_with_output().expect("wait");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert_ne!(out.status.code(), Some(101), "{args:?}: {stderr}");
        assert!(stderr.trim().is_empty(), "{args:?} is not quiet: {stderr}");
    }
}

/// Item 11: a `command` agent sees only what its configuration lists. Issue 37: a model key it
/// lists is never its value, but a placeholder with the model API's base URL on the proxy.
#[test]
fn a_command_agent_gets_no_api_key_it_did_not_list() {
    for (listed, expected) in [
        ("", false),
        ("    env_passthrough: [ANTHROPIC_API_KEY]\n", true),
    ] {
        let repo = repo_with_config("");
        let seen = repo.path().join(".git/loot/agent-env");
        executable(
            &repo.path().join("scripts/agent.sh"),
            &format!(
                "#!/bin/sh\nenv > {}\necho hello > hello.txt\n",
                seen.display()
            ),
        );
        repo.file(
            ".opentiger.yml",
            &format!("mode: local-git\nagents:\n  default:\n    executor: command\n    command: [\"./scripts/agent.sh\"]\n{listed}  judge:\n    review: false\nsandbox:\n  writable: [\"{}\"]\n", repo.path().join(".git/loot").display()),
        );
        run_in(
            repo.path(),
            &["--now", NOW, "task", "add", "--title", "T", "--goal", "g"],
        )
        .ok();
        let key = [("ANTHROPIC_API_KEY", "sk-ant-test-value-1234567890")];
        run_in_env(repo.path(), &["--now", NOW, "tick"], &key).ok();
        let env = std::fs::read_to_string(&seen).expect("the agent ran");
        assert!(!env.contains("sk-ant-test-value-1234567890"), "{env}");
        assert_eq!(
            env.contains("ANTHROPIC_API_KEY=opentiger-placeholder-"),
            expected,
            "{listed:?}:\n{env}"
        );
        assert_eq!(
            env.contains("ANTHROPIC_BASE_URL=http://127.0.0.1:3128/anthropic"),
            expected,
            "{listed:?}:\n{env}"
        );
    }
}

/// Item 8: a tick that does nothing says why (here: a cooldown, with the way to skip it), and a
/// person's `task retry` of a task waiting on its cooldown is allowed and clears the wait.
#[test]
fn an_idle_tick_says_why_and_retry_skips_a_cooldown() {
    let repo = repo_with_config("retry:\n  cooldown_seconds: 300\n");
    let marker = repo.path().join(".git/loot/agent-ran");
    executable(
        &repo.path().join("scripts/agent.sh"),
        &format!("#!/bin/sh\nif [ -f {m} ]; then echo hello > hello.txt; exit 0; fi\ntouch {m}\nexit 1\n", m = marker.display()),
    );
    let at = |m: u32| common::minute(m);
    let add = ["--now", NOW, "task", "add", "--title", "T", "--goal", "g"];
    let id = run_in(repo.path(), &add).ok().stdout.trim().to_string();
    run_in(repo.path(), &["--now", &at(0), "tick"]).ok(); // the run fails
    run_in(repo.path(), &["--now", &at(1), "tick"]).ok(); // back to the queue, with a cooldown
    let idle = run_in(repo.path(), &["--now", &at(2), "tick"]).ok();
    assert!(idle.stdout.contains("nothing to do"), "{}", idle.stdout);
    assert!(
        idle.stdout.contains(&id[..8]),
        "names the task:\n{}",
        idle.stdout
    );
    assert!(idle.stdout.contains("cooldown until"), "{}", idle.stdout);
    assert!(
        idle.stdout.contains(&format!("opentiger task retry {id}")),
        "{}",
        idle.stdout
    );

    let retried = run_in(repo.path(), &["--now", &at(2), "task", "retry", &id]).ok();
    assert!(
        retried.stdout.contains("cooldown"),
        "says what it did: {}",
        retried.stdout
    );
    let ran = run_in(repo.path(), &["--now", &at(2), "tick"]).ok();
    assert!(
        ran.stdout.contains("worker "),
        "the wait was skipped:\n{}",
        ran.stdout
    );

    let empty = repo_with_config("");
    let quiet = run_in(empty.path(), &["--now", NOW, "tick"]).ok();
    assert!(
        quiet.stdout.contains("nothing to do: no active task"),
        "{}",
        quiet.stdout
    );
}

/// Item 12: `--help` describes every option and keeps the global ones apart; `demo --help`
/// lists only what applies; numbers are checked; a short id prefix says how long it must be.
#[test]
fn help_and_arguments_speak_plainly() {
    let repo = repo_with_config("");
    let help = run_in(repo.path(), &["task", "add", "--help"]).ok().stdout;
    let (own, global) = help.split_once("Global options:").expect(&help);
    assert!(
        own.contains("--priority") && !own.contains("--repo"),
        "{help}"
    );
    assert!(
        global.contains("--repo") && !global.contains("--priority"),
        "{help}"
    );
    for line in own.lines().filter(|l| l.trim_start().starts_with("--")) {
        let described = line.split_once('>').map_or(line, |(_, rest)| rest);
        assert!(
            !described.trim().is_empty() && !described.trim().starts_with('['),
            "no description: {line}\n{help}"
        );
    }
    let demo = run_in(repo.path(), &["demo", "--help"]).ok().stdout;
    for absent in ["--repo", "--config", "--mode"] {
        assert!(
            !demo.contains(absent),
            "demo --help lists {absent}:\n{demo}"
        );
    }
    let refused = run_in(repo.path(), &["demo", "--repo", "elsewhere"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("--repo"), "{}", refused.stderr);

    let add = |p: &str| {
        run_in(
            repo.path(),
            &[
                "--now",
                NOW,
                "task",
                "add",
                "--title",
                "T",
                "--goal",
                "g",
                "--priority",
                p,
            ],
        )
    };
    let id = add("-5").ok().stdout.trim().to_string();
    let show = run_in(repo.path(), &["--now", NOW, "task", "show", &id, "--json"])
        .ok()
        .json();
    assert_eq!(show["task"]["priority"], -5);
    let big = add("5000");
    assert_eq!(big.code, 2);
    assert!(big.stderr.contains("-1000..=1000"), "{}", big.stderr);
    for args in [
        &["tick", "--fan-out", "0"][..],
        &["tick", "--max-runs", "100000"][..],
    ] {
        let out = run_in(repo.path(), args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(out.stderr.contains("is not in"), "{args:?}: {}", out.stderr);
    }
    let short = run_in(repo.path(), &["--now", NOW, "task", "show", &id[..3]]);
    assert_eq!(short.code, 2);
    assert!(short.stderr.contains("at least 4"), "{}", short.stderr);
}

/// Item 13: `status` speaks the user's language: the preflight formula only with --verbose,
/// no issue/PR words in a local mode, and no made-up run ids that change at every call.
#[test]
fn status_speaks_the_users_language() {
    let repo = repo_with_config("");
    let empty = run_in(repo.path(), &["--now", NOW, "status"]).ok().stdout;
    for jargon in ["Preflight", "[R=", "S0", "issue/PR"] {
        assert!(!empty.contains(jargon), "`{jargon}` in:\n{empty}");
    }
    assert!(empty.contains("nothing to do"), "{empty}");
    run_in(
        repo.path(),
        &["--now", NOW, "task", "add", "--title", "T", "--goal", "g"],
    )
    .ok();
    let next = |now: &str| -> String {
        let out = run_in(repo.path(), &["--now", now, "status"]).ok().stdout;
        out.lines()
            .filter(|l| l.contains("next:"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    let first = next(NOW);
    assert!(first.contains("next: claim and run"), "{first}");
    assert!(!first.contains("(run "), "no hypothetical run id: {first}");
    assert_eq!(
        first,
        next("2026-11-21T12:00:07Z"),
        "the same at every call"
    );
    let verbose = run_in(repo.path(), &["--now", NOW, "status", "--verbose"])
        .ok()
        .stdout;
    assert!(
        verbose.contains("Preflight: S4 [R=0 I=0 P=0 L=1]"),
        "{verbose}"
    );
}

/// Item 3: a program a run needs that is in the working tree but not on the base branch (runs
/// start from the base) is reported by `doctor`, with the fix.
#[test]
fn doctor_reports_a_program_missing_from_the_base_branch() {
    let repo = repo_with_config("verify:\n  commands: [\"./check.sh --quick\"]\n");
    executable(&repo.path().join("check.sh"), "#!/bin/sh\nexit 0\n");
    let out = run_in(repo.path(), &["--now", NOW, "doctor"]);
    assert_ne!(out.code, 0, "{}", out.stdout);
    assert!(out.stdout.contains("./check.sh"), "{}", out.stdout);
    assert!(out.stdout.contains("not on `main`"), "{}", out.stdout);
    assert!(
        out.stdout.contains("commit it, runs start from `main`"),
        "{}",
        out.stdout
    );
    git(repo.path(), &["add", "check.sh"]);
    git(repo.path(), &["commit", "-q", "-m", "add check.sh"]);
    let out = run_in(repo.path(), &["--now", NOW, "doctor"]);
    assert!(!out.stdout.contains("not on `main`"), "{}", out.stdout);
    std::fs::remove_file(repo.path().join("check.sh")).unwrap();
    git(repo.path(), &["commit", "-qam", "remove check.sh"]);
    let out = run_in(repo.path(), &["--now", NOW, "doctor"]);
    assert!(out.stdout.contains("does not exist"), "{}", out.stdout);
}

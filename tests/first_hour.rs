//! A new user's first hour (issue 15): every mistake caught before an agent runs, and output that
//! shows the cause. Each test drives the real binary the way a person would.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use common::{git, Out, TestRepo, NOW};

/// Runs the binary in `cwd` with `args` as given: no `--repo` is added.
fn run_in(cwd: &Path, args: &[&str]) -> Out {
    let out = Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .current_dir(cwd)
        .args(args)
        .env_remove("OPENTIGER_CONFIG")
        .env_remove("OPENTIGER_REPO")
        .env_remove("OPENTIGER_NOW")
        .env_remove("GITHUB_RUN_ID")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run opentiger");
    Out {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
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
    out.json()["task"]["status"].as_str().unwrap_or_default().to_string()
}

/// Item 1: a relative agent command works with `--repo` unset and with `--repo .`.
#[test]
fn a_relative_agent_command_runs_from_the_repository_root() {
    for repo_args in [&[][..], &["--repo", "."][..]] {
        let repo = repo_with_relative_agent();
        let mut add = repo_args.to_vec();
        add.extend(["--now", NOW, "task", "add", "--title", "Hello", "--goal", "g"]);
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
        assert_eq!(status_of(repo.path(), repo_args, &id), "done", "{repo_args:?}");
        assert_eq!(
            git(repo.path(), &["show", "main:hello.txt"]),
            "hello",
            "{repo_args:?}"
        );
    }
}

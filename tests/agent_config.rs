//! Agent configuration errors end to end (issue 18): whole ticks of the real binary in
//! local-git mode with a fake `claude` (`tests/fixtures/agents/fake-cli.sh`) printing the
//! recorded "Not logged in" result. Such a run is never retried: the task waits for a person
//! with the fix after exactly one run, or a configured fallback runs it instead; a CLI given no
//! key is not started at all.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::{minute, GitRepo, Setup};

/// The key a tick gives the agent: set, but the fake CLI answers as if it were refused.
const KEY: &[(&str, &str)] = &[("ANTHROPIC_API_KEY", "sk-ant-invalid-key")];

/// A fallback agent that does the work.
const FALLBACK: &str = "#!/bin/sh\necho done > fallback.txt\necho '{\"summary\": \"wrote fallback.txt\"}' > \"$OPENTIGER_RESULT_FILE\"\n";

/// A fake `claude` printing `fixture` with exit code `exit`, in a folder of its own.
fn fake_claude(g: &GitRepo, fixture: &str, exit: i32) -> PathBuf {
    let dir = g.tools_path().join("fake-claude");
    fs::create_dir_all(&dir).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents");
    let link = dir.join("claude");
    std::os::unix::fs::symlink(fixtures.join("fake-cli.sh"), &link).unwrap();
    fs::copy(fixtures.join(fixture), dir.join("stdout")).unwrap();
    fs::write(dir.join("exit"), exit.to_string()).unwrap();
    link
}

/// A repository whose worker is the fake `claude`, with `fallback.sh` as its fallback when
/// `fallback` is given.
fn claude_worker(fixture: &str, fallback: Option<&str>) -> GitRepo {
    let g = GitRepo::with(Setup::default());
    let link = fake_claude(&g, fixture, 1);
    let mut worker = format!(
        "  worker:\n    executor: claude-code\n    command: [\"{}\"]\n    env_passthrough: [ANTHROPIC_API_KEY]\n",
        link.display()
    );
    if let Some(script) = fallback {
        let path = g.tools_path().join("fallback.sh");
        fs::write(&path, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
        worker.push_str(&format!(
            "    fallbacks:\n      - executor: command\n        command: [\"{}\"]\n",
            path.display()
        ));
    }
    let path = g.path().join(".opentiger.yml");
    let config = fs::read_to_string(&path)
        .unwrap()
        .replace("  worker:\n", &worker);
    fs::write(path, config).unwrap();
    g
}

fn runs_of(g: &GitRepo, id: &str) -> Vec<serde_json::Value> {
    let status = g.repo.run(&["status", "--json", "--all"]).ok().json();
    let mut runs: Vec<_> = status["runs"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["task_id"] == id)
        .cloned()
        .collect();
    runs.reverse(); // oldest first
    runs
}

#[test]
fn not_logged_in_waits_for_a_person_after_exactly_one_run_with_the_fix() {
    let g = claude_worker("claude-code/not_logged_in.json", None);
    let id = g.repo.add(&["--title", "Add sub", "--goal", "sub.txt"]);
    g.tick_env(&minute(0), KEY).ok();
    let task = g.task_json(&id);
    assert_eq!(
        (task["status"].as_str(), task["block_reason"].as_str()),
        (Some("blocked"), Some("awaiting_human")),
        "{task}"
    );
    let reason = task["reason"].as_str().unwrap();
    for part in [
        "agent_config (not retried)",
        "Not logged in · Please run /login",
        "fix: set ANTHROPIC_API_KEY in the workflow's env",
        "for the runner, which holds it",
        &format!("`opentiger task retry {id}`"),
    ] {
        assert!(reason.contains(part), "{part:?} not in {reason}");
    }
    assert!(!reason.contains("sk-ant-invalid-key"), "{reason}");
    // Later ticks run nothing more: no retry, no rework child.
    for m in [2, 10, 60] {
        g.tick_env(&minute(m), KEY).ok();
    }
    let runs = runs_of(&g, &id);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["failure_code"], "agent_config");
    let status = g.repo.run(&["status", "--json", "--all"]).ok().json();
    assert_eq!(status["tasks"].as_array().unwrap().len(), 1, "{status}");

    // A person fixes the key and retries: the executor's park ends with the retry.
    let out = g.repo.run(&["task", "retry", &id]).ok().stdout;
    assert!(
        out.contains("1 executor(s) parked for their configuration may run again"),
        "{out}"
    );
    g.tick_env(&minute(61), KEY).ok();
    assert_eq!(runs_of(&g, &id).len(), 2, "it ran again");
}

#[test]
fn not_logged_in_hands_the_task_to_a_configured_fallback() {
    let g = claude_worker("claude-code/not_logged_in.json", Some(FALLBACK));
    let id = g
        .repo
        .add(&["--title", "Fall back", "--goal", "fallback.txt"]);
    // Queued again at once is nothing outside to wait for: the same tick's next round runs the
    // fallback, and the one after reviews and merges its change (issue 38).
    let out = g.tick_env(&minute(0), KEY).ok().stdout;
    let shown = g.repo.run(&["task", "show", &id]).ok().stdout;
    assert!(
        shown.contains(
            "agent_config: executor claude-code cannot reach its model as configured and waits until its configuration changes; queued again at once for command:"
        ),
        "{shown}\n{out}"
    );
    let status = g.repo.run(&["status"]).ok().stdout;
    assert!(
        status.contains("Parked: executor claude-code cannot reach its model as configured (task "),
        "{status}"
    );
    assert_eq!(g.task_json(&id)["status"], "done", "{out}");
    let runs = runs_of(&g, &id);
    assert_eq!(runs.len(), 2, "{runs:?}");
    assert_eq!(
        (
            runs[0]["executor"].as_str(),
            runs[0]["failure_code"].as_str()
        ),
        (Some("claude-code"), Some("agent_config"))
    );
    assert!(
        runs[1]["executor"]
            .as_str()
            .unwrap()
            .ends_with("(fallback 1: claude-code cannot reach its model as configured)"),
        "{runs:?}"
    );
    // A new task goes straight to the fallback: the primary stays parked, hours later too.
    let next = g.repo.add(&["--title", "Again", "--goal", "again"]);
    g.tick_env(&minute(600), KEY).ok();
    let runs = runs_of(&g, &next);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(
        runs[0]["executor"]
            .as_str()
            .unwrap()
            .starts_with("command:"),
        "{runs:?}"
    );
}

#[test]
fn a_cli_given_no_key_is_not_started_and_the_tick_says_why() {
    // A home without a login of claude's own, whatever the machine running the test has.
    let home = tempfile::tempdir().unwrap();
    let home = home.path().to_str().unwrap();
    let g = claude_worker("claude-code/success.json", None);
    let id = g.repo.add(&["--title", "Add sub", "--goal", "sub.txt"]);
    let out = g.tick_env(&minute(0), &[("HOME", home)]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    for part in [
        "agents.worker.executor is `claude-code`, but the agent is given no key: none of ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN is set",
        "fix: set ANTHROPIC_API_KEY in the workflow's env",
    ] {
        assert!(out.stderr.contains(part), "{part:?} not in {}", out.stderr);
    }
    assert_eq!(g.task_json(&id)["status"], "queued", "nothing claimed");
    let argv = g.tools_path().join("fake-claude/argv");
    assert!(!argv.exists(), "claude was started");

    // With a fallback, the fallback runs from the first tick.
    let g = claude_worker("claude-code/success.json", Some(FALLBACK));
    let id = g
        .repo
        .add(&["--title", "Fall back", "--goal", "fallback.txt"]);
    g.tick_env(&minute(0), &[("HOME", home)]).ok();
    let runs = runs_of(&g, &id);
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert!(
        runs[0]["executor"]
            .as_str()
            .unwrap()
            .ends_with("(fallback 1: claude-code is unavailable)"),
        "{runs:?}"
    );
    assert!(!g.tools_path().join("fake-claude/argv").exists());
}

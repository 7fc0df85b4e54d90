//! Fallback executors (`agents.<role>.fallbacks`, issue 9) end to end: whole ticks of the real
//! binary in local-git mode, with shell-script agents. The primary agent is `agent.sh` (from
//! `agents.default`), the worker's fallback `fallback.sh`.

use crate::common;

use common::{minute, GitRepo, Setup};

/// A primary agent that hits a rate limit with a retry hint of ten minutes.
const RATE_LIMITED: &str =
    "#!/bin/sh\necho 'Error: rate limit exceeded, retry in 600s' >&2\nexit 1\n";

/// A fallback agent that does the work.
const FALLBACK: &str = "#!/bin/sh\necho done > fallback.txt\necho '{\"summary\": \"wrote fallback.txt\"}' > \"$OPENTIGER_RESULT_FILE\"\n";

/// A repository whose worker falls back to `fallback.sh` (written only when `script` is given).
fn with_fallback(script: Option<&str>) -> GitRepo {
    let g = GitRepo::with(Setup::default());
    let fallback = g.tools_path().join("fallback.sh");
    if let Some(script) = script {
        std::fs::write(&fallback, script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&fallback, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = g.path().join(".opentiger.yml");
    let config = std::fs::read_to_string(&path).unwrap().replace(
        "  worker:\n",
        &format!(
            "  worker:\n    fallbacks:\n      - command: [\"{}\"]\n",
            fallback.display()
        ),
    );
    std::fs::write(path, config).unwrap();
    g
}

fn runs_of(g: &GitRepo, id: &str, now: &str) -> Vec<serde_json::Value> {
    let status = g
        .repo
        .run_at(now, &["status", "--json", "--all"])
        .ok()
        .json();
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
fn a_rate_limited_primary_hands_the_task_to_its_fallback_at_once() {
    let g = with_fallback(Some(FALLBACK));
    g.agent(RATE_LIMITED);
    let id = g
        .repo
        .add(&["--title", "Fall back", "--goal", "fallback.txt"]);
    let primary = format!("command:{}", g.tools_path().join("agent.sh").display());
    let fallback = format!("command:{}", g.tools_path().join("fallback.sh").display());

    // Queued again at once is nothing outside to wait for: the tick's next round runs the
    // fallback, the one after reviews and merges (issue 38).
    let out = g.tick(&minute(0)).ok().stdout;
    let shown = g
        .repo
        .run_at(&minute(0), &["task", "show", &id])
        .ok()
        .stdout;
    assert!(
        shown.contains(&format!(
            "quota: executor {primary} waits until 2026-11-21T12:10:00Z; queued again at once for {fallback} (fallback 1)"
        )),
        "not quota_wait: {shown}\n{out}"
    );
    let task = g.task_json(&id);
    assert_eq!(task["status"], "done", "{task}\n{out}");
    assert_eq!(
        task["attempts"],
        serde_json::json!({}),
        "no quota wait spent"
    );
    let status = g.repo.run_at(&minute(0), &["status"]).ok().stdout;
    assert!(
        status.contains(&format!(
            "Parked: executor {primary} waits on quota until 2026-11-21T12:10:00Z (task {id}: "
        )),
        "{status}"
    );

    g.run_until_quiet(1, 1, 6);
    assert_eq!(g.task_json(&id)["status"], "done");
    assert_eq!(g.file_on_main("fallback.txt").as_deref(), Some("done\n"));
    let mut runs = runs_of(&g, &id, &minute(10));
    assert_eq!(runs.len(), 2, "{runs:?}");
    // Both runs are of one tick's rounds (issue 38), at the same fixed time: the failed one first.
    runs.sort_by_key(|r| r["status"] == "success");
    assert_eq!(
        (
            runs[0]["executor"].as_str(),
            runs[0]["failure_code"].as_str()
        ),
        (Some(primary.as_str()), Some("quota_failure"))
    );
    assert_eq!(
        runs[1]["executor"].as_str().unwrap(),
        format!("{fallback} (fallback 1: {primary} waits on quota until 2026-11-21T12:10:00Z)")
    );
    assert_eq!(runs[1]["status"], "success");
    let shown = g
        .repo
        .run_at(&minute(10), &["task", "show", &id])
        .ok()
        .stdout;
    assert!(
        shown.contains(&format!(" on {fallback} (fallback 1: ")),
        "{shown}"
    );
}

#[test]
fn a_missing_primary_program_runs_the_fallback_from_the_first_tick() {
    // agent.sh is never written: the primary cannot run here.
    let g = with_fallback(Some(FALLBACK));
    let id = g
        .repo
        .add(&["--title", "Fall back", "--goal", "fallback.txt"]);
    let out = g.tick(&minute(0)).ok();
    assert!(!out.stdout.contains("failed"), "{}", out.stdout);
    let runs = runs_of(&g, &id, &minute(0));
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "success");
    assert_eq!(
        runs[0]["executor"].as_str().unwrap(),
        format!(
            "command:{} (fallback 1: command:{} is unavailable)",
            g.tools_path().join("fallback.sh").display(),
            g.tools_path().join("agent.sh").display()
        )
    );
    g.run_until_quiet(1, 1, 4);
    assert_eq!(g.task_json(&id)["status"], "done");
}

#[test]
fn when_no_executor_can_run_the_error_names_each_and_nothing_is_claimed() {
    let g = with_fallback(None);
    let id = g.repo.add(&["--title", "T", "--goal", "g"]);
    let out = g.tick(&minute(0));
    assert_eq!(out.code, 2, "{}", out.stderr);
    for part in [
        "no executor of agents.worker can run here (tried in order):".to_string(),
        // Named under the key written (`agents.default`), which the worker inherits.
        format!(
            "agents.default.command: `{}` was not found",
            g.tools_path().join("agent.sh").display()
        ),
        format!(
            "agents.worker.fallbacks[0].command: `{}` was not found",
            g.tools_path().join("fallback.sh").display()
        ),
    ] {
        assert!(out.stderr.contains(&part), "{part:?} not in {}", out.stderr);
    }
    assert_eq!(g.task_json(&id)["status"], "queued", "nothing claimed");
}

#[test]
fn config_show_resolves_fallbacks_and_the_schema_documents_them() {
    let g = with_fallback(None);
    let shown = g.repo.run(&["config", "show", "--json"]).ok().json();
    let fallback = &shown["agents"]["worker"]["fallbacks"][0];
    assert_eq!(fallback["executor"], "command", "inherited: {fallback}");
    assert_eq!(fallback["timeout_minutes"], 1.0, "inherited: {fallback}");
    assert!(
        shown["agents"]["tester"].get("fallbacks").is_none(),
        "{shown}"
    );
    let schema = g.repo.run(&["config", "schema"]).ok().stdout;
    assert!(
        schema.contains("Executors tried, in order, when this one waits on a quota"),
        "fallbacks is documented"
    );
}

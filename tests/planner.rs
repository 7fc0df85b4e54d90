//! The planner end to end with shell-script planner agents: requirement → task graph, invalid
//! plans rejected whole, dedupe by signature, replan on change, fallback, approval.

use crate::common;

use common::{minute, GitRepo, Setup};

const REQUIREMENT: &str = "# Calculator\n\n## Goal\nA calculator library.\n\n## Acceptance Criteria\n- [ ] add works\n- [ ] sub works\n\n## Allowed Paths\n- `src/**`\n";

/// A planner that writes `plan` as its result and counts its calls.
fn planner_writing(g: &GitRepo, plan: &str) {
    let calls = g.tools_path().join("planner-calls");
    g.planner(&format!(
        "#!/bin/sh\necho x >> {}\ncat > /dev/null\ncat > \"$OPENTIGER_RESULT_FILE\" <<'PLAN'\n{plan}\nPLAN\n",
        calls.display()
    ));
}

fn planner_calls(g: &GitRepo) -> usize {
    std::fs::read_to_string(g.tools_path().join("planner-calls"))
        .map(|s| s.lines().count())
        .unwrap_or(0)
}

fn tasks(g: &GitRepo) -> Vec<serde_json::Value> {
    g.repo
        .run(&["task", "list", "--all", "--json"])
        .ok()
        .json()
        .as_array()
        .unwrap()
        .clone()
}

#[test]
fn a_requirement_becomes_the_planned_graph() {
    let g = GitRepo::with(Setup::default());
    g.repo.file("docs/requirement.md", REQUIREMENT);
    planner_writing(
        &g,
        r#"{"tasks": [
        {"key": "core", "title": "Core ops", "goal": "add and sub", "allowed_paths": ["src/**"], "commands": ["cargo test"], "priority": 50},
        {"key": "docs", "title": "Docs", "goal": "README lists ops", "role": "docser", "depends_on": ["core"], "allowed_paths": ["README.md"]},
        {"key": "bench", "title": "Bench", "goal": "a bench", "role": "tester", "depends_on": ["core"], "touches": ["benches/x.rs"], "allowed_paths": ["benches/**"]}
    ]}"#,
    );
    let out = g.repo.run(&["plan"]).ok();
    assert!(
        out.stdout.contains("planner (agent): 3 task(s) created"),
        "{}",
        out.stdout
    );
    let all = tasks(&g);
    let by_title = |t: &str| {
        all.iter()
            .find(|x| x["title"] == t)
            .unwrap_or_else(|| panic!("{t} missing: {all:?}"))
            .clone()
    };
    let core = by_title("Core ops");
    assert_eq!(
        by_title("Docs")["dependencies"],
        serde_json::json!([core["id"]])
    );
    assert_eq!(
        by_title("Bench")["dependencies"],
        serde_json::json!([core["id"]])
    );
    assert_eq!(by_title("Docs")["role"], "docser");
    assert_eq!(core["priority"], 50);
    assert_eq!(core["target_area"], "path:src");
    // The prompt carried the requirement (the planner saw it) and ran once.
    assert_eq!(planner_calls(&g), 1);
    // Planning again is refused while the backlog exists (the spec's 409).
    let again = g.repo.run(&["plan"]);
    assert_eq!(again.code, 2, "{}", again.stderr);
    assert!(
        again.stderr.contains("a backlog exists"),
        "{}",
        again.stderr
    );
}

#[test]
fn invalid_plans_are_rejected_whole_with_the_reasons() {
    let cases = [
        (
            r#"{"tasks": [{"key": "a", "title": "A", "goal": "g", "depends_on": ["b"]}, {"key": "b", "title": "B", "goal": "g", "depends_on": ["a"]}]}"#,
            "cycle",
        ),
        (
            r#"{"tasks": [{"key": "a", "title": "A", "goal": "g", "role": "boss"}]}"#,
            "boss",
        ),
        (
            r#"{"tasks": [{"key": "a", "title": "A", "goal": "g", "allowed_paths": ["../etc/**"]}]}"#,
            "..",
        ),
        (
            r#"{"tasks": [{"key": "a", "title": "A", "goal": "g", "commands": ["cargo test | tee log"]}]}"#,
            "Shell operators are not allowed",
        ),
    ];
    for (plan, reason) in cases {
        let g = GitRepo::with(Setup::default());
        g.repo.file("docs/requirement.md", REQUIREMENT);
        planner_writing(&g, plan);
        let out = g.repo.run(&["plan"]);
        assert_eq!(out.code, 1, "{plan}: {}", out.stdout);
        assert!(
            out.stdout.contains("plan rejected, nothing created") && out.stdout.contains(reason),
            "{plan}: `{reason}` not in {}",
            out.stdout
        );
        assert!(tasks(&g).is_empty(), "nothing half-created for {plan}");
        assert_eq!(
            planner_calls(&g),
            2,
            "one retry with the errors fed back for {plan}"
        );
    }
}

#[test]
fn the_same_requirement_is_planned_once_and_an_edit_replans() {
    let g = GitRepo::with(Setup {
        extra: "planner:\n  replan_interval_minutes: 10\n",
        ..Setup::default()
    });
    g.repo.file("docs/requirement.md", REQUIREMENT);
    // Nothing to do for v1; one task once the requirement mentions v2.
    let calls = g.tools_path().join("planner-calls");
    g.planner(&format!(
        "#!/bin/sh\necho x >> {}\nif grep -q v2 docs/requirement.md 2>/dev/null || grep -q v2; then echo '{{\"tasks\": [{{\"key\": \"v2\", \"title\": \"Version 2\", \"goal\": \"v2\"}}]}}' > \"$OPENTIGER_RESULT_FILE\"; else echo '{{\"tasks\": []}}' > \"$OPENTIGER_RESULT_FILE\"; fi\n",
        calls.display()
    ));
    let first = g.tick(&minute(0));
    assert!(
        first.stdout.contains("planner (agent): 0 task(s) created"),
        "{}{}",
        first.stdout,
        first.stderr
    );
    let same = g.tick(&minute(30));
    assert!(
        same.stdout.is_empty() || !same.stdout.contains("planner ("),
        "{}",
        same.stdout
    );
    let dry = g
        .repo
        .run_at(&minute(31), &["tick", "--dry-run"])
        .ok()
        .stdout;
    assert!(dry.contains("[planner.no_diff]"), "{dry}");
    assert_eq!(
        planner_calls(&g),
        1,
        "the same requirement and base are planned once"
    );
    // `opentiger plan` agrees.
    let again = g.repo.run(&["plan"]).ok();
    assert!(again.stdout.contains("Already planned"), "{}", again.stdout);
    // Editing the requirement replans (after the interval).
    g.repo.file(
        "docs/requirement.md",
        &format!("{REQUIREMENT}\n## Notes\nNow v2.\n"),
    );
    let early = g
        .repo
        .run_at(&minute(5), &["tick", "--dry-run"])
        .ok()
        .stdout;
    assert!(
        early.contains("[planner.interval]"),
        "the interval counts from the last attempt (minute 0): {early}"
    );
    let edited = g.tick(&minute(40));
    assert!(
        edited.stdout.contains("planner (agent): 1 task(s) created"),
        "{}\n{}",
        edited.stdout,
        edited.stderr
    );
    assert_eq!(planner_calls(&g), 2);
}

#[test]
fn without_an_agent_the_fallback_plans_one_task_per_criterion() {
    let g = GitRepo::with(Setup {
        extra: "planner:\n  agent: false\n",
        ..Setup::default()
    });
    g.repo.file("docs/requirement.md", REQUIREMENT);
    let out = g.repo.run(&["plan"]).ok();
    assert!(
        out.stdout.contains("planner (fallback): 2 task(s) created"),
        "{}",
        out.stdout
    );
    let titles: Vec<String> = tasks(&g)
        .iter()
        .map(|t| t["title"].as_str().unwrap().to_string())
        .collect();
    assert!(
        titles.contains(&"Implement: add works".to_string())
            && titles.contains(&"Implement: sub works".to_string()),
        "{titles:?}"
    );
    assert_eq!(planner_calls(&g), 0);
}

#[test]
fn ask_mode_holds_the_plan_for_approval() {
    let g = GitRepo::with(Setup {
        extra: "execution_mode: ask\nplanner:\n  agent: false\n",
        ..Setup::default()
    });
    g.repo.file("docs/requirement.md", REQUIREMENT);
    g.agent("#!/bin/sh\necho x > src.txt\n");
    g.tick(&minute(0));
    let all = tasks(&g);
    assert_eq!(all.len(), 2);
    assert!(
        all.iter()
            .all(|t| t["status"] == "blocked" && t["block_reason"] == "awaiting_human"),
        "{all:?}"
    );
    let status = g.repo.run(&["status"]).ok().stdout;
    assert!(
        status.contains("waiting for approval") && status.contains("opentiger task approve"),
        "{status}"
    );
    // Nothing runs until approved.
    let idle = g.tick(&minute(10));
    assert!(!idle.stdout.contains("claim"), "{}", idle.stdout);
    let first = all[0]["id"].as_str().unwrap().to_string();
    // No change is held: naming a commit approves nothing, and says so.
    let by_commit = g
        .repo
        .run(&["task", "approve", &first, "--commit", "0a1b2c3"]);
    assert_eq!(by_commit.code, 2, "{}", by_commit.stdout);
    assert!(
        by_commit.stderr.contains("holds no change"),
        "{}",
        by_commit.stderr
    );
    assert_eq!(g.task_json(&first)["status"], "blocked");
    g.repo.run(&["task", "approve", &first]).ok();
    assert_eq!(g.task_json(&first)["status"], "queued");
    let out = g.repo.run(&["task", "approve", "--all"]).ok();
    assert_eq!(out.stdout.lines().count(), 1, "{}", out.stdout);
    let refused = g.repo.run(&["task", "approve", &first]);
    assert_eq!(refused.code, 2);
}

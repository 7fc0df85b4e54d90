//! The judge's bounded loops in local-git mode (issue 7's scenarios), with shell-script agents
//! driving the real binary: review rework, merge conflicts, recreation from the base, a judge
//! agent that is down. Each ends with the source task done or waiting on a person, and none
//! creates more follow-up tasks than its limit.

use crate::common;

use common::{git, minute, GitRepo, Setup};

/// An agent that writes `shared.txt` with its task id: two tasks of it conflict.
const WRITE_SHARED: &str = "#!/bin/sh\necho \"$OPENTIGER_TASK_ID\" > shared.txt\necho '{\"summary\": \"wrote shared.txt\"}' > \"$OPENTIGER_RESULT_FILE\"\n";

/// Tasks of one kind, from `task list --all --json`.
fn tasks_of_kind(g: &GitRepo, kind: &str) -> Vec<serde_json::Value> {
    let all = g.repo.run(&["task", "list", "--all", "--json"]).ok().json();
    all.as_array()
        .expect("a task list")
        .iter()
        .filter(|t| t["kind"] == kind)
        .cloned()
        .collect()
}

fn show(g: &GitRepo, id: &str) -> String {
    g.repo.run(&["task", "show", id]).ok().stdout
}

/// The judge's timeout and the tick's time that let a tick do one review (5 min) and no run
/// after it (issue 38: a round starts only what ends in time; runs take 1 min), as ticks did
/// before they had rounds: the scenarios below need a step between a run and its review.
const ONE_REVIEW_PER_TICK: &str = "    timeout_minutes: 5\n";

/// Two tasks writing the same file, the second run before the first is merged: it conflicts.
/// (With `ONE_REVIEW_PER_TICK` and `limits.tick_minutes: 5`.)
fn two_conflicting_tasks(g: &GitRepo) -> (String, String) {
    g.agent(WRITE_SHARED);
    let a = g.repo.add(&[
        "--title",
        "First",
        "--goal",
        "write shared",
        "--id",
        "a",
        "--priority",
        "9",
    ]);
    let b = g.repo.add(&[
        "--title",
        "Second",
        "--goal",
        "write shared",
        "--id",
        "b",
        "--priority",
        "1",
    ]);
    // The first tick runs a, and b from the same base (a's review does not fit after a's
    // run); the second judges and merges a.
    for m in [0, 1] {
        let out = g.tick(&minute(m));
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    }
    assert_eq!(g.task_json(&a)["status"], "done");
    assert_eq!(g.task_json(&b)["block_reason"], "awaiting_judge");
    (a, b)
}

#[test]
fn changes_requested_twice_then_approved_is_merged_once() {
    let g = GitRepo::with(Setup::default());
    g.agent("#!/bin/sh\necho \"$OPENTIGER_TASK_ID\" >> notes.txt\n");
    let count = g.tools_path().join("reviews");
    g.judge(&format!(
        "#!/bin/sh\nn=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}\nif [ $n -le 2 ]; then echo \"{{\\\"verdict\\\": \\\"request_changes\\\", \\\"summary\\\": \\\"review $n\\\", \\\"findings\\\": [\\\"finding $n\\\"]}}\" > \"$OPENTIGER_RESULT_FILE\"; else echo '{{\"verdict\": \"approve\", \"summary\": \"good now\"}}' > \"$OPENTIGER_RESULT_FILE\"; fi\n",
        c = count.display()
    ));
    let id = g.repo.add(&[
        "--title",
        "Take notes",
        "--goal",
        "notes.txt lists the task",
    ]);
    let outs = g.run_until_quiet(0, 5, 12);
    // Issue 38: nothing outside is awaited, so one tick runs the task, both AutoFixes and the
    // three reviews in rounds; the next records the source done through its last fix.
    assert_eq!(outs.len(), 2, "{}", outs[0].stdout);
    assert!(outs[0].stdout.contains("in 6 rounds"), "{}", outs[0].stdout);
    assert_eq!(g.task_json(&id)["status"], "done", "{}", show(&g, &id));
    let fixes = tasks_of_kind(&g, "autofix");
    assert_eq!(fixes.len(), 2, "one AutoFix per request: {fixes:?}");
    // Each fix carried the findings of the review it answers.
    let notes: Vec<String> = fixes
        .iter()
        .map(|f| show(&g, f["id"].as_str().unwrap()))
        .collect();
    assert!(notes.iter().any(|n| n.contains("finding 1")), "{notes:?}");
    assert!(notes.iter().any(|n| n.contains("finding 2")), "{notes:?}");
    let merges = g
        .main_log()
        .lines()
        .filter(|l| l.contains("Take notes"))
        .count();
    assert_eq!(merges, 1, "merged once:\n{}", g.main_log());
    assert_eq!(std::fs::read_to_string(&count).unwrap().trim(), "3");
}

#[test]
fn a_merge_conflict_is_resolved_by_a_conflict_fix_and_merged() {
    let g = GitRepo::with(Setup {
        judge: ONE_REVIEW_PER_TICK,
        extra: "limits:\n  tick_minutes: 5\n",
        ..Setup::default()
    });
    let (a, b) = two_conflicting_tasks(&g);
    g.run_until_quiet(5, 5, 12);
    assert_eq!(g.task_json(&a)["status"], "done");
    assert_eq!(g.task_json(&b)["status"], "done");
    let fixes = tasks_of_kind(&g, "autofix_conflict");
    assert_eq!(fixes.len(), 1, "{fixes:?}");
    let fix = fixes[0]["id"].as_str().unwrap();
    assert_eq!(fixes[0]["status"], "done");
    assert!(tasks_of_kind(&g, "recreate").is_empty());
    // The fix resolved the conflict on b's branch; both changes are on main, b's last.
    assert_eq!(
        g.file_on_main("shared.txt").as_deref(),
        Some(format!("{fix}\n").as_str())
    );
    let log = g.main_log();
    assert_eq!(
        log.lines().filter(|l| l.contains("First")).count(),
        1,
        "{log}"
    );
    assert_eq!(
        log.lines().filter(|l| l.contains("Second")).count(),
        1,
        "{log}"
    );
    let b_show = show(&g, &b);
    assert!(b_show.contains("conflicts with main"), "{b_show}");
}

#[test]
fn conflicts_past_the_budget_recreate_the_goal_from_the_base_and_merge_it() {
    let g = GitRepo::with(Setup {
        judge: ONE_REVIEW_PER_TICK,
        extra: "limits:\n  tick_minutes: 5\n  max_conflict_autofix_attempts: 1\n",
        ..Setup::default()
    });
    let (a, b) = two_conflicting_tasks(&g);
    // Tick until the conflict fix has run and waits for its review.
    let mut m = 5;
    let fix = loop {
        assert!(m < 60, "the conflict fix never got to its review");
        let out = g.tick(&minute(m));
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        m += 5;
        let fixes = tasks_of_kind(&g, "autofix_conflict");
        if let Some(f) = fixes
            .iter()
            .find(|f| f["status"] == "blocked" && f["block_reason"] == "awaiting_judge")
        {
            break f["id"].as_str().unwrap().to_string();
        }
    };
    // Meanwhile someone changes the same file on main: the fix conflicts again, budget spent.
    std::fs::write(g.path().join("shared.txt"), "a person's edit\n").unwrap();
    git(
        g.path(),
        &["commit", "-q", "-am", "A person edits shared.txt"],
    );
    g.run_until_quiet(m, 5, 14);
    assert_eq!(g.task_json(&a)["status"], "done");
    assert_eq!(g.task_json(&b)["status"], "done", "{}", show(&g, &b));
    assert_eq!(tasks_of_kind(&g, "autofix_conflict").len(), 1);
    assert_eq!(g.task_json(&fix)["status"], "cancelled");
    let recreated = tasks_of_kind(&g, "recreate");
    assert_eq!(recreated.len(), 1, "{recreated:?}");
    let r = recreated[0]["id"].as_str().unwrap();
    assert_eq!(recreated[0]["status"], "done");
    // The recreation started from the base and its change is what landed.
    assert_eq!(
        g.file_on_main("shared.txt").as_deref(),
        Some(format!("{r}\n").as_str())
    );
    let fix_show = show(&g, &fix);
    assert!(fix_show.contains("recreated from the base"), "{fix_show}");
    assert!(show(&g, &b).contains(&format!("done through {r} (recreate)")));
}

#[test]
fn conflicts_with_every_budget_spent_wait_on_a_person() {
    let g = GitRepo::with(Setup {
        judge: ONE_REVIEW_PER_TICK,
        extra: "limits:\n  tick_minutes: 5\n  max_conflict_autofix_attempts: 0\n  max_recreate_attempts: 0\n",
        ..Setup::default()
    });
    let (a, b) = two_conflicting_tasks(&g);
    g.run_until_quiet(5, 5, 6);
    assert_eq!(g.task_json(&a)["status"], "done");
    let task = g.task_json(&b);
    assert_eq!(task["status"], "blocked");
    assert_eq!(task["block_reason"], "awaiting_human");
    let shown = show(&g, &b);
    assert!(shown.contains("conflicts with main"), "{shown}");
    assert!(shown.contains("opentiger task retry"), "{shown}");
    assert!(tasks_of_kind(&g, "autofix_conflict").is_empty());
    assert!(tasks_of_kind(&g, "recreate").is_empty());
}

#[test]
fn a_judge_agent_that_is_down_is_retried_then_waits_on_a_person() {
    let g = GitRepo::with(Setup::default());
    g.agent("#!/bin/sh\necho hi > hi.txt\n");
    let calls = g.tools_path().join("judge-calls");
    g.judge(&format!(
        "#!/bin/sh\necho x >> {}\necho 'judge model unavailable' >&2\nexit 1\n",
        calls.display()
    ));
    let id = g.repo.add(&["--title", "Say hi", "--goal", "hi.txt"]);
    g.run_until_quiet(0, 10, 12);
    let task = g.task_json(&id);
    assert_eq!(task["status"], "blocked");
    assert_eq!(task["block_reason"], "awaiting_human");
    let shown = show(&g, &id);
    assert!(shown.contains("never an approval"), "{shown}");
    // The first review and max_judge_retries (3) retries, then no more.
    let reviews = std::fs::read_to_string(&calls).unwrap().lines().count();
    assert_eq!(reviews, 4, "{shown}");
    assert!(g.file_on_main("hi.txt").is_none(), "never merged");
}

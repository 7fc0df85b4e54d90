//! A task's PR through CI and the merge: red CI gets an AutoFix on the same PR, CI that stays
//! red or never finishes goes to a person, a PR that stays unmergeable is conflict-fixed then
//! recreated, an approved PR behind the base is updated first, a failing judge never merges.

use super::*;

/// Opens one task's PR from a trusted issue; returns the issue number.
fn task_with_a_pr(s: &Setup) -> u64 {
    let issue = s.server.add_issue(
        "Add a greeting",
        "Please add a greeting file.",
        &["opentiger"],
        "alice",
        "OWNER",
    );
    tick(s, "2026-11-21T12:00:00Z");
    assert_eq!(s.server.pulls().len(), 1);
    issue
}

fn autofix_tasks(s: &Setup) -> Vec<serde_json::Value> {
    tasks(s)
        .into_iter()
        .filter(|t| t["kind"] == "autofix")
        .collect()
}

#[test]
fn red_ci_gets_an_autofix_on_the_same_pr_then_green_ci_and_the_merge_finish_the_task() {
    let s = setup();
    task_with_a_pr(&s);
    let first = s.server.pulls()[0].clone();
    s.server
        .set_check_runs(&first.head_sha, &[("test", "completed", Some("failure"))]);
    s.server.set_check_output(
        &first.head_sha,
        "test",
        "1 test failed",
        "greeting_is_polite: expected 'hello'",
    );
    let out = tick(&s, "2026-11-21T12:05:00Z");
    assert!(out.contains("CI failed on"), "{out}");

    // One AutoFix child, run at once on the same branch: the same PR, a new head.
    let fixes = autofix_tasks(&s);
    assert_eq!(fixes.len(), 1, "{fixes:?}");
    let pulls = s.server.pulls();
    assert_eq!(pulls.len(), 1, "the PR is updated in place: {pulls:?}");
    assert_eq!(pulls[0].number, first.number);
    assert_ne!(pulls[0].head_sha, first.head_sha, "the fix was pushed");
    assert_eq!(fixes[0]["pr"], first.number);
    // The fix is told which check failed and what it reported.
    let show = opentiger(
        &s,
        "2026-11-21T12:05:00Z",
        &["task", "show", fixes[0]["id"].as_str().unwrap()],
    );
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(
        shown.contains("CI check `test` failed")
            && shown.contains("1 test failed: greeting_is_polite: expected 'hello'"),
        "{shown}"
    );
    let source = tasks(&s)
        .into_iter()
        .find(|t| t["kind"] != "autofix")
        .unwrap();
    assert_eq!(source["block_reason"], "needs_rework", "{source:?}");

    // The fix's head goes green: the judge reviews it and GitHub merges the PR, once.
    let fixed = pulls[0].head_sha.clone();
    s.server
        .set_check_runs(&fixed, &[("test", "completed", Some("success"))]);
    // CI now gates the merge (its checks were seen): no review window, merged at once.
    let out = tick(&s, "2026-11-21T12:10:00Z");
    assert!(out.contains("checks success"), "{out}");
    assert!(out.contains("approved and merged"), "{out}");
    assert_eq!(autofix_tasks(&s).len(), 1);
    let merged = s.server.pull(first.number).unwrap();
    assert!(merged.merged, "{merged:?}");
    let verdicts: Vec<_> = s
        .server
        .comments(first.number)
        .into_iter()
        .filter(|c| c.body.contains("opentiger:verdict"))
        .collect();
    // The first head was approved before CI reported on it (the repository had none known
    // yet); the fix's verdict is the merge.
    assert_eq!(verdicts.len(), 2, "{verdicts:?}");
    assert!(
        verdicts[1].body.contains("approved** — merged"),
        "{verdicts:?}"
    );
    // The source follows its fix.
    tick(&s, "2026-11-21T12:15:00Z");
    tick(&s, "2026-11-21T12:20:00Z");
    let all = tasks(&s);
    assert!(
        all.iter().all(|t| t["status"] == "done"),
        "source and fix are done: {all:?}"
    );
    assert_eq!(s.server.pulls().len(), 1);
    // One merge commit on origin's main, made by GitHub, naming the task.
    let log = git(&s.origin, &["log", "--format=%B", "main"]);
    assert_eq!(log.matches("Task: ").count(), 1, "one merge commit: {log}");
}

#[test]
fn ci_that_stays_red_is_fixed_a_bounded_number_of_times_then_waits_on_a_person() {
    let s = setup();
    task_with_a_pr(&s);
    for minute in (5..60).step_by(5) {
        let head = s.server.pulls()[0].head_sha.clone();
        s.server
            .set_check_runs(&head, &[("test", "completed", Some("failure"))]);
        tick(&s, &format!("2026-11-21T12:{minute:02}:00Z"));
    }
    let fixes = autofix_tasks(&s);
    assert_eq!(fixes.len(), 3, "max_autofix_attempts is 3: {fixes:?}");
    assert_eq!(s.server.pulls().len(), 1);
    let waiting: Vec<_> = tasks(&s)
        .into_iter()
        .filter(|t| t["block_reason"] == "awaiting_human")
        .collect();
    assert_eq!(waiting.len(), 1, "{:?}", tasks(&s));
    let status = opentiger(&s, "2026-11-21T13:00:00Z", &["status"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("after 3 AutoFix attempts (limit 3)"),
        "{text}"
    );
}

#[test]
fn ci_pending_past_the_timeout_waits_on_a_person() {
    let s = setup();
    task_with_a_pr(&s);
    let head = s.server.pulls()[0].head_sha.clone();
    s.server
        .set_check_runs(&head, &[("deploy preview", "queued", None)]);
    tick(&s, "2026-11-21T12:30:00Z");
    assert_eq!(tasks(&s)[0]["block_reason"], "awaiting_judge");
    tick(&s, "2026-11-21T14:30:00Z");
    let all = tasks(&s);
    assert_eq!(all[0]["block_reason"], "awaiting_human", "{all:?}");
    assert!(autofix_tasks(&s).is_empty());
    let status = opentiger(&s, "2026-11-21T14:30:00Z", &["status"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("CI still pending after 120 minutes") && text.contains("deploy preview"),
        "{text}"
    );
}

/// GitHub keeps calling the PR unmergeable: two conflict fixes on its branch (bounded), then the
/// goal is recreated from the base in a new PR, the old PR is closed with a comment saying why,
/// and the new PR is merged and closes the issue.
#[test]
fn a_pr_that_stays_unmergeable_is_conflict_fixed_then_recreated_in_a_new_pr_and_merged() {
    let s = setup();
    let issue = task_with_a_pr(&s);
    let old = s.server.pulls()[0].clone();
    s.server.set_mergeable(old.number, Some(false), "dirty");
    // The first tick approved it; the first tick after the review window merges — GitHub
    // refuses (issue 38: the approval stands, the merge is tried without a second review).
    let out = tick(&s, "2026-11-21T12:10:00Z");
    assert!(out.contains("conflict fix"), "{out}");
    let verdicts: Vec<_> = s
        .server
        .comments(old.number)
        .into_iter()
        .filter(|c| c.body.contains("opentiger:verdict"))
        .collect();
    // Its verdict says so (the conflict fix's own review may follow in the same tick's rounds).
    assert!(verdicts[0].body.contains("cannot merge"), "{verdicts:?}");
    // Each fix and the recreation are approved at once and merged after their window.
    for minute in (15..150).step_by(5) {
        tick(&s, &common::minute(minute));
        if tasks(&s)
            .iter()
            .all(|t| t["status"] == "done" || t["status"] == "cancelled")
        {
            break;
        }
    }
    let all = tasks(&s);
    let fixes = kind_of_tasks(&s, "autofix_conflict");
    assert_eq!(
        fixes.len(),
        2,
        "max_conflict_autofix_attempts is 2: {all:?}"
    );
    let recreated = kind_of_tasks(&s, "recreate");
    assert_eq!(recreated.len(), 1, "{all:?}");
    assert_eq!(recreated[0]["status"], "done", "{all:?}");
    let origin = all.iter().find(|t| t["kind"] == "feature").unwrap();
    assert_eq!(origin["status"], "done", "{all:?}");
    // The old PR closed unmerged, with one comment naming the recreation; the new one merged.
    let closed = s.server.pull(old.number).unwrap();
    assert!(!closed.merged && closed.state == "closed", "{closed:?}");
    let notes: Vec<_> = s
        .server
        .comments(old.number)
        .into_iter()
        .filter(|c| c.body.contains("opentiger:closed"))
        .collect();
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].body.contains(recreated[0]["id"].as_str().unwrap()),
        "{notes:?}"
    );
    let pulls = s.server.pulls();
    assert_eq!(pulls.len(), 2, "{pulls:?}");
    let new = pulls.iter().find(|p| p.number != old.number).unwrap();
    assert!(new.merged, "{new:?}");
    assert_eq!(s.server.issue(issue).unwrap().state, "closed");
}

/// An approved PR behind the base gets the base merged into its branch first; CI runs on that
/// head (pending, then green) and only then is it merged — once.
#[test]
fn an_approved_pr_behind_the_base_is_updated_then_merged_once_ci_is_green() {
    let s = setup();
    // CI is required by name: a head waits for it (here: a new head pushed in a tick's round).
    let path = s.clone.join(".opentiger.yml");
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        format!("{config}merge:\n  required_checks: [test]\n"),
    )
    .unwrap();
    task_with_a_pr(&s);
    let pr = s.server.pulls()[0].clone();
    s.server
        .set_check_runs(&pr.head_sha, &[("test", "completed", Some("success"))]);
    // Someone else lands a change on main meanwhile.
    std::fs::write(s.clone.join("CHANGELOG.md"), "- other work\n").unwrap();
    git(&s.clone, &["add", "CHANGELOG.md"]);
    git(&s.clone, &["commit", "-q", "-m", "Other work"]);
    git(&s.clone, &["push", "-q", "origin", "main"]);
    let out = tick(&s, "2026-11-21T12:05:00Z");
    assert!(out.contains("behind the base"), "{out}");
    let updated = s.server.pull(pr.number).unwrap();
    assert_ne!(
        updated.head_sha, pr.head_sha,
        "the base was merged into the branch"
    );
    assert!(!updated.merged);
    // CI on the new head: pending holds the merge back, green lets it through.
    s.server
        .set_check_runs(&updated.head_sha, &[("test", "in_progress", None)]);
    let out = tick(&s, "2026-11-21T12:10:00Z");
    assert!(
        out.contains("CI pending") || !out.contains("merged"),
        "{out}"
    );
    assert!(!s.server.pull(pr.number).unwrap().merged);
    s.server
        .set_check_runs(&updated.head_sha, &[("test", "completed", Some("success"))]);
    let out = tick(&s, "2026-11-21T12:15:00Z");
    assert!(out.contains("approved and merged"), "{out}");
    assert!(s.server.pull(pr.number).unwrap().merged);
    tick(&s, "2026-11-21T12:20:00Z");
    assert!(
        tasks(&s).iter().all(|t| t["status"] == "done"),
        "{:?}",
        tasks(&s)
    );
    let log = git(&s.origin, &["log", "--format=%B", "main"]);
    assert_eq!(log.matches("Task: ").count(), 1, "merged once: {log}");
    assert!(git(&s.origin, &["show", "main:CHANGELOG.md"]).contains("other work"));
}

#[test]
fn a_judge_agent_that_keeps_failing_never_merges_and_ends_waiting_on_a_person() {
    let s = setup();
    std::fs::write(
        s.clone.parent().unwrap().join("judge.sh"),
        "#!/bin/sh\necho 'model overloaded' >&2\nexit 3\n",
    )
    .unwrap();
    task_with_a_pr(&s);
    let pr = s.server.pulls()[0].number;
    for minute in (5..60).step_by(5) {
        tick(&s, &format!("2026-11-21T12:{minute:02}:00Z"));
    }
    assert!(
        !s.server.pull(pr).unwrap().merged,
        "a failed review is never an approval"
    );
    let all = tasks(&s);
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(all[0]["block_reason"], "awaiting_human", "{all:?}");
    let status = opentiger(&s, "2026-11-21T13:00:00Z", &["status"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        text.contains("the judge failed") && text.contains("never an approval"),
        "{text}"
    );
}

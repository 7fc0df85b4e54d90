//! Spend: a spent daily budget holds the next run until the next UTC day; a spent tick budget
//! returns the other claims to the queue.

use super::*;

/// DESIGN §9: runs that cost more than `budget.per_day_usd` hold the next task back for the rest
/// of the UTC day, visibly; the next day it runs. Raising the budget would lift it at once.
#[test]
fn a_spent_daily_budget_holds_the_next_run_until_the_next_day() {
    let g = GitRepo::with(Setup {
        extra: "budget:\n  per_day_usd: 5\n  per_task_usd: 20\n",
        ..Setup::default()
    });
    g.agent("#!/bin/sh\necho \"$OPENTIGER_TASK_ID\" > \"out-$OPENTIGER_TASK_ID.txt\"\necho '{\"summary\": \"expensive\", \"cost_usd\": 6.5}' > \"$OPENTIGER_RESULT_FILE\"\n");
    let a = g
        .repo
        .add(&["--title", "First", "--goal", "a", "--priority", "9"]);
    let b = g.repo.add(&["--title", "Second", "--goal", "b"]);
    let out = g.tick(&minute(0));
    assert!(
        out.stdout
            .contains("spent: $6.50 this tick, $6.50 today of $5.00 a day (budget.per_day_usd)"),
        "{}",
        out.stdout
    );
    for m in [5, 10, 15] {
        g.tick(&minute(m));
    }
    assert_eq!(g.task_json(&a)["status"], "done");
    let held = g.task_json(&b);
    assert_eq!(held["status"], "queued", "{held}");
    assert_eq!(held["phase"], "paused", "held for the budget: {held}");
    let why = held["next_action"].as_str().unwrap_or_default().to_string()
        + held["reason"].as_str().unwrap_or_default();
    assert!(
        why.contains("today's spend $6.50 reached budget.per_day_usd $5.00"),
        "{held}"
    );
    let status = g
        .repo
        .run_at(&minute(15), &["status", "--json"])
        .ok()
        .json();
    assert_eq!(status["spend"]["today_usd"], 6.5, "{status}");
    assert_eq!(status["spend"]["per_day_usd"], 5.0, "{status}");
    // The next UTC day the second task runs.
    for (i, at) in ["2026-11-22T00:01:00Z", "2026-11-22T00:10:00Z"]
        .iter()
        .enumerate()
    {
        let out = g.tick(at);
        assert_eq!(out.code, 0, "tick {i}: {}", out.stderr);
    }
    assert_eq!(g.task_json(&b)["status"], "done");
    // No issue to tell in a local mode: decided is completed at once, never `reporting`.
    assert_eq!(g.task_json(&b)["phase"], "completed");
}

/// `budget.per_tick_usd`: once a tick's runs spent it, the runs it claimed but did not start go
/// back to the queue (not failed, no retry budget used) and run in a later tick.
#[test]
fn a_spent_tick_budget_returns_the_other_claims_to_the_queue() {
    let g = GitRepo::with(Setup {
        worker: "    count: 2\n",
        extra: "limits:\n  max_runs_per_tick: 2\nbudget:\n  per_tick_usd: 1\n",
        ..Setup::default()
    });
    g.agent("#!/bin/sh\necho \"$OPENTIGER_TASK_ID\" > \"out-$OPENTIGER_TASK_ID.txt\"\necho '{\"cost_usd\": 1.5}' > \"$OPENTIGER_RESULT_FILE\"\n");
    let a = g
        .repo
        .add(&["--title", "First", "--goal", "a", "--priority", "9"]);
    let b = g.repo.add(&["--title", "Second", "--goal", "b"]);
    let out = g.tick(&minute(0));
    // Two claimed, one started: the summary counts runs started. The review of the one that
    // ran is no run: the tick's next round reviews and merges it (issue 38), and holds the
    // other for the tick's budget instead of claiming it again.
    assert!(
        out.stdout.contains("1 run(s), 1 review(s) in 2 rounds"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("not started: this tick's runs spent $1.50, budget.per_tick_usd is $1.00"),
        "{}",
        out.stdout
    );
    assert_eq!(g.task_json(&a)["status"], "done");
    assert!(
        out.stdout.contains(
            "this tick's runs spent $1.50, budget.per_tick_usd is $1.00; queued for the next tick"
        ),
        "{}",
        out.stdout
    );
    let held = g.task_json(&b);
    assert_eq!(held["status"], "queued", "{held}");
    // Not held: back in the queue for the next tick, which claims it (no budget is spent).
    assert_eq!(held["phase"], "intake", "{held}");
    assert!(held["attempts"].as_object().unwrap().is_empty(), "{held}");
    g.run_until_quiet(5, 5, 8);
    assert_eq!(g.task_json(&b)["status"], "done");
}

//! Table tests of recovery in github mode: a task follows its pull request (merged, closed,
//! open), CI on the pushed head decides before anything else, CI that never starts is
//! diagnosed once then escalated, a queued review goes back to the judge.

use super::*;

#[test]
fn github_tasks_follow_their_pull_request() {
    use crate::engine::PullState;
    let github = Config::default();
    assert_eq!(github.mode, Mode::Github);
    let waiting = || {
        task("a")
            .blocked(BlockReason::AwaitingJudge)
            .with(|t| t.source_pr = Some(7))
    };
    let cases: &[(Option<PullState>, &[&str], &str)] = &[
        (
            Some(PullState::Merged),
            &["recovery.pr_merged a -> done"],
            "PR #7 was merged",
        ),
        (
            Some(PullState::Closed),
            &["recovery.pr_closed a -> cancelled"],
            "closed without being merged",
        ),
        (
            Some(PullState::Open),
            &[],
            "PR #7 is open: waits for review and merge",
        ),
        (None, &[], "PR #7 is open"),
    ];
    for (state, expect, reason) in cases {
        let mut snap = snapshot(
            vec![waiting()],
            vec![run("r1", "a", RunStatus::Success, at(-10))],
            vec![],
        );
        if let Some(s) = state {
            snap.observations.pull_requests.insert(7, *s);
        }
        let plan = plan_with(&snap, &github);
        assert_eq!(writes(&plan), *expect, "{state:?}");
        assert!(
            reasons(&plan, "a").join(" | ").contains(reason),
            "{state:?}: {:?}",
            reasons(&plan, "a")
        );
    }
}

/// github mode: task `a` waits on PR #7, whose head `aaa` its run `r1` (started at `run_at`)
/// pushed; CI says `observed`.
fn pr_snapshot(
    run_at: crate::time::Timestamp,
    observed: Option<crate::engine::gate::CiObservation>,
    leases: Vec<crate::model::Lease>,
) -> crate::engine::Snapshot {
    let mut r1 = run("r1", "a", RunStatus::Success, run_at);
    r1.pr_number = Some(7);
    r1.head_sha = Some("aaa".into());
    let mut snap = snapshot(
        vec![task("a")
            .blocked(BlockReason::AwaitingJudge)
            .with(|t| t.source_pr = Some(7))],
        vec![r1],
        leases,
    );
    snap.observations
        .pull_requests
        .insert(7, crate::engine::PullState::Open);
    if let Some(o) = observed {
        snap.observations.pull_checks.insert(7, o);
    }
    snap
}

#[test]
fn github_ci_on_the_pushed_head_decides_first() {
    use crate::engine::gate::CiObservation;
    let github = Config::default();
    // name, what CI says, AutoFix tasks of the PR so far, writes, a reason that must show.
    type Row<'a> = (&'a str, Option<CiObservation>, u32, &'a [&'a str], &'a str);
    // The run finished at -9 minutes; the default timeout is 120 minutes.
    #[rustfmt::skip]
    let cases: Vec<Row> = vec![
        ("green", Some(checks_on("aaa", &["test"], &[], &[])), 0, &["judge.review a judge r1"], "not judged yet"),
        ("no CI", Some(ci("aaa", "none", &[], &[])), 0, &["judge.review a judge r1"], "not judged yet"),
        ("pending", Some(ci("aaa", "pending", &[], &["lint"])), 0, &[], "CI pending (lint)"),
        ("not read yet", None, 0, &[], "CI pending (not read yet)"),
        ("head moved", Some(ci("bbb", "failure", &["test"], &[])), 0, &[], "head moved to bbb"),
        ("red", Some(ci("aaa", "failure", &["test"], &[])), 0,
            &["judge.autofix_child 276bf85c4c6e create autofix AutoFix 1/3: task a", "judge.checks_failed a -> blocked(needs_rework)", "dispatch.claim 276bf85c4c6e claim"],
            "CI failed on aaa: test"),
        ("red, AutoFix budget spent", Some(ci("aaa", "failure", &["test"], &[])), 3,
            &["judge.checks_failed a -> blocked(awaiting_human)"],
            "after 3 AutoFix attempts (limit 3)"),
    ];
    for (name, observed, fixes, expect, reason) in cases {
        let mut snap = pr_snapshot(at(-10), observed, vec![]);
        for n in 0..fixes {
            // Earlier fixes of this PR's task, finished: they count against the budget.
            let mut fix = task(&format!("fix{n}"));
            fix.kind = crate::model::TaskKind::Autofix;
            fix.parent_task_id = Some(TaskId("a".into()));
            fix.status = TaskStatus::Cancelled;
            snap.tasks.push(fix);
        }
        let plan = plan_with(&snap, &github);
        assert_eq!(writes(&plan), *expect, "{name}");
        let all = plan
            .decisions
            .iter()
            .map(|d| d.reason.clone())
            .collect::<Vec<_>>()
            .join(" | ");
        assert!(all.contains(reason), "{name}: {all}");
    }

    // Green CI on a head already under review (leased): it waits, saying why.
    let snap = pr_snapshot(
        at(-10),
        Some(checks_on("aaa", &["test"], &[], &[])),
        vec![lease("a", "r1", "local:box:1", at(30))],
    );
    let plan = plan_with(&snap, &github);
    assert!(writes(&plan).is_empty(), "{:?}", writes(&plan));
    assert!(
        reasons(&plan, "a").join(" | ").contains("CI green on aaa"),
        "{:?}",
        reasons(&plan, "a")
    );

    // Pending past merge.checks_timeout_minutes: a person decides, naming what is pending.
    let snap = pr_snapshot(
        at(-200),
        Some(ci("aaa", "pending", &[], &["deploy preview"])),
        vec![],
    );
    let plan = plan_with(&snap, &github);
    assert_eq!(
        writes(&plan),
        ["judge.checks_timeout a -> blocked(awaiting_human)"]
    );
    assert!(
        reasons(&plan, "a")
            .join(" | ")
            .contains("CI still pending after 120 minutes"),
        "{:?}",
        reasons(&plan, "a")
    );
}

/// Issue 19: expected checks that never start on the head are never a pass: one diagnosis
/// (with a dispatch when the token may), then a person.
#[test]
fn github_ci_that_never_starts_is_diagnosed_once_then_escalated() {
    use crate::engine::gate::{ExpectedChecks, ExpectedSource};
    use crate::engine::stall::{CiHeal, CiSetup, Dispatch};
    let github = Config::default();
    let trap = |dispatchable: bool| CiSetup {
        workflow_token: true,
        push_workflows: vec!["ci.yml".into()],
        head_workflows: vec!["ci.yml".into()],
        lacks_dispatch: Vec::new(),
        may_dispatch: dispatchable,
    };
    let healed = |dispatch: Dispatch| CiHeal {
        head_sha: "aaa".into(),
        at: at(-12),
        dispatch,
        after_scan: false,
    };
    let sent = Dispatch::Sent {
        workflows: vec!["ci.yml".into()],
    };
    // name, run finished at, setup, what was done before, writes.
    type Row<'a> = (&'a str, i64, CiSetup, Option<CiHeal>, &'a [&'a str]);
    #[rustfmt::skip]
    let cases: Vec<Row> = vec![
        ("within the grace period", -5, trap(true), None, &[]),
        ("trap, may dispatch", -20, trap(true), None, &["judge.ci_diagnosis a heal CI #7 dispatch ci.yml"]),
        ("trap, may not dispatch", -20, trap(false), None,
            &["judge.ci_diagnosis a heal CI #7", "judge.ci_never_started a -> blocked(awaiting_human)"]),
        ("dispatched, waiting", -20, trap(true), Some(healed(sent.clone())).map(|h| CiHeal { at: at(-5), ..h }), &[]),
        ("dispatched, nothing came", -20, trap(true), Some(healed(sent)), &["judge.ci_never_started a -> blocked(awaiting_human)"]),
    ];
    for (name, finished, setup, heal, expect) in cases {
        let mut snap = pr_snapshot(
            at(finished - 1),
            Some(checks_on("aaa", &["lint"], &[], &[])),
            vec![],
        );
        snap.runs[0].finished_at = Some(at(finished));
        snap.observations.expected_checks = ExpectedChecks {
            source: ExpectedSource::Config,
            names: vec!["test".into()],
        };
        snap.observations.ci_setup = setup;
        if let Some(heal) = heal {
            snap.observations.ci_heals.insert(7, heal);
        }
        let plan = plan_with(&snap, &github);
        assert_eq!(writes(&plan), *expect, "{name}: {:?}", reasons(&plan, "a"));
        assert!(
            !writes(&plan).iter().any(|w| w.contains("judge r1")),
            "{name}: never reviewed for a merge"
        );
    }
}

/// A person's PR review is never run by a worker: queued again (by `task retry`), it goes back
/// to the judge with its head's run reviewable; without that run it ends.
#[test]
fn a_queued_pr_review_goes_back_to_the_judge() {
    let review = || task("p").with(|t| t.kind = TaskKind::PrReview);
    let mut judged = run("r1", "p", RunStatus::Success, at(-30));
    judged.judged_at = Some(at(-20));
    check(vec![
        Case {
            reason_has: &["the judge reviews the PR's head again"],
            ..case(
                "retried review",
                snapshot(vec![review()], vec![judged], vec![]),
                &[
                    "recovery.pr_review_again p unjudge r1",
                    "recovery.pr_review_again p -> blocked(awaiting_judge)",
                ],
            )
        },
        case(
            "no head to review",
            snapshot(vec![review()], vec![], vec![]),
            &["recovery.pr_review_without_head p -> cancelled"],
        ),
    ]);
}

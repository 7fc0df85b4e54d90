//! Table tests of the recovery rules: each case is a snapshot and the decisions that must follow.

use super::testkit::*;
use crate::config::Config;
use crate::model::{
    AttemptKey, BlockReason, FailureCode, Mode, RunStatus, TaskId, TaskKind, TaskStatus,
};

struct Case {
    name: &'static str,
    snapshot: super::Snapshot,
    config: Config,
    /// Writing decisions, as `rule task action`.
    expect: &'static [&'static str],
    /// Substrings the reasons about the first task must contain.
    reason_has: &'static [&'static str],
}

fn case(name: &'static str, snapshot: super::Snapshot, expect: &'static [&'static str]) -> Case {
    Case {
        name,
        snapshot,
        config: Config::default(),
        expect,
        reason_has: &[],
    }
}

fn check(cases: Vec<Case>) {
    for c in cases {
        let plan = plan_with(&c.snapshot, &c.config);
        assert_eq!(
            writes(&plan),
            c.expect,
            "case `{}`: {:#?}",
            c.name,
            plan.decisions
        );
        if let Some(first) = c.snapshot.tasks.first() {
            let all = reasons(&plan, first.id.as_str()).join(" | ");
            for needle in c.reason_has {
                assert!(
                    all.contains(needle),
                    "case `{}`: `{needle}` not in {all}",
                    c.name
                );
            }
        }
    }
}

#[test]
fn leases_and_lost_runs() {
    let running = || task("a").status(TaskStatus::Running);
    check(vec![
        Case {
            reason_has: &["held by local:box:1 until"],
            ..case(
                "a valid lease is left alone",
                snapshot(
                    vec![running()],
                    vec![run("r1", "a", RunStatus::Running, at(-5))],
                    vec![lease("a", "r1", "local:box:1", at(30))],
                ),
                &[],
            )
        },
        Case {
            reason_has: &["expired", "lost run 1/3"],
            ..case(
                "an expired lease is reclaimed and the task requeued",
                snapshot(
                    vec![running()],
                    vec![run("r1", "a", RunStatus::Running, at(-100))],
                    vec![lease("a", "r1", "local:box:1", at(-1))],
                ),
                &[
                    "recovery.lease_reclaimed a release r1",
                    "recovery.run_lost a cancel r1",
                    "recovery.requeue_lost a -> queued",
                    "dispatch.claim a claim",
                ],
            )
        },
        {
            let mut snap = snapshot(
                vec![running()],
                vec![run("r1", "a", RunStatus::Running, at(-5))],
                vec![lease("a", "r1", "gha:9:1:tick", at(60))],
            );
            snap.observations
                .dead_agents
                .insert(crate::model::AgentId::from("gha:9:1:tick"));
            Case {
                reason_has: &["holder gha:9:1:tick has ended"],
                ..case(
                    "a lease whose holder ended is reclaimed before expiry",
                    snap,
                    &[
                        "recovery.lease_reclaimed a release r1",
                        "recovery.run_lost a cancel r1",
                        "recovery.requeue_lost a -> queued",
                        "dispatch.claim a claim",
                    ],
                )
            }
        },
        Case {
            reason_has: &["lost 4 times (limit 3)", "opentiger task retry a"],
            ..case(
                "runs lost too often wait on a person",
                snapshot(
                    vec![running().attempts(AttemptKey::Lease, 3)],
                    vec![run("r1", "a", RunStatus::Running, at(-100))],
                    vec![lease("a", "r1", "local:box:1", at(-1))],
                ),
                &[
                    "recovery.lease_reclaimed a release r1",
                    "recovery.run_lost a cancel r1",
                    "recovery.lease_budget_exhausted a -> blocked(awaiting_human)",
                ],
            )
        },
        case(
            "a running task without a lease is requeued",
            snapshot(
                vec![running()],
                vec![run("r1", "a", RunStatus::Running, at(-5))],
                vec![],
            ),
            &[
                "recovery.run_lost a cancel r1",
                "recovery.requeue_lost a -> queued",
                "dispatch.claim a claim",
            ],
        ),
        case(
            "a running run of a finished task is cancelled",
            snapshot(
                vec![task("a").status(TaskStatus::Done)],
                vec![run("r1", "a", RunStatus::Running, at(-5))],
                vec![],
            ),
            &["recovery.orphaned_run a cancel r1"],
        ),
        case(
            "a lease on a task that is not running is dropped",
            snapshot(
                vec![task("a").blocked(BlockReason::AwaitingHuman)],
                vec![],
                vec![lease("a", "r1", "local:box:1", at(30))],
            ),
            &["recovery.dangling_lease a release r1"],
        ),
    ]);
}

#[test]
fn failed_tasks_retry_within_their_category_budget() {
    let failed = || task("a").status(TaskStatus::Failed);
    let test_fail = |id: &str, minutes: i64| {
        failed_run(
            id,
            "a",
            Some(FailureCode::VerificationCommandFailed),
            &format!("assertion failed at line {minutes}"),
            at(minutes),
        )
    };
    check(vec![
        Case {
            reason_has: &["test failure (test_failure): retry 1/3 after 12:05:00Z"],
            ..case(
                "a test failure with budget left is retried after the cooldown",
                snapshot(vec![failed()], vec![test_fail("r1", -10)], vec![]),
                &["recovery.retry_failed a -> queued"],
            )
        },
        Case {
            reason_has: &["test retry budget used (3/3)", "follows rework task"],
            ..case(
                "an exhausted budget creates one rework child and the source follows it",
                snapshot(
                    vec![failed().attempts(AttemptKey::Test, 3)],
                    vec![test_fail("r1", -10)],
                    vec![],
                ),
                &[
                    "recovery.rework_child 760d02aa0247 create rework Rework: task a",
                    "recovery.follow_rework a -> blocked(needs_rework)",
                    "dispatch.claim 760d02aa0247 claim",
                ],
            )
        },
        Case {
            reason_has: &["rework depth 2/2 reached", "opentiger task cancel a"],
            ..case(
                "past the rework depth a person decides",
                snapshot(
                    vec![failed()
                        .attempts(AttemptKey::Test, 3)
                        .with(|t| t.rework_depth = 2)],
                    vec![test_fail("r1", -10)],
                    vec![],
                ),
                &["recovery.escalate_to_human a -> blocked(awaiting_human)"],
            )
        },
        Case {
            reason_has: &["external_directory_permission_prompt is not retried"],
            ..case(
                "a permission prompt is never retried",
                snapshot(
                    vec![failed()],
                    vec![failed_run(
                        "r1",
                        "a",
                        Some(FailureCode::ExternalDirectoryPermissionPrompt),
                        "asked for permission",
                        at(-10),
                    )],
                    vec![],
                ),
                &["recovery.escalate_to_human a -> blocked(awaiting_human)"],
            )
        },
        Case {
            reason_has: &[
                "the same failure as the attempt before (transient_or_flaky_failure), not retried as it is: connection timed out after 30s",
            ],
            ..case(
                "the same failure twice is not retried as it is: one rework",
                snapshot(
                    vec![failed().attempts(AttemptKey::Flaky, 1)],
                    (1..=2)
                        .map(|i| {
                            failed_run(
                                &format!("r{i}"),
                                "a",
                                None,
                                "connection timed out after 30s",
                                at(-10 * i),
                            )
                        })
                        .collect(),
                    vec![],
                ),
                &[
                    "recovery.rework_child 760d02aa0247 create rework Rework: task a",
                    "recovery.follow_rework a -> blocked(needs_rework)",
                    "dispatch.claim 760d02aa0247 claim",
                ],
            )
        },
        Case {
            reason_has: &["flaky failure"],
            ..case(
                "different failures are not a repeated signature",
                snapshot(
                    vec![failed()],
                    (1..=4)
                        .map(|i| {
                            failed_run(
                                &format!("r{i}"),
                                "a",
                                None,
                                &format!(
                                    "timed out in step {}",
                                    ["build", "lint", "test", "docs"][i as usize - 1]
                                ),
                                at(-10 * i),
                            )
                        })
                        .collect(),
                    vec![],
                ),
                &["recovery.retry_failed a -> queued"],
            )
        },
    ]);
}

/// Issue 27 item 2: a policy violation is never retried as it is (one rework naming it, then a
/// person with the fix), and a rework failing the way its parent did stops the family.
#[test]
fn a_repeated_failure_stops_the_family_early() {
    let violation = |id: &str, task: &str, minutes: i64| {
        failed_run(
            id,
            task,
            Some(FailureCode::PolicyViolation),
            "Policy violation: symbolic link out/link points outside the worktree",
            at(minutes),
        )
    };
    let rework_of_a = |status: TaskStatus| {
        task("w").status(status).with(|t| {
            t.parent_task_id = Some(TaskId::from("a"));
            t.kind = TaskKind::Rework;
            t.rework_depth = 1;
        })
    };
    let parent = || task("a").blocked(BlockReason::NeedsRework);
    let test_fail = |id: &str, task: &str, text: &str, minutes: i64| {
        failed_run(id, task, Some(FailureCode::TestFailure), text, at(minutes))
    };
    check(vec![
        Case {
            reason_has: &[
                "a policy violation is not retried as it is: policy_violation: Policy violation: symbolic link out/link points outside the worktree",
                "Fix: symbolic links must point inside the worktree",
            ],
            ..case(
                "a first policy violation: one rework naming it, no retry as it is",
                snapshot(vec![task("a").status(TaskStatus::Failed)], vec![violation("r1", "a", -10)], vec![]),
                &[
                    "recovery.rework_child 760d02aa0247 create rework Rework: task a",
                    "recovery.follow_rework a -> blocked(needs_rework)",
                    "dispatch.claim 760d02aa0247 claim",
                ],
            )
        },
        Case {
            reason_has: &[
                "a policy violation is not retried as it is",
                "this family already had its rework",
                "Fix: symbolic links must point inside the worktree",
                "`opentiger task retry a` (it retries this rework, w)",
            ],
            ..case(
                "a policy violation of the rework: a person, with the fix",
                snapshot(
                    vec![rework_of_a(TaskStatus::Failed), parent()],
                    vec![violation("r1", "a", -20), violation("r2", "w", -10)],
                    vec![],
                ),
                &["recovery.repeated_failure w -> blocked(awaiting_human)"],
            )
        },
        Case {
            reason_has: &["the same failure as the attempt before (test_failure)", "this family already had its rework"],
            ..case(
                "a rework failing as its parent did: a person",
                snapshot(
                    vec![rework_of_a(TaskStatus::Failed), parent()],
                    vec![test_fail("r1", "a", "assert x == 1 failed", -20), test_fail("r2", "w", "assert x == 2 failed", -10)],
                    vec![],
                ),
                &["recovery.repeated_failure w -> blocked(awaiting_human)"],
            )
        },
        Case {
            reason_has: &["test failure (test_failure): retry 1/3"],
            ..case(
                "a rework failing differently is retried within its budget",
                snapshot(
                    vec![rework_of_a(TaskStatus::Failed), parent()],
                    vec![test_fail("r1", "a", "assert x == 1 failed", -20), test_fail("r2", "w", "panicked: index out of bounds", -10)],
                    vec![],
                ),
                &["recovery.retry_failed w -> queued"],
            )
        },
        Case {
            config: Config {
                limits: crate::config::LimitsConfig { max_rework_depth: 0, ..Default::default() },
                ..Config::default()
            },
            reason_has: &["reworks are off (limits.max_rework_depth = 0)", "Fix: the agent changed the git configuration"],
            ..case(
                "reworks off: a policy violation goes to a person at once",
                snapshot(
                    vec![task("a").status(TaskStatus::Failed)],
                    vec![failed_run("r1", "a", Some(FailureCode::PolicyViolation), "policy_violation: the agent changed the git repository configuration, which was put back: core.hookspath", at(-10))],
                    vec![],
                ),
                &["recovery.repeated_failure a -> blocked(awaiting_human)"],
            )
        },
    ]);
}

#[test]
fn rework_children_are_created_once() {
    // The child already exists (a replayed decision): the source only follows it.
    let child_id = crate::model::short_hash(&["rework", "a", "1"]);
    let child = task(&child_id).with(|t| {
        t.parent_task_id = Some(TaskId::from("a"));
        t.kind = TaskKind::Rework;
        t.rework_depth = 1;
    });
    let snap = snapshot(
        vec![
            task("a")
                .status(TaskStatus::Failed)
                .attempts(AttemptKey::Test, 3),
            child,
        ],
        vec![failed_run(
            "r1",
            "a",
            Some(FailureCode::TestFailure),
            "assert",
            at(-10),
        )],
        vec![],
    );
    let plan = plan_with(&snap, &Config::default());
    assert_eq!(
        writes(&plan),
        [
            "recovery.follow_rework a -> blocked(needs_rework)",
            &format!("dispatch.claim {child_id} claim")
        ]
    );
}

#[test]
fn blocked_tasks_recover_by_reason() {
    let child = |status: TaskStatus| {
        task("c").status(status).with(|t| {
            t.parent_task_id = Some(TaskId::from("a"));
            t.kind = TaskKind::Autofix;
        })
    };
    let local = || Config {
        mode: Mode::LocalGit,
        ..Config::default()
    };
    check(vec![
        Case {
            reason_has: &["quota_wait: retry after 2026-11-21T12:10:00Z (wait 1/12)"],
            ..case(
                "quota wait before its time",
                snapshot(
                    vec![task("a")
                        .blocked(BlockReason::QuotaWait)
                        .attempts(AttemptKey::Quota, 1)
                        .next_at(at(10))],
                    vec![],
                    vec![],
                ),
                &[],
            )
        },
        case(
            "quota wait after its time is queued (and claimed)",
            snapshot(
                vec![task("a")
                    .blocked(BlockReason::QuotaWait)
                    .attempts(AttemptKey::Quota, 1)
                    .next_at(at(-1))],
                vec![],
                vec![],
            ),
            &[
                "recovery.quota_wait_retry a -> queued",
                "dispatch.claim a claim",
            ],
        ),
        Case {
            reason_has: &["quota hit 13 times (limit 12)"],
            ..case(
                "too many quota waits go to a person",
                snapshot(
                    vec![task("a")
                        .blocked(BlockReason::QuotaWait)
                        .attempts(AttemptKey::Quota, 13)
                        .next_at(at(-1))],
                    vec![],
                    vec![],
                ),
                &["recovery.quota_budget_exhausted a -> blocked(awaiting_human)"],
            )
        },
        Case {
            reason_has: &["follows autofix c (running)"],
            ..case(
                "the source waits while its fix runs",
                snapshot(
                    vec![
                        task("a").blocked(BlockReason::NeedsRework),
                        child(TaskStatus::Running),
                    ],
                    vec![],
                    vec![lease("c", "rc", "local:box:1", at(30))],
                ),
                &[],
            )
        },
        Case {
            reason_has: &["done through c (autofix)"],
            ..case(
                "the source is done when its fix is done",
                snapshot(
                    vec![
                        task("a").blocked(BlockReason::NeedsRework),
                        child(TaskStatus::Done),
                    ],
                    vec![],
                    vec![],
                ),
                &["recovery.child_done a -> done"],
            )
        },
        Case {
            reason_has: &["follows autofix b (running)"],
            ..case(
                "a fix superseded by the next one made at the same instant: the newer is followed",
                snapshot(
                    vec![
                        task("a").blocked(BlockReason::NeedsRework),
                        child(TaskStatus::Cancelled),
                        task("b").status(TaskStatus::Running).with(|t| {
                            t.parent_task_id = Some(TaskId::from("a"));
                            t.kind = TaskKind::Autofix;
                        }),
                    ],
                    vec![],
                    vec![lease("b", "rb", "local:box:1", at(30))],
                ),
                &[],
            )
        },
        Case {
            reason_has: &["its fix c was cancelled"],
            ..case(
                "a cancelled fix hands the source to a person",
                snapshot(
                    vec![
                        task("a").blocked(BlockReason::NeedsRework),
                        child(TaskStatus::Cancelled),
                    ],
                    vec![],
                    vec![],
                ),
                &["recovery.child_cancelled a -> blocked(awaiting_human)"],
            )
        },
        case(
            "needs_rework without a child gets one",
            snapshot(
                vec![task("a").blocked(BlockReason::NeedsRework)],
                vec![],
                vec![],
            ),
            &[
                "recovery.rework_child 760d02aa0247 create rework Rework: task a",
                "recovery.follow_rework a -> blocked(needs_rework)",
                "dispatch.claim 760d02aa0247 claim",
            ],
        ),
        Case {
            config: local(),
            ..case(
                "an unjudged successful run is judged",
                snapshot(
                    vec![task("a").blocked(BlockReason::AwaitingJudge)],
                    vec![run("r1", "a", RunStatus::Success, at(-10))],
                    vec![],
                ),
                &["judge.review a judge r1"],
            )
        },
        Case {
            config: local(),
            ..case(
                "awaiting_judge without a run is retried after the cooldown",
                snapshot(
                    vec![task("a")
                        .blocked(BlockReason::AwaitingJudge)
                        .with(|t| t.updated_at = at(-10))],
                    vec![],
                    vec![],
                ),
                &[
                    "recovery.awaiting_judge_retry a -> queued",
                    "dispatch.claim a claim",
                ],
            )
        },
        Case {
            config: local(),
            reason_has: &["no reviewable run after 3 judge retries"],
            ..case(
                "judge retries are bounded",
                snapshot(
                    vec![task("a")
                        .blocked(BlockReason::AwaitingJudge)
                        .attempts(AttemptKey::Judge, 3)
                        .with(|t| t.updated_at = at(-10))],
                    vec![],
                    vec![],
                ),
                &["recovery.judge_budget_exhausted a -> blocked(awaiting_human)"],
            )
        },
        Case {
            config: local(),
            ..case(
                "issue linking does not apply without GitHub",
                snapshot(
                    vec![task("a").blocked(BlockReason::IssueLinking)],
                    vec![],
                    vec![],
                ),
                &[
                    "recovery.issue_linked a -> queued",
                    "dispatch.claim a claim",
                ],
            )
        },
        Case {
            reason_has: &["open its GitHub issue"],
            ..case(
                "issue linking opens the mirror issue in github mode",
                snapshot(
                    vec![task("a").blocked(BlockReason::IssueLinking)],
                    vec![],
                    vec![],
                ),
                &["forge.open_issue a open issue"],
            )
        },
        case(
            "a linked issue queues the task in github mode",
            snapshot(
                vec![task("a")
                    .blocked(BlockReason::IssueLinking)
                    .with(|t| t.issue_number = Some(4))],
                vec![],
                vec![],
            ),
            &[
                "recovery.issue_linked a -> queued",
                "dispatch.claim a claim",
            ],
        ),
        Case {
            reason_has: &["waits on a person: `opentiger task retry a` once the cause is dealt with, or `opentiger task cancel a`"],
            ..case(
                "awaiting_human waits",
                snapshot(
                    vec![task("a")
                        .blocked(BlockReason::AwaitingHuman)
                        .with(|t| t.status_reason = Some("budget".into()))],
                    vec![],
                    vec![],
                ),
                &[],
            )
        },
        Case {
            reason_has: &["depends on d, which was cancelled"],
            ..case(
                "a cancelled dependency hands the task to a person",
                snapshot(
                    vec![
                        task("a").deps(&["d"]),
                        task("d").status(TaskStatus::Cancelled),
                    ],
                    vec![],
                    vec![],
                ),
                &["recovery.broken_dependency a -> blocked(awaiting_human)"],
            )
        },
    ]);
}

#[test]
fn planning_is_deterministic() {
    let snap = snapshot(
        vec![
            task("a")
                .status(TaskStatus::Failed)
                .attempts(AttemptKey::Test, 3),
            task("b"),
            task("c").blocked(BlockReason::QuotaWait).next_at(at(-1)),
        ],
        vec![failed_run(
            "r1",
            "a",
            Some(FailureCode::TestFailure),
            "assert",
            at(-10),
        )],
        vec![],
    );
    let config = Config::default();
    let first = plan_with(&snap, &config);
    let second = plan_with(&snap, &config);
    assert_eq!(first.decisions, second.decisions);
}

#[test]
fn every_active_task_gets_a_decision() {
    let snap = snapshot(
        vec![
            task("q"),
            task("r").status(TaskStatus::Running),
            task("f").status(TaskStatus::Failed),
            task("b1").blocked(BlockReason::AwaitingHuman),
            task("b2").blocked(BlockReason::Paused),
            task("b3").blocked(BlockReason::AwaitingJudge),
            task("d").status(TaskStatus::Done),
        ],
        vec![run("rr", "r", RunStatus::Running, at(-1))],
        vec![lease("r", "rr", "local:box:1", at(60))],
    );
    let plan = plan_with(&snap, &Config::default());
    for id in ["q", "r", "f", "b1", "b2", "b3"] {
        assert!(
            plan.for_task(&TaskId::from(id)).next().is_some(),
            "no decision for {id}"
        );
    }
    assert!(plan.for_task(&TaskId::from("d")).next().is_none());
}

#[test]
fn github_tasks_follow_their_pull_request() {
    use super::PullState;
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
    observed: Option<super::gate::CiObservation>,
    leases: Vec<crate::model::Lease>,
) -> super::Snapshot {
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
        .insert(7, super::PullState::Open);
    if let Some(o) = observed {
        snap.observations.pull_checks.insert(7, o);
    }
    snap
}

#[test]
fn github_ci_on_the_pushed_head_decides_first() {
    use super::gate::CiObservation;
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
    use super::gate::{ExpectedChecks, ExpectedSource};
    use super::stall::{CiHeal, CiSetup, Dispatch};
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

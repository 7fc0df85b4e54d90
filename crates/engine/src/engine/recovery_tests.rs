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

#[path = "recovery_blocked_tests.rs"]
mod blocked;
#[path = "recovery_github_tests.rs"]
mod github;

/// Issue 49: a runner that dies holding several runs was running one agent at most; its death
/// counts one lost run, against the task it has cost least so far, not one against each.
#[test]
fn a_runners_death_counts_one_lost_run() {
    let running = |id: &str| task(id).status(TaskStatus::Running);
    let held = |tasks: Vec<crate::model::Task>, holder: &str| {
        let ids: Vec<String> = tasks.iter().map(|t| t.id.to_string()).collect();
        snapshot(
            tasks,
            ids.iter()
                .map(|t| run(&format!("r{t}"), t, RunStatus::Running, at(-100)))
                .collect(),
            ids.iter()
                .map(|t| lease(t, &format!("r{t}"), holder, at(-1)))
                .collect(),
        )
    };
    let mut two_holders = held(vec![running("a")], "local:box:1");
    let other = held(vec![running("b")], "local:box:2");
    two_holders.tasks.extend(other.tasks);
    two_holders.runs.extend(other.runs);
    two_holders.leases.extend(other.leases);
    check(vec![
        Case {
            reason_has: &[
                "(it held 3 runs: their loss counts once, against this task)",
                "lost run 1/3",
            ],
            ..case(
                "three runs lost with one runner: one counted, the others queued again free",
                held(vec![running("a"), running("b"), running("c")], "gha:9:1:tick"),
                &[
                    "recovery.lease_reclaimed a release ra",
                    "recovery.run_lost a cancel ra",
                    "recovery.requeue_lost a -> queued",
                    "recovery.lease_reclaimed b release rb",
                    "recovery.run_lost b cancel rb",
                    "recovery.requeue_lost_with_runner b -> queued",
                    "recovery.lease_reclaimed c release rc",
                    "recovery.run_lost c cancel rc",
                    "recovery.requeue_lost_with_runner c -> queued",
                    "dispatch.claim a claim",
                ],
            )
        },
        Case {
            reason_has: &["their loss counts once, against b", "no lost run counted"],
            ..case(
                "the loss counts against the task it has cost least so far",
                held(
                    vec![
                        running("a").attempts(AttemptKey::Lease, 2),
                        running("b"),
                        running("c").attempts(AttemptKey::Lease, 1),
                    ],
                    "gha:9:1:tick",
                ),
                &[
                    "recovery.lease_reclaimed a release ra",
                    "recovery.run_lost a cancel ra",
                    "recovery.requeue_lost_with_runner a -> queued",
                    "recovery.lease_reclaimed b release rb",
                    "recovery.run_lost b cancel rb",
                    "recovery.requeue_lost b -> queued",
                    "recovery.lease_reclaimed c release rc",
                    "recovery.run_lost c cancel rc",
                    "recovery.requeue_lost_with_runner c -> queued",
                    "dispatch.claim a claim",
                ],
            )
        },
        Case {
            reason_has: &["expired", "lost run 1/3"],
            ..case(
                "two runners each lost one run: each counts",
                two_holders,
                &[
                    "recovery.lease_reclaimed a release ra",
                    "recovery.run_lost a cancel ra",
                    "recovery.requeue_lost a -> queued",
                    "recovery.lease_reclaimed b release rb",
                    "recovery.run_lost b cancel rb",
                    "recovery.requeue_lost b -> queued",
                    "dispatch.claim a claim",
                ],
            )
        },
        Case {
            reason_has: &["lost 4 times (limit 3)", "opentiger task retry a"],
            ..case(
                "the bound holds: lost as often as the others and at its limit, it waits on a person",
                held(
                    vec![
                        running("a").attempts(AttemptKey::Lease, 3),
                        running("b").attempts(AttemptKey::Lease, 3),
                    ],
                    "gha:9:1:tick",
                ),
                &[
                    "recovery.lease_reclaimed a release ra",
                    "recovery.run_lost a cancel ra",
                    "recovery.lease_budget_exhausted a -> blocked(awaiting_human)",
                    "recovery.lease_reclaimed b release rb",
                    "recovery.run_lost b cancel rb",
                    "recovery.requeue_lost_with_runner b -> queued",
                    "dispatch.claim b claim",
                ],
            )
        },
    ]);
}

//! Table tests of recovery for blocked tasks: how a task leaves a quota wait, a rework or
//! AutoFix child, a failed review, issue linking or a broken dependency, and when it goes to a
//! person instead.

use super::*;

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

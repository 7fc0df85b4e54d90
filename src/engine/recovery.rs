//! The cycle manager's rules (spec §2.5, with the DESIGN §4 "Better" rules): reclaim what a killed
//! tick left behind, retry failures within per-category budgets, recover blocked tasks by reason,
//! and hand every exhausted bound to a person (`blocked(awaiting_human)`) instead of looping.

use super::classify::{classify, failure_signature, Classification};
use super::gate::{checks_gate, CheckGate};
use super::verdict::{decide_verdict, short_sha, Lineage};
use super::{Action, Preflight, Working};
use crate::model::{
    AttemptKey, BlockReason, FailureCategory, Lease, Mode, RunId, RunStatus, Task, TaskId,
    TaskKind, TaskState, TaskStatus,
};
use crate::time::{Timestamp, SECOND};

/// Runs every recovery rule once, in a fixed order.
pub(crate) fn recover(w: &mut Working<'_>) {
    reclaim_leases(w);
    cancel_orphaned_runs(w);
    for id in w.ids_with_status(TaskStatus::Failed) {
        recover_failed(w, &id);
    }
    for id in w.ids_with_status(TaskStatus::Blocked) {
        recover_blocked(w, &id);
    }
    for id in w.ids_in(TaskState::QUEUED) {
        if w.tasks[&id].kind == TaskKind::PrReview {
            review_person_pr_again(w, &id);
        } else {
            check_dependencies_exist(w, &id);
        }
    }
}

/// A person's PR review put back in the queue (`task retry`): no worker runs it, the judge
/// reviews its head again.
fn review_person_pr_again(w: &mut Working<'_>, id: &TaskId) {
    let run = w
        .task_runs(id)
        .iter()
        .find(|r| r.status == RunStatus::Success)
        .map(|r| r.id.clone());
    let Some(run_id) = run else {
        w.transition(
            id,
            TaskState::CANCELLED,
            None,
            Some(None),
            "recovery.pr_review_without_head",
            "a PR review without the head it reviews: the next push is imported again".to_string(),
        );
        return;
    };
    w.decide(
        Some(id),
        "recovery.pr_review_again",
        Action::ResetJudgeClaim {
            run_id: run_id.clone(),
        },
        format!("review run {run_id} again"),
    );
    w.transition(
        id,
        TaskState::blocked(BlockReason::AwaitingJudge),
        None,
        Some(None),
        "recovery.pr_review_again",
        "queued again by a person: the judge reviews the PR's head again".to_string(),
    );
}

/// Leases that expired, whose holder ended, or that point at a task no longer running.
fn reclaim_leases(w: &mut Working<'_>) {
    let leases: Vec<&Lease> = w.leases.values().copied().collect();
    for lease in leases {
        let task_state = w.tasks.get(&lease.task_id).map(Task::state);
        match task_state {
            Some(state) if state == TaskState::RUNNING => {}
            Some(state) if state == TaskState::blocked(BlockReason::AwaitingJudge) => {
                judge_lease(w, lease);
                continue;
            }
            Some(state) => {
                w.decide(
                    Some(&lease.task_id),
                    "recovery.dangling_lease",
                    Action::ReleaseLease {
                        run_id: lease.run_id.clone(),
                    },
                    format!(
                        "lease held by {} on a task that is {state}: released",
                        lease.agent_id
                    ),
                );
                continue;
            }
            None => {
                w.decide(
                    None,
                    "recovery.dangling_lease",
                    Action::ReleaseLease {
                        run_id: lease.run_id.clone(),
                    },
                    format!("lease on unknown task {}: released", lease.task_id),
                );
                continue;
            }
        }
        let why = if w
            .snapshot
            .observations
            .dead_agents
            .contains(&lease.agent_id)
        {
            format!("holder {} has ended", lease.agent_id)
        } else if lease.expires_at <= w.now {
            format!(
                "lease of {} expired at {}",
                lease.agent_id, lease.expires_at
            )
        } else {
            w.wait(
                &lease.task_id,
                Some(lease.expires_at),
                "recovery.lease_held",
                format!(
                    "running: held by {} until {}",
                    lease.agent_id, lease.expires_at
                ),
            );
            continue;
        };
        w.decide(
            Some(&lease.task_id),
            "recovery.lease_reclaimed",
            Action::ReleaseLease {
                run_id: lease.run_id.clone(),
            },
            why.clone(),
        );
        requeue_lost_task(w, &lease.task_id, &why);
    }
    // Running tasks that have no lease at all (the spec's orphaned running tasks).
    for id in w.ids_in(TaskState::RUNNING) {
        if !w.leases.contains_key(&id) {
            requeue_lost_task(w, &id, "running without a lease");
        }
    }
}

/// A judge's lease on the task it reviews: kept while valid; when it expired or its holder ended,
/// the review was never concluded, so the run becomes reviewable again.
fn judge_lease(w: &mut Working<'_>, lease: &Lease) {
    let dead = w
        .snapshot
        .observations
        .dead_agents
        .contains(&lease.agent_id);
    if !dead && lease.expires_at > w.now {
        w.wait(
            &lease.task_id,
            Some(lease.expires_at),
            "recovery.judge_lease_held",
            format!(
                "being judged by {} (run {}) until {}",
                lease.agent_id, lease.run_id, lease.expires_at
            ),
        );
        return;
    }
    let why = if dead {
        format!("judge {} has ended", lease.agent_id)
    } else {
        format!(
            "judge lease of {} expired at {}",
            lease.agent_id, lease.expires_at
        )
    };
    w.decide(
        Some(&lease.task_id),
        "recovery.judge_lease_reclaimed",
        Action::ReleaseLease {
            run_id: lease.run_id.clone(),
        },
        why.clone(),
    );
    w.decide(
        Some(&lease.task_id),
        "recovery.judge_claim_reset",
        Action::ResetJudgeClaim {
            run_id: lease.run_id.clone(),
        },
        format!("{why}: run {} will be reviewed again", lease.run_id),
    );
    w.released_judge_leases.push(lease.task_id.clone());
}

/// A task whose run was lost goes back to the queue, at most `max_lease_reclaims` times.
fn requeue_lost_task(w: &mut Working<'_>, id: &TaskId, why: &str) {
    for run in w.task_runs(id).to_vec() {
        if run.status == RunStatus::Running {
            w.decide(
                Some(id),
                "recovery.run_lost",
                Action::CancelRun {
                    run_id: run.id.clone(),
                },
                format!("run {} cancelled: {why}", run.id),
            );
        }
    }
    let task = &w.tasks[id];
    let used = task.attempts.get(AttemptKey::Lease);
    let limit = w.config.retry.max_lease_reclaims;
    let attempts = task.attempts.bumped(AttemptKey::Lease);
    if used >= limit {
        w.transition(
            id,
            TaskState::blocked(BlockReason::AwaitingHuman),
            Some(attempts),
            None,
            "recovery.lease_budget_exhausted",
            format!(
                "{why}; runs were lost {} times (limit {limit}): the agent may hang or outlive the job. Decide: `opentiger task retry {id}` or `opentiger task cancel {id}`",
                used + 1
            ),
        );
    } else {
        w.transition(
            id,
            TaskState::QUEUED,
            Some(attempts),
            Some(None),
            "recovery.requeue_lost",
            format!("{why}: requeued (lost run {}/{limit})", used + 1),
        );
    }
}

/// Runs still marked running whose task is not running under that run's lease.
fn cancel_orphaned_runs(w: &mut Working<'_>) {
    let already: Vec<_> = w
        .decisions
        .iter()
        .filter_map(|d| match &d.action {
            Action::CancelRun { run_id } => Some(run_id.clone()),
            _ => None,
        })
        .collect();
    let orphans: Vec<_> = w
        .snapshot
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::Running && !already.contains(&r.id))
        .filter(|r| {
            let leased = w.leases.get(&r.task_id).is_some_and(|l| l.run_id == r.id);
            let running = w
                .tasks
                .get(&r.task_id)
                .is_some_and(|t| t.status == TaskStatus::Running);
            !(leased && running)
        })
        .map(|r| (r.task_id.clone(), r.id.clone()))
        .collect();
    for (task_id, run_id) in orphans {
        w.decide(
            Some(&task_id),
            "recovery.orphaned_run",
            Action::CancelRun {
                run_id: run_id.clone(),
            },
            format!("run {run_id} is marked running but holds no lease: cancelled"),
        );
    }
}

/// spec §2.5 step 5, with per-category budgets and `next_attempt_at` instead of `updated_at`
/// arithmetic.
fn recover_failed(w: &mut Working<'_>, id: &TaskId) {
    let run = w.last_failed_run(id);
    let message = run.and_then(|r| r.error.clone()).unwrap_or_default();
    let code = run.and_then(|r| r.failure_code);
    let class = classify(&message, code);
    let task = &w.tasks[id];
    let key = AttemptKey::from(class.category);
    let used = task.attempts.get(key);
    let budget = w.config.category_budget(class.category);
    let threshold = w.config.retry.repeated_signature_threshold.max(2) as usize;
    let repeated = repeated_failure(w, id, threshold);
    if class.retryable && used < budget && !repeated {
        let next = w
            .now
            .plus(i64::from(w.config.retry.cooldown_seconds) * SECOND);
        let attempts = task.attempts.bumped(key);
        w.transition(
            id,
            TaskState::QUEUED,
            Some(attempts),
            Some(Some(next)),
            "recovery.retry_failed",
            format!(
                "{} failure ({}): retry {}/{budget} after {}",
                class.category,
                class.reason,
                used + 1,
                next.clock()
            ),
        );
        return;
    }
    let why = if !class.retryable {
        format!("{} is not retried", class.reason)
    } else if repeated {
        format!(
            "the same failure {threshold} times in a row ({})",
            class.reason
        )
    } else {
        format!(
            "{} retry budget used ({used}/{budget}): {}",
            class.category, class.reason
        )
    };
    escalate(w, id, &why, &class);
}

fn repeated_failure(w: &Working<'_>, id: &TaskId, threshold: usize) -> bool {
    let failed: Vec<String> = w
        .task_runs(id)
        .iter()
        .filter(|r| matches!(r.status, RunStatus::Failed | RunStatus::Cancelled))
        .take(threshold)
        .map(|r| failure_signature(r.error.as_deref().unwrap_or(""), r.failure_code))
        .collect();
    failed.len() >= threshold && failed.iter().all(|s| s == &failed[0])
}

/// Out of retries: a rework child with the failure in its notes, or a person.
fn escalate(w: &mut Working<'_>, id: &TaskId, why: &str, class: &Classification) {
    let task = w.tasks[id].clone();
    let max_depth = w.config.limits.max_rework_depth;
    let needs_person = match class.category {
        // A permission prompt or a broken environment is not fixed by another agent run.
        FailureCategory::Permission | FailureCategory::Env => true,
        FailureCategory::Setup
        | FailureCategory::Noop
        | FailureCategory::Policy
        | FailureCategory::Test
        | FailureCategory::Flaky
        | FailureCategory::Model
        | FailureCategory::ModelLoop => false,
    };
    if needs_person || task.rework_depth >= max_depth || task.kind == TaskKind::PrReview {
        let depth_note = if task.rework_depth >= max_depth {
            format!("; rework depth {}/{max_depth} reached", task.rework_depth)
        } else {
            String::new()
        };
        w.transition(
            id,
            TaskState::blocked(BlockReason::AwaitingHuman),
            None,
            None,
            "recovery.escalate_to_human",
            format!(
                "{why}{depth_note}. Decide: `opentiger task retry {id}` (after fixing the cause) or `opentiger task cancel {id}`"
            ),
        );
        return;
    }
    let child = rework_child(&task, why, w.now);
    let child_id = child.id.clone();
    if !w.tasks.contains_key(&child_id) {
        w.decide(
            Some(&child_id),
            "recovery.rework_child",
            Action::CreateTask {
                task: Box::new(child),
            },
            format!(
                "rework of {id} (depth {}/{max_depth}): {why}",
                task.rework_depth + 1
            ),
        );
    }
    w.transition(
        id,
        TaskState::blocked(BlockReason::NeedsRework),
        None,
        None,
        "recovery.follow_rework",
        format!("follows rework task {child_id}: {why}"),
    );
}

/// The rework child of spec §2.5 ("split"), tied to its parent by a column, not a title marker.
fn rework_child(parent: &Task, why: &str, now: Timestamp) -> Task {
    let depth = parent.rework_depth + 1;
    let id = TaskId(crate::model::short_hash(&[
        "rework",
        parent.id.as_str(),
        &depth.to_string(),
    ]));
    let mut child = parent.clone();
    child.id = id;
    child.kind = TaskKind::Rework;
    child.title = if parent.kind == TaskKind::Rework {
        parent.title.clone()
    } else {
        format!("Rework: {}", parent.title)
    };
    child.status = TaskStatus::Queued;
    child.block_reason = None;
    child.status_reason = Some(format!("created to rework {}", parent.id));
    child.parent_task_id = Some(parent.id.clone());
    child.rework_depth = depth;
    child.attempts = Default::default();
    child.next_attempt_at = None;
    child.priority = parent.priority + 5;
    child.timebox_minutes = ((f64::from(parent.timebox_minutes) * 0.8) as u32).max(30);
    let mut notes = parent.notes.trim_end().to_string();
    if !notes.is_empty() {
        notes.push_str("\n\n");
    }
    notes.push_str(&format!(
        "Earlier attempts at this task failed ({why}). Fix the cause of that failure first."
    ));
    child.notes = notes;
    child.created_at = now;
    child.updated_at = now;
    child
}

fn recover_blocked(w: &mut Working<'_>, id: &TaskId) {
    let task = &w.tasks[id];
    let reason = task.block_reason.unwrap_or(BlockReason::AwaitingHuman);
    match reason {
        BlockReason::QuotaWait => recover_quota_wait(w, id),
        BlockReason::NeedsRework => follow_child(w, id),
        BlockReason::AwaitingJudge => recover_awaiting_judge(w, id),
        BlockReason::IssueLinking => {
            if w.config.mode != Mode::Github || task.issue_number.is_some() {
                w.transition(
                    id,
                    TaskState::QUEUED,
                    None,
                    None,
                    "recovery.issue_linked",
                    match task.issue_number {
                        Some(n) => format!("issue #{n} linked: queued"),
                        None => "no issues in this mode: queued".to_string(),
                    },
                );
            } else {
                // spec §2.1 step 10: the planned task is mirrored as an issue, so the plan is
                // visible and editable on GitHub; it runs once the issue is linked.
                w.decide(
                    Some(id),
                    "forge.open_issue",
                    Action::OpenIssue,
                    "planned task: open its GitHub issue, then queue it".to_string(),
                );
            }
        }
        BlockReason::AwaitingHuman => {
            let text = human_wait(task);
            w.wait(id, None, "recovery.awaiting_human", text);
        }
        BlockReason::Paused => {
            let text = human_wait(task);
            w.wait(id, None, "recovery.paused", text);
        }
    }
}

/// What a task parked on a person waits for, and how to move it on.
fn human_wait(task: &Task) -> String {
    let why = task
        .status_reason
        .as_deref()
        .unwrap_or("no reason recorded");
    match task.block_reason {
        Some(BlockReason::Paused) => {
            format!("paused: {why}. Resume: `opentiger task retry {}`", task.id)
        }
        _ => format!("waits on a person: {why}"),
    }
}

/// spec §2.5 step 6 for `quota_wait`: requeue once the backoff has passed; bounded by
/// `retry.quota.max_waits` (the spec waits forever).
fn recover_quota_wait(w: &mut Working<'_>, id: &TaskId) {
    let task = &w.tasks[id];
    let waits = task.attempts.get(AttemptKey::Quota);
    let max = w.config.retry.quota.max_waits;
    if waits > max {
        w.transition(
            id,
            TaskState::blocked(BlockReason::AwaitingHuman),
            None,
            None,
            "recovery.quota_budget_exhausted",
            format!(
                "quota hit {waits} times (limit {max}): check the agent's plan or key, then `opentiger task retry {id}`"
            ),
        );
        return;
    }
    match task.next_attempt_at {
        Some(at) if at > w.now => w.wait(
            id,
            Some(at),
            "recovery.quota_wait",
            format!("quota_wait: retry after {at} (wait {waits}/{max})"),
        ),
        _ => w.transition(
            id,
            TaskState::QUEUED,
            None,
            Some(None),
            "recovery.quota_wait_retry",
            format!("quota backoff over (wait {waits}/{max}): queued"),
        ),
    }
}

/// DESIGN §4: the source of a rework/AutoFix child stays blocked until the child ends, then
/// follows it.
fn follow_child(w: &mut Working<'_>, id: &TaskId) {
    if let Some(newer) = newer_recreation(w, id) {
        close_superseded_pull(w, id, &newer);
        w.transition(
            id,
            TaskState::CANCELLED,
            None,
            Some(None),
            "recovery.recreation_superseded",
            format!("superseded: the goal is recreated again as {newer}"),
        );
        return;
    }
    let child = w
        .tasks
        .values()
        .filter(|t| t.parent_task_id.as_ref() == Some(id))
        .max_by(|a, b| {
            a.created_at
                .cmp(&b.created_at)
                .then(a.rework_depth.cmp(&b.rework_depth))
        })
        .cloned();
    let Some(child) = child else {
        let class = Classification {
            category: FailureCategory::Model,
            retryable: true,
            reason: "needs_rework",
        };
        escalate(w, id, "needs rework but no rework task exists", &class);
        return;
    };
    match child.state() {
        s if s == TaskState::DONE => w.transition(
            id,
            TaskState::DONE,
            None,
            Some(None),
            "recovery.child_done",
            format!("done through {} ({})", child.id, child.kind),
        ),
        s if s == TaskState::CANCELLED => w.transition(
            id,
            TaskState::blocked(BlockReason::AwaitingHuman),
            None,
            None,
            "recovery.child_cancelled",
            format!(
                "its fix {} was cancelled. Decide: `opentiger task retry {id}` or `opentiger task cancel {id}`",
                child.id
            ),
        ),
        state => {
            if child.kind == TaskKind::Recreate {
                close_superseded_pull(w, id, &child.id);
            }
            w.wait(
                id,
                None,
                "recovery.follow_child",
                format!("follows {} {} ({state})", child.kind, child.id),
            )
        }
    }
}

/// A recreation whose goal has been recreated again since (its own conflicts ran out): the
/// newer recreation, which this one gives way to.
fn newer_recreation(w: &Working<'_>, id: &TaskId) -> Option<TaskId> {
    let task = &w.tasks[id];
    let origin = task.parent_task_id.as_ref()?;
    if task.kind != TaskKind::Recreate {
        return None;
    }
    w.tasks
        .values()
        .filter(|t| t.kind == TaskKind::Recreate && t.parent_task_id.as_ref() == Some(origin))
        .filter(|t| t.created_at > task.created_at)
        .map(|t| t.id.clone())
        .next()
}

/// github mode: the open PR of a change whose goal is recreated elsewhere is closed, with a
/// comment saying by what (spec §2.4: the old PR is closed when the goal is recreated).
fn close_superseded_pull(w: &mut Working<'_>, id: &TaskId, by: &TaskId) {
    let Some(pr) = w.tasks[id].source_pr else {
        return;
    };
    let open = w.snapshot.observations.pull_requests.get(&pr) == Some(&super::PullState::Open);
    if w.config.mode == Mode::Github && open {
        w.decide(
            Some(id),
            "judge.close_superseded_pr",
            Action::ClosePull {
                pr,
                superseded_by: by.clone(),
            },
            format!("PR #{pr} is abandoned: its goal is recreated from the base as {by}"),
        );
    }
}

/// `awaiting_judge` without a reviewable run (its run was lost or never recorded): retried a
/// bounded number of times, then a person decides.
fn recover_awaiting_judge(w: &mut Working<'_>, id: &TaskId) {
    if w.config.mode == Mode::Github {
        follow_pull_request(w, id);
        return;
    }
    let reviewable = w
        .task_runs(id)
        .iter()
        .any(|r| r.status == RunStatus::Success && r.judged_at.is_none());
    let being_judged = w.leases.contains_key(id);
    if reviewable || being_judged {
        return; // judge_work, or the judge holding the lease, takes care of it.
    }
    let task = &w.tasks[id];
    let due = task
        .updated_at
        .plus(i64::from(w.config.retry.cooldown_seconds) * SECOND);
    if due > w.now {
        w.wait(
            id,
            Some(due),
            "recovery.awaiting_judge",
            format!(
                "awaiting_judge without a reviewable run: requeued after {due} unless one appears"
            ),
        );
        return;
    }
    let used = task.attempts.get(AttemptKey::Judge);
    let limit = w.config.retry.max_judge_retries;
    if used >= limit {
        w.transition(
            id,
            TaskState::blocked(BlockReason::AwaitingHuman),
            None,
            None,
            "recovery.judge_budget_exhausted",
            format!("no reviewable run after {used} judge retries (limit {limit}). Decide: `opentiger task retry {id}` or `opentiger task cancel {id}`"),
        );
    } else {
        let attempts = task.attempts.bumped(AttemptKey::Judge);
        w.transition(
            id,
            TaskState::QUEUED,
            Some(attempts),
            Some(None),
            "recovery.awaiting_judge_retry",
            format!(
                "no reviewable run: run it again (judge retry {}/{limit})",
                used + 1
            ),
        );
    }
}

/// github mode: a task whose change is in a pull request follows the PR (spec §6: merged PRs
/// close their issue; DESIGN §8). Merged → done; closed unmerged → cancelled with the reason;
/// open → waits for its review and merge.
fn follow_pull_request(w: &mut Working<'_>, id: &TaskId) {
    let Some(pr) = w.tasks[id].source_pr else {
        w.wait(
            id,
            None,
            "recovery.awaiting_pr",
            "waits for its pull request to be opened".to_string(),
        );
        return;
    };
    match w.snapshot.observations.pull_requests.get(&pr).copied() {
        Some(super::PullState::Merged) => w.transition(id, TaskState::DONE, None, Some(None), "recovery.pr_merged", format!("PR #{pr} was merged")),
        Some(super::PullState::Closed) => w.transition(
            id,
            TaskState::CANCELLED,
            None,
            Some(None),
            "recovery.pr_closed",
            format!("PR #{pr} was closed without being merged; reopen it or `opentiger task retry {id}`"),
        ),
        Some(super::PullState::Open) => gate_open_pull_request(w, id, pr),
        None => w.wait(id, None, "recovery.awaiting_pr", format!("PR #{pr} is open: waits for review and merge")),
    }
}

/// github mode, an open PR: CI on the head the task's run pushed decides first (DESIGN §8).
/// Red CI requests changes through a bounded AutoFix child on the same branch and PR; CI pending
/// past `merge.checks_timeout_minutes` waits on a person; otherwise the PR waits for its merge.
fn gate_open_pull_request(w: &mut Working<'_>, id: &TaskId, pr: u64) {
    let run = w
        .task_runs(id)
        .iter()
        .copied()
        .find(|r| r.status == RunStatus::Success && r.pr_number == Some(pr));
    let Some(run) = run else {
        w.wait(
            id,
            None,
            "recovery.awaiting_pr",
            format!("PR #{pr} is open: waits for review and merge"),
        );
        return;
    };
    let observed = w.snapshot.observations.pull_checks.get(&pr);
    match checks_gate(run, observed, &w.config.merge, w.now) {
        CheckGate::Proceed { note } => {
            if !review_if_due(w, id) {
                w.wait(
                    id,
                    None,
                    "judge.checks_passed",
                    format!("PR #{pr}: {note}; waits for review and merge"),
                );
            }
        }
        CheckGate::Stale { observed } => w.wait(
            id,
            None,
            "judge.head_moved",
            format!(
                "PR #{pr} head moved to {} after run {}: waits for review and merge",
                short_sha(&observed),
                run.id
            ),
        ),
        CheckGate::Wait { pending, deadline } => w.wait(
            id,
            Some(deadline),
            "judge.checks_pending",
            format!(
                "PR #{pr}: CI pending ({}); a person decides if still pending at {deadline}",
                if pending.is_empty() {
                    "not read yet".to_string()
                } else {
                    pending.join(", ")
                }
            ),
        ),
        CheckGate::TimedOut { reason } => w.transition(
            id,
            TaskState::blocked(BlockReason::AwaitingHuman),
            None,
            Some(None),
            "judge.checks_timeout",
            format!("PR #{pr}: {reason}"),
        ),
        CheckGate::Failed(conclusion) => {
            let task = w.tasks[id].clone();
            // The snapshot holds a blocked task's children and its source's: all a lineage needs.
            let lineage = Lineage::of(
                &task,
                |t| w.tasks.get(t).cloned(),
                |parent, kind| {
                    let n = w
                        .tasks
                        .values()
                        .filter(|t| t.parent_task_id.as_ref() == Some(parent) && t.kind == kind)
                        .count();
                    u32::try_from(n).unwrap_or(u32::MAX)
                },
            );
            let decision = decide_verdict(&task, &conclusion, &lineage, w.config, w.now);
            if let Some(child) = decision.create {
                let reason = format!("AutoFix for {id} on PR #{pr}");
                w.decide(
                    Some(&child.id.clone()),
                    "judge.autofix_child",
                    Action::CreateTask {
                        task: Box::new(child),
                    },
                    reason,
                );
            }
            w.transition(
                id,
                decision.to,
                decision.attempts,
                Some(None),
                "judge.checks_failed",
                format!("PR #{pr}: {}", decision.reason),
            );
        }
    }
}

/// A queued task whose dependency is cancelled or unknown can never start: a person decides.
fn check_dependencies_exist(w: &mut Working<'_>, id: &TaskId) {
    let task = &w.tasks[id];
    let broken = task
        .dependencies
        .iter()
        .find_map(|dep| match w.tasks.get(dep) {
            None => Some(format!("depends on {dep}, which does not exist")),
            Some(d) if d.status == TaskStatus::Cancelled => {
                Some(format!("depends on {dep}, which was cancelled"))
            }
            Some(_) => None,
        });
    if let Some(why) = broken {
        w.transition(
            id,
            TaskState::blocked(BlockReason::AwaitingHuman),
            None,
            None,
            "recovery.broken_dependency",
            format!("{why}. Decide: `opentiger task cancel {id}`, or retry the dependency"),
        );
    }
}

/// Emits the judge's work: one review per task with an unjudged successful run (spec §2.4 step 3:
/// newest run per task). In direct mode there is no judge: such tasks are done (spec §2.4).
pub(crate) fn judge_work(w: &mut Working<'_>) {
    if w.config.mode == Mode::Github {
        return; // A PR is reviewed once CI passed on its head: see `gate_open_pull_request`.
    }
    for id in w.ids_in(TaskState::blocked(BlockReason::AwaitingJudge)) {
        review_if_due(w, &id);
    }
}

/// Claims the review of the task's newest successful, unjudged run, or waits out the backoff of
/// a failed review. `false` when there is nothing to review (or it is being reviewed).
fn review_if_due(w: &mut Working<'_>, id: &TaskId) -> bool {
    let leased = w.leases.contains_key(id) && !w.released_judge_leases.contains(id);
    if leased {
        return false;
    }
    let reset: Vec<RunId> = w
        .decisions
        .iter()
        .filter(|d| d.task_id.as_ref() == Some(id))
        .filter_map(|d| match &d.action {
            Action::ResetJudgeClaim { run_id } => Some(run_id.clone()),
            _ => None,
        })
        .collect();
    let run = w
        .task_runs(id)
        .iter()
        .find(|r| {
            r.status == RunStatus::Success && (r.judged_at.is_none() || reset.contains(&r.id))
        })
        .map(|r| r.id.clone());
    let Some(run_id) = run else { return false };
    if let Some(at) = w.tasks[id].next_attempt_at.filter(|at| *at > w.now) {
        w.wait(
            id,
            Some(at),
            "judge.backoff",
            format!("reviewed again after {at} (the last review failed)"),
        );
        return true;
    }
    if w.config.mode == Mode::Direct {
        w.transition(
            id,
            TaskState::DONE,
            None,
            None,
            "judge.direct_mode",
            format!("direct mode has no review: run {run_id} accepted"),
        );
    } else {
        let expires_at = w
            .now
            .plus(i64::from(w.config.limits.lease_minutes) * crate::time::MINUTE);
        w.decide(
            Some(id),
            "judge.review",
            Action::Judge {
                run_id: run_id.clone(),
                expires_at,
            },
            format!("run {run_id} succeeded and is not judged yet"),
        );
    }
    true
}

/// What a task without any other decision waits for.
pub(crate) fn waiting_reason(
    w: &Working<'_>,
    task: &Task,
    gates: &Preflight,
) -> (Option<Timestamp>, String) {
    let _ = w;
    let state = task.state();
    let why = task.status_reason.clone().unwrap_or_default();
    match task.status {
        TaskStatus::Queued => (
            task.next_attempt_at,
            format!(
                "queued: not dispatched this tick ({}: {})",
                gates.class, gates.summary
            ),
        ),
        TaskStatus::Failed => (None, format!("failed: recovery runs next tick ({why})")),
        TaskStatus::Running => (None, "running".to_string()),
        TaskStatus::Blocked => match task.block_reason {
            Some(BlockReason::AwaitingHuman | BlockReason::Paused) => (None, human_wait(task)),
            _ => (task.next_attempt_at, format!("{state}: {why}")),
        },
        TaskStatus::Done | TaskStatus::Cancelled => (None, state.to_string()),
    }
}

//! The cycle manager's rules (spec §2.5, with the DESIGN §4 "Better" rules): reclaim what a killed
//! tick left behind, retry failures within per-category budgets, recover blocked tasks by reason,
//! and hand every exhausted bound to a person (`blocked(awaiting_human)`) instead of looping.
//! Not for: what a finished run or a verdict does to its task (`engine::outcome`,
//! `engine::verdict`: recovery takes the `failed` and blocked tasks they leave), or what kind of
//! failure it was (`engine::classify`).

mod leases;
mod repeat;
mod review;
mod rework_notes;
mod stalls;

use super::classify::{classify, failure_signature, Classification};
use super::{Action, Preflight, Working};
use crate::model::{
    AttemptKey, BlockReason, FailureCategory, Mode, RunStatus, Task, TaskId, TaskKind, TaskState,
    TaskStatus,
};
use crate::time::{Timestamp, SECOND};
use leases::{cancel_orphaned_runs, reclaim_leases};
pub(crate) use review::judge_work;
use review::{
    close_superseded_pull, newer_recreation, recover_awaiting_judge, review_person_pr_again,
};

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

/// spec §2.5 step 5, with per-category budgets and `next_attempt_at` instead of `updated_at`
/// arithmetic.
fn recover_failed(w: &mut Working<'_>, id: &TaskId) {
    let run = w.last_failed_run(id);
    let message = run.and_then(|r| r.error.clone()).unwrap_or_default();
    let code = run.and_then(|r| r.failure_code);
    let class = classify(&message, code);
    // Issue 27: a policy violation, or the family's last failure again, is not retried as is.
    if let Some(why) = repeat::not_again(w, id, &class, run) {
        stop_repeat(w, id, &why, &class, run);
        return;
    }
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

/// Issue 27: a failure not to retry as it is. The family's first such failure gets one rework
/// naming it (when reworks are allowed at all); a family that already had its rework goes to a
/// person with the failure and the fix.
fn stop_repeat(
    w: &mut Working<'_>,
    id: &TaskId,
    why: &str,
    class: &Classification,
    run: Option<&crate::model::Run>,
) {
    let task = &w.tasks[id];
    let fix = repeat::fix_for(&run.map(repeat::violation).unwrap_or_default());
    let first = task.rework_depth == 0 && task.kind != TaskKind::Rework;
    let max_depth = w.config.limits.max_rework_depth;
    if first && max_depth > 0 {
        escalate(w, id, &format!("{why}. Fix: {fix}"), class);
        return;
    }
    let stop = if first {
        format!("reworks are off (limits.max_rework_depth = {max_depth})")
    } else {
        "this family already had its rework, so it stops here".to_string()
    };
    w.transition(
        id,
        TaskState::blocked(BlockReason::AwaitingHuman),
        None,
        None,
        "recovery.repeated_failure",
        format!("{why}; {stop}. Fix: {fix}. Then {}", person_moves(w, id)),
    );
}

/// The commands a person runs for a task handed to them, naming the task they know: a rework
/// or AutoFix child's family root, whose retry reaches the child and whose cancel takes it
/// along (issue 40).
fn person_moves(w: &Working<'_>, id: &TaskId) -> String {
    let root = super::fairness::family_of(&w.tasks, id);
    if &root == id {
        return format!("`opentiger task retry {id}`, or `opentiger task cancel {id}`");
    }
    let kind = w
        .tasks
        .get(id)
        .map_or("fix".to_string(), |t| t.kind.to_string());
    format!(
        "`opentiger task retry {root}` (it retries this {kind}, {id}), or `opentiger task cancel {root}`"
    )
}

/// Out of retries: a rework child with the failure in its notes, or a person.
fn escalate(w: &mut Working<'_>, id: &TaskId, why: &str, class: &Classification) {
    let task = w.tasks[id].clone();
    let max_depth = w.config.limits.max_rework_depth;
    let needs_person = match class.category {
        // A permission prompt or a broken environment is not fixed by another agent run.
        FailureCategory::Permission | FailureCategory::Env | FailureCategory::AgentConfig => true,
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
                "{why}{depth_note}. Decide: fix the cause, then {}",
                person_moves(w, id)
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
    child.notes = rework_notes::rework_notes(&parent.notes, why);
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
        // Issue 40: what to do, not the reason again (`status` shows that as `why:`).
        _ => format!("waits on a person: {}", super::advice::to_do(task)),
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
    // The newest child; of children made at the same instant (two rounds of one tick on a
    // fixed clock), the one that superseded the other (issue 38): a cancelled child never
    // stands for one made with it.
    let child = super::waits::followed_child(w.tasks.values(), id).cloned();
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
            // Issue 49: the child as it is now; what this plan does to it is the next tick's.
            let now = w
                .snapshot
                .tasks
                .iter()
                .find(|t| t.id == child.id)
                .map_or(state, Task::state);
            if now != state {
                let why = format!(
                    "follows {} {} ({now} now; the next tick moves it to {state})",
                    child.kind, child.id
                );
                return w.wait(id, None, "recovery.follow_child", why);
            }
            // Issue 40: a child waiting on a person is this task's business too; the person
            // acts on the task they know, which reaches the child.
            let why = if matches!(
                state.reason,
                Some(BlockReason::AwaitingHuman | BlockReason::Paused)
            ) {
                format!(
                    "its {} {} waits on a person ({state}): `opentiger task retry {id}` retries it once the cause is dealt with, `opentiger task cancel {id}` cancels both",
                    child.kind, child.id
                )
            } else {
                format!("follows {} {} ({state})", child.kind, child.id)
            };
            w.wait(id, None, "recovery.follow_child", why)
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

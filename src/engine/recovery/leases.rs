//! Leases a killed or stalled tick left behind (spec §2.5 "lease recovery"): reclaimed at once
//! when the holder's process is gone on this host, else at expiry; the task goes back to the
//! queue (at most `retry.max_lease_reclaims` times, then a person), or its review back to
//! `awaiting_judge`, and runs nobody holds are cancelled. Not for: telling whether a holder is
//! gone (the shell's `dead_agents`, `tick::context`) or killing what it left running
//! (`sandbox::groups`).

use super::super::{Action, Working};
use crate::model::{
    AttemptKey, BlockReason, Lease, RunStatus, Task, TaskId, TaskState, TaskStatus,
};

/// Leases that expired, whose holder ended, or that point at a task no longer running.
pub(super) fn reclaim_leases(w: &mut Working<'_>) {
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
pub(super) fn judge_lease(w: &mut Working<'_>, lease: &Lease) {
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
pub(super) fn requeue_lost_task(w: &mut Working<'_>, id: &TaskId, why: &str) {
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
pub(super) fn cancel_orphaned_runs(w: &mut Working<'_>) {
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

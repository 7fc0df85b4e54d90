//! Leases a killed or stalled tick left behind (spec §2.5 "lease recovery"): reclaimed at once
//! when the holder's process is gone on this host, else at expiry; the task goes back to the
//! queue (at most `retry.max_lease_reclaims` lost runs, then a person), or its review back to
//! `awaiting_judge`, and runs nobody holds are cancelled.
//!
//! **A runner's death is one lost run** (issue 49). A tick runs its claimed runs one after
//! another, so when it dies holding several, one agent at most was running: the others had
//! finished (their record cut) or had not started. Counting a lost run against every task it
//! held turned one killed job into "the agent may hang" for all of them at once. So the leases
//! one holder lost are counted once, against the task the loss has cost least so far (ties:
//! the lowest task id), and the others go back to the queue with nothing counted. The bound on
//! an agent that really hangs holds: every death while its task is held counts against one of
//! at most `limits.max_runs_per_tick` tasks, the least counted first, so its task reaches a
//! person after at most that many times `max_lease_reclaims + 1` deaths — exactly that many
//! when it runs alone, or when its tick died on this host and left its record of which run was
//! running (`tick::unsaved` records the rest before recovery looks).
//!
//! Not for: telling whether a holder is gone (the shell's `dead_agents`, `tick::context`) or
//! killing what it left running (`sandbox::groups`).

use std::collections::BTreeMap;

use super::super::{Action, Working};
use crate::model::{
    AgentId, AttemptKey, BlockReason, Lease, RunStatus, Task, TaskId, TaskState, TaskStatus,
};

/// Leases that expired, whose holder ended, or that point at a task no longer running.
pub(super) fn reclaim_leases(w: &mut Working<'_>) {
    let leases: Vec<&Lease> = w.leases.values().copied().collect();
    // Run leases lost with their holder: (lease, why), counted once per holder below.
    let mut lost: Vec<(&Lease, String)> = Vec::new();
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
        lost.push((lease, why));
    }
    let losses: Vec<Loss> = lost
        .iter()
        .map(|(lease, _)| Loss {
            task: lease.task_id.clone(),
            holder: lease.agent_id.clone(),
            counted: w
                .tasks
                .get(&lease.task_id)
                .map_or(0, |t| t.attempts.get(AttemptKey::Lease)),
        })
        .collect();
    let counted = counted_once(&losses);
    for (lease, why) in lost {
        w.decide(
            Some(&lease.task_id),
            "recovery.lease_reclaimed",
            Action::ReleaseLease {
                run_id: lease.run_id.clone(),
            },
            why.clone(),
        );
        let held = losses.iter().filter(|l| l.holder == lease.agent_id).count();
        match counted.get(&lease.agent_id) {
            Some(against) if held > 1 && *against != lease.task_id => {
                requeue_uncounted(w, &lease.task_id, &why, held, against);
            }
            _ if held > 1 => requeue_lost_task(
                w,
                &lease.task_id,
                &format!("{why} (it held {held} runs: their loss counts once, against this task)"),
            ),
            _ => requeue_lost_task(w, &lease.task_id, &why),
        }
    }
    // Running tasks that have no lease at all (the spec's orphaned running tasks).
    for id in w.ids_in(TaskState::RUNNING) {
        if !w.leases.contains_key(&id) {
            requeue_lost_task(w, &id, "running without a lease");
        }
    }
}

/// One run lease lost with its holder, and the lost runs its task counted before.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Loss {
    pub(crate) task: TaskId,
    pub(crate) holder: AgentId,
    pub(crate) counted: u32,
}

/// Against which task each holder's loss is counted: the one it has cost least so far, ties to
/// the lowest task id (see the module documentation). One entry per holder.
pub(crate) fn counted_once(losses: &[Loss]) -> BTreeMap<AgentId, TaskId> {
    let mut least: BTreeMap<AgentId, &Loss> = BTreeMap::new();
    for loss in losses {
        least
            .entry(loss.holder.clone())
            .and_modify(|best| {
                if (loss.counted, &loss.task) < (best.counted, &best.task) {
                    *best = loss;
                }
            })
            .or_insert(loss);
    }
    least
        .into_iter()
        .map(|(holder, loss)| (holder, loss.task.clone()))
        .collect()
}

/// A task whose run was lost with a runner that held others: queued again with no lost run
/// counted (its runner's death counted against `against`).
fn requeue_uncounted(w: &mut Working<'_>, id: &TaskId, why: &str, held: usize, against: &TaskId) {
    cancel_lost_runs(w, id, why);
    w.transition(
        id,
        TaskState::QUEUED,
        None,
        Some(None),
        "recovery.requeue_lost_with_runner",
        format!(
            "{why} (it held {held} runs: their loss counts once, against {against}): requeued, no lost run counted"
        ),
    );
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

/// The runs of a task still marked running, cancelled: their holder is gone.
fn cancel_lost_runs(w: &mut Working<'_>, id: &TaskId, why: &str) {
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
}

/// A task whose run was lost goes back to the queue, at most `max_lease_reclaims` times.
pub(super) fn requeue_lost_task(w: &mut Working<'_>, id: &TaskId, why: &str) {
    cancel_lost_runs(w, id, why);
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

#[cfg(test)]
mod tests {
    use super::*;

    fn loss(task: &str, holder: &str, counted: u32) -> Loss {
        Loss {
            task: TaskId::from(task),
            holder: AgentId::from(holder),
            counted,
        }
    }

    #[test]
    fn each_holder_counts_once_against_its_least_counted_task() {
        /// A case's name, what was lost, and (holder, task counted against).
        type Case = (&'static str, Vec<Loss>, Vec<(&'static str, &'static str)>);
        let cases: Vec<Case> = vec![
            ("nothing lost", vec![], vec![]),
            ("one run", vec![loss("a", "h1", 2)], vec![("h1", "a")]),
            (
                "ties go to the lowest task id",
                vec![loss("c", "h1", 0), loss("a", "h1", 0), loss("b", "h1", 0)],
                vec![("h1", "a")],
            ),
            (
                "the least counted first",
                vec![loss("a", "h1", 2), loss("b", "h1", 1), loss("c", "h1", 3)],
                vec![("h1", "b")],
            ),
            (
                "each holder its own",
                vec![loss("a", "h1", 0), loss("b", "h2", 0), loss("c", "h2", 0)],
                vec![("h1", "a"), ("h2", "b")],
            ),
        ];
        for (name, losses, expected) in cases {
            let expected: BTreeMap<AgentId, TaskId> = expected
                .into_iter()
                .map(|(h, t)| (AgentId::from(h), TaskId::from(t)))
                .collect();
            assert_eq!(counted_once(&losses), expected, "{name}");
        }
    }

    /// The bound on an agent that really hangs: a task held at every death reaches its limit
    /// (`max_lease_reclaims` + 1 lost runs) within `held × (limit + 1)` deaths, whichever of
    /// the tasks held beside it the deaths count against.
    #[test]
    fn a_task_held_at_every_death_reaches_a_person_within_the_bound() {
        let limit = 3;
        for held in 1..=4u32 {
            let tasks: Vec<String> = (0..held).map(|i| format!("t{i}")).collect();
            for hanging in &tasks {
                let mut counted: BTreeMap<&str, u32> =
                    tasks.iter().map(|t| (t.as_str(), 0)).collect();
                let mut deaths = 0;
                while counted[hanging.as_str()] <= limit {
                    deaths += 1;
                    let losses: Vec<Loss> = tasks
                        .iter()
                        .map(|t| loss(t, "runner", counted[t.as_str()]))
                        .collect();
                    let against = counted_once(&losses)[&AgentId::from("runner")].clone();
                    *counted.get_mut(against.as_str()).expect("a held task") += 1;
                }
                assert!(
                    deaths <= held * (limit + 1),
                    "{hanging} of {held}: {deaths} deaths"
                );
            }
        }
    }
}

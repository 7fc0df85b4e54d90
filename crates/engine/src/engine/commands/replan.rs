//! `/opentiger replan` (issue 17): a person says a task's plan is wrong; the task's plan is
//! made again from where it came from.
//!
//! - A task imported from an issue: the issue's current title and text become the task's spec
//!   again (the person who commands vouches for them, even after an untrusted edit), and the
//!   task is queued afresh with its attempt budgets reset, as a retry would.
//! - A task the planner made from the requirement: the tasks of its plan that have not started
//!   (queued, waiting for their issue or for approval, never attempted) are cancelled, the task
//!   itself too unless it runs or finished, and the requirement counts as changed, so the
//!   planner plans it again as soon as its gate allows (no backlog: started tasks finish first).
//!
//! Pure: which moves, and what the reply says. Reading the issue and recording the request are
//! the tick's. Not for: tasks added by hand (`opentiger task add`) or fix children, which have
//! no plan of their own to make again.

use super::{done, plain_move, refuse, Decision, Effect, Request};
use crate::model::{BlockReason, Task, TaskState, TaskStatus};

/// Where a task's plan came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Made by the planner, in plan `0` (its id).
    Plan(String),
    /// Imported from an issue; `open` says the issue is still in the backlog list this tick
    /// (its current text can be read).
    Issue { number: u64, open: bool },
}

pub(super) fn decide(task: &Task, req: &Request<'_>, by: &str) -> Decision {
    let id = &task.id;
    let state = task.state();
    if task.status == TaskStatus::Running {
        return refuse(format!(
            "Task `{id}` is running: replan it when its run has ended, or `/opentiger cancel` it then"
        ));
    }
    match req.origins.get(id) {
        None => match &task.parent_task_id {
            Some(parent) => refuse(format!(
                "Task `{id}` is a fix of task `{parent}`: replan `{parent}` (`/opentiger replan {parent}` on the dashboard)"
            )),
            None => refuse(format!(
                "Task `{id}` was added by hand, not planned from the requirement or imported from an issue, so it has no plan to make again: cancel it and add a new one"
            )),
        },
        Some(Origin::Issue { number, open: false }) => refuse(format!(
            "Issue #{number} is closed or no longer has the backlog label, so its text cannot be read again"
        )),
        Some(Origin::Issue { number, open: true }) => {
            let respec = Effect::Respec {
                task: id.clone(),
                issue: *number,
            };
            match task.status {
                // (A running task was refused above.)
                TaskStatus::Done | TaskStatus::Running => refuse(format!(
                    "Task `{id}` is {state}: for more work, open a new issue"
                )),
                TaskStatus::Queued => done(
                    vec![respec],
                    format!("Replanned {by}: task `{id}` is queued and its next attempt works from the current text of #{number}."),
                ),
                TaskStatus::Failed | TaskStatus::Cancelled | TaskStatus::Blocked => done(
                    vec![
                        respec,
                        Effect::Move {
                            task: id.clone(),
                            to: TaskState::QUEUED,
                            reset_attempts: true,
                            approved: true,
                            reason: format!("replanned {by} from the current text of #{number}"),
                        },
                    ],
                    format!("Replanned {by}: task `{id}` {state} → queued; it works from the current text of #{number} and its attempt budgets start afresh."),
                ),
            }
        }
        Some(Origin::Plan(plan)) => {
            let mut cancelled: Vec<&Task> = req
                .tasks
                .values()
                .filter(|t| req.origins.get(&t.id) == Some(&Origin::Plan(plan.clone())))
                .filter(|t| t.id == *id || not_started(t))
                .filter(|t| super::cancel_refusal(t).is_none())
                .collect();
            cancelled.sort_by(|a, b| a.id.cmp(&b.id));
            let mut effects: Vec<Effect> = cancelled
                .iter()
                .map(|t| {
                    plain_move(
                        &t.id,
                        TaskState::CANCELLED,
                        format!("replanned {by}: plan {plan} is made again"),
                    )
                })
                .collect();
            effects.push(Effect::Replan { plan: plan.clone() });
            let list = if cancelled.is_empty() {
                "no task of it had to be cancelled".to_string()
            } else {
                let ids: Vec<String> = cancelled.iter().map(|t| format!("`{}`", t.id)).collect();
                format!("cancelled {} ({})", ids.len(), ids.join(", "))
            };
            done(
                effects,
                format!("Replanned {by}: plan {plan} of task `{id}`: {list}. The planner plans the requirement again at the first tick with no backlog left; started tasks finish first."),
            )
        }
    }
}

/// A task that never ran: queued, or waiting for its issue or its approval, with no attempt.
fn not_started(task: &Task) -> bool {
    let waiting = match task.status {
        TaskStatus::Queued => true,
        TaskStatus::Blocked => match task.block_reason {
            Some(BlockReason::IssueLinking) => true,
            Some(BlockReason::AwaitingHuman) => task.needs_approval,
            Some(
                BlockReason::AwaitingJudge
                | BlockReason::NeedsRework
                | BlockReason::QuotaWait
                | BlockReason::Paused,
            )
            | None => false,
        },
        TaskStatus::Running | TaskStatus::Done | TaskStatus::Failed | TaskStatus::Cancelled => {
            false
        }
    };
    waiting && task.attempts.total() == 0
}

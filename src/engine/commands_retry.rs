//! What a person's retry does to a task (`/opentiger retry` and `opentiger task retry`
//! alike), from the task and its latest run. Part of [`super`]; not for the other commands.

use crate::model::{BlockReason, RunId, Task, TaskStatus};
use crate::time::Timestamp;

/// What a person's retry does to a task (`/opentiger retry` and `opentiger task retry` alike).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetryMove {
    /// Back to the queue, its attempt budgets afresh.
    Requeue,
    /// Queued already, but waiting on a cooldown: the wait ends and the budgets start afresh
    /// (issue 15).
    EndCooldown,
    /// The change is made and nothing asked for another one — the judge gave up on it (its
    /// agent failed or ran out of quota past its bounds) or the merge was refused: the judge
    /// is asked again about run `run`, its budgets afresh, and no worker runs (issue 35).
    Rejudge { run: RunId },
}

/// A task's latest run, as a retry looks at it (the shell reads it from the state).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastRun {
    pub id: RunId,
    /// It succeeded with a change on the task's branch (a head commit).
    pub made_change: bool,
    /// A review of its head asked for changes (the judge's or the policy's).
    pub changes_requested: bool,
    /// The change the threat scan held back (issue 36): what an approval would let out.
    pub held: Option<crate::engine::scan::HeldChange>,
}

/// What a person's retry does, or why it is refused (shared with `opentiger task retry`).
/// `last` is the task's latest run.
pub fn retry_move(
    task: &Task,
    last: Option<&LastRun>,
    now: Timestamp,
) -> Result<RetryMove, String> {
    if task.status == TaskStatus::Queued && task.next_attempt_at.is_some_and(|at| at > now) {
        return Ok(RetryMove::EndCooldown);
    }
    if let (TaskStatus::Blocked, Some(BlockReason::AwaitingHuman), Some(last)) =
        (task.status, task.block_reason, last)
    {
        if last.made_change && !last.changes_requested {
            return Ok(RetryMove::Rejudge {
                run: last.id.clone(),
            });
        }
    }
    if retry_allowed(task) {
        return Ok(RetryMove::Requeue);
    }
    Err(format!(
        "Task `{}` is {}: only failed, cancelled or blocked (awaiting_human, paused, quota_wait, needs_rework) tasks, and queued ones waiting on a cooldown, can be retried",
        task.id,
        task.state()
    ))
}

/// A person may send a task back to the queue when it failed, was cancelled, or waits on a
/// person, a quota or its rework.
pub fn retry_allowed(task: &Task) -> bool {
    match task.status {
        TaskStatus::Failed | TaskStatus::Cancelled => true,
        TaskStatus::Blocked => matches!(
            task.block_reason,
            Some(
                BlockReason::AwaitingHuman
                    | BlockReason::Paused
                    | BlockReason::QuotaWait
                    | BlockReason::NeedsRework
            )
        ),
        TaskStatus::Queued | TaskStatus::Running | TaskStatus::Done => false,
    }
}

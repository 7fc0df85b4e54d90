//! Legal status moves. Every writer goes through [`check_transition`]; the spec's weak spot §8.4
//! ("any writer can move any state to any state") is closed here. Not for: choosing the move
//! (`engine`) or writing it with its event (`store::journal`).

use std::fmt;

use super::vocab::{BlockReason, TaskStatus};

/// A task's status together with its block reason (present exactly when blocked).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct TaskState {
    pub status: TaskStatus,
    pub reason: Option<BlockReason>,
}

impl TaskState {
    /// Normalises: a reason is kept only on `blocked`, and `blocked` without one reads as
    /// `blocked(awaiting_human)` (a state nobody can act on must wait for a person).
    pub fn new(status: TaskStatus, reason: Option<BlockReason>) -> TaskState {
        match status {
            TaskStatus::Blocked => TaskState {
                status,
                reason: Some(reason.unwrap_or(BlockReason::AwaitingHuman)),
            },
            TaskStatus::Queued
            | TaskStatus::Running
            | TaskStatus::Done
            | TaskStatus::Failed
            | TaskStatus::Cancelled => TaskState {
                status,
                reason: None,
            },
        }
    }

    pub const fn of(status: TaskStatus) -> TaskState {
        TaskState {
            status,
            reason: None,
        }
    }

    pub const fn blocked(reason: BlockReason) -> TaskState {
        TaskState {
            status: TaskStatus::Blocked,
            reason: Some(reason),
        }
    }

    pub const QUEUED: TaskState = TaskState::of(TaskStatus::Queued);
    pub const RUNNING: TaskState = TaskState::of(TaskStatus::Running);
    pub const DONE: TaskState = TaskState::of(TaskStatus::Done);
    pub const FAILED: TaskState = TaskState::of(TaskStatus::Failed);
    pub const CANCELLED: TaskState = TaskState::of(TaskStatus::Cancelled);
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.reason {
            Some(reason) => write!(f, "{}({})", self.status, reason),
            None => write!(f, "{}", self.status),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a task cannot move from {from} to {to}")]
pub struct IllegalTransition {
    pub from: TaskState,
    pub to: TaskState,
}

/// Accepts the moves of the task lifecycle and refuses every other.
///
/// - `queued` → `running` (claimed), a human checkpoint (`awaiting_human`, `paused`,
///   `issue_linking`), `cancelled`.
/// - `running` → `queued` (lease reclaimed), `done`, `failed`, any `blocked` but `issue_linking`,
///   `cancelled`.
/// - `failed` → `queued` (retry), `blocked` (rework, human, judge), `cancelled`.
/// - `blocked(r)` → `queued`, another `blocked`, `failed`, `cancelled`; `done` only from
///   `awaiting_judge` (merged) or `needs_rework` (its fix finished).
/// - `cancelled` → `queued`: only a person retrying it.
/// - `done` is final.
pub fn check_transition(from: TaskState, to: TaskState) -> Result<(), IllegalTransition> {
    use TaskStatus as S;
    let legal = match (from.status, to.status) {
        (S::Queued, S::Running) | (S::Queued, S::Cancelled) => true,
        (S::Queued, S::Blocked) => matches!(
            to.reason,
            Some(BlockReason::AwaitingHuman | BlockReason::Paused | BlockReason::IssueLinking)
        ),
        (S::Running, S::Queued | S::Done | S::Failed | S::Cancelled) => true,
        (S::Running, S::Blocked) => to.reason != Some(BlockReason::IssueLinking),
        (S::Failed, S::Queued | S::Blocked | S::Cancelled) => true,
        (S::Blocked, S::Queued | S::Failed | S::Cancelled) => true,
        // Only merged work or a finished fix completes a blocked task.
        (S::Blocked, S::Done) => matches!(
            from.reason,
            Some(BlockReason::AwaitingJudge | BlockReason::NeedsRework)
        ),
        (S::Blocked, S::Blocked) => from.reason != to.reason,
        (S::Cancelled, S::Queued) => true,
        (S::Queued, S::Queued | S::Done | S::Failed)
        | (S::Running, S::Running)
        | (S::Failed, S::Running | S::Done | S::Failed)
        | (S::Blocked, S::Running)
        | (S::Cancelled, S::Running | S::Done | S::Failed | S::Blocked | S::Cancelled)
        | (S::Done, _) => false,
    };
    if legal {
        Ok(())
    } else {
        Err(IllegalTransition { from, to })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use BlockReason as R;

    fn b(reason: BlockReason) -> TaskState {
        TaskState::blocked(reason)
    }

    #[test]
    fn lifecycle_moves_are_legal() {
        let legal = [
            (TaskState::QUEUED, TaskState::RUNNING),
            (TaskState::QUEUED, b(R::AwaitingHuman)),
            (TaskState::QUEUED, b(R::IssueLinking)),
            (TaskState::RUNNING, TaskState::QUEUED),
            (TaskState::RUNNING, b(R::AwaitingJudge)),
            (TaskState::RUNNING, b(R::QuotaWait)),
            (TaskState::RUNNING, TaskState::FAILED),
            (TaskState::RUNNING, TaskState::DONE),
            (TaskState::FAILED, TaskState::QUEUED),
            (TaskState::FAILED, b(R::NeedsRework)),
            (TaskState::FAILED, b(R::AwaitingHuman)),
            (b(R::QuotaWait), TaskState::QUEUED),
            (b(R::AwaitingJudge), TaskState::DONE),
            (b(R::AwaitingJudge), b(R::NeedsRework)),
            (b(R::NeedsRework), TaskState::DONE),
            (b(R::AwaitingHuman), TaskState::QUEUED),
            (TaskState::CANCELLED, TaskState::QUEUED),
            (b(R::Paused), TaskState::CANCELLED),
        ];
        for (from, to) in legal {
            assert_eq!(check_transition(from, to), Ok(()), "{from} -> {to}");
        }
    }

    #[test]
    fn illegal_moves_are_refused() {
        let illegal = [
            (TaskState::DONE, TaskState::QUEUED),
            (TaskState::DONE, TaskState::CANCELLED),
            (TaskState::QUEUED, TaskState::DONE),
            (TaskState::QUEUED, b(R::AwaitingJudge)),
            (TaskState::QUEUED, TaskState::QUEUED),
            (TaskState::RUNNING, TaskState::RUNNING),
            (TaskState::RUNNING, b(R::IssueLinking)),
            (TaskState::FAILED, TaskState::DONE),
            (TaskState::FAILED, TaskState::RUNNING),
            (b(R::QuotaWait), TaskState::RUNNING),
            (b(R::QuotaWait), b(R::QuotaWait)),
            (TaskState::CANCELLED, TaskState::DONE),
            (b(R::AwaitingHuman), TaskState::DONE),
            (b(R::QuotaWait), TaskState::DONE),
        ];
        for (from, to) in illegal {
            let err = check_transition(from, to).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("a task cannot move from {from} to {to}")
            );
        }
    }

    #[test]
    fn reasons_live_only_on_blocked() {
        assert_eq!(
            TaskState::new(TaskStatus::Queued, Some(R::QuotaWait)),
            TaskState::QUEUED
        );
        assert_eq!(
            TaskState::new(TaskStatus::Blocked, None),
            b(R::AwaitingHuman)
        );
        assert_eq!(b(R::QuotaWait).to_string(), "blocked(quota_wait)");
    }
}

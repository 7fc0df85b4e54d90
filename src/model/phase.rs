//! The lifecycle phase people see for a task (issue 14 item 7): one word derived from the status
//! and block reason, shown by `status`, `task show`, the dashboard and the progress comment.

use super::{BlockReason, Phase, Task, TaskStatus};

/// The phase of a task in `status` (with `block_reason` when blocked); `attempted` says whether
/// any run was counted for it yet (a queued task that was tried is between attempts).
pub fn phase_of(status: TaskStatus, block_reason: Option<BlockReason>, attempted: bool) -> Phase {
    match (status, block_reason) {
        (TaskStatus::Queued, _) if attempted => Phase::Executing,
        (TaskStatus::Queued, _) => Phase::Intake,
        (TaskStatus::Running, _) => Phase::Executing,
        (TaskStatus::Failed, _) => Phase::Blocked,
        (TaskStatus::Done | TaskStatus::Cancelled, _) => Phase::Completed,
        (TaskStatus::Blocked, None) => Phase::Blocked,
        (TaskStatus::Blocked, Some(reason)) => match reason {
            BlockReason::IssueLinking => Phase::Planning,
            BlockReason::AwaitingJudge => Phase::Verifying,
            BlockReason::NeedsRework => Phase::Executing,
            BlockReason::AwaitingHuman => Phase::AwaitingFeedback,
            BlockReason::QuotaWait | BlockReason::Paused => Phase::Paused,
        },
    }
}

impl Task {
    /// This task's lifecycle phase ([`phase_of`]).
    pub fn phase(&self) -> Phase {
        phase_of(self.status, self.block_reason, self.attempts.total() > 0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_has_one_phase() {
        use BlockReason as B;
        use TaskStatus as S;
        let cases = [
            (S::Queued, None, false, Phase::Intake),
            (S::Queued, None, true, Phase::Executing),
            (S::Running, None, false, Phase::Executing),
            (S::Blocked, Some(B::IssueLinking), false, Phase::Planning),
            (S::Blocked, Some(B::AwaitingJudge), true, Phase::Verifying),
            (S::Blocked, Some(B::NeedsRework), true, Phase::Executing),
            (
                S::Blocked,
                Some(B::AwaitingHuman),
                false,
                Phase::AwaitingFeedback,
            ),
            (
                S::Blocked,
                Some(B::AwaitingHuman),
                true,
                Phase::AwaitingFeedback,
            ),
            (S::Blocked, Some(B::QuotaWait), true, Phase::Paused),
            (S::Blocked, Some(B::Paused), false, Phase::Paused),
            (S::Blocked, None, false, Phase::Blocked),
            (S::Failed, None, true, Phase::Blocked),
            (S::Done, None, true, Phase::Completed),
            (S::Cancelled, None, false, Phase::Completed),
        ];
        for (status, reason, attempted, expected) in cases {
            assert_eq!(
                phase_of(status, reason, attempted),
                expected,
                "{status} {reason:?} attempted={attempted}"
            );
        }
        // Every block reason is covered above.
        for reason in BlockReason::ALL {
            assert!(cases.iter().any(|c| c.1 == Some(*reason)), "{reason}");
        }
    }
}

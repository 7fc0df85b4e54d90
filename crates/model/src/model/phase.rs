//! The lifecycle phase people see for a task (issue 14 item 7): one word derived from stored
//! facts — the status and block reason, whether it was attempted, whether dispatch holds it for
//! its budget, and what its issue was last told — shown by `status`, `task show`, the dashboard
//! and the progress comment.
//!
//! Not for: gathering those facts (the plan says what dispatch holds, the progress comment's
//! cursor what was last published; the shell reads both), nor deciding anything: the phase is
//! for people, no rule branches on it.

use super::{BlockReason, Mode, Phase, Task, TaskStatus};

/// What a task's issue was last told of it, for the `reporting` phase.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IssueReport {
    /// No report is kept for the task: a local mode, a task without an issue, or one whose
    /// progress comment was never posted (finished before reports began).
    NotKept,
    /// The phase its progress comment showed when it was last published.
    Published(Phase),
}

impl IssueReport {
    /// The report kept for a task in `mode`, given the phase its progress comment last showed.
    /// Local modes have no issue to tell, so they never owe a report.
    pub fn of(mode: Mode, last_published: Option<Phase>) -> IssueReport {
        match (mode, last_published) {
            (Mode::Github, Some(phase)) => IssueReport::Published(phase),
            (Mode::Github, None) | (Mode::LocalGit | Mode::Direct, _) => IssueReport::NotKept,
        }
    }

    /// Whether a task in `status` still owes its issue the report of its final state: its
    /// outcome is decided (done or cancelled) and the comment still shows an earlier phase.
    pub fn owed(self, status: TaskStatus) -> bool {
        match self {
            IssueReport::Published(phase) => status.is_terminal() && phase != Phase::Completed,
            IssueReport::NotKept => false,
        }
    }
}

/// The stored facts beyond status and block reason that a phase depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PhaseFacts {
    /// Any run was counted for the task (a queued task that was tried is between attempts).
    pub attempted: bool,
    /// Dispatch holds the queued task because it spent its budget (the plan's
    /// `dispatch.budget` wait).
    pub over_budget: bool,
    /// People hold the merge of its PR (a standing request for changes, a hold label or
    /// comment; the plan's `judge.held` wait, issue 26): it waits for them.
    pub held_by_people: bool,
    /// What its issue was last told.
    pub report: IssueReport,
}

impl PhaseFacts {
    /// The facts of a task that dispatch does not hold and that owes no report.
    pub fn of(task: &Task) -> PhaseFacts {
        PhaseFacts {
            attempted: task.attempts.total() > 0,
            over_budget: false,
            held_by_people: false,
            report: IssueReport::NotKept,
        }
    }
}

/// The phase of a task in `status` (with `block_reason` when blocked), given `facts`.
pub fn phase_of(status: TaskStatus, block_reason: Option<BlockReason>, facts: PhaseFacts) -> Phase {
    match (status, block_reason) {
        // Issue 17 item 5: a task that spent its budget waits for the budget, not for a turn.
        (TaskStatus::Queued, _) if facts.over_budget => Phase::Paused,
        (TaskStatus::Queued, _) if facts.attempted => Phase::Executing,
        (TaskStatus::Queued, _) => Phase::Intake,
        (TaskStatus::Running, _) => Phase::Executing,
        (TaskStatus::Failed, _) => Phase::Blocked,
        (TaskStatus::Done | TaskStatus::Cancelled, _) if facts.report.owed(status) => {
            Phase::Reporting
        }
        (TaskStatus::Done | TaskStatus::Cancelled, _) => Phase::Completed,
        (TaskStatus::Blocked, Some(BlockReason::AwaitingJudge)) if facts.held_by_people => {
            Phase::AwaitingFeedback
        }
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
    /// This task's lifecycle phase ([`phase_of`]) given the facts the shell gathered.
    pub fn phase(&self, facts: PhaseFacts) -> Phase {
        phase_of(self.status, self.block_reason, facts)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn facts(attempted: bool) -> PhaseFacts {
        PhaseFacts {
            attempted,
            over_budget: false,
            held_by_people: false,
            report: IssueReport::NotKept,
        }
    }

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
                phase_of(status, reason, facts(attempted)),
                expected,
                "{status} {reason:?} attempted={attempted}"
            );
        }
        // Every block reason is covered above.
        for reason in BlockReason::ALL {
            assert!(cases.iter().any(|c| c.1 == Some(*reason)), "{reason}");
        }
    }

    /// Each (status, facts) of an unblocked task has the expected phase.
    fn check(cases: &[(TaskStatus, PhaseFacts, Phase)]) {
        for (status, facts, expected) in cases {
            assert_eq!(
                phase_of(*status, None, *facts),
                *expected,
                "{status} {facts:?}"
            );
        }
    }

    /// Issue 26: a PR people hold waits on them.
    #[test]
    fn a_task_whose_merge_people_hold_awaits_feedback() {
        let held = PhaseFacts {
            held_by_people: true,
            ..facts(true)
        };
        let judged = Some(BlockReason::AwaitingJudge);
        assert_eq!(
            phase_of(TaskStatus::Blocked, judged, held),
            Phase::AwaitingFeedback
        );
        assert_eq!(
            phase_of(TaskStatus::Blocked, judged, facts(true)),
            Phase::Verifying
        );
        assert_eq!(phase_of(TaskStatus::Done, None, held), Phase::Completed);
    }

    #[test]
    fn a_queued_task_held_for_its_budget_is_paused() {
        use TaskStatus as S;
        let held = |attempted| PhaseFacts {
            over_budget: true,
            ..facts(attempted)
        };
        let cases = [
            // Tried and spent, or never tried under a day's budget already spent.
            (S::Queued, held(true), Phase::Paused),
            (S::Queued, held(false), Phase::Paused),
            // Only a queued task is held by dispatch: the others keep their phase.
            (S::Running, held(true), Phase::Executing),
            (S::Done, held(true), Phase::Completed),
        ];
        check(&cases);
    }

    #[test]
    fn a_decided_task_is_reporting_until_its_issue_shows_the_outcome() {
        use TaskStatus as S;
        let told = |phase| PhaseFacts {
            report: IssueReport::Published(phase),
            ..facts(true)
        };
        let cases = [
            (S::Done, told(Phase::Verifying), Phase::Reporting),
            (
                S::Cancelled,
                told(Phase::AwaitingFeedback),
                Phase::Reporting,
            ),
            (S::Done, told(Phase::Completed), Phase::Completed),
            (S::Cancelled, told(Phase::Completed), Phase::Completed),
            // Never reported (finished before reports began, or no issue): nothing owed.
            (S::Done, facts(true), Phase::Completed),
            // Not decided yet: the report follows the phase as it goes, nothing is owed.
            (S::Blocked, told(Phase::Executing), Phase::Blocked),
            (S::Queued, told(Phase::Intake), Phase::Executing),
        ];
        check(&cases);
    }

    #[test]
    fn only_github_mode_keeps_a_report() {
        let cases = [
            (Mode::Github, Some(Phase::Verifying), true),
            (Mode::Github, Some(Phase::Completed), false),
            (Mode::Github, None, false),
            (Mode::LocalGit, Some(Phase::Verifying), false),
            (Mode::Direct, Some(Phase::Verifying), false),
        ];
        for (mode, last, owed) in cases {
            assert_eq!(
                IssueReport::of(mode, last).owed(TaskStatus::Done),
                owed,
                "{mode} {last:?}"
            );
            // A task still at work owes nothing, in any mode.
            assert!(!IssueReport::of(mode, last).owed(TaskStatus::Running));
        }
    }
}

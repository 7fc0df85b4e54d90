//! What the act phase did with each piece of claimed work ([`Done`]): what the record phase
//! records, and what the tick keeps on disk until that record is saved.
//! Not for: doing the work ([`super::act`]), recording it ([`super::record`]), or keeping it on
//! disk ([`super::unsaved`]).

use super::ci_gate;
use crate::model::{RunId, TaskId};
use crate::runner::judge::JudgeResult;
use crate::runner::planner::PlanResult;
use crate::runner::work::WorkResult;

/// One piece of work's outcome.
pub(super) enum Done {
    Issue(TaskId, Result<u64, String>),
    Work(TaskId, RunId, WorkResult),
    Review(TaskId, RunId, JudgeResult),
    Plan(PlanResult),
    PullClosed(TaskId, u64, Result<(), String>),
    /// A stalled PR's diagnosis: commented, and how its dispatch went (if one was due).
    CiHealed(crate::store::HealCi, ci_gate::Healed),
    /// A PR pointed at the base branch, or why not: (task, PR, base, result).
    Retargeted(TaskId, u64, String, Result<(), String>),
    /// A claimed run not started (the tick's budget was spent, or an interrupt came first):
    /// back to the queue.
    Unstarted(TaskId, RunId, String),
    /// A run an interrupt (SIGINT, SIGTERM) stopped: cancelled, not failed, and the task back
    /// to the queue; what it spent is still recorded.
    Interrupted(TaskId, RunId, WorkResult, String),
    /// A run a person asked to stop (issue 51): cancelled, not failed, and the task waits on a
    /// person; what it spent is still recorded.
    Stopped(TaskId, RunId, WorkResult, crate::store::StopRequest),
    /// The host snapshot taken before this round's agents ran (issue 52): kept.
    HostProbed(crate::model::learned::HostSnapshot),
}

//! A person stops a running run (issue 51: `opentiger task stop`, `/opentiger stop`): which
//! run a stop may name, and what the record makes of a run a person stopped — cancelled, not a
//! failure the task pays for (no attempt counted, no lost run), and the task waits on a person
//! with a reason naming who stopped it and what a retry would do.
//!
//! Not for: writing the request (`store::stops`), noticing it while the agent runs
//! (`tick::stop_watch`), or ending the agent's processes (`process`).

use super::outcome::OutcomeDecision;
use crate::model::{BlockReason, RunId, RunStatus, Task, TaskState, TaskStatus};
use crate::time::Timestamp;

/// The run a stop of `task` names: the run holding its lease (`leased`), or why there is
/// nothing to stop.
pub fn stop_target(task: &Task, leased: Option<&RunId>) -> Result<RunId, String> {
    let id = &task.id;
    match (task.status, leased) {
        (TaskStatus::Running, Some(run)) => Ok(run.clone()),
        (TaskStatus::Running, None) => Err(format!(
            "task {id} is running but holds no lease: the next tick recovers it"
        )),
        (
            TaskStatus::Queued | TaskStatus::Blocked | TaskStatus::Failed,
            _,
        ) => Err(format!(
            "task {id} is not running (it is {}): nothing to stop; `opentiger task cancel {id}` drops it",
            task.state()
        )),
        (TaskStatus::Done | TaskStatus::Cancelled, _) => {
            Err(format!("task {id} is {}: nothing to stop", task.state()))
        }
    }
}

/// What a run a person stopped leaves: the run cancelled, the task waiting on a person, with
/// who stopped it and what `retry` would do.
pub fn stopped(task: &Task, by: &str, at: Timestamp) -> OutcomeDecision {
    let id = &task.id;
    OutcomeDecision {
        run_status: RunStatus::Cancelled,
        failure_code: None,
        to: TaskState::blocked(BlockReason::AwaitingHuman),
        attempts: None,
        next_attempt_at: Some(None),
        reason: format!(
            "stopped by {by} at {}: its run was cancelled (not counted as a failure); `opentiger task retry {id}` (or `/opentiger retry` on its issue) queues it again with its budgets afresh, `opentiger task cancel {id}` drops it",
            at.clock()
        ),
        executor: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::TaskId;

    #[test]
    fn only_a_running_task_with_its_lease_can_be_stopped() {
        let now = Timestamp(0);
        let mut task = Task::new(TaskId::from("t1"), "T", "g", now);
        let run = RunId::from("r1");
        type Case<'a> = (
            TaskStatus,
            Option<BlockReason>,
            Option<&'a RunId>,
            Result<RunId, &'a str>,
        );
        #[rustfmt::skip]
        let cases: Vec<Case> = vec![
            (TaskStatus::Running, None, Some(&run), Ok(run.clone())),
            (TaskStatus::Running, None, None, Err("task t1 is running but holds no lease")),
            (TaskStatus::Queued, None, None, Err("task t1 is not running (it is queued): nothing to stop; `opentiger task cancel t1` drops it")),
            (TaskStatus::Blocked, Some(BlockReason::AwaitingJudge), None, Err("task t1 is not running (it is blocked(awaiting_judge))")),
            (TaskStatus::Done, None, None, Err("task t1 is done: nothing to stop")),
        ];
        for (status, reason, leased, expected) in cases {
            task.status = status;
            task.block_reason = reason;
            match (stop_target(&task, leased), expected) {
                (Ok(got), Ok(want)) => assert_eq!(got, want),
                (Err(got), Err(want)) => assert!(got.starts_with(want), "{got}"),
                (got, want) => panic!("{status:?}: {got:?} vs {want:?}"),
            }
        }
    }

    #[test]
    fn a_stopped_run_is_cancelled_and_its_task_waits_on_a_person() {
        let task = Task::new(TaskId::from("t1"), "T", "g", Timestamp(0));
        let d = stopped(&task, "@ann", Timestamp(3_600_000));
        assert_eq!(d.run_status, RunStatus::Cancelled);
        assert_eq!(d.failure_code, None);
        assert_eq!(d.attempts, None, "no attempt counted");
        assert_eq!(d.to, TaskState::blocked(BlockReason::AwaitingHuman));
        assert!(
            d.reason.starts_with("stopped by @ann at 01:00:00Z"),
            "{}",
            d.reason
        );
        assert!(
            d.reason.contains("`opentiger task retry t1`"),
            "{}",
            d.reason
        );
        crate::model::check_transition(TaskState::RUNNING, d.to).unwrap();
    }
}

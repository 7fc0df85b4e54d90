//! Preflight gates (seeds/startup-patterns.md): which parts of the loop run this tick.
//!
//! - `R`: the requirement document is non-empty;
//! - `I`: issue backlog exists;
//! - `P`: PR/judge backlog exists (open PRs, or tasks waiting for the judge);
//! - `L`: local task backlog exists (queued, running, failed or blocked).
//!
//! **Better:** tasks parked on a person (`awaiting_human`, `paused`) do not count towards `L`:
//! the spec's weak spot §8.13 (one stuck task stalls planning forever) does not happen here. They
//! are reported separately and block nothing but themselves. And the tick gives `I` and the open
//! PRs of `P` as 0: an issue (and, with `backlog.import_open_prs`, a person's PR) becomes a task
//! in observe, before any plan, and counts in `L` (or `P`'s judge tasks) from then on; one that
//! does not become a task (an untrusted author, a closing PR already open) is skipped with its
//! reason on the dashboard and never stalls planning (the spec's weak spot §8.11). Not for: whether the planner runs
//! in this plan (`engine::planner_gate`, asked only when the gates allow it) or gathering the
//! observations behind `R`, `I` and `P` (`tick::context`).

use serde::Serialize;

use super::Observations;
use crate::model::{BlockReason, Task, TaskStatus};

/// The four inputs of the startup formulas, with the counts behind them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct PreflightInputs {
    pub requirement: bool,
    pub issue_backlog: u32,
    pub open_prs: u32,
    pub pending_judge: u32,
    pub local_backlog: u32,
    pub blocked: u32,
    pub awaiting_human: u32,
}

impl PreflightInputs {
    pub fn from_tasks<'a>(tasks: impl Iterator<Item = &'a Task>, obs: &Observations) -> Self {
        let mut inputs = PreflightInputs {
            requirement: obs.requirement_present,
            issue_backlog: obs.issue_backlog,
            open_prs: obs.open_prs,
            ..PreflightInputs::default()
        };
        for task in tasks {
            let human = matches!(
                task.block_reason,
                Some(BlockReason::AwaitingHuman | BlockReason::Paused)
            );
            match task.status {
                TaskStatus::Queued | TaskStatus::Running | TaskStatus::Failed => {
                    inputs.local_backlog += 1
                }
                TaskStatus::Blocked if human => inputs.awaiting_human += 1,
                TaskStatus::Blocked => {
                    inputs.local_backlog += 1;
                    inputs.blocked += 1;
                    if task.block_reason == Some(BlockReason::AwaitingJudge) {
                        inputs.pending_judge += 1;
                    }
                }
                TaskStatus::Done | TaskStatus::Cancelled => {}
            }
        }
        inputs
    }

    pub fn r(&self) -> bool {
        self.requirement
    }
    pub fn i(&self) -> bool {
        self.issue_backlog > 0
    }
    pub fn p(&self) -> bool {
        self.open_prs > 0 || self.pending_judge > 0
    }
    pub fn l(&self) -> bool {
        self.local_backlog > 0
    }

    /// `R=1 I=0 P=0 L=0`
    pub fn flags(&self) -> String {
        let b = |v: bool| u8::from(v);
        format!(
            "R={} I={} P={} L={}",
            b(self.r()),
            b(self.i()),
            b(self.p()),
            b(self.l())
        )
    }
}

/// Which parts of the loop run (the formulas of startup-patterns.md "Startup Rules").
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Preflight {
    pub inputs: PreflightInputs,
    pub start_planner: bool,
    pub start_execution_agents: bool,
    pub start_dispatcher: bool,
    pub start_judge: bool,
    pub start_cycle_manager: bool,
    /// Pattern class S0..S5 of startup-patterns.md.
    pub class: &'static str,
    /// Why, in one line.
    pub summary: String,
}

/// Applies the startup formulas. Dispatcher, judge and cycle manager are always enabled here:
/// a tick has no separately started processes.
pub fn preflight(inputs: &PreflightInputs) -> Preflight {
    let (r, i, p, l) = (inputs.r(), inputs.i(), inputs.p(), inputs.l());
    let start_planner = r && !i && !p && !l;
    let start_execution_agents = start_planner || i || l;
    let start_judge = p || start_execution_agents;
    let start_cycle_manager = start_execution_agents || p || inputs.blocked > 0;
    let class = match (r, i, p, l) {
        (_, true, _, _) => "S2",
        (true, false, false, false) => "S1",
        (false, false, false, false) => "S0",
        (_, false, true, false) => "S3",
        (_, false, false, true) => "S4",
        (_, false, true, true) => "S5",
    };
    let summary = match class {
        "S0" => "nothing to do: no task and no requirement document (add a task with \
                 `opentiger task add`, or write the requirement)"
            .to_string(),
        "S1" => "requirement present, no backlog: the planner creates tasks".to_string(),
        "S2" => format!(
            "issue backlog ({}) first: planner skipped",
            inputs.issue_backlog
        ),
        "S3" => "judge backlog only: review and merge, no new work".to_string(),
        "S4" => format!(
            "local backlog ({} tasks): execute existing tasks first",
            inputs.local_backlog
        ),
        _ => format!(
            "local backlog ({}) and judge backlog ({} PRs, {} awaiting judge)",
            inputs.local_backlog, inputs.open_prs, inputs.pending_judge
        ),
    };
    Preflight {
        inputs: *inputs,
        start_planner,
        start_execution_agents,
        start_dispatcher: start_execution_agents,
        start_judge,
        start_cycle_manager,
        class,
        summary,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inputs(r: bool, i: bool, p: bool, l: bool) -> PreflightInputs {
        PreflightInputs {
            requirement: r,
            issue_backlog: u32::from(i),
            open_prs: u32::from(p),
            pending_judge: 0,
            local_backlog: u32::from(l),
            blocked: 0,
            awaiting_human: 0,
        }
    }

    /// All 16 combinations: (R, I, P, L) => (planner, execution, judge, cycle manager, class).
    #[test]
    fn all_sixteen_combinations() {
        #[rustfmt::skip]
        let table = [
            // R      I      P      L        planner exec   judge  cycle  class
            ((false, false, false, false), (false, false, false, false, "S0")),
            ((false, false, false, true ), (false, true,  true,  true,  "S4")),
            ((false, false, true,  false), (false, false, true,  true,  "S3")),
            ((false, false, true,  true ), (false, true,  true,  true,  "S5")),
            ((false, true,  false, false), (false, true,  true,  true,  "S2")),
            ((false, true,  false, true ), (false, true,  true,  true,  "S2")),
            ((false, true,  true,  false), (false, true,  true,  true,  "S2")),
            ((false, true,  true,  true ), (false, true,  true,  true,  "S2")),
            ((true,  false, false, false), (true,  true,  true,  true,  "S1")),
            ((true,  false, false, true ), (false, true,  true,  true,  "S4")),
            ((true,  false, true,  false), (false, false, true,  true,  "S3")),
            ((true,  false, true,  true ), (false, true,  true,  true,  "S5")),
            ((true,  true,  false, false), (false, true,  true,  true,  "S2")),
            ((true,  true,  false, true ), (false, true,  true,  true,  "S2")),
            ((true,  true,  true,  false), (false, true,  true,  true,  "S2")),
            ((true,  true,  true,  true ), (false, true,  true,  true,  "S2")),
        ];
        for ((r, i, p, l), (planner, exec, judge, cycle, class)) in table {
            let gates = preflight(&inputs(r, i, p, l));
            let case = inputs(r, i, p, l).flags();
            assert_eq!(gates.start_planner, planner, "planner for {case}");
            assert_eq!(gates.start_execution_agents, exec, "execution for {case}");
            assert_eq!(gates.start_dispatcher, exec, "dispatcher for {case}");
            assert_eq!(gates.start_judge, judge, "judge for {case}");
            assert_eq!(gates.start_cycle_manager, cycle, "cycle manager for {case}");
            assert_eq!(gates.class, class, "class for {case}");
        }
    }

    #[test]
    fn blocked_tasks_alone_start_the_cycle_manager() {
        let mut only_blocked = inputs(false, false, false, false);
        only_blocked.blocked = 1;
        assert!(preflight(&only_blocked).start_cycle_manager);
    }

    #[test]
    fn human_parked_tasks_do_not_count_as_backlog() {
        use crate::model::{TaskId, TaskStatus};
        use crate::time::Timestamp;
        let mut parked = Task::new(TaskId::from("a"), "t", "g", Timestamp(0));
        parked.status = TaskStatus::Blocked;
        parked.block_reason = Some(BlockReason::AwaitingHuman);
        let mut judged = parked.clone();
        judged.id = TaskId::from("b");
        judged.block_reason = Some(BlockReason::AwaitingJudge);
        let obs = Observations {
            requirement_present: true,
            ..Observations::default()
        };
        let only_parked = PreflightInputs::from_tasks([&parked].into_iter(), &obs);
        assert_eq!((only_parked.l(), only_parked.awaiting_human), (false, 1));
        assert!(preflight(&only_parked).start_planner);
        let with_judge = PreflightInputs::from_tasks([&parked, &judged].into_iter(), &obs);
        assert!(with_judge.p() && with_judge.l());
        assert_eq!(preflight(&with_judge).class, "S5");
    }
}

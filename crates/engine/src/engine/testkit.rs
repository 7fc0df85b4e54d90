//! Plain-value builders for the engine's tests (and the runner's unit tests): a task in a given
//! state, a run that failed with a message, a lease, a snapshot and its plan, CI's checks on a
//! head, all at fixed times; and a plan's decisions as short lines to assert on. For tests only.
//! Not for: the cases themselves (the `*_tests.rs` tables) or the integration tests' fixtures
//! (`tests/common`).

use super::{Action, Decision, Observations, Plan, Snapshot};
use crate::config::Config;
use crate::model::{
    AgentId, AttemptKey, BlockReason, FailureCode, Lease, Run, RunId, RunStatus, Task, TaskId,
    TaskStatus, TickId,
};
use crate::time::{Timestamp, MINUTE};

/// 2026-11-21T12:00:00Z
pub const NOW: Timestamp = Timestamp(1_795_262_400_000);

pub fn at(minutes_from_now: i64) -> Timestamp {
    NOW.plus(minutes_from_now * MINUTE)
}

pub fn task(id: &str) -> Task {
    Task::new(TaskId::from(id), &format!("task {id}"), "goal", at(-60))
}

pub trait TaskExt {
    fn status(self, status: TaskStatus) -> Task;
    fn blocked(self, reason: BlockReason) -> Task;
    fn deps(self, deps: &[&str]) -> Task;
    fn attempts(self, key: AttemptKey, n: u32) -> Task;
    fn next_at(self, t: Timestamp) -> Task;
    fn with(self, f: impl FnOnce(&mut Task)) -> Task;
}

impl TaskExt for Task {
    fn status(mut self, status: TaskStatus) -> Task {
        self.status = status;
        self.block_reason = None;
        self
    }
    fn blocked(mut self, reason: BlockReason) -> Task {
        self.status = TaskStatus::Blocked;
        self.block_reason = Some(reason);
        self
    }
    fn deps(mut self, deps: &[&str]) -> Task {
        self.dependencies = deps.iter().map(|d| TaskId::from(*d)).collect();
        self
    }
    fn attempts(mut self, key: AttemptKey, n: u32) -> Task {
        self.attempts.0.insert(key, n);
        self
    }
    fn next_at(mut self, t: Timestamp) -> Task {
        self.next_attempt_at = Some(t);
        self
    }
    fn with(mut self, f: impl FnOnce(&mut Task)) -> Task {
        f(&mut self);
        self
    }
}

pub fn run(id: &str, task: &str, status: RunStatus, started: Timestamp) -> Run {
    let t = Task::new(TaskId::from(task), "", "", started);
    let mut r = Run::started(
        RunId::from(id),
        &t,
        AgentId::from("local:box:1"),
        TickId::from("old"),
        started,
    );
    r.status = status;
    if status != RunStatus::Running {
        r.finished_at = Some(started.plus(MINUTE));
    }
    r
}

pub fn failed_run(
    id: &str,
    task: &str,
    code: Option<FailureCode>,
    error: &str,
    started: Timestamp,
) -> Run {
    let mut r = run(id, task, RunStatus::Failed, started);
    r.failure_code = code;
    r.error = Some(error.to_string());
    r
}

pub fn lease(task: &str, run: &str, agent: &str, expires: Timestamp) -> Lease {
    Lease {
        task_id: TaskId::from(task),
        run_id: RunId::from(run),
        agent_id: AgentId::from(agent),
        tick_id: TickId::from("old"),
        acquired_at: expires.plus(-90 * MINUTE),
        expires_at: expires,
    }
}

pub fn snapshot(tasks: Vec<Task>, runs: Vec<Run>, leases: Vec<Lease>) -> Snapshot {
    Snapshot {
        tick_id: TickId::from("tick"),
        agent_id: AgentId::from("local:box:2"),
        tasks,
        runs,
        leases,
        plans: Default::default(),
        observations: Observations::default(),
    }
}

pub fn plan_with(snap: &Snapshot, config: &Config) -> Plan {
    super::plan(snap, config, NOW)
}

/// `rule task-id action` lines for the decisions that write, for compact assertions.
pub fn writes(plan: &Plan) -> Vec<String> {
    plan.decisions
        .iter()
        .filter(|d| d.writes())
        .map(line)
        .collect()
}

pub fn line(d: &Decision) -> String {
    let task = d.task_id.as_ref().map_or("-", |t| t.as_str());
    let action = match &d.action {
        Action::Transition { to, .. } => format!("-> {to}"),
        Action::ReleaseLease { run_id } => format!("release {run_id}"),
        Action::CancelRun { run_id } => format!("cancel {run_id}"),
        Action::CreateTask { task } => format!("create {} {}", task.kind, task.title),
        Action::Claim { .. } => "claim".to_string(),
        Action::Judge { run_id, .. } => format!("judge {run_id}"),
        Action::ResetJudgeClaim { run_id } => format!("unjudge {run_id}"),
        Action::StartPlanner => "plan".to_string(),
        Action::OpenIssue => "open issue".to_string(),
        Action::ClosePull { pr, superseded_by } => format!("close #{pr} for {superseded_by}"),
        Action::RetargetPull { pr, from, to } => format!("retarget #{pr} {from} -> {to}"),
        Action::HealCi { pr, dispatch, .. } if dispatch.is_empty() => format!("heal CI #{pr}"),
        Action::HealCi { pr, dispatch, .. } => {
            format!("heal CI #{pr} dispatch {}", dispatch.join(","))
        }
        Action::StartCi { pr, workflows, .. } => {
            format!("start CI #{pr} dispatch {}", workflows.join(","))
        }
        Action::Wait { .. } => "wait".to_string(),
    };
    format!("{} {task} {action}", d.rule)
}

/// The reasons of all decisions about a task.
pub fn reasons(plan: &Plan, id: &str) -> Vec<String> {
    plan.for_task(&TaskId::from(id))
        .map(|d| d.reason.clone())
        .collect()
}

/// What CI says about commit `head`: its state, failing and pending check names.
pub fn ci(
    head: &str,
    state: &str,
    failing: &[&str],
    pending: &[&str],
) -> super::gate::CiObservation {
    let names = |list: &[&str]| list.iter().map(|s| s.to_string()).collect();
    super::gate::CiObservation {
        head_sha: head.into(),
        mergeable_unknown_since: None,
        checks: crate::model::Checks {
            state: state.into(),
            failing: names(failing),
            pending: names(pending),
            passed: Vec::new(),
            excerpts: Default::default(),
            mergeable: None,
        },
    }
}

/// What CI says about commit `head`, by check name: the state follows from the lists.
pub fn checks_on(
    head: &str,
    passed: &[&str],
    failing: &[&str],
    pending: &[&str],
) -> super::gate::CiObservation {
    let state = if !failing.is_empty() {
        "failure"
    } else if !pending.is_empty() {
        "pending"
    } else if passed.is_empty() {
        "none"
    } else {
        "success"
    };
    let mut observed = ci(head, state, failing, pending);
    observed.checks.passed = passed.iter().map(|s| s.to_string()).collect();
    observed
}

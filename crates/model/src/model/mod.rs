//! The typed state model: ids, tasks, runs, leases, events and the legal status moves.
//!
//! These are plain data. The store reads and writes them; the engine decides on them; the forge
//! converts GitHub's objects into them (`forge::calls`, into the types of `forge.rs`). Nothing
//! here does I/O but naming this process (`AgentId::detect` reads the host name), and nothing
//! here depends on another module of ours but `time`. Not for: storing them (`store`), deciding
//! on them (`engine`) or showing them (`report`).

mod agent_config;
pub mod checks;
pub mod excerpt;
mod forge;
pub mod graph;
mod ids;
pub mod learned;
pub mod network;
mod phase;
mod plan;
mod quota;
mod research;
mod spec;
pub mod text;
mod transition;
mod vocab;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

pub use agent_config::is_agent_config_message;
pub use forge::{AuthorAssociation, Checks, Issue, IssueEvent, PullRequest};
pub use ids::{short_hash, AgentId, RunId, TaskId, TickId};
pub use phase::{phase_of, IssueReport, PhaseFacts};
pub use plan::{PlanHistory, PlanRecord, PlanStatus};
pub use quota::is_quota_message;
pub use research::{ApprovedProposal, Proposal, ResearchReport};
pub use spec::{CriterionCheck, IssueSpec, PullReview, ReviewLine, ReviewState, ThreadComment};
pub use transition::{check_transition, IllegalTransition, TaskState};
pub use vocab::{
    AttemptKey, BlockReason, ExecutionMode, FailureCategory, FailureCode, Lane, MergeStatus, Mode,
    Phase, Risk, Role, RunStatus, TaskKind, TaskStatus, UnknownWord, Verdict,
};

/// Attempt counters of one task, one per bounded loop (stored as a JSON object).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Attempts(pub BTreeMap<AttemptKey, u32>);

impl Attempts {
    pub fn get(&self, key: AttemptKey) -> u32 {
        self.0.get(&key).copied().unwrap_or(0)
    }

    /// A copy with `key` counted once more.
    pub fn bumped(&self, key: AttemptKey) -> Attempts {
        let mut next = self.clone();
        *next.0.entry(key).or_insert(0) += 1;
        next
    }

    pub fn total(&self) -> u32 {
        self.0.values().sum()
    }

    /// `test=2 quota=1`, or `-` when nothing was counted.
    pub fn summary(&self) -> String {
        if self.0.is_empty() {
            return "-".to_string();
        }
        self.0
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// One unit of work (DESIGN §4 `tasks`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Task {
    pub id: TaskId,
    pub title: String,
    pub goal: String,
    pub kind: TaskKind,
    pub role: Role,
    pub lane: Lane,
    pub status: TaskStatus,
    pub block_reason: Option<BlockReason>,
    /// Why the task is where it is, for people: the reason of its last transition.
    pub status_reason: Option<String>,
    pub priority: i64,
    pub risk: Risk,
    /// Mutual-exclusion key: two tasks with the same area never run at once.
    pub target_area: Option<String>,
    pub touches: Vec<String>,
    pub allowed_paths: Vec<String>,
    pub commands: Vec<String>,
    pub dependencies: Vec<TaskId>,
    /// The task this one fixes or reworks (AutoFix, rework, conflict fix, recreate).
    pub parent_task_id: Option<TaskId>,
    pub source_pr: Option<u64>,
    pub issue_number: Option<u64>,
    pub rework_depth: u32,
    pub attempts: Attempts,
    /// Not dispatched or recovered before this time (cooldowns, quota backoff).
    pub next_attempt_at: Option<Timestamp>,
    pub timebox_minutes: u32,
    /// Free text for the agent: specs, hints, findings of an earlier review.
    pub notes: String,
    /// Waits in `blocked(awaiting_human)` until a person approves it (`execution_mode: ask`).
    pub needs_approval: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

impl Task {
    pub fn state(&self) -> TaskState {
        TaskState::new(self.status, self.block_reason)
    }

    /// A new queued task with the defaults of DESIGN §13.
    pub fn new(id: TaskId, title: &str, goal: &str, now: Timestamp) -> Task {
        Task {
            id,
            title: title.to_string(),
            goal: goal.to_string(),
            kind: TaskKind::Feature,
            role: Role::Worker,
            lane: Lane::Feature,
            status: TaskStatus::Queued,
            block_reason: None,
            status_reason: None,
            priority: 0,
            risk: Risk::Low,
            target_area: None,
            touches: Vec::new(),
            allowed_paths: Vec::new(),
            commands: Vec::new(),
            dependencies: Vec::new(),
            parent_task_id: None,
            source_pr: None,
            issue_number: None,
            rework_depth: 0,
            attempts: Attempts::default(),
            next_attempt_at: None,
            timebox_minutes: 60,
            notes: String::new(),
            needs_approval: false,
            created_at: now,
            updated_at: now,
        }
    }
}

/// One execution attempt of a task (DESIGN §4 `runs`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Run {
    pub id: RunId,
    pub task_id: TaskId,
    pub agent_id: AgentId,
    pub tick_id: TickId,
    pub role: Role,
    pub executor: Option<String>,
    pub status: RunStatus,
    pub started_at: Timestamp,
    pub finished_at: Option<Timestamp>,
    pub failure_code: Option<FailureCode>,
    /// Short, redacted excerpt of what went wrong (never the full log).
    pub error: Option<String>,
    pub cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub session_id: Option<String>,
    pub branch: Option<String>,
    pub head_sha: Option<String>,
    pub pr_number: Option<u64>,
    pub summary: Option<String>,
    pub judged_at: Option<Timestamp>,
    pub judgement_version: i64,
    /// What the agent CLI reported it spent; `cost_usd` is the larger of this and the metered
    /// figure (issue 37).
    #[serde(default)]
    pub reported_cost_usd: f64,
    /// What opentiger's proxy metered of the run's model traffic.
    #[serde(default)]
    pub metered: Option<network::Metering>,
    /// Hosts the proxy refused for the run's agent and checks.
    #[serde(default)]
    pub refused: Vec<network::Refusal>,
}

impl Run {
    pub fn started(
        id: RunId,
        task: &Task,
        agent_id: AgentId,
        tick_id: TickId,
        now: Timestamp,
    ) -> Run {
        Run {
            id,
            task_id: task.id.clone(),
            agent_id,
            tick_id,
            role: task.role,
            executor: None,
            status: RunStatus::Running,
            started_at: now,
            finished_at: None,
            failure_code: None,
            error: None,
            cost_usd: 0.0,
            input_tokens: 0,
            output_tokens: 0,
            session_id: None,
            branch: None,
            head_sha: None,
            pr_number: None,
            summary: None,
            judged_at: None,
            judgement_version: 0,
            reported_cost_usd: 0.0,
            metered: None,
            refused: Vec::new(),
        }
    }
}

/// Exclusive claim of a task by one tick's agent (DESIGN §4 `leases`; one per task).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    pub task_id: TaskId,
    pub run_id: RunId,
    pub agent_id: AgentId,
    pub tick_id: TickId,
    pub acquired_at: Timestamp,
    pub expires_at: Timestamp,
}

/// One line of the append-only audit log.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    pub id: i64,
    pub at: Timestamp,
    pub tick_id: Option<TickId>,
    /// Who did it: an agent id, `human`, or `engine`.
    pub actor: String,
    /// `task.transition`, `task.created`, `lease.acquired`, `run.started`, ...
    pub kind: String,
    pub task_id: Option<TaskId>,
    pub run_id: Option<RunId>,
    pub from_state: Option<String>,
    pub to_state: Option<String>,
    pub reason: String,
    pub payload: serde_json::Value,
}

/// The branch a task's work lives on. AutoFix children work on their source's branch and PR
/// (DESIGN §8: the PR is updated in place, not replaced).
pub fn task_branch(task: &Task) -> String {
    let owner = match (task.kind, &task.parent_task_id) {
        (TaskKind::Autofix | TaskKind::AutofixConflict, Some(parent)) => parent.short().to_string(),
        (
            TaskKind::Feature
            | TaskKind::Autofix
            | TaskKind::AutofixConflict
            | TaskKind::Recreate
            | TaskKind::Rework
            | TaskKind::PrReview
            | TaskKind::Docs
            | TaskKind::Research,
            _,
        ) => task.id.short().to_string(),
    };
    format!("opentiger/task-{owner}")
}

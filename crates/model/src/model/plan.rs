//! Planner attempts as the engine and the store see them: how each ended, and the history the
//! replan gate reads. Not for: making or checking a plan (`planner`) or whether the planner
//! runs (`engine::planner_gate`).

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// How a planner attempt ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PlanStatus {
    /// Its tasks were created (possibly none: nothing left to do).
    Created,
    /// The planner's output was invalid (twice): nothing created.
    Rejected,
    /// The planner agent failed to produce anything.
    Failed,
}

impl PlanStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            PlanStatus::Created => "created",
            PlanStatus::Rejected => "rejected",
            PlanStatus::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> PlanStatus {
        match text {
            "created" => PlanStatus::Created,
            "rejected" => PlanStatus::Rejected,
            _ => PlanStatus::Failed,
        }
    }
}

/// One planner attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PlanRecord {
    pub id: String,
    pub signature: String,
    pub requirement_hash: String,
    pub base_head: String,
    pub status: PlanStatus,
    /// `agent` or `fallback`.
    pub source: String,
    pub task_count: u32,
    pub errors: Vec<String>,
    pub created_at: Timestamp,
}

/// What the engine needs to know about planning so far.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PlanHistory {
    /// The newest attempt of any kind.
    pub last_attempt: Option<PlanRecord>,
    /// The newest plan whose tasks were created.
    pub last_created: Option<PlanRecord>,
    /// Failed or rejected attempts for `signature` since it was last planned.
    pub failures_for: u32,
}

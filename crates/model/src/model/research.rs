//! What a research task produces (issue 28): a report answering its issue, the issue's
//! acceptance criteria answered one by one, and follow-up proposals a person may approve.
//! Plain data. Not for: the rules over it (`engine::research`), running the research
//! (`runner::research`) or its comment (`report::research`, posted by `tick::people::research`).

use serde::{Deserialize, Serialize};

use super::{CriterionCheck, TaskId};

/// A follow-up task the research agent proposes: nothing happens until a person approves it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proposal {
    /// Agent output (redacted, capped): shown to people, never an instruction to an agent
    /// until a person approves it.
    pub title: String,
    pub goal: String,
}

/// A research run's report as kept in the state until (and after) it is posted.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ResearchReport {
    pub task_id: TaskId,
    /// The run that wrote it.
    pub run_id: String,
    /// The commit the run read: evidence links point at it.
    pub base_sha: String,
    /// The report (markdown), redacted, capped, with evidence linked in github mode.
    pub body: String,
    /// Each acceptance criterion of the issue, answered.
    pub criteria: Vec<CriterionCheck>,
    /// At most `engine::research::MAX_PROPOSALS`, numbered from 1 in this order.
    pub proposals: Vec<Proposal>,
}

/// A proposal a person approved: the task it became (its issue, once opened, is the task's).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovedProposal {
    /// The proposal's number, from 1.
    pub number: u32,
    pub task_id: TaskId,
    pub issue: Option<u64>,
}

//! The act phase of a tick (DESIGN §3 step 5): running claimed work and reviews. Everything here
//! touches the world (worktrees, agents, commands, git); every decision about what the results
//! mean is made by the engine (`engine::outcome`, `engine::verdict`).
//!
//! Every agent and check list is started by one launch path (`launch.rs`): its environment,
//! door, confinement, limits and process-group record are made there, for every role alike.
//!
//! Not for: deciding (the engine), GitHub (`tick::publish`, `tick::people`), or ending what a
//! killed tick left running (`sandbox::groups`, called by the tick before it claims).

mod agent;
mod checks;
mod content;
mod detect;
mod executors;
pub mod judge;
mod launch;
mod network;
pub mod planner;
pub mod probe;
mod prompts;
mod pulse;
pub mod research;
mod stop;
mod verdict_answer;
pub mod work;

use std::path::Path;

use crate::config::Config;
use crate::prompt::Templates;
use crate::redact::Redactor;

pub use checks::{
    allowed_paths, check_policy, run_commands_in, task_problems, CheckFailure, TaskField,
    TaskProblem, Verification,
};
pub use content::check_content;
pub use launch::base_env;
use launch::set_var;

use crate::engine::import::context_comments;
use crate::model::{IssueSpec, PullReview, ReviewState, Run, RunId, Task, ThreadComment};
use crate::store::{Store, StoreError};

/// What a run's prompt is built from besides the task: its earlier attempts and what people
/// wrote about it. Read from the state in the claim phase, so a run needs no GitHub call.
#[derive(Clone, Debug, Default)]
pub struct Brief {
    /// Earlier runs of the task, newest first (not the run being started).
    pub runs: Vec<Run>,
    /// The issue the task (or the task it fixes) comes from: its spec, untrusted text.
    pub issue: Option<IssueSpec>,
    /// Trusted people's comments on the issue and the task's PR since the import, newest last
    /// and capped (`engine::import::context_comments`): untrusted text, shown fenced.
    pub comments: Vec<ThreadComment>,
    /// The task's changes people approved after the threat scan held them, not let out yet
    /// (issue 36): the next run lets out exactly such a change (`engine::scan`).
    pub approved: Vec<crate::engine::scan::HeldChange>,
    /// What the task's family spent before this run (issue 37: its budget covers the family).
    pub family_spent: f64,
    /// The budget a person set for this task (`/opentiger budget <usd>`), if any.
    pub task_budget: Option<f64>,
}

impl Brief {
    /// The brief of `task` for its run `run_id`.
    pub fn read(store: &Store, task: &Task, run_id: &RunId) -> Result<Brief, StoreError> {
        let runs: Vec<Run> = store
            .runs_of(&task.id, 10)?
            .into_iter()
            .filter(|r| &r.id != run_id)
            .collect();
        let issue = match task.issue_number {
            Some(n) => store.issue_spec(n)?,
            None => None,
        };
        let mut threads: Vec<u64> = task
            .issue_number
            .into_iter()
            .chain(task.source_pr)
            .collect();
        for run in &runs {
            if let Some(pr) = run.pr_number.filter(|pr| !threads.contains(pr)) {
                threads.push(pr);
            }
        }
        let mut kept = store.thread_comments(&threads)?;
        // People's reviews of the task's PR read as comments: their text, and the lines they
        // were written on. A dismissed review asks for nothing any more (issue 26).
        kept.extend(
            store
                .pull_reviews(&threads)?
                .iter()
                .filter(|r| r.state != ReviewState::Dismissed)
                .map(review_comment),
        );
        let comments = context_comments(&kept);
        Ok(Brief {
            runs,
            issue,
            comments,
            approved: store.approved_changes(&task.id)?,
            family_spent: store.family_spend(&task.id)?,
            task_budget: store.task_budgets()?.get(&task.id).copied(),
        })
    }
}

/// What the act phase works with.
pub struct Act<'a> {
    pub repo: &'a Path,
    pub config: &'a Config,
    pub redactor: &'a Redactor,
    pub templates: &'a Templates,
    /// The state file, when it lives inside the repository: never part of a change.
    pub state_file: Option<std::path::PathBuf>,
    /// Executors parked on a quota when the work was claimed: their role's fallbacks run.
    pub executor_waits: &'a crate::engine::fallback::ExecutorWaits,
    /// The time the choice of executor is made at.
    pub now: crate::time::Timestamp,
    /// Where a run's commit goes.
    pub delivery: Delivery,
    /// What the loop learned about where agents run (issue 52): the host snapshot and the
    /// lessons, for the prompts.
    pub learned: &'a crate::model::learned::Learned,
    /// Asked while a task run's agent runs whether a person asked that run to stop (issue 51;
    /// set per run by the tick); its stop ends the agent gently.
    pub stop: Option<std::sync::Arc<dyn crate::process::Sentinel>>,
}

/// Where a worker run's commit goes once the runner's checks passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// Fetch the base and task branches before the run, push the task branch after it.
    Push,
    /// No network (a job without a token, `work --output`): the branches as the checkout
    /// fetched them, and the commit stays on the local task branch for `apply` to push.
    Keep,
}

impl Act<'_> {
    /// Pathspecs that leave the state file (and its lock and journal) out of `git add`.
    pub fn state_exclusions(&self) -> Vec<String> {
        let Some(rel) = self
            .state_file
            .as_ref()
            .and_then(|p| p.strip_prefix(self.repo).ok())
        else {
            return Vec::new();
        };
        vec![format!(":(glob){}*", rel.display())]
    }
}

/// A review as a comment of the PR's thread: its verdict, text and line comments.
fn review_comment(review: &PullReview) -> ThreadComment {
    let verdict = match review.state {
        ReviewState::Approved => "approved",
        ReviewState::ChangesRequested => "requested changes",
        ReviewState::Commented => "commented",
        ReviewState::Dismissed => "dismissed",
    };
    let mut body = format!(
        "Review of {} ({verdict}):\n{}",
        crate::engine::verdict::short_sha(&review.commit_id),
        review.body.trim()
    );
    for line in &review.lines {
        body.push_str(&format!("\n- {}: {}", line.range(), line.body.trim()));
    }
    ThreadComment {
        id: review.id,
        thread: review.pr,
        author: review.author.clone(),
        association: "reviewer".to_string(),
        body,
        created_at: review.submitted_at,
        updated_at: review.submitted_at,
    }
}

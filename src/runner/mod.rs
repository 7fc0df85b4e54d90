//! The act phase of a tick (DESIGN §3 step 5): running claimed work and reviews. Everything here
//! touches the world (worktrees, agents, commands, git); every decision about what the results
//! mean is made by the engine (`engine::outcome`, `engine::verdict`).
//!
//! Not for: deciding (the engine), GitHub (`tick::publish`, `tick::people`), or ending what a
//! killed tick left running (`sandbox::groups`, called by the tick before it claims).

mod agent;
mod checks;
mod content;
mod detect;
mod executors;
pub mod judge;
mod network;
pub mod planner;
mod prompts;
mod pulse;
pub mod research;
mod verdict_answer;
pub mod work;

use std::path::Path;

use crate::config::Config;
use crate::prompt::Templates;
use crate::redact::Redactor;

pub use checks::{
    allowed_paths, base_env, check_policy, run_commands_in, task_problems, CheckFailure, TaskField,
    TaskProblem, Verification,
};
pub use content::check_content;

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

/// Where the process group of a run's agent is recorded while it runs (`sandbox::groups`):
/// under the repository's `.git/opentiger/agents/`. `None` when the repository has none.
fn group_record(act: &Act<'_>, run_id: &str) -> Option<std::path::PathBuf> {
    let dir = crate::sandbox::groups::records_of(act.repo)?;
    Some(crate::sandbox::groups::record_path(&dir, run_id))
}

/// Sets up the domain an agent working in a workspace runs in, with `scratch` as its scratch
/// folder: its home (`sandbox.agent_home`: a private one in the scratch folder holding its
/// `home_files`, set as `HOME` in `env`) and its Landlock ruleset (`sandbox.filesystem`): it may
/// write its run's folder (`run_folder`: the workspace, its own repository, the scratch folder
/// and the private home), its home and `sandbox.writable` — nothing of the runner's repository.
/// `Err` when `sandbox.require` is set and a protection is missing here.
fn agent_domain(
    act: &Act<'_>,
    run_folder: &Path,
    scratch: &Path,
    agent: &crate::config::EffectiveAgent,
    env: &mut Vec<(String, String)>,
    net_port: Option<u16>,
) -> Result<Option<std::sync::Arc<crate::sandbox::landlock::Ruleset>>, String> {
    let home = home_set(act, scratch, agent, env)?;
    confinement(act.config, &[run_folder.to_path_buf(), home], net_port)
}

/// The domain of a read-only agent (a research run, issue 28): as [`agent_domain`], but it may
/// write only its scratch folder, its home and `sandbox.writable` — not its workspace.
fn read_only_domain(
    act: &Act<'_>,
    scratch: &Path,
    agent: &crate::config::EffectiveAgent,
    env: &mut Vec<(String, String)>,
    net_port: Option<u16>,
) -> Result<Option<std::sync::Arc<crate::sandbox::landlock::Ruleset>>, String> {
    let home = home_set(act, scratch, agent, env)?;
    confinement(act.config, &[scratch.to_path_buf(), home], net_port)
}

/// The run's home made ([`run_home`]) and set as `HOME` in `env`.
fn home_set(
    act: &Act<'_>,
    scratch: &Path,
    agent: &crate::config::EffectiveAgent,
    env: &mut Vec<(String, String)>,
) -> Result<std::path::PathBuf, String> {
    let home = run_home(act.config, scratch, &agent.home_files)?;
    set_var(env, "HOME", &home.display().to_string());
    Ok(home)
}

/// The `HOME` of one run: a new private folder in `scratch` holding `files` copied from the
/// runner's home, or the runner's own (`sandbox.agent_home: runner`).
pub(crate) fn run_home(
    config: &Config,
    scratch: &Path,
    files: &[String],
) -> Result<std::path::PathBuf, String> {
    let runner_home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    match config.sandbox.agent_home {
        crate::config::AgentHome::Runner => Ok(runner_home.unwrap_or_else(|| scratch.join("home"))),
        crate::config::AgentHome::Private => {
            let home = scratch.join("home");
            crate::sandbox::home::make(&home, runner_home.as_deref(), files).map_err(|e| {
                format!(
                    "could not make the run's private home {}: {e}\n  fix: check the temp folder (TMPDIR) is writable, or set sandbox.agent_home: runner",
                    home.display()
                )
            })?;
            Ok(home)
        }
    }
}

/// `paths` and the folders `sandbox.writable` adds: all a confined child may write.
pub(crate) fn with_configured(
    config: &Config,
    paths: &[std::path::PathBuf],
) -> Vec<std::path::PathBuf> {
    let extra = config.sandbox.writable.iter().map(std::path::PathBuf::from);
    paths.iter().cloned().chain(extra).collect()
}

/// Sets `key` in a child's environment, replacing an earlier value.
pub(crate) fn set_var(env: &mut Vec<(String, String)>, key: &str, value: &str) {
    env.retain(|(k, _)| k != key);
    env.push((key.to_string(), value.to_string()));
}

/// The Landlock ruleset letting a child write only beneath `writable` and `sandbox.writable`,
/// or `None` when `sandbox.filesystem` is none or Landlock is missing here and not required;
/// with `net_port` (the network's fallback isolation, issue 37), it may connect over TCP only to
/// that port, whatever `sandbox.filesystem` says.
pub(crate) fn confinement(
    config: &Config,
    writable: &[std::path::PathBuf],
    net_port: Option<u16>,
) -> Result<Option<std::sync::Arc<crate::sandbox::landlock::Ruleset>>, String> {
    use crate::config::FilesystemSandbox;
    let sandbox = &config.sandbox;
    let missing = crate::sandbox::in_force(sandbox)
        .into_iter()
        .find(|p| !p.in_force)
        .map(|p| format!("{}: {}", p.name, p.detail));
    if let (true, Some(missing)) = (sandbox.require, &missing) {
        return Err(format!(
            "sandbox.require is true, but a protection is not in force here ({missing})\n  fix: run on Linux 5.13 or newer, or set sandbox.require: false"
        ));
    }
    if sandbox.filesystem == FilesystemSandbox::None {
        if sandbox.require {
            return Err("sandbox.require is true, but sandbox.filesystem is none\n  fix: set sandbox.filesystem: landlock, or sandbox.require: false".to_string());
        }
        let Some(port) = net_port else {
            return Ok(None);
        };
        return crate::sandbox::landlock::Ruleset::build(None, Some(port))
            .map(|r| Some(std::sync::Arc::new(r)))
            .map_err(|e| format!("the network's Landlock rules could not be set up: {e}"));
    }
    let writable = with_configured(config, writable);
    match crate::sandbox::landlock::Ruleset::build(Some(&writable), net_port) {
        Ok(ruleset) => Ok(Some(std::sync::Arc::new(ruleset))),
        Err(e) if sandbox.require => Err(format!(
            "sandbox.require is true, but the Landlock sandbox could not be set up: {e}\n  fix: run on Linux 5.13 or newer, or set sandbox.require: false"
        )),
        Err(e) => {
            tracing::warn!("the agent runs without the Landlock sandbox: {e}");
            Ok(None)
        }
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

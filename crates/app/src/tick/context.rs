//! What a tick (and every command that reads or writes the state) runs in: the repository, the
//! configuration, the time read once, who we are, and the way to the state — read-only copies,
//! and writes under the file lock or by compare-and-swap on a state branch.
//!
//! Not for: a phase's own work (`claim`, `act`, `record`) or any rule: it gathers the
//! observations the engine plans from, and decides nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use super::lock::{process_alive, FileLock};
use super::Failure;
use crate::config::{self, Config, ConfigSource, StoreKind};
use crate::engine::{self, Observations, Plan, Snapshot};
use crate::git::Git;
use crate::model::{AgentId, Mode, TickId};
use crate::statebranch::{LoadError, SaveError, StateRef};
use crate::store::{self, SnapshotLimits, Store};
use crate::time::{Timestamp, MINUTE};

/// Saves tried before a state conflict is reported (exit code 3).
const SAVE_ATTEMPTS: u32 = 12;
/// Saves tried when recording finished work.
const RECORD_ATTEMPTS: u32 = 40;

/// Jittered, growing wait after a lost race: 50 ms × 2^n (capped), plus up to as much again.
fn backoff(attempt: u32) -> std::time::Duration {
    let base = 50u64 << attempt.min(4);
    let jitter = (std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0) as u64)
        % (base + 1);
    std::time::Duration::from_millis(base + jitter)
}

fn state_error(state: &StateRef, detail: &str) -> Failure {
    Failure::tick(format!("state {}: {detail}", state.describe()))
}

/// Where a context comes from: the repository and the overrides a person gave (`--config`,
/// `--mode`, `--now`).
#[derive(Clone, Debug, Default)]
pub struct ContextOptions {
    pub repo: PathBuf,
    /// The configuration file [default: `<repo>/.opentiger.yml`, optional there].
    pub config: Option<PathBuf>,
    /// Overrides `mode` from the configuration.
    pub mode: Option<String>,
    /// Pretend it is this time (RFC 3339).
    pub now: Option<String>,
}

impl ContextOptions {
    /// The configuration file's path as given or defaulted.
    pub fn config_path(&self) -> PathBuf {
        self.config
            .clone()
            .unwrap_or_else(|| Path::new(&self.repo).join(".opentiger.yml"))
    }
}

/// A damaged state is the user's to repair (exit code 2, the message says how); anything else is
/// a failure of the tick.
fn load_error(state: &StateRef, e: LoadError) -> Failure {
    match e {
        LoadError::Damaged { .. } => Failure::usage(e.to_string()),
        LoadError::Git(_) | LoadError::File(_) => state_error(state, &e.to_string()),
    }
}

#[derive(Clone)]
pub struct Context {
    pub repo: PathBuf,
    pub config: Config,
    pub config_source: ConfigSource,
    pub now: Timestamp,
    pub agent_id: AgentId,
    pub tick_id: TickId,
    /// `--now` was given: the clock never moves (tests, what-if questions).
    pub fixed_clock: bool,
    /// What this tick's earlier rounds did, and its deadline (issue 38); for a command that is
    /// not a tick, the deadline a tick starting now would have.
    pub so_far: crate::engine::rounds::TickSoFar,
}

impl Context {
    pub fn load(options: &ContextOptions) -> Result<Context, Failure> {
        let (config, config_source) = load_config(options)?;
        let now = match &options.now {
            Some(text) => {
                Timestamp::parse_rfc3339(text).map_err(|e| Failure::usage(format!("--now: {e}")))?
            }
            None => Timestamp::now(),
        };
        Ok(Context {
            repo: options.repo.clone(),
            config_source,
            now,
            agent_id: AgentId::detect(|k| std::env::var(k).ok()),
            tick_id: TickId::fresh(now.0),
            fixed_clock: options.now.is_some(),
            so_far: crate::engine::rounds::TickSoFar {
                deadline: (config.limits.tick_minutes > 0)
                    .then(|| now.plus(i64::from(config.limits.tick_minutes) * MINUTE)),
                ..Default::default()
            },
            config,
        })
    }

    /// Redacts the values of every variable an agent may see, and forge tokens.
    pub fn redactor(&self) -> crate::redact::Redactor {
        self.redactor_with(crate::credentials::lookup)
    }

    /// [`Self::redactor`] with the values `lookup` gives: `work --output`, which holds no token,
    /// reads the environment alone and never asks `credentials`.
    pub fn redactor_with(
        &self,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> crate::redact::Redactor {
        use crate::config::AgentRole;
        // Model keys are the runner's whether an agent lists them or not (issue 37), a
        // configured provider's too (issue 50).
        let mut names = crate::egress::model_keys(&self.config);
        for role in AgentRole::ALL {
            for agent in self.config.agents.chain(role) {
                names.extend(agent.env_passthrough);
            }
        }
        crate::redact::Redactor::from_env(&names, lookup)
    }

    /// The time now: the clock again after slow work, unless `--now` fixed it.
    pub fn later(&self) -> Timestamp {
        if self.fixed_clock {
            self.now
        } else {
            Timestamp::now().max(self.now)
        }
    }

    /// The state file of `state.store: file`.
    pub fn state_path(&self) -> Result<PathBuf, Failure> {
        match self.config.store_kind() {
            StoreKind::File => Ok(store::file_path(&self.repo, &self.config.state.path)),
            StoreKind::Branch => Err(Failure::usage("the state is on a branch, not in a file")),
        }
    }

    /// The state ref of `state.store: branch`.
    pub fn state_ref(&self) -> StateRef {
        let s = &self.config.state;
        StateRef::new(&self.repo, &s.branch, &s.remote, s.keep_commits)
    }

    /// Opens the state for reading, never copying it into memory: the file in place,
    /// read-only, or a branch's state assembled into a private file.
    pub fn read_store(&self) -> Result<Store, Failure> {
        match self.config.store_kind() {
            StoreKind::File => Ok(Store::open_read_only(&self.state_path()?)?),
            StoreKind::Branch => self.read_branch(StateRef::load_into),
        }
    }

    /// A branch's state, loaded by `load` into a private file: reading it changes nothing
    /// anywhere.
    fn read_branch(
        &self,
        load: impl Fn(&StateRef, &Path) -> Result<crate::statebranch::Version, LoadError>,
    ) -> Result<Store, Failure> {
        let state = self.state_ref();
        let scratch = tempfile::tempdir()?;
        let file = scratch.path().join("state.sqlite");
        load(&state, &file).map_err(|e| load_error(&state, e))?;
        Ok(Store::open_file(&file)?.owning(scratch))
    }

    /// [`Self::read_store`] with no network: a branch's state as the checkout fetched it
    /// ([`StateRef::load_fetched_into`]); a file in place. For a job that holds no token.
    pub fn read_fetched_store(&self) -> Result<Store, Failure> {
        match self.config.store_kind() {
            StoreKind::File => self.read_store(),
            StoreKind::Branch => self.read_branch(StateRef::load_fetched_into),
        }
    }

    /// A private copy of the state, to change without touching what is stored (a dry run that
    /// applies what it read from GitHub): the file copied on disk, never into memory, or the
    /// branch's state assembled into a private file.
    pub fn scratch_store(&self) -> Result<Store, Failure> {
        match self.config.store_kind() {
            StoreKind::File => {
                let path = self.state_path()?;
                let scratch = tempfile::tempdir()?;
                let file = scratch.path().join("state.sqlite");
                match std::fs::copy(&path, &file) {
                    Ok(_) => {}
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    Err(e) => {
                        return Err(Failure::tick(format!(
                            "could not copy the state {}: {e}",
                            path.display()
                        )))
                    }
                }
                Ok(Store::open_file(&file)?.owning(scratch))
            }
            StoreKind::Branch => self.read_store(),
        }
    }

    /// Changes the state with `change`, atomically: a file under its lock, or a branch by
    /// compare-and-swap. On a branch, a save that lost the race loads the latest state and runs
    /// `change` again (it must only change state), with jittered backoff, a bounded number of
    /// times; then exit code 3 and nothing lost (DESIGN §5).
    pub fn write_state<T>(
        &self,
        what: &str,
        change: impl FnMut(&mut Store) -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        self.write_state_with(what, SAVE_ATTEMPTS, change)
    }

    /// [`Self::write_state`] with more patience: recording finished work must not be given up
    /// lightly (the work is done; losing its record costs a rerun).
    pub fn record_state<T>(
        &self,
        what: &str,
        change: impl FnMut(&mut Store) -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        self.write_state_with(what, RECORD_ATTEMPTS, change)
    }

    fn write_state_with<T>(
        &self,
        what: &str,
        attempts: u32,
        mut change: impl FnMut(&mut Store) -> Result<T, Failure>,
    ) -> Result<T, Failure> {
        match self.config.store_kind() {
            StoreKind::File => {
                let path = self.state_path()?;
                let _lock = FileLock::acquire(&path)?;
                let mut store = Store::open_file(&path)?;
                change(&mut store)
            }
            StoreKind::Branch => {
                let state = self.state_ref();
                let scratch = tempfile::tempdir()?;
                let file = scratch.path().join("state.sqlite");
                for attempt in 0..attempts {
                    // A file, not memory: a large state costs disk pages, not resident memory.
                    let loaded = state.load_into(&file).map_err(|e| load_error(&state, e))?;
                    let mut store = Store::open_file(&file)?;
                    let before = store.change_count();
                    let result = change(&mut store)?;
                    if store.change_count() == before {
                        return Ok(result);
                    }
                    let summary =
                        crate::report::state_summary(&store, self.now).unwrap_or_default();
                    drop(store);
                    let message =
                        format!("opentiger: {what} ({} by {})", self.tick_id, self.agent_id);
                    match state.save_file(&loaded, &file, &summary, &message) {
                        Ok(saved) => {
                            tracing::info!(commit = %saved.commit, squashed = saved.squashed, chunks = saved.chunks_written, of = saved.chunks_total, "state saved");
                            return Ok(result);
                        }
                        Err(SaveError::Conflict(_)) => {
                            tracing::info!(attempt, "state save lost a race; loading again");
                            std::thread::sleep(backoff(attempt));
                        }
                        Err(e @ (SaveError::Git(_) | SaveError::File(_))) => {
                            return Err(state_error(&state, &e.to_string()))
                        }
                    }
                }
                Err(Failure {
                    code: 3,
                    message: format!(
                        "{}: could not save the state after {attempts} attempts: other ticks kept saving first. Nothing was lost (this command's changes were not applied)\n  fix: run it again; if it keeps happening, use a `concurrency:` group for the workflow",
                        state.describe()
                    ),
                })
            }
        }
    }

    /// Facts about the world that the engine needs, gathered without the network.
    pub fn observations(&self, store: &Store) -> Result<Observations, Failure> {
        let requirement = self.requirement_text();
        let requirement_present = requirement.as_deref().is_some_and(|t| !t.trim().is_empty());
        let dead_agents = dead_local_holders(store)?;
        let github = self.config.mode == crate::model::Mode::Github;
        let plan_signature = requirement
            .filter(|t| !t.trim().is_empty())
            .map(|text| self.plan_inputs(&text, store))
            .transpose()?
            .map(|inputs| inputs.signature);
        // How CI starts here (github mode): the workflow files and the token's kind.
        let ci_setup = if github {
            crate::workflows::ci_setup(
                &crate::workflows::read(&self.repo),
                crate::workflows::is_workflow_token(crate::credentials::lookup),
            )
        } else {
            crate::engine::stall::CiSetup::default()
        };
        Ok(Observations {
            pull_requests: store.pull_states()?,
            pull_checks: if github {
                store.open_pull_checks()?
            } else {
                BTreeMap::new()
            },
            expected_checks: store
                .expected_checks(
                    self.config.merge.required_checks.as_deref(),
                    &self.config.base_branch,
                )?
                .or_workflows(&ci_setup.push_workflows),
            ci_setup,
            // Elsewhere only with a review window, which keeps approvals too (issue 38).
            judge_approved: if github || self.config.merge.review_window_minutes.unwrap_or(0) > 0 {
                store.judge_approved_heads()?
            } else {
                Default::default()
            },
            ci_heals: store.ci_heals()?,
            pull_bases: store.pull_bases()?,
            retargeted: store.retargeted_pulls()?,
            spend: crate::engine::Spend {
                today_usd: store.spend_on(&self.now.day())?,
                by_family: store.spend_by_family()?,
                task_budgets: store.task_budgets()?,
            },
            paused_by: store.repo_pause()?.map(|p| p.by),
            plan_signature,
            executor_waits: store.executor_waits()?,
            requirement_present,
            // Issues and imported PRs are tasks by now (observe ran first): they count in `L`
            // and the judge backlog, see `engine::preflight`.
            issue_backlog: 0,
            open_prs: 0,
            dead_agents,
            unrunnable: BTreeMap::new(), // filled in from the snapshot's tasks by `plan`
            reviews: if github {
                store.all_pull_reviews()?
            } else {
                BTreeMap::new()
            },
            pull_labels: if github {
                store.open_pull_labels()?
            } else {
                BTreeMap::new()
            },
            holds: if github {
                store.holds()?
            } else {
                BTreeMap::new()
            },
            tick: self.so_far.clone(),
            checkout_holds: BTreeMap::new(), // filled in from the snapshot's tasks by `plan`
        })
    }

    /// What the runner needs to act for this command: the repository, the configuration, and
    /// the given templates, redactor and executor parks.
    pub fn act<'a>(
        &'a self,
        templates: &'a crate::prompt::Templates,
        redactor: &'a crate::redact::Redactor,
        executor_waits: &'a crate::engine::fallback::ExecutorWaits,
        learned: &'a crate::model::learned::Learned,
    ) -> crate::runner::Act<'a> {
        crate::runner::Act {
            repo: &self.repo,
            config: &self.config,
            redactor,
            templates,
            state_file: self.state_path().ok(),
            executor_waits,
            now: self.now,
            delivery: crate::runner::Delivery::Push,
            learned,
            stop: None,
        }
    }

    /// The requirement document, if it exists.
    pub fn requirement_text(&self) -> Option<String> {
        std::fs::read_to_string(self.repo.join(&self.config.requirement)).ok()
    }

    /// What a plan made now would be made from, and its signature: the requirement's content
    /// and, for an agent planner (which looks at the code), the base branch's head. The
    /// deterministic fallback depends on the requirement alone, so a merge does not replan it.
    /// A person's `/opentiger replan` salts the signature, so the same inputs count as new.
    pub fn plan_inputs(&self, requirement: &str, store: &Store) -> Result<PlanInputs, Failure> {
        let requirement_hash = crate::planner::content_hash(requirement);
        let base_head = Git::new(&self.repo)
            .resolve(&format!("refs/heads/{}", self.config.base_branch))
            .ok()
            .flatten()
            .unwrap_or_else(|| "__UNBORN_HEAD__".to_string());
        let agent = self.planner_agent_usable();
        let mut signature = if agent {
            crate::model::short_hash(&["agent", &requirement_hash, &base_head])
        } else {
            crate::model::short_hash(&["fallback", &requirement_hash])
        };
        if let Some(replan) = store.replan_salt()? {
            signature = crate::model::short_hash(&["replan", &signature, &replan]);
        }
        Ok(PlanInputs {
            requirement_hash,
            base_head,
            signature,
            agent,
        })
    }

    /// Whether the planner agent can run here (configured on and an executor of its chain
    /// available).
    pub fn planner_agent_usable(&self) -> bool {
        let role = crate::config::AgentRole::Planner;
        self.config.planner.agent
            && self
                .config
                .agents
                .chain(role)
                .iter()
                .any(|agent| crate::executor::build(agent, role, &self.repo).is_ok())
    }

    /// Snapshot and plan of the state as it is now.
    pub fn plan(&self, store: &Store) -> Result<(Snapshot, Plan), Failure> {
        let observations = self.observations(store)?;
        let limits = SnapshotLimits {
            runs_per_task: self.config.retry.repeated_signature_threshold.max(6),
        };
        let mut snapshot = store.load_snapshot(
            self.tick_id.clone(),
            self.agent_id.clone(),
            observations,
            limits,
        )?;
        snapshot.observations.unrunnable = unrunnable(&snapshot.tasks, &self.config);
        snapshot.observations.checkout_holds =
            super::checkout::holds(&self.repo, &self.config, &snapshot);
        let plan = engine::plan(&snapshot, &self.config, self.now);
        Ok((snapshot, plan))
    }
}

fn load_config(options: &ContextOptions) -> Result<(Config, ConfigSource), Failure> {
    let (mut config, source) = config::load_checked(
        &options.config_path(),
        options.config.is_some(),
        &crate::verify::config_problem,
    )?;
    if let Some(mode) = &options.mode {
        config.mode = mode
            .parse::<Mode>()
            .map_err(|e| Failure::usage(format!("--mode: {e}")))?;
    }
    Ok((config, source))
}

/// Queued tasks whose checks cannot run (the runner's own parsers), each with why.
fn unrunnable(
    tasks: &[crate::model::Task],
    config: &Config,
) -> BTreeMap<crate::model::TaskId, String> {
    tasks
        .iter()
        .filter(|t| t.status == crate::model::TaskStatus::Queued)
        .filter_map(|t| {
            let problems = crate::runner::task_problems(t, config);
            let first = problems.first()?;
            let entry = match first.field {
                crate::runner::TaskField::Commands => t.commands.get(first.index),
                crate::runner::TaskField::AllowedPaths => t.allowed_paths.get(first.index),
            };
            let field = match first.field {
                crate::runner::TaskField::Commands => "commands",
                crate::runner::TaskField::AllowedPaths => "allowed_paths",
            };
            let entry = entry.map(String::as_str).unwrap_or_default();
            Some((
                t.id.clone(),
                format!("{field} entry `{entry}`: {}", first.message),
            ))
        })
        .collect()
}

/// Lease holders on this machine whose process has ended: their leases are reclaimed at once
/// instead of waiting for expiry.
fn dead_local_holders(store: &Store) -> Result<BTreeSet<AgentId>, Failure> {
    let host = AgentId::detect(|k| std::env::var(k).ok());
    let this_host = host.local_parts().map(|(h, _)| h.to_string());
    let mut dead = BTreeSet::new();
    for holder in store.lease_holders()? {
        if let Some((h, pid)) = holder.local_parts() {
            if Some(h) == this_host.as_deref() && pid != std::process::id() && !process_alive(pid) {
                dead.insert(holder.clone());
            }
        }
    }
    Ok(dead)
}

/// What a plan is made from.
#[derive(Clone, Debug, PartialEq)]
pub struct PlanInputs {
    pub requirement_hash: String,
    pub base_head: String,
    pub signature: String,
    /// The planner agent will be asked (else the deterministic fallback).
    pub agent: bool,
}

//! The pure decision engine: `plan(snapshot, config, now) -> Plan`.
//!
//! Everything the tick decides is decided here, from plain values: the state snapshot, what was
//! observed of the outside world, the configuration and the time. No I/O, no clock, no randomness
//! (jitter is a hash). The shell applies the plan; `tick --dry-run` prints it.
//!
//! Order of a plan (DESIGN §3 step 3): recovery (leases, failed and blocked tasks), preflight
//! (R/I/P/L gates, read from the tasks as loaded), judge work, the replan gate, dispatch (or,
//! when paused, a hold on every queued task). Every non-terminal task gets at least one
//! decision, so the plan doubles as the "next action" of each task in `status`.
//!
//! Not for: applying the plan (`Store::apply_plan`, from `tick::claim`), running the work it
//! claims (`runner`), or reading GitHub (`tick::observe`, `tick::people`).

pub mod advice;
pub mod approval;
pub mod backoff;
pub mod checkboxes;
pub mod checks;
pub mod ci_start;
pub mod classify;
pub mod commands;
mod dispatch;
pub mod escalation;
pub mod fairness;
pub mod fallback;
mod followup;
pub mod gate;
pub mod hold;
pub mod import;
pub mod learned;
pub mod objection;
pub mod outcome;
mod planner_gate;
mod preflight;
mod recovery;
pub mod research;
pub mod rounds;
pub mod scan;
pub mod stall;
pub mod stop;
pub mod verdict;
pub mod waits;

use std::collections::{BTreeMap, BTreeSet};

use serde::Serialize;

use crate::config::Config;
use crate::model::{
    AgentId, Attempts, Lease, PlanHistory, Run, RunId, RunStatus, Task, TaskId, TaskState,
    TaskStatus, TickId,
};
use crate::time::Timestamp;

pub use dispatch::{tick_budget_spent, HELD_BACK};
pub use hold::{Hold, HoldKind};
pub use preflight::{preflight, Preflight, PreflightInputs};

/// What the engine sees: the state plus observations of the world.
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub tick_id: TickId,
    pub agent_id: AgentId,
    /// Every non-terminal task, plus terminal tasks that active ones refer to.
    pub tasks: Vec<Task>,
    /// Recent runs of those tasks (at least the latest few per task and every running run).
    pub runs: Vec<Run>,
    pub leases: Vec<Lease>,
    /// Planner attempts so far.
    pub plans: PlanHistory,
    pub observations: Observations,
}

/// The spend ledger as the budgets need it: today's total and each task family's total over all
/// attempts and reviews (USD; issue 37: a budget covers a task with its reworks and AutoFixes),
/// keyed by the family (`fairness::family_of`), so a child made in this very plan is held too.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Spend {
    pub today_usd: f64,
    pub by_family: BTreeMap<TaskId, f64>,
    /// Budgets a person set for single tasks (`/opentiger budget <usd>`), over
    /// `budget.per_task_usd`.
    pub task_budgets: BTreeMap<TaskId, f64>,
}

/// Facts about the outside world, gathered by the shell before planning.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Observations {
    /// The requirement document exists and is not empty (preflight `R`).
    pub requirement_present: bool,
    /// Open backlog issues not yet turned into tasks (preflight `I`).
    pub issue_backlog: u32,
    /// Open PRs the judge should look at (part of preflight `P`).
    pub open_prs: u32,
    /// Lease holders known to have ended (a finished workflow run, a dead local process).
    pub dead_agents: BTreeSet<AgentId>,
    /// The state of the pull requests of tasks waiting on one (github mode), by number.
    pub pull_requests: BTreeMap<u64, PullState>,
    /// What CI last said about the head of each open PR (github mode), by number.
    pub pull_checks: BTreeMap<u64, gate::CiObservation>,
    /// The checks a PR must pass, and where that was learned (github mode).
    pub expected_checks: gate::ExpectedChecks,
    /// How CI gets started here (token kind, workflow files), for a stalled PR's diagnosis and
    /// for starting CI on a head that passed the scan (`scan.ci`).
    pub ci_setup: stall::CiSetup,
    /// Heads of active tasks the judge approved: the approval stands for its head (issue 36:
    /// under `scan.ci: after-review` CI starts on such a head, and it is merged once its checks
    /// pass; issue 38: through the review window), and the merge asks no agent again.
    pub judge_approved: BTreeSet<String>,
    /// What was done about PR heads whose expected checks never appeared, by PR number.
    pub ci_heals: BTreeMap<u64, stall::CiHeal>,
    /// The base branch of each task PR as last seen (github mode), by number.
    pub pull_bases: BTreeMap<u64, String>,
    /// PRs already retargeted to the configured base, with the base they were moved from.
    pub retargeted: BTreeMap<u64, String>,
    /// What was spent, for the budgets (DESIGN §9).
    pub spend: Spend,
    /// Signature of what the planner would plan now (requirement content, and base head for an
    /// agent planner); `None` without a requirement.
    pub plan_signature: Option<String>,
    /// Executors parked on a quota, by key (`agents.<role>.fallbacks` run meanwhile).
    pub executor_waits: fallback::ExecutorWaits,
    /// Queued tasks whose checks cannot run whatever the agent does (a verification command
    /// the runner cannot plan, a path pattern the policy cannot use), with what is wrong.
    pub unrunnable: BTreeMap<TaskId, String>,
    /// Who paused the repository (`/opentiger pause` on the dashboard): nothing new is claimed
    /// and no planner runs; what runs finishes and reviews go on.
    pub paused_by: Option<String>,
    /// Trusted people's reviews of task PRs (github mode), by PR number, oldest first.
    pub reviews: BTreeMap<u64, Vec<crate::model::PullReview>>,
    /// The labels on each open PR (github mode), by number: `merge.hold_labels` hold a merge.
    pub pull_labels: BTreeMap<u64, Vec<String>>,
    /// Who holds an issue's or PR's merge with `/opentiger hold` not yet released, by number.
    pub holds: BTreeMap<u64, String>,
    /// What this tick's earlier rounds did (issue 38); empty for its first round.
    pub tick: rounds::TickSoFar,
    /// local-git, the base checked out in the repository: the tasks awaiting the judge whose
    /// merge would overwrite a person's uncommitted files now, with those files (issue 49).
    pub checkout_holds: BTreeMap<TaskId, Vec<String>>,
}

/// Where a task's pull request stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PullState {
    Open,
    Merged,
    /// Closed without being merged.
    Closed,
}

/// Everything the next tick would do, in order.
#[derive(Clone, Debug, Serialize)]
pub struct Plan {
    pub now: Timestamp,
    pub preflight: Preflight,
    pub decisions: Vec<Decision>,
    /// What held each queued task back this tick (issue 27 item 3), by task.
    pub holds: BTreeMap<TaskId, Hold>,
    /// The longest the work this plan starts may take, one piece after another (issue 38).
    pub bound_ms: crate::time::Millis,
    /// Every active task that cannot move until a person acts, as it is now, with the step
    /// (issue 49).
    pub waiting_on_person: BTreeMap<TaskId, waits::PersonStep>,
}

/// One decision: what happens to what, and why.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Decision {
    pub task_id: Option<TaskId>,
    /// The rule that decided, e.g. `recovery.lease_expired`, `dispatch.claim`.
    pub rule: &'static str,
    pub action: Action,
    /// For people: why, with the numbers that mattered.
    pub reason: String,
    /// The engine's own figures behind it, shown with `-v` only (issue 40): a claim's dispatch
    /// score, priority, risk and lane.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Action {
    /// Move the task to another state, optionally updating its counters and cooldown.
    Transition {
        #[serde(serialize_with = "ser_state")]
        from: TaskState,
        #[serde(serialize_with = "ser_state")]
        to: TaskState,
        attempts: Option<Attempts>,
        /// `Some(None)` clears the cooldown.
        next_attempt_at: Option<Option<Timestamp>>,
    },
    /// Drop a lease (expired, holder gone, or task no longer running).
    ReleaseLease { run_id: RunId },
    /// Mark a run that nobody is executing any more as cancelled.
    CancelRun { run_id: RunId },
    /// Insert a new task (a rework child); its id is derived from its parent, so re-deciding
    /// creates nothing twice.
    CreateTask { task: Box<Task> },
    /// Lease the task to this tick and start a run.
    Claim {
        run_id: RunId,
        expires_at: Timestamp,
    },
    /// Claim a successful run for review (CAS on its judgement version) and lease its task.
    /// With `merge_after`, the review window is open until then: an approval is recorded and
    /// the merge waits (issue 38).
    Judge {
        run_id: RunId,
        expires_at: Timestamp,
        /// `scan.ci: after-review` (issue 36): reviewed before any CI ran on the head; an
        /// approval is recorded, not merged (CI starts on it, the merge follows its checks).
        before_ci: bool,
        /// The review window is open until then: an approval is recorded, the merge waits.
        merge_after: Option<Timestamp>,
    },
    /// A review was claimed but never concluded (its tick died): make the run reviewable again.
    ResetJudgeClaim { run_id: RunId },
    /// Turn the requirement into tasks.
    StartPlanner,
    /// Open the GitHub issue that mirrors a planned task (github mode).
    OpenIssue,
    /// Close the task's open PR with a comment: its goal is being recreated from the base as
    /// `superseded_by` (github mode).
    ClosePull { pr: u64, superseded_by: TaskId },
    /// Expected CI never started on the PR's head: record that, comment on the PR once for the
    /// head and start the workflows `dispatch` names for the head's branch (github mode).
    HealCi {
        pr: u64,
        head_sha: String,
        branch: String,
        comment: String,
        dispatch: Vec<String>,
    },
    /// `scan.ci` (issue 36): the head passed the scan (and, under `after-review`, its review):
    /// record it, then start `workflows` for the head's branch, once per head (github mode).
    StartCi {
        pr: u64,
        head_sha: String,
        branch: String,
        workflows: Vec<String>,
    },
    /// Point the task's open PR at the configured base branch (its base was renamed or
    /// deleted); recorded, so it is tried once (github mode).
    RetargetPull { pr: u64, from: String, to: String },
    /// Nothing changes now; the reason says what the task waits for.
    Wait { until: Option<Timestamp> },
}

fn ser_state<S: serde::Serializer>(state: &TaskState, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&state.to_string())
}

impl Decision {
    /// Does applying this decision change the state?
    pub fn writes(&self) -> bool {
        match self.action {
            Action::Wait { .. } => false,
            Action::Transition { .. }
            | Action::ReleaseLease { .. }
            | Action::CancelRun { .. }
            | Action::CreateTask { .. }
            | Action::Claim { .. }
            | Action::Judge { .. }
            | Action::ResetJudgeClaim { .. }
            | Action::StartPlanner
            | Action::OpenIssue
            | Action::ClosePull { .. }
            | Action::HealCi { .. }
            | Action::StartCi { .. }
            | Action::RetargetPull { .. } => true,
        }
    }
}

impl Plan {
    /// The decisions about one task, in order.
    pub fn for_task<'a>(&'a self, id: &'a TaskId) -> impl Iterator<Item = &'a Decision> + 'a {
        self.decisions
            .iter()
            .filter(move |d| d.task_id.as_ref() == Some(id))
    }

    /// When and why dispatch holds this queued task because a budget is spent, if it does
    /// (issue 17 item 5: such a task is `paused`, not waiting for its turn). No time: only a
    /// person lifts it (the task's own budget); a time: the day's budget, lifted at midnight.
    pub fn budget_hold<'a>(&'a self, id: &'a TaskId) -> Option<(Option<Timestamp>, &'a str)> {
        self.for_task(id).find_map(|d| {
            let Action::Wait { until } = d.action else {
                return None;
            };
            (d.rule == dispatch::BUDGET_WAIT).then_some((until, d.reason.as_str()))
        })
    }

    /// The one line saying what held queued tasks back when fewer runs start than
    /// `limits.max_runs_per_tick` allows (issue 27 item 3).
    pub fn held_back(&self) -> Option<&str> {
        self.decisions
            .iter()
            .find(|d| d.rule == HELD_BACK)
            .map(|d| d.reason.as_str())
    }

    /// Why people hold the merge of the task's PR, when the plan waits for them (issue 26).
    pub fn people_hold<'a>(&'a self, id: &'a TaskId) -> Option<&'a str> {
        self.for_task(id).find_map(|d| {
            let Action::Wait { .. } = d.action else {
                return None;
            };
            (d.rule == objection::HELD_RULE).then_some(d.reason.as_str())
        })
    }

    pub fn claims(&self) -> impl Iterator<Item = &Decision> {
        self.decisions
            .iter()
            .filter(|d| matches!(d.action, Action::Claim { .. }))
    }
}

/// The working view the rules read and update as they decide, so a later rule sees the effect
/// of an earlier one (a reclaimed task can be dispatched in the same plan).
pub(crate) struct Working<'a> {
    pub snapshot: &'a Snapshot,
    pub config: &'a Config,
    pub now: Timestamp,
    pub tasks: BTreeMap<TaskId, Task>,
    /// Runs per task, newest first.
    pub runs: BTreeMap<TaskId, Vec<&'a Run>>,
    pub leases: BTreeMap<TaskId, &'a Lease>,
    pub decisions: Vec<Decision>,
    /// Tasks whose judge lease recovery released in this plan.
    pub released_judge_leases: Vec<TaskId>,
    /// What held each queued task back (dispatch).
    pub holds: BTreeMap<TaskId, Hold>,
    /// The bounds of the work this plan starts, summed (issue 38).
    pub round_ms: crate::time::Millis,
}

impl<'a> Working<'a> {
    fn new(snapshot: &'a Snapshot, config: &'a Config, now: Timestamp) -> Self {
        let tasks = snapshot
            .tasks
            .iter()
            .map(|t| (t.id.clone(), t.clone()))
            .collect();
        let mut runs: BTreeMap<TaskId, Vec<&Run>> = BTreeMap::new();
        for run in &snapshot.runs {
            runs.entry(run.task_id.clone()).or_default().push(run);
        }
        for list in runs.values_mut() {
            list.sort_by(|a, b| b.started_at.cmp(&a.started_at).then(b.id.cmp(&a.id)));
        }
        let leases = snapshot
            .leases
            .iter()
            .map(|l| (l.task_id.clone(), l))
            .collect();
        Working {
            snapshot,
            config,
            now,
            tasks,
            runs,
            leases,
            decisions: Vec::new(),
            released_judge_leases: Vec::new(),
            holds: BTreeMap::new(),
            round_ms: 0,
        }
    }

    /// Counts work that may take `bound` into this round, or says why it would not end before
    /// the tick's deadline (`rounds::fits`).
    pub fn take_time(&mut self, bound: crate::time::Millis) -> Result<(), rounds::TooLong> {
        rounds::fits(
            &self.snapshot.observations.tick,
            self.round_ms,
            bound,
            self.now,
        )?;
        self.round_ms += bound;
        Ok(())
    }

    pub fn task_runs(&self, id: &TaskId) -> &[&'a Run] {
        self.runs.get(id).map_or(&[], Vec::as_slice)
    }

    /// The newest run that ended in failure or cancellation.
    pub fn last_failed_run(&self, id: &TaskId) -> Option<&'a Run> {
        self.task_runs(id)
            .iter()
            .copied()
            .find(|r| matches!(r.status, RunStatus::Failed | RunStatus::Cancelled))
    }

    pub fn ids_in(&self, state: TaskState) -> Vec<TaskId> {
        self.tasks
            .values()
            .filter(|t| t.state() == state)
            .map(|t| t.id.clone())
            .collect()
    }

    pub fn ids_with_status(&self, status: TaskStatus) -> Vec<TaskId> {
        self.tasks
            .values()
            .filter(|t| t.status == status)
            .map(|t| t.id.clone())
            .collect()
    }

    fn push(
        &mut self,
        task_id: Option<&TaskId>,
        rule: &'static str,
        action: Action,
        reason: String,
    ) {
        self.decisions.push(Decision {
            task_id: task_id.cloned(),
            rule,
            action,
            reason,
            detail: None,
        });
    }

    /// Records a transition and applies it to the working view.
    pub fn transition(
        &mut self,
        id: &TaskId,
        to: TaskState,
        attempts: Option<Attempts>,
        next_attempt_at: Option<Option<Timestamp>>,
        rule: &'static str,
        reason: String,
    ) {
        let Some(task) = self.tasks.get_mut(id) else {
            return;
        };
        let from = task.state();
        task.status = to.status;
        task.block_reason = to.reason;
        task.status_reason = Some(reason.clone());
        if let Some(a) = &attempts {
            task.attempts = a.clone();
        }
        if let Some(n) = next_attempt_at {
            task.next_attempt_at = n;
        }
        self.push(
            Some(id),
            rule,
            Action::Transition {
                from,
                to,
                attempts,
                next_attempt_at,
            },
            reason,
        );
    }

    /// Records what held a queued task back this tick.
    pub fn hold(&mut self, id: &TaskId, hold: Hold) {
        self.holds.insert(id.clone(), hold);
    }

    pub fn wait(
        &mut self,
        id: &TaskId,
        until: Option<Timestamp>,
        rule: &'static str,
        reason: String,
    ) {
        self.push(Some(id), rule, Action::Wait { until }, reason);
    }

    pub fn decide(
        &mut self,
        id: Option<&TaskId>,
        rule: &'static str,
        action: Action,
        reason: String,
    ) {
        if let Action::CreateTask { task } = &action {
            self.tasks.insert(task.id.clone(), (**task).clone());
        }
        self.push(id, rule, action, reason);
    }

    fn has_decision(&self, id: &TaskId) -> bool {
        self.decisions
            .iter()
            .any(|d| d.task_id.as_ref() == Some(id))
    }
}

/// Decides the next tick.
pub fn plan(snapshot: &Snapshot, config: &Config, now: Timestamp) -> Plan {
    let mut w = Working::new(snapshot, config, now);
    let inputs = PreflightInputs::from_tasks(w.tasks.values(), &snapshot.observations);
    let gates = preflight(&inputs);

    // Recovery always runs: it only acts on what exists, and a stray lease or run must be cleaned
    // up even when the gates say there is nothing to do (`start_cycle_manager` is reported, not
    // needed as a switch: a tick has no process to start).
    recovery::recover(&mut w);
    if gates.start_judge {
        recovery::judge_work(&mut w);
    }
    match &snapshot.observations.paused_by {
        // Issue 17: a paused repository claims nothing new; queued tasks say who paused it.
        Some(by) => dispatch::hold_for_pause(&mut w, by),
        None => {
            if gates.start_planner {
                planner_gate::planner_gate(&mut w, &inputs);
            }
            if gates.start_dispatcher {
                dispatch::dispatch(&mut w);
            }
        }
    }
    explain_remaining(&mut w, &gates);
    fallback::explain_waits(&mut w);
    let waiting_on_person = waits::on_person(&snapshot.tasks, &w.decisions, config.mode);
    Plan {
        now,
        preflight: gates,
        decisions: w.decisions,
        holds: w.holds,
        bound_ms: w.round_ms,
        waiting_on_person,
    }
}

/// Gives every non-terminal task without a decision a `Wait` that says what it waits for.
fn explain_remaining(w: &mut Working<'_>, gates: &Preflight) {
    let ids: Vec<TaskId> = w
        .tasks
        .values()
        .filter(|t| !t.status.is_terminal())
        .map(|t| t.id.clone())
        .collect();
    for id in ids {
        if w.has_decision(&id) {
            continue;
        }
        let task = &w.tasks[&id];
        let (until, reason) = recovery::waiting_reason(w, task, gates);
        w.wait(&id, until, "explain.wait", reason);
    }
}

#[cfg(test)]
mod dispatch_tests;
#[cfg(test)]
mod fairness_tests;
#[cfg(test)]
mod import_tests;
#[cfg(test)]
mod outcome_tests;
#[cfg(test)]
mod planner_tests;
#[cfg(test)]
mod recovery_tests;
// Compiled in every build, not behind a feature: the application's and the store's unit tests
// use it, and a feature turned on by their dev-dependencies would make `cargo test` build the
// engine (and all above it) a second time, apart from `cargo run`'s. The binary links none of it.
#[doc(hidden)]
pub mod testkit;

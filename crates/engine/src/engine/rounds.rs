//! A tick's rounds (issue 38): after recording a round the tick plans again and goes on while
//! the plan starts work that needs nothing from outside — a run, a review (with its merge), the
//! planner — and that work can end before the tick's deadline. These are the rules of that:
//! what earlier rounds did that the next plan must count ([`TickSoFar`]: runs against
//! `limits.max_runs_per_tick`, families that had their turn, heads already reviewed, the
//! planner, the tick's spend), the longest each kind of work may take (its bound: agent timeout
//! plus verification allowance), whether it fits in the time left, whether a plan starts work
//! at all, and the review window that keeps an approved PR open for people before its merge.
//!
//! Waiting for CI, a person, a quota, a cooldown or the review window is the outside: such a
//! plan starts nothing, and the tick ends. The loop is bounded: every round starts work, runs
//! are capped per tick, a head is reviewed at most once per tick, the planner runs at most once.
//!
//! Not for: running rounds or reading the clock (that is `tick::rounds`; the shell supplies
//! `now` and the deadline).

use std::collections::BTreeSet;

use serde::Serialize;

use super::{Action, Plan};
use crate::config::{AgentRole, Config};
use crate::model::{Run, RunId, Task, TaskId};
use crate::time::{Millis, Timestamp, MINUTE, SECOND};

/// The rule of a wait for the tick's time: the work would not end before the deadline.
pub const TIME_RULE: &str = "tick.time";
/// The rule of a wait for a head already reviewed in this tick.
pub const REVIEWED_RULE: &str = "judge.reviewed_this_tick";
/// The rule of the wait of an approved PR inside its review window.
pub const WINDOW_RULE: &str = "merge.review_window";

/// What the tick's earlier rounds did, as the next round's plan needs it (all empty for the
/// first round, and for commands that are not a tick).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TickSoFar {
    /// Rounds recorded so far (0: the plan is the first round's).
    pub rounds: u32,
    /// When the tick's work must have ended (`limits.tick_minutes` after it started); `None`:
    /// no limit.
    pub deadline: Option<Timestamp>,
    /// Runs claimed by earlier rounds: `limits.max_runs_per_tick` counts them all.
    pub runs: u32,
    /// Task families that started a run in an earlier round: families take turns across
    /// rounds as they do within one.
    pub families: BTreeSet<TaskId>,
    /// Heads reviewed in an earlier round (run, head): reviewing one again in the same tick is
    /// a loop, not progress.
    pub reviewed: BTreeSet<(RunId, String)>,
    /// The planner ran in an earlier round.
    pub planned: bool,
    /// What earlier rounds' runs spent, for `budget.per_tick_usd`.
    pub spent_usd: f64,
}

/// Work that would not end before the tick's deadline.
#[derive(Clone, Debug, PartialEq)]
pub struct TooLong {
    pub bound: Millis,
    pub left: Millis,
}

impl TooLong {
    /// The words of the wait, naming what sets the bound and what lifts it.
    pub fn text(&self, what: &str) -> String {
        format!(
            "{what} may take {} (its agent's timeout_minutes plus verify.timeout_seconds per \
             verification command), more than the {} left of this tick (limits.tick_minutes): \
             the next tick starts it",
            minutes(self.bound),
            // Whole minutes, rounded down: never more time than there is.
            minutes(self.left.max(0) / MINUTE * MINUTE)
        )
    }

    pub const FIX: &'static str = "raise limits.tick_minutes (with the workflow's \
        timeout-minutes), or lower the agent's timeout_minutes or verify.timeout_seconds";
}

/// `12 min`, `1.5 min`: a bound for people.
pub fn minutes(ms: Millis) -> String {
    let whole = ms / MINUTE;
    if ms % MINUTE == 0 {
        format!("{whole} min")
    } else {
        format!("{:.1} min", ms as f64 / MINUTE as f64)
    }
}

/// Whether work that may take `bound` can start, given the work this plan already started
/// (`planned`, its bounds summed: a round's work runs one piece after another) and the time
/// left before the deadline. The first piece of a tick's work always starts, whatever its
/// bound (as a tick always did before it had rounds: its own timeouts and the job's bound
/// it), so a configuration whose work is longer than a whole tick still makes progress.
pub fn fits(
    so_far: &TickSoFar,
    planned: Millis,
    bound: Millis,
    now: Timestamp,
) -> Result<(), TooLong> {
    let Some(deadline) = so_far.deadline else {
        return Ok(());
    };
    let left = deadline.minus(now) - planned;
    if bound <= left || (so_far.rounds == 0 && planned == 0) {
        Ok(())
    } else {
        Err(TooLong { bound, left })
    }
}

/// The longest an agent of `role` may run: the longest timeout of its chain (a run uses one
/// executor of it).
fn agent_ms(config: &Config, role: AgentRole) -> Millis {
    config
        .agents
        .chain(role)
        .iter()
        .map(|a| i64::try_from(a.timeout().as_millis()).unwrap_or(i64::MAX))
        .max()
        .unwrap_or(0)
}

/// The verification commands a task's checks may run, at most: its own, `verify.commands`,
/// its role's and every `when_changed` rule's (which apply depends on the change), each `&&`
/// piece one command.
pub fn commands_at_most(task: &Task, config: &Config) -> u32 {
    let verify = &config.verify;
    let pieces = |list: &[String]| -> usize { list.iter().map(|c| c.split("&&").count()).sum() };
    let n = pieces(&task.commands)
        + pieces(&verify.commands)
        + verify.by_role.get(&task.role).map_or(0, |c| pieces(c))
        + verify
            .when_changed
            .iter()
            .map(|w| pieces(&w.commands))
            .sum::<usize>();
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// The verification allowance of a task: `verify.timeout_seconds` for each command it may run.
fn verify_ms(task: &Task, config: &Config) -> Millis {
    i64::from(commands_at_most(task, config)) * i64::from(config.verify.timeout_seconds) * SECOND
}

/// The threat scan's detection agent, when it is asked (`scan.agent`), reads each change and
/// text too.
fn detector_ms(config: &Config) -> Millis {
    if config.scan.agent {
        agent_ms(config, AgentRole::Detector)
    } else {
        0
    }
}

/// The longest a run of `task` may take: its agent, the detection agent, its verification.
pub fn run_bound(task: &Task, config: &Config) -> Millis {
    agent_ms(config, AgentRole::Task(task.role)) + detector_ms(config) + verify_ms(task, config)
}

/// The longest a review of `task`'s run may take: the verification on the change merged with
/// the base, and the judge agent (with the detection agent on its words) when one is asked —
/// not when the review only merges what the judge already approved.
pub fn review_bound(task: &Task, config: &Config, agent: bool) -> Millis {
    let judge = if agent && config.agents.effective(AgentRole::Judge).review {
        agent_ms(config, AgentRole::Judge) + detector_ms(config)
    } else {
        0
    };
    judge + verify_ms(task, config)
}

/// The longest a planner run may take (the deterministic fallback takes no time to speak of).
pub fn planner_bound(config: &Config) -> Millis {
    if config.planner.agent {
        agent_ms(config, AgentRole::Planner)
    } else {
        0
    }
}

/// Whether the plan starts work that needs nothing from outside: a run, a review (and merge),
/// the planner. A plan of waits — CI, a person, a quota, a cooldown, the review window, the
/// tick's time — starts none, and the tick ends.
pub fn starts_work(plan: &Plan) -> bool {
    plan.decisions.iter().any(|d| match d.action {
        Action::Claim { .. } | Action::Judge { .. } | Action::StartPlanner => true,
        Action::Transition { .. }
        | Action::ReleaseLease { .. }
        | Action::CancelRun { .. }
        | Action::CreateTask { .. }
        | Action::ResetJudgeClaim { .. }
        | Action::OpenIssue
        | Action::ClosePull { .. }
        | Action::HealCi { .. }
        | Action::StartCi { .. }
        | Action::RetargetPull { .. }
        | Action::Wait { .. } => false,
    })
}

/// Whether a plan that starts no work was held by the tick's time (rather than the outside).
pub fn stopped_by_time(plan: &Plan) -> bool {
    plan.decisions.iter().any(|d| d.rule == TIME_RULE)
        || plan
            .holds
            .values()
            .any(|h| h.kind == super::HoldKind::TickTime)
}

/// Whether the plan has effects on GitHub to make — CI to start, an issue to open, a PR to
/// close, retarget or diagnose — which need nothing from outside either: a round does them
/// when the round before it did more than such effects (so a failing one is not retried round
/// after round; the next tick tries again).
pub fn has_effects(plan: &Plan) -> bool {
    plan.decisions.iter().any(|d| match d.action {
        Action::OpenIssue
        | Action::ClosePull { .. }
        | Action::HealCi { .. }
        | Action::StartCi { .. }
        | Action::RetargetPull { .. } => true,
        Action::Claim { .. }
        | Action::Judge { .. }
        | Action::StartPlanner
        | Action::Transition { .. }
        | Action::ReleaseLease { .. }
        | Action::CancelRun { .. }
        | Action::CreateTask { .. }
        | Action::ResetJudgeClaim { .. }
        | Action::Wait { .. } => false,
    })
}

/// Why a tick starts no further round after a plan that starts no work, for people.
pub fn why_no_round(plan: &Plan) -> String {
    if let Some(hold) = plan
        .holds
        .values()
        .find(|h| h.kind == super::HoldKind::TickTime)
    {
        return format!(
            "no further round: the next step does not fit in the tick's time ({})",
            hold.reason
        );
    }
    match plan.decisions.iter().find(|d| d.rule == TIME_RULE) {
        Some(d) => format!(
            "no further round: the next step does not fit in the tick's time ({})",
            d.reason
        ),
        None => "no further round: what is left waits for something outside the tick (CI, a \
                 person, a quota, a cooldown or the review window) or for the next tick"
            .to_string(),
    }
}

/// `merge.review_window_minutes`, or the default: in github mode 10 minutes for a repository
/// without CI — the judge is the only gate, and a merge in the job that pushed would leave
/// people no time to object — and none where CI gates the merge (`ci_gates`): the PR stays open
/// while CI runs, and the tick that CI's completion starts merges it. In local-git and direct
/// mode none: the person running the tick is the one who would object.
pub fn review_window(config: &Config, ci_gates: bool) -> u32 {
    config
        .merge
        .review_window_minutes
        .unwrap_or(match config.mode {
            crate::model::Mode::Github if !ci_gates => 10,
            crate::model::Mode::Github
            | crate::model::Mode::LocalGit
            | crate::model::Mode::Direct => 0,
        })
}

/// The end of the review window of the head `run` pushed (`window` minutes after the push),
/// while it is still open at `now`: the PR is not merged before then.
pub fn window_open_until(run: &Run, window: u32, now: Timestamp) -> Option<Timestamp> {
    let span = i64::from(window) * MINUTE;
    let pushed = run.finished_at.unwrap_or(run.started_at);
    Some(pushed.plus(span)).filter(|until| span > 0 && *until > now)
}

/// The wait of an approved change inside its window of `window` minutes, for people: what it
/// waits for and what they can still do about it.
pub fn window_reason(
    config: &Config,
    task: &TaskId,
    window: u32,
    until: Timestamp,
    now: Timestamp,
) -> String {
    let heard = match config.mode {
        crate::model::Mode::Github => {
            "a trusted person's request for changes, a hold label or `/opentiger hold` on the PR"
                .to_string()
        }
        crate::model::Mode::LocalGit | crate::model::Mode::Direct => {
            format!("`opentiger task cancel {task}` or `opentiger task retry {task}`")
        }
    };
    format!(
        "approved by the judge; merges after the review window, at {} (merge.review_window_minutes \
         = {window}): {heard} before then is heard",
        until.relative_to(now),
    )
}

#[cfg(test)]
#[path = "rounds_tests.rs"]
mod tests;

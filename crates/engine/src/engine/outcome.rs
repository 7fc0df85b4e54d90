//! What a finished run does to its task (the record step, DESIGN §3 step 6), as a pure rule.
//!
//! - success → `blocked(awaiting_judge)`, or `done` in direct mode (no review there); a
//!   research task's success is `done` in every mode (issue 28: a report, no change to judge),
//!   and so is a success that changed nothing (a tester or docs task its checks confirmed);
//! - a change the threat scan held (`threat_flagged`, issue 36) → `blocked(awaiting_human)` at
//!   once: a person approves exactly that change or has it redone;
//! - a quota signal → the executor that hit it is parked (`fallback`); when another executor
//!   of the role's chain is free, the task is queued again at once for it (no quota wait
//!   spent); else `blocked(quota_wait)` with the backoff of spec §3.4 (retry hints win), or
//!   until another executor is free if that is sooner, bounded by `retry.quota.max_waits`;
//! - an `agent_config` failure (issue 18: no key, an invalid one, not logged in, an unknown
//!   model) → the executor is parked until its configuration changes or a person retries; when
//!   another executor of the chain is free the task is queued again at once for it, else
//!   `blocked(awaiting_human)` at once with the fix: never retried as it is;
//! - the run's budget spent mid-run (`budget_exceeded`, issue 37) → `queued` as it is, no
//!   attempt counted: dispatch holds it for its family's budget;
//! - any other failure → `failed`, which recovery classifies and retries within its budget.
//!
//! Not for: retrying a `failed` task (`engine::recovery`), what a review's verdict does
//! (`engine::verdict`), or writing the decision (`tick::record`, `tick::work`).

use super::backoff::{quota_cooldown_ms, QuotaBackoff};
use super::classify::{is_agent_config_message, is_quota_message};
use super::fallback::{after_config, after_quota, ExecutorUse, ExecutorWait, ExecutorWaits};
use crate::config::Config;
use crate::model::{
    AttemptKey, Attempts, BlockReason, FailureCode, Mode, Role, RunStatus, Task, TaskState,
};
use crate::time::{Timestamp, SECOND};

/// What the runner observed when a run ended.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct RunOutcome {
    pub success: bool,
    pub failure_code: Option<FailureCode>,
    /// Redacted, short excerpt of what went wrong (or the agent's summary on success).
    pub message: String,
    /// Succeeded without changing anything (a tester or docs task confirmed by verification).
    pub no_changes: bool,
}

/// The transition the outcome causes.
#[derive(Clone, Debug, PartialEq)]
pub struct OutcomeDecision {
    pub run_status: RunStatus,
    pub failure_code: Option<FailureCode>,
    pub to: TaskState,
    pub attempts: Option<Attempts>,
    pub next_attempt_at: Option<Option<Timestamp>>,
    pub reason: String,
    /// What the run says about its executor's quota.
    pub executor: Option<ExecutorChange>,
}

/// A change to the parked executors.
#[derive(Clone, Debug, PartialEq)]
pub enum ExecutorChange {
    /// It hit a quota: parked until `wait.until`.
    Park { key: String, wait: ExecutorWait },
    /// It ran without hitting one: its park (and run of hits) ends.
    Clear { key: String },
}

/// The executors as the record step sees them: which of its role's chain the run used (none
/// when no agent started), and which executors are parked now.
#[derive(Clone, Copy, Debug)]
pub struct RunExecutors<'a> {
    pub used: Option<&'a ExecutorUse>,
    pub waits: &'a ExecutorWaits,
}

impl RunExecutors<'static> {
    /// No executor information: the outcome rules as they are without fallbacks.
    pub const NONE: RunExecutors<'static> = RunExecutors {
        used: None,
        waits: &ExecutorWaits::new(),
    };
}

impl RunExecutors<'_> {
    /// The run's executor ran and hit no quota: a park it had is over.
    fn cleared(&self) -> Option<ExecutorChange> {
        let key = self.used?.key()?;
        self.waits.contains_key(key).then(|| ExecutorChange::Clear {
            key: key.to_string(),
        })
    }
}

/// The quota backoff `retry.quota` configures, normalized.
pub fn quota_backoff(config: &Config) -> QuotaBackoff {
    let q = &config.retry.quota;
    QuotaBackoff {
        base_ms: i64::from(q.base_seconds) * SECOND,
        factor: q.factor,
        max_ms: i64::from(q.max_seconds) * SECOND,
        jitter_ratio: q.jitter_ratio,
    }
    .normalized()
}

pub fn decide_outcome(
    task: &Task,
    outcome: &RunOutcome,
    executors: &RunExecutors<'_>,
    config: &Config,
    now: Timestamp,
) -> OutcomeDecision {
    let research = task.role == Role::Research;
    if outcome.success && (research || outcome.no_changes) {
        return OutcomeDecision {
            run_status: RunStatus::Success,
            failure_code: None,
            to: TaskState::DONE,
            attempts: None,
            next_attempt_at: Some(None),
            reason: match research {
                true => format!("research report written: {}", first_line(&outcome.message)),
                false => format!("done without changes: {}", outcome.message),
            },
            executor: executors.cleared(),
        };
    }
    if outcome.failure_code == Some(FailureCode::ThreatFlagged) {
        // Issue 36: nothing left the job; a person looks at exactly this change.
        return OutcomeDecision {
            run_status: RunStatus::Failed,
            failure_code: Some(FailureCode::ThreatFlagged),
            to: TaskState::blocked(BlockReason::AwaitingHuman),
            attempts: None,
            next_attempt_at: Some(None),
            reason: match research {
                true => format!(
                    "{}. Decide: have it researched again with `opentiger task retry {id}` (or `/opentiger retry`), or cancel it",
                    first_line(&outcome.message),
                    id = task.id
                ),
                false => format!(
                    "{}. Decide: approve exactly this change with `opentiger task approve {id}` (or `/opentiger approve` on its issue), or have it redone with `opentiger task retry {id}`",
                    first_line(&outcome.message),
                    id = task.id
                ),
            },
            executor: executors.cleared(),
        };
    }
    if outcome.success {
        let (to, reason) = match config.mode {
            Mode::Direct => (
                TaskState::DONE,
                "run succeeded; direct mode has no review".to_string(),
            ),
            Mode::Github | Mode::LocalGit => (
                TaskState::blocked(BlockReason::AwaitingJudge),
                "run succeeded and was verified: waiting for the judge".to_string(),
            ),
        };
        return OutcomeDecision {
            run_status: RunStatus::Success,
            failure_code: None,
            to,
            attempts: None,
            next_attempt_at: Some(None),
            reason,
            executor: executors.cleared(),
        };
    }
    // Issue 37: the budget ran out mid-run. Not the task's failure and not a retry: it is queued
    // as it is, and dispatch holds it until a person raises the budget.
    if outcome.failure_code == Some(FailureCode::BudgetExceeded) {
        return OutcomeDecision {
            run_status: RunStatus::Failed,
            failure_code: Some(FailureCode::BudgetExceeded),
            to: TaskState::QUEUED,
            attempts: None,
            next_attempt_at: Some(None),
            reason: format!(
                "over budget (not counted against retries): {}",
                first_line(&outcome.message)
            ),
            executor: executors.cleared(),
        };
    }
    // The agent's own failure: a verification command's output or a forge error after the agent
    // finished says nothing about the agent's key, quota or configuration.
    let agents_failure = matches!(
        outcome.failure_code,
        None | Some(FailureCode::QuotaFailure | FailureCode::ExecutionFailed)
    );
    let config_error = outcome.failure_code == Some(FailureCode::AgentConfig)
        || (agents_failure
            && outcome.failure_code != Some(FailureCode::QuotaFailure)
            && is_agent_config_message(&outcome.message));
    if config_error {
        return config_outcome(task, outcome, executors, now);
    }
    let quota = outcome.failure_code == Some(FailureCode::QuotaFailure)
        || is_quota_message(&outcome.message);
    if quota {
        // Only the agent's own failure parks its executor: a quota phrase in a verification
        // command's output, or in a forge error after the agent finished, is not its provider's.
        let after = executors.used.filter(|_| agents_failure).and_then(|used| {
            let why = format!("task {}: {}", task.id, first_line(&outcome.message));
            let backoff = quota_backoff(config);
            after_quota(used, executors.waits, &backoff, &outcome.message, why, now)
        });
        let park = after.as_ref().map(|a| ExecutorChange::Park {
            key: a.key.clone(),
            wait: a.park.clone(),
        });
        if let Some((a, next)) = after.as_ref().and_then(|a| Some((a, a.next.as_ref()?))) {
            let waits = format!("quota: executor {} waits until {}", a.key, a.park.until);
            return to_fallback(FailureCode::QuotaFailure, &waits, next, "", park);
        }
        let waits = task.attempts.get(AttemptKey::Quota);
        let max = config.retry.quota.max_waits;
        let attempts = task.attempts.bumped(AttemptKey::Quota);
        if waits >= max {
            return OutcomeDecision {
                run_status: RunStatus::Failed,
                failure_code: Some(FailureCode::QuotaFailure),
                to: TaskState::blocked(BlockReason::AwaitingHuman),
                attempts: Some(attempts),
                next_attempt_at: Some(None),
                reason: format!(
                    "quota hit {} times (limit {max}): check the agent's plan or key, then `opentiger task retry {}`",
                    waits + 1,
                    task.id
                ),
                executor: park,
            };
        }
        let wait = quota_cooldown_ms(
            &quota_backoff(config),
            task.id.as_str(),
            waits,
            &outcome.message,
            now.0,
        );
        // Another executor of the chain may be free before this backoff ends.
        let other_free_at = after.as_ref().and_then(|a| a.other_free_at);
        let at = other_free_at.map_or(now.plus(wait), |free| free.min(now.plus(wait)));
        let others = match other_free_at {
            Some(_) => "; every other executor of the role waits on quota too",
            None => "",
        };
        return OutcomeDecision {
            run_status: RunStatus::Failed,
            failure_code: Some(FailureCode::QuotaFailure),
            to: TaskState::blocked(BlockReason::QuotaWait),
            attempts: Some(attempts),
            next_attempt_at: Some(Some(at)),
            reason: format!(
                "quota_wait: retry after {at} (wait {}/{max}){others}",
                waits + 1
            ),
            executor: park,
        };
    }
    let code = outcome.failure_code.unwrap_or(FailureCode::ExecutionFailed);
    OutcomeDecision {
        run_status: RunStatus::Failed,
        failure_code: Some(code),
        to: TaskState::FAILED,
        attempts: None,
        next_attempt_at: None,
        reason: format!("run failed ({code}): {}", first_line(&outcome.message)),
        executor: executors.cleared(),
    }
}

/// Issue 18: the agent cannot reach its model as configured. Another run of the same executor
/// fails the same way, so it is parked (for every role using it) and the task goes to a free
/// fallback at once, or to a person with the fix the runner wrote into the message.
fn config_outcome(
    task: &Task,
    outcome: &RunOutcome,
    executors: &RunExecutors<'_>,
    now: Timestamp,
) -> OutcomeDecision {
    let why = format!("task {}: {}", task.id, first_line(&outcome.message));
    let after = executors
        .used
        .and_then(|used| after_config(used, executors.waits, why, now));
    let park = after.as_ref().map(|a| ExecutorChange::Park {
        key: a.key.clone(),
        wait: a.park.clone(),
    });
    if let Some((a, next)) = after.as_ref().and_then(|a| Some((a, a.next.as_ref()?))) {
        let waits = format!(
            "agent_config: executor {} cannot reach its model as configured and waits until its configuration changes",
            a.key
        );
        let cause = format!(": {}", first_line(&outcome.message));
        return to_fallback(FailureCode::AgentConfig, &waits, next, &cause, park);
    }
    let fix = outcome
        .message
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with("fix:"))
        .map(|l| format!("; {l}"))
        .unwrap_or_default();
    OutcomeDecision {
        run_status: RunStatus::Failed,
        failure_code: Some(FailureCode::AgentConfig),
        to: TaskState::blocked(BlockReason::AwaitingHuman),
        attempts: Some(task.attempts.bumped(AttemptKey::AgentConfig)),
        next_attempt_at: Some(None),
        reason: format!(
            "agent_config (not retried): {}{fix}; then `opentiger task retry {}`",
            first_line(&outcome.message),
            task.id
        ),
        executor: park,
    }
}

/// The run failed for its executor (parked: `park`), and the task goes at once to `next`, the
/// free executor of its chain (index, key), with its budgets untouched.
fn to_fallback(
    code: FailureCode,
    waits: &str,
    (index, next): &(usize, String),
    cause: &str,
    park: Option<ExecutorChange>,
) -> OutcomeDecision {
    OutcomeDecision {
        run_status: RunStatus::Failed,
        failure_code: Some(code),
        to: TaskState::QUEUED,
        attempts: None,
        next_attempt_at: Some(None),
        reason: format!(
            "{waits}; queued again at once for {next} ({}){cause}",
            chain_position(*index)
        ),
        executor: park,
    }
}

/// Where an executor stands in its role's chain, for reasons: "the primary" or "fallback 2".
fn chain_position(index: usize) -> String {
    if index == 0 {
        "the primary".to_string()
    } else {
        format!("fallback {index}")
    }
}

/// What failed and why, in one line (the headline and, under it, the cause).
fn first_line(text: &str) -> String {
    crate::model::excerpt::headline(text)
}

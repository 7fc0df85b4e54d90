//! What a finished run does to its task (the record step, DESIGN §3 step 6), as a pure rule.
//!
//! - success → `blocked(awaiting_judge)`, or `done` in direct mode (no review there);
//! - a quota signal → `blocked(quota_wait)` with the backoff of spec §3.4 (retry hints win),
//!   bounded by `retry.quota.max_waits`;
//! - any other failure → `failed`, which recovery classifies and retries within its budget.

use super::backoff::{quota_cooldown_ms, QuotaBackoff};
use super::classify::is_quota_message;
use crate::config::Config;
use crate::model::{
    AttemptKey, Attempts, BlockReason, FailureCode, Mode, RunStatus, Task, TaskState,
};
use crate::time::{Timestamp, SECOND};

/// What the runner observed when a run ended.
#[derive(Clone, Debug, PartialEq)]
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
}

impl Config {
    pub fn quota_backoff(&self) -> QuotaBackoff {
        let q = &self.retry.quota;
        QuotaBackoff {
            base_ms: i64::from(q.base_seconds) * SECOND,
            factor: q.factor,
            max_ms: i64::from(q.max_seconds) * SECOND,
            jitter_ratio: q.jitter_ratio,
        }
        .normalized()
    }
}

pub fn decide_outcome(
    task: &Task,
    outcome: &RunOutcome,
    config: &Config,
    now: Timestamp,
) -> OutcomeDecision {
    if outcome.success && outcome.no_changes {
        return OutcomeDecision {
            run_status: RunStatus::Success,
            failure_code: None,
            to: TaskState::DONE,
            attempts: None,
            next_attempt_at: Some(None),
            reason: format!("done without changes: {}", outcome.message),
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
        };
    }
    let quota = outcome.failure_code == Some(FailureCode::QuotaFailure)
        || is_quota_message(&outcome.message);
    if quota {
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
            };
        }
        let wait = quota_cooldown_ms(
            &config.quota_backoff(),
            task.id.as_str(),
            waits,
            &outcome.message,
            now.0,
        );
        let at = now.plus(wait);
        return OutcomeDecision {
            run_status: RunStatus::Failed,
            failure_code: Some(FailureCode::QuotaFailure),
            to: TaskState::blocked(BlockReason::QuotaWait),
            attempts: Some(attempts),
            next_attempt_at: Some(Some(at)),
            reason: format!("quota_wait: retry after {at} (wait {}/{max})", waits + 1),
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
    }
}

fn first_line(text: &str) -> String {
    let line = text
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("no output");
    line.chars().take(200).collect()
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{at, task, TaskExt, NOW};
    use super::*;

    fn outcome(success: bool, code: Option<FailureCode>, message: &str) -> RunOutcome {
        RunOutcome {
            success,
            failure_code: code,
            message: message.to_string(),
            no_changes: false,
        }
    }

    #[test]
    fn outcomes_move_tasks() {
        let local = Config {
            mode: Mode::LocalGit,
            ..Config::default()
        };
        let direct = Config {
            mode: Mode::Direct,
            ..Config::default()
        };
        let cases: &[(&str, &Config, Task, RunOutcome, TaskState, &str)] = &[
            (
                "success waits for the judge",
                &local,
                task("a"),
                outcome(true, None, "done"),
                TaskState::blocked(BlockReason::AwaitingJudge),
                "waiting for the judge",
            ),
            (
                "direct success is done",
                &direct,
                task("a"),
                outcome(true, None, "done"),
                TaskState::DONE,
                "direct mode",
            ),
            (
                "test failure fails the run",
                &local,
                task("a"),
                outcome(
                    false,
                    Some(FailureCode::VerificationCommandFailed),
                    "\nassert 1 == 2\nmore",
                ),
                TaskState::FAILED,
                "run failed (verification_command_failed): assert 1 == 2",
            ),
            (
                "quota parks the task",
                &local,
                task("a"),
                outcome(false, None, "429 Too Many Requests: please retry in 600s"),
                TaskState::blocked(BlockReason::QuotaWait),
                "quota_wait: retry after 2026-11-21T12:10:00Z (wait 1/12)",
            ),
            (
                "quota waits are bounded",
                &local,
                task("a").attempts(AttemptKey::Quota, 12),
                outcome(false, Some(FailureCode::QuotaFailure), "quota"),
                TaskState::blocked(BlockReason::AwaitingHuman),
                "quota hit 13 times (limit 12)",
            ),
        ];
        for (name, config, task, outcome, to, reason) in cases {
            let d = decide_outcome(task, outcome, config, NOW);
            assert_eq!(d.to, *to, "{name}");
            assert!(d.reason.contains(reason), "{name}: {}", d.reason);
        }
    }

    #[test]
    fn quota_backoff_grows_and_honours_hints() {
        let config = Config::default();
        let wait = |waits: u32, message: &str| {
            let t = task("a").attempts(AttemptKey::Quota, waits);
            let d = decide_outcome(
                &t,
                &outcome(false, Some(FailureCode::QuotaFailure), message),
                &config,
                NOW,
            );
            d.next_attempt_at
                .flatten()
                .expect("a retry time")
                .minus(NOW)
        };
        let base = 120 * SECOND;
        let first = wait(0, "rate limited");
        assert!((base..=base + base / 5).contains(&first), "{first}");
        let third = wait(2, "rate limited");
        assert!(
            (4 * base..=4 * base + 4 * base / 5).contains(&third),
            "{third}"
        );
        assert_eq!(
            wait(11, "rate limited"),
            1800 * SECOND,
            "capped at max_seconds"
        );
        // A hint longer than the backoff wins, without jitter or cap.
        assert_eq!(
            wait(0, "You've hit your usage limit. Resets at 3pm"),
            at(3 * 60).minus(NOW)
        );
        assert_eq!(wait(0, "x"), wait(0, "x"), "deterministic");
    }
}

//! What a finished run does to its task (the record step, DESIGN §3 step 6), as a pure rule.
//!
//! - success → `blocked(awaiting_judge)`, or `done` in direct mode (no review there);
//! - a quota signal → the executor that hit it is parked (`fallback`); when another executor
//!   of the role's chain is free, the task is queued again at once for it (no quota wait
//!   spent); else `blocked(quota_wait)` with the backoff of spec §3.4 (retry hints win), or
//!   until another executor is free if that is sooner, bounded by `retry.quota.max_waits`;
//! - an `agent_config` failure (issue 18: no key, an invalid one, not logged in, an unknown
//!   model) → the executor is parked until its configuration changes or a person retries; when
//!   another executor of the chain is free the task is queued again at once for it, else
//!   `blocked(awaiting_human)` at once with the fix: never retried as it is;
//! - any other failure → `failed`, which recovery classifies and retries within its budget.

use super::backoff::{quota_cooldown_ms, QuotaBackoff};
use super::classify::{is_agent_config_message, is_quota_message};
use super::fallback::{after_config, after_quota, ExecutorUse, ExecutorWait, ExecutorWaits};
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
    executors: &RunExecutors<'_>,
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
            let backoff = config.quota_backoff();
            after_quota(used, executors.waits, &backoff, &outcome.message, why, now)
        });
        let park = after.as_ref().map(|a| ExecutorChange::Park {
            key: a.key.clone(),
            wait: a.park.clone(),
        });
        if let Some((a, (index, next))) = after.as_ref().and_then(|a| Some((a, a.next.clone()?))) {
            let which = if index == 0 {
                "the primary".to_string()
            } else {
                format!("fallback {index}")
            };
            return OutcomeDecision {
                run_status: RunStatus::Failed,
                failure_code: Some(FailureCode::QuotaFailure),
                to: TaskState::QUEUED,
                attempts: None,
                next_attempt_at: Some(None),
                reason: format!(
                    "quota: executor {} waits until {}; queued again at once for {next} ({which})",
                    a.key, a.park.until
                ),
                executor: park,
            };
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
            &config.quota_backoff(),
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
    if let Some((a, (index, next))) = after.as_ref().and_then(|a| Some((a, a.next.clone()?))) {
        let which = if index == 0 {
            "the primary".to_string()
        } else {
            format!("fallback {index}")
        };
        return OutcomeDecision {
            run_status: RunStatus::Failed,
            failure_code: Some(FailureCode::AgentConfig),
            to: TaskState::QUEUED,
            attempts: None,
            next_attempt_at: Some(None),
            reason: format!(
                "agent_config: executor {} cannot reach its model as configured and waits until its configuration changes; queued again at once for {next} ({which}): {}",
                a.key,
                first_line(&outcome.message)
            ),
            executor: park,
        };
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
            let d = decide_outcome(task, outcome, &RunExecutors::NONE, config, NOW);
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
                &RunExecutors::NONE,
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

    /// Issue 9: a quota hit parks the run's executor; a free fallback takes the task at once,
    /// without spending a quota wait; else `quota_wait`, no later than another executor is free.
    #[test]
    fn quota_hits_hand_the_task_to_a_free_fallback() {
        use crate::engine::fallback::ChainEntry;
        let config = Config {
            mode: Mode::LocalGit,
            ..Config::default()
        };
        let chain = |available: bool| {
            vec![
                ChainEntry {
                    key: "claude-code".into(),
                    available: true,
                    config: String::new(),
                },
                ChainEntry {
                    key: "codex".into(),
                    available,
                    config: String::new(),
                },
            ]
        };
        let parked = |key: &str, minutes: i64| -> ExecutorWaits {
            let wait = ExecutorWait {
                until: at(minutes),
                hits: 1,
                reason: "earlier".into(),
                config: None,
            };
            [(key.to_string(), wait)].into_iter().collect()
        };
        let quota = outcome(false, None, "rate limit exceeded, retry in 600s");
        let tests_failed = outcome(false, Some(FailureCode::TestFailure), "assert");
        type Case = (
            &'static str,
            Task,
            RunOutcome,
            Option<(bool, usize)>,
            ExecutorWaits,
            TaskState,
            Option<Option<Timestamp>>,
            &'static str,
            Option<ExecutorChange>,
        );
        let park = |key: &str, minutes: i64, hits: u32| {
            Some(ExecutorChange::Park {
                key: key.to_string(),
                wait: ExecutorWait {
                    until: at(minutes),
                    hits,
                    reason: "task a: rate limit exceeded, retry in 600s".into(),
                    config: None,
                },
            })
        };
        #[rustfmt::skip]
        let cases: Vec<Case> = vec![
            // name, task, outcome, (fallback available, index used), parked before, to,
            // next attempt, reason, executor change
            ("a free fallback takes over at once", task("a"), quota.clone(), Some((true, 0)), ExecutorWaits::new(),
                TaskState::QUEUED, Some(None),
                "quota: executor claude-code waits until 2026-11-21T12:10:00Z; queued again at once for codex (fallback 1)",
                park("claude-code", 10, 1)),
            ("even with the quota waits spent", task("a").attempts(AttemptKey::Quota, 12), quota.clone(), Some((true, 0)), ExecutorWaits::new(),
                TaskState::QUEUED, Some(None), "for codex (fallback 1)", park("claude-code", 10, 1)),
            ("the fallback hits it too, the primary's park is over", task("a"), quota.clone(), Some((true, 1)), parked("claude-code", -1),
                TaskState::QUEUED, Some(None), "queued again at once for claude-code (the primary)", park("codex", 10, 1)),
            ("every executor parked: wait until the first is free", task("a"), quota.clone(), Some((true, 1)), parked("claude-code", 3),
                TaskState::blocked(BlockReason::QuotaWait), Some(Some(at(3))),
                "quota_wait: retry after 2026-11-21T12:03:00Z (wait 1/12); every other executor of the role waits on quota too",
                park("codex", 10, 1)),
            ("a fallback that cannot run: today's quota_wait", task("a"), quota.clone(), Some((false, 0)), ExecutorWaits::new(),
                TaskState::blocked(BlockReason::QuotaWait), Some(Some(at(10))),
                "quota_wait: retry after 2026-11-21T12:10:00Z (wait 1/12)", park("claude-code", 10, 1)),
            ("hits in a row count for the executor", task("a"), quota.clone(), Some((false, 0)), parked("claude-code", -30),
                TaskState::blocked(BlockReason::QuotaWait), Some(Some(at(10))), "(wait 1/12)", park("claude-code", 10, 2)),
            ("a quota phrase in verification output parks no executor", task("a"),
                outcome(false, Some(FailureCode::VerificationCommandFailed), "429 Too Many Requests: retry in 600s"),
                Some((true, 0)), ExecutorWaits::new(),
                TaskState::blocked(BlockReason::QuotaWait), Some(Some(at(10))), "(wait 1/12)", None),
            ("no executor ran: today's rule", task("a"), quota.clone(), None, ExecutorWaits::new(),
                TaskState::blocked(BlockReason::QuotaWait), Some(Some(at(10))), "(wait 1/12)", None),
            ("a success ends the executor's park", task("a"), outcome(true, None, "done"), Some((true, 0)), parked("claude-code", 3),
                TaskState::blocked(BlockReason::AwaitingJudge), Some(None), "waiting for the judge",
                Some(ExecutorChange::Clear { key: "claude-code".into() })),
            ("so does another failure", task("a"), tests_failed.clone(), Some((true, 1)), parked("codex", 3),
                TaskState::FAILED, None, "run failed", Some(ExecutorChange::Clear { key: "codex".into() })),
            ("nothing parked, nothing to clear", task("a"), tests_failed, Some((true, 1)), parked("claude-code", 3),
                TaskState::FAILED, None, "run failed", None),
        ];
        for (name, task, outcome, used, waits, to, next, reason, change) in cases {
            let used = used.map(|(available, index)| ExecutorUse {
                chain: chain(available),
                index,
            });
            let executors = RunExecutors {
                used: used.as_ref(),
                waits: &waits,
            };
            let d = decide_outcome(&task, &outcome, &executors, &config, NOW);
            assert_eq!(d.to, to, "{name}: {}", d.reason);
            assert_eq!(d.next_attempt_at, next, "{name}");
            assert!(d.reason.contains(reason), "{name}: {}", d.reason);
            assert_eq!(d.executor, change, "{name}");
            if to == TaskState::QUEUED {
                assert_eq!(d.attempts, None, "{name}: no quota wait spent");
                assert_eq!(d.failure_code, Some(FailureCode::QuotaFailure), "{name}");
            }
        }
    }

    /// Issue 18: a configuration error is never retried as it is: the executor is parked for its
    /// configuration, a free fallback takes the task at once, else a person gets the fix.
    #[test]
    fn config_errors_go_to_a_fallback_or_a_person_at_once() {
        use crate::engine::fallback::ChainEntry;
        let config = Config {
            mode: Mode::LocalGit,
            ..Config::default()
        };
        let entry = |key: &str| ChainEntry {
            key: key.into(),
            available: true,
            config: format!("{key}-fp"),
        };
        let message = "the agent cannot reach its model as configured (claude-code): Not logged in · Please run /login\n  fix: set ANTHROPIC_API_KEY in the workflow's env";
        let reported = outcome(false, Some(FailureCode::AgentConfig), message);
        // A command agent's output, classified from its words.
        let printed = outcome(
            false,
            Some(FailureCode::ExecutionFailed),
            "the agent exited with code 1\nNot logged in · Please run /login",
        );
        // The same words in a test's output are not the agent's configuration.
        let in_tests = outcome(
            false,
            Some(FailureCode::VerificationCommandFailed),
            "Not logged in · Please run /login",
        );
        type Case = (
            &'static str,
            RunOutcome,
            usize,
            TaskState,
            &'static str,
            Option<&'static str>,
        );
        #[rustfmt::skip]
        let cases: Vec<Case> = vec![
            ("alone: a person, with the fix", reported.clone(), 1, TaskState::blocked(BlockReason::AwaitingHuman),
                "agent_config (not retried): the agent cannot reach its model as configured (claude-code): Not logged in · Please run /login; fix: set ANTHROPIC_API_KEY in the workflow's env; then `opentiger task retry a`",
                Some("claude-code")),
            ("a fallback takes over", reported, 2, TaskState::QUEUED,
                "agent_config: executor claude-code cannot reach its model as configured and waits until its configuration changes; queued again at once for codex (fallback 1)",
                Some("claude-code")),
            ("classified from a command's output", printed, 1, TaskState::blocked(BlockReason::AwaitingHuman), "agent_config (not retried)", Some("claude-code")),
            ("not from a verification command", in_tests, 1, TaskState::FAILED, "run failed", None),
        ];
        for (name, outcome, len, to, reason, parked) in cases {
            let used = ExecutorUse {
                chain: vec![entry("claude-code"), entry("codex")][..len].to_vec(),
                index: 0,
            };
            let waits = ExecutorWaits::new();
            let executors = RunExecutors {
                used: Some(&used),
                waits: &waits,
            };
            let d = decide_outcome(&task("a"), &outcome, &executors, &config, NOW);
            assert_eq!(d.to, to, "{name}: {}", d.reason);
            assert!(d.reason.contains(reason), "{name}: {}", d.reason);
            match (&d.executor, parked) {
                (Some(ExecutorChange::Park { key, wait }), Some(k)) => {
                    assert_eq!(key, k, "{name}");
                    assert_eq!(wait.config.as_deref(), Some("claude-code-fp"), "{name}");
                }
                (None, None) => {}
                (other, _) => panic!("{name}: {other:?}"),
            }
            if to != TaskState::FAILED {
                assert_eq!(d.failure_code, Some(FailureCode::AgentConfig), "{name}");
            }
        }
    }
}

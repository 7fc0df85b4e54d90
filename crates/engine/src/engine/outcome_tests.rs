//! Tables for `outcome`: what a finished run does to its task, its executor's quota and
//! configuration parks included.

use super::fallback::{ExecutorUse, ExecutorWait, ExecutorWaits};
use super::outcome::*;
use super::testkit::{at, task, TaskExt, NOW};
use crate::config::Config;
use crate::model::{AttemptKey, BlockReason, FailureCode, Mode, Task, TaskState};
use crate::time::{Timestamp, SECOND};

fn outcome(success: bool, code: Option<FailureCode>, message: &str) -> RunOutcome {
    RunOutcome {
        success,
        failure_code: code,
        message: message.to_string(),
        no_changes: false,
    }
}

fn research(id: &str) -> Task {
    let mut t = task(id);
    t.role = crate::model::Role::Research;
    t.kind = crate::model::TaskKind::Research;
    t
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
            "a research report ends the task: no judge, no PR (issue 28)",
            &local,
            research("a"),
            outcome(true, None, "report posted"),
            TaskState::DONE,
            "research report written: report posted",
        ),
        (
            "a research report is done in github mode too",
            &Config::default(),
            research("a"),
            outcome(true, None, "report"),
            TaskState::DONE,
            "research report written",
        ),
        (
            "a research run that failed is retried like any other",
            &local,
            research("a"),
            outcome(
                false,
                Some(FailureCode::ModelOrUnknownFailure),
                "the report leaves criterion 2 unanswered",
            ),
            TaskState::FAILED,
            "run failed (model_or_unknown_failure): the report leaves criterion 2",
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

/// Issue 36: a change (or a report) the threat scan held waits on a person at once, no retry
/// budget spent; the person is told how to let out exactly that change, or to redo it.
#[test]
fn a_held_change_waits_on_a_person_with_the_way_out() {
    let config = Config::default();
    let held = outcome(
        false,
        Some(FailureCode::ThreatFlagged),
        "held by the threat scan before anything left the job: commit 1234567890; findings: scripts/install.sh:3: …",
    );
    #[rustfmt::skip]
    let cases: &[(Task, &str)] = &[
        (task("a"), "approve exactly this change with `opentiger task approve a`"),
        (research("r"), "have it researched again with `opentiger task retry r`"),
    ];
    for (t, says) in cases {
        let d = decide_outcome(t, &held, &RunExecutors::NONE, &config, NOW);
        assert_eq!(
            d.to,
            TaskState::blocked(BlockReason::AwaitingHuman),
            "{}",
            t.id
        );
        assert_eq!(d.failure_code, Some(FailureCode::ThreatFlagged));
        assert_eq!(d.attempts, None, "no retry budget spent");
        assert!(
            d.reason.contains(says) && d.reason.contains("scripts/install.sh:3"),
            "{}",
            d.reason
        );
    }
}

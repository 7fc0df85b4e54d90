//! Running one agent for a task run, the part worker, conflict-fix, direct and research runs
//! share: the executor chosen from the role's chain, its scratch folder (beside the workspace),
//! its start by the one launch path (`launch.rs`: environment, door, confinement, limits), and
//! its failures (quota, spent budget, idleness, a limit reached, timeout, turn cap,
//! configuration) as failure codes. Not for: what the run does before and after
//! (`runner::work`, `runner::research`), driving the agent's CLI (`executor`), or what a
//! failure code does to the task (`engine::outcome`).

use std::path::Path;

use super::checks::CheckFailure;
use super::{Act, Brief};
use crate::config::{AgentRole, EffectiveAgent};
use crate::engine::outcome::RunOutcome;
use crate::executor::{self, AgentExit, AgentFailure, AgentFailureKind};
use crate::model::{FailureCode, RunId, Task};
use crate::store::RunRecord;

/// What a run produced, ready to record (and to keep until it is: `tick::unsaved`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct WorkResult {
    pub outcome: RunOutcome,
    pub record: RunRecord,
}

impl WorkResult {
    /// A run that succeeded; `no_changes`: without a change to deliver.
    pub(crate) fn succeeded(message: String, no_changes: bool, record: &RunRecord) -> WorkResult {
        WorkResult {
            outcome: RunOutcome {
                success: true,
                failure_code: None,
                message,
                no_changes,
            },
            record: record.clone(),
        }
    }

    pub(crate) fn failed(code: FailureCode, message: String, mut record: RunRecord) -> WorkResult {
        record.error = Some(message.clone());
        WorkResult {
            outcome: RunOutcome {
                success: false,
                failure_code: Some(code),
                message,
                no_changes: false,
            },
            record,
        }
    }
}

/// One agent run of a task: in its workspace, which it may write or only read.
pub(super) struct AgentJob<'a> {
    pub act: &'a Act<'a>,
    pub task: &'a Task,
    pub run_id: &'a RunId,
    pub brief: &'a Brief,
    pub ws: &'a crate::workspace::Workspace,
    /// A worker writes its workspace (its own repository included); a research agent may
    /// write only its scratch folder and home.
    pub writes_workspace: bool,
}

/// Runs the agent of `job`: `prompt` makes its prompt and extra environment from the run's
/// scratch folder, and `read` takes what it left there (its result and files) before the
/// folder goes. The agent's failures (quota, timeout, configuration) come back as for any run.
pub(super) fn run_agent_with<T>(
    job: &AgentJob<'_>,
    record: &mut RunRecord,
    prompt: impl FnOnce(
        &Path,
        executor::Abilities,
    ) -> Result<(String, Vec<(&'static str, String)>), CheckFailure>,
    read: impl FnOnce(&executor::AgentResult, &Path) -> Result<T, CheckFailure>,
) -> Result<T, CheckFailure> {
    let AgentJob {
        act,
        task,
        run_id,
        brief,
        ws,
        writes_workspace,
    } = *job;
    let cwd = ws.path.as_path();
    let role = AgentRole::Task(task.role);
    let chosen = super::executors::choose(act, role).map_err(|e| CheckFailure {
        // Issue 18: an agent given no key is not started, and waiting would not give it one.
        code: if e.config {
            FailureCode::AgentConfig
        } else {
            FailureCode::SetupOrBootstrapIssue
        },
        message: e.message,
    })?;
    let (agent, exec) = (chosen.agent, chosen.exec);
    record.executor = Some(chosen.label);
    record.executor_use = Some(chosen.usage);
    let scratch = ws.scratch();
    let (prompt, extra) = prompt(&scratch, executor::abilities(agent.executor))?;
    let chars = u64::try_from(prompt.chars().count()).unwrap_or(u64::MAX);
    record.prompt.get_or_insert_with(Default::default).chars = chars;
    let mut vars = vec![
        ("OPENTIGER_ROLE", task.role.to_string()),
        ("OPENTIGER_TASK_ID", task.id.to_string()),
        ("OPENTIGER_RUN_ID", run_id.to_string()),
        ("OPENTIGER_WORKSPACE", cwd.display().to_string()),
    ];
    vars.extend(extra);
    let attempt = u32::try_from(brief.runs.len()).unwrap_or(u32::MAX);
    let budget =
        super::network::run_budget(act.config, task, brief.family_spent, brief.task_budget);
    let launch = super::launch::AgentLaunch {
        act,
        role,
        agent: &agent,
        label: &record_label(record),
        folders: super::launch::Folders {
            workspace: cwd,
            writes: writes_workspace,
            run_folder: ws.run_folder(),
            scratch: &scratch,
        },
        vars,
        budget,
    };
    let ran = super::launch::run_agent(launch, exec.as_ref(), (task, run_id), prompt, attempt)
        .map_err(|e| CheckFailure {
            code: e.code,
            message: e.message,
        })?;
    let seen = ran.net;
    let (usd, tokens) = super::network::reported(&ran.result);
    super::network::account(record, &seen.traffic, usd, tokens);
    let result = ran.result.map_err(|e| setup_text(e.to_string()))?;
    record.session_id = result.session_id.clone();
    record.summary = result
        .summary
        .clone()
        .map(|s| act.redactor.excerpt(&s, 500));
    // A quota answer, a spent budget or idleness ended it from outside, whatever it reported.
    if let Some((code, message)) = seen.stop {
        record.cut_short = code != FailureCode::QuotaFailure;
        return Err(CheckFailure {
            code,
            message: act.redactor.excerpt(&message, 800),
        });
    }
    // Issue 47: a run stopped at one of its limits fails naming it, whatever it reported.
    if let (Some(hit), false) = (&ran.limit, result.exit == AgentExit::Finished) {
        record.cut_short = true;
        return Err(CheckFailure {
            code: FailureCode::ExecutionFailed,
            message: format!(
                "{}\n{}",
                hit.failure("the agent"),
                act.redactor.excerpt(&result.output_tail, 600)
            ),
        });
    }
    if let Some(failure) = &result.failure {
        record.cut_short = matches!(
            failure.kind,
            AgentFailureKind::MaxTurns | AgentFailureKind::Budget
        );
        return Err(reported_failure(failure, &agent, role, act.redactor));
    }
    let tail = act.redactor.excerpt(&result.output_tail, 800);
    match result.exit {
        AgentExit::Finished => {}
        AgentExit::TimedOut => {
            record.cut_short = true;
            return Err(CheckFailure {
                code: FailureCode::TransientOrFlakyFailure,
                message: format!(
                    "the agent timed out after {:?} and was killed\n{tail}",
                    agent.timeout()
                ),
            });
        }
        AgentExit::Failed(code) => {
            let how = code.map_or("was killed by a signal".to_string(), |c| {
                format!("exited with code {c}")
            });
            return Err(CheckFailure {
                code: FailureCode::ExecutionFailed,
                message: format!("the agent {how}\n{tail}"),
            });
        }
    }
    if let Some(refused) = &result.result_refused {
        return Err(CheckFailure {
            code: FailureCode::PolicyViolation,
            message: format!("policy_violation: {refused}"),
        });
    }
    if let Some(e) = &result.result_error {
        return Err(CheckFailure {
            code: FailureCode::ModelOrUnknownFailure,
            message: format!("the agent finished but {e}"),
        });
    }
    read(&result, &scratch)
}

/// The executor a run's record names, for the live view.
fn record_label(record: &RunRecord) -> String {
    record.executor.clone().unwrap_or_default()
}

/// A failure the agent CLI reported about itself (DESIGN §6): a quota goes to `quota_wait` with
/// its retry hint in the message (spec §3.4 reads it there); a turn or spending cap is an
/// unfinished run; anything else is classified from its text (spec §3.2 message rules).
fn reported_failure(
    failure: &AgentFailure,
    agent: &EffectiveAgent,
    role: AgentRole,
    redactor: &crate::redact::Redactor,
) -> CheckFailure {
    let text = redactor.excerpt(&failure.message, 600);
    let (code, message) = match &failure.kind {
        AgentFailureKind::Quota { retry_hint } => (
            FailureCode::QuotaFailure,
            match retry_hint {
                Some(hint) => format!("the agent hit a quota or rate limit ({hint}): {text}"),
                None => format!("the agent hit a quota or rate limit: {text}"),
            },
        ),
        AgentFailureKind::MaxTurns => (
            FailureCode::ModelOrUnknownFailure,
            format!(
                "the agent used all its turns (agents.{}.max_turns = {}) before finishing: {text}",
                role.name(),
                agent.max_turns
            ),
        ),
        AgentFailureKind::Budget => (
            FailureCode::ModelOrUnknownFailure,
            format!("the agent stopped at its own spending cap before finishing: {text}"),
        ),
        AgentFailureKind::Config => (
            FailureCode::AgentConfig,
            format!(
                "the agent cannot reach its model as configured ({}): {text}\n  {}",
                agent.executor_key(),
                executor::config_fix(agent)
            ),
        ),
        AgentFailureKind::Error => (
            FailureCode::ExecutionFailed,
            format!("the agent reported an error: {text}"),
        ),
    };
    CheckFailure { code, message }
}

/// The agent's work taken as data ([`Workspace::import`]); what no change may hold is a
/// policy violation naming it.
pub(super) fn import(
    ws: &crate::workspace::Workspace,
    config: &crate::config::Config,
) -> Result<crate::workspace::Imported, CheckFailure> {
    ws.import(crate::workspace::SizeLimits::of(&config.policy))
        .map_err(|e| match e {
            crate::workspace::ImportError::Refused(message) => CheckFailure {
                code: FailureCode::PolicyViolation,
                message: format!("Policy violation: {message}"),
            },
            crate::workspace::ImportError::Git(e) => setup(e),
        })
}

pub(super) fn setup(e: crate::git::GitError) -> CheckFailure {
    setup_text(e.to_string())
}

pub(super) fn setup_text(message: String) -> CheckFailure {
    CheckFailure {
        code: FailureCode::SetupOrBootstrapIssue,
        message,
    }
}

/// Why a judge's or planner's agent left no answer to read, as the error its review or plan
/// fails with (`who`: `"judge"`): its door stopped it (`stopped`, why), its result file was
/// refused unread, its CLI reported a failure (a quota hit named so), or it timed out or failed
/// with its exit code (or a signal) and the end of its output. `Ok` when it finished.
pub(super) fn gave_no_answer(
    who: &str,
    result: &executor::AgentResult,
    stopped: Option<&str>,
    agent: &EffectiveAgent,
    redactor: &crate::redact::Redactor,
) -> Result<(), String> {
    if let Some(why) = stopped {
        return Err(format!(
            "the {who} agent was stopped: {}",
            redactor.excerpt(why, 400)
        ));
    }
    if let Some(refused) = &result.result_refused {
        return Err(format!("policy_violation: {refused}"));
    }
    if let Some(failure) = &result.failure {
        let text = redactor.excerpt(&failure.message, 300);
        return Err(match &failure.kind {
            AgentFailureKind::Quota { retry_hint } => format!(
                "the {who} agent hit a quota or rate limit{}: {text}",
                retry_hint
                    .as_ref()
                    .map_or(String::new(), |h| format!(" ({h})"))
            ),
            _ => format!("the {who} agent reported a failure: {text}"),
        });
    }
    match result.exit {
        AgentExit::Finished => Ok(()),
        AgentExit::TimedOut => Err(format!(
            "the {who} agent timed out after {:?}",
            agent.timeout()
        )),
        AgentExit::Failed(code) => Err(format!(
            "the {who} agent failed ({}): {}",
            code.map_or("signal".to_string(), |c| format!("exit code {c}")),
            redactor.excerpt(&result.output_tail, 300)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::engine::outcome::{decide_outcome, RunExecutors};
    use crate::engine::testkit::{task, NOW};
    use crate::model::Role;
    use crate::model::{BlockReason, TaskState};
    use crate::redact::Redactor;
    use crate::time::SECOND;

    fn failure(kind: AgentFailureKind, message: &str) -> AgentFailure {
        AgentFailure {
            kind,
            message: message.to_string(),
        }
    }

    /// A CLI's own report of failure reaches the outcome rules with the right code, and a quota
    /// hint from the adapter sets the wait (spec §3.4).
    #[test]
    fn reported_failures_become_outcomes() {
        let config = Config::default();
        let role = AgentRole::Task(Role::Worker);
        let agent = config.agents.effective(role);
        let redactor = Redactor::new(["sk-secret".to_string()]);
        #[rustfmt::skip]
        let cases: &[(AgentFailure, FailureCode, TaskState, &str)] = &[
            (failure(AgentFailureKind::Quota { retry_hint: Some("retry in 3600s".into()) }, "API Error: 429"),
                FailureCode::QuotaFailure, TaskState::blocked(BlockReason::QuotaWait), "(retry in 3600s)"),
            (failure(AgentFailureKind::Quota { retry_hint: None }, "usage limit reached"),
                FailureCode::QuotaFailure, TaskState::blocked(BlockReason::QuotaWait), "quota or rate limit"),
            (failure(AgentFailureKind::MaxTurns, "Reached maximum number of turns (100)"),
                FailureCode::ModelOrUnknownFailure, TaskState::FAILED, "agents.worker.max_turns = 100"),
            (failure(AgentFailureKind::Budget, "Reached maximum budget ($1)"),
                FailureCode::ModelOrUnknownFailure, TaskState::FAILED, "spending cap"),
            (failure(AgentFailureKind::Error, "it crashed with sk-secret"),
                FailureCode::ExecutionFailed, TaskState::FAILED, "reported an error"),
            // Issue 18: not retried; a person gets the fix.
            (failure(AgentFailureKind::Config, "Not logged in · Please run /login (sk-secret)"),
                FailureCode::AgentConfig, TaskState::blocked(BlockReason::AwaitingHuman),
                "fix: set ANTHROPIC_API_KEY in the workflow's env (`env: ANTHROPIC_API_KEY: ${{ secrets.ANTHROPIC_API_KEY }}`) for the runner, which holds it"),
        ];
        for (f, code, to, says) in cases {
            let check = reported_failure(f, &agent, role, &redactor);
            assert_eq!(check.code, *code, "{f:?}");
            assert!(check.message.contains(says), "{}", check.message);
            assert!(!check.message.contains("sk-secret"), "{}", check.message);
            let outcome = RunOutcome {
                success: false,
                failure_code: Some(check.code),
                message: check.message,
                no_changes: false,
            };
            let decision = decide_outcome(&task("a"), &outcome, &RunExecutors::NONE, &config, NOW);
            assert_eq!(decision.to, *to, "{f:?}");
        }
        let hinted = reported_failure(&cases[0].0, &agent, role, &redactor);
        let outcome = RunOutcome {
            success: false,
            failure_code: Some(hinted.code),
            message: hinted.message,
            no_changes: false,
        };
        let wait = decide_outcome(&task("a"), &outcome, &RunExecutors::NONE, &config, NOW)
            .next_attempt_at
            .flatten()
            .expect("a retry time")
            .minus(NOW);
        assert_eq!(wait, 3600 * SECOND, "the provider's hint wins");
    }

    /// A judge's or planner's agent that left no answer fails its review or plan in words that
    /// name the role and the cause: stopped by its door, a refused result, a reported failure (a
    /// quota named so), its timeout, or its exit code (a signal) and the end of its output, all
    /// redacted.
    #[test]
    fn a_judge_or_planner_without_an_answer_names_itself_and_the_cause() {
        let config = Config::default();
        let agent = config.agents.effective(AgentRole::Judge);
        let redactor = Redactor::new(["sk-secret".to_string()]);
        let ran = |exit: AgentExit| executor::AgentResult {
            exit,
            output_tail: "crashed holding sk-secret".to_string(),
            ..executor::AgentResult::finished(None)
        };
        #[rustfmt::skip]
        let cases: &[(&str, AgentExit, Option<&str>)] = &[
            ("judge", AgentExit::Finished, None),
            ("judge", AgentExit::TimedOut, Some("the judge agent timed out after ")),
            ("planner", AgentExit::Failed(Some(2)), Some("the planner agent failed (exit code 2): crashed holding")),
            ("judge", AgentExit::Failed(None), Some("the judge agent failed (signal): crashed holding")),
        ];
        for (who, exit, says) in cases {
            let got = gave_no_answer(who, &ran(exit.clone()), None, &agent, &redactor);
            match says {
                None => assert_eq!(got, Ok(()), "{exit:?}"),
                Some(says) => {
                    let text = got.expect_err("an unfinished agent is an error");
                    assert!(text.starts_with(says), "{text}");
                    assert!(!text.contains("sk-secret"), "{text}");
                }
            }
        }
        // Before the exit: its door stopped it, its result was refused, its CLI reported.
        let finished = ran(AgentExit::Finished);
        let refused = executor::AgentResult {
            result_refused: Some("result.json is a link".to_string()),
            ..ran(AgentExit::Finished)
        };
        let quota = executor::AgentResult {
            failure: Some(failure(
                AgentFailureKind::Quota {
                    retry_hint: Some("retry in 60s".into()),
                },
                "429 for sk-secret",
            )),
            ..ran(AgentExit::Failed(Some(1)))
        };
        let reported = executor::AgentResult {
            failure: Some(failure(AgentFailureKind::Error, "it broke")),
            ..ran(AgentExit::Finished)
        };
        #[rustfmt::skip]
        let before: &[(&executor::AgentResult, Option<&str>, &str)] = &[
            (&finished, Some("over its budget, sk-secret"), "the judge agent was stopped: over its budget, "),
            (&refused, None, "policy_violation: result.json is a link"),
            (&quota, None, "the judge agent hit a quota or rate limit (retry in 60s): 429 for "),
            (&reported, None, "the judge agent reported a failure: it broke"),
        ];
        for (result, stopped, says) in before {
            let text = gave_no_answer("judge", result, *stopped, &agent, &redactor)
                .expect_err("no answer");
            assert!(text.starts_with(says), "{text}");
            assert!(!text.contains("sk-secret"), "{text}");
        }
    }
}

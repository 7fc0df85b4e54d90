//! A worker/tester/docser run (spec §2.3): workspace, prompt, agent, then the runner's own
//! checks — a diff exists, the path policy holds, the verification commands pass — and the
//! commit. Produces an outcome; the caller records it.

use std::path::Path;

use super::checks::{self, CheckFailure};
use super::{Act, Brief, Delivery};
use crate::config::{AgentRole, EffectiveAgent};
use crate::engine::outcome::RunOutcome;
use crate::executor::{self, AgentExit, AgentFailure, AgentFailureKind, AgentRequest};
use crate::git::{Git, NumstatEntry};
use crate::model::{FailureCode, Mode, Role, RunId, Task, TaskKind};
use crate::store::RunRecord;
use crate::workspace::{task_branch, Branches, Workspace};

#[path = "work_conflicts.rs"]
mod conflicts;
#[path = "work_direct.rs"]
mod direct;
use conflicts::fix_conflicts;
use direct::direct;

/// What a run produced, ready to record.
pub struct WorkResult {
    pub outcome: RunOutcome,
    pub record: RunRecord,
}

impl WorkResult {
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

/// Runs one claimed task. Errors of the runner itself (git broken, disk full) come back as a
/// failed outcome too: the task is retried under its budget, never lost.
pub fn run_task(act: &Act<'_>, task: &Task, run_id: &RunId, brief: &Brief) -> WorkResult {
    if task.role == Role::Research {
        return super::research::run_research(act, task, run_id, brief);
    }
    let mut record = RunRecord::default();
    match act.config.mode {
        Mode::Direct => direct(act, task, run_id, brief, &mut record),
        Mode::LocalGit | Mode::Github => in_worktree(act, task, run_id, brief, &mut record),
    }
    .unwrap_or_else(|failure| WorkResult::failed(failure.code, failure.message, record))
}

fn in_worktree(
    act: &Act<'_>,
    task: &Task,
    run_id: &RunId,
    brief: &Brief,
    record: &mut RunRecord,
) -> Result<WorkResult, CheckFailure> {
    let branch = task_branch(task);
    let git = Git::new(act.repo);
    let base = &act.config.base_branch;
    let branches = Branches::new(&git, &act.config.remote);
    if act.delivery == Delivery::Push {
        branches.refresh(&[base, &branch]).map_err(setup)?;
    }
    // Work continues from the branch as published (an AutoFix, a retry after a lost run), else
    // starts from the base as published.
    let tip = match branches.remote {
        Some(_) => branches.head(&branch).map_err(setup)?,
        None => None,
    };
    let ws =
        Workspace::open(&git, &branch, &branches.tracking(base), tip.as_deref()).map_err(setup)?;
    record.branch = Some(branch.clone());
    record.start_sha = Some(ws.start.clone());
    let base_ref = branches.tracking(base);
    let result = (|| {
        if task.kind == TaskKind::AutofixConflict {
            let result = fix_conflicts(act, task, (run_id, brief), &ws, &base_ref, record)?;
            if record.head_sha.as_deref() != Some(ws.start.as_str()) {
                deliver(act, &branches, &branch)?;
            }
            return Ok(result);
        }
        let agent = match run_agent(act, task, run_id, brief, &ws.path, record) {
            Ok(agent) => agent,
            Err(failure) if record.cut_short => {
                return Err(keep_progress(
                    act, task, run_id, &ws, &branches, record, failure,
                ))
            }
            Err(failure) => return Err(failure),
        };
        let changes = ws.stage_changes().map_err(setup)?;
        if changes.is_empty() {
            if let Some(adopted) = adopt_earlier_commit(act, task, &ws, &base_ref, record)? {
                return Ok(adopted);
            }
        }
        checks::check_content(
            task,
            act.config,
            ws.git(),
            &["--cached", "HEAD"],
            &changes,
            act.redactor,
        )?;
        let (passed, summary) = check_change(act, task, &ws.path, &changes, agent)?;
        if changes.is_empty() {
            return Ok(noop_success(passed, summary, record));
        }
        let head = ws
            .commit(
                &format!("[opentiger] {}", task.title),
                &format!("Task: {}\nRun: {run_id}", task.id),
            )
            .map_err(setup)?;
        deliver(act, &branches, &branch)?;
        record.head_sha = Some(head);
        Ok(success(summary, record))
    })();
    if let Err(e) = ws.close() {
        tracing::warn!("could not remove the worktree: {e}");
    }
    result
}

/// An agent cut short (timeout, turn or spending cap) leaves unfinished work: it is committed
/// to the task branch as work in progress (and published), so the next attempt starts from it
/// instead of from scratch. Only what the path policy allows is kept. The run still fails with
/// its cause; the message says what was kept.
fn keep_progress(
    act: &Act<'_>,
    task: &Task,
    run_id: &RunId,
    ws: &Workspace,
    branches: &Branches,
    record: &mut RunRecord,
    mut failure: CheckFailure,
) -> CheckFailure {
    let kept = (|| -> Result<Option<String>, String> {
        let changes = ws.stage_changes().map_err(|e| e.to_string())?;
        if changes.is_empty() {
            return Ok(None);
        }
        let content = || {
            checks::check_content(
                task,
                act.config,
                ws.git(),
                &["--cached", "HEAD"],
                &changes,
                act.redactor,
            )
        };
        if let Err(refused) =
            checks::check_policy(task, act.config, &changes).and_then(|()| content())
        {
            return Err(format!("it breaks the path policy ({})", refused.message));
        }
        let head = ws
            .commit(
                &format!("[opentiger] WIP: {}", task.title),
                &format!(
                    "Work in progress: the agent was cut short; the next attempt continues from here.\n\nTask: {}\nRun: {run_id}",
                    task.id
                ),
            )
            .map_err(|e| e.to_string())?;
        deliver(act, branches, &ws.branch).map_err(|e| e.message)?;
        Ok(Some(head))
    })();
    match kept {
        Ok(Some(head)) => {
            let note = format!(
                "; its work in progress is committed to {} ({}) and the next attempt continues from it",
                ws.branch,
                crate::engine::verdict::short_sha(&head)
            );
            failure.message = after_first_line(&failure.message, &note);
            record.head_sha = Some(head);
        }
        Ok(None) => {}
        Err(why) => {
            let note = format!("; its unfinished changes were not kept: {why}");
            failure.message = after_first_line(&failure.message, &note);
        }
    }
    failure
}

/// Pushes the task branch ([`Delivery::Push`]), or leaves it for `apply` ([`Delivery::Keep`]).
fn deliver(act: &Act<'_>, branches: &Branches, branch: &str) -> Result<(), CheckFailure> {
    match act.delivery {
        Delivery::Push => branches.publish(branch).map_err(|e| CheckFailure {
            code: FailureCode::BranchDivergedRequiresRecreate,
            message: format!("branch_diverged_requires_recreate: could not push {branch}: {e}"),
        }),
        Delivery::Keep => Ok(()),
    }
}

/// `text` with `note` added to its first line (the line reports and `task show` print).
fn after_first_line(text: &str, note: &str) -> String {
    match text.split_once('\n') {
        Some((first, rest)) => format!("{first}{note}\n{rest}"),
        None => format!("{text}{note}"),
    }
}

/// An earlier run of this task committed (and published) its work, but its outcome was never
/// recorded (its tick died): the branch already holds the change, so this run adopts it after the
/// same checks instead of failing with "no changes".
fn adopt_earlier_commit(
    act: &Act<'_>,
    task: &Task,
    ws: &Workspace,
    base_ref: &str,
    record: &mut RunRecord,
) -> Result<Option<WorkResult>, CheckFailure> {
    let marker = format!("Task: {}", task.id);
    let range = format!("{base_ref}..HEAD");
    let ours = ws
        .git()
        .run(&["log", "-F", "--grep", &marker, "--format=%H", &range])
        .map_err(setup)?;
    if ours.trim().is_empty() {
        return Ok(None);
    }
    let fork = ws
        .git()
        .run(&["merge-base", base_ref, "HEAD"])
        .map_err(setup)?;
    let committed = crate::workspace::changed_files(ws.git(), &fork, "HEAD").map_err(setup)?;
    checks::check_policy(task, act.config, &committed)?;
    checks::run_verification(task, act.config, &ws.path, &committed, act.redactor)?;
    record.head_sha = Some(ws.head().map_err(setup)?);
    let summary =
        "adopted the change an earlier, unrecorded run of this task committed".to_string();
    record.summary = Some(summary.clone());
    Ok(Some(success(Some(summary), record)))
}

/// Runs the agent; a failed, cut-short or garbled run is a failure with its output.
fn run_agent(
    act: &Act<'_>,
    task: &Task,
    run_id: &RunId,
    brief: &Brief,
    cwd: &Path,
    record: &mut RunRecord,
) -> Result<Option<String>, CheckFailure> {
    let job = AgentJob {
        act,
        task,
        run_id,
        brief,
        cwd,
        writes_workspace: true,
    };
    run_agent_with(
        &job,
        record,
        |scratch| {
            let prompt = super::prompts::worker(act, task, brief, &scratch.join("result.json"))?;
            Ok((prompt, Vec::new()))
        },
        |result, _| Ok(result.summary.clone()),
    )
}

/// One agent run of a task: in `cwd`, which it may write or only read.
pub(super) struct AgentJob<'a> {
    pub act: &'a Act<'a>,
    pub task: &'a Task,
    pub run_id: &'a RunId,
    pub brief: &'a Brief,
    pub cwd: &'a Path,
    /// A worker writes its workspace (and git in it, `.git`); a research agent may write only
    /// its scratch folder and home.
    pub writes_workspace: bool,
}

/// Runs the agent of `job`: `prompt` makes its prompt and extra environment from the run's
/// scratch folder, and `read` takes what it left there (its result and files) before the
/// folder goes. The agent's failures (quota, timeout, configuration) come back as for any run.
pub(super) fn run_agent_with<T>(
    job: &AgentJob<'_>,
    record: &mut RunRecord,
    prompt: impl FnOnce(&Path) -> Result<(String, Vec<(&'static str, String)>), CheckFailure>,
    read: impl FnOnce(&executor::AgentResult, &Path) -> Result<T, CheckFailure>,
) -> Result<T, CheckFailure> {
    let AgentJob {
        act,
        task,
        run_id,
        brief,
        cwd,
        writes_workspace,
    } = *job;
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
    let scratch = crate::scratch::private_dir("run").map_err(|e| setup_text(e.to_string()))?;
    let (prompt, extra) = prompt(scratch.path())?;
    let mut vars = vec![
        ("OPENTIGER_ROLE", task.role.to_string()),
        ("OPENTIGER_TASK_ID", task.id.to_string()),
        ("OPENTIGER_RUN_ID", run_id.to_string()),
        ("OPENTIGER_WORKSPACE", cwd.display().to_string()),
        ("TMPDIR", scratch.path().display().to_string()),
    ];
    vars.extend(extra);
    let mut env = executor::agent_env(&agent.env_passthrough, |k| std::env::var(k).ok(), &vars);
    let attempt = u32::try_from(brief.runs.len()).unwrap_or(u32::MAX);
    let confine = match writes_workspace {
        true => super::agent_domain(act, cwd, scratch.path(), &agent, &mut env),
        false => super::read_only_domain(act, scratch.path(), &agent, &mut env),
    }
    .map_err(|message| CheckFailure {
        code: FailureCode::ExecutionFailed,
        message,
    })?;
    let request = AgentRequest {
        role,
        task,
        run_id,
        workspace: cwd,
        prompt,
        env,
        timeout: agent.timeout(),
        attempt,
        scratch: scratch.path(),
        group_record: super::group_record(act, &run_id.to_string()),
        confine,
    };
    let guard = crate::sandbox::AgentGuard::before(cwd).map_err(setup)?;
    let result = exec.run(&request);
    // First, before the runner's git runs again: what the agent did to the git configuration.
    guard.after().map_err(|message| CheckFailure {
        code: FailureCode::PolicyViolation,
        message,
    })?;
    let result = result.map_err(|e| setup_text(e.to_string()))?;
    record.cost_usd = result.cost_usd;
    record.input_tokens = result.input_tokens;
    record.output_tokens = result.output_tokens;
    record.session_id = result.session_id.clone();
    record.summary = result
        .summary
        .clone()
        .map(|s| act.redactor.excerpt(&s, 500));
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
    read(&result, scratch.path())
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

/// Policy and verification of a change; `Ok((commands that passed, agent summary))`.
fn check_change(
    act: &Act<'_>,
    task: &Task,
    cwd: &Path,
    changes: &[NumstatEntry],
    summary: Option<String>,
) -> Result<(usize, Option<String>), CheckFailure> {
    if changes.is_empty() && !may_change_nothing(task) {
        return Err(CheckFailure {
            code: FailureCode::NoActionableChanges,
            message: "No changes were made: the agent finished without changing any file"
                .to_string(),
        });
    }
    checks::check_policy(task, act.config, changes)?;
    let passed = checks::run_verification(task, act.config, cwd, changes, act.redactor)?.len();
    if changes.is_empty() && passed == 0 {
        return Err(CheckFailure {
            code: FailureCode::NoActionableChanges,
            message:
                "No changes were made and no verification command ran to confirm nothing was needed"
                    .to_string(),
        });
    }
    Ok((passed, summary))
}

/// spec §2.3.1: a tester or docs task may conclude that nothing needs changing, if verification
/// confirms it; a worker must change something.
fn may_change_nothing(task: &Task) -> bool {
    match task.role {
        Role::Tester | Role::Docser => true,
        // A research task never reaches these checks (`runner::research`).
        Role::Worker | Role::Research => false,
    }
}

fn success(summary: Option<String>, record: &mut RunRecord) -> WorkResult {
    WorkResult {
        outcome: RunOutcome {
            success: true,
            failure_code: None,
            message: summary.unwrap_or_default(),
            no_changes: false,
        },
        record: record.clone(),
    }
}

fn noop_success(passed: usize, summary: Option<String>, record: &mut RunRecord) -> WorkResult {
    let message = format!("nothing needed changing; {passed} verification command(s) passed");
    record.summary = Some(summary.map_or(message.clone(), |s| format!("{s} ({message})")));
    WorkResult {
        outcome: RunOutcome {
            success: true,
            failure_code: None,
            message,
            no_changes: true,
        },
        record: record.clone(),
    }
}

fn setup(e: crate::git::GitError) -> CheckFailure {
    setup_text(e.to_string())
}

fn setup_text(message: String) -> CheckFailure {
    CheckFailure {
        code: FailureCode::SetupOrBootstrapIssue,
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::engine::outcome::{decide_outcome, RunExecutors};
    use crate::engine::testkit::{task, NOW};
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
                "fix: set ANTHROPIC_API_KEY in the workflow's env (`env: ANTHROPIC_API_KEY: ${{ secrets.ANTHROPIC_API_KEY }}`) and list it in `agents.worker.env_passthrough`"),
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
}

//! Applying the engine's plan: every decision that writes, in one SQL transaction, each with its
//! event. Either the whole plan lands or none of it does; the slow work it calls for (claimed runs,
//! reviews, issues and PRs) comes back as an [`ApplyReport`]. Not for: deciding (`engine`), doing
//! that work (`tick::act`), or recording a run's outcome (`store::record`).

use rusqlite::params;

use super::journal::{
    create_derived_task, note, record_event, write_transition, TaskChanges, Writer,
};
use super::{Store, StoreError};
use crate::engine::{Action, Plan};
use crate::model::{Run, RunId, RunStatus, TaskId, TaskState};

/// What applying a plan did, and the slow work it leaves for the act phase.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ApplyReport {
    pub transitions: usize,
    pub created: Vec<TaskId>,
    /// Tasks leased to this tick, with their run.
    pub claims: Vec<(TaskId, RunId)>,
    /// Runs to review, and whether before any CI ran on the head (`Action::Judge`).
    pub judge: Vec<(TaskId, RunId, bool)>,
    pub start_planner: bool,
    /// Planned tasks whose GitHub issue is to be opened.
    pub open_issues: Vec<TaskId>,
    /// PRs to close: (task, PR, the task recreating its goal).
    pub close_pulls: Vec<(TaskId, u64, TaskId)>,
    /// Stalled PRs to comment on (and dispatch CI for), their heal already recorded.
    pub heal_ci: Vec<HealCi>,
    /// PRs to point at the base branch: (task, PR, base), the attempt already recorded.
    pub retarget_pulls: Vec<(TaskId, u64, String)>,
}

/// A stalled PR's diagnosis, or (issue 36, `scan.ci`) CI started on a head that passed the
/// scan, for the act phase: already recorded, so sent at most once per head.
#[derive(Clone, Debug, PartialEq)]
pub struct HealCi {
    pub task: TaskId,
    pub pr: u64,
    pub head_sha: String,
    pub branch: String,
    /// The diagnosis comment (none when CI is started on purpose).
    pub comment: Option<String>,
    /// The workflows to dispatch on `branch`, once its tip is still `head_sha`.
    pub dispatch: Vec<String>,
}

impl Store {
    pub fn apply_plan(
        &mut self,
        plan: &Plan,
        writer: Writer<'_>,
    ) -> Result<ApplyReport, StoreError> {
        let tx = self.conn.transaction()?;
        let mut report = ApplyReport::default();
        for decision in &plan.decisions {
            let task_id = decision.task_id.as_ref();
            match &decision.action {
                Action::Transition {
                    from,
                    to,
                    attempts,
                    next_attempt_at,
                } => {
                    let id = task_id
                        .ok_or_else(|| StoreError::Invalid("transition without a task".into()))?;
                    let changes = TaskChanges {
                        attempts: attempts.clone(),
                        next_attempt_at: *next_attempt_at,
                        needs_approval: None,
                    };
                    write_transition(
                        &tx,
                        id,
                        Some(*from),
                        *to,
                        &decision.reason,
                        &changes,
                        writer,
                    )?;
                    report.transitions += 1;
                }
                Action::ReleaseLease { run_id } => {
                    tx.execute("DELETE FROM leases WHERE run_id = ?1", [run_id.as_str()])?;
                    note(
                        &tx,
                        writer,
                        "lease.released",
                        task_id,
                        Some(run_id),
                        &decision.reason,
                    )?;
                }
                Action::CancelRun { run_id } => {
                    let changed = tx.execute(
                        "UPDATE runs SET status = 'cancelled', finished_at = ?2, error = coalesce(error, ?3) \
                         WHERE id = ?1 AND status = 'running'",
                        params![run_id.as_str(), writer.now.0, decision.reason],
                    )?;
                    if changed > 0 {
                        note(
                            &tx,
                            writer,
                            "run.cancelled",
                            task_id,
                            Some(run_id),
                            &decision.reason,
                        )?;
                    }
                }
                Action::CreateTask { task } => {
                    if create_derived_task(&tx, task, &decision.reason, writer)? {
                        report.created.push(task.id.clone());
                    }
                }
                Action::Claim { run_id, expires_at } => {
                    let id = task_id
                        .ok_or_else(|| StoreError::Invalid("claim without a task".into()))?;
                    write_transition(
                        &tx,
                        id,
                        Some(TaskState::QUEUED),
                        TaskState::RUNNING,
                        &decision.reason,
                        &TaskChanges::default(),
                        writer,
                    )?;
                    let role: String =
                        tx.query_row("SELECT role FROM tasks WHERE id = ?1", [id.as_str()], |r| {
                            r.get(0)
                        })?;
                    let agent = writer.actor;
                    let tick = writer.tick_id.map(|t| t.as_str()).unwrap_or("");
                    tx.execute(
                        "INSERT INTO runs (id, task_id, agent_id, tick_id, role, status, started_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                        params![run_id.as_str(), id.as_str(), agent, tick, role, RunStatus::Running.as_str(), writer.now.0],
                    )?;
                    tx.execute(
                        "INSERT INTO leases (task_id, run_id, agent_id, tick_id, acquired_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                        params![id.as_str(), run_id.as_str(), agent, tick, writer.now.0, expires_at.0],
                    )?;
                    record_event(
                        &tx,
                        writer,
                        "lease.acquired",
                        Some(id),
                        Some(run_id),
                        None,
                        None,
                        &decision.reason,
                        serde_json::json!({ "expires_at": expires_at }),
                    )?;
                    report.claims.push((id.clone(), run_id.clone()));
                }
                Action::Judge {
                    run_id,
                    expires_at,
                    before_ci,
                    ..
                } => {
                    let id = task_id
                        .ok_or_else(|| StoreError::Invalid("judge claim without a task".into()))?;
                    // CAS: only a successful run nobody has claimed for review yet.
                    let claimed = tx.execute(
                        "UPDATE runs SET judged_at = ?2, judgement_version = judgement_version + 1 \
                         WHERE id = ?1 AND status = 'success' AND judged_at IS NULL",
                        params![run_id.as_str(), writer.now.0],
                    )?;
                    if claimed == 1 {
                        let tick = writer.tick_id.map(|t| t.as_str()).unwrap_or("");
                        tx.execute(
                            "INSERT INTO leases (task_id, run_id, agent_id, tick_id, acquired_at, expires_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                            params![id.as_str(), run_id.as_str(), writer.actor, tick, writer.now.0, expires_at.0],
                        )?;
                        record_event(
                            &tx,
                            writer,
                            "judge.claimed",
                            Some(id),
                            Some(run_id),
                            None,
                            None,
                            &decision.reason,
                            serde_json::json!({ "expires_at": expires_at }),
                        )?;
                        report.judge.push((id.clone(), run_id.clone(), *before_ci));
                    } else {
                        record_event(
                            &tx,
                            writer,
                            "judge.claim_lost",
                            Some(id),
                            Some(run_id),
                            None,
                            None,
                            "run already claimed for review",
                            serde_json::json!({}),
                        )?;
                    }
                }
                Action::ResetJudgeClaim { run_id } => {
                    tx.execute(
                        "UPDATE runs SET judged_at = NULL WHERE id = ?1 \
                         AND NOT EXISTS (SELECT 1 FROM judgements j WHERE j.run_id = ?1 \
                         AND j.created_at >= runs.judged_at)",
                        [run_id.as_str()],
                    )?;
                    note(
                        &tx,
                        writer,
                        "judge.claim_reset",
                        task_id,
                        Some(run_id),
                        &decision.reason,
                    )?;
                }
                Action::StartPlanner => report.start_planner = true,
                Action::OpenIssue => {
                    if let Some(id) = task_id {
                        report.open_issues.push(id.clone());
                    }
                }
                Action::ClosePull { pr, superseded_by } => {
                    if let Some(id) = task_id {
                        report
                            .close_pulls
                            .push((id.clone(), *pr, superseded_by.clone()));
                    }
                }
                Action::HealCi {
                    pr,
                    head_sha,
                    branch,
                    comment,
                    dispatch,
                } => {
                    let id = task_id.ok_or_else(|| {
                        StoreError::Invalid("a CI diagnosis without a task".into())
                    })?;
                    let work = HealCi {
                        task: id.clone(),
                        pr: *pr,
                        head_sha: head_sha.clone(),
                        branch: branch.clone(),
                        comment: Some(comment.clone()),
                        dispatch: dispatch.clone(),
                    };
                    record_ci_start(&tx, writer, decision, work, false, &mut report)?;
                }
                Action::StartCi {
                    pr,
                    head_sha,
                    branch,
                    workflows,
                } => {
                    let id = task_id
                        .ok_or_else(|| StoreError::Invalid("a CI start without a task".into()))?;
                    let work = HealCi {
                        task: id.clone(),
                        pr: *pr,
                        head_sha: head_sha.clone(),
                        branch: branch.clone(),
                        comment: None,
                        dispatch: workflows.clone(),
                    };
                    record_ci_start(&tx, writer, decision, work, true, &mut report)?;
                }
                Action::RetargetPull { pr, from, to } => {
                    let id = task_id
                        .ok_or_else(|| StoreError::Invalid("a retarget without a task".into()))?;
                    super::forge::write_retarget(&tx, *pr, from, writer.now)?;
                    super::journal::note(
                        &tx,
                        writer,
                        decision.rule,
                        Some(id),
                        None,
                        &decision.reason,
                    )?;
                    report.retarget_pulls.push((id.clone(), *pr, to.clone()));
                }
                Action::Wait { .. } => {}
            }
        }
        tx.commit()?;
        Ok(report)
    }

    /// Inserts a run row as is (used by tests and by recording outcomes).
    pub fn insert_run(&mut self, run: &Run) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO runs (id, task_id, agent_id, tick_id, role, executor, status, started_at, finished_at, \
             failure_code, error, cost_usd, input_tokens, output_tokens, session_id, branch, head_sha, pr_number, \
             summary, judged_at, judgement_version, reported_usd, metered, refused) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24)",
            params![
                run.id.as_str(),
                run.task_id.as_str(),
                run.agent_id.as_str(),
                run.tick_id.as_str(),
                run.role.as_str(),
                run.executor,
                run.status.as_str(),
                run.started_at.0,
                run.finished_at.map(|t| t.0),
                run.failure_code.map(|c| c.as_str()),
                run.error,
                run.cost_usd,
                run.input_tokens,
                run.output_tokens,
                run.session_id,
                run.branch,
                run.head_sha,
                super::rows::opt_i64(run.pr_number),
                run.summary,
                run.judged_at.map(|t| t.0),
                run.judgement_version,
                run.reported_cost_usd,
                run.metered.as_ref().map(super::rows::to_json),
                super::rows::to_json(&run.refused),
            ],
        )?;
        Ok(())
    }
}

/// Records what is done about a PR head's CI before anything is sent (a dispatch happens at
/// most once per head), and hands the work to the act phase.
fn record_ci_start(
    tx: &rusqlite::Transaction<'_>,
    writer: Writer<'_>,
    decision: &crate::engine::Decision,
    work: HealCi,
    after_scan: bool,
    report: &mut ApplyReport,
) -> Result<(), StoreError> {
    use crate::engine::stall::{CiHeal, Dispatch};
    let heal = CiHeal {
        head_sha: work.head_sha.clone(),
        at: writer.now,
        dispatch: if work.dispatch.is_empty() {
            Dispatch::NotPossible
        } else {
            Dispatch::Requested {
                workflows: work.dispatch.clone(),
            }
        },
        after_scan,
    };
    super::forge::write_ci_heal(tx, work.pr, &heal, writer.now)?;
    super::journal::note(
        tx,
        writer,
        decision.rule,
        Some(&work.task),
        None,
        &decision.reason,
    )?;
    report.heal_ci.push(work);
    Ok(())
}

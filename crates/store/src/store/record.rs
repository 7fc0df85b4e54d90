//! Recording outcomes (DESIGN §3 step 6), a run's and a review's: only where this tick's agent
//! still holds the lease; otherwise the outcome is logged as stray and the task is left to
//! recovery. Also a fanned-out run's lease handover. Not for: deciding what the outcome does
//! (`engine::outcome`, `engine::verdict`) or the claim that started the run (`store::apply`).

use rusqlite::{params, OptionalExtension, Transaction};

use super::journal::{create_derived_task, record_event, write_transition, TaskChanges, Writer};
use super::{Store, StoreError};
use crate::engine::outcome::OutcomeDecision;
use crate::engine::verdict::VerdictDecision;
use crate::model::{RunId, Task, TaskId, TaskState, TaskStatus, Verdict};

/// The facts of a finished run, besides its status.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunRecord {
    pub executor: Option<String>,
    pub error: Option<String>,
    pub summary: Option<String>,
    pub cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub session_id: Option<String>,
    pub branch: Option<String>,
    /// The commit the run's workspace started from (not stored: `work --output` bundles the
    /// change from it, `apply` checks it).
    pub start_sha: Option<String>,
    pub head_sha: Option<String>,
    /// The pull request the change is in (github mode).
    pub pr_number: Option<u64>,
    /// A research run's report (issue 28): kept with the run's outcome, posted after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub research: Option<crate::model::ResearchReport>,
    /// The agent was cut short (timeout, turn or spending cap): what it changed is worth
    /// keeping for the next attempt. Not stored.
    pub cut_short: bool,
    /// Which executor of its role's chain ran (not stored as such: `executor` says it for
    /// people; the outcome reads it to park or clear the executor).
    pub executor_use: Option<crate::engine::fallback::ExecutorUse>,
    /// The verification commands as they ran on the head (issue 28: its check run lists
    /// them; `apply` publishes them from the work job's result file). Not stored.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub verification: Vec<crate::model::checks::CommandReport>,
    /// What the agent CLI reported it spent; `cost_usd` is the larger of this and the metered
    /// figure (issue 37).
    #[serde(default)]
    pub reported_cost_usd: f64,
    /// What opentiger's proxy metered of the agent's model traffic.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metered: Option<crate::model::network::Metering>,
    /// Hosts the proxy refused for the agent and its checks.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<crate::model::network::Refusal>,
    /// The change the threat scan held (issue 36): what a person's approval will name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub held: Option<crate::engine::scan::HeldChange>,
    /// The approved change this run let out (its held commit): the approval is used up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub used_approval: Option<String>,
    /// How big its agent's prompt was, and what the host context and failure hints took of it
    /// (issue 52; `task show -v`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt: Option<crate::model::learned::PromptSize>,
}

/// What happened to an outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Recorded {
    Applied,
    /// The lease was no longer ours: logged, nothing else changed.
    Stray {
        holder: Option<String>,
    },
}

/// A verdict as stored in `judgements`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JudgementRow {
    pub head_sha: String,
    pub verdict: Verdict,
    pub summary: String,
    pub findings: Vec<String>,
    /// Per acceptance criterion of the task's issue, the judge's answer (empty without one).
    pub criteria: Vec<crate::model::CriterionCheck>,
}

/// Lease holders that are a fan-out's claims waiting for their work jobs.
pub const FAN_OUT_PREFIX: &str = "fanout:";

fn lease_holder(
    tx: &Transaction<'_>,
    task: &TaskId,
    run: &RunId,
    agent: &str,
) -> Result<Result<(), Option<String>>, StoreError> {
    let held: Option<(String, String)> = tx
        .query_row(
            "SELECT run_id, agent_id FROM leases WHERE task_id = ?1",
            [task.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    Ok(match held {
        Some((r, a)) if r == run.as_str() && a == agent => Ok(()),
        Some((_, a)) => Err(Some(a)),
        None => Err(None),
    })
}

/// What `work --run` found when it came to take over a fanned-out run's lease.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Handover {
    /// The lease is now this process's (from `fan_out_claim`: still the fan-out's, free to
    /// take): run the task.
    Taken(TaskId),
    /// The run is already recorded (a job retried after it finished): nothing to do.
    Finished(String),
    /// Someone else holds it, or nobody (expired and reclaimed): not ours to run.
    Held(Option<String>),
    /// No such run.
    Unknown,
}

/// [`Store::fan_out_claim`] on a connection or inside a transaction.
fn peek_handover(
    conn: &rusqlite::Connection,
    run: &RunId,
    now: crate::time::Timestamp,
) -> Result<Handover, StoreError> {
    let lease: Option<(String, String, i64)> = conn
        .query_row(
            "SELECT task_id, agent_id, expires_at FROM leases WHERE run_id = ?1",
            [run.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
        .optional()?;
    let Some((task, holder, expires_at)) = lease else {
        let status: Option<String> = conn
            .query_row(
                "SELECT status FROM runs WHERE id = ?1",
                [run.as_str()],
                |r| r.get(0),
            )
            .optional()?;
        return Ok(match status {
            None => Handover::Unknown,
            Some(s) if s == crate::model::RunStatus::Running.as_str() => Handover::Held(None),
            Some(s) => Handover::Finished(s),
        });
    };
    if !holder.starts_with(FAN_OUT_PREFIX) || expires_at <= now.0 {
        return Ok(Handover::Held(Some(holder)));
    }
    Ok(Handover::Taken(TaskId(task)))
}

impl Store {
    /// What a fanned-out run is waiting for, read only: [`Handover::Taken`] (with its task)
    /// when its lease is still held by a `fanout:<tick>` claim that has not expired at `now`.
    /// `work --output` asks this; it cannot write the state.
    pub fn fan_out_claim(
        &self,
        run: &RunId,
        now: crate::time::Timestamp,
    ) -> Result<Handover, StoreError> {
        peek_handover(&self.conn, run, now)
    }

    /// Moves the lease of a fanned-out run (held by `fanout:<tick>`) to `to`, if it has not
    /// expired, logging the handover. Anything else is reported, nothing changed.
    pub fn take_over_lease(
        &mut self,
        run: &RunId,
        to: &str,
        writer: Writer<'_>,
    ) -> Result<Handover, StoreError> {
        let tx = self.conn.transaction()?;
        let (task, holder) = match peek_handover(&tx, run, writer.now)? {
            Handover::Taken(task) => {
                let holder: String = tx.query_row(
                    "SELECT agent_id FROM leases WHERE run_id = ?1",
                    [run.as_str()],
                    |r| r.get(0),
                )?;
                (task, holder)
            }
            other => return Ok(other),
        };
        tx.execute(
            "UPDATE leases SET agent_id = ?2 WHERE run_id = ?1",
            params![run.as_str(), to],
        )?;
        tx.execute(
            "UPDATE runs SET agent_id = ?2 WHERE id = ?1",
            params![run.as_str(), to],
        )?;
        record_event(
            &tx,
            writer,
            "lease.handover",
            Some(&task),
            Some(run),
            None,
            None,
            &format!("run {run} taken over from {holder} by {to}"),
            serde_json::json!({ "from": holder }),
        )?;
        tx.commit()?;
        Ok(Handover::Taken(task))
    }

    /// Applies a worker run's outcome: the run row, the task's transition, the spend ledger, and
    /// the lease released, in one transaction.
    pub fn record_run(
        &mut self,
        task_id: &TaskId,
        run_id: &RunId,
        record: &RunRecord,
        decision: &OutcomeDecision,
        writer: Writer<'_>,
    ) -> Result<Recorded, StoreError> {
        let tx = self.conn.transaction()?;
        if let Err(holder) = lease_holder(&tx, task_id, run_id, writer.actor)? {
            let reason = format!(
                "outcome of run {run_id} arrived after its lease was lost ({}): not applied",
                holder.as_deref().unwrap_or("no lease")
            );
            record_event(
                &tx,
                writer,
                "run.stray_outcome",
                Some(task_id),
                Some(run_id),
                None,
                None,
                &reason,
                serde_json::json!({ "status": decision.run_status, "failure_code": decision.failure_code }),
            )?;
            tx.commit()?;
            return Ok(Recorded::Stray { holder });
        }
        tx.execute(
            "UPDATE runs SET status = ?2, finished_at = ?3, failure_code = ?4, error = ?5, summary = ?6, cost_usd = ?7, \
             input_tokens = ?8, output_tokens = ?9, session_id = ?10, branch = ?11, head_sha = ?12, executor = ?13, \
             reported_usd = ?14, metered = ?15, refused = ?16 WHERE id = ?1",
            params![
                run_id.as_str(),
                decision.run_status.as_str(),
                writer.now.0,
                decision.failure_code.map(|c| c.as_str()),
                record.error,
                record.summary,
                record.cost_usd,
                record.input_tokens,
                record.output_tokens,
                record.session_id,
                record.branch,
                record.head_sha,
                record.executor,
                record.reported_cost_usd,
                record.metered.as_ref().map(super::rows::to_json),
                super::rows::to_json(&record.refused),
            ],
        )?;
        if let (Some(report), crate::model::RunStatus::Success) =
            (&record.research, decision.run_status)
        {
            super::research::write_report(&tx, report, writer.now)?;
        }
        let delivered = decision.run_status == crate::model::RunStatus::Success;
        let used = record.used_approval.as_deref().filter(|_| delivered);
        super::approvals::write(&tx, task_id, record.held.as_ref(), used, writer.now)?;
        let changes = TaskChanges {
            attempts: decision.attempts.clone(),
            next_attempt_at: decision.next_attempt_at,
            needs_approval: None,
        };
        write_transition(
            &tx,
            task_id,
            Some(TaskState::RUNNING),
            decision.to,
            &decision.reason,
            &changes,
            writer,
        )?;
        tx.execute("DELETE FROM leases WHERE task_id = ?1", [task_id.as_str()])?;
        if let Some(change) = &decision.executor {
            super::executors::apply_change(&tx, change, writer.now)?;
        }
        if let Some(pr) = record.pr_number {
            tx.execute(
                "UPDATE runs SET pr_number = ?2 WHERE id = ?1",
                params![run_id.as_str(), pr as i64],
            )?;
            tx.execute(
                "UPDATE tasks SET source_pr = ?2 WHERE id = ?1",
                params![task_id.as_str(), pr as i64],
            )?;
            tx.execute(
                "INSERT INTO pull_states (number, state, head_sha, updated_at) VALUES (?1, 'open', ?2, ?3) \
                 ON CONFLICT(number) DO UPDATE SET state = 'open', head_sha = excluded.head_sha, updated_at = excluded.updated_at, \
                 checks = CASE WHEN pull_states.head_sha IS excluded.head_sha THEN pull_states.checks ELSE NULL END",
                params![pr as i64, record.head_sha, writer.now.0],
            )?;
        }
        if decision.run_status != crate::model::RunStatus::Cancelled {
            add_spend(&tx, task_id, record, writer)?;
        }
        record_event(
            &tx,
            writer,
            "run.finished",
            Some(task_id),
            Some(run_id),
            None,
            None,
            &decision.reason,
            serde_json::json!({ "status": decision.run_status, "cost_usd": record.cost_usd }),
        )?;
        tx.commit()?;
        Ok(Recorded::Applied)
    }

    /// Applies a judge's conclusion: the judgement row, the AutoFix child, the transition and the
    /// lease released, in one transaction.
    pub fn record_judgement(
        &mut self,
        task_id: &TaskId,
        run_id: &RunId,
        judgement: Option<&JudgementRow>,
        decision: &VerdictDecision,
        writer: Writer<'_>,
    ) -> Result<Recorded, StoreError> {
        let tx = self.conn.transaction()?;
        if let Err(holder) = lease_holder(&tx, task_id, run_id, writer.actor)? {
            let reason =
                format!("review of run {run_id} arrived after its lease was lost: not applied");
            record_event(
                &tx,
                writer,
                "judge.stray_verdict",
                Some(task_id),
                Some(run_id),
                None,
                None,
                &reason,
                serde_json::json!({}),
            )?;
            tx.commit()?;
            return Ok(Recorded::Stray { holder });
        }
        if let Some(j) = judgement {
            tx.execute(
                "INSERT INTO judgements (run_id, task_id, head_sha, verdict, summary, findings, created_at, criteria) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                params![run_id.as_str(), task_id.as_str(), j.head_sha, j.verdict.as_str(), j.summary, serde_json::to_string(&j.findings).unwrap_or_default(), writer.now.0, serde_json::to_string(&j.criteria).unwrap_or_default()],
            )?;
        }
        if let Some(child) = &decision.create {
            create_derived_task(&tx, child, &format!("{} for {task_id}", child.kind), writer)?;
        }
        let current: String = tx.query_row(
            "SELECT status FROM tasks WHERE id = ?1",
            [task_id.as_str()],
            |r| r.get(0),
        )?;
        let changes = TaskChanges {
            attempts: decision.attempts.clone(),
            next_attempt_at: decision.rejudge.then_some(decision.next_attempt_at),
            needs_approval: None,
        };
        if current != TaskStatus::Blocked.as_str()
            || decision.to != TaskState::blocked(crate::model::BlockReason::AwaitingJudge)
        {
            write_transition(
                &tx,
                task_id,
                None,
                decision.to,
                &decision.reason,
                &changes,
                writer,
            )?;
        } else {
            // Stays awaiting the judge: only counters and the retry time change.
            tx.execute(
                "UPDATE tasks SET attempts = coalesce(?2, attempts), next_attempt_at = ?3, status_reason = ?4, updated_at = ?5 WHERE id = ?1",
                params![task_id.as_str(), changes.attempts.as_ref().map(|a| serde_json::to_string(a).unwrap_or_default()), decision.next_attempt_at.map(|t| t.0), decision.reason, writer.now.0],
            )?;
            record_event(
                &tx,
                writer,
                "judge.retry",
                Some(task_id),
                Some(run_id),
                None,
                None,
                &decision.reason,
                serde_json::json!({}),
            )?;
        }
        if decision.rejudge {
            tx.execute(
                "UPDATE runs SET judged_at = NULL WHERE id = ?1",
                [run_id.as_str()],
            )?;
        }
        if let Some(head) = &decision.rebind_head {
            // The base was merged into the run's branch: CI and the next review look at this head.
            tx.execute(
                "UPDATE runs SET head_sha = ?2 WHERE id = ?1",
                params![run_id.as_str(), head],
            )?;
        }
        tx.execute("DELETE FROM leases WHERE task_id = ?1", [task_id.as_str()])?;
        record_event(
            &tx,
            writer,
            "judge.concluded",
            Some(task_id),
            Some(run_id),
            None,
            None,
            &decision.reason,
            serde_json::json!({ "verdict": judgement.map(|j| j.verdict) }),
        )?;
        tx.commit()?;
        Ok(Recorded::Applied)
    }

    /// Children of a task of one kind (AutoFix attempts so far).
    pub fn count_children(
        &self,
        task_id: &TaskId,
        kind: crate::model::TaskKind,
    ) -> Result<u32, StoreError> {
        Ok(self.conn.query_row(
            "SELECT count(*) FROM tasks WHERE parent_task_id = ?1 AND kind = ?2",
            params![task_id.as_str(), kind.as_str()],
            |r| r.get(0),
        )?)
    }

    /// The change `task` belongs to and its follow-ups so far (see [`Lineage::of`]): the task,
    /// its source and its source's source are read, and their children counted.
    ///
    /// [`Lineage::of`]: crate::engine::verdict::Lineage::of
    pub fn lineage(&self, task: &Task) -> Result<crate::engine::verdict::Lineage, StoreError> {
        use crate::model::TaskKind;
        let mut known = std::collections::BTreeMap::new();
        let mut counts = std::collections::BTreeMap::new();
        let mut next = Some(task.clone());
        for _ in 0..3 {
            let Some(t) = next.take() else { break };
            for kind in [
                TaskKind::Autofix,
                TaskKind::AutofixConflict,
                TaskKind::Recreate,
            ] {
                counts.insert((t.id.clone(), kind), self.count_children(&t.id, kind)?);
            }
            next = match &t.parent_task_id {
                Some(parent) => match self.task(parent) {
                    Ok(p) => Some(p),
                    Err(StoreError::NoSuchTask(_)) => None,
                    Err(e) => return Err(e),
                },
                None => None,
            };
            known.insert(t.id.clone(), t);
        }
        Ok(crate::engine::verdict::Lineage::of(
            task,
            |id| known.get(id).cloned(),
            |id, kind| counts.get(&(id.clone(), kind)).copied().unwrap_or(0),
        ))
    }

    /// Judgements recorded for a task and its children: how often this change was reviewed.
    pub fn reviews_of_lineage(&self, root: &TaskId) -> Result<u32, StoreError> {
        Ok(self.conn.query_row(
            "SELECT count(*) FROM judgements WHERE task_id = ?1 OR task_id IN (SELECT id FROM tasks WHERE parent_task_id = ?1)",
            [root.as_str()],
            |r| r.get(0),
        )?)
    }

    /// Spend so far on one UTC day.
    pub fn spend_on(&self, day: &str) -> Result<f64, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT spent_usd FROM budgets WHERE scope = 'day' AND key = ?1",
                [day],
                |r| r.get(0),
            )
            .optional()?
            .unwrap_or(0.0))
    }
}

fn add_spend(
    tx: &Transaction<'_>,
    task: &TaskId,
    record: &RunRecord,
    writer: Writer<'_>,
) -> Result<(), StoreError> {
    let tokens = (record.input_tokens, record.output_tokens);
    let role: String = tx.query_row(
        "SELECT role FROM tasks WHERE id = ?1",
        [task.as_str()],
        |r| r.get(0),
    )?;
    for (scope, key) in [
        ("day", writer.now.day()),
        ("task", task.to_string()),
        ("role", role),
    ] {
        super::spend::add_to_ledger(tx, scope, &key, record.cost_usd, tokens)?;
    }
    Ok(())
}

impl Store {
    /// A total kept in `counters` (0 if never counted).
    pub fn counter(&self, name: &str) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT value FROM counters WHERE name = ?1", [name], |r| {
                r.get(0)
            })
            .optional()?
            .unwrap_or(0))
    }
}

impl Store {
    /// The latest run of a task as a person's retry looks at it
    /// (`engine::commands::retry_move`): whether it made a change, and whether a review of
    /// that change asked for another.
    pub fn last_run(
        &self,
        task: &TaskId,
    ) -> Result<Option<crate::engine::commands::LastRun>, StoreError> {
        let Some(run) = self.runs_of(task, 1)?.into_iter().next() else {
            return Ok(None);
        };
        let made_change = run.status == crate::model::RunStatus::Success && run.head_sha.is_some();
        let held = match (&run.head_sha, run.failure_code) {
            (Some(head), Some(crate::model::FailureCode::ThreatFlagged)) => {
                self.held_change(task, head)?
            }
            _ => None,
        };
        let changes_requested: bool = self.conn.query_row(
            "SELECT EXISTS (SELECT 1 FROM judgements WHERE run_id = ?1 AND verdict = ?2)",
            params![run.id.as_str(), Verdict::RequestChanges.as_str()],
            |r| r.get(0),
        )?;
        Ok(Some(crate::engine::commands::LastRun {
            id: run.id,
            made_change,
            changes_requested,
            held,
        }))
    }

    /// A person's retry of a task whose judge gave up (issue 35): it waits on the judge again
    /// for `run`, which is marked unjudged, its budgets afresh; no worker run is started.
    pub fn rejudge(
        &mut self,
        task: &TaskId,
        run: &RunId,
        reason: &str,
        writer: Writer<'_>,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        let changes = TaskChanges {
            attempts: Some(Default::default()),
            next_attempt_at: Some(None),
            needs_approval: Some(false),
        };
        let to = TaskState::blocked(crate::model::BlockReason::AwaitingJudge);
        write_transition(&tx, task, None, to, reason, &changes, writer)?;
        tx.execute(
            "UPDATE runs SET judged_at = NULL WHERE id = ?1 AND task_id = ?2",
            params![run.as_str(), task.as_str()],
        )?;
        tx.commit()?;
        Ok(())
    }
}

//! Plan records: what the planner was asked to plan, when, and how it ended; and a person's
//! `/opentiger replan`, which makes the requirement count as changed. Not for: when the planner
//! may run (`engine::planner_gate`) or the plan's tasks (`tasks.rs`).

use rusqlite::{params, OptionalExtension};

use super::journal::{record_event, Writer};
use super::{Store, StoreError};
use crate::model::{PlanHistory, PlanRecord, PlanStatus, Task};
use crate::time::Timestamp;

/// A review verdict, as the planner sees it.
#[derive(Clone, Debug, PartialEq)]
pub struct ReviewFeedback {
    pub task_title: String,
    pub verdict: String,
    pub summary: String,
    pub findings: Vec<String>,
}

/// The key whose value salts the plan signature: a `replan` makes the requirement count as
/// changed (the comment id, so each replan is new).
const REPLAN: &str = "planner:replan";

const COLUMNS: &str =
    "id, signature, requirement_hash, base_head, status, source, task_count, errors, created_at";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<PlanRecord> {
    Ok(PlanRecord {
        id: r.get(0)?,
        signature: r.get(1)?,
        requirement_hash: r.get(2)?,
        base_head: r.get(3)?,
        status: PlanStatus::parse(&r.get::<_, String>(4)?),
        source: r.get(5)?,
        task_count: r.get(6)?,
        errors: serde_json::from_str(&r.get::<_, String>(7)?).unwrap_or_default(),
        created_at: Timestamp(r.get(8)?),
    })
}

impl Store {
    pub fn plan_history(&self, signature: Option<&str>) -> Result<PlanHistory, StoreError> {
        let last = |filter: &str| -> Result<Option<PlanRecord>, StoreError> {
            Ok(self
                .conn
                .query_row(&format!("SELECT {COLUMNS} FROM plans {filter} ORDER BY created_at DESC, rowid DESC LIMIT 1"), [], row)
                .optional()?)
        };
        let last_attempt = last("")?;
        let last_created = last("WHERE status = 'created'")?;
        let failures_for = match signature {
            Some(sig) => self.conn.query_row(
                "SELECT count(*) FROM plans WHERE signature = ?1 AND status <> 'created'",
                [sig],
                |r| r.get(0),
            )?,
            None => 0,
        };
        Ok(PlanHistory {
            last_attempt,
            last_created,
            failures_for,
        })
    }

    /// Was this signature already planned (tasks created)?
    pub fn planned(&self, signature: &str) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT 1 FROM plans WHERE signature = ?1 AND status = 'created'",
                [signature],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }

    /// Whether the planner attempt `id` is recorded (a dead tick's kept attempt, replayed
    /// twice, is recorded once: `tick::unsaved`).
    pub fn has_plan(&self, id: &str) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT 1 FROM plans WHERE id = ?1", [id], |_| Ok(()))
            .optional()?
            .is_some())
    }

    /// The plan each planned task came from.
    pub fn plan_of_tasks(
        &self,
    ) -> Result<std::collections::BTreeMap<crate::model::TaskId, String>, StoreError> {
        let rows = self
            .conn
            .prepare("SELECT task_id, plan_id FROM plan_tasks")?
            .query_map([], |r| {
                Ok((crate::model::TaskId(r.get::<_, String>(0)?), r.get(1)?))
            })?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Records a planner attempt, creating its tasks in the same transaction. A signature that
    /// was planned meanwhile (another tick) creates nothing and returns `false`.
    pub fn record_plan(
        &mut self,
        plan: &PlanRecord,
        tasks: &[Task],
        writer: Writer<'_>,
    ) -> Result<bool, StoreError> {
        if plan.status == PlanStatus::Created && self.planned(&plan.signature)? {
            return Ok(false);
        }
        let tx = self.conn.transaction()?;
        super::journal::insert_tasks_in(&tx, tasks, writer)?;
        for task in tasks {
            tx.execute(
                "INSERT OR REPLACE INTO plan_tasks (task_id, plan_id) VALUES (?1, ?2)",
                params![task.id.as_str(), plan.id],
            )?;
        }
        tx.execute(
            &format!("INSERT OR REPLACE INTO plans ({COLUMNS}, tick_id) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)"),
            params![
                plan.id,
                plan.signature,
                plan.requirement_hash,
                plan.base_head,
                plan.status.as_str(),
                plan.source,
                plan.task_count,
                serde_json::to_string(&plan.errors).unwrap_or_default(),
                plan.created_at.0,
                writer.tick_id.map(|t| t.as_str()),
            ],
        )?;
        let reason = match plan.status {
            PlanStatus::Created => format!("planned {} task(s) ({})", plan.task_count, plan.source),
            PlanStatus::Rejected => format!("plan rejected: {}", plan.errors.join("; ")),
            PlanStatus::Failed => format!("planner failed: {}", plan.errors.join("; ")),
        };
        record_event(
            &tx,
            writer,
            &format!("planner.plan_{}", plan.status.as_str()),
            None,
            None,
            None,
            None,
            &reason,
            serde_json::json!({ "plan": plan.id, "signature": plan.signature }),
        )?;
        tx.commit()?;
        Ok(true)
    }

    /// The newest review verdicts that asked for changes, for the planner's prompt.
    pub fn recent_feedback(&self, limit: usize) -> Result<Vec<ReviewFeedback>, StoreError> {
        let rows = self
            .conn
            .prepare(
                "SELECT t.title, j.verdict, j.summary, j.findings FROM judgements j JOIN tasks t ON t.id = j.task_id \
                 ORDER BY j.created_at DESC, j.id DESC LIMIT ?1",
            )?
            .query_map([limit as i64], |r| {
                Ok(ReviewFeedback {
                    task_title: r.get(0)?,
                    verdict: r.get(1)?,
                    summary: r.get(2)?,
                    findings: serde_json::from_str(&r.get::<_, String>(3)?).unwrap_or_default(),
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// The salt of the latest `/opentiger replan`, if one was given.
    pub fn replan_salt(&self) -> Result<Option<String>, StoreError> {
        Ok(self.cursor(REPLAN)?.body)
    }

    /// A person's `replan` (`nonce`: unique per command, its comment id): the plan's inputs
    /// count as changed.
    pub fn request_replan(&mut self, nonce: u64, now: Timestamp) -> Result<(), StoreError> {
        self.set_cursor(
            REPLAN,
            &super::Cursor {
                etag: None,
                body: Some(nonce.to_string()),
            },
            now,
        )
    }
}

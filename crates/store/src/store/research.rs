//! Research reports (issue 28): each research task's latest report, written with its run's
//! outcome (`record_run`), read by the tick that posts it and by the commands that approve
//! its proposals. An approved proposal is not a row here: it is the task with the id
//! `engine::research::proposal_task_id` gives, so approving twice finds it and creates nothing.
//! Not for: checking the report (`engine::research`), posting it (`tick::people::research`), or
//! deciding an approval (`engine::commands::research`).

use rusqlite::{params, Transaction};

use super::{Store, StoreError};
use crate::model::{ApprovedProposal, ResearchReport, Task, TaskId};
use crate::time::Timestamp;

/// Keeps `report` as its task's latest, in the run's transaction.
pub(super) fn write_report(
    tx: &Transaction<'_>,
    report: &ResearchReport,
    now: Timestamp,
) -> Result<(), StoreError> {
    let json = |what: &str, value: Result<String, serde_json::Error>| {
        value
            .map_err(|e| StoreError::Invalid(format!("research {what} of {}: {e}", report.task_id)))
    };
    tx.execute(
        "INSERT OR REPLACE INTO research_reports \
         (task_id, run_id, base_sha, body, criteria, proposals, updated_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        params![
            report.task_id.as_str(),
            report.run_id,
            report.base_sha,
            report.body,
            json("criteria", serde_json::to_string(&report.criteria))?,
            json("proposals", serde_json::to_string(&report.proposals))?,
            now.0,
        ],
    )?;
    Ok(())
}

impl Store {
    /// The latest report of every research task that has one, oldest first.
    pub fn research_reports(&self) -> Result<Vec<ResearchReport>, StoreError> {
        self.reports_of(None)
    }

    /// The latest report of research task `id`, if it wrote one.
    pub fn research_report(&self, id: &TaskId) -> Result<Option<ResearchReport>, StoreError> {
        Ok(self.reports_of(Some(id))?.pop())
    }

    /// The reports of task `only`, or of every task.
    fn reports_of(&self, only: Option<&TaskId>) -> Result<Vec<ResearchReport>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT task_id, run_id, base_sha, body, criteria, proposals \
             FROM research_reports WHERE ?1 IS NULL OR task_id = ?1 \
             ORDER BY updated_at, task_id",
        )?;
        let rows = stmt.query_map([only.map(|id| id.as_str())], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
                r.get::<_, String>(3)?,
                r.get::<_, String>(4)?,
                r.get::<_, String>(5)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (task_id, run_id, base_sha, body, criteria, proposals) = row?;
            let bad = |what: &str, e: serde_json::Error| {
                StoreError::Invalid(format!("research {what} of {task_id}: {e}"))
            };
            out.push(ResearchReport {
                criteria: serde_json::from_str(&criteria).map_err(|e| bad("criteria", e))?,
                proposals: serde_json::from_str(&proposals).map_err(|e| bad("proposals", e))?,
                task_id: TaskId(task_id),
                run_id,
                base_sha,
                body,
            });
        }
        Ok(out)
    }

    /// The proposals of `report` approved so far: the tasks they became, with their issues.
    pub fn approved_proposals(
        &self,
        report: &ResearchReport,
    ) -> Result<Vec<ApprovedProposal>, StoreError> {
        let mut out = Vec::new();
        for number in 1..=report.proposals.len() {
            let number = u32::try_from(number).unwrap_or(u32::MAX);
            let id = crate::engine::research::proposal_task_id(&report.task_id, number);
            if let Ok(task) = self.task(&id) {
                out.push(ApprovedProposal {
                    number,
                    task_id: task.id,
                    issue: task.issue_number,
                });
            }
        }
        Ok(out)
    }

    /// Adds the task an approved proposal became, unless it exists (approved before).
    pub fn add_proposal_task(
        &mut self,
        task: &Task,
        writer: super::Writer<'_>,
    ) -> Result<bool, StoreError> {
        if self.task(&task.id).is_ok() {
            return Ok(false);
        }
        self.insert_tasks(std::slice::from_ref(task), writer)?;
        Ok(true)
    }
}

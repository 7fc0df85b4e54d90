//! A task's family (issue 27: the task with its AutoFix, rework, conflict-fix and recreate
//! descendants, `engine::fairness`) and the runs it paid for, for `status` and `task show`.
//! Not for: the family's spend (`store::spend`) or its fair share of runs (`engine::fairness`).

use rusqlite::params;

use super::{Store, StoreError};
use crate::model::TaskId;

/// The family a task belongs to and the runs all of it started.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FamilyRuns {
    /// The family's oldest task the state holds (or names, when it was pruned).
    pub family: String,
    pub tasks: u32,
    pub paid_runs: u32,
}

impl Store {
    /// `id`'s family and its runs: up the `parent_task_id` chain to the oldest ancestor, then
    /// every descendant of it.
    pub fn family_runs(&self, id: &TaskId) -> Result<FamilyRuns, StoreError> {
        let family: String = self.conn.query_row(
            "WITH RECURSIVE up(id, parent, depth) AS (
                 SELECT id, parent_task_id, 0 FROM tasks WHERE id = ?1
                 UNION
                 SELECT t.id, t.parent_task_id, up.depth + 1
                 FROM tasks t JOIN up ON t.id = up.parent WHERE up.depth < 100
             )
             SELECT CASE WHEN parent IS NULL OR parent NOT IN (SELECT id FROM tasks)
                         THEN COALESCE(parent, id) ELSE id END
             FROM up ORDER BY depth DESC LIMIT 1",
            params![id.as_str()],
            |row| row.get(0),
        )?;
        let (tasks, paid_runs): (u32, u32) = self.conn.query_row(
            "WITH RECURSIVE down(id, depth) AS (
                 SELECT ?1, 0
                 UNION
                 SELECT t.id, down.depth + 1
                 FROM tasks t JOIN down ON t.parent_task_id = down.id WHERE down.depth < 100
             )
             SELECT (SELECT COUNT(*) FROM tasks WHERE id IN (SELECT id FROM down)),
                    (SELECT COUNT(*) FROM runs WHERE task_id IN (SELECT id FROM down))",
            params![family],
            |row| Ok((row.get(0)?, row.get(1)?)),
        )?;
        Ok(FamilyRuns {
            family,
            tasks,
            paid_runs,
        })
    }
}

//! Tasks, runs, events and ticks: the queries behind the CLI and the tick, and the single moves
//! the CLI makes by hand (insert tasks, move one, clear a cooldown, record a tick).
//!
//! Not for: the row and event writes shared by every transaction ([`super::journal`]), applying
//! a plan ([`super::apply`]) or recording a run's outcome ([`super::record`]).

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::{params, OptionalExtension};
use serde::Serialize;

use super::journal::{insert_tasks_in, record_event, write_transition, TaskChanges, Writer};
use super::rows::{self, to_json, RUN_COLUMNS, TASK_COLUMNS};
use super::{Store, StoreError};
use crate::model::{Event, Run, RunId, Task, TaskId, TaskState, TaskStatus, TickId};
use crate::time::Timestamp;

/// Which tasks to list.
#[derive(Clone, Debug, Default)]
pub struct TaskFilter {
    pub status: Option<TaskStatus>,
    /// Include done and cancelled tasks.
    pub include_terminal: bool,
}

/// What a new task is made of; the store checks its dependencies.
pub type NewTask = Task;

/// One row of the `ticks` heartbeat table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TickRecord {
    pub id: String,
    pub agent_id: String,
    pub started_at: Timestamp,
    pub finished_at: Option<Timestamp>,
    pub outcome: Option<String>,
    pub summary: serde_json::Value,
}

impl Store {
    /// Inserts tasks atomically. Dependencies must name existing tasks or tasks of the same
    /// batch, and must not form a cycle; otherwise nothing is written.
    pub fn insert_tasks(&mut self, tasks: &[Task], writer: Writer<'_>) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        insert_tasks_in(&tx, tasks, writer)?;
        tx.commit()?;
        Ok(())
    }

    /// Resolves a full id or a unique prefix (at least 4 characters, like git).
    pub fn resolve_task_id(&self, given: &str) -> Result<TaskId, StoreError> {
        let given = given.trim();
        let exact: Option<String> = self
            .conn
            .query_row("SELECT id FROM tasks WHERE id = ?1", [given], |r| r.get(0))
            .optional()?;
        if let Some(id) = exact {
            return Ok(TaskId(id));
        }
        if given.len() < 4 {
            return Err(StoreError::Invalid(format!(
                "task {given} not found, and a shortened id needs at least 4 characters\n  fix: give at least 4 characters of the id (`opentiger task list` shows them)"
            )));
        }
        let pattern = format!("{}%", given.replace(['%', '_'], ""));
        let mut stmt = self
            .conn
            .prepare("SELECT id FROM tasks WHERE id LIKE ?1 ORDER BY id LIMIT 6")?;
        let matches: Vec<String> = stmt
            .query_map([pattern], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        match matches.len() {
            0 => Err(StoreError::NoSuchTask(given.to_string())),
            1 => Ok(TaskId(matches[0].clone())),
            _ => Err(StoreError::Ambiguous {
                prefix: given.to_string(),
                matches,
            }),
        }
    }

    /// One task with its dependencies.
    pub fn task(&self, id: &TaskId) -> Result<Task, StoreError> {
        let sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE id = ?1");
        let mut task = self
            .conn
            .query_row(&sql, [id.as_str()], rows::task)
            .optional()?
            .ok_or_else(|| StoreError::NoSuchTask(id.to_string()))?;
        task.dependencies = self
            .dependencies_of(&[&task.id])?
            .remove(&task.id)
            .unwrap_or_default();
        Ok(task)
    }

    pub fn list_tasks(&self, filter: &TaskFilter) -> Result<Vec<Task>, StoreError> {
        let mut sql = format!("SELECT {TASK_COLUMNS} FROM tasks WHERE 1 = 1");
        if let Some(status) = filter.status {
            sql.push_str(&format!(" AND status = '{}'", status.as_str()));
        } else if !filter.include_terminal {
            sql.push_str(" AND status NOT IN ('done', 'cancelled')");
        }
        sql.push_str(" ORDER BY created_at, id");
        let mut tasks: Vec<Task> = self
            .conn
            .prepare(&sql)?
            .query_map([], rows::task)?
            .collect::<Result<_, _>>()?;
        self.attach_dependencies(&mut tasks)?;
        Ok(tasks)
    }

    pub(crate) fn attach_dependencies(&self, tasks: &mut [Task]) -> Result<(), StoreError> {
        let ids: Vec<&TaskId> = tasks.iter().map(|t| &t.id).collect();
        let mut deps = self.dependencies_of(&ids)?;
        for task in tasks {
            task.dependencies = deps.remove(&task.id).unwrap_or_default();
        }
        Ok(())
    }

    fn dependencies_of(
        &self,
        ids: &[&TaskId],
    ) -> Result<BTreeMap<TaskId, Vec<TaskId>>, StoreError> {
        let mut out: BTreeMap<TaskId, Vec<TaskId>> = BTreeMap::new();
        if ids.is_empty() {
            return Ok(out);
        }
        let wanted: BTreeSet<&str> = ids.iter().map(|i| i.as_str()).collect();
        // One task: an index lookup. Many: one scan of the (small, two-column) edge table.
        let (sql, arg) = match ids {
            [one] => (
                "SELECT task_id, depends_on FROM task_dependencies WHERE task_id = ?1 ORDER BY depends_on",
                one.as_str(),
            ),
            _ => (
                "SELECT task_id, depends_on FROM task_dependencies WHERE ?1 = ?1 ORDER BY task_id, depends_on",
                "",
            ),
        };
        let mut stmt = self.conn.prepare_cached(sql)?;
        let rows = stmt.query_map([arg], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })?;
        for row in rows {
            let (task, dep) = row?;
            if wanted.contains(task.as_str()) {
                out.entry(TaskId(task)).or_default().push(TaskId(dep));
            }
        }
        Ok(out)
    }

    /// The `limit` tasks that finished (done or cancelled) last, newest first.
    pub fn recently_finished(&self, limit: usize) -> Result<Vec<Task>, StoreError> {
        let sql = format!(
            "SELECT {TASK_COLUMNS} FROM tasks WHERE status IN ('done', 'cancelled') ORDER BY updated_at DESC, id LIMIT ?1"
        );
        let tasks = self
            .conn
            .prepare(&sql)?
            .query_map([limit as i64], rows::task)?
            .collect::<Result<_, _>>()?;
        Ok(tasks)
    }

    /// Moves a task on behalf of a person or a rule, checking the move and logging it.
    pub fn transition_task(
        &mut self,
        id: &TaskId,
        to: TaskState,
        reason: &str,
        changes: TaskChanges,
        writer: Writer<'_>,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        write_transition(&tx, id, None, to, reason, &changes, writer)?;
        tx.commit()?;
        Ok(())
    }

    /// A person's retry of a queued task that waits on its cooldown: the wait ends and the
    /// failure budgets start afresh, as for any retry; the status stays `queued`.
    pub fn clear_cooldown(
        &mut self,
        id: &TaskId,
        reason: &str,
        writer: Writer<'_>,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        let changed = tx.execute(
            "UPDATE tasks SET next_attempt_at = NULL, attempts = ?2, status_reason = ?3, updated_at = ?4 \
             WHERE id = ?1 AND status = 'queued'",
            params![
                id.as_str(),
                to_json(&crate::model::Attempts::default()),
                reason,
                writer.now.0
            ],
        )?;
        if changed == 0 {
            return Err(StoreError::Invalid(format!(
                "task {id} is no longer queued"
            )));
        }
        record_event(
            &tx,
            writer,
            "task.cooldown_cleared",
            Some(id),
            None,
            None,
            None,
            reason,
            serde_json::json!({}),
        )?;
        tx.commit()?;
        Ok(())
    }

    /// The newest runs of a task, newest first.
    pub fn runs_of(&self, id: &TaskId, limit: usize) -> Result<Vec<Run>, StoreError> {
        let sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE task_id = ?1 ORDER BY started_at DESC, rowid DESC LIMIT ?2"
        );
        let runs = self
            .conn
            .prepare(&sql)?
            .query_map(params![id.as_str(), limit as i64], rows::run)?
            .collect::<Result<_, _>>()?;
        Ok(runs)
    }

    /// The newest runs of all tasks, newest first.
    pub fn recent_runs(&self, limit: usize) -> Result<Vec<Run>, StoreError> {
        let sql =
            format!("SELECT {RUN_COLUMNS} FROM runs ORDER BY started_at DESC, rowid DESC LIMIT ?1");
        let runs = self
            .conn
            .prepare(&sql)?
            .query_map([limit as i64], rows::run)?
            .collect::<Result<_, _>>()?;
        Ok(runs)
    }

    pub fn run(&self, id: &RunId) -> Result<Option<Run>, StoreError> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = ?1");
        Ok(self
            .conn
            .query_row(&sql, [id.as_str()], rows::run)
            .optional()?)
    }

    /// The newest events about a task, oldest first.
    pub fn events_of(&self, id: &TaskId, limit: usize) -> Result<Vec<Event>, StoreError> {
        let mut events: Vec<Event> = self
            .conn
            .prepare(
                "SELECT id, at, tick_id, actor, kind, task_id, run_id, from_state, to_state, reason, payload \
                 FROM events WHERE task_id = ?1 ORDER BY id DESC LIMIT ?2",
            )?
            .query_map(params![id.as_str(), limit as i64], |r| {
                Ok(Event {
                    id: r.get(0)?,
                    at: Timestamp(r.get(1)?),
                    tick_id: r.get::<_, Option<String>>(2)?.map(TickId),
                    actor: r.get(3)?,
                    kind: r.get(4)?,
                    task_id: r.get::<_, Option<String>>(5)?.map(TaskId),
                    run_id: r.get::<_, Option<String>>(6)?.map(RunId),
                    from_state: r.get(7)?,
                    to_state: r.get(8)?,
                    reason: r.get(9)?,
                    payload: serde_json::from_str(&r.get::<_, String>(10)?).unwrap_or_default(),
                })
            })?
            .collect::<Result<_, _>>()?;
        events.reverse();
        Ok(events)
    }

    pub fn event_count(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("SELECT count(*) FROM events", [], |r| r.get(0))?)
    }

    /// Task counts per status word (`blocked(quota_wait)` counted under `blocked`).
    pub fn status_counts(&self) -> Result<BTreeMap<String, i64>, StoreError> {
        let mut stmt = self
            .conn
            .prepare("SELECT status, count(*) FROM tasks GROUP BY status")?;
        let counts = stmt
            .query_map([], |r| Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?)))?
            .collect::<Result<_, _>>()?;
        Ok(counts)
    }

    pub fn last_tick(&self) -> Result<Option<TickRecord>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT id, agent_id, started_at, finished_at, outcome, summary FROM ticks \
                 ORDER BY started_at DESC, rowid DESC LIMIT 1",
                [],
                |r| {
                    Ok(TickRecord {
                        id: r.get(0)?,
                        agent_id: r.get(1)?,
                        started_at: Timestamp(r.get(2)?),
                        finished_at: r.get::<_, Option<i64>>(3)?.map(Timestamp),
                        outcome: r.get(4)?,
                        summary: serde_json::from_str(&r.get::<_, String>(5)?).unwrap_or_default(),
                    })
                },
            )
            .optional()?)
    }

    /// When the latest tick other than `tick` started (the heartbeat a running tick compares).
    pub fn last_tick_start_except(&self, tick: &str) -> Result<Option<Timestamp>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT max(started_at) FROM ticks WHERE id <> ?1",
                [tick],
                |r| r.get::<_, Option<i64>>(0),
            )?
            .map(Timestamp))
    }

    /// Records a tick in the heartbeat table.
    pub fn record_tick(&mut self, tick: &TickRecord) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO ticks (id, agent_id, started_at, finished_at, outcome, summary) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
             ON CONFLICT(id) DO UPDATE SET finished_at = excluded.finished_at, outcome = excluded.outcome, summary = excluded.summary",
            params![
                tick.id,
                tick.agent_id,
                tick.started_at.0,
                tick.finished_at.map(|t| t.0),
                tick.outcome,
                tick.summary.to_string()
            ],
        )?;
        Ok(())
    }
}

impl Store {
    /// Distinct agents holding leases.
    pub fn lease_holders(&self) -> Result<Vec<crate::model::AgentId>, StoreError> {
        let holders = self
            .conn
            .prepare("SELECT DISTINCT agent_id FROM leases ORDER BY agent_id")?
            .query_map([], |r| r.get::<_, String>(0).map(crate::model::AgentId))?
            .collect::<Result<_, _>>()?;
        Ok(holders)
    }
}

impl Store {
    /// Tasks that hold a lease, with the leased run.
    pub fn leased_tasks(&self) -> Result<Vec<(TaskId, RunId)>, StoreError> {
        let rows = self
            .conn
            .prepare("SELECT task_id, run_id FROM leases ORDER BY task_id")?
            .query_map([], |r| Ok((TaskId(r.get(0)?), RunId(r.get(1)?))))?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }
}

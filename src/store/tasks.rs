//! Tasks, runs, events and ticks: the queries behind the CLI and the tick.

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::{params, OptionalExtension, Transaction};
use serde::Serialize;

use super::rows::{self, opt_i64, to_json, RUN_COLUMNS, TASK_COLUMNS};
use super::{Store, StoreError};
use crate::model::graph::{describe_cycle, find_cycle};
use crate::model::{
    check_transition, Attempts, Event, Run, RunId, Task, TaskId, TaskState, TaskStatus, TickId,
};
use crate::time::Timestamp;

/// Who writes, when, in which tick: stamped on every event.
#[derive(Clone, Copy, Debug)]
pub struct Writer<'a> {
    pub tick_id: Option<&'a TickId>,
    pub actor: &'a str,
    pub now: Timestamp,
}

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

/// Inserts tasks inside a transaction: dependencies must exist or be in the batch, no cycles.
pub(crate) fn insert_tasks_in(
    tx: &Transaction<'_>,
    tasks: &[Task],
    writer: Writer<'_>,
) -> Result<(), StoreError> {
    let batch: BTreeSet<&TaskId> = tasks.iter().map(|t| &t.id).collect();
    let mut edges: BTreeMap<TaskId, Vec<TaskId>> = BTreeMap::new();
    for task in tasks {
        if task_exists(tx, &task.id)? {
            return Err(StoreError::Invalid(format!(
                    "a task with id {} already exists\n  fix: choose another --id, or leave it out to get a fresh one",
                    task.id
                )));
        }
        for dep in &task.dependencies {
            if !batch.contains(dep) && !task_exists(tx, dep)? {
                return Err(StoreError::Invalid(format!(
                        "task {} depends on {dep}, which does not exist\n  fix: `opentiger task list` shows the ids",
                        task.id
                    )));
            }
        }
        edges.insert(task.id.clone(), task.dependencies.clone());
    }
    // Existing tasks cannot depend on new ones, so a cycle can only run through the batch.
    if let Some(cycle) = find_cycle(&edges) {
        return Err(StoreError::Invalid(format!(
            "dependency cycle: {}\n  fix: remove one of these dependencies",
            describe_cycle(&cycle)
        )));
    }
    // Rows first, so dependencies within the batch resolve in any order.
    for task in tasks {
        insert_task_row(tx, task)?;
    }
    for task in tasks {
        link_and_log(
            tx,
            task,
            &format!("created {} task: {}", task.kind, task.title),
            writer,
        )?;
    }
    Ok(())
}

/// Field changes that go with a transition.
#[derive(Clone, Debug, Default)]
pub struct TaskChanges {
    pub attempts: Option<Attempts>,
    /// `Some(None)` clears the cooldown.
    pub next_attempt_at: Option<Option<Timestamp>>,
    pub needs_approval: Option<bool>,
}

fn task_exists(tx: &Transaction<'_>, id: &TaskId) -> Result<bool, StoreError> {
    Ok(tx
        .query_row("SELECT 1 FROM tasks WHERE id = ?1", [id.as_str()], |_| {
            Ok(())
        })
        .optional()?
        .is_some())
}

pub(crate) fn insert_task_row(tx: &Transaction<'_>, t: &Task) -> Result<(), StoreError> {
    tx.execute(
        &format!("INSERT INTO tasks ({TASK_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26)"),
        params![
            t.id.as_str(),
            t.title,
            t.goal,
            t.kind.as_str(),
            t.role.as_str(),
            t.lane.as_str(),
            t.status.as_str(),
            t.block_reason.map(|r| r.as_str()),
            t.status_reason,
            t.priority,
            t.risk.as_str(),
            t.target_area,
            to_json(&t.touches),
            to_json(&t.allowed_paths),
            to_json(&t.commands),
            t.parent_task_id.as_ref().map(TaskId::as_str),
            opt_i64(t.source_pr),
            opt_i64(t.issue_number),
            t.rework_depth,
            to_json(&t.attempts),
            t.next_attempt_at.map(|x| x.0),
            t.timebox_minutes,
            t.notes,
            t.created_at.0,
            t.updated_at.0,
            t.needs_approval,
        ],
    )?;
    Ok(())
}

/// Checks and writes one status move plus its event. `expected`, when given, is the state the
/// decision was made on; if the task has moved since, the write is refused as stale.
pub(crate) fn write_transition(
    tx: &Transaction<'_>,
    id: &TaskId,
    expected: Option<TaskState>,
    to: TaskState,
    reason: &str,
    changes: &TaskChanges,
    writer: Writer<'_>,
) -> Result<(), StoreError> {
    let current: Option<(String, Option<String>)> = tx
        .query_row(
            "SELECT status, block_reason FROM tasks WHERE id = ?1",
            [id.as_str()],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .optional()?;
    let (status, block) = current.ok_or_else(|| StoreError::NoSuchTask(id.to_string()))?;
    let from = TaskState::new(
        status
            .parse()
            .map_err(|e| StoreError::Invalid(format!("task {id}: {e}")))?,
        block
            .map(|b| b.parse())
            .transpose()
            .map_err(|e| StoreError::Invalid(format!("task {id}: {e}")))?,
    );
    if let Some(expected) = expected {
        if expected != from {
            return Err(StoreError::Invalid(format!(
                "task {id} moved to {from} since it was planned as {expected}"
            )));
        }
    }
    check_transition(from, to)?;
    tx.execute(
        "UPDATE tasks SET status = ?2, block_reason = ?3, status_reason = ?4, updated_at = ?5 WHERE id = ?1",
        params![id.as_str(), to.status.as_str(), to.reason.map(|r| r.as_str()), reason, writer.now.0],
    )?;
    if let Some(attempts) = &changes.attempts {
        tx.execute(
            "UPDATE tasks SET attempts = ?2 WHERE id = ?1",
            params![id.as_str(), to_json(attempts)],
        )?;
    }
    if let Some(next) = changes.next_attempt_at {
        tx.execute(
            "UPDATE tasks SET next_attempt_at = ?2 WHERE id = ?1",
            params![id.as_str(), next.map(|t| t.0)],
        )?;
    }
    if let Some(flag) = changes.needs_approval {
        tx.execute(
            "UPDATE tasks SET needs_approval = ?2 WHERE id = ?1",
            params![id.as_str(), flag],
        )?;
    }
    record_event(
        tx,
        writer,
        "task.transition",
        Some(id),
        None,
        Some(from),
        Some(to),
        reason,
        serde_json::json!({}),
    )
}

/// Creates a task a rule decided on (a rework or AutoFix child) unless it exists: its id is
/// derived from what it stands for, so deciding twice creates it once. Returns whether it was new.
pub(crate) fn create_derived_task(
    tx: &Transaction<'_>,
    task: &Task,
    reason: &str,
    writer: Writer<'_>,
) -> Result<bool, StoreError> {
    if task_exists(tx, &task.id)? {
        return Ok(false);
    }
    insert_task_row(tx, task)?;
    link_and_log(tx, task, reason, writer)?;
    Ok(true)
}

/// A new task's dependency edges and its `task.created` event.
fn link_and_log(
    tx: &Transaction<'_>,
    task: &Task,
    reason: &str,
    writer: Writer<'_>,
) -> Result<(), StoreError> {
    for dep in &task.dependencies {
        tx.execute(
            "INSERT OR IGNORE INTO task_dependencies (task_id, depends_on) VALUES (?1, ?2)",
            params![task.id.as_str(), dep.as_str()],
        )?;
    }
    record_event(
        tx,
        writer,
        "task.created",
        Some(&task.id),
        None,
        None,
        Some(task.state()),
        reason,
        serde_json::json!({ "kind": task.kind, "role": task.role, "parent": task.parent_task_id, "dependencies": task.dependencies }),
    )
}

/// An event that moves no task (a lease, a run, a verdict).
pub(crate) fn note(
    tx: &Transaction<'_>,
    writer: Writer<'_>,
    kind: &str,
    task: Option<&TaskId>,
    run: Option<&RunId>,
    reason: &str,
) -> Result<(), StoreError> {
    record_event(
        tx,
        writer,
        kind,
        task,
        run,
        None,
        None,
        reason,
        serde_json::json!({}),
    )
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn record_event(
    tx: &Transaction<'_>,
    writer: Writer<'_>,
    kind: &str,
    task_id: Option<&TaskId>,
    run_id: Option<&RunId>,
    from: Option<TaskState>,
    to: Option<TaskState>,
    reason: &str,
    payload: serde_json::Value,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO events (at, tick_id, actor, kind, task_id, run_id, from_state, to_state, reason, payload) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        params![
            writer.now.0,
            writer.tick_id.map(TickId::as_str),
            writer.actor,
            kind,
            task_id.map(TaskId::as_str),
            run_id.map(RunId::as_str),
            from.map(|s| s.to_string()),
            to.map(|s| s.to_string()),
            reason,
            payload.to_string(),
        ],
    )?;
    Ok(())
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

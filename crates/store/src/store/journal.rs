//! The writes the store's modules make inside their own SQL transaction: new task rows (with
//! their dependencies checked), each status move checked by [`crate::model::check_transition`]
//! and logged, tasks a rule derives, and the `events` log itself, stamped by a [`Writer`].
//!
//! Not for: queries and the `Store` methods that open a transaction (the sibling modules:
//! `tasks`, `apply`, `record`, ...); which move to make (the engine).

use std::collections::{BTreeMap, BTreeSet};

use rusqlite::{params, OptionalExtension, Transaction};

use super::rows::{opt_i64, to_json, TASK_COLUMNS};
use super::StoreError;
use crate::model::graph::{describe_cycle, find_cycle};
use crate::model::{check_transition, Attempts, RunId, Task, TaskId, TaskState, TickId};
use crate::time::Timestamp;

/// Who writes, when, in which tick: stamped on every event.
#[derive(Clone, Copy, Debug)]
pub struct Writer<'a> {
    pub tick_id: Option<&'a TickId>,
    pub actor: &'a str,
    pub now: Timestamp,
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

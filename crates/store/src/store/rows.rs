//! Rows read back into the model (tasks, runs, leases, with the columns their queries select).
//! Stored words are parsed back into the vocabulary; a word we do not know means a corrupt or
//! foreign file and is reported as such, never guessed. Not for: the tables (`store::schema`), the
//! words (`model::vocab`), or writing rows (`store::journal` and each table's module).

use rusqlite::types::Type;
use rusqlite::Row;

use crate::model::{Attempts, Lease, Run, Task, TaskId};
use crate::time::Timestamp;

pub const TASK_COLUMNS: &str = "id, title, goal, kind, role, lane, status, block_reason, status_reason, \
    priority, risk, target_area, touches, allowed_paths, commands, parent_task_id, source_pr, \
    issue_number, rework_depth, attempts, next_attempt_at, timebox_minutes, notes, created_at, updated_at, \
    needs_approval";

pub const RUN_COLUMNS: &str =
    "id, task_id, agent_id, tick_id, role, executor, status, started_at, \
    finished_at, failure_code, error, cost_usd, input_tokens, output_tokens, session_id, branch, \
    head_sha, pr_number, summary, judged_at, judgement_version, reported_usd, metered, refused";

pub const LEASE_COLUMNS: &str = "task_id, run_id, agent_id, tick_id, acquired_at, expires_at";

fn word<T: std::str::FromStr>(row: &Row<'_>, idx: usize) -> rusqlite::Result<T>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    let text: String = row.get(idx)?;
    text.parse()
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(e)))
}

fn opt_word<T: std::str::FromStr>(row: &Row<'_>, idx: usize) -> rusqlite::Result<Option<T>>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    let text: Option<String> = row.get(idx)?;
    text.map(|t| {
        t.parse()
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(e)))
    })
    .transpose()
}

fn json<T: serde::de::DeserializeOwned>(row: &Row<'_>, idx: usize) -> rusqlite::Result<T> {
    let text: String = row.get(idx)?;
    serde_json::from_str(&text)
        .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(e)))
}

fn ts(row: &Row<'_>, idx: usize) -> rusqlite::Result<Timestamp> {
    row.get::<_, i64>(idx).map(Timestamp)
}

fn opt_ts(row: &Row<'_>, idx: usize) -> rusqlite::Result<Option<Timestamp>> {
    row.get::<_, Option<i64>>(idx).map(|v| v.map(Timestamp))
}

fn opt_u64(row: &Row<'_>, idx: usize) -> rusqlite::Result<Option<u64>> {
    row.get::<_, Option<i64>>(idx)
        .map(|v| v.and_then(|n| u64::try_from(n).ok()))
}

/// A task row without its dependencies (they live in `task_dependencies`).
pub fn task(row: &Row<'_>) -> rusqlite::Result<Task> {
    Ok(Task {
        id: TaskId(row.get(0)?),
        title: row.get(1)?,
        goal: row.get(2)?,
        kind: word(row, 3)?,
        role: word(row, 4)?,
        lane: word(row, 5)?,
        status: word(row, 6)?,
        block_reason: opt_word(row, 7)?,
        status_reason: row.get(8)?,
        priority: row.get(9)?,
        risk: word(row, 10)?,
        target_area: row.get(11)?,
        touches: json(row, 12)?,
        allowed_paths: json(row, 13)?,
        commands: json(row, 14)?,
        dependencies: Vec::new(),
        parent_task_id: row.get::<_, Option<String>>(15)?.map(TaskId),
        source_pr: opt_u64(row, 16)?,
        issue_number: opt_u64(row, 17)?,
        rework_depth: row.get(18)?,
        attempts: json::<Attempts>(row, 19)?,
        next_attempt_at: opt_ts(row, 20)?,
        timebox_minutes: row.get(21)?,
        notes: row.get(22)?,
        created_at: ts(row, 23)?,
        updated_at: ts(row, 24)?,
        needs_approval: row.get::<_, i64>(25)? != 0,
    })
}

pub fn run(row: &Row<'_>) -> rusqlite::Result<Run> {
    Ok(Run {
        id: crate::model::RunId(row.get(0)?),
        task_id: TaskId(row.get(1)?),
        agent_id: crate::model::AgentId(row.get(2)?),
        tick_id: crate::model::TickId(row.get(3)?),
        role: word(row, 4)?,
        executor: row.get(5)?,
        status: word(row, 6)?,
        started_at: ts(row, 7)?,
        finished_at: opt_ts(row, 8)?,
        failure_code: opt_word(row, 9)?,
        error: row.get(10)?,
        cost_usd: row.get(11)?,
        input_tokens: row.get(12)?,
        output_tokens: row.get(13)?,
        session_id: row.get(14)?,
        branch: row.get(15)?,
        head_sha: row.get(16)?,
        pr_number: opt_u64(row, 17)?,
        summary: row.get(18)?,
        judged_at: opt_ts(row, 19)?,
        judgement_version: row.get(20)?,
        reported_cost_usd: row.get(21)?,
        metered: json_opt(row, 22)?,
        refused: json_opt(row, 23)?.unwrap_or_default(),
    })
}

/// A JSON column read back; unreadable JSON is corruption, reported as such.
fn json_opt<T: serde::de::DeserializeOwned>(
    row: &Row<'_>,
    idx: usize,
) -> rusqlite::Result<Option<T>> {
    let text: Option<String> = row.get(idx)?;
    text.map(|t| {
        serde_json::from_str(&t)
            .map_err(|e| rusqlite::Error::FromSqlConversionFailure(idx, Type::Text, Box::new(e)))
    })
    .transpose()
}

pub fn lease(row: &Row<'_>) -> rusqlite::Result<Lease> {
    Ok(Lease {
        task_id: TaskId(row.get(0)?),
        run_id: crate::model::RunId(row.get(1)?),
        agent_id: crate::model::AgentId(row.get(2)?),
        tick_id: crate::model::TickId(row.get(3)?),
        acquired_at: ts(row, 4)?,
        expires_at: ts(row, 5)?,
    })
}

pub fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_else(|_| "null".to_string())
}

pub fn opt_i64(value: Option<u64>) -> Option<i64> {
    value.and_then(|v| i64::try_from(v).ok())
}

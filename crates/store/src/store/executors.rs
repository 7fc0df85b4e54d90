//! Executors parked on a quota (`executor_waits`, issue 9 fallbacks) or for their configuration
//! (issue 18): read for the engine and the runner, changed with a run's outcome (`record_run`,
//! same transaction); a person's retry ends the configuration parks. Not for: when to park or
//! which executor runs (`engine::fallback`, `runner::executors`).

use rusqlite::{params, Transaction};

use super::{Store, StoreError};
use crate::engine::fallback::{ExecutorWait, ExecutorWaits};
use crate::engine::outcome::ExecutorChange;
use crate::time::Timestamp;

impl Store {
    /// Every executor with a park on record, ended ones included (their run of hits still
    /// counts until one of their runs ends without a quota).
    pub fn executor_waits(&self) -> Result<ExecutorWaits, StoreError> {
        let rows = self
            .conn
            .prepare("SELECT key, until, hits, reason, config FROM executor_waits")?
            .query_map([], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    ExecutorWait {
                        until: Timestamp(r.get(1)?),
                        hits: u32::try_from(r.get::<_, i64>(2)?).unwrap_or(u32::MAX),
                        reason: r.get(3)?,
                        config: r.get(4)?,
                    },
                ))
            })?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// A person retried a task: they dealt with the configuration errors (issue 18), so every
    /// executor parked for its configuration may run again. Returns how many were parked.
    pub fn clear_config_parks(&mut self) -> Result<usize, StoreError> {
        Ok(self
            .conn
            .execute("DELETE FROM executor_waits WHERE config IS NOT NULL", [])?)
    }
}

pub(super) fn apply_change(
    tx: &Transaction<'_>,
    change: &ExecutorChange,
    now: Timestamp,
) -> Result<(), StoreError> {
    match change {
        ExecutorChange::Park { key, wait } => {
            tx.execute(
                "INSERT INTO executor_waits (key, until, hits, reason, config, updated_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) \
                 ON CONFLICT(key) DO UPDATE SET until = excluded.until, hits = excluded.hits, \
                 reason = excluded.reason, config = excluded.config, updated_at = excluded.updated_at",
                params![key, wait.until.0, i64::from(wait.hits), wait.reason, wait.config, now.0],
            )?;
        }
        ExecutorChange::Clear { key } => {
            tx.execute("DELETE FROM executor_waits WHERE key = ?1", [key])?;
        }
    }
    Ok(())
}

//! Loading what the engine needs, and no more: a quiet tick on a large state must stay fast and
//! small (DESIGN "bar": 10k tasks, 100k runs), so only active tasks, the terminal tasks they refer
//! to, the latest few runs per active task and every running run are read, with the leases and
//! the plan history. Not for: the observations it is handed (`tick::context` gathers them, from
//! what `tick::observe` stored) or deciding from it all (`engine`).

use rusqlite::params;

use super::rows::{self, LEASE_COLUMNS, RUN_COLUMNS, TASK_COLUMNS};
use super::{Store, StoreError};
use crate::engine::{Observations, Snapshot};
use crate::model::{AgentId, TickId};

/// How much history the snapshot carries.
#[derive(Clone, Copy, Debug)]
pub struct SnapshotLimits {
    /// Latest runs loaded per active task (at least the repeated-failure threshold).
    pub runs_per_task: u32,
}

impl Default for SnapshotLimits {
    fn default() -> Self {
        SnapshotLimits { runs_per_task: 6 }
    }
}

const ACTIVE_LIST: &str = "'queued', 'running', 'failed', 'blocked'";

impl Store {
    pub fn load_snapshot(
        &self,
        tick_id: TickId,
        agent_id: AgentId,
        observations: Observations,
        limits: SnapshotLimits,
    ) -> Result<Snapshot, StoreError> {
        // Active tasks (by the status index), then the finished tasks they refer to: their
        // dependencies, and the children of blocked ones (a source task follows its child).
        let active_sql =
            format!("SELECT {TASK_COLUMNS} FROM tasks WHERE status IN ({ACTIVE_LIST})");
        let mut tasks: Vec<_> = self
            .conn
            .prepare(&active_sql)?
            .query_map([], rows::task)?
            .collect::<Result<_, _>>()?;
        let related_sql = format!(
            "SELECT {TASK_COLUMNS} FROM tasks WHERE status IN ('done', 'cancelled') AND id IN ( \
               SELECT d.depends_on FROM task_dependencies d WHERE d.task_id IN (SELECT id FROM tasks WHERE status IN ({ACTIVE_LIST})) \
               UNION SELECT c.id FROM tasks c WHERE c.parent_task_id IN (SELECT id FROM tasks WHERE status = 'blocked'))"
        );
        let related: Vec<_> = self
            .conn
            .prepare(&related_sql)?
            .query_map([], rows::task)?
            .collect::<Result<_, _>>()?;
        tasks.extend(related);
        tasks.sort_by(|a, b| a.created_at.cmp(&b.created_at).then(a.id.cmp(&b.id)));
        self.attach_dependencies(&mut tasks)?;

        // The newest runs of each active task, through the (task_id, started_at) index.
        let run_sql = format!(
            "SELECT {RUN_COLUMNS} FROM ( \
               SELECT r.*, ROW_NUMBER() OVER (PARTITION BY r.task_id ORDER BY r.started_at DESC, r.rowid DESC) AS n \
               FROM runs r WHERE r.task_id IN (SELECT id FROM tasks WHERE status IN ({ACTIVE_LIST})) \
             ) WHERE n <= ?1"
        );
        let mut runs: Vec<_> = self
            .conn
            .prepare(&run_sql)?
            .query_map(params![limits.runs_per_task], rows::run)?
            .collect::<Result<_, _>>()?;
        // Every running run (the partial index), wherever its task is: orphans must be seen.
        let running_sql = format!("SELECT {RUN_COLUMNS} FROM runs WHERE status = 'running'");
        for run in self.conn.prepare(&running_sql)?.query_map([], rows::run)? {
            let run = run?;
            if !runs.iter().any(|r| r.id == run.id) {
                runs.push(run);
            }
        }

        let leases = self
            .conn
            .prepare(&format!(
                "SELECT {LEASE_COLUMNS} FROM leases ORDER BY task_id"
            ))?
            .query_map([], rows::lease)?
            .collect::<Result<_, _>>()?;
        let plans = self.plan_history(observations.plan_signature.as_deref())?;
        Ok(Snapshot {
            plans,
            tick_id,
            agent_id,
            tasks,
            runs,
            leases,
            observations,
        })
    }
}

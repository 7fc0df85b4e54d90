//! Loading what the engine needs, and no more: a quiet tick on a large state must stay fast and
//! small (DESIGN "bar": 10k tasks, 100k runs), so only active tasks, the terminal tasks they refer
//! to, and the latest few runs per active task are read.

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

const ACTIVE: &str = "status NOT IN ('done', 'cancelled')";

impl Store {
    pub fn load_snapshot(
        &self,
        tick_id: TickId,
        agent_id: AgentId,
        observations: Observations,
        limits: SnapshotLimits,
    ) -> Result<Snapshot, StoreError> {
        // Active tasks, their terminal dependencies, and the children of blocked tasks (a source
        // task follows its child).
        let sql = format!(
            "SELECT {TASK_COLUMNS} FROM tasks WHERE {ACTIVE} \
             OR id IN (SELECT d.depends_on FROM task_dependencies d JOIN tasks t ON t.id = d.task_id WHERE t.{ACTIVE}) \
             OR parent_task_id IN (SELECT id FROM tasks WHERE status = 'blocked') \
             ORDER BY created_at, id"
        );
        let mut tasks: Vec<_> = self
            .conn
            .prepare(&sql)?
            .query_map([], rows::task)?
            .collect::<Result<_, _>>()?;
        self.attach_dependencies(&mut tasks)?;

        let run_sql = format!(
            "SELECT {RUN_COLUMNS} FROM ( \
               SELECT r.*, ROW_NUMBER() OVER (PARTITION BY r.task_id ORDER BY r.started_at DESC, r.id DESC) AS n \
               FROM runs r JOIN tasks t ON t.id = r.task_id WHERE t.{ACTIVE} \
             ) WHERE n <= ?1 OR status = 'running'"
        );
        let mut runs: Vec<_> = self
            .conn
            .prepare(&run_sql)?
            .query_map(params![limits.runs_per_task], rows::run)?
            .collect::<Result<_, _>>()?;
        // Running runs of tasks that are already terminal are orphans the engine must see too.
        let stray_sql = format!(
            "SELECT {RUN_COLUMNS} FROM runs WHERE status = 'running' AND task_id IN (SELECT id FROM tasks WHERE NOT ({ACTIVE}))"
        );
        let strays: Vec<_> = self
            .conn
            .prepare(&stray_sql)?
            .query_map([], rows::run)?
            .collect::<Result<_, _>>()?;
        runs.extend(strays);

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

//! Retention: what is deleted from the state once it is old, so the state's size follows the
//! active work and `state.retention_days`, not the project's age (DESIGN §4).
//!
//! Deleted, with their numbers added to `counters`: the runs of tasks finished (done or
//! cancelled) more than the window ago, with their judgements and merge-queue rows; the events
//! of those tasks and the events of no task older than the window; planner attempts that
//! created nothing, and tick heartbeats, older than the window (the newest of each is kept: the
//! planner's interval and the heartbeat read them). Kept: every task row, the plans that created
//! tasks (so the same inputs are never planned twice), budgets, leases and anything of active
//! tasks. Freed pages are reused by later writes; a prune that frees a quarter of a large file
//! compacts it once.
//!
//! Not for: the state branch's own history (`statebranch` squashes it past `keep_commits`) or when
//! a prune runs (`tick::record`, after a tick's writes).

use rusqlite::params;

use super::{Store, StoreError};
use crate::time::Timestamp;

/// What one prune deleted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pruned {
    pub runs: u64,
    pub judgements: u64,
    pub events: u64,
    pub plans: u64,
    pub ticks: u64,
    /// The file was compacted afterwards.
    pub vacuumed: bool,
}

impl Pruned {
    pub fn is_empty(&self) -> bool {
        self.runs + self.judgements + self.events + self.plans + self.ticks == 0
    }

    /// One line for the tick's report.
    pub fn line(&self) -> String {
        format!(
            "pruned what finished more than the retention window ago: {} run(s), {} judgement(s), {} event(s), {} plan attempt(s), {} tick record(s){}",
            self.runs,
            self.judgements,
            self.events,
            self.plans,
            self.ticks,
            if self.vacuumed { "; state file compacted" } else { "" }
        )
    }
}

/// Runs of tasks finished before `?1`, not leased.
const OLD_RUNS: &str = "SELECT r.id FROM runs r JOIN tasks t ON t.id = r.task_id \
     WHERE t.status IN ('done', 'cancelled') AND t.updated_at < ?1 \
     AND r.finished_at IS NOT NULL AND r.finished_at < ?1 \
     AND NOT EXISTS (SELECT 1 FROM leases l WHERE l.run_id = r.id)";

impl Store {
    /// Deletes what is older than `retention_days` (see the module comment), adding what was
    /// deleted to `counters`. `0` days keeps everything.
    pub fn prune(&mut self, now: Timestamp, retention_days: u32) -> Result<Pruned, StoreError> {
        if retention_days == 0 {
            return Ok(Pruned::default());
        }
        let cutoff = now.plus(-(i64::from(retention_days) * crate::time::DAY)).0;
        let tx = self.conn.transaction()?;
        let count = |n: usize| u64::try_from(n).unwrap_or(u64::MAX);
        let judgements = count(tx.execute(
            &format!("DELETE FROM judgements WHERE run_id IN ({OLD_RUNS})"),
            [cutoff],
        )?);
        tx.execute(
            &format!("DELETE FROM merge_queue WHERE run_id IN ({OLD_RUNS})"),
            [cutoff],
        )?;
        let runs = count(tx.execute(
            &format!("DELETE FROM runs WHERE id IN ({OLD_RUNS})"),
            [cutoff],
        )?);
        let events = count(tx.execute(
            "DELETE FROM events WHERE at < ?1 AND (task_id IS NULL OR task_id IN \
             (SELECT id FROM tasks WHERE status IN ('done', 'cancelled') AND updated_at < ?1))",
            [cutoff],
        )?);
        let plans = count(tx.execute(
            "DELETE FROM plans WHERE created_at < ?1 AND status <> 'created' AND id <> \
             (SELECT id FROM plans ORDER BY created_at DESC, rowid DESC LIMIT 1)",
            [cutoff],
        )?);
        let ticks = count(tx.execute(
            "DELETE FROM ticks WHERE started_at < ?1 AND id <> \
             (SELECT id FROM ticks ORDER BY started_at DESC, rowid DESC LIMIT 1)",
            [cutoff],
        )?);
        let mut pruned = Pruned {
            runs,
            judgements,
            events,
            plans,
            ticks,
            vacuumed: false,
        };
        for (name, n) in [
            ("pruned_runs", runs),
            ("pruned_judgements", judgements),
            ("pruned_events", events),
            ("pruned_plans", plans),
            ("pruned_ticks", ticks),
        ] {
            if n > 0 {
                tx.execute(
                    "INSERT INTO counters (name, value) VALUES (?1, ?2) \
                     ON CONFLICT(name) DO UPDATE SET value = value + excluded.value",
                    params![name, i64::try_from(n).unwrap_or(i64::MAX)],
                )?;
            }
        }
        tx.commit()?;
        if !pruned.is_empty() {
            let free: i64 = self
                .conn
                .query_row("PRAGMA freelist_count", [], |r| r.get(0))?;
            let pages: i64 = self.conn.query_row("PRAGMA page_count", [], |r| r.get(0))?;
            // Small prunes leave free pages for the next writes; a large one is compacted once
            // (which rewrites the whole file: on a state branch, every chunk of that one save).
            if pages > 256 && free * 4 > pages {
                self.conn.execute_batch("VACUUM")?;
                pruned.vacuumed = true;
            }
        }
        Ok(pruned)
    }

    /// How many rows `table` holds (for reports, tests and benchmarks).
    pub fn row_count(&self, table: Table) -> Result<i64, StoreError> {
        let name = match table {
            Table::Tasks => "tasks",
            Table::Runs => "runs",
            Table::Judgements => "judgements",
            Table::Events => "events",
            Table::Plans => "plans",
            Table::Ticks => "ticks",
        };
        Ok(self
            .conn
            .query_row(&format!("SELECT count(*) FROM {name}"), [], |r| r.get(0))?)
    }

    /// The state file's size in bytes (pages in use and free).
    pub fn file_size(&self) -> Result<i64, StoreError> {
        Ok(self.conn.query_row(
            "SELECT page_count * page_size FROM pragma_page_count(), pragma_page_size()",
            [],
            |r| r.get(0),
        )?)
    }
}

/// The tables whose growth retention bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Table {
    Tasks,
    Runs,
    Judgements,
    Events,
    Plans,
    Ticks,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::DAY;

    const NOW: i64 = 1_800_000_000;

    /// A state with one task per (status, days since it finished), each with two runs, a
    /// judgement and events; plans and ticks at several ages.
    fn state(tasks: &[(&str, &str, i64)]) -> Store {
        let store = Store::in_memory("retention").unwrap();
        for (id, status, age_days) in tasks {
            let at = NOW - age_days * DAY;
            let reason = if *status == "blocked" {
                "'awaiting_judge'"
            } else {
                "NULL"
            };
            store.conn.execute_batch(&format!(
                "INSERT INTO tasks (id, title, goal, kind, role, lane, status, block_reason, created_at, updated_at) \
                 VALUES ('{id}', 't', 'g', 'feature', 'worker', 'feature', '{status}', {reason}, {at}, {at});
                 INSERT INTO runs (id, task_id, agent_id, tick_id, role, status, started_at, finished_at) \
                 VALUES ('{id}-1', '{id}', 'a', 'k', 'worker', 'failed', {at}, {at}), ('{id}-2', '{id}', 'a', 'k', 'worker', 'success', {at}, {at});
                 INSERT INTO judgements (run_id, task_id, head_sha, verdict, summary, created_at) VALUES ('{id}-2', '{id}', 'h', 'approve', 's', {at});
                 INSERT INTO events (at, actor, kind, task_id, reason) VALUES ({at}, 'a', 'transition', '{id}', 'r'), ({at}, 'a', 'transition', '{id}', 'r');"
            )).unwrap();
        }
        for (id, status, age_days) in [
            ("p-old-failed", "failed", 100),
            ("p-old-created", "created", 90),
            ("p-new-failed", "failed", 1),
        ] {
            let at = NOW - age_days * DAY;
            store.conn.execute_batch(&format!(
                "INSERT INTO plans (id, signature, requirement_hash, base_head, status, source, created_at) \
                 VALUES ('{id}', '{id}', 'r', 'b', '{status}', 'fallback', {at});"
            )).unwrap();
        }
        for age_days in [200, 100, 45] {
            let at = NOW - age_days * DAY;
            store.conn.execute_batch(&format!(
                "INSERT INTO ticks (id, agent_id, started_at) VALUES ('tick-{age_days}', 'a', {at});
                 INSERT INTO events (at, actor, kind, reason) VALUES ({at}, 'a', 'note', 'no task');"
            )).unwrap();
        }
        store
    }

    fn ids(store: &Store, sql: &str) -> Vec<String> {
        let mut stmt = store.conn.prepare(sql).unwrap();
        let rows = stmt.query_map([], |r| r.get(0)).unwrap();
        rows.map(Result::unwrap).collect()
    }

    #[test]
    fn old_work_of_finished_tasks_goes_and_everything_else_stays() {
        let mut store = state(&[
            ("done-old", "done", 40),
            ("cancelled-old", "cancelled", 31),
            ("done-recent", "done", 29),
            ("blocked-old", "blocked", 40),
            ("failed-old", "failed", 40),
        ]);
        let pruned = store.prune(Timestamp(NOW), 30).unwrap();
        assert_eq!(
            pruned,
            Pruned {
                runs: 4,
                judgements: 2,
                events: 4 + 3,
                plans: 1,
                ticks: 2,
                vacuumed: false
            }
        );
        assert_eq!(
            ids(&store, "SELECT DISTINCT task_id FROM runs ORDER BY 1"),
            ["blocked-old", "done-recent", "failed-old"]
        );
        assert_eq!(
            ids(
                &store,
                "SELECT DISTINCT task_id FROM events WHERE task_id IS NOT NULL ORDER BY 1"
            ),
            ["blocked-old", "done-recent", "failed-old"]
        );
        // The plan that created tasks and the newest attempt stay; so does the newest tick.
        assert_eq!(
            ids(&store, "SELECT id FROM plans ORDER BY id"),
            ["p-new-failed", "p-old-created"]
        );
        assert_eq!(ids(&store, "SELECT id FROM ticks"), ["tick-45"]);
        assert_eq!(store.row_count(Table::Tasks).unwrap(), 5, "tasks are kept");
        // Totals survive.
        for (name, n) in [
            ("pruned_runs", 4),
            ("pruned_judgements", 2),
            ("pruned_events", 7),
            ("pruned_plans", 1),
            ("pruned_ticks", 2),
        ] {
            assert_eq!(store.counter(name).unwrap(), n, "{name}");
        }
        // Nothing more to prune; zero days keeps everything.
        assert!(store.prune(Timestamp(NOW), 30).unwrap().is_empty());
        let mut keep = state(&[("done-old", "done", 400)]);
        assert!(keep.prune(Timestamp(NOW), 0).unwrap().is_empty());
        assert_eq!(keep.row_count(Table::Runs).unwrap(), 2);
    }

    #[test]
    fn the_newest_tick_and_plan_stay_however_old() {
        let mut store = state(&[]);
        store
            .conn
            .execute_batch("DELETE FROM plans WHERE id <> 'p-old-failed'")
            .unwrap();
        store.prune(Timestamp(NOW + 1000 * DAY), 30).unwrap();
        assert_eq!(ids(&store, "SELECT id FROM plans"), ["p-old-failed"]);
        assert_eq!(ids(&store, "SELECT id FROM ticks"), ["tick-45"]);
    }

    #[test]
    fn a_large_prune_compacts_the_file_once_and_a_steady_state_stops_growing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("state.sqlite");
        let mut store = Store::open_file(&path).unwrap();
        let body = "x".repeat(400);
        // Day by day: 20 tasks finish, each with 10 runs and events; retention 30 days.
        let mut sizes = Vec::new();
        for day in 0..120i64 {
            let at = NOW + day * DAY;
            let tx = store.conn.transaction().unwrap();
            for t in 0..20 {
                let id = format!("d{day}-{t}");
                tx.execute(
                    "INSERT INTO tasks (id, title, goal, kind, role, lane, status, created_at, updated_at) \
                     VALUES (?1, 't', 'g', 'feature', 'worker', 'feature', 'done', ?2, ?2)",
                    params![id, at],
                )
                .unwrap();
                for r in 0..10 {
                    tx.execute(
                        "INSERT INTO runs (id, task_id, agent_id, tick_id, role, status, started_at, finished_at, error) \
                         VALUES (?1, ?2, 'a', 'k', 'worker', 'failed', ?3, ?3, ?4)",
                        params![format!("{id}-{r}"), id, at, body],
                    )
                    .unwrap();
                    tx.execute(
                        "INSERT INTO events (at, actor, kind, task_id, reason, payload) VALUES (?1, 'a', 'transition', ?2, 'r', ?3)",
                        params![at, id, body],
                    )
                    .unwrap();
                }
            }
            tx.commit().unwrap();
            store.prune(Timestamp(at), 30).unwrap();
            sizes.push(store.file_size().unwrap());
        }
        // Once the window is full, pruning frees as much as a day adds: the file stops growing.
        let at_60 = sizes[60];
        let last = *sizes.last().unwrap();
        assert!(
            last <= at_60 + at_60 / 20,
            "the state stops growing: day 60 {at_60} bytes, day 120 {last} bytes"
        );
        assert_eq!(store.counter("pruned_runs").unwrap(), (120 - 31) * 20 * 10);

        // A much shorter window prunes most of the file at once: compacted, once.
        let before = store.file_size().unwrap();
        let pruned = store.prune(Timestamp(NOW + 119 * DAY), 2).unwrap();
        assert!(pruned.vacuumed, "{pruned:?}");
        assert!(
            store.file_size().unwrap() * 4 < before,
            "{before} → {}",
            store.file_size().unwrap()
        );
        assert!(store
            .prune(Timestamp(NOW + 119 * DAY), 2)
            .unwrap()
            .is_empty());
    }
}

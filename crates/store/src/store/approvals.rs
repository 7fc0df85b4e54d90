//! Approvals a change needs before it goes on (issue 36): a held change and a person's approval
//! of exactly it (`held_changes`, `scan_approvals`; an approval lets its change out once), and
//! the heads the judge approved (under `scan.ci: after-review` CI starts on such a head and it
//! is merged once its checks pass, without a second review).
//!
//! Not for: deciding what an approval covers (`engine::scan`), or when CI starts
//! (`engine::ci_start`).

use std::collections::BTreeSet;

use rusqlite::{params, OptionalExtension, Transaction};

use super::journal::{write_transition, TaskChanges, Writer};
use super::{Store, StoreError};
use crate::engine::scan::HeldChange;
use crate::model::{RunId, TaskId, TaskState, Verdict};

/// Inside a run's record: the change the threat scan held, and the approval a delivery used up.
pub(super) fn write(
    tx: &Transaction<'_>,
    task: &TaskId,
    held: Option<&HeldChange>,
    used: Option<&str>,
    now: crate::time::Timestamp,
) -> Result<(), StoreError> {
    if let Some(h) = held {
        tx.execute(
            "INSERT OR REPLACE INTO held_changes (task_id, head_sha, tree_sha, start_sha, held_at) VALUES (?1, ?2, ?3, ?4, ?5)",
            params![task.as_str(), h.head, h.tree, h.start, now.0],
        )?;
    }
    if let Some(head) = used {
        tx.execute(
            "UPDATE scan_approvals SET used_at = ?3 WHERE task_id = ?1 AND head_sha = ?2 AND used_at IS NULL",
            params![task.as_str(), head, now.0],
        )?;
    }
    Ok(())
}

impl Store {
    /// The change held with commit `head` of `task`, as recorded when it was held.
    pub fn held_change(&self, task: &TaskId, head: &str) -> Result<Option<HeldChange>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT head_sha, tree_sha, start_sha FROM held_changes WHERE task_id = ?1 AND head_sha = ?2",
                params![task.as_str(), head],
                |r| {
                    Ok(HeldChange {
                        head: r.get(0)?,
                        tree: r.get(1)?,
                        start: r.get(2)?,
                    })
                },
            )
            .optional()?)
    }

    /// A person approved the change the threat scan held, exactly `change`; the task is
    /// queued, and its next run lets that change out ([`Store::approved_changes`]).
    pub fn approve_change(
        &mut self,
        task: &TaskId,
        change: &HeldChange,
        by: &str,
        reason: &str,
        writer: Writer<'_>,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "INSERT OR REPLACE INTO scan_approvals (task_id, head_sha, approved_by, approved_at, tree_sha, start_sha, used_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, NULL)",
            params![task.as_str(), change.head, by, writer.now.0, change.tree, change.start],
        )?;
        let changes = TaskChanges {
            attempts: None,
            next_attempt_at: Some(None),
            needs_approval: Some(false),
        };
        write_transition(&tx, task, None, TaskState::QUEUED, reason, &changes, writer)?;
        tx.commit()?;
        Ok(())
    }

    /// The changes of a task people approved after the threat scan held them, not let out yet.
    pub fn approved_changes(&self, task: &TaskId) -> Result<Vec<HeldChange>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT head_sha, tree_sha, start_sha FROM scan_approvals \
             WHERE task_id = ?1 AND used_at IS NULL AND tree_sha IS NOT NULL AND start_sha IS NOT NULL",
        )?;
        let approved = stmt
            .query_map([task.as_str()], |r| {
                Ok(HeldChange {
                    head: r.get(0)?,
                    tree: r.get(1)?,
                    start: r.get(2)?,
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(approved)
    }

    /// Heads of active tasks the judge approved (a later push invalidates nothing here: a
    /// new head is another SHA).
    pub fn judge_approved_heads(&self) -> Result<BTreeSet<String>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT DISTINCT j.head_sha FROM judgements j JOIN tasks t ON t.id = j.task_id \
             WHERE j.verdict = ?1 AND j.invalidated_at IS NULL AND t.status NOT IN ('done', 'cancelled')",
        )?;
        let heads = stmt
            .query_map([Verdict::Approve.as_str()], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        Ok(heads)
    }

    /// What the judge said when it approved `head` of run `run`, if it did.
    pub fn judge_approval(&self, run: &RunId, head: &str) -> Result<Option<String>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT summary FROM judgements WHERE run_id = ?1 AND head_sha = ?2 AND verdict = ?3 \
                 AND invalidated_at IS NULL ORDER BY id DESC LIMIT 1",
                params![run.as_str(), head, Verdict::Approve.as_str()],
                |r| r.get(0),
            )
            .optional()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::outcome::{decide_outcome, RunExecutors, RunOutcome};
    use crate::model::{AgentId, FailureCode, Task, TickId};
    use crate::store::RunRecord;
    use crate::time::Timestamp;

    const T0: Timestamp = Timestamp(1_795_262_400_000);

    /// One run of task `a` claimed, finished with `outcome` and `record`.
    fn run_once(store: &mut Store, tick: &str, outcome: RunOutcome, record: RunRecord) {
        let config = crate::config::Config::default();
        let holder = Writer {
            tick_id: None,
            actor: "local:box:1",
            now: T0,
        };
        let snap = store
            .load_snapshot(
                TickId::from(tick),
                AgentId::from("a"),
                Default::default(),
                Default::default(),
            )
            .unwrap();
        let plan = crate::engine::plan(&snap, &config, T0);
        let (task, run) = store.apply_plan(&plan, holder).unwrap().claims[0].clone();
        let waits = store.executor_waits().unwrap();
        let executors = RunExecutors {
            used: None,
            waits: &waits,
        };
        let decision = decide_outcome(
            &store.task(&task).unwrap(),
            &outcome,
            &executors,
            &config,
            T0,
        );
        store
            .record_run(&task, &run, &record, &decision, holder)
            .unwrap();
    }

    /// Issue 36: a held change is recorded with its tree and start; a person's approval names
    /// it; the delivery that uses it up leaves no approval for a later run to deliver again.
    #[test]
    fn an_approval_names_the_held_change_and_is_used_up_by_its_delivery() {
        let mut store = Store::in_memory("mem").unwrap();
        let writer = Writer {
            tick_id: None,
            actor: "test",
            now: T0,
        };
        let a = Task::new(TaskId::from("a"), "title", "goal", T0);
        store.insert_tasks(&[a], writer).unwrap();
        let held = HeldChange {
            head: "4e1d".into(),
            tree: "7ree".into(),
            start: "57a7".into(),
        };
        let flagged = RunOutcome {
            success: false,
            failure_code: Some(FailureCode::ThreatFlagged),
            message: "held".into(),
            no_changes: false,
        };
        run_once(
            &mut store,
            "t1",
            flagged,
            RunRecord {
                head_sha: Some(held.head.clone()),
                held: Some(held.clone()),
                ..RunRecord::default()
            },
        );
        let task = TaskId::from("a");
        let last = store.last_run(&task).unwrap().expect("a run");
        assert_eq!(last.held.as_ref(), Some(&held));
        store
            .approve_change(&task, &held, "alice", "approved", writer)
            .unwrap();
        assert_eq!(store.approved_changes(&task).unwrap(), vec![held.clone()]);
        let delivered = RunOutcome {
            success: true,
            failure_code: None,
            message: String::new(),
            no_changes: false,
        };
        run_once(
            &mut store,
            "t2",
            delivered,
            RunRecord {
                head_sha: Some(held.head.clone()),
                used_approval: Some(held.head.clone()),
                ..RunRecord::default()
            },
        );
        assert!(store.approved_changes(&task).unwrap().is_empty());
    }
}

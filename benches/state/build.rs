//! The states the benchmark measures: `tasks` tasks (all but 100 done, those waiting on a
//! person), ten runs each with a 200-character error excerpt (the DESIGN §14 size case), and
//! the change a busy tick makes.

use std::path::Path;

use opentiger::model::{
    AgentId, BlockReason, FailureCode, Run, RunId, RunStatus, Task, TaskId, TaskStatus, TickId,
};
use opentiger::store::{Store, Writer};
use opentiger::time::{Timestamp, MINUTE};

pub const RUNS_PER_TASK: usize = 10;
const ACTIVE: usize = 100;

pub fn build(store: &mut Store, tasks: usize, now: Timestamp) {
    let writer = Writer {
        tick_id: None,
        actor: "bench",
        now,
    };
    let excerpt: String = "Verification failed at cargo test [task]: assertion `left == right` failed at src/lib.rs:42 "
        .repeat(3)
        .chars()
        .take(200)
        .collect();
    let mut batch = Vec::new();
    for i in 0..tasks {
        let mut t = Task::new(
            TaskId(format!("{i:012x}")),
            &format!("Task number {i}"),
            "a goal that says what done means",
            now.plus(-(i as i64) * MINUTE),
        );
        if i < tasks.saturating_sub(ACTIVE) {
            t.status = TaskStatus::Done;
        } else {
            t.status = TaskStatus::Blocked;
            t.block_reason = Some(BlockReason::AwaitingHuman);
            t.status_reason = Some("waits for a decision".into());
        }
        t.allowed_paths = vec!["src/**".into()];
        t.commands = vec!["cargo test".into()];
        batch.push(t);
        if batch.len() == 1000 {
            store.insert_tasks(&batch, writer).expect("insert tasks");
            batch.clear();
        }
    }
    if !batch.is_empty() {
        store.insert_tasks(&batch, writer).expect("insert tasks");
    }
    for i in 0..tasks {
        let task = Task::new(TaskId(format!("{i:012x}")), "", "", now);
        for j in 0..RUNS_PER_TASK {
            let started = now.plus(-((i * RUNS_PER_TASK + j) as i64) * MINUTE);
            let mut r = Run::started(
                RunId(format!("{i:08x}{j:04x}")),
                &task,
                AgentId::from("gha:1:1:tick"),
                TickId::from("t"),
                started,
            );
            r.status = if j + 1 == RUNS_PER_TASK {
                RunStatus::Success
            } else {
                RunStatus::Failed
            };
            r.finished_at = Some(started.plus(MINUTE));
            if r.status == RunStatus::Failed {
                r.failure_code = Some(FailureCode::VerificationCommandFailed);
                r.error = Some(excerpt.clone());
            }
            store.insert_run(&r).expect("insert run");
        }
    }
}

/// What a busy tick writes: one task's row, a new run of it, two events (claim and record).
pub fn busy_change(file: &Path, tasks: usize, n: usize, now: Timestamp) {
    let conn = rusqlite::Connection::open(file).expect("open");
    let task = format!("{:012x}", (n * 7919) % tasks.max(1));
    let at = now.plus(n as i64 * MINUTE).0;
    let tx = conn.unchecked_transaction().expect("transaction");
    tx.execute(
        "UPDATE tasks SET notes = ?1, updated_at = ?2 WHERE id = ?3",
        rusqlite::params![format!("busy tick {n}"), at, task],
    )
    .expect("task");
    tx.execute(
        "INSERT INTO runs (id, task_id, agent_id, tick_id, role, status, started_at, finished_at, summary) \
         VALUES (?1, ?2, 'gha:1:1:tick', 'busy', 'worker', 'success', ?3, ?3, 'a busy tick')",
        rusqlite::params![format!("busy{n:08x}"), task, at],
    )
    .expect("run");
    for kind in ["claim", "record"] {
        tx.execute(
            "INSERT INTO events (at, actor, kind, task_id, reason) VALUES (?1, 'bench', ?2, ?3, 'busy tick')",
            rusqlite::params![at, kind, task],
        )
        .expect("event");
    }
    tx.commit().expect("commit");
}

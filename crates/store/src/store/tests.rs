//! Store round trips and refusals, on temp files and in memory.

use super::*;
use crate::config::Config;
use crate::engine::{self, Observations};
use crate::model::{
    AgentId, AttemptKey, BlockReason, Risk, Role, RunStatus, Task, TaskId, TaskState, TaskStatus,
    TickId,
};
use crate::time::Timestamp;

const T0: Timestamp = Timestamp(1_795_262_400_000);

fn writer() -> Writer<'static> {
    Writer {
        tick_id: None,
        actor: "test",
        now: T0,
    }
}

fn task(id: &str, deps: &[&str]) -> Task {
    let mut t = Task::new(TaskId::from(id), &format!("title {id}"), "goal", T0);
    t.dependencies = deps.iter().map(|d| TaskId::from(*d)).collect();
    t
}

fn snapshot(store: &Store) -> engine::Snapshot {
    store
        .load_snapshot(
            TickId::from("t"),
            AgentId::from("a"),
            Observations::default(),
            SnapshotLimits::default(),
        )
        .unwrap()
}

#[test]
fn tasks_round_trip_with_every_field() {
    let mut store = Store::in_memory("mem").unwrap();
    let mut full = task("full", &["base"]);
    full.role = Role::Tester;
    full.risk = Risk::High;
    full.priority = 7;
    full.target_area = Some("path:src".into());
    full.touches = vec!["src/a.rs".into()];
    full.allowed_paths = vec!["src/**".into()];
    full.commands = vec!["cargo test".into()];
    full.attempts = full.attempts.bumped(AttemptKey::Test);
    full.next_attempt_at = Some(T0.plus(5));
    full.issue_number = Some(12);
    full.notes = "multi\nline".into();
    store
        .insert_tasks(&[task("base", &[]), full.clone()], writer())
        .unwrap();
    assert_eq!(store.task(&TaskId::from("full")).unwrap(), full);
    let snap = snapshot(&store);
    assert_eq!(snap.tasks.len(), 2);
    assert_eq!(
        snap.tasks.iter().find(|t| t.id.as_str() == "full").unwrap(),
        &full
    );
    // Bytes out and back in: the same state.
    let bytes = store.to_bytes().unwrap();
    let again = Store::from_bytes(&bytes, "copy").unwrap();
    assert_eq!(again.task(&TaskId::from("full")).unwrap(), full);
    assert_eq!(again.event_count().unwrap(), 2);
}

#[test]
fn bad_dependencies_write_nothing() {
    let mut store = Store::in_memory("mem").unwrap();
    store.insert_tasks(&[task("a", &[])], writer()).unwrap();
    let cases: &[(&[Task], &str)] = &[
        (
            &[task("b", &["nope"])],
            "depends on nope, which does not exist",
        ),
        (
            &[task("b", &["c"]), task("c", &["b"])],
            "dependency cycle: b → c → b",
        ),
        (&[task("a", &[])], "a task with id a already exists"),
    ];
    for (tasks, message) in cases {
        let err = store.insert_tasks(tasks, writer()).unwrap_err();
        assert!(err.to_string().contains(message), "{err}");
        assert!(err.is_user_error());
    }
    assert_eq!(store.list_tasks(&TaskFilter::default()).unwrap().len(), 1);
    assert_eq!(store.event_count().unwrap(), 1);
}

#[test]
fn transitions_are_checked_and_logged() {
    let mut store = Store::in_memory("mem").unwrap();
    store.insert_tasks(&[task("a", &[])], writer()).unwrap();
    let id = TaskId::from("a");
    store
        .transition_task(
            &id,
            TaskState::blocked(BlockReason::AwaitingHuman),
            "approval needed",
            TaskChanges::default(),
            writer(),
        )
        .unwrap();
    let err = store
        .transition_task(
            &id,
            TaskState::DONE,
            "skip ahead",
            TaskChanges::default(),
            writer(),
        )
        .unwrap_err();
    assert_eq!(
        err.to_string(),
        "a task cannot move from blocked(awaiting_human) to done"
    );
    let events = store.events_of(&id, 10).unwrap();
    let lines: Vec<String> = events
        .iter()
        .map(|e| {
            format!(
                "{} {:?}->{:?} {}",
                e.kind, e.from_state, e.to_state, e.reason
            )
        })
        .collect();
    assert_eq!(
        lines,
        [
            "task.created None->Some(\"queued\") created feature task: title a",
            "task.transition Some(\"queued\")->Some(\"blocked(awaiting_human)\") approval needed",
        ]
    );
}

#[test]
fn events_cannot_be_rewritten() {
    let mut store = Store::in_memory("mem").unwrap();
    store.insert_tasks(&[task("a", &[])], writer()).unwrap();
    let err = store
        .conn
        .execute("UPDATE events SET reason = 'x'", [])
        .unwrap_err();
    assert!(err.to_string().contains("append-only"), "{err}");
}

#[test]
fn applying_a_plan_claims_and_logs() {
    let mut store = Store::in_memory("mem").unwrap();
    store
        .insert_tasks(&[task("a", &[]), task("b", &["a"])], writer())
        .unwrap();
    let snap = snapshot(&store);
    let plan = engine::plan(&snap, &Config::default(), T0);
    let tick = TickId::from("t");
    let report = store
        .apply_plan(
            &plan,
            Writer {
                tick_id: Some(&tick),
                actor: "local:box:1",
                now: T0,
            },
        )
        .unwrap();
    assert_eq!(report.claims.len(), 1);
    let (task_id, run_id) = &report.claims[0];
    assert_eq!(task_id.as_str(), "a");
    assert_eq!(store.task(task_id).unwrap().status, TaskStatus::Running);
    let run = store.run(run_id).unwrap().unwrap();
    assert_eq!(
        (run.status, run.agent_id.as_str()),
        (RunStatus::Running, "local:box:1")
    );
    let snap = snapshot(&store);
    assert_eq!(snap.leases.len(), 1);
    // Applying the same plan again is refused as stale: the task has moved on.
    assert!(store.apply_plan(&plan, writer()).is_err());
    assert_eq!(snapshot(&store).leases.len(), 1);
}

#[test]
fn files_from_elsewhere_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    // Garbage.
    let garbage = dir.path().join("garbage.sqlite");
    std::fs::write(
        &garbage,
        b"definitely not sqlite, just text that is long enough to look like a header",
    )
    .unwrap();
    let err = Store::open_file(&garbage).err().expect("garbage refused");
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(Store::load_file_in_memory(&garbage).is_err());
    // Another program's database.
    let foreign = dir.path().join("foreign.sqlite");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE x (y)")
        .unwrap();
    let err = Store::open_file(&foreign).err().expect("foreign refused");
    assert!(err.to_string().contains("not an opentiger state"), "{err}");
    // A newer schema.
    let newer = dir.path().join("newer.sqlite");
    drop(Store::open_file(&newer).unwrap());
    rusqlite::Connection::open(&newer)
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    let before = std::fs::read(&newer).unwrap();
    let err = Store::open_file(&newer).err().expect("newer refused");
    assert!(
        matches!(err, StoreError::NewerSchema { found: 99, .. }),
        "{err}"
    );
    assert!(err.to_string().contains("upgrade opentiger"));
    assert_eq!(
        std::fs::read(&newer).unwrap(),
        before,
        "a refused file is not touched"
    );
}

#[test]
fn a_state_missing_a_table_or_column_is_refused_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite");
    drop(Store::open_file(&path).unwrap());
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("PRAGMA foreign_keys = OFF; DROP TABLE leases;")
        .unwrap();
    let err = Store::open_file(&path).err().expect("refused");
    assert!(matches!(err, StoreError::Corrupt { .. }), "{err}");
    assert!(
        err.to_string().contains("the table `leases` is missing"),
        "{err}"
    );
    assert!(Store::load_file_in_memory(&path).is_err());

    let path = dir.path().join("columns.sqlite");
    drop(Store::open_file(&path).unwrap());
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute_batch("ALTER TABLE budgets DROP COLUMN output_tokens;")
        .unwrap();
    let err = Store::open_file(&path).err().expect("refused");
    assert!(
        err.to_string()
            .contains("the table `budgets` has no column `output_tokens`"),
        "{err}"
    );
}

#[test]
fn in_memory_loads_leave_the_file_alone() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite");
    let mut store = Store::open_file(&path).unwrap();
    store.insert_tasks(&[task("a", &[])], writer()).unwrap();
    drop(store);
    let before = std::fs::read(&path).unwrap();
    let mut copy = Store::load_file_in_memory(&path).unwrap();
    copy.insert_tasks(&[task("b", &[])], writer()).unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), before);
    assert_eq!(
        Store::load_file_in_memory(&dir.path().join("missing.sqlite"))
            .unwrap()
            .schema_version()
            .unwrap(),
        SCHEMA_VERSION
    );
}

#[test]
fn a_read_only_store_reads_in_place_and_refuses_writes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("state.sqlite");
    let mut store = Store::open_file(&path).unwrap();
    store.insert_tasks(&[task("a", &[])], writer()).unwrap();
    drop(store);
    let before = std::fs::read(&path).unwrap();
    let mut reader = Store::open_read_only(&path).unwrap();
    let listed = reader.list_tasks(&TaskFilter::default()).unwrap();
    assert_eq!(listed.len(), 1);
    assert!(reader.insert_tasks(&[task("b", &[])], writer()).is_err());
    drop(reader);
    assert_eq!(std::fs::read(&path).unwrap(), before, "byte-identical");

    // An older schema is migrated in memory; the file keeps its version until a write.
    let old = dir.path().join("old.sqlite");
    let conn = rusqlite::Connection::open(&old).unwrap();
    for (i, sql) in super::schema::MIGRATIONS[..2].iter().enumerate() {
        conn.execute_batch(sql).unwrap();
        conn.pragma_update(None, "user_version", i as i64 + 1)
            .unwrap();
    }
    drop(conn);
    let reader = Store::open_read_only(&old).unwrap();
    assert_eq!(reader.schema_version().unwrap(), SCHEMA_VERSION);
    let version: i64 = rusqlite::Connection::open(&old)
        .unwrap()
        .query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap();
    assert_eq!(version, 2);
    // Missing: an empty state, and no file made.
    let missing = dir.path().join("missing.sqlite");
    assert!(Store::open_read_only(&missing)
        .unwrap()
        .list_tasks(&TaskFilter::default())
        .unwrap()
        .is_empty());
    assert!(!missing.exists());
}

#[test]
fn snapshots_carry_what_the_engine_needs_and_no_more() {
    let mut store = Store::in_memory("mem").unwrap();
    let mut done = task("done-dep", &[]);
    done.status = TaskStatus::Done;
    let mut old = task("old-done", &[]);
    old.status = TaskStatus::Done;
    store
        .insert_tasks(&[done, old, task("a", &["done-dep"])], writer())
        .unwrap();
    for i in 0..10 {
        let mut run = crate::model::Run::started(
            crate::model::RunId(format!("r{i}")),
            &task("a", &[]),
            AgentId::from("x"),
            TickId::from("t"),
            T0.plus(i),
        );
        run.status = RunStatus::Failed;
        store.insert_run(&run).unwrap();
    }
    let snap = snapshot(&store);
    let mut ids: Vec<&str> = snap.tasks.iter().map(|t| t.id.as_str()).collect();
    ids.sort();
    assert_eq!(
        ids,
        ["a", "done-dep"],
        "unrelated finished tasks are not loaded"
    );
    let runs: Vec<&str> = snap.runs.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(runs.len(), SnapshotLimits::default().runs_per_task as usize);
    assert!(
        runs.contains(&"r9") && !runs.contains(&"r0"),
        "newest runs first: {runs:?}"
    );
}

#[test]
fn pull_checks_round_trip() {
    let mut store = Store::in_memory("mem").unwrap();
    store
        .set_pull_state(3, crate::engine::PullState::Open, Some("abc"), T0)
        .unwrap();
    let checks = crate::model::Checks {
        state: "failure".into(),
        failing: vec!["build".into()],
        pending: vec![],
        passed: vec![],
        excerpts: Default::default(),
        mergeable: Some("clean".into()),
    };
    store.set_pull_checks(3, "abc", &checks).unwrap();
    let (sha, got) = store.pull_checks(3).unwrap().expect("stored");
    assert_eq!((sha.as_deref(), got), (Some("abc"), checks));
}

#[test]
fn a_new_head_forgets_the_checks_of_the_old_one() {
    use crate::engine::PullState;
    let mut store = Store::in_memory("mem").unwrap();
    store
        .set_pull_state(3, PullState::Open, Some("abc"), T0)
        .unwrap();
    let red = crate::model::Checks {
        state: "failure".into(),
        failing: vec!["build".into()],
        pending: vec![],
        passed: vec![],
        excerpts: Default::default(),
        mergeable: None,
    };
    store.set_pull_checks(3, "abc", &red).unwrap();
    // The same head again (e.g. the PR's title changed): the checks stay.
    store
        .set_pull_state(3, PullState::Open, Some("abc"), T0)
        .unwrap();
    assert_eq!(store.open_pull_checks().unwrap()[&3].checks, red);
    // A push: the red of `abc` is not the red of `def`.
    store
        .set_pull_state(3, PullState::Open, Some("def"), T0)
        .unwrap();
    assert!(store.open_pull_checks().unwrap().is_empty());
    assert_eq!(store.pull_checks(3).unwrap(), None);
}

/// Issue 9: a quota hit parks the run's executor in the same transaction as the outcome, and a
/// later run of that executor that hits no quota ends the park.
#[test]
fn executor_waits_are_written_with_the_outcome() {
    use crate::engine::fallback::{ChainEntry, ExecutorUse};
    use crate::engine::outcome::{decide_outcome, RunExecutors, RunOutcome};
    let mut store = Store::in_memory("mem").unwrap();
    store.insert_tasks(&[task("a", &[])], writer()).unwrap();
    let config = Config::default();
    let holder = Writer {
        tick_id: None,
        actor: "local:box:1",
        now: T0,
    };
    let used = |index| ExecutorUse {
        chain: ["claude-code", "codex"]
            .map(|key| ChainEntry {
                key: key.to_string(),
                available: true,
                config: String::new(),
            })
            .to_vec(),
        index,
    };
    let mut ticks = 0;
    let mut run_once = |store: &mut Store, index: usize, success: bool| {
        ticks += 1;
        let mut snap = snapshot(store);
        snap.tick_id = TickId::from(format!("t{ticks}").as_str());
        let plan = engine::plan(&snap, &config, T0);
        let (task_id, run_id) = store.apply_plan(&plan, holder).unwrap().claims[0].clone();
        let outcome = RunOutcome {
            success,
            failure_code: None,
            message: "rate limit exceeded, retry in 600s".to_string(),
            no_changes: success,
        };
        let record = RunRecord {
            executor_use: Some(used(index)),
            ..RunRecord::default()
        };
        let waits = store.executor_waits().unwrap();
        let executors = RunExecutors {
            used: record.executor_use.as_ref(),
            waits: &waits,
        };
        let task = store.task(&task_id).unwrap();
        let decision = decide_outcome(&task, &outcome, &executors, &config, T0);
        store
            .record_run(&task_id, &run_id, &record, &decision, holder)
            .unwrap();
        store.task(&task_id).unwrap().state()
    };
    assert_eq!(run_once(&mut store, 0, false), TaskState::QUEUED);
    let waits = store.executor_waits().unwrap();
    let park = &waits["claude-code"];
    assert_eq!(
        (waits.len(), park.until, park.hits),
        (1, T0.plus(600_000), 1)
    );
    assert!(park.reason.starts_with("task a: rate limit"), "{park:?}");
    // The fallback finishes the task; the primary's park stays (its quota is not known to be
    // over). A run of the primary that hits no quota ends it.
    assert_eq!(run_once(&mut store, 1, true), TaskState::DONE);
    assert_eq!(store.executor_waits().unwrap().len(), 1);
    store.insert_tasks(&[task("b", &[])], writer()).unwrap();
    assert_eq!(run_once(&mut store, 0, true), TaskState::DONE);
    assert!(store.executor_waits().unwrap().is_empty());
}

#[test]
fn tasks_to_report_are_the_open_ones_and_the_decided_ones_not_yet_told() {
    let mut store = Store::in_memory("mem").unwrap();
    let with = |id: &str, status: TaskStatus, issue: Option<u64>| {
        let mut t = task(id, &[]);
        t.status = status;
        t.issue_number = issue;
        t
    };
    let mut review = with("review", TaskStatus::Queued, Some(7));
    review.kind = crate::model::TaskKind::PrReview;
    store
        .insert_tasks(
            &[
                with("open", TaskStatus::Queued, Some(1)),
                with("told", TaskStatus::Done, Some(2)),
                with("owed", TaskStatus::Cancelled, Some(3)),
                with("never", TaskStatus::Done, Some(4)),
                with("local", TaskStatus::Queued, None),
                review,
            ],
            writer(),
        )
        .unwrap();
    let cursor = |phase: &str| Cursor {
        etag: None,
        body: Some(format!(r#"{{"phase":"{phase}","text":"t"}}"#)),
    };
    store
        .set_cursor("progress:told", &cursor("completed"), T0)
        .unwrap();
    store
        .set_cursor("progress:owed", &cursor("executing"), T0)
        .unwrap();
    let ids = |open: bool| -> Vec<String> {
        store
            .tasks_to_report(open)
            .unwrap()
            .into_iter()
            .map(|(t, body)| format!("{} {}", t.id, body.is_some()))
            .collect()
    };
    assert_eq!(ids(false), ["owed true"]);
    assert_eq!(ids(true), ["open false", "owed true"]);
}

/// Issue 49: a planner attempt is known by its id once recorded, so a dead tick's kept attempt
/// replayed twice is recorded (and its spend counted) once.
#[test]
fn a_recorded_plan_is_known_by_its_id() {
    use crate::model::{PlanRecord, PlanStatus};
    let mut store = Store::in_memory("mem").unwrap();
    let plan = PlanRecord {
        id: "plan-1".into(),
        signature: "sig".into(),
        requirement_hash: "h".into(),
        base_head: "c".repeat(40),
        status: PlanStatus::Created,
        source: "fallback".into(),
        task_count: 1,
        errors: Vec::new(),
        created_at: T0,
    };
    assert!(!store.has_plan("plan-1").unwrap());
    assert!(store
        .record_plan(&plan, &[task("planned", &[])], writer())
        .unwrap());
    assert!(store.has_plan("plan-1").unwrap());
    assert!(!store.has_plan("plan-2").unwrap());
}

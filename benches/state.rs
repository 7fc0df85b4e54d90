//! `cargo bench --bench state`: figures for a large state (10k tasks, 100k runs).
//!
//! Reports the state file's size, load and save times, the engine's planning time, the wall time
//! and peak memory of a quiet `opentiger tick` (real binary, file store and state branch), and
//! the bytes a state save pushes. Figures, not assertions: nothing here fails on a slow machine.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use opentiger::config::Config;
use opentiger::engine::{self, Observations};
use opentiger::model::{
    AgentId, BlockReason, FailureCode, Run, RunId, RunStatus, Task, TaskId, TaskStatus, TickId,
};
use opentiger::store::{SnapshotLimits, Store, Writer};
use opentiger::time::{Timestamp, MINUTE};

const TASKS: usize = 10_000;
const RUNS_PER_TASK: usize = 10;
const ACTIVE: usize = 100;

fn main() {
    let dir = tempfile::tempdir().expect("temp dir");
    let now = Timestamp::parse_rfc3339("2026-11-21T12:00:00Z").expect("time");
    let started = Instant::now();
    let mut store = Store::in_memory("bench").expect("store");
    build(&mut store, now);
    println!(
        "built {TASKS} tasks and {} runs in {:.1}s",
        TASKS * RUNS_PER_TASK,
        started.elapsed().as_secs_f64()
    );

    let bytes = store.to_bytes().expect("bytes");
    println!("state file: {:.1} MiB", bytes.len() as f64 / 1048576.0);
    let (load, _) = time(5, || Store::from_bytes(&bytes, "bench").expect("load"));
    println!("load (bytes → SQLite in memory): {}", ms(load));
    let (save, _) = time(5, || store.to_bytes().expect("save"));
    println!("save (SQLite → bytes): {}", ms(save));
    let config = Config::default();
    let (snap_time, snapshot) = time(5, || {
        store
            .load_snapshot(
                TickId::from("t"),
                AgentId::from("a"),
                Observations::default(),
                SnapshotLimits::default(),
            )
            .expect("snapshot")
    });
    let (plan_time, plan) = time(5, || engine::plan(&snapshot, &config, now));
    println!(
        "snapshot: {} ({} tasks, {} runs loaded); plan: {} ({} decisions)",
        ms(snap_time),
        snapshot.tasks.len(),
        snapshot.runs.len(),
        ms(plan_time),
        plan.decisions.len()
    );

    quiet_ticks(dir.path(), &bytes, now);
}

/// 10k tasks: all but 100 done, those 100 waiting on a person; 10 runs each with a 200-character
/// error excerpt (the DESIGN §14 size case).
fn build(store: &mut Store, now: Timestamp) {
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
    for i in 0..TASKS {
        let mut t = Task::new(
            TaskId(format!("{i:012x}")),
            &format!("Task number {i}"),
            "a goal that says what done means",
            now.plus(-(i as i64) * MINUTE),
        );
        if i < TASKS - ACTIVE {
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
    for i in 0..TASKS {
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

/// Quiet ticks of the real binary: wall time and the child's peak resident memory.
fn quiet_ticks(dir: &Path, bytes: &[u8], now: Timestamp) {
    let bin = env!("CARGO_BIN_EXE_opentiger");
    let git = |cwd: &Path, args: &[&str]| {
        let out = Command::new("git")
            .current_dir(cwd)
            .args(["-c", "user.name=b", "-c", "user.email=b@b"])
            .args(args)
            .output()
            .expect("git");
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    // File store.
    let repo = dir.join("file-repo");
    std::fs::create_dir_all(repo.join(".opentiger")).expect("mkdir");
    std::fs::write(repo.join(".opentiger.yml"), "mode: local-git\n").expect("config");
    std::fs::write(repo.join(".opentiger/state.sqlite"), bytes).expect("state");
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "i"]);
    report_ticks("file store", bin, &repo, now);

    // State branch on a bare origin.
    let origin = dir.join("origin.git");
    git(
        dir,
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            origin.to_str().expect("utf-8"),
        ],
    );
    let clone = dir.join("branch-repo");
    git(
        dir,
        &[
            "clone",
            "-q",
            origin.to_str().expect("utf-8"),
            clone.to_str().expect("utf-8"),
        ],
    );
    std::fs::write(
        clone.join(".opentiger.yml"),
        "mode: local-git\nstate:\n  store: branch\n",
    )
    .expect("config");
    git(&clone, &["add", "-A"]);
    git(&clone, &["commit", "-q", "-m", "i"]);
    git(&clone, &["push", "-q", "origin", "main"]);
    let state = opentiger::statebranch::StateRef::new(&clone, "opentiger/state", "origin", 100);
    let first = state.load().expect("load");
    state
        .save(&first, bytes, "# s\n", "seed")
        .expect("seed save");
    report_ticks("state branch", bin, &clone, now);

    // Bytes a save pushes: the thin pack from the previous state commit to the next one, after
    // one task changed (what `git push` sends).
    let loaded = state.load().expect("load");
    let mut store = Store::from_bytes(&loaded.bytes, "b").expect("store");
    store
        .transition_task(
            &TaskId(format!("{:012x}", TASKS - 1)),
            opentiger::model::TaskState::QUEUED,
            "bench",
            Default::default(),
            Writer {
                tick_id: None,
                actor: "b",
                now,
            },
        )
        .expect("change");
    let next = store.to_bytes().expect("bytes");
    let started = Instant::now();
    let saved = state
        .save(&loaded, &next, "# s\n", "one change")
        .expect("save");
    let save_time = started.elapsed();
    let old = loaded.commit.expect("old commit");
    let pack = Command::new("git")
        .current_dir(&clone)
        .args(["pack-objects", "--revs", "--thin", "--stdout", "-q"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            if let Some(mut stdin) = child.stdin.take() {
                writeln!(stdin, "{}\n^{old}", saved.commit)?;
            }
            child.wait_with_output()
        })
        .expect("pack-objects");
    println!(
        "state branch save after one change: {} (commit + push), {:.1} KiB pushed (thin pack), {:.1} MiB state",
        ms(save_time),
        pack.stdout.len() as f64 / 1024.0,
        next.len() as f64 / 1048576.0
    );
}

fn report_ticks(label: &str, bin: &str, repo: &Path, now: Timestamp) {
    let mut times = Vec::new();
    let mut peak = 0;
    for i in 0..5 {
        let at = now.plus(i * MINUTE).to_string();
        let started = Instant::now();
        let out = Command::new(bin)
            .arg("--repo")
            .arg(repo)
            .args(["--now", &at, "tick", "--json"])
            .output()
            .expect("tick");
        times.push(started.elapsed());
        assert!(
            out.status.success(),
            "{label} tick: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("tick --json");
        peak = peak.max(summary["peak_memory_kib"].as_u64().unwrap_or(0));
        assert_eq!(
            summary["decisions"], 0,
            "a quiet tick decides nothing: {summary}"
        );
    }
    times.sort();
    println!(
        "quiet tick, {label}: median {} (min {}, max {}), peak memory of the opentiger process {:.1} MiB",
        ms(times[2]),
        ms(times[0]),
        ms(times[4]),
        peak as f64 / 1024.0
    );
}

/// The median of `n` runs of `f`, and the last result.
fn time<T>(n: usize, mut f: impl FnMut() -> T) -> (Duration, T) {
    let mut times = Vec::new();
    let mut last = None;
    for _ in 0..n {
        let started = Instant::now();
        last = Some(f());
        times.push(started.elapsed());
    }
    times.sort();
    (times[n / 2], last.expect("n > 0"))
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

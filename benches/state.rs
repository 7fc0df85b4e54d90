//! `cargo bench --bench state`: what a large state costs, for several sizes (issue 20).
//!
//! For each size (tasks, ten runs each, all but 100 finished): the state file's size; a quiet
//! tick of the real binary on a state file and on a state branch; a busy-tick save on the
//! branch (commit + push of one changed task, its run and events) with the bytes it pushes, and
//! a whole write command (load, change, save, push); the read commands on the file store; the
//! state's size 40 days later, after retention; and the packed history after many saves divided
//! by one packed snapshot. Times are medians; memory is the peak resident set of the largest
//! process in the command's process tree (`/usr/bin/time`'s figure, which folds in every
//! descendant the command waited for). The quiet tick on the file store is also shown against
//! its floor, `sqlite3` opening the same file and counting the tasks (issue 29: within 2×).
//!
//! Figures, not assertions: nothing here fails on a slow machine. Selectable, since the largest
//! cases are slow:
//! - `STATE_BENCH_TASKS=1000,10000,50000` (default `1000,10000`)
//! - `STATE_BENCH_SAVES=1000` saves for the history figure (default 1000 for states of up to
//!   1000 tasks, 100 above)
//! - `STATE_BENCH_KEEP=1` keeps each size's folder (the clones, the state file) and prints its
//!   path, to profile a command on it by hand

#[path = "state/build.rs"]
mod build;
#[path = "state/measure.rs"]
mod measure;

use std::path::Path;
use std::time::Instant;

use measure::{git, median, ms, opentiger, Measured};
use opentiger::statebranch::StateRef;
use opentiger::store::{Store, Table};
use opentiger::time::{Timestamp, DAY};

/// One row of the table.
struct Figures {
    tasks: usize,
    runs: i64,
    events: i64,
    state_mib: f64,
    quiet_file: Measured,
    /// `sqlite3` opening the same file and counting its tasks: the floor of a quiet tick.
    floor: Measured,
    quiet_branch: Measured,
    save_ms: f64,
    pushed_kib: f64,
    chunks: (usize, usize),
    write_command: Measured,
    branch_status: Measured,
    reads: Vec<(&'static str, Measured)>,
    retained_mib: f64,
    saves: usize,
    history_ratio: f64,
}

fn main() {
    let sizes: Vec<usize> = std::env::var("STATE_BENCH_TASKS")
        .unwrap_or_else(|_| "1000,10000".to_string())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let saves_env: Option<usize> = std::env::var("STATE_BENCH_SAVES")
        .ok()
        .and_then(|s| s.trim().parse().ok());
    let now = Timestamp::parse_rfc3339("2026-11-21T12:00:00Z").expect("time");
    let mut rows = Vec::new();
    for &tasks in &sizes {
        let saves = saves_env.unwrap_or(if tasks <= 1000 { 1000 } else { 100 });
        rows.push(measure_size(tasks, saves, now));
    }
    print_table(&rows);
}

fn measure_size(tasks: usize, saves: usize, now: Timestamp) -> Figures {
    let mut dir = tempfile::tempdir().expect("temp dir");
    if std::env::var_os("STATE_BENCH_KEEP").is_some() {
        dir.disable_cleanup(true);
        eprintln!("[{tasks} tasks] kept in {}", dir.path().display());
    }
    let started = Instant::now();
    let state_file = dir.path().join("built.sqlite");
    {
        // Built in memory: on disk, every insert would wait for its own fsync.
        let mut store = Store::in_memory("bench").expect("store");
        build::build(&mut store, tasks, now);
        std::fs::write(&state_file, store.to_bytes().expect("bytes")).expect("write state");
    }
    let store = Store::open_read_only(&state_file).expect("store");
    let runs = store.row_count(Table::Runs).expect("runs");
    let events = store.row_count(Table::Events).expect("events");
    let bytes = std::fs::metadata(&state_file).expect("size").len();
    drop(store);
    eprintln!(
        "[{tasks} tasks] built {runs} runs, {events} events, {:.1} MiB in {:.1}s",
        bytes as f64 / 1048576.0,
        started.elapsed().as_secs_f64()
    );

    // File store: quiet ticks and the read commands.
    let file_repo = dir.path().join("file-repo");
    std::fs::create_dir_all(file_repo.join(".opentiger")).expect("mkdir");
    std::fs::write(file_repo.join(".opentiger.yml"), "mode: local-git\n").expect("config");
    std::fs::copy(&state_file, file_repo.join(".opentiger/state.sqlite")).expect("state");
    git(&file_repo, &["init", "-q", "-b", "main"]);
    git(&file_repo, &["commit", "-q", "--allow-empty", "-m", "i"]);
    let quiet_file = quiet_ticks(&file_repo, now);
    let floor = median(5, || {
        measure::sqlite3_floor(&file_repo.join(".opentiger/state.sqlite"))
    });
    let at = now.to_string();
    let reads = [
        ("status", vec!["status"]),
        ("status --json", vec!["status", "--json"]),
        ("task list", vec!["task", "list"]),
        ("tick --dry-run", vec!["tick", "--dry-run"]),
    ]
    .into_iter()
    .map(|(name, args)| {
        let mut all = vec!["--now", at.as_str()];
        all.extend(args);
        (name, median(3, || opentiger(&file_repo, &all)))
    })
    .collect();

    // State branch on a bare origin.
    let origin = dir.path().join("origin.git");
    let clone = measure::clone_with_config(dir.path(), &origin, "branch-repo");
    let state = StateRef::new(&clone, "opentiger/state", "origin", 100);
    let empty = state.load_into(&dir.path().join("unused")).expect("load");
    state
        .save_file(&empty, &state_file, "# s\n", "seed")
        .expect("seed save");
    let quiet_branch = quiet_ticks(&clone, now);
    let branch_status = median(3, || opentiger(&clone, &["--now", &at, "status"]));

    // A busy tick's save: one task, its run and events changed.
    let work = dir.path().join("work.sqlite");
    let mut save_times = Vec::new();
    let mut pushed = 0;
    let mut chunks = (0, 0);
    for i in 0..5 {
        let loaded = state.load_into(&work).expect("load");
        let old = loaded.commit.clone().expect("old commit");
        build::busy_change(&work, tasks, i, now);
        let started = Instant::now();
        let saved = state
            .save_file(&loaded, &work, "# s\n", "busy")
            .expect("save");
        save_times.push(started.elapsed());
        pushed = measure::thin_pack_bytes(&clone, &old, &saved.commit);
        chunks = (saved.chunks_written, saved.chunks_total);
    }
    save_times.sort();
    let write_command = median(3, || {
        opentiger(
            &clone,
            &[
                "--now", &at, "task", "add", "--title", "bench", "--goal", "bench",
            ],
        )
    });

    // Retention: the same state 40 days later, nothing new done.
    let retained = dir.path().join("retained.sqlite");
    std::fs::copy(&state_file, &retained).expect("copy");
    let mut store = Store::open_file(&retained).expect("store");
    store.prune(now.plus(40 * DAY), 30).expect("prune");
    let retained_bytes = store.file_size().expect("size");
    drop(store);

    let history_ratio = history(dir.path(), &state_file, tasks, saves, now);
    Figures {
        tasks,
        runs,
        events,
        state_mib: bytes as f64 / 1048576.0,
        quiet_file,
        floor,
        quiet_branch,
        save_ms: save_times[save_times.len() / 2].as_secs_f64() * 1000.0,
        pushed_kib: pushed as f64 / 1024.0,
        chunks,
        write_command,
        branch_status,
        reads,
        retained_mib: retained_bytes as f64 / 1048576.0,
        saves,
        history_ratio,
    }
}

/// Quiet ticks of the real binary (each decides nothing).
fn quiet_ticks(repo: &Path, now: Timestamp) -> Measured {
    let mut minute = 0;
    median(5, || {
        minute += 1;
        let at = now.plus(minute * opentiger::time::MINUTE).to_string();
        let m = opentiger(repo, &["--now", &at, "tick", "--json"]);
        let summary: serde_json::Value = serde_json::from_slice(&m.stdout).expect("tick --json");
        assert_eq!(
            summary["decisions"], 0,
            "a quiet tick decides nothing: {summary}"
        );
        m
    })
}

/// `saves` busy saves on a fresh origin (history squashed past 100 commits), then the origin's
/// packed size after its housekeeping, divided by one snapshot packed alone.
fn history(dir: &Path, state_file: &Path, tasks: usize, saves: usize, now: Timestamp) -> f64 {
    let started = Instant::now();
    let origin = dir.join("history.git");
    let clone = measure::clone_with_config(dir, &origin, "history-repo");
    let state = StateRef::new(&clone, "opentiger/state", "origin", 100);
    let empty = state.load_into(&dir.join("unused")).expect("load");
    state
        .save_file(&empty, state_file, "# s\n", "seed")
        .expect("seed");
    let single = dir.join("single.git");
    git(
        dir,
        &[
            "clone",
            "-q",
            "--bare",
            origin.to_str().expect("utf-8"),
            single.to_str().expect("utf-8"),
        ],
    );
    git(&single, &["gc", "-q", "--prune=now"]);
    let one = measure::dir_size(&single.join("objects"));

    let work = dir.join("history.sqlite");
    for i in 0..saves {
        let loaded = state.load_into(&work).expect("load");
        build::busy_change(&work, tasks, i + 100, now);
        state
            .save_file(&loaded, &work, "# s\n", "busy")
            .expect("save");
    }
    git(&origin, &["gc", "-q", "--prune=now"]);
    let all = measure::dir_size(&origin.join("objects"));
    eprintln!(
        "[{tasks} tasks] {saves} saves in {:.1}s; origin {:.1} MiB packed, one snapshot {:.1} MiB",
        started.elapsed().as_secs_f64(),
        all as f64 / 1048576.0,
        one as f64 / 1048576.0
    );
    all as f64 / one.max(1) as f64
}

fn print_table(rows: &[Figures]) {
    let mib = |kib: u64| format!("{:.1} MiB", kib as f64 / 1024.0);
    let cell = |m: &Measured| format!("{} / {}", ms(m.time), mib(m.peak_kib));
    println!();
    println!(
        "| figure | {} |",
        rows.iter()
            .map(|r| format!("{} tasks", r.tasks))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    println!("|---|{}", "---|".repeat(rows.len()));
    let line = |name: &str, f: &dyn Fn(&Figures) -> String| {
        println!(
            "| {name} | {} |",
            rows.iter().map(f).collect::<Vec<_>>().join(" | ")
        );
    };
    line("runs / events", &|r| format!("{} / {}", r.runs, r.events));
    line("state file", &|r| format!("{:.1} MiB", r.state_mib));
    line("quiet tick, file store (time / peak)", &|r| {
        cell(&r.quiet_file)
    });
    line("`sqlite3` floor: open the file, count the tasks", &|r| {
        cell(&r.floor)
    });
    line(
        "quiet tick, file store ÷ `sqlite3` floor (issue 29: ≤ 2)",
        &|r| {
            format!(
                "{:.1}",
                r.quiet_file.time.as_secs_f64() / r.floor.time.as_secs_f64().max(1e-9)
            )
        },
    );
    line("quiet tick, state branch (time / peak)", &|r| {
        cell(&r.quiet_branch)
    });
    line("busy-tick save: commit + push", &|r| {
        format!("{:.1} ms", r.save_ms)
    });
    line("busy-tick save: pushed (thin pack)", &|r| {
        format!("{:.1} KiB", r.pushed_kib)
    });
    line("busy-tick save: chunks written", &|r| {
        format!("{} of {}", r.chunks.0, r.chunks.1)
    });
    line(
        "write command on branch: load+change+save (time / peak)",
        &|r| cell(&r.write_command),
    );
    line("`status` on branch (time / peak)", &|r| {
        cell(&r.branch_status)
    });
    for (i, (name, _)) in rows
        .first()
        .map(|r| r.reads.clone())
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        line(&format!("`{name}` on file (time / peak)"), &|r| {
            cell(&r.reads[i].1)
        });
    }
    line("state file before → after retention (40 days on)", &|r| {
        format!("{:.1} → {:.1} MiB", r.state_mib, r.retained_mib)
    });
    line("packed history ÷ one snapshot", &|r| {
        format!("{:.2} after {} saves", r.history_ratio, r.saves)
    });
}

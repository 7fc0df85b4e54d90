//! `opentiger demo`: the whole loop on a built-in sample repository with the built-in scripted
//! agent; no network, no API key, nothing installed beyond the Rust toolchain that built us. A tiny
//! Rust crate and three tasks, each later one depending on those before it: the script fails the
//! first task's verification once, then fixes it, and has the judge request changes on the second
//! once, so the demo shows retries with the failure fed back, an AutoFix child, and merges.
//! Not for: the scripted agent (`executor::scripted`) or any rule of the loop: each step is a tick.

use std::path::{Path, PathBuf};
use std::time::Instant;

use crate::git::Git;
use crate::model::{Lane, Role, Task, TaskId};
use crate::store::{Store, TaskFilter, Writer};
use crate::tick::{tick as tick_once, Context, Failure};
use crate::time::{Timestamp, MINUTE};

const LIB_RS: &str = include_str!("sample/lib.rs.txt");
const CARGO_TOML: &str = include_str!("sample/Cargo.toml.txt");
const CARGO_LOCK: &str = include_str!("sample/Cargo.lock.txt");
const README: &str = include_str!("sample/README.md.txt");
const GITIGNORE: &str = include_str!("sample/gitignore.txt");
const SCRIPT: &str = include_str!("sample/script.json");

/// Ticks the demo runs at most before it gives up (it converges in about ten).
const MAX_TICKS: u32 = 30;

/// What the demo did, for its report and its tests.
pub struct DemoReport {
    pub dir: PathBuf,
    pub ticks: u32,
    pub converged: bool,
    /// Everything it printed, as `emit` was given it.
    pub text: String,
}

/// Where the demo's lines go as they happen (the command prints them at once, so each tick
/// shows before the next one starts).
pub type Emit<'a> = &'a mut dyn FnMut(&str) -> Result<(), Failure>;

fn io(what: &str, e: impl std::fmt::Display) -> Failure {
    Failure::tick(format!("demo: could not {what}: {e}"))
}

/// Builds the sample repository in `root` (which must be empty or missing).
pub fn create_sample(root: &Path) -> Result<PathBuf, Failure> {
    let repo = root.join("calc");
    std::fs::create_dir_all(repo.join("src")).map_err(|e| io("create the sample", e))?;
    for (path, text) in [
        ("Cargo.toml", CARGO_TOML),
        ("Cargo.lock", CARGO_LOCK),
        ("src/lib.rs", LIB_RS),
        ("README.md", README),
        (".gitignore", GITIGNORE),
    ] {
        std::fs::write(repo.join(path), text).map_err(|e| io("write the sample", e))?;
    }
    std::fs::write(root.join("script.json"), SCRIPT).map_err(|e| io("write the script", e))?;
    let target = root.join("target");
    // The checks share one build folder outside their worktrees (quicker); the sandbox lets
    // them write it because the configuration names it (`sandbox.writable`, an existing folder).
    std::fs::create_dir_all(&target).map_err(|e| io("make the build folder", e))?;
    let test = format!(
        "CARGO_TARGET_DIR={} cargo test --offline --quiet",
        target.display()
    );
    let config = format!(
        "# opentiger demo: local branches, the built-in scripted agent.\n\
         mode: local-git\n\
         agents:\n  default:\n    executor: scripted\n    script: {script}\n\
         limits:\n  max_runs_per_tick: 2\n\
         retry:\n  cooldown_seconds: 60\n\
         verify:\n  commands: [\"{test}\"]\n\
         sandbox:\n  writable: [\"{target}\"]\n",
        script = root.join("script.json").display(),
        target = target.display(),
    );
    std::fs::write(repo.join(".opentiger.yml"), config)
        .map_err(|e| io("write the configuration", e))?;
    let git = Git::new(&repo);
    git.run(&["init", "-q", "-b", "main"])
        .map_err(|e| io("init the sample", e))?;
    git.run(&["add", "-A"])
        .map_err(|e| io("stage the sample", e))?;
    git.run(&["commit", "-q", "-m", "calc: add"])
        .map_err(|e| io("commit the sample", e))?;
    Ok(repo)
}

/// The demo's three tasks.
fn sample_tasks(now: Timestamp) -> Vec<Task> {
    let mut sub = Task::new(
        TaskId::from("demo-sub"),
        "Add subtraction",
        "calc has `sub(a, b)` returning a − b, with a test",
        now,
    );
    sub.priority = 30;
    sub.allowed_paths = vec!["src/**".into()];
    let mut mul = Task::new(
        TaskId::from("demo-mul"),
        "Add multiplication",
        "calc has `mul(a, b)` returning a × b, with tests",
        now,
    );
    mul.priority = 20;
    mul.allowed_paths = vec!["src/**".into()];
    mul.dependencies = vec![sub.id.clone()];
    let mut docs = Task::new(
        TaskId::from("demo-docs"),
        "Document the calculator",
        "README lists every function",
        now,
    );
    docs.role = Role::Docser;
    docs.lane = Lane::Docser;
    docs.priority = 10;
    docs.dependencies = vec![sub.id.clone(), mul.id.clone()];
    vec![sub, mul, docs]
}

/// Runs the demo, handing each piece of its report to `emit` as soon as it is known: the
/// introduction, then each tick's lines when that tick ends, then the result.
pub fn run(base: &Context, keep: Option<&Path>, emit: Emit<'_>) -> Result<DemoReport, Failure> {
    let started = Instant::now();
    let temp;
    let root = match keep {
        Some(dir) => dir.to_path_buf(),
        None => {
            temp = tempfile::Builder::new()
                .prefix("opentiger-demo-")
                .tempdir()
                .map_err(|e| io("make a temp dir", e))?;
            temp.path().to_path_buf()
        }
    };
    let repo = create_sample(&root)?;
    let (config, source) = crate::config::load(&repo.join(".opentiger.yml"), true)?;
    let mut ctx = Context {
        repo: repo.clone(),
        config,
        config_source: source,
        ..base.clone()
    };
    let writer = Writer {
        tick_id: None,
        actor: "demo",
        now: ctx.now,
    };
    ctx.write_state("demo tasks", |store| {
        Ok(store.insert_tasks(&sample_tasks(ctx.now), writer)?)
    })?;
    let mut out = String::new();
    let mut say = |text: String| -> Result<(), Failure> {
        emit(&text)?;
        out.push_str(&text);
        Ok(())
    };
    say(format!("opentiger demo in {}\n\nThe sample: a tiny Rust crate and three tasks (\"Add multiplication\" depends on \"Add subtraction\"; the docs task on both).\n", repo.display()))?;
    let mut ticks = 0;
    let mut converged = false;
    let mut idle = 0;
    while ticks < MAX_TICKS {
        ticks += 1;
        ctx.tick_id = crate::model::TickId::fresh(ctx.now.0 + i64::from(ticks));
        say(format!("\n── tick {ticks} at {} ──\n", ctx.now.clock()))?;
        let summary = tick_once(&ctx)?;
        // What a person reads of a tick: its plain lines (`tick -v` shows the rest).
        let lines = summary.plain_lines();
        let mut text = String::new();
        if lines.is_empty() {
            text.push_str("  (nothing to do: waiting for a cooldown)\n");
        }
        for line in lines {
            text.push_str(&format!("  {line}\n"));
        }
        say(text)?;
        idle = if summary.plain_lines().is_empty() {
            idle + 1
        } else {
            0
        };
        let store = ctx.read_store()?;
        let active = store.list_tasks(&TaskFilter::default())?;
        if active.is_empty() {
            converged = true;
            break;
        }
        // Cooldowns are a minute and the clock moves two per tick: idle ticks mean it is stuck.
        if idle >= 3 {
            break;
        }
        ctx.now = ctx.now.plus(2 * MINUTE);
    }
    say(final_report(
        &ctx,
        &repo,
        ticks,
        converged,
        started,
        keep.is_some(),
    )?)?;
    Ok(DemoReport {
        dir: root,
        ticks,
        converged,
        text: out,
    })
}

fn final_report(
    ctx: &Context,
    repo: &Path,
    ticks: u32,
    converged: bool,
    started: Instant,
    kept: bool,
) -> Result<String, Failure> {
    let store: Store = ctx.read_store()?;
    let tasks = store.list_tasks(&TaskFilter {
        status: None,
        include_terminal: true,
    })?;
    let mut out = String::from("\n══ Result ══\n\nTasks:\n");
    for t in &tasks {
        let parent = t
            .parent_task_id
            .as_ref()
            .map(|p| format!(" (fixes {p})"))
            .unwrap_or_default();
        out.push_str(&format!(
            "  {:<14} {:<10} {}{parent}\n",
            t.id.short(),
            t.state().to_string(),
            t.title
        ));
    }
    let runs = store.recent_runs(100)?;
    let failed = runs
        .iter()
        .filter(|r| r.status == crate::model::RunStatus::Failed)
        .count();
    let cost: f64 = runs.iter().map(|r| r.cost_usd).sum();
    out.push_str(&format!(
        "\nRuns: {} ({} failed, then retried with the failure in the prompt); spend ${cost:.2}\n",
        runs.len(),
        failed
    ));
    for r in runs.iter().rev() {
        let what = r.error.as_deref().or(r.summary.as_deref()).unwrap_or("");
        out.push_str(&format!(
            "  {} {:<9} {}\n",
            r.task_id.short(),
            r.status.as_str(),
            crate::report::truncate(what, 90)
        ));
    }
    let log = Git::new(repo)
        .run(&["log", "--oneline", "main"])
        .map_err(|e| io("read the log", e))?;
    out.push_str(&format!(
        "\nmain after the demo:\n{}\n",
        log.lines()
            .map(|l| format!("  {l}"))
            .collect::<Vec<_>>()
            .join("\n")
    ));
    if let Some(hint) = std::env::current_exe().ok().and_then(|e| on_path_hint(&e)) {
        out.push_str(&hint);
    }
    out.push_str(&format!(
        "\n{} after {ticks} ticks in {:.1}s. To look around: {}\n",
        if converged {
            "Every task is done"
        } else {
            "Not every task finished"
        },
        started.elapsed().as_secs_f64(),
        if kept {
            format!("opentiger --repo {} status", repo.display())
        } else {
            "run it with `--keep DIR` to keep the repository".to_string()
        }
    ));
    Ok(out)
}

/// The command that puts this very build on PATH, reusing it (README: Set up on a fresh
/// machine). `cargo install --debug` with the clone's `target` folder finds the binary
/// `cargo run` built fresh and copies it to `~/.cargo/bin`: a second, no second cold build.
pub const INSTALL_THIS_BUILD: &str =
    "cargo install --locked --offline --debug --path . --target-dir target";

/// When `exe` is the debug build in a clone of opentiger (`<clone>/target/debug/opentiger`, as
/// `cargo run -- demo` runs it), how to put it on PATH without building again.
fn on_path_hint(exe: &Path) -> Option<String> {
    let debug = exe.parent().filter(|d| d.ends_with("target/debug"))?;
    let clone = debug.parent()?.parent()?;
    let manifest = std::fs::read_to_string(clone.join("Cargo.toml")).ok()?;
    if !manifest.lines().any(|l| l.trim() == "name = \"opentiger\"") {
        return None;
    }
    let here = std::env::current_dir().is_ok_and(|cwd| cwd == clone);
    let cd = if here {
        String::new()
    } else {
        format!("cd {} && ", clone.display())
    };
    Some(format!(
        "\nTo put this build on PATH (in ~/.cargo/bin, no second build):\n  {cd}{INSTALL_THIS_BUILD}\n"
    ))
}

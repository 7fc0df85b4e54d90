//! `cargo bench --bench sandbox`: what the sandbox of a run costs (issues 25 and 31).
//!
//! - Ending a run's processes (`reaper::sweep`): with nothing left behind (every run pays
//!   this), and with one process left in a session of its own.
//! - A whole `process::run` of `true`, for scale; and in each set of walls (issue 47): the
//!   network namespace and Landlock, with the view (mount and PID namespaces) added, with the
//!   socket filter instead.
//! - A `cargo test` check of a one-file crate in a fresh folder (as a check in a new worktree
//!   builds it), under Landlock, with the runner's `HOME` and with a private one (the
//!   toolchain named by `CARGO_HOME`/`RUSTUP_HOME`, as `runner::checks` does); skipped when
//!   cargo is not on `PATH`.
//!
//! Figures, not assertions; medians. `SANDBOX_BENCH_CARGO_RUNS` (default 5) sets how many
//! cargo builds each way.

use std::path::Path;
use std::time::{Duration, Instant};

use opentiger::process::{self, ProcessSpec};

fn main() {
    let subreaper = opentiger::reaper::become_subreaper();
    println!("child subreaper: {subreaper}");

    let idle: Vec<Duration> = (0..300)
        .map(|_| {
            let start = Instant::now();
            opentiger::reaper::sweep();
            start.elapsed()
        })
        .collect();
    println!(
        "sweep, nothing left behind:          {:>8.3} ms (median of {})",
        ms(median(idle.clone())),
        idle.len()
    );

    let with_orphan: Vec<Duration> = (0..20)
        .map(|_| {
            // A process in a new session, its parent gone: re-parented to us.
            let status = std::process::Command::new("sh")
                .args(["-c", "setsid sleep 60 </dev/null >/dev/null 2>&1 &"])
                .status()
                .expect("sh");
            assert!(status.success());
            while opentiger::reaper::children_of(std::process::id()).is_empty() {
                std::thread::sleep(Duration::from_millis(1));
            }
            let start = Instant::now();
            let killed = opentiger::reaper::sweep();
            let took = start.elapsed();
            assert_eq!(killed, 1);
            took
        })
        .collect();
    println!(
        "sweep, one orphan in its own session: {:>8.3} ms (median of {})",
        ms(median(with_orphan)),
        20
    );

    let dir = tempfile::tempdir().expect("temp");
    let runs: Vec<Duration> = (0..50)
        .map(|_| {
            let start = Instant::now();
            let out = process::run(&spec("true", &[], dir.path(), env(None), None)).expect("true");
            assert!(out.success());
            start.elapsed()
        })
        .collect();
    println!(
        "process::run(true), sweep included:  {:>8.3} ms (median of {})",
        ms(median(runs)),
        50
    );

    spawn_walls(dir.path());
    cargo_check();
}

/// A start of `true` in each set of walls (issue 47): the network namespace and Landlock (the
/// default before views), then with the view (mount and PID namespaces) added, then with the
/// socket filter instead of the view (the fallback).
fn spawn_walls(dir: &Path) {
    use opentiger::sandbox::{limits::Limits, view, Confinement};
    if let Err(why) = opentiger::sandbox::netns::available() {
        println!("spawn in namespaces: skipped ({why})");
        return;
    }
    let door = opentiger::sandbox::netns::Door {
        deliver: std::sync::Arc::new(drop),
    };
    let rules = || opentiger::sandbox::landlock::Rules::for_agent(&[dir.to_path_buf()]).ok();
    let view_spec = view::ViewSpec {
        paths: vec![(dir.to_path_buf(), view::Access::Write)],
        tmp_bytes: Some(1 << 30),
    };
    let cases = [
        (
            "netns + Landlock",
            Confinement::new(rules(), None, false, Limits::default()),
        ),
        (
            "netns + view + Landlock",
            Confinement::new(rules(), Some(view_spec), false, Limits::default()),
        ),
        (
            "netns + socket filter + Landlock",
            Confinement::new(rules(), None, true, Limits::default()),
        ),
    ];
    let n = 100;
    for (name, confine) in cases {
        let confine = std::sync::Arc::new(confine);
        let times: Vec<Duration> = (0..n)
            .map(|_| {
                let mut spec = spec("true", &[], dir, env(None), Some(confine.clone()));
                spec.network = Some(door.clone());
                let start = Instant::now();
                let out = process::run(&spec).expect("true");
                assert!(out.success(), "{name}: {}", out.output_tail);
                start.elapsed()
            })
            .collect();
        println!(
            "process::run(true), {name:<33} {:>8.3} ms (median of {n})",
            ms(median(times))
        );
    }
}

fn cargo_check() {
    let Some(_) = std::env::var("PATH").ok().and_then(|p| {
        p.split(':')
            .map(|d| Path::new(d).join("cargo"))
            .find(|c| c.is_file())
    }) else {
        println!("cargo test check: skipped (no cargo on PATH)");
        return;
    };
    let n: usize = std::env::var("SANDBOX_BENCH_CARGO_RUNS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let runner_home = std::env::var("HOME").expect("HOME");
    let mut figures = Vec::new();
    for private in [false, true] {
        let mut times = Vec::new();
        for _ in 0..n {
            let ws = tempfile::tempdir().expect("workspace");
            std::fs::write(
                ws.path().join("Cargo.toml"),
                "[package]\nname = \"small\"\nversion = \"0.1.0\"\nedition = \"2021\"\n",
            )
            .unwrap();
            std::fs::create_dir(ws.path().join("src")).unwrap();
            std::fs::write(
                ws.path().join("src/lib.rs"),
                "pub fn add(a: i32, b: i32) -> i32 { a + b }\n#[test]\nfn adds() { assert_eq!(add(1, 2), 3); }\n",
            )
            .unwrap();
            let scratch = tempfile::tempdir().expect("scratch");
            let start = Instant::now();
            let home = if private {
                let home = scratch.path().join("home");
                opentiger::sandbox::home::make(&home, None, &[]).expect("home");
                home
            } else {
                runner_home.clone().into()
            };
            let mut vars = env(Some(&home));
            vars.push(("TMPDIR".to_string(), scratch.path().display().to_string()));
            if private {
                vars.extend(opentiger::sandbox::home::toolchain_vars(
                    Some(Path::new(&runner_home)),
                    |k| std::env::var(k).ok(),
                ));
            }
            let rules = opentiger::sandbox::landlock::Rules::for_agent(&[
                ws.path().to_path_buf(),
                scratch.path().to_path_buf(),
                home.clone(),
            ])
            .ok();
            let ruleset = Some(std::sync::Arc::new(opentiger::sandbox::Confinement::new(
                rules,
                None,
                false,
                opentiger::sandbox::limits::Limits::default(),
            )));
            let out = process::run(&spec(
                "cargo",
                &["test", "--offline", "-q"],
                ws.path(),
                vars,
                ruleset,
            ))
            .expect("cargo");
            assert!(out.success(), "{}", out.output_tail);
            times.push(start.elapsed());
        }
        figures.push(median(times));
    }
    println!(
        "cargo test check (fresh crate, Landlock), runner HOME: {:>8.1} ms, private HOME: {:>8.1} ms (median of {n} each)",
        ms(figures[0]),
        ms(figures[1])
    );
}

fn env(home: Option<&Path>) -> Vec<(String, String)> {
    let mut vars = vec![(
        "PATH".to_string(),
        std::env::var("PATH").unwrap_or_default(),
    )];
    if let Some(home) = home {
        vars.push(("HOME".to_string(), home.display().to_string()));
    }
    vars
}

fn spec(
    program: &str,
    args: &[&str],
    cwd: &Path,
    env: Vec<(String, String)>,
    confine: Option<std::sync::Arc<opentiger::sandbox::Confinement>>,
) -> ProcessSpec {
    ProcessSpec {
        program: program.to_string(),
        args: args.iter().map(|a| a.to_string()).collect(),
        cwd: cwd.to_path_buf(),
        env,
        stdin: None,
        timeout: Duration::from_secs(300),
        tail_bytes: 4096,
        watch: None,
        group_record: None,
        confine,
        network: None,
        sentinel: None,
    }
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

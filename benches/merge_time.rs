//! `cargo bench --bench merge_time`: how many jobs (ticks) a merged task takes and how long it
//! waits from its label to its merge, in simulated minutes, for a repository on GitHub (the
//! stand-in of `tests/common/github`, scripted agents of `tests/common/scripted`): no CI; CI
//! required (its run takes `MERGE_BENCH_CI_MINUTES`, default 8); a chain of three dependent
//! tasks. Each with the review window of `merge.review_window_minutes` 0 and the default.
//!
//! The clock is simulated: the workflow ticks on its events — the label, CI's completion (a
//! `check_suite` event) — and on its hourly schedule (`17 * * * *`, the example workflow's);
//! a tick takes no time. Each scenario starts with the label at :00, :15, :30 and :45 and
//! prints the mean and the worst. Jobs count the ticks between the label and the last merge
//! that did something (a quiet scheduled tick would have run anyway).
//!
//! `MERGE_BENCH_VERBOSE=1` prints every tick's output; `MERGE_BENCH_ONLY=chain` runs the
//! scenarios whose name holds that text. `MERGE_BENCH_BIN=path/to/opentiger`
//! measures another build of opentiger (a build of the
//! code before issue 38, which has no rounds and no review window: its scenarios with a window
//! are skipped).

#[path = "../tests/common/mod.rs"]
mod common;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::process::Command;

use common::scripted;

/// 2026-11-21T12:00:00Z in minutes since the epoch.
const NOON: i64 = 29_921_040;

struct Scenario {
    name: &'static str,
    /// CI is required and takes this many minutes after each push.
    ci: Option<i64>,
    chain: bool,
    /// `merge.review_window_minutes`; `None`: not set (the default, or no window before it).
    window: Option<u32>,
}

fn rfc3339(minute: i64) -> String {
    let t = opentiger::time::Timestamp(minute * 60_000);
    t.to_string()
}

fn binary() -> (PathBuf, bool) {
    match std::env::var_os("MERGE_BENCH_BIN") {
        Some(path) => (PathBuf::from(path), false),
        None => (PathBuf::from(env!("CARGO_BIN_EXE_opentiger")), true),
    }
}

fn opentiger(s: &scripted::Setup, bin: &PathBuf, now: i64, args: &[&str]) -> String {
    let out = Command::new(bin)
        .arg("--repo")
        .arg(&s.clone)
        .args(["--now", &rfc3339(now)])
        .args(args)
        .env("GITHUB_TOKEN", s.server.token())
        .env("GITHUB_API_URL", s.server.base_url())
        .env("GITHUB_REPOSITORY", "acme/widgets")
        .env("PROMPTS", s.dir.path().join("prompts"))
        .env_remove("OPENTIGER_GITHUB_TOKEN")
        .env_remove("GITHUB_RUN_ID")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("run opentiger");
    assert!(
        out.status.success(),
        "opentiger {args:?} at {}: {}\n{}",
        rfc3339(now),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// One run of a scenario with the label at `label`: (jobs, minutes from label to last merge).
fn simulate(bin: &PathBuf, scenario: &Scenario, label: i64) -> (u32, i64) {
    let s = scripted::setup();
    let mut extra = String::new();
    if scenario.ci.is_some() || scenario.window.is_some() {
        extra.push_str("merge:\n");
        if scenario.ci.is_some() {
            extra.push_str("  required_checks: [test]\n");
        }
        if let Some(w) = scenario.window {
            extra.push_str(&format!("  review_window_minutes: {w}\n"));
        }
    }
    scripted::set_config(&s, &extra);
    let expected = if scenario.chain {
        let mut before: Option<String> = None;
        for name in ["a", "b", "c"] {
            // The scripted worker writes each file a `CREATE` line of its prompt names.
            let goal = format!("CREATE {name}.txt");
            let mut args = vec!["task", "add", "--title", name, "--goal", goal.as_str()];
            if let Some(dep) = &before {
                args.extend(["--depends-on", dep.as_str()]);
            }
            let id = opentiger(&s, bin, label, &args).trim().to_string();
            before = Some(id);
        }
        3
    } else {
        scripted::owners_issue(&s, "Greeting", "CREATE hello.txt");
        1
    };
    // Events: the label's tick, then every scheduled tick (:17), then CI completions.
    let mut events: BTreeSet<(i64, Option<String>)> = BTreeSet::new();
    events.insert((label, None));
    let first_hour = (label - NOON).div_euclid(60);
    for h in first_hour..first_hour + 24 {
        let at = NOON + h * 60 + 17;
        if at > label {
            events.insert((at, None));
        }
    }
    let mut ci_scheduled: BTreeSet<String> = BTreeSet::new();
    let mut jobs = 0;
    while let Some((now, ci_head)) = events.pop_first() {
        if let Some(head) = &ci_head {
            s.server
                .set_check_runs(head, &[("test", "completed", Some("success"))]);
        }
        let out = opentiger(&s, bin, now, &["tick"]);
        if std::env::var_os("MERGE_BENCH_VERBOSE").is_some() {
            eprintln!("── {} at {}\n{out}", scenario.name, rfc3339(now));
        }
        if !out.contains(": 0 decision(s), 0 run(s), 0 review(s)") {
            jobs += 1;
        }
        let pulls = s.server.pulls();
        if pulls.len() >= expected && pulls.iter().all(|p| p.merged) {
            return (jobs, now - label);
        }
        if let Some(minutes) = scenario.ci {
            for p in pulls.iter().filter(|p| !p.merged) {
                if ci_scheduled.insert(p.head_sha.clone()) {
                    events.insert((now + minutes, Some(p.head_sha.clone())));
                }
            }
        }
        assert!(
            now - label < 24 * 60,
            "{}: not merged within a day",
            scenario.name
        );
    }
    panic!("{}: ran out of events", scenario.name);
}

fn main() {
    let (bin, current) = binary();
    let ci_minutes: i64 = std::env::var("MERGE_BENCH_CI_MINUTES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(8);
    let scenarios = [
        ("no CI", None, false),
        ("CI required", Some(ci_minutes), false),
        ("chain of three", None, true),
    ];
    println!("opentiger: {}", bin.display());
    println!(
        "{:<16} {:<14} {:>10} {:>10} {:>16} {:>16}",
        "scenario", "review window", "jobs mean", "jobs max", "minutes mean", "minutes max"
    );
    let only = std::env::var("MERGE_BENCH_ONLY").unwrap_or_default();
    for (name, ci, chain) in scenarios
        .into_iter()
        .filter(|s| s.0.contains(only.as_str()))
    {
        let windows: &[Option<u32>] = if current { &[Some(0), None] } else { &[None] };
        for window in windows {
            let scenario = Scenario {
                name,
                ci,
                chain,
                window: *window,
            };
            let results: Vec<(u32, i64)> = [0, 15, 30, 45]
                .iter()
                .map(|m| simulate(&bin, &scenario, NOON + m))
                .collect();
            let n = results.len() as f64;
            let jobs_mean = results.iter().map(|r| f64::from(r.0)).sum::<f64>() / n;
            let minutes_mean = results.iter().map(|r| r.1 as f64).sum::<f64>() / n;
            let jobs_max = results.iter().map(|r| r.0).max().unwrap_or(0);
            let minutes_max = results.iter().map(|r| r.1).max().unwrap_or(0);
            let label = match window {
                Some(w) => format!("{w} min"),
                None if current => "default".to_string(),
                None => "(none)".to_string(),
            };
            println!(
                "{name:<16} {label:<14} {jobs_mean:>10.2} {jobs_max:>10} {minutes_mean:>16.1} {minutes_max:>16}"
            );
        }
    }
}

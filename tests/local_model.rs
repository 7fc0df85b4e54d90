//! Opt-in: docs/agents.md's local-model recipe, run as written, gets a task done with each of
//! aider, opencode and codex against a stand-in local server on 127.0.0.1:8080 that serves
//! OpenAI chat completions only (`common::model_server`, `ModelServer::local_at`).
//!
//! ```sh
//! OPENTIGER_REAL_CLI_TESTS=1 cargo test --test suite local_model:: -- --ignored --nocapture
//! ```
//!
//! The real CLIs come from `scripts/real-clis.sh` (as `tests/real_agent_sessions.rs`). For each
//! CLI the block runs in a fresh `my-project` with `AGENT` set to it: the configuration it
//! writes, `doctor --online`, the task, one tick, `status`. The task must be merged into `main`
//! with the stand-in's file; the stand-in must have seen the key the configuration names (none)
//! and never a placeholder; what opentiger's proxy metered must be the stand-in's counts, at
//! the configured price of 0; codex's Responses calls reach it as chat completions. What each
//! CLI was refused is printed (its own traffic, refused without advice). Not run by `cargo test`
//! or CI: it needs the real CLIs and port 8080. With `OPENTIGER_REAL_CLI_RECORD=<dir>` the
//! requests the stand-in saw are written to `<dir>/<cli>.requests.jsonl`.

use crate::common;

use common::local_model::{metered, run_recipe, ADDR, FILE, MODEL};
use common::model_server::{ModelServer, CONTENT, INPUT_TOKENS, OUTPUT_TOKENS};
use common::{git, real_clis};

#[test]
#[ignore = "runs the real agent CLIs (scripts/real-clis.sh) against a stand-in on 127.0.0.1:8080; set OPENTIGER_REAL_CLI_TESTS=1 and pass --ignored"]
fn the_local_model_recipe_gets_a_task_done_with_aider_opencode_and_codex() {
    let Some(bins) = real_clis::install() else {
        return;
    };
    let server = ModelServer::local_at(ADDR, MODEL, FILE)
        .unwrap_or_else(|e| panic!("the stand-in needs {ADDR}, as the recipe says: {e}"));
    for agent in ["aider", "opencode", "codex"] {
        let before = server.seen().len();
        let dir = tempfile::tempdir().unwrap();
        let started = std::time::Instant::now();
        let (project, out) = run_recipe(dir.path(), agent, &bins);
        let wall = started.elapsed();
        let seen: Vec<_> = server.seen().into_iter().skip(before).collect();
        if let Ok(dir) = std::env::var("OPENTIGER_REAL_CLI_RECORD") {
            let bodies: Vec<String> = seen.iter().map(|s| s.body.to_string()).collect();
            let _ = std::fs::write(
                std::path::Path::new(&dir).join(format!("{agent}.requests.jsonl")),
                bodies.join("\n"),
            );
        }
        let ((input, output, answers, usd), rows) = metered(&project);
        let chats = seen
            .iter()
            .filter(|s| s.path.ends_with("/chat/completions"))
            .count() as u64;
        let said = format!(
            "{agent}: exit {}\n{}\n{}\nrequests: {:?}\n{}",
            out.code,
            out.stdout,
            out.stderr,
            seen.iter().map(|s| &s.path).collect::<Vec<_>>(),
            rows.join("\n")
        );
        eprintln!(
            "=== {agent}: {:.1} s; {chats} chat completion(s); metered {input} in / {output} out over {answers} answer(s), ${usd}\n{said}",
            wall.as_secs_f64()
        );
        assert_eq!(out.code, 0, "{said}");
        assert!(
            out.stdout.trim_end().ends_with("Add sub"),
            "the task is merged: {said}"
        );
        assert_eq!(
            git(&project, &["show", &format!("main:{FILE}")]),
            CONTENT.trim_end(),
            "{said}"
        );
        assert!(
            out.stdout.contains(&format!("{MODEL} listed")),
            "doctor --online: {said}"
        );
        // The stand-in serves chat completions only: every model call reached it as one (codex's
        // Responses calls translated by the proxy); no key is configured, and none came, nor a
        // placeholder.
        assert!(chats >= 2, "the worker's and the judge's calls: {said}");
        for s in &seen {
            assert_eq!(s.key, None, "{}: {said}", s.head);
            assert!(!s.head.contains("opentiger-placeholder"), "{}", s.head);
        }
        // The recipe's `max_output_tokens: 4096` on every call (opencode asks for 32,000).
        for s in seen
            .iter()
            .filter(|s| s.path.ends_with("/chat/completions"))
        {
            let cap = s.body["max_tokens"].as_u64();
            assert!(cap.is_some_and(|n| n <= 4096), "{cap:?}: {said}");
        }
        assert_eq!(
            (input, output, answers),
            (chats * INPUT_TOKENS, chats * OUTPUT_TOKENS, chats),
            "what the proxy metered is what the stand-in counted: {said}"
        );
        assert_eq!(usd, 0.0, "a configured price of 0: {said}");
    }
}

//! Configured providers end to end: whole ticks whose worker picks a model API declared under
//! `providers:`, played by the calling stand-in CLI (`tests/fixtures/agents/calling-cli.py`,
//! linked under a CLI's name), which finds the provider the way the real CLI does and calls it,
//! against a stand-in model API on loopback (`common::model_server`): chat completions only for
//! the OpenAI-shaped ones, as most local servers serve.
//!
//! The stand-in receives the key the configuration names (or none) and never a placeholder;
//! codex's Responses calls reach a chat-only endpoint as chat completions; the tokens metered
//! are the stand-in's; a configured price records its cost, a price of 0 records $0.00, no price
//! the dearest built-in one; a run past its budget has its next call refused; a 429 parks that
//! provider's executor; a key that is not set stops the tick and `doctor` names its variable.

use crate::common;

use std::fs;
use std::path::PathBuf;

use common::model_server::{ModelServer, Scenario, INPUT_TOKENS, OUTPUT_TOKENS};
use common::{git, minute, GitRepo, Setup};

/// The runner's key for the configured provider.
const LOCAL_KEY: &str = "sk-local-REALkeyOfTheRunner0123456789abcdef";
const MODEL: &str = "local-model";

/// A repository whose worker is the calling stand-in under `program`'s name, on the provider
/// `local` (`provider`: the lines under it, its base URL filled in).
struct Case {
    g: GitRepo,
    server: ModelServer,
    /// Where the stand-in records its argv, env and calls.
    record: PathBuf,
}

impl Case {
    fn new(
        executor: &str,
        program: &str,
        server: ModelServer,
        provider: &str,
        extra: &str,
    ) -> Case {
        let g = GitRepo::with(Setup::default());
        let bin = g.tools_path().join("bin");
        let record = g.tools_path().join("record");
        fs::create_dir_all(&bin).unwrap();
        fs::create_dir_all(&record).unwrap();
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/agents/calling-cli.py");
        std::os::unix::fs::symlink(script, bin.join(program)).unwrap();
        let section = format!(
            "  worker:\n    executor: {executor}\n    command: [\"{}\"]\n    provider: local\n    model: {MODEL}\n    env_passthrough: [FAKE_CLI_DIR, CALLS, CALLING_CLI_MODEL]\n",
            bin.join(program).display()
        );
        let path = g.path().join(".opentiger.yml");
        let base = match provider.contains("api: anthropic") {
            true => server.base_url(),
            false => format!("{}/v1", server.base_url()),
        };
        let config = fs::read_to_string(&path)
            .unwrap()
            .replace("  worker:\n", &section)
            + &format!("providers:\n  local:\n    base_url: {base}\n{provider}{extra}");
        fs::write(path, config).unwrap();
        Case { g, server, record }
    }

    /// A tick at `minute` with the runner's key for the provider (unless `key` is false).
    fn tick(&self, at: u32, calls: &str, key: bool) -> common::Out {
        let record = self.record.display().to_string();
        let mut env = vec![
            ("FAKE_CLI_DIR", record.as_str()),
            ("CALLS", calls),
            ("CALLING_CLI_MODEL", MODEL),
            // Another provider's key: never the one a configured provider gets.
            ("OPENAI_API_KEY", "sk-proj-NOTtheLocalKey0123456789"),
        ];
        if key {
            env.push(("LOCAL_MODEL_KEY", LOCAL_KEY));
        }
        self.g.tick_env(&minute(at), &env)
    }

    fn add(&self) -> String {
        self.g
            .repo
            .add(&["--title", "Reply", "--goal", "write reply.txt"])
    }

    fn show(&self, id: &str) -> serde_json::Value {
        self.g.repo.run(&["task", "show", id, "--json"]).ok().json()
    }

    fn recorded(&self, name: &str) -> String {
        fs::read_to_string(self.record.join(name)).unwrap_or_default()
    }
}

const CHAT: &str = "    api: openai-chat\n    key: LOCAL_MODEL_KEY\n";

/// `local-model` at $100 per million input tokens and $1,000 per million output: 1,200 in and
/// 80 out is $0.20 a call.
const PRICED: &str =
    "    prices:\n      local-model: { input_per_mtok: 100, output_per_mtok: 1000 }\n";

/// Each CLI on a provider it speaks: claude-code on an Anthropic-shaped endpoint, codex, opencode
/// and aider on a chat-completions-only one (codex's Responses calls translated by the proxy).
#[test]
fn every_cli_reaches_a_configured_provider_with_its_key_and_is_metered_at_its_price() {
    let cases = [
        ("claude-code", "claude", "anthropic", "/v1/messages"),
        ("codex", "codex", "openai-chat", "/v1/chat/completions"),
        (
            "opencode",
            "opencode",
            "openai-chat",
            "/v1/chat/completions",
        ),
        ("aider", "aider", "openai-chat", "/v1/chat/completions"),
    ];
    for (executor, program, api, path) in cases {
        let server = match api {
            "anthropic" => ModelServer::start(Scenario::Success),
            _ => ModelServer::chat_only(Scenario::Success, MODEL),
        };
        let provider = format!("    api: {api}\n    key: LOCAL_MODEL_KEY\n{PRICED}");
        let case = Case::new(executor, program, server, &provider, "");
        let id = case.add();
        let out = case.tick(0, "2", true);
        let said = format!("{executor}: {}\n{}", out.stdout, out.stderr);
        assert_eq!(out.code, 0, "{said}");
        let seen = case.server.seen();
        assert_eq!(seen.len(), 2, "{said}\n{seen:?}");
        for s in &seen {
            assert_eq!(s.path, path, "{said}");
            assert_eq!(s.key.as_deref(), Some(LOCAL_KEY), "{}: {said}", s.head);
            assert!(!s.head.contains("opentiger-placeholder"), "{}", s.head);
            assert_eq!(s.body["model"], MODEL, "{said}");
        }
        // The agent held a placeholder, never the key.
        let env = case.recorded("env");
        assert!(env.contains("opentiger-placeholder-"), "{executor}: {env}");
        for place in [env, case.recorded("argv")] {
            assert!(
                !place.contains(LOCAL_KEY),
                "{executor}: the agent held the key"
            );
        }
        let everything = git(case.g.path(), &["log", "--all", "-p"]);
        assert!(everything.contains("answered: True"), "{said}");
        assert!(!everything.contains(LOCAL_KEY), "{executor}");
        let run = &case.show(&id)["runs"][0];
        assert_eq!(run["status"], "success", "{executor}: {run}");
        assert_eq!(
            run["executor"],
            format!("{executor}:local/{MODEL}"),
            "{run}"
        );
        let tokens = &run["metered"]["models"][MODEL];
        assert_eq!(
            (tokens["input"].as_u64(), tokens["output"].as_u64()),
            (Some(2 * INPUT_TOKENS), Some(2 * OUTPUT_TOKENS)),
            "{executor}: {run}"
        );
        let usd = run["metered"]["usd"].as_f64().unwrap_or_default();
        assert!((usd - 0.40).abs() < 1e-9, "{executor}: {run}");
        assert!(
            (run["cost_usd"].as_f64().unwrap_or_default() - 0.40).abs() < 1e-9,
            "{run}"
        );
    }
}

/// A price of 0 records $0.00 with the tokens counted; a model priced nowhere is metered at
/// the dearest built-in price and said to have no price known.
#[test]
fn a_price_of_zero_is_free_and_no_price_is_the_dearest() {
    let free = format!(
        "{CHAT}    prices:\n      local-model: {{ input_per_mtok: 0, output_per_mtok: 0 }}\n"
    );
    for (prices, usd, unpriced) in [(free.as_str(), 0.0, false), (CHAT, 0.048, true)] {
        let server = ModelServer::chat_only(Scenario::Success, MODEL);
        let case = Case::new("aider", "aider", server, prices, "");
        let id = case.add();
        let out = case.tick(0, "2", true);
        let run = &case.show(&id)["runs"][0];
        assert_eq!(run["status"], "success", "{}\n{run}", out.stdout);
        assert_eq!(run["metered"]["models"][MODEL]["input"], 2 * INPUT_TOKENS);
        // 2 × (1,200 × $15 + 80 × $75) per million.
        let metered = run["metered"]["usd"].as_f64().unwrap_or(-1.0);
        assert!((metered - usd).abs() < 1e-9, "{run}");
        assert_eq!(
            run["metered"]["unpriced"] == serde_json::json!([MODEL]),
            unpriced,
            "{run}"
        );
        let shown = case.g.repo.run(&["task", "show", &id]).ok().stdout;
        assert_eq!(
            shown.contains("no price known for local-model, priced at the highest built-in price"),
            unpriced,
            "{shown}"
        );
    }
}

/// A provider that takes no key gets none: the placeholder is taken out and nothing put in.
#[test]
fn a_provider_without_a_key_is_sent_none() {
    let server = ModelServer::chat_only(Scenario::Success, MODEL);
    let case = Case::new("codex", "codex", server, "    api: openai-chat\n", "");
    let id = case.add();
    case.tick(0, "1", false);
    let seen = case.server.seen();
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert_eq!(seen[0].key, None, "{}", seen[0].head);
    assert!(!seen[0].head.to_ascii_lowercase().contains("authorization"));
    assert_eq!(case.show(&id)["runs"][0]["status"], "success");
}

/// `budget.per_task_usd: 0.5` at $0.42 a call (1,200 input tokens at $350 per million): the
/// second call crosses it, the third is refused by the proxy and never reaches the endpoint.
#[test]
fn a_run_past_its_budget_on_a_configured_provider_has_its_next_call_refused() {
    let server = ModelServer::chat_only(Scenario::Success, MODEL);
    let prices = format!(
        "{CHAT}    prices:\n      local-model: {{ input_per_mtok: 350, output_per_mtok: 0 }}\n"
    );
    let case = Case::new(
        "aider",
        "aider",
        server,
        &prices,
        "budget:\n  per_task_usd: 0.5\n",
    );
    let id = case.add();
    case.tick(0, "3", true);
    assert_eq!(case.server.seen().len(), 2, "the refused call never left");
    let run = &case.show(&id)["runs"][0];
    assert_eq!(run["failure_code"], "budget_exceeded", "{run}");
}

/// A 429 from a configured provider is a quota wait with its `retry-after`, and what waits is
/// that provider's executor (`aider:local/local-model`).
#[test]
fn a_429_from_a_configured_provider_parks_its_executor() {
    let server = ModelServer::chat_only(Scenario::RateLimited, MODEL);
    let case = Case::new("aider", "aider", server, CHAT, "");
    let id = case.add();
    let out = case.tick(0, "1", true);
    let shown = case.show(&id);
    let run = &shown["runs"][0];
    assert_eq!(
        run["failure_code"], "quota_failure",
        "{}\n{shown}",
        out.stdout
    );
    assert!(
        run["error"]
            .as_str()
            .unwrap_or_default()
            .contains("HTTP 429"),
        "{run}"
    );
    let status = case.g.repo.run(&["status", "--json"]).ok().json();
    let parked = status["parked_executors"].to_string();
    assert!(parked.contains(&format!("aider:local/{MODEL}")), "{status}");
}

/// A provider's key that is not set: the tick starts no agent and exits 2 naming the
/// provider's variable and line; `doctor` names the same, never another provider's key.
#[test]
fn a_provider_key_that_is_not_set_is_named_by_the_tick_and_doctor() {
    let server = ModelServer::chat_only(Scenario::Success, MODEL);
    let case = Case::new("aider", "aider", server, CHAT, "");
    case.add();
    let out = case.tick(0, "1", false);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    let said = format!("{}{}", out.stdout, out.stderr);
    assert!(
        said.contains("agents.worker.provider is `local`, whose key LOCAL_MODEL_KEY is not set for the runner (`providers.local.key: LOCAL_MODEL_KEY`)"),
        "{said}"
    );
    assert!(said.contains("fix: set LOCAL_MODEL_KEY"), "{said}");
    assert!(case.server.seen().is_empty());
    let doctor = case.g.repo.run_env(&minute(1), &["doctor"], &[]);
    assert_eq!(doctor.code, 1, "{}", doctor.stdout);
    let line = doctor
        .stdout
        .lines()
        .skip_while(|l| !l.contains("providers.local:"))
        .take(2)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        line.starts_with("fail  providers") && line.contains("its key LOCAL_MODEL_KEY is not set"),
        "{}",
        doctor.stdout
    );
    assert!(
        line.contains("fix: export LOCAL_MODEL_KEY=... for the runner")
            && line.contains("`providers.local.key: LOCAL_MODEL_KEY` names it"),
        "{line}"
    );
    assert!(!line.contains("ANTHROPIC_API_KEY"), "{line}");
}

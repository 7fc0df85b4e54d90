//! Agent CLIs as they really behave (issue 18), against the fake CLI printing recorded outputs:
//! key and login errors of every CLI are configuration errors; codex gets its key and base URL
//! the way `codex exec` reads them; an opencode that keeps calling tools is stopped at its turn
//! cap, a codex at the cap opentiger keeps for it, and a codex without a network in its reconnect
//! loop, all long before their timeout; an opencode with no model is not started.

use crate::common;

use std::fs;
use std::time::Duration;

use opentiger::config::AgentRole;
use opentiger::executor::{
    aider, claude_code, codex, opencode, AgentExit, AgentFailureKind, Executor, ExecutorError,
};
use opentiger::model::Role;

use common::fake_cli::{config, FakeRun};

const WORKER: AgentRole = AgentRole::Task(Role::Worker);

/// Issue 18: every CLI's "no key, bad key, not logged in" output, exit 0 or not, is a
/// configuration error, which the runner records as `agent_config` (never retried).
#[test]
fn every_clis_key_errors_are_configuration_errors() {
    let cases: [(&str, &str, i32, &dyn Executor); 4] = [
        (
            "claude",
            "claude-code/not_logged_in.json",
            1,
            &claude_code::ClaudeCode::new(config(&claude_code::CLI, WORKER, None)),
        ),
        (
            "codex",
            "codex/turn_failed.jsonl",
            1,
            &codex::Codex::new(config(&codex::CLI, WORKER, None)),
        ),
        (
            "opencode",
            "opencode/provider_error.jsonl",
            0,
            &opencode::Opencode::new(config(
                &opencode::CLI,
                WORKER,
                Some("anthropic/claude-sonnet-4-5"),
            )),
        ),
        // aider exits 0 after it.
        (
            "aider",
            "aider/missing_key.txt",
            0,
            &aider::Aider::new(config(&aider::CLI, WORKER, None)),
        ),
    ];
    for (program, fixture, code, exec) in cases {
        let run = FakeRun::new(program, fixture, code);
        let r = run.run(exec, WORKER).unwrap();
        assert_eq!(r.exit, AgentExit::Failed(Some(code)), "{fixture}");
        let f = r.failure.expect(fixture);
        assert_eq!(f.kind, AgentFailureKind::Config, "{fixture}: {}", f.message);
        assert!(
            r.output_tail
                .contains("[opentiger] the agent CLI cannot reach its model as configured"),
            "{fixture}: {}",
            r.output_tail
        );
    }
}

/// Issue 18: `codex exec` reads `CODEX_API_KEY` and `-c openai_base_url`, not `OPENAI_API_KEY`
/// and `OPENAI_BASE_URL`. Issue 37: what it reads there is the placeholder of the key the
/// runner holds, and its route on opentiger's proxy; issue 46: without its web search.
#[test]
fn codex_gets_its_key_and_base_url_the_way_it_reads_them() {
    let run = FakeRun::new("codex", "codex/success.jsonl", 0);
    let exec = codex::Codex::new(config(&codex::CLI, WORKER, None));
    let passed = [("OPENAI_API_KEY", "sk-openai-test")];
    let r = run.run_with(&exec, WORKER, &passed).unwrap();
    assert_eq!(r.exit, AgentExit::Finished);
    let env = run.env();
    let placeholder = env["OPENAI_API_KEY"].clone();
    assert!(
        placeholder.starts_with("opentiger-placeholder-"),
        "{placeholder}"
    );
    assert_eq!(env.get("CODEX_API_KEY"), Some(&placeholder));
    // Issue 46: codex's own web search, a tool the provider runs, is turned off behind a door
    // that does not allow it (`sandbox.network.provider_tools`).
    // Issue 50: its own traffic (plugin sync, analytics, update check) is turned off first.
    let quiet = codex::QUIET.len();
    assert_eq!(run.argv()[..quiet], *codex::QUIET);
    assert_eq!(
        run.argv()[quiet..quiet + 5],
        [
            "-c",
            "openai_base_url=\"http://127.0.0.1:3128/openai/v1\"",
            "-c",
            "web_search=\"disabled\"",
            "exec"
        ]
    );
    let seen = fs::read_to_string(run.record.join("env")).unwrap() + &run.argv().join(" ");
    assert!(!seen.contains("sk-openai-test"), "{seen}");
}

/// The first lines of a fixture up to and including line `n` (1-based).
fn head(fixture: &str, n: usize) -> String {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agents")
        .join(fixture);
    let text = fs::read_to_string(path).unwrap();
    text.lines().take(n).map(|l| format!("{l}\n")).collect()
}

/// A fake CLI that prints `first`, then `repeat` forever; a run with a 60-second timeout.
fn endless(program: &str, first: &str, repeat: &str) -> FakeRun {
    let run = FakeRun::new(program, "opencode/success.jsonl", 0);
    fs::write(run.record.join("stdout"), first).unwrap();
    fs::write(run.record.join("repeat"), repeat).unwrap();
    run
}

/// Issue 18 item 4: `steps` is only a prompt to the model; the runner counts the steps and stops
/// opencode at the cap, recorded as a turn-cap failure, not a timeout.
#[test]
fn opencode_is_stopped_at_its_turn_cap() {
    // One step of the recorded tool loop: start, tool call, finish with `tool-calls`.
    let step = head("opencode/tool_loop.jsonl", 3);
    let run = endless("opencode", "", &step);
    let mut c = config(&opencode::CLI, WORKER, Some("anthropic/claude-sonnet-4-5"));
    c.max_turns = 5;
    let r = run
        .run_timeout(&opencode::Opencode::new(c), WORKER, Duration::from_secs(60))
        .unwrap();
    assert_ne!(r.exit, AgentExit::TimedOut);
    let f = r.failure.expect("a failure");
    assert_eq!(f.kind, AgentFailureKind::MaxTurns, "{}", f.message);
    assert!(
        f.message
            .contains("reached 5 steps (cap 5) and was stopped"),
        "{}",
        f.message
    );
    assert!(r.cost_usd > 0.0, "the steps' spend is kept");
}

/// Issue 18 item 6: codex with no network prints "Reconnecting…" until killed; it is stopped
/// after a bounded number of reconnects, as a transient failure naming the reason.
#[test]
fn codex_is_stopped_in_its_reconnect_loop() {
    let first = head("codex/network_retries.jsonl", 2);
    let reconnect = "{\"type\":\"error\",\"message\":\"Reconnecting... waiting for network (Connection failed: error sending request)\"}\n";
    let run = endless("codex", &first, reconnect);
    let exec = codex::Codex::new(config(&codex::CLI, WORKER, None));
    let r = run
        .run_timeout(&exec, WORKER, Duration::from_secs(60))
        .unwrap();
    assert_ne!(r.exit, AgentExit::TimedOut);
    let f = r.failure.expect("a failure");
    assert_eq!(f.kind, AgentFailureKind::Error);
    assert!(
        f.message.starts_with(&format!(
            "codex could not reach its provider: {} reconnects in ",
            codex::MAX_RECONNECTS
        )),
        "{}",
        f.message
    );
    let class = opentiger::engine::classify::classify(&f.message, None);
    assert_eq!(class.reason, "transient_or_flaky_failure");
}

/// codex has no turn cap of its own: the runner counts the tool calls it reports and stops it as
/// it begins the one past `max_turns`, a turn-cap failure, not a timeout. The real codex's tool
/// loop as recorded (eight commands), then it goes on thinking forever.
#[test]
fn codex_is_stopped_at_its_turn_cap() {
    let first = head("codex/tool_loop.jsonl", 24);
    let thinking =
        "{\"type\":\"item.completed\",\"item\":{\"type\":\"reasoning\",\"text\":\"more\"}}\n";
    let run = endless("codex", &first, thinking);
    let mut c = config(&codex::CLI, WORKER, None);
    c.max_turns = 5;
    let r = run
        .run_timeout(&codex::Codex::new(c), WORKER, Duration::from_secs(60))
        .unwrap();
    assert_ne!(r.exit, AgentExit::TimedOut);
    let f = r.failure.expect("a failure");
    assert_eq!(f.kind, AgentFailureKind::MaxTurns, "{}", f.message);
    assert!(
        f.message.starts_with("codex began tool call 6 (cap 5"),
        "{}",
        f.message
    );
    // The twin: within the cap the same output only ever thinks, and the timeout ends it.
    let run = endless("codex", &first, thinking);
    let mut c = config(&codex::CLI, WORKER, None);
    c.max_turns = 8;
    let r = run
        .run_timeout(&codex::Codex::new(c), WORKER, Duration::from_secs(2))
        .unwrap();
    assert_eq!(r.exit, AgentExit::TimedOut);
}

/// Issue 18 item 4: with no model, opencode would quietly use its own hosted provider.
#[test]
fn opencode_without_a_model_is_not_started() {
    let repo = tempfile::tempdir().unwrap();
    let yaml = "agents:\n  worker:\n    executor: opencode\n    command: [\"/bin/sh\"]\n";
    let config = opentiger::config::load_str(yaml, ".opentiger.yml").unwrap();
    let agent = config.agents.effective(WORKER);
    match opentiger::executor::build(&agent, WORKER, repo.path()) {
        Err(ExecutorError::Misconfigured(text)) => {
            assert!(text.contains("no model is set"), "{text}");
            assert!(text.contains("fix: set `agents.worker.model`"), "{text}");
        }
        Err(other) => panic!("{other}"),
        Ok(_) => panic!("started without a model"),
    }
}

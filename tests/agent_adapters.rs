//! The CLI adapters end to end against a fake CLI (`tests/fixtures/agents/fake-cli.sh`, linked
//! under the CLI's name into a folder first on the agent's PATH): the argv and stdin each adapter
//! gives its CLI, the environment it sees (the runner's filter plus the adapter's own settings,
//! never a forge token), and the recorded output read back into an `AgentResult`. The last tests
//! run whole ticks of the real binary with a fake `claude`, to see a CLI's report reach the task.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use opentiger::config::{AgentRole, Pricing};
use opentiger::executor::{
    aider, claude_code, codex, opencode, AgentExit, AgentFailureKind, ExecutorError,
};
use opentiger::model::Role;

use common::fake_cli::{config, read, FakeRun, PROMPT};
use common::{minute, GitRepo, Setup};

const WORKER: AgentRole = AgentRole::Task(Role::Worker);
/// The key a whole tick gives a fake `claude` (it is not started without one).
const KEY: &[(&str, &str)] = &[("ANTHROPIC_API_KEY", "sk-ant-test-key")];

/// What every adapter's CLI must see and must not see: a placeholder for the model key the
/// runner holds, and its base URL on opentiger's proxy (issue 37), never the key.
fn assert_env(run: &FakeRun, own: &[(&str, &str)]) {
    let env = run.env();
    assert!(
        env.get("ANTHROPIC_API_KEY")
            .is_some_and(|k| k.starts_with("opentiger-placeholder-")),
        "{env:?}"
    );
    assert_eq!(
        env.get("ANTHROPIC_BASE_URL").map(String::as_str),
        Some("http://127.0.0.1:3128/anthropic")
    );
    assert!(!read(&run.record.join("env")).contains("sk-ant-test-key"));
    assert!(!read(&run.record.join("argv")).contains("sk-ant-test-key"));
    assert_eq!(
        env.get("OPENTIGER_ROLE").map(String::as_str),
        Some("worker")
    );
    assert_eq!(
        env.get("OPENTIGER_RESULT_FILE"),
        Some(&run.scratch("result.json"))
    );
    assert_eq!(
        env.get("OPENTIGER_PROMPT_FILE"),
        Some(&run.scratch("prompt.md"))
    );
    for (k, v) in own {
        assert_eq!(env.get(*k).map(String::as_str), Some(*v), "{k}");
    }
    for leaked in ["GITHUB_TOKEN", "UNLISTED_SECRET"] {
        assert!(!env.contains_key(leaked), "{leaked} reached the agent");
    }
    assert!(!read(&run.record.join("env")).contains("ghp_forge_token"));
}

#[test]
fn claude_code_worker_runs_and_its_result_file_wins() {
    let run = FakeRun::new("claude", "claude-code/success.json", 0)
        .with_result_file(r#"{"summary": "sub() added, with a test"}"#);
    let exec = claude_code::ClaudeCode::new(config(&claude_code::CLI, WORKER, Some("sonnet")));
    let r = run.run(&exec, WORKER).unwrap();
    let scratch = run.scratch.display().to_string();
    assert_eq!(
        run.argv(),
        [
            "-p",
            "--output-format",
            "stream-json",
            "--verbose",
            "--max-turns",
            "100",
            "--model",
            "sonnet",
            "--permission-mode",
            "acceptEdits",
            "--allowedTools",
            "Bash,Read,Edit,Write,Glob,Grep",
            "--add-dir",
            &scratch,
        ]
    );
    assert_eq!(run.stdin(), PROMPT);
    assert_env(
        &run,
        &[
            ("DISABLE_AUTOUPDATER", "1"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
        ],
    );
    assert_eq!(r.exit, AgentExit::Finished);
    assert_eq!(r.failure, None);
    assert_eq!(r.summary.as_deref(), Some("sub() added, with a test"));
    assert_eq!(
        (r.cost_usd, r.input_tokens, r.output_tokens),
        (0.0216, 3000, 840)
    );
    assert_eq!(
        r.session_id.as_deref(),
        Some("21e0e2e9-dbe0-4ef8-879a-b5766b11ab2f")
    );
}

#[test]
fn claude_code_judge_is_read_only_and_its_verdict_comes_from_the_reply() {
    let run = FakeRun::new("claude", "claude-code/judge_verdict.json", 0);
    let exec = claude_code::ClaudeCode::new(config(&claude_code::CLI, AgentRole::Judge, None));
    let r = run.run(&exec, AgentRole::Judge).unwrap();
    let argv = run.argv().join(" ");
    assert!(
        argv.contains("--permission-mode plan --disallowedTools Bash,Edit,Write,NotebookEdit"),
        "{argv}"
    );
    assert!(!argv.contains("--add-dir"), "{argv}");
    assert!(run.stdin().starts_with(PROMPT) && run.stdin().contains("read-only"));
    assert_eq!(r.exit, AgentExit::Finished);
    let verdict = r.result.expect("the verdict JSON");
    assert_eq!(verdict["verdict"], "approve");
    assert_eq!(r.summary.as_deref(), Some("Adds sub() with a unit test."));
}

#[test]
fn claude_code_errors_reported_with_any_exit_code_are_failures() {
    let cases = [
        ("claude-code/rate_limited_429.json", 1, "quota"),
        ("claude-code/max_turns.json", 1, "turns"),
        ("claude-code/not_logged_in.json", 0, "config"),
    ];
    for (fixture, code, kind) in cases {
        let run = FakeRun::new("claude", fixture, code);
        let exec = claude_code::ClaudeCode::new(config(&claude_code::CLI, WORKER, None));
        let r = run.run(&exec, WORKER).unwrap();
        assert_eq!(r.exit, AgentExit::Failed(Some(code)), "{fixture}");
        let got = match r.failure.map(|f| f.kind) {
            Some(AgentFailureKind::Quota { .. }) => "quota",
            Some(AgentFailureKind::MaxTurns) => "turns",
            Some(AgentFailureKind::Error) => "error",
            Some(AgentFailureKind::Config) => "config",
            other => panic!("{fixture}: {other:?}"),
        };
        assert_eq!(got, kind, "{fixture}");
    }
}

#[test]
fn codex_worker_runs_and_tokens_are_priced() {
    let run = FakeRun::new("codex", "codex/success.jsonl", 0);
    let mut c = config(&codex::CLI, WORKER, Some("gpt-5-codex"));
    c.pricing = Some(Pricing {
        input_per_mtok: 1.25,
        output_per_mtok: 10.0,
        cached_input_per_mtok: Some(0.125),
    });
    let r = run.run(&codex::Codex::new(c), WORKER).unwrap();
    let last = run.scratch("last-message.txt");
    assert_eq!(
        run.argv(),
        [
            "-c",
            "features.plugins=false",
            "-c",
            "analytics.enabled=false",
            "-c",
            "check_for_update_on_startup=false",
            "exec",
            "--json",
            "--color",
            "never",
            "--skip-git-repo-check",
            "--sandbox",
            // Issue 39: bubblewrap cannot start inside Landlock; opentiger's sandbox holds.
            "danger-full-access",
            "--model",
            "gpt-5-codex",
            "--output-last-message",
            &last,
            "-",
        ]
    );
    assert_eq!(run.stdin(), PROMPT);
    assert_env(&run, &[]);
    assert_eq!((r.exit, r.failure), (AgentExit::Finished, None));
    assert_eq!(
        r.summary.as_deref(),
        Some("Added `sub` to src/ops.rs with a unit test; `cargo test` passes.")
    );
    let expected = (315.0 * 1.25 + 24448.0 * 0.125 + 122.0 * 10.0) / 1e6;
    assert!((r.cost_usd - expected).abs() < 1e-12, "{}", r.cost_usd);
    assert_eq!((r.input_tokens, r.output_tokens), (24763, 122));
}

#[test]
fn codex_usage_limit_is_a_quota_failure() {
    let run = FakeRun::new("codex", "codex/usage_limit.jsonl", 1);
    let r = run
        .run(
            &codex::Codex::new(config(&codex::CLI, AgentRole::Planner, None)),
            AgentRole::Planner,
        )
        .unwrap();
    assert!(run
        .argv()
        .join(" ")
        .contains("--sandbox danger-full-access"));
    assert_eq!(r.exit, AgentExit::Failed(Some(1)));
    let f = r.failure.expect("a failure");
    assert!(matches!(f.kind, AgentFailureKind::Quota { .. }), "{f:?}");
    assert!(f.message.contains("try again at 3:28 PM"));
}

#[test]
fn opencode_worker_gets_its_config_and_a_rate_limit_is_a_quota_failure() {
    let run = FakeRun::new("opencode", "opencode/rate_limited_429.jsonl", 1);
    let mut c = config(&opencode::CLI, WORKER, Some("anthropic/claude-sonnet-4-5"));
    c.max_turns = 30;
    let r = run
        .run(&opencode::Opencode::new(c.clone()), WORKER)
        .unwrap();
    // The literal argv is in the adapter's unit test.
    assert_eq!(run.argv(), opencode::args(&c));
    assert!(run.argv().ends_with(&[
        "--model".to_string(),
        "anthropic/claude-sonnet-4-5".to_string()
    ]));
    assert_eq!(run.stdin(), PROMPT);
    assert_env(&run, &[("OPENCODE_DISABLE_AUTOUPDATE", "1")]);
    let content = run.env()["OPENCODE_CONFIG_CONTENT"].clone();
    let config: serde_json::Value = serde_json::from_str(&content).unwrap();
    assert_eq!(config["agent"]["build"]["steps"], 30, "{content}");
    // Its provider reached through opentiger's proxy (issue 37).
    assert_eq!(
        config["provider"]["anthropic"]["options"]["baseURL"], "http://127.0.0.1:3128/anthropic/v1",
        "{content}"
    );
    assert_eq!(r.exit, AgentExit::Failed(Some(1)));
    assert_eq!(
        r.failure.map(|f| f.kind),
        Some(AgentFailureKind::Quota {
            retry_hint: Some("resets at 00:00 UTC".into())
        })
    );
}

#[test]
fn opencode_success_reads_cost_and_session() {
    let run = FakeRun::new("opencode", "opencode/success.jsonl", 0);
    let r = run
        .run(
            &opencode::Opencode::new(config(&opencode::CLI, WORKER, None)),
            WORKER,
        )
        .unwrap();
    assert_eq!((r.exit, r.failure), (AgentExit::Finished, None));
    assert_eq!(
        (r.cost_usd, r.input_tokens, r.output_tokens),
        (0.0108, 1500, 420)
    );
    assert_eq!(
        r.session_id.as_deref(),
        Some("ses_e02de7e24ffe7H1tbEw0Vu5PNX")
    );
}

#[test]
fn aider_worker_runs_by_message_file_and_leaves_nothing_behind() {
    let run = FakeRun::new("aider", "aider/success.txt", 0);
    fs::write(run.record.join("drop"), "").unwrap();
    let r = run
        .run(
            &aider::Aider::new(config(&aider::CLI, WORKER, Some("sonnet"))),
            WORKER,
        )
        .unwrap();
    let argv = run.argv();
    assert_eq!(
        argv[..2],
        ["--message-file".to_string(), run.scratch("prompt.md")]
    );
    assert!(argv.contains(&"--no-auto-commits".to_string()), "{argv:?}");
    assert_eq!(
        argv[argv.len() - 2..],
        ["--model".to_string(), "sonnet".to_string()]
    );
    assert_eq!(read(&run.scratch.join("prompt.md")), PROMPT);
    assert_eq!(run.stdin(), "", "the prompt goes by file");
    // litellm's own name for the base URL on opentiger's proxy (issue 37).
    assert_env(
        &run,
        &[("ANTHROPIC_API_BASE", "http://127.0.0.1:3128/anthropic")],
    );
    assert!(
        !run.workspace.join(".aider.tags.cache.v4").exists(),
        "aider's cache was left behind"
    );
    assert_eq!((r.exit, r.failure), (AgentExit::Finished, None));
    assert_eq!(
        (r.cost_usd, r.input_tokens, r.output_tokens),
        (0.009, 2100, 180)
    );
    assert!(r.summary.unwrap().starts_with("I added `sub` to ops.py."));
}

#[test]
fn aider_rate_limited_with_exit_0_is_not_a_success() {
    let run = FakeRun::new("aider", "aider/rate_limited.txt", 0);
    let r = run
        .run(
            &aider::Aider::new(config(&aider::CLI, WORKER, None)),
            WORKER,
        )
        .unwrap();
    assert_eq!(r.exit, AgentExit::Failed(Some(0)));
    assert!(matches!(
        r.failure.map(|f| f.kind),
        Some(AgentFailureKind::Quota { .. })
    ));
    assert!(
        r.output_tail
            .contains("\n[opentiger] quota or rate limit: litellm.RateLimitError"),
        "{}",
        r.output_tail
    );
}

#[test]
fn a_cli_missing_at_run_time_is_unavailable_with_its_fix() {
    let run = FakeRun::new("not-claude", "claude-code/success.json", 0);
    let exec = claude_code::ClaudeCode::new(config(&claude_code::CLI, WORKER, None));
    match run.run(&exec, WORKER) {
        Err(ExecutorError::Unavailable(text)) => {
            assert!(text.contains("`claude` was not found on PATH"), "{text}");
            assert!(
                text.contains("npm install -g @anthropic-ai/claude-code"),
                "{text}"
            );
            assert!(text.contains("agents.worker.command"), "{text}");
        }
        other => panic!("{:?}", other.map(|r| r.exit)),
    }
}

/// A fake `claude` for whole ticks: linked into a folder of its own with its record beside it;
/// it writes `files` into the workspace and prints `fixture`. Returns the link.
fn fake_claude_for_ticks(g: &GitRepo, fixture: &str, exit: i32, files: &[(&str, &str)]) -> PathBuf {
    let dir = g.tools_path().join("fake-claude");
    fs::create_dir_all(dir.join("workspace")).unwrap();
    let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents");
    let link = dir.join("claude");
    std::os::unix::fs::symlink(fixtures.join("fake-cli.sh"), &link).unwrap();
    fs::copy(fixtures.join(fixture), dir.join("stdout")).unwrap();
    fs::write(dir.join("exit"), exit.to_string()).unwrap();
    for (name, text) in files {
        fs::write(dir.join("workspace").join(name), text).unwrap();
    }
    link
}

fn claude_worker(g: &GitRepo, link: &Path) {
    let config = read(&g.path().join(".opentiger.yml")).replace(
        "  worker:\n",
        &format!(
            "  worker:\n    executor: claude-code\n    command: [\"{}\"]\n",
            link.display()
        ),
    );
    fs::write(g.path().join(".opentiger.yml"), config).unwrap();
}

#[test]
fn a_usage_limit_reported_with_exit_0_parks_the_task_until_the_cli_says() {
    let g = GitRepo::with(Setup::default());
    let link = fake_claude_for_ticks(&g, "claude-code/usage_limit.json", 0, &[("sub.txt", "x\n")]);
    claude_worker(&g, &link);
    let id = g.repo.add(&["--title", "Add sub", "--goal", "sub.txt"]);
    g.tick_env(&minute(0), KEY).ok();
    let task = g.task_json(&id);
    assert_eq!(
        (task["status"].as_str(), task["block_reason"].as_str()),
        (Some("blocked"), Some("quota_wait")),
        "{task}"
    );
    // "usage limit reached|1760000400": 09:00 UTC, so tomorrow's, not the 2-minute backoff.
    assert_eq!(
        task["next_action"],
        "quota_wait: retry after 2026-11-22T09:00:00Z (wait 1/12)"
    );
}

#[test]
fn a_claude_run_is_recorded_with_its_cost_and_a_turn_cap_fails_it() {
    let g = GitRepo::with(Setup::default());
    let link = fake_claude_for_ticks(&g, "claude-code/success.json", 0, &[("sub.txt", "x\n")]);
    claude_worker(&g, &link);
    let id = g.repo.add(&["--title", "Add sub", "--goal", "sub.txt"]);
    g.tick_env(&minute(0), KEY).ok();
    let status = g
        .repo
        .run_at(&minute(0), &["status", "--json", "--all"])
        .ok()
        .json();
    let run = &status["runs"].as_array().unwrap()[0];
    assert_eq!(
        (run["status"].as_str(), run["cost_usd"].as_f64()),
        (Some("success"), Some(0.0216)),
        "{run}"
    );
    assert_ne!(g.task_json(&id)["status"], "failed");

    let g = GitRepo::with(Setup::default());
    let link = fake_claude_for_ticks(&g, "claude-code/max_turns.json", 1, &[("sub.txt", "x\n")]);
    claude_worker(&g, &link);
    let id = g.repo.add(&["--title", "Add sub", "--goal", "sub.txt"]);
    g.tick_env(&minute(0), KEY).ok();
    let status = g
        .repo
        .run_at(&minute(0), &["status", "--json", "--all"])
        .ok()
        .json();
    let run = &status["runs"].as_array().unwrap()[0];
    assert_eq!(run["failure_code"], "model_or_unknown_failure", "{run}");
    assert!(
        run["error"]
            .as_str()
            .unwrap()
            .contains("agents.worker.max_turns = 100"),
        "{run}"
    );
    assert_eq!(
        run["cost_usd"].as_f64(),
        Some(0.0324),
        "spend is recorded on failure too"
    );
    assert_eq!(g.task_json(&id)["status"], "failed");
}

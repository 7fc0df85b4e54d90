//! Issue 37 end to end: whole ticks whose worker is a stand-in CLI (`tests/fixtures/agents/
//! calling-cli.py`, linked under a CLI's name) that finds its model API and key the way the real
//! CLI does and calls it, against the stand-in model API (`common::model_server`) reached through
//! opentiger's proxy (`OPENTIGER_EGRESS_RESOLVE` maps the providers' hosts to it).
//!
//! The stand-in provider receives the runner's real key while the agent's environment, arguments
//! and files hold only a placeholder, for each executor that takes a base URL; streamed tokens
//! are metered to the stand-in's counts; a 429 on a websocket upgrade ends the run as a quota
//! wait before its 10-second timeout; a budget covers a task's family; a run past its budget has
//! its next model call refused; an idle agent is ended as stalled.

use crate::common;

use std::fs;
use std::path::PathBuf;

use common::model_server::{ModelServer, Scenario, INPUT_TOKENS, OUTPUT_TOKENS};
use common::{git, minute, GitRepo, Setup};

const ANTHROPIC_KEY: &str = "sk-ant-api03-REALkeyOfTheRunner0123456789abcdef";
const OPENAI_KEY: &str = "sk-proj-REALopenaiKeyOfTheRunner0123456789abcd";

/// A repository whose worker is the calling stand-in under `program`'s name.
struct Case {
    g: GitRepo,
    server: ModelServer,
    /// Where the stand-in records its argv, env and calls.
    record: PathBuf,
}

impl Case {
    /// `worker`: lines under `agents.worker` after the executor and command; `extra`: top-level
    /// lines.
    fn new(executor: &str, program: &str, scenario: Scenario, worker: &str, extra: &str) -> Case {
        let server = ModelServer::start(scenario);
        let g = GitRepo::with(Setup::default());
        let bin = g.tools_path().join("bin");
        let record = g.tools_path().join("record");
        fs::create_dir_all(&bin).unwrap();
        fs::create_dir_all(&record).unwrap();
        let script = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/agents/calling-cli.py");
        std::os::unix::fs::symlink(script, bin.join(program)).unwrap();
        let model = match executor {
            "opencode" => "    model: anthropic/claude-sonnet-4-5\n",
            _ => "",
        };
        let section = format!(
            "  worker:\n    executor: {executor}\n    command: [\"{}\"]\n{model}    env_passthrough: [FAKE_CLI_DIR, CALLS, CALLING_CLI_WS, CALLING_CLI_SILENT, CALLING_CLI_COST]\n{worker}",
            bin.join(program).display()
        );
        let path = g.path().join(".opentiger.yml");
        let config = fs::read_to_string(&path)
            .unwrap()
            .replace("  worker:\n", &section)
            + extra;
        fs::write(path, config).unwrap();
        Case { g, server, record }
    }

    /// A tick at `minute` with the runner's keys, the stand-in's settings and the providers'
    /// hosts mapped to the stand-in model API.
    fn tick(&self, at: u32, env: &[(&str, &str)]) -> common::Out {
        let addr = self
            .server
            .base_url()
            .trim_start_matches("http://")
            .to_string();
        let resolve = format!("api.anthropic.com={addr},api.openai.com={addr}");
        let record = self.record.display().to_string();
        let mut all = vec![
            ("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
            ("OPENAI_API_KEY", OPENAI_KEY),
            ("OPENTIGER_EGRESS_RESOLVE", resolve.as_str()),
            ("FAKE_CLI_DIR", record.as_str()),
        ];
        all.extend_from_slice(env);
        let out = self.g.tick_env(&minute(at), &all);
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        out
    }

    fn add(&self, extra: &[&str]) -> String {
        let mut args = vec!["--title", "Reply", "--goal", "write reply.txt"];
        args.extend_from_slice(extra);
        self.g.repo.add(&args)
    }

    fn show(&self, id: &str) -> serde_json::Value {
        self.g.repo.run(&["task", "show", id, "--json"]).ok().json()
    }

    fn recorded(&self, name: &str) -> String {
        fs::read_to_string(self.record.join(name)).unwrap_or_default()
    }
}

/// Checks the key reached the provider and never the agent, and what was metered.
fn key_stays_with_the_runner(executor: &str, program: &str, key: &str) {
    let case = Case::new(executor, program, Scenario::Success, "", "");
    let id = case.add(&[]);
    let out = case.tick(0, &[("CALLS", "2")]);
    let seen = case.server.seen();
    assert_eq!(seen.len(), 2, "{executor}: {}\n{}", out.stdout, out.stderr);
    for s in &seen {
        assert_eq!(s.key.as_deref(), Some(key), "{executor}: {}", s.path);
    }
    let env = case.recorded("env");
    assert!(env.contains("opentiger-placeholder-"), "{executor}: {env}");
    for place in [env, case.recorded("argv")] {
        assert!(!place.contains(key), "{executor}: the agent held the key");
    }
    let everything = git(case.g.path(), &["log", "--all", "-p"]);
    assert!(
        everything.contains("answered: True"),
        "{executor}: {everything}"
    );
    assert!(!everything.contains(key), "{executor}");
    let run = &case.show(&id)["runs"][0];
    assert_eq!(run["status"], "success", "{executor}: {run}");
    let metered = &run["metered"]["models"];
    // The stand-in provider answers with the model the request names.
    let model = match executor {
        "codex" => "gpt-5-codex",
        _ => "claude-sonnet-4-5",
    };
    let tokens = &metered[model];
    assert_eq!(tokens["input"], 2 * INPUT_TOKENS, "{executor}: {run}");
    assert_eq!(tokens["output"], 2 * OUTPUT_TOKENS, "{executor}: {run}");
    assert_eq!(tokens["answers"], 2, "{executor}: {run}");
}

#[test]
fn claude_code_s_key_stays_with_the_runner() {
    key_stays_with_the_runner("claude-code", "claude", ANTHROPIC_KEY);
}

#[test]
fn codex_s_key_stays_with_the_runner() {
    key_stays_with_the_runner("codex", "codex", OPENAI_KEY);
}

#[test]
fn opencode_s_key_stays_with_the_runner() {
    key_stays_with_the_runner("opencode", "opencode", ANTHROPIC_KEY);
}

#[test]
fn aider_s_key_stays_with_the_runner() {
    key_stays_with_the_runner("aider", "aider", ANTHROPIC_KEY);
}

/// Codex over a websocket: the frames are metered like a stream.
#[test]
fn websocket_answers_are_metered() {
    let case = Case::new("codex", "codex", Scenario::Success, "", "");
    let id = case.add(&[]);
    case.tick(0, &[("CALLING_CLI_WS", "1")]);
    let seen = case.server.seen();
    assert!(seen.iter().all(|s| s.websocket), "{seen:?}");
    let run = &case.show(&id)["runs"][0];
    assert_eq!(run["status"], "success", "{run}");
    let tokens = &run["metered"]["models"]["gpt-5-codex"];
    assert_eq!(
        (tokens["input"].as_u64(), tokens["output"].as_u64()),
        (Some(INPUT_TOKENS), Some(OUTPUT_TOKENS)),
        "{run}"
    );
}

/// The check of the issue: codex, given a 429 with `retry-after: 3600` on its websocket
/// upgrade, goes silent; the run ends as a quota wait with the provider's retry time, well
/// before its timeout (10 seconds here, so a run that waited for the CLI would be recorded as
/// timed out instead).
#[test]
fn a_429_on_a_websocket_upgrade_is_a_quota_wait_before_the_timeout() {
    let case = Case::new(
        "codex",
        "codex",
        Scenario::RateLimited,
        "    timeout_minutes: 0.17\n",
        "",
    );
    let id = case.add(&[]);
    case.tick(0, &[("CALLING_CLI_WS", "1"), ("CALLING_CLI_SILENT", "1")]);
    // One upgrade reached the provider. The proxy ends the run the moment the 429 passes, so
    // the CLI may be stopped before it writes down what it got: its record is "429" or nothing.
    let seen = case.server.seen();
    assert!(seen.len() == 1 && seen[0].websocket, "{seen:?}");
    let noted = case.recorded("calls");
    assert!(matches!(noted.trim(), "429" | ""), "{noted}");
    let shown = case.show(&id);
    let run = &shown["runs"][0];
    assert_eq!(run["failure_code"], "quota_failure", "{shown}");
    let error = run["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("HTTP 429") && error.contains("retry in 3600s"),
        "{error}"
    );
    assert_eq!(shown["task"]["status"], "blocked", "{shown}");
    assert_eq!(shown["task"]["block_reason"], "quota_wait", "{shown}");
    // The provider's hour, not opentiger's own backoff.
    let next = shown["task"]["next_attempt_at"]
        .as_i64()
        .unwrap_or_default();
    let now = chrono::DateTime::parse_from_rfc3339(&minute(0))
        .unwrap()
        .timestamp_millis();
    assert!(next - now >= 3_600_000, "{shown}");
}

/// `budget.per_task_usd: 0.5` and $0.42 a run (1,200 input tokens at $350 per million): the
/// first run fails its check, the second too; the task's family has then spent $0.84 and no
/// third run starts — not the retry, not its rework child — and the task says the budget holds
/// it.
#[test]
fn a_family_s_budget_stops_it_at_two_paid_runs() {
    let case = Case::new(
        "claude-code",
        "claude",
        Scenario::Success,
        "",
        "budget:\n  per_task_usd: 0.5\npricing:\n  claude-sonnet-4-5: { input_per_mtok: 350, output_per_mtok: 0 }\n",
    );
    let id = case.add(&["--command", "false"]);
    for i in 0..8 {
        case.tick(i * 10, &[]);
    }
    let family = case.show(&id);
    assert_eq!(family["family"]["paid_runs"], 2, "{family}");
    assert_eq!(case.server.seen().len(), 2);
    let status = case
        .g
        .repo
        .run_at(&minute(80), &["status", "--json"])
        .ok()
        .json();
    let held: Vec<&serde_json::Value> = status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "queued")
        .collect();
    assert_eq!(held.len(), 1, "{status}");
    let task = held[0];
    assert_eq!(task["phase"], "paused", "{task}");
    let reason = task["reason"].as_str().unwrap_or_default();
    assert!(reason.contains("the budget holds it"), "{task}");
    assert!(reason.contains("spent $0.84"), "{task}");
    let text = case
        .g
        .repo
        .run_at(&minute(80), &["task", "show", task["id"].as_str().unwrap()])
        .ok()
        .stdout;
    assert!(text.contains("the budget holds it"), "{text}");
}

/// A run that crosses its budget mid-run: its next model call is refused by the proxy (an error
/// the CLI sees), the run ends as over budget, and no retry is counted.
#[test]
fn a_run_past_its_budget_has_its_next_model_call_refused() {
    let case = Case::new(
        "claude-code",
        "claude",
        Scenario::Success,
        "",
        "budget:\n  per_task_usd: 0.5\npricing:\n  claude-sonnet-4-5: { input_per_mtok: 350, output_per_mtok: 0 }\n",
    );
    let id = case.add(&[]);
    // $0.42 a call against $0.50: the second call crosses the budget, the third is refused.
    case.tick(0, &[("CALLS", "3")]);
    // The proxy answers the third call 403 and ends the run at once, so the CLI may be stopped
    // before it writes the 403 down.
    let noted = case.recorded("calls");
    let noted: Vec<_> = noted.lines().collect();
    assert!(
        noted == ["200", "200", "403"] || noted == ["200", "200"],
        "{noted:?}"
    );
    assert_eq!(case.server.seen().len(), 2, "the refused call never left");
    let shown = case.show(&id);
    let run = &shown["runs"][0];
    assert_eq!(run["failure_code"], "budget_exceeded", "{shown}");
    assert!(
        run["error"]
            .as_str()
            .unwrap_or_default()
            .contains("budget.per_task_usd $0.50"),
        "{run}"
    );
    assert_eq!(shown["task"]["status"], "queued", "{shown}");
    assert_eq!(shown["task"]["attempts"], serde_json::json!({}), "{shown}");
    let status = case.g.repo.run(&["status", "--json"]).ok().json();
    assert_eq!(status["tasks"][0]["phase"], "paused", "{status}");
}

/// An agent that prints nothing, changes nothing and talks to no model for
/// `agents.<role>.idle_minutes` is ended and recorded as stalled, long before its timeout.
#[test]
fn an_idle_agent_is_ended_as_stalled() {
    let g = GitRepo::with(Setup {
        default_agent: "    idle_minutes: 0.05\n",
        ..Setup::default()
    });
    g.agent("#!/bin/sh\nsleep 300\n");
    let id = g.repo.add(&["--title", "Idle", "--goal", "nothing"]);
    g.tick(&minute(0)).ok();
    let shown = g.repo.run(&["task", "show", &id, "--json"]).ok().json();
    let run = &shown["runs"][0];
    assert_eq!(run["failure_code"], "agent_stalled", "{shown}");
    assert!(
        run["error"]
            .as_str()
            .unwrap_or_default()
            .contains("agents.worker.idle_minutes"),
        "{run}"
    );
}

/// An agent that keeps changing files is not idle, however quiet it is.
#[test]
fn a_quiet_agent_that_changes_files_is_not_idle() {
    let g = GitRepo::with(Setup {
        default_agent: "    idle_minutes: 0.05\n",
        ..Setup::default()
    });
    g.agent("#!/bin/sh\nfor i in 1 2 3 4 5 6 7 8; do echo $i > progress.txt; sleep 1; done\n");
    let id = g.repo.add(&["--title", "Busy", "--goal", "progress.txt"]);
    g.tick(&minute(0)).ok();
    let shown = g.repo.run(&["task", "show", &id, "--json"]).ok().json();
    assert_eq!(shown["runs"][0]["status"], "success", "{shown}");
}

/// The judge's and the planner's model calls go through their doors too: metered, counted per
/// role in `status`, the judge's per review in `task show` and against the task's family. Here
/// both are `command` agents that list the key: they get its placeholder and base URL, and call
/// the model API with curl, as an SDK would.
#[test]
fn the_judge_s_and_the_planner_s_model_calls_are_metered() {
    let server = ModelServer::start(Scenario::Success);
    let g = GitRepo::with(Setup {
        default_agent: "    env_passthrough: [ANTHROPIC_API_KEY]\n",
        ..Setup::default()
    });
    let call = "curl -sS -X POST \"$ANTHROPIC_BASE_URL/v1/messages\" -H \"x-api-key: $ANTHROPIC_API_KEY\" -H 'content-type: application/json' -d '{\"model\":\"claude-sonnet-4-5\",\"stream\":true,\"messages\":[]}' > /dev/null\n";
    g.judge(&format!(
        "#!/bin/sh\n{call}echo '{{\"verdict\": \"approve\", \"summary\": \"fine\"}}' > \"$OPENTIGER_RESULT_FILE\"\n"
    ));
    g.planner(&format!(
        "#!/bin/sh\n{call}echo '{{\"tasks\": []}}' > \"$OPENTIGER_RESULT_FILE\"\n"
    ));
    g.agent("#!/bin/sh\necho done > done.txt\n");
    let id = g.repo.add(&["--title", "Done", "--goal", "done.txt"]);
    let addr = server.base_url().trim_start_matches("http://").to_string();
    let resolve = format!("api.anthropic.com={addr}");
    let env = [
        ("ANTHROPIC_API_KEY", ANTHROPIC_KEY),
        ("OPENTIGER_EGRESS_RESOLVE", resolve.as_str()),
    ];
    for at in [0, 10] {
        g.tick_env(&minute(at), &env).ok();
    }
    assert!(g.file_on_main("done.txt").is_some(), "{}", g.main_log());
    g.repo.file(
        "docs/requirement.md",
        "# R\n\n## Goal\nA thing.\n\n## Acceptance Criteria\n- [ ] it works\n",
    );
    g.repo.run_env(&minute(20), &["plan"], &env).ok();
    let seen = server.seen();
    assert_eq!(
        seen.len(),
        2,
        "the judge's call and the planner's: {seen:?}"
    );
    assert!(seen.iter().all(|s| s.key.as_deref() == Some(ANTHROPIC_KEY)));
    let shown = g.repo.run(&["task", "show", &id, "--json"]).ok().json();
    let review = &shown["reviews"][0];
    assert_eq!(review["role"], "judge", "{shown}");
    let tokens = &review["metered"]["models"]["claude-sonnet-4-5"];
    assert_eq!(tokens["input"], INPUT_TOKENS, "{shown}");
    let status = g
        .repo
        .run_at(&minute(20), &["status", "--json"])
        .ok()
        .json();
    let by_role = &status["spend"]["by_role"];
    // claude-sonnet-4-5 at $3/$15 per million: 1,200 in and 80 out is $0.0048 a call.
    for role in ["judge", "planner"] {
        let usd = by_role[role].as_f64().unwrap_or_default();
        assert!((usd - 0.0048).abs() < 1e-9, "{role}: {status}");
    }
    let family = g.repo.run(&["task", "show", &id, "--json"]).ok().json()["family"].clone();
    assert_eq!(family["paid_runs"], 1, "{family}");
}

/// github mode: a host the worker was refused is named in its issue's progress comment with the
/// configuration line that would allow it (as `task show`, `status` and the job summary do).
#[test]
fn a_refused_host_is_named_in_the_progress_comment_with_the_line_that_allows_it() {
    use common::github::{opentiger_against, tick_output, GithubServer};
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let origin = common::bare_origin(dir.path());
    let clone = dir.path().join("clone");
    common::clone(&origin, &clone);
    let agent = dir.path().join("agent.sh");
    fs::write(
        &agent,
        "#!/bin/sh\ncurl -sS -o /dev/null https://evil.test/ 2>/dev/null\necho hi > hello.txt\n",
    )
    .unwrap();
    fs::set_permissions(&agent, fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(
        clone.join(".opentiger.yml"),
        format!(
            "mode: github\nagents:\n  default:\n    executor: command\n    command: [\"{}\"]\n    timeout_minutes: 1\nreport:\n  dashboard_issue: false\n",
            agent.display()
        ),
    )
    .unwrap();
    git(&clone, &["add", "-A"]);
    git(&clone, &["commit", "-q", "-m", "initial"]);
    git(&clone, &["push", "-q", "origin", "main"]);
    let server = GithubServer::start("acme", "widgets").with_git(&origin);
    let issue = server.add_issue(
        "Say hello",
        "hello.txt says hi",
        &["opentiger"],
        "alice",
        "OWNER",
    );
    let now = "2026-11-21T12:00:00Z";
    let out = opentiger_against(&server, &clone, now)
        .arg("tick")
        .output()
        .unwrap();
    tick_output(out, now);
    let progress: Vec<String> = server
        .comments(issue)
        .into_iter()
        .filter(|c| c.body.contains("opentiger:task="))
        .map(|c| c.body)
        .collect();
    assert_eq!(progress.len(), 1, "{progress:?}");
    assert!(
        progress[0].contains("evil.test:443")
            && progress[0].contains("sandbox: {network: {allow: {worker: [\"evil.test\"]}}}"),
        "{}",
        progress[0]
    );
}

/// A run's spend is the larger of what the proxy metered and what the CLI reported; both are
/// kept (here the CLI says more than its one metered answer cost).
#[test]
fn the_cli_s_figure_counts_when_it_is_the_larger() {
    let case = Case::new("claude-code", "claude", Scenario::Success, "", "");
    let id = case.add(&[]);
    case.tick(0, &[("CALLING_CLI_COST", "0.25")]);
    let run = &case.show(&id)["runs"][0];
    assert_eq!(run["status"], "success", "{run}");
    assert_eq!(run["reported_cost_usd"], 0.25, "{run}");
    assert_eq!(run["cost_usd"], 0.25, "{run}");
    let metered = run["metered"]["usd"].as_f64().expect("metered usd");
    assert!(metered > 0.0 && metered < 0.25, "{run}");
}

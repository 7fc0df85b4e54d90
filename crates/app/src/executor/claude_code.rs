//! The `claude-code` adapter: Anthropic's Claude Code CLI (`claude`, npm
//! `@anthropic-ai/claude-code`). Not for: whether it has a key or a login (`executor::keys`), or
//! how its report, the exit and the result file make one result (`executor::report`).
//!
//! Runs `claude -p --output-format stream-json --verbose --max-turns N [--model M]` with the
//! prompt on stdin, and
//! - workers (worker, tester, docser): `--permission-mode acceptEdits --allowedTools
//!   Bash,Read,Edit,Write,Glob,Grep --add-dir <scratch>` (edits without asking, shell commands,
//!   and the scratch folder so the result file can be written; in print mode anything else that
//!   would need a person's permission is denied);
//! - judge and planner: `--permission-mode plan --disallowedTools Bash,Edit,Write,NotebookEdit`
//!   (read-only; their JSON comes from the final message).
//!
//! Reads the one `result` object it prints (the last `"type":"result"` line, so a `stream-json`
//! log parses too): `result` is the final message, `total_cost_usd` the cost, `session_id`,
//! tokens from `modelUsage` (every model the run used) or else `usage`. `is_error: true` — which
//! the CLI sets with `subtype: "success"` for API errors — is a failure; `api_error_status`
//! 429/529 and usage-limit texts are quota failures; `error_max_turns` and `error_max_budget_usd`
//! are turn-cap and spending-cap failures.
//!
//! The stream, not the one `json` object, because claude (2.1.197) retries a refused key: a
//! stand-in answering HTTP 401 got 10 requests over minutes with nothing printed, until the
//! timeout. The stream shows each retry (`"subtype":"api_retry","error_status":401`), and
//! [`AuthWatch`] stops it at the first one as a configuration error.

use std::path::Path;
use std::time::Duration;

use serde_json::Value;

use super::adapter::{Adapter, Watcher};
use super::cli::{AdapterConfig, Cli, RunFiles};
use super::report::{self, failure, int, json_lines, read_only, text_at, Report};
use super::AgentFailureKind;
use crate::process::ProcessOutput;

pub const CLI: Cli = Cli {
    kind: "claude-code",
    program: "claude",
    install: "npm install -g @anthropic-ai/claude-code",
    keys: &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"],
    logins: &[".claude/.credentials.json"],
    background: &[],
    // claude-code 2.1.197 with no --model.
    default_models: &["claude-opus-4-8"],
};

/// The tools a worker may use without asking (print mode denies what would need asking).
const WORKER_TOOLS: &str = "Bash,Read,Edit,Write,Glob,Grep";
/// The tools the read-only roles are denied, on top of plan mode.
const READ_ONLY_DENIED: &str = "Bash,Edit,Write,NotebookEdit";

pub struct ClaudeCode {
    config: AdapterConfig,
}

impl ClaudeCode {
    pub fn new(config: AdapterConfig) -> ClaudeCode {
        ClaudeCode { config }
    }
}

/// The arguments after `claude` (the prompt goes on stdin).
pub fn args(config: &AdapterConfig, scratch: &Path) -> Vec<String> {
    let mut args: Vec<String> = [
        "-p",
        "--output-format",
        "stream-json",
        "--verbose",
        "--max-turns",
    ]
    .map(String::from)
    .to_vec();
    args.push(config.max_turns.to_string());
    if let Some(model) = &config.model {
        args.extend(["--model".to_string(), model.clone()]);
    }
    if read_only(config.role) {
        args.extend(
            [
                "--permission-mode",
                "plan",
                "--disallowedTools",
                READ_ONLY_DENIED,
            ]
            .map(String::from),
        );
    } else {
        args.extend(
            [
                "--permission-mode",
                "acceptEdits",
                "--allowedTools",
                WORKER_TOOLS,
            ]
            .map(String::from),
        );
        args.extend(["--add-dir".to_string(), scratch.display().to_string()]);
    }
    args
}

/// Reads `claude -p --output-format stream-json` (or `json`) output.
pub fn parse(stdout: &str) -> Report {
    let (events, _) = json_lines(stdout);
    let Some(result) = events
        .iter()
        .rev()
        .find(|e| text_at(e, "/type") == Some("result"))
    else {
        return Report::unreadable("claude printed no result object", stdout);
    };
    let mut r = Report {
        completed: true,
        final_message: text_at(result, "/result").map(String::from),
        cost_usd: result.get("total_cost_usd").and_then(Value::as_f64),
        session_id: text_at(result, "/session_id").map(String::from),
        ..Report::default()
    };
    tokens(result, &mut r);
    r.failure = failure_of(result);
    r
}

/// Tokens of every model the run used (`modelUsage`), else of the main loop (`usage`).
fn tokens(result: &Value, r: &mut Report) {
    if let Some(models) = result
        .get("modelUsage")
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
    {
        for usage in models.values() {
            let cached = int(usage, "/cacheReadInputTokens");
            r.input_tokens +=
                int(usage, "/inputTokens") + cached + int(usage, "/cacheCreationInputTokens");
            r.cached_input_tokens += cached;
            r.output_tokens += int(usage, "/outputTokens");
        }
        return;
    }
    let cached = int(result, "/usage/cache_read_input_tokens");
    r.input_tokens = int(result, "/usage/input_tokens")
        + cached
        + int(result, "/usage/cache_creation_input_tokens");
    r.cached_input_tokens = cached;
    r.output_tokens = int(result, "/usage/output_tokens");
}

fn failure_of(result: &Value) -> Option<super::AgentFailure> {
    let subtype = text_at(result, "/subtype").unwrap_or("");
    let is_error = result
        .get("is_error")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if subtype == "success" && !is_error {
        return None;
    }
    let errors: Vec<&str> = result
        .get("errors")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let message = text_at(result, "/result")
        .filter(|t| !t.trim().is_empty())
        .map(String::from)
        .or_else(|| (!errors.is_empty()).then(|| errors.join("; ")))
        .unwrap_or_else(|| format!("claude ended with `{subtype}`"));
    let status = result.get("api_error_status").and_then(Value::as_i64);
    Some(match (subtype, status) {
        ("error_max_turns", _) => failure(AgentFailureKind::MaxTurns, message),
        ("error_max_budget_usd", _) => failure(AgentFailureKind::Budget, message),
        (_, Some(429 | 529)) => report::quota(&message),
        _ => report::error_from_text(&message),
    })
}

impl Adapter for ClaudeCode {
    fn cli(&self) -> &'static Cli {
        &CLI
    }

    fn config(&self) -> &AdapterConfig {
        &self.config
    }

    fn args(&self, _files: &RunFiles, scratch: &Path, _given: &[(String, String)]) -> Vec<String> {
        args(&self.config, scratch)
    }

    fn stdin(&self, prompt: &str) -> Option<Vec<u8>> {
        Some(prompt.as_bytes().to_vec())
    }

    fn env(&self, _scratch: &Path, given: &[(String, String)]) -> Vec<(String, String)> {
        // An update mid-run in CI is pointless and slow; telemetry and error reports go to
        // hosts no allow list names (issue 37). Its model API is `ANTHROPIC_BASE_URL`, which
        // the runner sets to its route on opentiger's proxy; a configured provider's (issue 50)
        // is given the same way.
        let mut env = vec![
            ("DISABLE_AUTOUPDATER".to_string(), "1".to_string()),
            (
                "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC".to_string(),
                "1".to_string(),
            ),
        ];
        if let Some(door) = super::door::provider(given) {
            env.push(("ANTHROPIC_BASE_URL".into(), door.base_url));
            env.push(("ANTHROPIC_API_KEY".into(), door.key));
        }
        env
    }

    fn parse(&self, out: &ProcessOutput, _scratch: &Path) -> Report {
        parse(&out.stdout_tail)
    }

    fn watcher(&self) -> Option<Box<dyn Watcher>> {
        Some(Box::new(AuthWatch))
    }
}

/// Stops claude at its first retry of a request refused for its key (HTTP 401 or 403): retrying
/// does not fix a key.
pub struct AuthWatch;

impl Watcher for AuthWatch {
    fn line(&mut self, line: &str, _at: Duration) -> Option<super::AgentFailure> {
        let event = serde_json::from_str::<Value>(line).ok()?;
        if text_at(&event, "/type") != Some("system")
            || text_at(&event, "/subtype") != Some("api_retry")
        {
            return None;
        }
        let status = event.get("error_status").and_then(Value::as_i64);
        let error = text_at(&event, "/error").unwrap_or("");
        (matches!(status, Some(401 | 403)) || error == "authentication_failed").then(|| {
            failure(
                AgentFailureKind::Config,
                format!(
                    "claude's requests are refused ({}, HTTP {}) and it retries them; stopped at the first retry",
                    if error.is_empty() { "no reason given" } else { error },
                    status.map_or_else(|| "?".to_string(), |s| s.to_string())
                ),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AgentRole;
    use crate::model::Role;

    /// (fixture, failure kind, cost, input tokens, output tokens, final message starts with)
    type Case<'a> = (&'a str, Option<AgentFailureKind>, f64, i64, i64, &'a str);

    fn fixture(name: &str) -> String {
        crate::executor::recorded("claude-code", name)
    }

    #[test]
    fn argv_per_role() {
        let scratch = Path::new("/scratch");
        let mut worker = AdapterConfig::new(&CLI, AgentRole::Task(Role::Worker));
        worker.model = Some("sonnet".into());
        worker.max_turns = 40;
        assert_eq!(
            args(&worker, scratch).join(" "),
            "-p --output-format stream-json --verbose --max-turns 40 --model sonnet --permission-mode acceptEdits \
             --allowedTools Bash,Read,Edit,Write,Glob,Grep --add-dir /scratch"
        );
        let judge = AdapterConfig::new(&CLI, AgentRole::Judge);
        assert_eq!(
            args(&judge, scratch).join(" "),
            "-p --output-format stream-json --verbose --max-turns 100 --permission-mode plan \
             --disallowedTools Bash,Edit,Write,NotebookEdit"
        );
        let planner = AdapterConfig::new(&CLI, AgentRole::Planner);
        assert!(args(&planner, scratch).contains(&"plan".to_string()));
    }

    #[test]
    fn recorded_outputs_are_read() {
        use AgentFailureKind as K;
        #[rustfmt::skip]
        let cases: &[Case] = &[
            ("success.json", None, 0.0216, 3000, 840, "Added subtraction"),
            // Issue 18: `--output-format stream-json --verbose`, against the stand-in.
            ("success_stream.jsonl", None, 0.0096, 2400, 160, "Wrote sub.txt"),
            ("max_turns_stream.jsonl", Some(K::MaxTurns), 0.0144, 3600, 240, ""),
            ("not_logged_in.json", Some(K::Config), 0.0, 0, 0, "Not logged in"),
            ("rate_limited_429.json", Some(K::Quota { retry_hint: None }), 0.0, 0, 0, "API Error: Request rejected (429)"),
            ("overloaded_529.json", Some(K::Quota { retry_hint: None }), 0.0, 0, 0, "API Error: 529 Overloaded"),
            ("usage_limit.json", Some(K::Quota { retry_hint: Some("resets at 09:00 UTC".into()) }), 0.0412, 6400, 310, "Claude AI usage limit"),
            ("max_turns.json", Some(K::MaxTurns), 0.0324, 4500, 1260, ""),
            ("budget.json", Some(K::Budget), 0.0216, 3000, 840, ""),
            ("judge_verdict.json", None, 0.0631, 22200, 640, "The change adds"),
        ];
        for (name, kind, cost, input, output, message) in cases {
            let r = parse(&fixture(name));
            assert!(r.completed, "{name}");
            assert_eq!(r.failure.as_ref().map(|f| f.kind.clone()), *kind, "{name}");
            assert_eq!(r.cost_usd, Some(*cost), "{name}");
            assert_eq!(
                (r.input_tokens, r.output_tokens),
                (*input, *output),
                "{name}"
            );
            assert!(
                r.final_message
                    .as_deref()
                    .unwrap_or("")
                    .starts_with(message),
                "{name}"
            );
            assert!(r.session_id.is_some(), "{name}");
        }
        let turns = parse(&fixture("max_turns.json")).failure.unwrap();
        assert_eq!(turns.message, "Reached maximum number of turns (2)");
    }

    #[test]
    fn unreadable_output_is_an_error_not_a_panic() {
        let stream = format!(
            "{{\"type\":\"system\",\"subtype\":\"init\"}}\n{}",
            fixture("success.json")
        );
        let cases: &[(&str, bool)] = &[
            (&fixture("truncated.json"), false),
            ("", false),
            ("Error: unknown option '--bogus'\n", false),
            ("\u{0}\u{1}garbage{{{", false),
            (&stream, true),
        ];
        for (text, ok) in cases {
            let r = parse(text);
            assert_eq!(r.completed, *ok, "{text:?}");
            assert_eq!(r.failure.is_none(), *ok, "{text:?}");
        }
    }

    /// Issue 18: recorded with a key the stand-in refuses (HTTP 401): claude retries it 10 times
    /// over minutes; the watch stops it at the first retry.
    #[test]
    fn a_refused_key_is_stopped_at_its_first_retry() {
        let recorded = fixture("auth_retry_401.jsonl");
        let mut watch = AuthWatch;
        let (at, f) = recorded
            .lines()
            .enumerate()
            .find_map(|(i, l)| watch.line(l, Duration::ZERO).map(|f| (i, f)))
            .expect("stopped");
        assert_eq!(at, 1, "the line after init");
        assert_eq!(f.kind, AgentFailureKind::Config);
        assert_eq!(
            f.message,
            "claude's requests are refused (authentication_failed, HTTP 401) and it retries them; stopped at the first retry"
        );
        // A retry of an overloaded or rate-limited request is claude's own business.
        let overloaded = r#"{"type":"system","subtype":"api_retry","attempt":1,"error_status":529,"error":"overloaded"}"#;
        assert_eq!(AuthWatch.line(overloaded, Duration::ZERO), None);
        for name in [
            "success.json",
            "success_stream.jsonl",
            "max_turns_stream.jsonl",
        ] {
            for line in fixture(name).lines() {
                assert_eq!(AuthWatch.line(line, Duration::ZERO), None, "{name}");
            }
        }
    }
}

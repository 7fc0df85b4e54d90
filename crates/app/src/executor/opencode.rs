//! The `opencode` adapter: the OpenCode CLI (`opencode`, npm `opencode-ai`). Not for: whether it
//! has a key and a model (`executor::keys`), or how its report, the exit and the result file make
//! one result (`executor::report`).
//!
//! Runs `opencode run --format json --print-logs --log-level WARN [--model provider/model]
//! [--agent plan]` with the prompt on stdin (`opencode run` reads a piped stdin as the
//! message). Workers use the default `build` agent; the judge and the planner the built-in
//! `plan` agent, which may not edit. Settings go in `OPENCODE_CONFIG_CONTENT` (merged over the
//! user's and the project's config): the turn cap as the agents' `steps`, and permission to
//! write the scratch folder (for the result file) — any other permission prompt is rejected by
//! `opencode run`. `OPENCODE_DISABLE_AUTOUPDATE=1`, `OPENCODE_DISABLE_MODELS_FETCH=1` and
//! `OPENCODE_DISABLE_LSP_DOWNLOAD=1` too; what no variable turns off — the install of its
//! `@opencode-ai/plugin` package from registry.npmjs.org at each start — is its own traffic
//! (`Cli::background`). A configured provider (issue 50) becomes an opencode provider of the
//! same name (`door::opencode_provider`: `@ai-sdk/openai-compatible` for chat completions,
//! `@ai-sdk/openai` for Responses, bundled with it) and the model `--model <provider>/<model>`.
//!
//! Reads the JSON-lines events: `text` parts (the last one is the final message), `step_finish`
//! parts (`cost` in USD and `tokens`, summed over steps; `reason`), `sessionID`, and `error`
//! events (`APIError` with `statusCode` 429/529, or a quota text, is a quota failure; its
//! `responseHeaders` may say when to retry). A run that took `max_turns` steps used up its
//! turns, even when its last step ended on an answer: at its `steps` limit opencode makes the
//! model answer, so a capped run looks finished (issue 18).
//!
//! `steps` is only a prompt to the model, not a cap: [`TurnWatch`] counts the steps while the
//! CLI runs and stops it at `max_turns`; it also stops a CLI that keeps quiet after a rate limit
//! (opencode retries it by itself, `retry-after` long), as a quota failure. Such a retry prints
//! no event at all (seen with opencode 1.18.33 against a stand-in answering HTTP 429 with
//! `retry-after: 3600`: nothing on stdout until the timeout); only its log says so, which is why
//! the logs go to stderr (WARN and above: `level=ERROR … message="stream error" … small=false
//! … error.error="AI_APICallError: <the provider's message>"`), where the watch reads them. The
//! log has no `retry-after`: the quota wait takes opentiger's own backoff. A worker
//! with no model is not started (`executor::missing_key`): opencode would use its own hosted
//! default.

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};

use super::adapter::{Adapter, Watcher};
use super::cli::{AdapterConfig, Cli, RunFiles};
use super::report::{self, failure, int, json_lines, read_only, text_at, Report};
use super::AgentFailureKind;
use crate::process::ProcessOutput;

pub const CLI: Cli = Cli {
    kind: "opencode",
    program: "opencode",
    install: "npm install -g opencode-ai",
    keys: &[
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "OPENROUTER_API_KEY",
        "GEMINI_API_KEY",
    ],
    logins: &[".local/share/opencode/auth.json"],
    background: &["registry.npmjs.org"],
    // Never started without a model: it would use its own hosted default.
    default_models: &[],
};

pub struct Opencode {
    config: AdapterConfig,
}

impl Opencode {
    pub fn new(config: AdapterConfig) -> Opencode {
        Opencode { config }
    }
}

/// The arguments after `opencode` (the prompt goes on stdin).
pub fn args(config: &AdapterConfig) -> Vec<String> {
    let mut args: Vec<String> = [
        "run",
        "--format",
        "json",
        "--print-logs",
        "--log-level",
        "WARN",
    ]
    .map(String::from)
    .to_vec();
    if let Some(model) = &config.model {
        args.extend(["--model".to_string(), model.clone()]);
    }
    if read_only(config.role) {
        args.extend(["--agent".to_string(), "plan".to_string()]);
    }
    args
}

/// `OPENCODE_CONFIG_CONTENT`: the turn cap, and the scratch folder writable.
pub fn config_content(config: &AdapterConfig, scratch: &Path) -> String {
    let steps = json!({ "steps": config.max_turns });
    let scratch_files = format!("{}/*", scratch.display());
    json!({
        "agent": { "build": steps, "plan": steps },
        "permission": { "external_directory": { scratch_files: "allow" } },
    })
    .to_string()
}

/// `--model`: with a configured provider, the model under its name (`local/smollm2`).
pub fn model_arg(config: &AdapterConfig, given: &[(String, String)]) -> Option<String> {
    let model = config.model.clone()?;
    Some(match super::door::provider(given) {
        Some(door) => format!("{}/{model}", door.name),
        None => model,
    })
}

/// [`config_content`] with each model API the agent is given a base URL for (on opentiger's
/// proxy, issue 37) as its provider's `baseURL`, and a configured provider (issue 50) as a
/// provider of its own.
pub fn config_with_providers(
    config: &AdapterConfig,
    scratch: &Path,
    given: &[(String, String)],
) -> String {
    let mut value: Value =
        serde_json::from_str(&config_content(config, scratch)).unwrap_or_else(|_| json!({}));
    // (opencode's provider, the variable holding its base URL, what its SDK appends to it)
    const PROVIDERS: [(&str, &str, &str); 4] = [
        ("anthropic", "ANTHROPIC_BASE_URL", "/v1"),
        ("openai", "OPENAI_BASE_URL", ""),
        ("openrouter", "OPENROUTER_BASE_URL", ""),
        ("google", "GEMINI_BASE_URL", "/v1beta"),
    ];
    let mut providers = serde_json::Map::new();
    for (name, var, suffix) in PROVIDERS {
        if let Some((_, base)) = given.iter().find(|(k, v)| k == var && !v.is_empty()) {
            providers.insert(
                name.to_string(),
                json!({ "options": { "baseURL": format!("{base}{suffix}") } }),
            );
        }
    }
    if let Some(door) = super::door::provider(given) {
        providers.insert(
            door.name.clone(),
            super::door::opencode_provider(&door, config.model.as_deref()),
        );
    }
    if !providers.is_empty() {
        value["provider"] = Value::Object(providers);
    }
    value.to_string()
}

/// Reads `opencode run --format json` output.
pub fn parse(stdout: &str, max_turns: u32) -> Report {
    let (events, _) = json_lines(stdout);
    if events.is_empty() {
        return Report::unreadable("opencode printed no JSON events", stdout);
    }
    let mut r = Report {
        session_id: events
            .iter()
            .find_map(|e| text_at(e, "/sessionID"))
            .map(String::from),
        ..Report::default()
    };
    let (mut steps, mut finished_steps, mut cost) = (0u32, 0u32, 0.0f64);
    let mut last_reason = None;
    for event in &events {
        match text_at(event, "/type").unwrap_or("") {
            "step_start" => steps += 1,
            "text" => {
                if let Some(text) = text_at(event, "/part/text").filter(|t| !t.trim().is_empty()) {
                    r.final_message = Some(text.to_string());
                }
            }
            "step_finish" => {
                finished_steps += 1;
                last_reason = text_at(event, "/part/reason");
                cost += event
                    .pointer("/part/cost")
                    .and_then(Value::as_f64)
                    .unwrap_or(0.0);
                let cached = int(event, "/part/tokens/cache/read");
                r.input_tokens += int(event, "/part/tokens/input")
                    + cached
                    + int(event, "/part/tokens/cache/write");
                r.cached_input_tokens += cached;
                r.output_tokens +=
                    int(event, "/part/tokens/output") + int(event, "/part/tokens/reasoning");
            }
            "error" => r.failure = Some(error_event(event)),
            _ => {}
        }
    }
    r.cost_usd = (finished_steps > 0).then_some(cost);
    r.completed = finished_steps > 0 && r.failure.is_none();
    let ended_on_answer = last_reason == Some("stop");
    if r.failure.is_none() && steps >= max_turns {
        let how = if ended_on_answer {
            "its answer was forced by the cap"
        } else {
            "without a final answer"
        };
        r.failure = Some(failure(
            AgentFailureKind::MaxTurns,
            format!("opencode took {steps} steps (cap {max_turns}): {how}"),
        ));
    }
    r
}

/// How long opencode may stay quiet after reporting a rate limit before it counts as waiting it
/// out by itself.
pub const QUOTA_QUIET: Duration = Duration::from_secs(60);

/// Watches `opencode run --format json` while it runs (see the module documentation).
pub struct TurnWatch {
    max_turns: u32,
    steps: u32,
    /// A rate limit it reported, and when: cleared by any later event.
    quota: Option<(Duration, super::AgentFailure)>,
}

impl TurnWatch {
    pub fn new(max_turns: u32) -> TurnWatch {
        TurnWatch {
            max_turns,
            steps: 0,
            quota: None,
        }
    }
}

impl Watcher for TurnWatch {
    fn line(&mut self, line: &str, at: Duration) -> Option<super::AgentFailure> {
        let Ok(event) = serde_json::from_str::<Value>(line) else {
            // The first one counts: a retry that fails again logs again.
            if self.quota.is_none() {
                self.quota = logged_rate_limit(line).map(|f| (at, f));
            }
            return None;
        };
        self.quota = None;
        match text_at(&event, "/type").unwrap_or("") {
            "step_finish" => {
                self.steps += 1;
                // At the cap an answer ends the run by itself; anything else would go on.
                let answered = text_at(&event, "/part/reason") == Some("stop");
                (self.steps >= self.max_turns && !answered).then(|| {
                    failure(
                        AgentFailureKind::MaxTurns,
                        format!(
                            "opencode reached {} steps (cap {}) and was stopped: its `steps` setting does not hold a model that keeps calling tools",
                            self.steps, self.max_turns
                        ),
                    )
                })
            }
            "step_start" if self.steps >= self.max_turns => Some(failure(
                AgentFailureKind::MaxTurns,
                format!(
                    "opencode started step {} (cap {}) and was stopped",
                    self.steps + 1,
                    self.max_turns
                ),
            )),
            "error" => {
                let f = error_event(&event);
                if matches!(f.kind, AgentFailureKind::Quota { .. }) {
                    self.quota = Some((at, f));
                }
                None
            }
            _ => None,
        }
    }

    fn poll(&mut self, at: Duration) -> Option<super::AgentFailure> {
        let (since, f) = self.quota.as_ref()?;
        (at.saturating_sub(*since) >= QUOTA_QUIET).then(|| {
            let mut f = f.clone();
            f.message = format!(
                "{} (opencode went on waiting it out by itself and was stopped)",
                f.message
            );
            f
        })
    }
}

/// A rate limit in opencode's log (stderr): a `stream error` of the main model (not the small
/// one that names the session) whose error is a quota text.
fn logged_rate_limit(line: &str) -> Option<super::AgentFailure> {
    if !line.contains("message=\"stream error\"") || !line.contains(" small=false ") {
        return None;
    }
    let (_, error) = line.split_once(" error.error=\"")?;
    let error = error.strip_suffix('"').unwrap_or(error);
    let error = error.strip_prefix("AI_APICallError: ").unwrap_or(error);
    crate::model::is_quota_message(error).then(|| report::quota(error))
}

fn error_event(event: &Value) -> super::AgentFailure {
    let name = text_at(event, "/error/name").unwrap_or("error");
    let message = text_at(event, "/error/data/message").unwrap_or(name);
    let status = event
        .pointer("/error/data/statusCode")
        .and_then(Value::as_i64);
    let text = format!("{name}: {message}");
    if matches!(status, Some(429 | 529)) {
        // The hint may be in the response headers; the message is what a person reads.
        let mut f = report::quota(&text);
        if let AgentFailureKind::Quota { retry_hint } = &mut f.kind {
            *retry_hint = report::quota_hint(&event.to_string());
        }
        return f;
    }
    report::error_from_text(&text)
}

impl Adapter for Opencode {
    fn cli(&self) -> &'static Cli {
        &CLI
    }

    fn config(&self) -> &AdapterConfig {
        &self.config
    }

    fn args(&self, _files: &RunFiles, _scratch: &Path, given: &[(String, String)]) -> Vec<String> {
        let config = AdapterConfig {
            model: model_arg(&self.config, given),
            ..self.config.clone()
        };
        args(&config)
    }

    fn stdin(&self, prompt: &str) -> Option<Vec<u8>> {
        Some(prompt.as_bytes().to_vec())
    }

    fn env(&self, scratch: &Path, given: &[(String, String)]) -> Vec<(String, String)> {
        vec![
            (
                "OPENCODE_CONFIG_CONTENT".into(),
                config_with_providers(&self.config, scratch, given),
            ),
            ("OPENCODE_DISABLE_AUTOUPDATE".into(), "1".into()),
            // Its model list comes with it; models.dev is not on any allow list.
            ("OPENCODE_DISABLE_MODELS_FETCH".into(), "1".into()),
            // Language servers it would download for the files it touches (issue 50).
            ("OPENCODE_DISABLE_LSP_DOWNLOAD".into(), "1".into()),
        ]
    }

    fn parse(&self, out: &ProcessOutput, _scratch: &Path) -> Report {
        parse(&out.stdout_tail, self.config.max_turns)
    }

    fn watcher(&self) -> Option<Box<dyn Watcher>> {
        Some(Box::new(TurnWatch::new(self.config.max_turns)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AgentRole;
    use crate::executor::AgentFailureKind as K;
    use crate::model::Role;

    /// (fixture, max turns, completed, failure, cost, tokens in/out, final message)
    type Case<'a> = (
        &'a str,
        u32,
        bool,
        Option<K>,
        Option<f64>,
        (i64, i64),
        Option<&'a str>,
    );

    fn fixture(name: &str) -> String {
        crate::executor::recorded("opencode", name)
    }

    #[test]
    fn argv_and_config_per_role() {
        let mut worker = AdapterConfig::new(&CLI, AgentRole::Task(Role::Docser));
        worker.model = Some("anthropic/claude-sonnet-4-5".into());
        worker.max_turns = 25;
        assert_eq!(
            args(&worker).join(" "),
            "run --format json --print-logs --log-level WARN --model anthropic/claude-sonnet-4-5"
        );
        let planner = AdapterConfig::new(&CLI, AgentRole::Planner);
        assert_eq!(
            args(&planner).join(" "),
            "run --format json --print-logs --log-level WARN --agent plan"
        );
        let content: Value =
            serde_json::from_str(&config_content(&worker, Path::new("/tmp/s \"x\""))).unwrap();
        assert_eq!(content["agent"]["build"]["steps"], 25);
        assert_eq!(content["agent"]["plan"]["steps"], 25);
        assert_eq!(
            content["permission"]["external_directory"]["/tmp/s \"x\"/*"],
            "allow"
        );
    }

    #[test]
    fn recorded_outputs_are_read() {
        #[rustfmt::skip]
        let cases: &[Case] = &[
            ("success.jsonl", 100, true, None, Some(0.0108), (1500, 420), Some("Added subtraction")),
            ("rate_limited_429.jsonl", 100, false,
                Some(K::Quota { retry_hint: Some("resets at 00:00 UTC".into()) }), None, (0, 0), None),
            ("provider_error.jsonl", 100, false, Some(K::Config), None, (0, 0), None),
            ("tool_loop.jsonl", 3, true, Some(K::MaxTurns), Some(0.0432), (6000, 1680), None),
            ("tool_loop.jsonl", 100, true, None, Some(0.0432), (6000, 1680), None),
        ];
        for (name, max, completed, kind, cost, (input, output), message) in cases {
            let r = parse(&fixture(name), *max);
            assert_eq!(r.completed, *completed, "{name}");
            assert_eq!(r.failure.as_ref().map(|f| f.kind.clone()), *kind, "{name}");
            assert_eq!(r.cost_usd.map(|c| (c * 1e6).round() / 1e6), *cost, "{name}");
            assert_eq!(
                (r.input_tokens, r.output_tokens),
                (*input, *output),
                "{name}"
            );
            assert_eq!(
                r.final_message.as_deref().map(|m| &m[..m.len().min(17)]),
                *message,
                "{name}"
            );
            assert!(
                r.session_id
                    .as_deref()
                    .is_some_and(|s| s.starts_with("ses_")),
                "{name}"
            );
        }
        let quota = parse(&fixture("rate_limited_429.jsonl"), 100)
            .failure
            .unwrap();
        assert!(
            quota
                .message
                .starts_with("APIError: This request would exceed"),
            "{quota:?}"
        );
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let truncated = fixture("truncated.jsonl");
        for text in [
            "",
            "opencode: command failed\n",
            "{\"type\":\"text\"",
            truncated.as_str(),
        ] {
            let r = parse(text, 100);
            assert!(!r.completed, "{text:?}");
            assert!(
                r.failure.is_none() || r.failure.as_ref().is_some_and(|f| f.kind == K::Error),
                "{text:?}"
            );
        }
        // Nothing readable at all is reported as such.
        assert_eq!(parse("", 100).failure.map(|f| f.kind), Some(K::Error));
    }

    /// Feeds a fixture's lines to a watch, one second apart; the line number it stopped at.
    fn watch_lines(
        watch: &mut TurnWatch,
        text: &str,
    ) -> Option<(usize, super::super::AgentFailure)> {
        text.lines().enumerate().find_map(|(i, line)| {
            watch
                .line(line, Duration::from_secs(i as u64))
                .map(|f| (i, f))
        })
    }

    /// Issue 18: `steps` is only a prompt; the watch stops the CLI at the cap.
    #[test]
    fn the_turn_cap_is_enforced_while_it_runs() {
        let tool_loop = fixture("tool_loop.jsonl");
        let finishes: Vec<usize> = tool_loop
            .lines()
            .enumerate()
            .filter(|(_, l)| l.contains("\"type\":\"step_finish\""))
            .map(|(i, _)| i)
            .collect();
        let (at, f) = watch_lines(&mut TurnWatch::new(3), &tool_loop).expect("stopped");
        assert_eq!(at, finishes[2], "at the third step_finish");
        assert_eq!(f.kind, K::MaxTurns);
        assert!(
            f.message
                .contains("reached 3 steps (cap 3) and was stopped"),
            "{}",
            f.message
        );
        assert_eq!(watch_lines(&mut TurnWatch::new(100), &tool_loop), None);
        // An answer at the cap ends the run by itself: not stopped, but read as capped.
        let success = fixture("success.jsonl");
        assert_eq!(watch_lines(&mut TurnWatch::new(1), &success), None);
        let capped = parse(&success, 1).failure.expect("capped");
        assert_eq!(capped.kind, K::MaxTurns);
        assert!(
            capped.message.contains("forced by the cap"),
            "{}",
            capped.message
        );
        assert_eq!(parse(&success, 2).failure, None);
    }

    /// Issue 18: a rate limit opencode waits out by itself is a quota wait, not a timeout: one it
    /// reported as an event, or one only its log on stderr shows (a long `retry-after`: no event
    /// at all, recorded with the real CLI).
    #[test]
    fn a_rate_limit_waited_out_inside_opencode_is_a_quota() {
        for name in ["rate_limited_429.jsonl", "rate_limited_429_retry.log"] {
            let limited = fixture(name);
            let mut watch = TurnWatch::new(100);
            assert_eq!(watch_lines(&mut watch, &limited), None, "{name}");
            let last = Duration::from_secs(limited.lines().count() as u64 - 1);
            assert_eq!(
                watch.poll(last + Duration::from_secs(30)),
                None,
                "{name}: not yet"
            );
            let f = watch.poll(last + QUOTA_QUIET).expect("stopped");
            assert!(matches!(f.kind, K::Quota { .. }), "{name}: {f:?}");
            assert!(
                f.message.starts_with("This request would exceed")
                    || f.message.starts_with("APIError: This request would exceed"),
                "{name}: {}",
                f.message
            );
            assert!(
                f.message
                    .ends_with("(opencode went on waiting it out by itself and was stopped)"),
                "{name}: {}",
                f.message
            );
            // It went on by itself: no quota.
            let mut watch = TurnWatch::new(100);
            watch_lines(&mut watch, &limited);
            watch.line(fixture("success.jsonl").lines().next().unwrap(), last);
            assert_eq!(watch.poll(last + QUOTA_QUIET * 2), None, "{name}");
        }
        let log = fixture("rate_limited_429_retry.log");
        // The small model's failure (the session title) is not the run's.
        let title = log
            .lines()
            .filter(|l| l.contains("small=true"))
            .collect::<Vec<_>>()
            .join("\n");
        let mut watch = TurnWatch::new(100);
        assert_eq!(watch_lines(&mut watch, &title), None);
        assert_eq!(watch.poll(Duration::from_secs(3600)), None);
        // Other errors in the log are left to the events opencode prints about them.
        let other = "timestamp=x level=ERROR message=\"stream error\" small=false agent=build error.error=\"AI_APICallError: invalid x-api-key\"";
        assert_eq!(logged_rate_limit(other), None);
    }
}

//! The `codex` adapter: OpenAI's Codex CLI (`codex`, npm `@openai/codex`). Not for: whether it
//! has a key (`executor::keys`), how its report, the exit and the result file make one priced
//! result (`executor::report`), or confining it (`sandbox`, set up by `runner::agent`).
//!
//! Runs `codex <QUIET> [-c openai_base_url="<OPENAI_BASE_URL>"] exec --json --color never
//! --skip-git-repo-check --sandbox danger-full-access [--model M]
//! --output-last-message <scratch>/last-message.txt -` with the prompt on stdin (`-`), for every
//! role. codex's own sandbox (bubblewrap) cannot start inside opentiger's Landlock domain (issue
//! 39, measured with 0.169.0: `mkdir /tmp/codex-daemon-0` refused, then the `uid_map` write,
//! then `bwrap: Failed to make / slave`): its shell tool then fails every command and codex
//! reports success with nothing changed. So codex's sandbox is off and opentiger's confinement
//! holds instead (Landlock, the private home, the network door); the judge and the planner are
//! read-only by their prompt, and what they leave in their workspace is never read back.
//! `codex exec` never asks for approval. codex refuses to make its helper programs
//! (`apply_patch`) under its `TMPDIR` (issue 39), which holds the private home: it is given
//! `<scratch>/tmp` as `TMPDIR` instead, beside the home, not above it. `codex exec` reads its
//! key from `CODEX_API_KEY` only and ignores `OPENAI_BASE_URL` (issue 18), so a passed
//! `OPENAI_API_KEY` is given as `CODEX_API_KEY` when that is not set, and a passed
//! `OPENAI_BASE_URL` becomes the `-c` override above. Codex has no turn cap of its own:
//! opentiger keeps `agents.<role>.max_turns` for it, counting its tool calls (`codex_turns`).
//!
//! With a configured provider (issue 50) codex gets a model provider of its own instead:
//! `-c model_providers.opentiger={name, base_url = <its route on the proxy>, env_key =
//! "OPENTIGER_PROVIDER_KEY", wire_api = "responses", supports_websockets}` and `-c
//! model_provider="opentiger"`: it speaks Responses only, and for a provider of chat
//! completions the proxy translates. Its own traffic is turned off on every run ([`QUIET`]):
//! `features.plugins` (its plugin sync with github.com and chatgpt.com), `analytics.enabled`
//! (ab.chatgpt.com), `check_for_update_on_startup` (measured with 0.169.0: with them, no
//! request but the model's).
//!
//! Reads the JSON-lines events: `thread.started` (session id), `item.completed` of type
//! `agent_message` (the final message; `--output-last-message` is the fallback when the stream's
//! start was cut), `turn.completed` (token usage, summed: codex reports no cost, so the run is
//! priced with `agents.<role>.pricing`), `turn.failed` (a failure; a quota text makes it a quota
//! failure). `error` events are notes — codex prints "Reconnecting... 2/5" ones and carries on —
//! and only explain a run that never completed its turn.
//!
//! Without a network codex prints "Reconnecting…" until it is killed (issue 18: six 30-minute
//! timeouts). [`ReconnectWatch`] stops it after [`MAX_RECONNECTS`] reconnects, or
//! [`RECONNECT_STALL`] after the first, with no progress in between: a transient failure
//! naming the last reconnect message. A reconnect after its retries of a rate-limited request
//! ran out stops it at once, as a quota failure (codex shows no `retry-after`).

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::adapter::{Adapter, Both, Watcher};
use super::cli::{AdapterConfig, Cli, RunFiles};
use super::codex_turns::ToolCap;
use super::report::{self, int, json_lines, text_at, Report};
use crate::process::ProcessOutput;

pub const CLI: Cli = Cli {
    kind: "codex",
    program: "codex",
    install: "npm install -g @openai/codex",
    keys: &["CODEX_API_KEY", "OPENAI_API_KEY"],
    logins: &[".codex/auth.json"],
    background: &[
        "github.com",
        "api.github.com",
        "chatgpt.com",
        "ab.chatgpt.com",
    ],
    // codex 0.169.0 with no --model.
    default_models: &["gpt-6.1-sol"],
};

pub struct Codex {
    config: AdapterConfig,
}

impl Codex {
    pub fn new(config: AdapterConfig) -> Codex {
        Codex { config }
    }
}

/// Where codex writes its last message (`--output-last-message`).
fn last_message_file(scratch: &Path) -> PathBuf {
    scratch.join("last-message.txt")
}

/// The arguments after `codex` (the prompt goes on stdin).
pub fn args(config: &AdapterConfig, scratch: &Path) -> Vec<String> {
    let mut args: Vec<String> = [
        "exec",
        "--json",
        "--color",
        "never",
        "--skip-git-repo-check",
        "--sandbox",
        // Its bubblewrap cannot start inside opentiger's Landlock domain (module docs).
        "danger-full-access",
    ]
    .map(String::from)
    .to_vec();
    if let Some(model) = &config.model {
        args.extend(["--model".to_string(), model.clone()]);
    }
    args.extend([
        "--output-last-message".to_string(),
        last_message_file(scratch).display().to_string(),
    ]);
    args.push("-".to_string());
    args
}

/// A variable of the agent's environment, when set and not blank.
fn lookup<'a>(given: &'a [(String, String)], name: &str) -> Option<&'a str> {
    given
        .iter()
        .find(|(k, v)| k == name && !v.trim().is_empty())
        .map(|(_, v)| v.as_str())
}

/// `codex exec` reads its key from `CODEX_API_KEY` only (issue 18: with `OPENAI_API_KEY` alone
/// every request gets a 401), so a passed `OPENAI_API_KEY` is given under that name too.
pub fn key_env(given: &[(String, String)]) -> Vec<(String, String)> {
    match (
        lookup(given, "CODEX_API_KEY"),
        lookup(given, "OPENAI_API_KEY"),
    ) {
        (None, Some(key)) => vec![("CODEX_API_KEY".to_string(), key.to_string())],
        _ => Vec::new(),
    }
}

/// What keeps codex from its own traffic (module docs), before the subcommand.
pub const QUIET: &[&str] = &[
    "-c",
    "features.plugins=false",
    "-c",
    "analytics.enabled=false",
    "-c",
    "check_for_update_on_startup=false",
];

/// codex ignores `OPENAI_BASE_URL`; its configuration key `openai_base_url`, set with `-c`
/// before the subcommand, is what it reads. The value is a TOML string.
pub fn base_url_override(url: Option<&str>) -> Vec<String> {
    let Some(url) = url else {
        return Vec::new();
    };
    let quoted = url.replace('\\', "\\\\").replace('"', "\\\"");
    vec!["-c".to_string(), format!("openai_base_url=\"{quoted}\"")]
}

/// codex asks the model API to search the web itself (`web_search`, on by default: its
/// Responses requests carry a `web_search` tool), which opentiger's proxy refuses unless
/// `sandbox.network.provider_tools` lists `web_search` (issue 46): when its model API is
/// routed through a door that does not allow it (`OPENAI_BASE_URL` and the door's
/// `OPENTIGER_PROVIDER_TOOLS`), codex is told to leave the tool out.
pub fn web_search_override(given: &[(String, String)]) -> Vec<String> {
    let allowed = given
        .iter()
        .find(|(k, _)| k == crate::egress::PROVIDER_TOOLS_VAR)
        .map(|(_, tools)| tools.split(',').any(|t| t.trim() == "web_search"));
    let base = lookup(given, "OPENAI_BASE_URL")
        .or_else(|| lookup(given, crate::egress::PROVIDER_VARS.base_url));
    match (base, allowed) {
        (Some(_), Some(false)) => vec!["-c".to_string(), "web_search=\"disabled\"".to_string()],
        (Some(_) | None, Some(true) | None) | (None, Some(false)) => Vec::new(),
    }
}

/// codex makes no helper programs under its `TMPDIR` ("Refusing to create helper binaries under
/// temporary dir"), and the private home is in the scratch folder, the agent's `TMPDIR`: when
/// the home is beneath the given `TMPDIR`, codex gets `<scratch>/tmp` (made here, private,
/// removed with the scratch folder) instead.
pub fn temp_dir(scratch: &Path, given: &[(String, String)]) -> Vec<(String, String)> {
    let (Some(home), Some(tmp)) = (lookup(given, "HOME"), lookup(given, "TMPDIR")) else {
        return Vec::new();
    };
    if !Path::new(home).starts_with(tmp) {
        return Vec::new();
    }
    let own = scratch.join("tmp");
    use std::os::unix::fs::DirBuilderExt;
    match std::fs::DirBuilder::new().mode(0o700).create(&own) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            tracing::warn!(path = %own.display(), error = %e, "could not make codex's TMPDIR");
            return Vec::new();
        }
    }
    if Path::new(home).starts_with(&own) {
        return Vec::new();
    }
    vec![("TMPDIR".to_string(), own.display().to_string())]
}

/// Reads `codex exec --json` output; `last_message` is the `--output-last-message` file.
pub fn parse(stdout: &str, last_message: Option<&str>) -> Report {
    let (events, _) = json_lines(stdout);
    if events.is_empty() && last_message.is_none() {
        return Report::unreadable("codex printed no JSON events", stdout);
    }
    let mut r = Report::default();
    let mut last_error: Option<String> = None;
    for event in &events {
        match text_at(event, "/type").unwrap_or("") {
            "thread.started" => r.session_id = text_at(event, "/thread_id").map(String::from),
            "item.completed" => match text_at(event, "/item/type") {
                Some("agent_message") => {
                    r.final_message = text_at(event, "/item/text").map(String::from);
                }
                Some("error") => last_error = text_at(event, "/item/message").map(String::from),
                _ => {}
            },
            "turn.completed" => {
                r.completed = true;
                r.input_tokens += int(event, "/usage/input_tokens");
                r.cached_input_tokens += int(event, "/usage/cached_input_tokens");
                r.output_tokens += int(event, "/usage/output_tokens");
            }
            "turn.failed" => {
                let message = text_at(event, "/error/message")
                    .unwrap_or("codex reported a failed turn without a message");
                r.failure = Some(report::error_from_text(message));
            }
            "error" => last_error = text_at(event, "/message").map(String::from),
            _ => {}
        }
    }
    if r.final_message.is_none() {
        r.final_message = last_message
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(String::from);
    }
    if !r.completed && r.failure.is_none() {
        if let Some(error) = last_error {
            r.failure = Some(report::error_from_text(&error));
        }
    }
    r
}

/// Reconnects in a row, with no progress between them, after which codex is stopped.
pub const MAX_RECONNECTS: u32 = 10;
/// How long after its first reconnect, with no progress since, codex is stopped.
pub const RECONNECT_STALL: Duration = Duration::from_secs(120);

/// Watches `codex exec --json` for a reconnect loop (see the module documentation).
#[derive(Default)]
pub struct ReconnectWatch {
    reconnects: u32,
    first: Option<Duration>,
    last: String,
}

impl ReconnectWatch {
    fn stop(&self, at: Duration) -> super::AgentFailure {
        let since = self.first.map_or(0, |f| at.saturating_sub(f).as_secs());
        report::failure(
            super::AgentFailureKind::Error,
            format!(
                "codex could not reach its provider: {} reconnects in {since}s with no progress, stopped; last: {}",
                self.reconnects, self.last
            ),
        )
    }
}

impl Watcher for ReconnectWatch {
    fn line(&mut self, line: &str, at: Duration) -> Option<super::AgentFailure> {
        let Ok(event) = serde_json::from_str::<serde_json::Value>(line) else {
            return None;
        };
        let kind = text_at(&event, "/type").unwrap_or("");
        let message = text_at(&event, "/message").unwrap_or("");
        if kind == "error" && message.starts_with("Reconnecting") {
            // Its requests were refused with 429 until its retries ran out; it would go on
            // (issue 18, recorded: `Reconnecting... 1/5 (exceeded retry limit, last status: 429
            // Too Many Requests)`, then quiet until the timeout).
            if message.contains("exceeded retry limit") && crate::model::is_quota_message(message) {
                return Some(report::quota(message));
            }
            self.reconnects += 1;
            self.first.get_or_insert(at);
            self.last = message.to_string();
            return (self.reconnects >= MAX_RECONNECTS).then(|| self.stop(at));
        }
        // Every other event is progress (issue 39): the "Falling back from WebSockets to HTTPS"
        // item (of type `error`) starts another transport, which may then work for minutes
        // without printing an item for its commands.
        *self = ReconnectWatch::default();
        None
    }

    fn poll(&mut self, at: Duration) -> Option<super::AgentFailure> {
        let first = self.first?;
        (at.saturating_sub(first) >= RECONNECT_STALL).then(|| self.stop(at))
    }
}

impl Adapter for Codex {
    fn cli(&self) -> &'static Cli {
        &CLI
    }

    fn config(&self) -> &AdapterConfig {
        &self.config
    }

    fn args(&self, _files: &RunFiles, scratch: &Path, given: &[(String, String)]) -> Vec<String> {
        let mut all: Vec<String> = QUIET.iter().map(|a| a.to_string()).collect();
        match super::door::provider(given) {
            Some(door) => all.extend(super::door::codex_provider(&door)),
            None => all.extend(base_url_override(lookup(given, "OPENAI_BASE_URL"))),
        }
        all.extend(web_search_override(given));
        all.extend(args(&self.config, scratch));
        all
    }

    fn stdin(&self, prompt: &str) -> Option<Vec<u8>> {
        Some(prompt.as_bytes().to_vec())
    }

    fn env(&self, scratch: &Path, given: &[(String, String)]) -> Vec<(String, String)> {
        let mut env = key_env(given);
        env.extend(temp_dir(scratch, given));
        env
    }

    fn parse(&self, out: &ProcessOutput, scratch: &Path) -> Report {
        let last = std::fs::read_to_string(last_message_file(scratch)).ok();
        parse(&out.stdout_tail, last.as_deref())
    }

    fn watcher(&self) -> Option<Box<dyn Watcher>> {
        Some(Box::new(Both(
            ReconnectWatch::default(),
            ToolCap::new(self.config.max_turns),
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::AgentRole;
    use crate::executor::AgentFailureKind as K;
    use crate::model::Role;

    /// (fixture, last-message file, completed, failure, tokens in/cached/out, final message)
    type Case<'a> = (
        &'a str,
        Option<&'a str>,
        bool,
        Option<K>,
        (i64, i64, i64),
        Option<&'a str>,
    );

    fn fixture(name: &str) -> String {
        crate::executor::recorded("codex", name)
    }

    #[test]
    fn argv_per_role() {
        let scratch = Path::new("/s");
        let mut worker = AdapterConfig::new(&CLI, AgentRole::Task(Role::Tester));
        worker.model = Some("gpt-5-codex".into());
        assert_eq!(
            args(&worker, scratch).join(" "),
            "exec --json --color never --skip-git-repo-check --sandbox danger-full-access \
             --model gpt-5-codex --output-last-message /s/last-message.txt -"
        );
        // Issue 39: codex's sandbox is off for the judge and the planner too (bubblewrap cannot
        // start inside Landlock); opentiger's confinement holds.
        for role in [AgentRole::Judge, AgentRole::Planner] {
            assert_eq!(
                args(&AdapterConfig::new(&CLI, role), scratch).join(" "),
                "exec --json --color never --skip-git-repo-check --sandbox danger-full-access \
                 --output-last-message /s/last-message.txt -"
            );
        }
    }

    /// Issue 39: codex refuses helper programs under its `TMPDIR`; the private home is there.
    #[test]
    fn codex_gets_a_temp_folder_beside_its_home_not_above_it() {
        let scratch = tempfile::tempdir().unwrap();
        let s = scratch.path();
        let pair = |k: &str, v: &Path| (k.to_string(), v.display().to_string());
        let given = [pair("HOME", &s.join("home")), pair("TMPDIR", s)];
        assert_eq!(temp_dir(s, &given), [pair("TMPDIR", &s.join("tmp"))]);
        let mode = std::fs::metadata(s.join("tmp")).unwrap().permissions();
        assert_eq!(
            std::os::unix::fs::PermissionsExt::mode(&mode) & 0o777,
            0o700
        );
        // Again (a second run in the same folder), and a home elsewhere: left alone.
        assert_eq!(temp_dir(s, &given).len(), 1);
        let elsewhere = [pair("HOME", Path::new("/home/runner")), pair("TMPDIR", s)];
        assert!(temp_dir(s, &elsewhere).is_empty());
        assert!(temp_dir(s, &[]).is_empty());
    }

    #[test]
    fn the_key_and_base_url_reach_codex_the_way_it_reads_them() {
        let given = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
            pairs
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        assert_eq!(
            key_env(&given(&[("OPENAI_API_KEY", "sk-1")])),
            given(&[("CODEX_API_KEY", "sk-1")])
        );
        assert_eq!(
            key_env(&given(&[
                ("OPENAI_API_KEY", "sk-1"),
                ("CODEX_API_KEY", "sk-2")
            ])),
            vec![]
        );
        assert_eq!(key_env(&given(&[("OPENAI_API_KEY", " ")])), vec![]);
        assert_eq!(key_env(&[]), vec![]);
        assert_eq!(
            base_url_override(Some("http://127.0.0.1:8080/v1")),
            ["-c", "openai_base_url=\"http://127.0.0.1:8080/v1\""]
        );
        assert_eq!(
            base_url_override(Some("a\"b\\c"))[1],
            "openai_base_url=\"a\\\"b\\\\c\""
        );
        assert!(base_url_override(None).is_empty());
        let door = |tools: &str| {
            given(&[
                ("OPENAI_BASE_URL", "http://127.0.0.1:3128/openai/v1"),
                (crate::egress::PROVIDER_TOOLS_VAR, tools),
            ])
        };
        assert_eq!(
            web_search_override(&door("")),
            ["-c", "web_search=\"disabled\""]
        );
        assert_eq!(
            web_search_override(&door("mcp")),
            ["-c", "web_search=\"disabled\""]
        );
        assert!(web_search_override(&door("mcp,web_search")).is_empty());
        assert!(
            web_search_override(&[]).is_empty(),
            "no door: codex's own choice"
        );
        let other_route = given(&[(crate::egress::PROVIDER_TOOLS_VAR, "")]);
        assert!(
            web_search_override(&other_route).is_empty(),
            "its own API not through the door: nothing to refuse there"
        );
    }

    #[test]
    fn recorded_outputs_are_read() {
        #[rustfmt::skip]
        let cases: &[Case] = &[
            ("success.jsonl", None, true, None, (24763, 24448, 122), Some("Added `sub`")),
            // `unexpected status 401 Unauthorized`: the key (issue 18), not a test failure.
            ("turn_failed.jsonl", None, false, Some(K::Config), (0, 0, 0), None),
            ("usage_limit.jsonl", None, false, Some(K::Quota { retry_hint: None }), (0, 0, 0), None),
            // Killed while it retried a network that was not there: an error, not a quota.
            ("network_retries.jsonl", None, false, Some(K::Error), (0, 0, 0), None),
            // The stream's start was cut: the last message still comes from the file.
            ("truncated.jsonl", Some("Done."), false, None, (0, 0, 0), Some("Done.")),
        ];
        for (name, last, completed, kind, (input, cached, output), message) in cases {
            let r = parse(&fixture(name), *last);
            assert_eq!(r.completed, *completed, "{name}");
            assert_eq!(r.failure.as_ref().map(|f| f.kind.clone()), *kind, "{name}");
            assert_eq!(
                (r.input_tokens, r.cached_input_tokens, r.output_tokens),
                (*input, *cached, *output),
                "{name}"
            );
            let got = r.final_message.as_deref();
            assert!(
                got.unwrap_or("").starts_with(message.unwrap_or(""))
                    && got.is_some() == message.is_some(),
                "{name}: {got:?}"
            );
        }
        let success = parse(&fixture("success.jsonl"), None);
        assert_eq!(
            success.session_id.as_deref(),
            Some("0199a213-81c0-7800-8aa1-bbab2a035a53")
        );
        assert_eq!(success.cost_usd, None, "codex reports tokens only");
        let quota = parse(&fixture("usage_limit.jsonl"), None).failure.unwrap();
        assert!(quota.message.contains("try again at 3:28 PM"), "{quota:?}");
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        for text in ["", "not json\n", "{\"type\":", "\u{0}\u{ffff}"] {
            let r = parse(text, None);
            assert!(!r.completed, "{text:?}");
            assert_eq!(r.failure.map(|f| f.kind), Some(K::Error), "{text:?}");
        }
    }

    /// Issue 18: the no-network reconnect loop is stopped in bounded time, not at the timeout.
    #[test]
    fn a_reconnect_loop_is_stopped() {
        let secs = Duration::from_secs;
        let recorded = fixture("network_retries.jsonl");
        let mut watch = ReconnectWatch::default();
        for (i, line) in recorded.lines().enumerate() {
            assert_eq!(watch.line(line, secs(i as u64)), None, "{line}");
        }
        // The fallback to HTTPS starts the count again (issue 39); its 5 reconnects, then
        // nothing for a while: stopped by the stall bound.
        assert_eq!(watch.poll(secs(60)), None);
        let f = watch.poll(secs(7) + RECONNECT_STALL).expect("stopped");
        assert_eq!(f.kind, K::Error);
        assert!(
            f.message.starts_with("codex could not reach its provider: 5 reconnects in 120s with no progress, stopped; last: Reconnecting... waiting for network"),
            "{}",
            f.message
        );
        // Many reconnects quickly: stopped at the count.
        let reconnect = r#"{"type":"error","message":"Reconnecting... waiting for network"}"#;
        let mut watch = ReconnectWatch::default();
        let stopped = (0..20).find_map(|i| watch.line(reconnect, secs(i)).map(|_| i));
        assert_eq!(stopped, Some(u64::from(MAX_RECONNECTS) - 1));
        // Progress in between starts the count again.
        let mut watch = ReconnectWatch::default();
        let progress = r#"{"type":"item.completed","item":{"type":"agent_message","text":"x"}}"#;
        for i in 0..30 {
            let line = if i % 5 == 4 { progress } else { reconnect };
            assert_eq!(watch.line(line, secs(i)), None);
        }
        assert_eq!(watch.poll(secs(29)), None);
        // The success fixture never trips it.
        let mut watch = ReconnectWatch::default();
        for line in fixture("success.jsonl").lines() {
            assert_eq!(watch.line(line, secs(1)), None);
        }
        assert_eq!(watch.poll(secs(10_000)), None);
    }

    /// Issue 39: behind an endpoint without websockets codex falls back to HTTPS and then works
    /// for minutes printing nothing; only a stall after that stops it.
    #[test]
    fn a_fallback_to_https_is_progress() {
        let secs = Duration::from_secs;
        let mut watch = ReconnectWatch::default();
        for (i, line) in fixture("websocket_fallback.jsonl").lines().enumerate() {
            assert_eq!(watch.line(line, secs(i as u64)), None, "{line}");
        }
        assert_eq!(
            watch.poll(secs(10_000)),
            None,
            "no reconnect since the fallback"
        );
        // The same reconnects without the fallback item would have stopped it.
        let mut watch = ReconnectWatch::default();
        for line in fixture("websocket_fallback.jsonl").lines().take(7) {
            assert_eq!(watch.line(line, secs(1)), None, "{line}");
        }
        assert!(watch.poll(secs(1) + RECONNECT_STALL).is_some());
    }

    /// Issue 18: recorded against the stand-in answering 429: quota at once, not a stall.
    #[test]
    fn a_rate_limit_past_its_retries_is_a_quota_at_once() {
        let recorded = fixture("rate_limited_429.jsonl");
        let mut watch = ReconnectWatch::default();
        let (at, f) = recorded
            .lines()
            .enumerate()
            .find_map(|(i, l)| watch.line(l, Duration::from_secs(i as u64)).map(|f| (i, f)))
            .expect("stopped");
        assert_eq!(at, recorded.lines().count() - 1, "at the 429 reconnect");
        assert!(matches!(f.kind, K::Quota { .. }), "{f:?}");
        assert!(
            f.message.contains("last status: 429 Too Many Requests"),
            "{}",
            f.message
        );
        // The WebSocket fallback before it (404s) is no quota.
        let mut watch = ReconnectWatch::default();
        for line in recorded.lines().take(8) {
            assert_eq!(watch.line(line, Duration::ZERO), None, "{line}");
        }
    }
}

//! What a CLI adapter read from its CLI's output ([`Report`]), and how that, the process exit
//! and the result file become one [`AgentResult`] ([`assemble`]). Pure, apart from reading the
//! result file. Not for: reading one CLI's output (each adapter's `parse`, e.g.
//! `executor::codex`), finding the JSON in a reply (`executor::json_answer`), or what a failure
//! means for the task (`engine::outcome`).
//!
//! Rules (DESIGN §6, and the peers' false-green bugs):
//! - the CLI's own report wins over its exit code: exit 0 with an error report is a failure
//!   (`AgentExit::Failed(Some(0))`), and exit 0 without any report of finishing is one too;
//! - a non-zero exit without a report is an error classified from the output's last lines, and a
//!   quota or rate-limit message there makes it a quota failure; a timeout stays a timeout unless
//!   the output shows the CLI was stuck waiting out a quota;
//! - the result file wins for what the agent knows (its JSON, its summary); spend is what the CLI
//!   measured (its USD, else its tokens priced by `agents.<role>.pricing`), and only then what the
//!   agent wrote about itself;
//! - the judge and the planner run read-only, so they may not be able to write the result file:
//!   their JSON is then the last JSON object of the CLI's final message.

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::cli::{exit_of, AdapterConfig, RunFiles, TAIL_BYTES};
use super::{AgentExit, AgentFailure, AgentFailureKind, AgentResult};
use crate::config::AgentRole;
use crate::model::{is_agent_config_message, is_quota_message};
use crate::process::ProcessOutput;

/// What a CLI said about its run, read from its machine-readable output.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Report {
    /// The CLI said it got to the end (a result event, a completed turn, a reply).
    pub completed: bool,
    /// The agent's final message.
    pub final_message: Option<String>,
    /// USD, when the CLI reports it.
    pub cost_usd: Option<f64>,
    /// Input tokens, cache reads and writes included.
    pub input_tokens: i64,
    /// The part of `input_tokens` served from a cache (priced separately when configured).
    pub cached_input_tokens: i64,
    /// Output tokens, reasoning included.
    pub output_tokens: i64,
    pub session_id: Option<String>,
    pub failure: Option<AgentFailure>,
}

impl Report {
    /// A report of output that could not be read at all.
    pub fn unreadable(what: &str, output: &str) -> Report {
        Report {
            failure: Some(failure(
                AgentFailureKind::Error,
                format!("{what}: {}", last_lines(output, 5)),
            )),
            ..Report::default()
        }
    }
}

pub(super) fn failure(kind: AgentFailureKind, message: String) -> AgentFailure {
    AgentFailure { kind, message }
}

/// An error text as a failure: a quota failure (with its hint) or a configuration error when it
/// says so, else an error.
pub(super) fn error_from_text(text: &str) -> AgentFailure {
    let text = text.trim();
    if is_quota_message(text) {
        return quota(text);
    }
    if is_agent_config_message(text) {
        return failure(AgentFailureKind::Config, text.to_string());
    }
    failure(AgentFailureKind::Error, text.to_string())
}

/// A quota failure with the hint found in `text`, if any.
pub(super) fn quota(text: &str) -> AgentFailure {
    failure(
        AgentFailureKind::Quota {
            retry_hint: quota_hint(text),
        },
        text.trim().to_string(),
    )
}

/// The judge and the planner review and plan; they must not edit the workspace.
pub(super) fn read_only(role: AgentRole) -> bool {
    match role {
        AgentRole::Judge | AgentRole::Planner | AgentRole::Detector => true,
        AgentRole::Task(_) => false,
    }
}

/// The key at the top of the JSON a read-only role answers with (issue 39).
fn answer_key(role: AgentRole) -> Option<&'static str> {
    match role {
        AgentRole::Judge | AgentRole::Detector => Some("verdict"),
        AgentRole::Planner => Some("tasks"),
        AgentRole::Task(_) => None,
    }
}

/// The prompt as the CLI gets it: a read-only role is told where its JSON is read from when it
/// cannot write the result file.
pub(super) fn prompt_for(role: AgentRole, prompt: &str) -> String {
    if !read_only(role) {
        return prompt.to_string();
    }
    format!(
        "{prompt}\n\n---\nYou run read-only here, so you may not be able to write \
         `$OPENTIGER_RESULT_FILE`. If you cannot, end your final reply with the JSON object \
         alone (nothing after it): it is read from there.\n"
    )
}

/// The agent's result from the CLI's report, the process and the result file (see the module
/// documentation for the rules).
pub(super) fn assemble(
    report: Report,
    out: &ProcessOutput,
    files: &RunFiles,
    role: AgentRole,
    config: &AdapterConfig,
) -> AgentResult {
    let mut exit = exit_of(out.status);
    let parsed_failure = report.failure.clone();
    let failure = match exit {
        AgentExit::Finished if parsed_failure.is_none() && !report.completed => Some(failure(
            AgentFailureKind::Error,
            format!(
                "`{}` exited 0 without reporting that it finished; its output ends with: {}",
                config.program,
                last_lines(&out.output_tail, 5)
            ),
        )),
        AgentExit::Finished => parsed_failure,
        AgentExit::Failed(_) => parsed_failure.or_else(|| {
            let text = if out.stderr_tail.trim().is_empty() {
                &out.stdout_tail
            } else {
                &out.stderr_tail
            };
            Some(error_from_text(&last_lines(text, 20)))
        }),
        // A CLI that waits out a rate limit by itself until it is killed was stuck on a quota.
        // When the CLI's own report names another error, the kill was not about a quota.
        AgentExit::TimedOut => match parsed_failure {
            Some(f) if is_quota(&f) => Some(f),
            Some(_) => None,
            None => {
                let tail = last_lines(&out.output_tail, 20);
                is_quota_message(&tail).then(|| quota(&tail))
            }
        },
    };
    if failure.is_some() && exit == AgentExit::Finished {
        exit = AgentExit::Failed(Some(0));
    }

    let read = files.read_result();
    let result = read.json.or_else(|| {
        read_only(role)
            .then(|| {
                report
                    .final_message
                    .as_deref()
                    .and_then(|m| super::json_answer::extract_answer(m, answer_key(role)))
            })
            .flatten()
    });
    let mut r = AgentResult::finished(result);
    r.exit = exit;
    r.result_error = read.error;
    r.result_refused = read.refused;
    if r.summary.is_none() {
        r.summary = report
            .final_message
            .as_deref()
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(|m| cap_chars(m, 4000));
    }
    let measured = report.input_tokens > 0 || report.output_tokens > 0;
    let cli_cost = report.cost_usd.filter(|c| c.is_finite() && *c > 0.0);
    let priced = config.pricing.as_ref().filter(|_| measured).map(|p| {
        p.cost(
            report.input_tokens,
            report.cached_input_tokens,
            report.output_tokens,
        )
    });
    if let Some(cost) = cli_cost.or(priced) {
        r.cost_usd = cost;
    }
    if measured {
        r.input_tokens = report.input_tokens;
        r.output_tokens = report.output_tokens;
    }
    if report.session_id.is_some() {
        r.session_id = report.session_id;
    }
    r.output_tail = tail_str(&out.output_tail, TAIL_BYTES).to_string();
    if let Some(f) = &failure {
        r.output_tail.push_str(&format!(
            "\n[opentiger] {}: {}",
            kind_text(&f.kind),
            cap_chars(&f.message, 1000)
        ));
    }
    r.failure = failure;
    r
}

fn is_quota(f: &AgentFailure) -> bool {
    matches!(f.kind, AgentFailureKind::Quota { .. })
}

fn kind_text(kind: &AgentFailureKind) -> String {
    match kind {
        AgentFailureKind::Quota {
            retry_hint: Some(h),
        } => format!("quota or rate limit ({h})"),
        AgentFailureKind::Quota { retry_hint: None } => "quota or rate limit".to_string(),
        AgentFailureKind::MaxTurns => "stopped at its turn cap".to_string(),
        AgentFailureKind::Budget => "stopped at its spending cap".to_string(),
        AgentFailureKind::Config => {
            "the agent CLI cannot reach its model as configured".to_string()
        }
        AgentFailureKind::Error => "the agent CLI reported an error".to_string(),
    }
}

/// When a quota comes back, as a phrase the quota backoff reads (`engine::backoff`), from the
/// forms CLIs print that it does not read itself: an epoch after "limit reached|" or in a
/// `…-reset` header, "try again in 3 days 6 hours", a `retryDelay` inside an escaped response
/// body, a `retry-after` header in seconds.
pub(super) fn quota_hint(text: &str) -> Option<String> {
    let lower = text.to_lowercase();
    let epoch = ["limit reached|", "ratelimit-unified-reset\":\""]
        .iter()
        .find_map(|key| number_after(&lower, key))
        .and_then(|secs| DateTime::<Utc>::from_timestamp(secs, 0));
    if let Some(at) = epoch {
        return Some(format!("resets at {} UTC", at.format("%H:%M")));
    }
    if let Some(secs) = lower
        .find("try again in ")
        .and_then(|at| duration_words(&lower[at + "try again in ".len()..]))
    {
        return Some(format!("retry in {secs}s"));
    }
    // Google's `"retryDelay": "43s"`, also inside an escaped response body.
    let unescaped = lower.replace('\\', "");
    if let Some(secs) = unescaped.find("retrydelay").and_then(|at| {
        let rest = unescaped[at + "retrydelay".len()..].trim_start_matches([' ', '"', ':', '=']);
        let digits = rest
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .count();
        rest[..digits].parse::<f64>().ok()
    }) {
        return Some(format!("retry in {}s", secs.ceil().max(1.0) as i64));
    }
    number_after(&lower, "\"retry-after\":\"")
        .filter(|secs| *secs > 0)
        .map(|secs| format!("retry in {secs}s"))
}

/// The integer right after the first `key` in `text`.
fn number_after(text: &str, key: &str) -> Option<i64> {
    let rest = &text[text.find(key)? + key.len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Seconds in "3 days 6 hours 57 minutes", "2h 5m", "2.5s": number-unit pairs, summed, rounded up.
fn duration_words(text: &str) -> Option<i64> {
    let mut total = 0i64;
    let mut rest = text;
    loop {
        let trimmed = rest
            .trim_start_matches([' ', ','])
            .trim_start_matches("and ");
        let digits = trimmed
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '.')
            .count();
        let Ok(amount) = trimmed[..digits].trim_end_matches('.').parse::<f64>() else {
            break;
        };
        let after = trimmed[digits..].trim_start();
        let unit_len = after.chars().take_while(char::is_ascii_alphabetic).count();
        let per = match &after[..unit_len] {
            "d" | "day" | "days" => 86_400,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3_600,
            "m" | "min" | "mins" | "minute" | "minutes" => 60,
            "s" | "sec" | "secs" | "second" | "seconds" => 1,
            _ => break,
        };
        total = total.saturating_add((amount * per as f64).ceil() as i64);
        rest = &after[unit_len..];
    }
    (total > 0).then_some(total)
}

/// The last `n` non-empty lines of `text`, joined by newlines.
pub(super) fn last_lines(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    lines[lines.len().saturating_sub(n)..].join("\n")
}

/// At most the last `max` bytes of `text`, cut at a character boundary.
pub(super) fn tail_str(text: &str, max: usize) -> &str {
    if text.len() <= max {
        return text;
    }
    let mut start = text.len() - max;
    while !text.is_char_boundary(start) {
        start += 1;
    }
    &text[start..]
}

/// At most the first `max` characters of `text`.
pub(super) fn cap_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// The JSON objects of a JSON-lines stream, skipping lines that are not (warnings, a cut first
/// line), with how many lines were skipped.
pub(super) fn json_lines(text: &str) -> (Vec<Value>, usize) {
    let mut skipped = 0;
    let values = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .filter_map(|line| match serde_json::from_str::<Value>(line) {
            Ok(v @ Value::Object(_)) => Some(v),
            _ => {
                skipped += 1;
                None
            }
        })
        .collect();
    (values, skipped)
}

/// `value[key]` as an integer (0 when absent or not a number).
pub(super) fn int(value: &Value, pointer: &str) -> i64 {
    value
        .pointer(pointer)
        .and_then(|v| v.as_i64().or_else(|| v.as_f64().map(|f| f as i64)))
        .unwrap_or(0)
        .max(0)
}

/// `value[pointer]` as a string.
pub(super) fn text_at<'a>(value: &'a Value, pointer: &str) -> Option<&'a str> {
    value.pointer(pointer).and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (name, report, exit status, stderr, role, result file, expected exit, failure, summary,
    /// has JSON)
    type Case<'a> = (
        &'a str,
        Report,
        crate::process::ExitStatusKind,
        &'a str,
        AgentRole,
        Option<&'a str>,
        AgentExit,
        Option<AgentFailureKind>,
        Option<&'a str>,
        bool,
    );

    #[test]
    fn quota_hints_are_normalised_for_the_backoff() {
        #[rustfmt::skip]
        let cases: &[(&str, Option<&str>)] = &[
            ("Claude AI usage limit reached|1760000400", Some("resets at 09:00 UTC")),
            (r#""anthropic-ratelimit-unified-reset":"1893456000""#, Some("resets at 00:00 UTC")),
            ("You've hit your usage limit. To get more access now, send a request to your admin or try again in 3 days 6 hours 57 minutes.", Some("retry in 284220s")),
            ("Rate limit reached, try again in 20s", Some("retry in 20s")),
            ("Rate limit reached for gpt-5 on tokens per min (TPM): Limit 30000, Used 29000. Please try again in 2.5s.", Some("retry in 3s")),
            (r#"{"retry-after":"30"}"#, Some("retry in 30s")),
            (r#"{"responseBody":"{\"details\":[{\"@type\":\"type.googleapis.com/google.rpc.RetryInfo\",\"retryDelay\": \"42.5s\"}]}"}"#, Some("retry in 43s")),
            ("You've hit your usage limit · resets 3pm", None),
            ("try again in a moment", None),
            ("", None),
        ];
        for (text, hint) in cases {
            assert_eq!(quota_hint(text).as_deref(), *hint, "{text:?}");
        }
    }

    #[test]
    fn error_text_is_a_quota_failure_when_it_says_so() {
        let f = error_from_text("API Error: Request rejected (429) · please try again later");
        assert!(is_quota(&f), "{f:?}");
        // Issue 18: a login or key problem is a configuration error, never retried as it is.
        let f = error_from_text("Not logged in · Please run /login");
        assert_eq!(f.kind, AgentFailureKind::Config);
        let f = error_from_text("unexpected status 401 Unauthorized: Missing bearer");
        assert_eq!(f.kind, AgentFailureKind::Config);
        let f = error_from_text("Unexpected server error");
        assert_eq!(f.kind, AgentFailureKind::Error);
    }

    fn output(status: crate::process::ExitStatusKind, stdout: &str, stderr: &str) -> ProcessOutput {
        ProcessOutput {
            status,
            output_tail: format!("{stdout}{stderr}"),
            stdout_tail: stdout.to_string(),
            stderr_tail: stderr.to_string(),
            stdout_bytes: stdout.len() as u64,
            stderr_bytes: stderr.len() as u64,
            duration: std::time::Duration::from_secs(1),
            timed_out: status == crate::process::ExitStatusKind::TimedOut,
            stopped: None,
        }
    }

    #[test]
    fn reports_exits_and_result_files_combine() {
        use crate::model::Role;
        use crate::process::ExitStatusKind::{Code, TimedOut};
        use AgentFailureKind as K;
        let done = |message: &str| Report {
            completed: true,
            final_message: Some(message.to_string()),
            cost_usd: Some(0.5),
            input_tokens: 1000,
            output_tokens: 10,
            session_id: Some("s1".into()),
            ..Report::default()
        };
        let failed = |kind: K| Report {
            failure: Some(failure(kind, "it broke".into())),
            ..done("partial")
        };
        let worker = AgentRole::Task(Role::Worker);
        let verdict = r#"Looks fine. {"verdict": "approve", "summary": "ok", "findings": []}"#;
        #[rustfmt::skip]
        let cases: Vec<Case> = vec![
            ("clean success", done("did it"), Code(0), "", worker, None, AgentExit::Finished, None, Some("did it"), false),
            ("error reported with exit 0 is not success", failed(K::Error), Code(0), "", worker, None, AgentExit::Failed(Some(0)), Some(K::Error), Some("partial"), false),
            ("max turns with exit 1", failed(K::MaxTurns), Code(1), "", worker, None, AgentExit::Failed(Some(1)), Some(K::MaxTurns), Some("partial"), false),
            ("exit 0 without a report of finishing", Report::default(), Code(0), "", worker, None, AgentExit::Failed(Some(0)), Some(K::Error), None, false),
            ("non-zero exit, quota on stderr", Report::default(), Code(1), "Error: 429 Too Many Requests", worker, None, AgentExit::Failed(Some(1)), Some(K::Quota { retry_hint: None }), None, false),
            ("non-zero exit, other error", Report::default(), Code(2), "boom", worker, None, AgentExit::Failed(Some(2)), Some(K::Error), None, false),
            ("timeout stays a timeout", failed(K::Error), TimedOut, "", worker, None, AgentExit::TimedOut, None, Some("partial"), false),
            ("a named error explains a timeout better than the tail", failed(K::Error), TimedOut, "servers overloaded, retrying", worker, None, AgentExit::TimedOut, None, Some("partial"), false),
            ("timeout while waiting out a rate limit", Report::default(), TimedOut, "rate limited, will retry in 30s", worker, None, AgentExit::TimedOut, Some(K::Quota { retry_hint: None }), None, false),
            ("the worker's result file wins for the summary", done("cli text"), Code(0), "", worker, Some(r#"{"summary": "from file", "cost_usd": 9}"#), AgentExit::Finished, None, Some("from file"), true),
            ("a judge's JSON from its final message", done(verdict), Code(0), "", AgentRole::Judge, None, AgentExit::Finished, None, Some("ok"), true),
            ("a worker's message is not its result", done(verdict), Code(0), "", worker, None, AgentExit::Finished, None, Some(verdict), false),
        ];
        for (name, report, status, stderr, role, file, exit, kind, summary, has_json) in cases {
            let dir = tempfile::tempdir().unwrap();
            let files = RunFiles {
                prompt: dir.path().join("prompt.md"),
                result: dir.path().join("result.json"),
                deadline: std::time::Instant::now(),
            };
            if let Some(text) = file {
                std::fs::write(&files.result, text).unwrap();
            }
            let config = AdapterConfig::new(&crate::executor::claude_code::CLI, role);
            let r = assemble(report, &output(status, "", stderr), &files, role, &config);
            assert_eq!(r.exit, exit, "{name}");
            assert_eq!(r.failure.as_ref().map(|f| f.kind.clone()), kind, "{name}");
            assert_eq!(r.summary.as_deref(), summary, "{name}");
            assert_eq!(r.result.is_some(), has_json, "{name}");
            if kind.is_some() {
                assert!(
                    r.output_tail.contains("[opentiger]"),
                    "{name}: {}",
                    r.output_tail
                );
            }
        }
    }

    #[test]
    fn spend_is_what_the_cli_measured() {
        use crate::config::Pricing;
        use crate::process::ExitStatusKind::Code;
        let dir = tempfile::tempdir().unwrap();
        let files = RunFiles {
            prompt: dir.path().join("p"),
            result: dir.path().join("result.json"),
            deadline: std::time::Instant::now(),
        };
        std::fs::write(
            &files.result,
            r#"{"summary": "s", "cost_usd": 0.01, "input_tokens": 5}"#,
        )
        .unwrap();
        let tokens_only = Report {
            completed: true,
            input_tokens: 2_000_000,
            cached_input_tokens: 1_000_000,
            output_tokens: 100_000,
            ..Report::default()
        };
        let role = AgentRole::Task(crate::model::Role::Worker);
        let mut config = AdapterConfig::new(&crate::executor::codex::CLI, role);
        let out = output(Code(0), "", "");
        // No pricing: the agent's own figure is all there is.
        let r = assemble(tokens_only.clone(), &out, &files, role, &config);
        assert_eq!(
            (r.cost_usd, r.input_tokens, r.output_tokens),
            (0.01, 2_000_000, 100_000)
        );
        config.pricing = Some(Pricing {
            input_per_mtok: 1.25,
            output_per_mtok: 10.0,
            cached_input_per_mtok: Some(0.125),
        });
        let r = assemble(tokens_only.clone(), &out, &files, role, &config);
        assert!(
            (r.cost_usd - (1.25 + 0.125 + 1.0)).abs() < 1e-9,
            "{}",
            r.cost_usd
        );
        // A cost the CLI reports wins over pricing.
        let reported = Report {
            cost_usd: Some(0.7),
            ..tokens_only
        };
        assert_eq!(
            assemble(reported, &out, &files, role, &config).cost_usd,
            0.7
        );
    }

    #[test]
    fn tails_and_caps_respect_characters() {
        assert_eq!(tail_str("abcdé", 2), "é");
        assert_eq!(tail_str("abcdé", 1), "");
        assert_eq!(cap_chars("éééé", 2), "éé…");
        assert_eq!(last_lines("a\n\nb\nc\n", 2), "b\nc");
    }
}

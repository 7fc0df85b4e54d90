//! Failure classification: what kind of failure a run ended with, and whether it is worth retrying.
//!
//! Pure text rules over the run's failure code and its (already redacted) error excerpt: the
//! cycle manager's `classifyFailure` (spec §3.2), the worker's mapping of a failed verification
//! command to a failure code (spec §3.2, last paragraph), the worker's quota detection (spec §2.3)
//! and the normalized failure signature used for repeated-failure escalation (spec §3.4).
//!
//! Not for: deciding what to do with a classification (retry budgets are applied by recovery),
//! computing cooldowns (see `backoff`), or reading logs. Matching is plain substring search plus
//! small hand-written scanners; every phrase is matched against lower-cased text.

use crate::model::{FailureCategory, FailureCode};

/// How the engine treats one failure (spec §3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Classification {
    pub category: FailureCategory,
    pub retryable: bool,
    /// The spec's reason word, e.g. `test_failure` or `verification_command_missing_script`.
    pub reason: &'static str,
}

/// Classifies a failure: the structured code first, then the message rules (spec §3.2).
///
/// `execution_failed` and a missing code say nothing about the cause, so they fall back to the
/// message rules, like an unknown code does in the spec.
pub fn classify(message: &str, code: Option<FailureCode>) -> Classification {
    if let Some(classification) = code.and_then(classify_code) {
        return classification;
    }
    classify_code(code_from_message(message)).unwrap_or(MODEL_OR_UNKNOWN)
}

/// The default classification; also what the message rules end with.
const MODEL_OR_UNKNOWN: Classification = Classification {
    category: FailureCategory::Model,
    retryable: true,
    reason: "model_or_unknown_failure",
};

/// spec §3.2: the structured-code table. `None` means "fall back to the message rules".
fn classify_code(code: FailureCode) -> Option<Classification> {
    use FailureCategory as C;
    let (category, retryable, reason) = match code {
        FailureCode::ExternalDirectoryPermissionPrompt => (C::Permission, false, code),
        FailureCode::NoActionableChanges => (C::Noop, false, code),
        FailureCode::PolicyViolation => (C::Policy, true, code),
        FailureCode::VerificationCommandMissingScript
        | FailureCode::VerificationCommandNoTestFiles
        | FailureCode::VerificationCommandMissingMakeTarget
        | FailureCode::VerificationCommandUnsupportedFormat
        | FailureCode::VerificationCommandSequenceIssue => (C::Setup, false, code),
        FailureCode::SetupOrBootstrapIssue => (C::Setup, true, code),
        FailureCode::EnvironmentIssue | FailureCode::QuotaFailure => {
            (C::Env, true, FailureCode::EnvironmentIssue)
        }
        FailureCode::BranchDivergedRequiresRecreate => (C::Setup, false, code),
        FailureCode::VerificationCommandFailed | FailureCode::TestFailure => {
            (C::Test, true, FailureCode::TestFailure)
        }
        FailureCode::TransientOrFlakyFailure => (C::Flaky, true, code),
        FailureCode::ModelDoomLoop => (C::ModelLoop, true, code),
        FailureCode::ModelOrUnknownFailure => (C::Model, true, code),
        FailureCode::ExecutionFailed => return None,
    };
    Some(Classification {
        category,
        retryable,
        reason: reason.as_str(),
    })
}

/// What a message rule looks for in the lower-cased message.
enum Pattern {
    /// Any of these substrings.
    Phrases(&'static [&'static str]),
    /// A rule a substring list cannot say.
    Check(fn(&str) -> bool),
}

/// spec §3.2: the message rules, in order; the first match wins. Each rule names the code whose
/// row of the structured table gives its category, retryability and reason.
#[rustfmt::skip]
const MESSAGE_RULES: &[(Pattern, FailureCode)] = &[
    (Pattern::Check(is_external_directory_prompt), FailureCode::ExternalDirectoryPermissionPrompt),
    (Pattern::Phrases(&["no changes were made", "no relevant changes were made",
        "no commits between"]), FailureCode::NoActionableChanges),
    (Pattern::Phrases(&["policy violation", "denied command", "outside allowed paths",
        "change to denied path"]), FailureCode::PolicyViolation),
    (Pattern::Phrases(NO_TEST_FILES), FailureCode::VerificationCommandNoTestFiles),
    // spec §3.2: a missing make target is reported as missing_script by the classifier.
    (Pattern::Check(is_missing_script_message), FailureCode::VerificationCommandMissingScript),
    (Pattern::Check(is_unsupported_format_message),
        FailureCode::VerificationCommandUnsupportedFormat),
    (Pattern::Check(is_artifact_check_after_clean), FailureCode::VerificationCommandSequenceIssue),
    (Pattern::Phrases(&["package.json", "pnpm-workspace.yaml", "cannot find module", "enoent",
        "command not found", "repository not found", "authentication failed", "permission denied",
        "no commits between", "no history in common"]), FailureCode::SetupOrBootstrapIssue),
    // spec §3.2: plain `env` as a substring, as in the original (it also hits "environment").
    (Pattern::Phrases(&["database_url", "redis_url", "connection refused", "dns", "env"]),
        FailureCode::EnvironmentIssue),
    (Pattern::Phrases(&["branch_diverged_requires_recreate", "non-fast-forward",
        "failed to push some refs"]), FailureCode::BranchDivergedRequiresRecreate),
    (Pattern::Phrases(&["vitest", "playwright", "assert", "expected", "test failed",
        "verification commands failed"]), FailureCode::TestFailure),
    (Pattern::Phrases(&["rate limit", "429", "503", "502", "timeout", "timed out", "econnreset",
        "eai_again", "temporarily unavailable"]), FailureCode::TransientOrFlakyFailure),
    (Pattern::Phrases(&["doom loop detected", "excessive planning chatter detected",
        "unsupported pseudo tool call detected: todo"]), FailureCode::ModelDoomLoop),
];

/// Test runners saying there was nothing to run.
const NO_TEST_FILES: &[&str] = &[
    "no test files found",
    "no tests found",
    "no files found matching",
];

fn code_from_message(message: &str) -> FailureCode {
    let lower = message.to_lowercase();
    MESSAGE_RULES
        .iter()
        .find(|(pattern, _)| match pattern {
            Pattern::Phrases(phrases) => contains_any(&lower, phrases),
            Pattern::Check(check) => check(&lower),
        })
        .map_or(FailureCode::ModelOrUnknownFailure, |(_, code)| *code)
}

fn is_external_directory_prompt(lower: &str) -> bool {
    if lower.contains("external_directory permission prompt") {
        return true;
    }
    lower.match_indices("permission required:").any(|(at, m)| {
        lower[at + m.len()..]
            .trim_start()
            .starts_with("external_directory")
    })
}

fn is_missing_script_message(lower: &str) -> bool {
    #[rustfmt::skip]
    const PHRASES: &[&str] = &[
        "err_pnpm_no_script", "missing script", "could not read package.json",
        "no rule to make target",
    ];
    contains_any(lower, PHRASES)
        || lower.lines().any(|line| {
            // `enoent.*package\.json`: both on one line, in that order.
            line.find("enoent")
                .is_some_and(|at| line[at..].contains("package.json"))
        })
}

fn is_unsupported_format_message(lower: &str) -> bool {
    const PHRASES: &[&str] = &[
        "unsupported command format",
        "shell operators are not allowed",
    ];
    if contains_any(lower, PHRASES) {
        return true;
    }
    // `verification failed at …$(…)…[explicit]: stderr unavailable`, on one line.
    lower.lines().any(|line| {
        let Some(rest) = after(line, "verification failed at ") else {
            return false;
        };
        let Some(rest) = after(rest, "$(") else {
            return false;
        };
        // `.+?\)`: at least one character inside the parentheses.
        let Some(first) = rest.chars().next() else {
            return false;
        };
        let inside = first.len_utf8();
        let Some(close) = rest[inside..].find(')') else {
            return false;
        };
        ends_with_explicit_stderr_unavailable(&rest[inside + close + 1..])
    })
}

/// `verification failed at test -f|-s <path> [explicit]: stderr unavailable` where the path runs
/// through a build-output directory: the check ran before anything produced the file.
fn is_artifact_check_after_clean(lower: &str) -> bool {
    lower.lines().any(|line| {
        line.match_indices("verification failed at").any(|(at, m)| {
            let rest = line[at + m.len()..].trim_start();
            let Some(rest) = rest.strip_prefix("test") else {
                return false;
            };
            if !rest.starts_with(char::is_whitespace) {
                return false;
            }
            let rest = rest.trim_start();
            let Some(rest) = rest.strip_prefix("-f").or_else(|| rest.strip_prefix("-s")) else {
                return false;
            };
            if !rest.starts_with(char::is_whitespace) {
                return false;
            }
            let Some(end) = rest.find(" [explicit]:") else {
                return false;
            };
            let path = rest[..end].trim();
            !path.is_empty()
                && names_generated_dir(path)
                && ends_with_explicit_stderr_unavailable(&rest[end + 1..])
        })
    })
}

/// `\[explicit\]:\s*stderr unavailable` somewhere in `text`.
fn ends_with_explicit_stderr_unavailable(text: &str) -> bool {
    text.match_indices("[explicit]:").any(|(at, m)| {
        text[at + m.len()..]
            .trim_start()
            .starts_with("stderr unavailable")
    })
}

/// Build-output directory names (spec §3.2 sequence_issue).
#[rustfmt::skip]
const GENERATED_DIRS: &[&str] = &[
    "artifact", "artifacts", "build", "debug", "dist", "out", "release", "target",
];

/// Whether `path` has `<generated dir>/` at its start or after whitespace, a quote, `.` or `/`.
fn names_generated_dir(path: &str) -> bool {
    let bytes = path.as_bytes();
    GENERATED_DIRS.iter().any(|dir| {
        path.match_indices(dir).any(|(at, _)| {
            let end = at + dir.len();
            let starts_segment = at == 0
                || matches!(bytes[at - 1], b'"' | b'\'' | b'.' | b'/')
                || bytes[at - 1].is_ascii_whitespace();
            starts_segment && bytes.get(end) == Some(&b'/')
        })
    })
}

/// Maps a failed verification command to a failure code, the worker's
/// `resolveVerificationCommandFailureCode` (spec §3.2, last paragraph); the first match wins.
///
/// `previous_command` is the verification command that ran just before this one, if any: a
/// missing build output right after a clean is a sequencing problem, not a test failure.
pub fn verification_failure_code(
    command: &str,
    output: &str,
    previous_command: Option<&str>,
) -> FailureCode {
    let out = output.to_lowercase();
    if out.contains("no rule to make target") {
        return FailureCode::VerificationCommandMissingMakeTarget;
    }
    if contains_any(&out, NO_TEST_FILES) {
        return FailureCode::VerificationCommandNoTestFiles;
    }
    let missing_script = contains_any(&out, &["err_pnpm_no_script", "missing script"])
        || contains_all(&out, &["command", "not found", "script"]);
    let missing_manifest = out.contains("could not read package.json")
        || contains_all(&out, &["enoent", "package.json"]);
    if missing_script || missing_manifest {
        return FailureCode::VerificationCommandMissingScript;
    }
    #[rustfmt::skip]
    const UNSUPPORTED: &[&str] = &[
        "unsupported command format", "unsupported shell builtin in verification command",
    ];
    let unsupported = contains_any(&out, UNSUPPORTED)
        || contains_all(&out, &["shell operators", "not allowed"])
        || command.contains("$(");
    if unsupported {
        return FailureCode::VerificationCommandUnsupportedFormat;
    }
    if is_missing_tool_output(&out)
        || is_runtime_mismatch_output(&out)
        || is_missing_package_output(&out)
    {
        return FailureCode::SetupOrBootstrapIssue;
    }
    if is_sequence_issue(command, output, previous_command) {
        return FailureCode::VerificationCommandSequenceIssue;
    }
    FailureCode::VerificationCommandFailed
}

fn is_missing_tool_output(out: &str) -> bool {
    #[rustfmt::skip]
    const PHRASES: &[&str] = &[
        "missing dependency", "cannot find dependency", "command not found", "spawn enoent",
    ];
    contains_any(out, PHRASES) || contains_all(out, &["sh:", "not found"])
}

fn is_runtime_mismatch_output(out: &str) -> bool {
    contains_all(out, &["unsupported engine", "\"node\""])
        || contains_any(out, &["requires node", "expected node version"])
        || (out.contains("err_require_esm") && contains_any(out, &["node_modules", "/.pnpm/"]))
        || contains_all(out, &["not supported", "node"])
}

/// A package (not a file of the repository) that the toolchain cannot resolve: dependencies were
/// never installed.
fn is_missing_package_output(out: &str) -> bool {
    if out.contains("cannot find package")
        || contains_all(out, &["module path", "to exist, but none could be found"])
    {
        return true;
    }
    let Some(specifier) = quoted_after(out, "cannot find module ")
        .or_else(|| quoted_before(out, "module path ", " to exist"))
    else {
        return false;
    };
    if is_local_specifier(specifier) {
        return false;
    }
    contains_all(out, &["failed to load config from", "node_modules"])
        || contains_all(out, &["imported from", "node_modules"])
}

/// The first `'…'` or `"…"` right after `prefix`.
fn quoted_after<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.match_indices(prefix)
        .find_map(|(at, m)| quoted_at(&text[at + m.len()..]).map(|(inner, _)| inner))
}

/// The first `prefix '…' suffix`.
fn quoted_before<'a>(text: &'a str, prefix: &str, suffix: &str) -> Option<&'a str> {
    text.match_indices(prefix).find_map(|(at, m)| {
        let (inner, rest) = quoted_at(&text[at + m.len()..])?;
        rest.starts_with(suffix).then_some(inner)
    })
}

/// A non-empty quoted string at the start of `text`, and what follows it.
fn quoted_at(text: &str) -> Option<(&str, &str)> {
    let body = text.strip_prefix(['\'', '"'])?;
    // As `['"]([^'"]+)['"]`: any quote closes.
    let close = body.find(['\'', '"'])?;
    (close > 0).then(|| (&body[..close], &body[close + 1..]))
}

fn is_local_specifier(specifier: &str) -> bool {
    let s = specifier.trim();
    let bytes = s.as_bytes();
    let drive = bytes.len() >= 3
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && matches!(bytes[2], b'/' | b'\\');
    s.starts_with('.') || s.starts_with('/') || drive
}

/// spec §3.2: `test -f|-s <generated path>` with no output, right after a clean-like command.
fn is_sequence_issue(command: &str, output: &str, previous_command: Option<&str>) -> bool {
    let Some(previous) = previous_command else {
        return false;
    };
    let Some(path) = artifact_check_path(command) else {
        return false;
    };
    let path = path.to_lowercase();
    let generated = !path.contains("..")
        && !path.contains('*')
        && path
            .split('/')
            .any(|segment| GENERATED_DIRS.contains(&segment));
    generated && output.trim().is_empty() && is_clean_like(previous)
}

/// The path of a `test -f <path>` / `test -s <path>` command, unquoted and normalized.
fn artifact_check_path(command: &str) -> Option<String> {
    let mut words = command.split_whitespace();
    if !words.next()?.eq_ignore_ascii_case("test") {
        return None;
    }
    let flag = words.next()?;
    if !(flag.eq_ignore_ascii_case("-f") || flag.eq_ignore_ascii_case("-s")) {
        return None;
    }
    let rest = command.trim_start();
    let rest = rest[4..].trim_start();
    let rest = rest[2..].trim();
    if rest.is_empty() {
        return None;
    }
    let unquoted = strip_wrapping_quotes(rest).replace('\\', "/");
    let mut path = unquoted.as_str();
    while let Some(stripped) = path.strip_prefix("./") {
        path = stripped;
    }
    (!path.is_empty()).then(|| path.to_string())
}

fn strip_wrapping_quotes(text: &str) -> &str {
    let t = text.trim();
    for quote in ['"', '\''] {
        if t.len() >= 2 && t.starts_with(quote) && t.ends_with(quote) {
            return &t[1..t.len() - 1];
        }
    }
    t
}

/// `make *clean*`, or `<pm> [run] clean|distclean|clobber`.
fn is_clean_like(command: &str) -> bool {
    let mut words = command.split_whitespace();
    let Some(first) = words.next().map(str::to_lowercase) else {
        return false;
    };
    let rest: Vec<String> = words.map(str::to_lowercase).collect();
    match first.as_str() {
        "make" => rest.iter().any(|w| w.contains("clean")),
        "npm" | "pnpm" | "yarn" | "bun" => {
            let joined = rest.join(" ");
            ["clean", "distclean", "clobber"]
                .iter()
                .any(|word| has_word(&joined, word))
        }
        _ => false,
    }
}

/// Whether an agent's error output says it hit a quota or rate limit (spec §2.3, "Quota
/// detection (worker)"): a direct phrase, or a quota signal together with a cooldown or scope
/// signal. A lone "rate limit" is not enough, so test output about rate limiting does not count.
///
/// DESIGN addition: an overloaded provider (Anthropic's HTTP 529, `overloaded_error`) is waited
/// out like a quota. `overloaded_error` and `api error: 529` are direct phrases; a bare
/// `overloaded` or `529` is only a quota signal, so a compiler's "call of overloaded function"
/// does not park a task.
pub fn is_quota_message(text: &str) -> bool {
    let t = squash_whitespace(&text.to_lowercase().replace('’', "'"));
    let direct =
        contains_any(&t, QUOTA_PHRASES) || any_word(&t, QUOTA_WORDS) || has_reset_clock(&t);
    if direct {
        return true;
    }
    let quota_signal = any_word(&t, QUOTA_SIGNAL_WORDS)
        || any_word_form(&t, QUOTA_SIGNAL_FORMS)
        || has_word_prefix(&t, "throttl");
    if !quota_signal {
        return false;
    }
    let cooldown_signal =
        any_word(&t, COOLDOWN_WORDS) || any_word_form(&t, COOLDOWN_FORMS) || has_clock(&t);
    cooldown_signal || any_word(&t, SCOPE_WORDS)
}

// spec §2.3 quota vocabulary. Text is lower-cased and its whitespace squashed to single spaces
// before matching; `*_WORDS` match whole words only, `*_FORMS` are whole words built from one
// choice per part (`rate` + `_` + `limit` + `ed`).

/// Direct phrases, anywhere.
#[rustfmt::skip]
const QUOTA_PHRASES: &[&str] = &[
    "quota exceeded", "resource has been exhausted", "resource_exhausted", "quota limit reached",
    "generate_requests_per_model_per_day", "generate_content_paid_tier_input_token_count",
    "retryinfo", "too many requests", "hit your usage limit", "daily limit", "monthly limit",
    // DESIGN addition (see `is_quota_message`).
    "overloaded_error", "api error: 529",
];

/// Direct phrases, as whole words.
const QUOTA_WORDS: &[&str] = &["429", "hit your limit", "usage limit"];

#[rustfmt::skip]
const QUOTA_SIGNAL_WORDS: &[&str] = &[
    "quota", "too many requests", "429",
    // DESIGN addition (see `is_quota_message`).
    "overloaded", "529",
];

/// `[_\s-]?` between two parts of a word.
const JOINERS: &[&str] = &["", " ", "_", "-"];

#[rustfmt::skip]
const QUOTA_SIGNAL_FORMS: &[&[&[&str]]] = &[
    &[&["rate"], JOINERS, &["limit"], &["", "ed", "ing"]],
    &[&["insufficient"], JOINERS, &["quota"]],
    &[&["resource", "resource has been"], JOINERS, &["exhausted"]],
];

#[rustfmt::skip]
const COOLDOWN_WORDS: &[&str] = &[
    "wait", "waiting", "retry", "retrying", "try again", "reset", "resets", "resetting", "daily",
    "monthly", "utc", "jst", "tokyo", "pst", "est", "cst", "gmt",
];

const COOLDOWN_FORMS: &[&[&[&str]]] = &[&[&["per"], JOINERS, &["minute", "hour", "day", "month"]]];

const SCOPE_WORDS: &[&str] = &["token", "tokens", "credit", "credits", "api", "rpm", "tpm"];

/// `resets? <h>[:mm] am|pm` (spec §2.3 direct phrase).
fn has_reset_clock(t: &str) -> bool {
    let bytes = t.as_bytes();
    t.match_indices("reset").any(|(at, m)| {
        if !starts_word(bytes, at) {
            return false;
        }
        let mut i = at + m.len();
        if bytes.get(i) == Some(&b's') {
            i += 1;
        }
        bytes.get(i) == Some(&b' ') && am_pm_clock_end(bytes, i + 1).is_some()
    })
}

/// Any `\b<h>[:mm] am|pm\b` clock time.
fn has_clock(t: &str) -> bool {
    let bytes = t.as_bytes();
    (0..bytes.len()).any(|i| starts_word(bytes, i) && am_pm_clock_end(bytes, i).is_some())
}

/// Where `<h>[:mm][ ]am|pm` starting at `i` ends (one or two digits for the hour), if it does.
fn am_pm_clock_end(bytes: &[u8], i: usize) -> Option<usize> {
    let digits = bytes[i.min(bytes.len())..]
        .iter()
        .take_while(|b| b.is_ascii_digit())
        .count();
    if !(1..=2).contains(&digits) {
        return None;
    }
    let mut j = i + digits;
    if bytes.get(j) == Some(&b':') {
        let minutes = bytes.get(j + 1..j + 3)?;
        if !minutes.iter().all(u8::is_ascii_digit) {
            return None;
        }
        j += 3;
    }
    while bytes.get(j).is_some_and(u8::is_ascii_whitespace) {
        j += 1;
    }
    let meridiem = bytes.get(j..j + 2)?;
    let end = j + 2;
    (matches!(meridiem, b"am" | b"pm") && ends_word(bytes, end)).then_some(end)
}

/// The normalized failure signature of spec §3.4 ("Repeated-signature escalation"): two failures
/// with the same signature are the same failure, whatever the ids, paths and numbers in them.
pub fn failure_signature(message: &str, code: Option<FailureCode>) -> String {
    let lower = message.to_lowercase();
    let text = strip_ansi(&lower);
    let text = replace_uuids(&text);
    let text = replace_paths(&text);
    let text = replace_digit_runs(&text);
    let text = squash_whitespace(&text);
    let text: String = text.trim().chars().take(SIGNATURE_MAX_CHARS).collect();
    match code {
        Some(code) => format!("code:{} {text}", code.as_str()).trim().to_string(),
        None => text,
    }
}

/// spec §3.4: signatures are cut to 400 characters before the code prefix.
const SIGNATURE_MAX_CHARS: usize = 400;

/// Removes `ESC [ <digits and ;> m` colour sequences.
fn strip_ansi(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == 0x1b && bytes.get(i + 1) == Some(&b'[') {
            let params = bytes[i + 2..]
                .iter()
                .take_while(|b| b.is_ascii_digit() || **b == b';')
                .count();
            let end = i + 2 + params;
            if bytes.get(end) == Some(&b'm') {
                out.push_str(&text[copied..i]);
                copied = end + 1;
                i = end + 1;
                continue;
            }
        }
        i += 1;
    }
    out.push_str(&text[copied..]);
    out
}

/// `[0-9a-f]{8}-[0-9a-f-]{27}` → `<uuid>`.
fn replace_uuids(text: &str) -> String {
    replace_matches(text, "<uuid>", |bytes, i| {
        let is_hex = |b: &u8| b.is_ascii_digit() || (b'a'..=b'f').contains(b);
        let head = bytes.get(i..i + 8)?;
        let tail = bytes.get(i + 9..i + 36)?;
        (head.iter().all(is_hex)
            && bytes[i + 8] == b'-'
            && tail.iter().all(|b| is_hex(b) || *b == b'-'))
        .then_some(i + 36)
    })
}

/// `/seg/seg[/seg…]` (two or more segments of `[A-Za-z0-9._-]`) → `<path>`.
fn replace_paths(text: &str) -> String {
    let is_seg = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
    replace_matches(text, "<path>", |bytes, i| {
        if bytes[i] != b'/' {
            return None;
        }
        let mut j = i;
        let mut segments = 0;
        while bytes.get(j) == Some(&b'/') {
            let len = bytes[j + 1..].iter().take_while(|b| is_seg(b)).count();
            if len == 0 {
                break;
            }
            segments += 1;
            j += 1 + len;
        }
        (segments >= 2).then_some(j)
    })
}

/// `\d+` → `<n>`.
fn replace_digit_runs(text: &str) -> String {
    replace_matches(text, "<n>", |bytes, i| {
        let len = bytes[i..].iter().take_while(|b| b.is_ascii_digit()).count();
        (len > 0).then_some(i + len)
    })
}

/// Scans left to right; wherever `match_end(bytes, i)` returns the end of a match starting at `i`,
/// that span becomes `replacement`. Matches start and end on ASCII bytes, so slicing is safe.
fn replace_matches(
    text: &str,
    replacement: &str,
    match_end: impl Fn(&[u8], usize) -> Option<usize>,
) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    let mut i = 0;
    while i < bytes.len() {
        match match_end(bytes, i) {
            Some(end) if end > i => {
                out.push_str(&text[copied..i]);
                out.push_str(replacement);
                copied = end;
                i = end;
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// spec §3.4: default retry budget per failure category.
pub fn category_budget(category: FailureCategory) -> u32 {
    match category {
        FailureCategory::Env => 5,
        FailureCategory::Setup => 3,
        FailureCategory::Permission => 0,
        FailureCategory::Noop => 0,
        FailureCategory::Policy => 3,
        FailureCategory::Test => 3,
        FailureCategory::Flaky => 6,
        FailureCategory::Model => 3,
        FailureCategory::ModelLoop => 1,
    }
}

// ---- small text helpers (ASCII word boundaries, as JavaScript's `\b`) ----

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn starts_word(bytes: &[u8], at: usize) -> bool {
    at == 0 || !is_word_byte(bytes[at - 1])
}

fn ends_word(bytes: &[u8], end: usize) -> bool {
    bytes.get(end).is_none_or(|b| !is_word_byte(*b))
}

fn contains_any(text: &str, needles: &[&str]) -> bool {
    needles.iter().any(|n| text.contains(n))
}

fn contains_all(text: &str, needles: &[&str]) -> bool {
    needles.iter().all(|n| text.contains(n))
}

/// `text` after the first `needle`.
fn after<'a>(text: &'a str, needle: &str) -> Option<&'a str> {
    text.find(needle).map(|at| &text[at + needle.len()..])
}

/// `\b<word>\b` somewhere in `text`.
fn has_word(text: &str, word: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices(word)
        .any(|(at, m)| starts_word(bytes, at) && ends_word(bytes, at + m.len()))
}

fn any_word(text: &str, words: &[&str]) -> bool {
    words.iter().any(|w| has_word(text, w))
}

/// Any word built by [`combine`] from one of `forms`.
fn any_word_form(text: &str, forms: &[&[&[&str]]]) -> bool {
    forms
        .iter()
        .any(|parts| combine(parts).iter().any(|w| has_word(text, w)))
}

/// `\b<prefix>` somewhere in `text`.
fn has_word_prefix(text: &str, prefix: &str) -> bool {
    let bytes = text.as_bytes();
    text.match_indices(prefix)
        .any(|(at, _)| starts_word(bytes, at))
}

/// Every concatenation of one choice per part: `[["a"], ["", "-"], ["b"]]` → `["ab", "a-b"]`.
fn combine(parts: &[&[&str]]) -> Vec<String> {
    parts.iter().fold(vec![String::new()], |acc, choices| {
        acc.iter()
            .flat_map(|head| choices.iter().map(move |c| format!("{head}{c}")))
            .collect()
    })
}

/// Runs of whitespace become one space.
fn squash_whitespace(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use FailureCategory as C;
    use FailureCode as F;

    #[test]
    fn structured_codes_follow_the_table() {
        #[rustfmt::skip]
        let cases: &[(F, C, bool, &str)] = &[
            (F::ExternalDirectoryPermissionPrompt, C::Permission, false, "external_directory_permission_prompt"),
            (F::NoActionableChanges, C::Noop, false, "no_actionable_changes"),
            (F::PolicyViolation, C::Policy, true, "policy_violation"),
            (F::VerificationCommandMissingScript, C::Setup, false, "verification_command_missing_script"),
            (F::VerificationCommandNoTestFiles, C::Setup, false, "verification_command_no_test_files"),
            (F::VerificationCommandMissingMakeTarget, C::Setup, false, "verification_command_missing_make_target"),
            (F::VerificationCommandUnsupportedFormat, C::Setup, false, "verification_command_unsupported_format"),
            (F::VerificationCommandSequenceIssue, C::Setup, false, "verification_command_sequence_issue"),
            (F::SetupOrBootstrapIssue, C::Setup, true, "setup_or_bootstrap_issue"),
            (F::EnvironmentIssue, C::Env, true, "environment_issue"),
            (F::QuotaFailure, C::Env, true, "environment_issue"),
            (F::BranchDivergedRequiresRecreate, C::Setup, false, "branch_diverged_requires_recreate"),
            (F::VerificationCommandFailed, C::Test, true, "test_failure"),
            (F::TestFailure, C::Test, true, "test_failure"),
            (F::TransientOrFlakyFailure, C::Flaky, true, "transient_or_flaky_failure"),
            (F::ModelDoomLoop, C::ModelLoop, true, "model_doom_loop"),
            (F::ModelOrUnknownFailure, C::Model, true, "model_or_unknown_failure"),
        ];
        for (code, category, retryable, reason) in cases {
            // The message would say otherwise: the code wins.
            let got = classify("vitest: assert failed", Some(*code));
            let expected = Classification {
                category: *category,
                retryable: *retryable,
                reason,
            };
            assert_eq!(got, expected, "{code}");
        }
        // Every code but execution_failed is in the table.
        assert_eq!(cases.len() + 1, F::ALL.len());
    }

    #[test]
    fn messages_follow_the_rules_in_order() {
        #[rustfmt::skip]
        let cases: &[(&str, Option<F>, C, bool, &str)] = &[
            ("Permission required: external_directory (/etc)", None, C::Permission, false, "external_directory_permission_prompt"),
            ("opencode hit an External_Directory permission prompt", None, C::Permission, false, "external_directory_permission_prompt"),
            ("No changes were made to the repository", None, C::Noop, false, "no_actionable_changes"),
            ("GraphQL: No commits between main and agent/x", None, C::Noop, false, "no_actionable_changes"),
            ("Policy violation: change outside allowed paths: a.txt", None, C::Policy, true, "policy_violation"),
            ("denied command: sudo rm", Some(F::ExecutionFailed), C::Policy, true, "policy_violation"),
            ("vitest: No test files found, exiting with code 1", None, C::Setup, false, "verification_command_no_test_files"),
            ("ERR_PNPM_NO_SCRIPT Missing script: lint", None, C::Setup, false, "verification_command_missing_script"),
            ("make: *** No rule to make target 'check'.  Stop.", None, C::Setup, false, "verification_command_missing_script"),
            ("Error: ENOENT: no such file, open '/w/package.json'", None, C::Setup, false, "verification_command_missing_script"),
            ("Unsupported command format: a && b", None, C::Setup, false, "verification_command_unsupported_format"),
            ("Verification failed at test -n \"$(ls dist)\" [explicit]: stderr unavailable", None, C::Setup, false, "verification_command_unsupported_format"),
            ("Verification failed at test -f build/app.bin [explicit]: stderr unavailable", None, C::Setup, false, "verification_command_sequence_issue"),
            ("Verification failed at test -s ./target/release/x [explicit]:  stderr unavailable", None, C::Setup, false, "verification_command_sequence_issue"),
            // Not a build-output directory, and "verification failed" is not "verification
            // commands failed": nothing else matches.
            ("Verification failed at test -f src/lib.rs [explicit]: stderr unavailable", None, C::Model, true, "model_or_unknown_failure"),
            ("Error: Cannot find module 'zod'", None, C::Setup, true, "setup_or_bootstrap_issue"),
            ("bash: cargo: command not found", None, C::Setup, true, "setup_or_bootstrap_issue"),
            ("remote: Repository not found.", None, C::Setup, true, "setup_or_bootstrap_issue"),
            ("connect ECONNREFUSED: connection refused 127.0.0.1:5432", None, C::Env, true, "environment_issue"),
            ("DATABASE_URL is not set", None, C::Env, true, "environment_issue"),
            ("! [rejected] main -> main (non-fast-forward)", None, C::Setup, false, "branch_diverged_requires_recreate"),
            ("branch_diverged_requires_recreate:both_diverged:abc:def", None, C::Setup, false, "branch_diverged_requires_recreate"),
            ("AssertionError: expected 2 to equal 3", None, C::Test, true, "test_failure"),
            ("Verification commands failed", Some(F::ExecutionFailed), C::Test, true, "test_failure"),
            ("HTTP 503 from upstream", None, C::Flaky, true, "transient_or_flaky_failure"),
            ("request timed out after 30s", None, C::Flaky, true, "transient_or_flaky_failure"),
            ("Doom loop detected in tool calls", None, C::ModelLoop, true, "model_doom_loop"),
            ("Unsupported pseudo tool call detected: todowrite", None, C::ModelLoop, true, "model_doom_loop"),
            ("the agent gave up", None, C::Model, true, "model_or_unknown_failure"),
            ("", None, C::Model, true, "model_or_unknown_failure"),
            // Earlier rules win over later ones.
            ("no changes were made; test failed", None, C::Noop, false, "no_actionable_changes"),
            ("command not found: vitest", None, C::Setup, true, "setup_or_bootstrap_issue"),
        ];
        for (message, code, category, retryable, reason) in cases {
            let expected = Classification {
                category: *category,
                retryable: *retryable,
                reason,
            };
            assert_eq!(classify(message, *code), expected, "{message:?}");
        }
    }

    #[test]
    fn verification_output_maps_to_codes() {
        #[rustfmt::skip]
        let cases: &[(&str, &str, Option<&str>, F)] = &[
            ("make check", "make: *** No rule to make target 'check'.", None, F::VerificationCommandMissingMakeTarget),
            ("pnpm test", "No test files found, exiting with code 1", None, F::VerificationCommandNoTestFiles),
            ("pnpm lint", "ERR_PNPM_NO_SCRIPT  Missing script: lint", None, F::VerificationCommandMissingScript),
            ("yarn run x", "error Command \"x\" not found. Did you mean script y?", None, F::VerificationCommandMissingScript),
            ("npm test", "npm ERR! enoent Could not read package.json", None, F::VerificationCommandMissingScript),
            ("echo $(date)", "", None, F::VerificationCommandUnsupportedFormat),
            ("cd x", "unsupported shell builtin in verification command: cd", None, F::VerificationCommandUnsupportedFormat),
            ("a | b", "shell operators (|) are not allowed", None, F::VerificationCommandUnsupportedFormat),
            ("cargo test", "sh: 1: cargo: not found", None, F::SetupOrBootstrapIssue),
            ("pnpm build", "Error: spawn ENOENT", None, F::SetupOrBootstrapIssue),
            ("pnpm i", "Unsupported engine: wanted: {\"node\":\">=22\"}", None, F::SetupOrBootstrapIssue),
            ("pnpm test", "This package requires Node >= 20", None, F::SetupOrBootstrapIssue),
            ("pnpm test", "Error [ERR_REQUIRE_ESM]: in /w/node_modules/.pnpm/x/index.js", None, F::SetupOrBootstrapIssue),
            ("vitest", "Error: Cannot find package 'vite' imported from /w/x.ts", None, F::SetupOrBootstrapIssue),
            ("vitest", "Error: Cannot find module 'vitest/config' imported from /w/node_modules/x.js", None, F::SetupOrBootstrapIssue),
            // A module of the repository itself is a real failure, not a setup problem.
            ("vitest", "Error: Cannot find module './util' imported from /w/node_modules/x.js", None, F::VerificationCommandFailed),
            ("test -f build/app.bin", "", Some("make clean"), F::VerificationCommandSequenceIssue),
            ("test -s \"dist/index.js\"", "  \n", Some("pnpm run distclean"), F::VerificationCommandSequenceIssue),
            // Needs all three: a generated path, no output, and a clean-like command just before.
            ("test -f build/app.bin", "", Some("make all"), F::VerificationCommandFailed),
            ("test -f build/app.bin", "", None, F::VerificationCommandFailed),
            ("test -f src/app.c", "", Some("make clean"), F::VerificationCommandFailed),
            ("test -f build/app.bin", "missing", Some("make clean"), F::VerificationCommandFailed),
            ("test -f ../build/app.bin", "", Some("make clean"), F::VerificationCommandFailed),
            ("cargo test", "test result: FAILED. 1 passed; 1 failed", None, F::VerificationCommandFailed),
        ];
        for (command, output, previous, expected) in cases {
            let got = verification_failure_code(command, output, *previous);
            assert_eq!(got, *expected, "{command:?} / {output:?}");
        }
    }

    #[test]
    fn quota_messages_are_recognised() {
        #[rustfmt::skip]
        let cases: &[(&str, bool)] = &[
            ("429 Too Many Requests", true),
            ("You've hit your usage limit · resets 3pm", true),
            ("You’ve hit your limit · resets 3:30 PM (Europe/Berlin)", true),
            ("Claude usage limit reached", true),
            ("RESOURCE_EXHAUSTED", true),
            ("Resource has been exhausted (e.g. check quota).", true),
            ("Quota exceeded for metric: generate_requests_per_model_per_day", true),
            ("\"@type\":\"type.googleapis.com/google.rpc.RetryInfo\"", true),
            ("Rate limited, please retry in 30s", true),
            ("rate_limit_error: This request would exceed your rate limit of 50,000 input tokens per minute", true),
            ("Requests are being throttled; try again later", true),
            ("daily limit reached for this key", true),
            ("API Error: 529 {\"type\":\"error\",\"error\":{\"type\":\"overloaded_error\"}}", true),
            ("Overloaded. Please retry shortly.", true),
            // Billing, not a cooldown: a quota signal without a cooldown or scope signal.
            ("insufficient_quota: you exceeded your current quota", false),
            ("error: expected rate limit header to equal 10", false),
            ("memory limit exceeded", false),
            ("rate limit", false),
            ("error: call of overloaded 'f(int)' is ambiguous", false),
            ("the quota module compiles", false),
            ("presets 3pm", false),
            ("listening on port 14290", false),
            ("", false),
        ];
        for (text, expected) in cases {
            assert_eq!(is_quota_message(text), *expected, "{text:?}");
        }
    }

    #[test]
    fn signatures_normalise_volatile_parts() {
        #[rustfmt::skip]
        let cases: &[(&str, Option<F>, &str)] = &[
            ("Run 3f2a1b4c-1234-5678-9abc-def012345678 failed", None, "run <uuid> failed"),
            ("\u{1b}[31mError\u{1b}[0m: at /home/u/repo/src/a.rs:12:5", None, "error: at <path>:<n>:<n>"),
            ("\u{1b}[31 not a colour", None, "\u{1b}[<n> not a colour"),
            ("  took   1500 ms\n\tretry 2 ", None, "took <n> ms retry <n>"),
            ("see src/a/lib.rs", None, "see src<path>"),
            ("see src/lib.rs", None, "see src/lib.rs"),
            ("see /single", None, "see /single"),
            ("Tests failed", Some(F::TestFailure), "code:test_failure tests failed"),
            ("", Some(F::QuotaFailure), "code:quota_failure"),
            ("", None, ""),
        ];
        for (message, code, expected) in cases {
            assert_eq!(failure_signature(message, *code), *expected, "{message:?}");
        }
        // Same failure, different ids and numbers: same signature.
        assert_eq!(
            failure_signature("timeout after 31s in /tmp/a1/x", None),
            failure_signature("Timeout after 45s in /tmp/b2/y", None),
        );
    }

    #[test]
    fn signatures_are_cut_at_400_characters() {
        let long = "é".repeat(500);
        assert_eq!(failure_signature(&long, None).chars().count(), 400);
        let prefixed = failure_signature(&"x".repeat(500), Some(F::ModelDoomLoop));
        assert_eq!(prefixed.len(), "code:model_doom_loop ".len() + 400);
    }

    #[test]
    fn budgets_match_the_spec_defaults() {
        #[rustfmt::skip]
        let cases: &[(C, u32)] = &[
            (C::Env, 5), (C::Setup, 3), (C::Permission, 0), (C::Noop, 0), (C::Policy, 3),
            (C::Test, 3), (C::Flaky, 6), (C::Model, 3), (C::ModelLoop, 1),
        ];
        for (category, budget) in cases {
            assert_eq!(category_budget(*category), *budget, "{category}");
        }
        assert_eq!(cases.len(), C::ALL.len());
    }
}

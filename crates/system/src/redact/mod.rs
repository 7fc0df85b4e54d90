//! Secrets never reach logs, prompts, PR bodies or the state (DESIGN §6, §10).
//!
//! A [`Redactor`] replaces with `[REDACTED]`:
//!
//! - every occurrence of a known secret value: the values of the environment variables an agent
//!   was given, and the forge tokens (values shorter than 8 characters are ignored: they would
//!   match ordinary words);
//! - well-known token shapes, known or not: GitHub tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`,
//!   `github_pat_` + at least 20 of `[A-Za-z0-9_]`), `sk-…` keys (Anthropic `sk-ant-…`, OpenAI
//!   `sk-…`/`sk-proj-…`), AWS access key ids (`AKIA`/`ASIA` + 16 of `[0-9A-Z]`), `Bearer <token>`,
//!   `Authorization: <value>` headers, `-----BEGIN … PRIVATE KEY-----` blocks, and the
//!   placeholders agents get for model keys (`opentiger-placeholder-` + 16 or more hex digits,
//!   issue 37: worthless outside their run's proxy, but an agent that writes one out was after
//!   its key);
//! - the value (not the key) of `KEY=value`, `key: value` and `"key": "value"` when the key name
//!   contains TOKEN, SECRET, PASSWORD, PASSWD, API_KEY, APIKEY, PRIVATE_KEY or CREDENTIAL
//!   (case-insensitive, `-` read as `_`). Numbers, booleans and empty values are kept, so `max_tokens=4096` stays readable.
//!
//! The scanners ([`shapes`]) are hand-written (no regex crate). Each finds byte ranges; overlapping ranges are
//! merged, then replaced. Shapes that could be ordinary words (`sk-…`, `Bearer …`) must also look
//! random: contain a digit, or both upper- and lower-case letters.
//!
//! Not here: deciding which variables are secret (the caller names them), and redacting anything
//! but text.

mod shapes;

use std::fmt;
use std::ops::Range;

use crate::credentials::TOKEN_VARS; // the forge tokens, always redacted (`Redactor::from_env`)
use shapes::{
    scan_authorization, scan_aws_key_ids, scan_bearer, scan_key_values, scan_prefixed_tokens,
    scan_private_keys, PLACEHOLDER_PREFIX,
};

const MARK: &str = "[REDACTED]";
/// Known secret values shorter than this are ignored.
const MIN_SECRET_LEN: usize = 8;

/// Replaces secrets in text with `[REDACTED]`. Cheap to clone; its `Debug` shows no secret.
#[derive(Clone, Default)]
pub struct Redactor {
    /// Longest first, deduplicated.
    secrets: Vec<String>,
}

impl fmt::Debug for Redactor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Redactor {{ {} known secrets }}", self.secrets.len())
    }
}

impl Redactor {
    /// A redactor for these secret values (surrounding whitespace trimmed; values shorter than 8
    /// characters ignored), on top of the built-in token shapes.
    pub fn new(secret_values: impl IntoIterator<Item = String>) -> Redactor {
        let mut secrets: Vec<String> = secret_values
            .into_iter()
            .map(|s| s.trim().to_string())
            .filter(|s| s.chars().count() >= MIN_SECRET_LEN)
            .collect();
        secrets.sort_by(|a, b| b.len().cmp(&a.len()).then_with(|| a.cmp(b)));
        secrets.dedup();
        Redactor { secrets }
    }

    /// A redactor for the values of the variables `names` (e.g. an agent's `env_passthrough`)
    /// plus the forge tokens (`credentials::TOKEN_VARS`), read through `lookup`
    /// (`|n| std::env::var(n).ok()` in the shell, a map in tests).
    pub fn from_env(names: &[String], lookup: impl Fn(&str) -> Option<String>) -> Redactor {
        let names = names.iter().map(String::as_str).chain(TOKEN_VARS);
        Redactor::new(names.filter_map(lookup))
    }

    /// The secret values this redactor knows (for the threat scan's encoded forms of them).
    pub fn values(&self) -> &[String] {
        &self.secrets
    }

    /// `text` with every known secret and every recognised token shape replaced by `[REDACTED]`.
    pub fn redact(&self, text: &str) -> String {
        let mut ranges = Vec::new();
        for secret in &self.secrets {
            ranges.extend(
                text.match_indices(secret.as_str())
                    .map(|(i, s)| i..i + s.len()),
            );
        }
        let bytes = text.as_bytes();
        scan_prefixed_tokens(bytes, &mut ranges);
        scan_aws_key_ids(bytes, &mut ranges);
        scan_bearer(bytes, &mut ranges);
        scan_authorization(bytes, &mut ranges);
        scan_private_keys(bytes, &mut ranges);
        scan_key_values(bytes, &mut ranges);
        replace(text, ranges)
    }

    /// What kind of secret `text` holds, if any: a known value (a forge token, a passed-through
    /// variable) or an unmistakable token shape (GitHub, `sk-` API keys, AWS key ids, private
    /// key blocks). Looser shapes the redactor also hides (`password: …`, `Bearer …`) are not
    /// reported here: in a diff they are far more often code than a secret. Never the value.
    pub fn secret_in(&self, text: &str) -> Option<&'static str> {
        if self.secrets.iter().any(|s| text.contains(s.as_str())) {
            return Some("a secret the runner holds or passes to the agent");
        }
        let bytes = text.as_bytes();
        let mut ranges = Vec::new();
        scan_prefixed_tokens(bytes, &mut ranges);
        if let Some(r) = ranges.first() {
            return Some(if bytes[r.start..].starts_with(PLACEHOLDER_PREFIX) {
                "the placeholder of a model key (the agent's stand-in for a key the runner holds)"
            } else if bytes[r.start..].starts_with(b"sk-ant-") {
                "an Anthropic API key"
            } else if bytes[r.start..].starts_with(b"sk-") {
                "an OpenAI-style API key"
            } else {
                "a GitHub token"
            });
        }
        scan_aws_key_ids(bytes, &mut ranges);
        if !ranges.is_empty() {
            return Some("an AWS access key id");
        }
        scan_private_keys(bytes, &mut ranges);
        if !ranges.is_empty() {
            return Some("a private key");
        }
        None
    }

    /// `value` with every string in it (keys too) redacted: an agent's result file before any
    /// of it is stored, posted or printed.
    pub fn redact_json(&self, value: serde_json::Value) -> serde_json::Value {
        use serde_json::Value;
        match value {
            Value::String(s) => Value::String(self.redact(&s)),
            Value::Array(items) => {
                Value::Array(items.into_iter().map(|v| self.redact_json(v)).collect())
            }
            Value::Object(map) => Value::Object(
                map.into_iter()
                    .map(|(k, v)| (self.redact(&k), self.redact_json(v)))
                    .collect(),
            ),
            other => other,
        }
    }

    /// A short excerpt for the state (e.g. a failure's output): redacted first, trailing
    /// whitespace trimmed, then the last `max_chars` characters, prefixed with `…` when cut.
    pub fn excerpt(&self, text: &str, max_chars: usize) -> String {
        let redacted = self.redact(text);
        let trimmed = redacted.trim_end();
        let count = trimmed.chars().count();
        if count <= max_chars {
            return trimmed.to_string();
        }
        let start = trimmed
            .char_indices()
            .nth(count - max_chars)
            .map_or(trimmed.len(), |(i, _)| i);
        format!("…{}", &trimmed[start..])
    }
}

/// Replaces the merged `ranges` of `text` with the mark. Ranges fall on char boundaries: every
/// scanner starts and stops on ASCII bytes or at the ends of a `str` match.
fn replace(text: &str, mut ranges: Vec<Range<usize>>) -> String {
    ranges.sort_by_key(|r| (r.start, r.end));
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    let mut current: Option<Range<usize>> = None;
    for r in ranges.into_iter().filter(|r| !r.is_empty()) {
        match current.as_mut() {
            Some(c) if r.start <= c.end => c.end = c.end.max(r.end),
            _ => {
                if let Some(c) = current.replace(r) {
                    out.push_str(text.get(done..c.start).unwrap_or(""));
                    out.push_str(MARK);
                    done = c.end;
                }
            }
        }
    }
    if let Some(c) = current {
        out.push_str(text.get(done..c.start).unwrap_or(""));
        out.push_str(MARK);
        done = c.end;
    }
    out.push_str(text.get(done..).unwrap_or(""));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const GHP: &str = "ghp_16C7e42F292c6912E7710c838347Ae178B4a";
    const SK_ANT: &str = "sk-ant-api03-AbCdEf0123456789_xyz-QRSTuvwx";

    fn redact(text: &str) -> String {
        Redactor::new(["my-known-secret-value".to_string()]).redact(text)
    }

    #[test]
    fn token_shapes_are_redacted() {
        let pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n-----END OPENSSH PRIVATE KEY-----";
        let cases = [
            (
                format!("token {GHP} leaked"),
                "token [REDACTED] leaked".to_string(),
            ),
            (
                "x ghs_abcdefghijABCDEFGHIJ0123 y".into(),
                "x [REDACTED] y".into(),
            ),
            (
                "github_pat_11ABCDEFG0123456789_abcdefXYZ".into(),
                MARK.into(),
            ),
            (format!("key={SK_ANT}"), "key=[REDACTED]".into()),
            (
                "OPENAI sk-proj-Ab3dEfGh1jKlMnOpQrStUv.".into(),
                "OPENAI [REDACTED].".into(),
            ),
            ("sk-0123456789abcdefghijABCD".into(), MARK.into()),
            (
                "with opentiger-placeholder-0123456789abcdef0123456789abcdef.".into(),
                "with [REDACTED].".into(),
            ),
            (
                "aws AKIAIOSFODNN7EXAMPLE ok".into(),
                "aws [REDACTED] ok".into(),
            ),
            (
                "-H 'Bearer eyJhbGciOi.J9.abc'".into(),
                "-H 'Bearer [REDACTED]'".into(),
            ),
            (
                "curl -H \"Authorization: token abc\" x".into(),
                "curl -H \"Authorization: [REDACTED]\" x".into(),
            ),
            (
                "{\"authorization\": \"Basic dXNlcjpw\"}".into(),
                "{\"authorization\": \"[REDACTED]\"}".into(),
            ),
            (format!("a\n{pem}\nb"), "a\n[REDACTED]\nb".into()),
            (
                "-----BEGIN RSA PRIVATE KEY-----\nMIIE…cut".into(),
                MARK.into(),
            ),
            (
                "ANTHROPIC_API_KEY=abc123xyz run".into(),
                "ANTHROPIC_API_KEY=[REDACTED] run".into(),
            ),
            (
                "export DB_PASSWORD='hunter two'".into(),
                "export DB_PASSWORD='[REDACTED]'".into(),
            ),
            (
                "{\"client_secret\": \"s3cr3t\", \"n\": 1}".into(),
                "{\"client_secret\": \"[REDACTED]\", \"n\": 1}".into(),
            ),
            (
                "agent --api-key=abcdef go".into(),
                "agent --api-key=[REDACTED] go".into(),
            ),
            ("password: hunter2".into(), "password: [REDACTED]".into()),
            (
                r#"{"token": "ab\"cd", "x": 1}"#.into(),
                r#"{"token": "[REDACTED]", "x": 1}"#.into(),
            ),
            (
                "?access_token=xyz&page=2".into(),
                "?access_token=[REDACTED]&page=2".into(),
            ),
            (
                "known my-known-secret-value!".into(),
                "known [REDACTED]!".into(),
            ),
        ];
        for (input, expected) in cases {
            assert_eq!(redact(&input), expected, "input: {input}");
        }
    }

    #[test]
    fn near_misses_stay() {
        let cases = [
            "the task-runner-with-a-very-long-name-here failed",
            "uses sk-learn-based-classification-models",
            "commit 3f786850e387550fdab836ed7e6dc881de23001b",
            "tokens: 1234",
            "input_tokens=1234 output_tokens=56",
            "{\"input_tokens\": 12, \"cost_usd\": 0.12}",
            "ghp_short and sk-short and AKIA1234",
            "AKIAIOSFODNN7EXAMPLEXYZ is too long for a key id",
            "Bearer authentication is used",
            "the secret is out; if token == expected",
            "NEEDS_PASSWORD=true SECRET_COUNT=0 API_KEY=",
            "use std::token::Token;",
            "https://github.com/org/repo/pull/12",
            "-----BEGIN PUBLIC KEY-----\nMIIB\n-----END PUBLIC KEY-----",
            "Authorization:",
        ];
        for text in cases {
            assert_eq!(redact(text), text);
        }
    }

    #[test]
    fn known_secrets_short_values_and_overlaps() {
        let r = Redactor::new(["short".into(), "  abcdefgh\n".into(), "abcdefghij".into()]);
        assert_eq!(
            r.redact("short abcdefghij abcdefgh"),
            "short [REDACTED] [REDACTED]"
        );
        // A known secret inside a token shape merges into one mark.
        let r = Redactor::new([GHP[4..20].to_string()]);
        assert_eq!(r.redact(&format!("{GHP}x")), MARK);
        assert_eq!(format!("{r:?}"), "Redactor { 1 known secrets }");
        assert_eq!(r.redact("ünïcödé ✓"), "ünïcödé ✓");
        assert_eq!(r.redact(""), "");
    }

    #[test]
    fn from_env_collects_named_variables_and_forge_tokens() {
        let lookup = |name: &str| match name {
            "ANTHROPIC_API_KEY" => Some("anthropic-value-1".to_string()),
            "GH_TOKEN" => Some("gh-token-value-2".to_string()),
            "OTHER" => Some("other-value-3".to_string()),
            _ => None,
        };
        let r = Redactor::from_env(&["ANTHROPIC_API_KEY".into(), "MISSING".into()], lookup);
        let text = "anthropic-value-1 gh-token-value-2 other-value-3";
        assert_eq!(r.redact(text), "[REDACTED] [REDACTED] other-value-3");
    }

    #[test]
    fn excerpt_redacts_then_keeps_the_end() {
        let r = Redactor::default();
        let cases = [
            ("short\n\n", 10, "short"),
            ("0123456789", 10, "0123456789"),
            ("0123456789abc", 3, "…abc"),
            ("ééééé", 2, "…éé"),
            ("x", 0, "…"),
        ];
        for (text, max, expected) in cases {
            assert_eq!(r.excerpt(text, max), expected, "{text:?} {max}");
        }
        let text = format!("error: bad credentials {GHP}\n");
        assert_eq!(r.excerpt(&text, 14), "…als [REDACTED]");
    }

    #[test]
    fn secret_in_names_the_kind_never_the_value() {
        let r = Redactor::new(["passthrough-value-123".to_string()]);
        let cases = [
            (
                "key = passthrough-value-123",
                Some("a secret the runner holds or passes to the agent"),
            ),
            (
                "let t = \"ghp_abcdefghijklmnopqrstuvwxyz0123\";",
                Some("a GitHub token"),
            ),
            (
                "ANTHROPIC=sk-ant-api03-Abcdefghijklmnop0123456789",
                Some("an Anthropic API key"),
            ),
            (
                "k: sk-proj-Abcdefghijklmnop0123456789",
                Some("an OpenAI-style API key"),
            ),
            ("id AKIAABCDEFGHIJKLMNOP", Some("an AWS access key id")),
            (
                "key = opentiger-placeholder-0123456789abcdef0123456789abcdef",
                Some("the placeholder of a model key (the agent's stand-in for a key the runner holds)"),
            ),
            ("-----BEGIN RSA PRIVATE KEY-----", Some("a private key")),
            ("password = os.environ['PW']", None),
            ("fn task-sk-learn-based() {}", None),
            ("-----BEGIN CERTIFICATE-----", None),
        ];
        for (text, want) in cases {
            assert_eq!(r.secret_in(text), want, "{text}");
        }
    }

    #[test]
    fn json_strings_are_redacted_at_any_depth() {
        let r = Redactor::new(["the-passthrough-key".to_string()]);
        let value = serde_json::json!({
            "verdict": "request_changes",
            "summary": "saw the-passthrough-key",
            "findings": ["a", {"deep": ["x the-passthrough-key y"]}],
            "cost": 1.5
        });
        let out = r.redact_json(value);
        assert_eq!(out["verdict"], "request_changes");
        assert_eq!(out["summary"], "saw [REDACTED]");
        assert_eq!(out["findings"][1]["deep"][0], "x [REDACTED] y");
        assert_eq!(out["cost"], 1.5);
    }
}

//! Quota and rate-limit detection in agent output (spec §2.3 "Quota detection (worker)"), read
//! by the failure classifier and the agent adapters. Not for: how long to wait
//! (`engine::backoff`) or what the wait does to the task and its executor (`engine::outcome`,
//! `engine::fallback`).

use super::text::*;

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

#[cfg(test)]
mod tests {
    use super::*;

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
}

//! Quota backoff: how long a task blocked on `quota_wait` waits before it is tried again
//! (spec §3.4, "Quota backoff").
//!
//! Exponential in the number of quota waits taken, capped, with a deterministic jitter (a hash of
//! task id and attempt, never randomness), unless the provider's own error message says when to
//! come back: then that hint wins, uncapped and without jitter.
//!
//! Not for: deciding that a failure *is* a quota failure (see `classify::is_quota_message`), or
//! the other cooldowns of spec §3.4, which are plain constants. Time enters as `now_ms` (unix
//! milliseconds); clock times in messages are read as UTC.

/// The quota backoff settings (spec §3.4 defaults; see [`QuotaBackoff::normalized`] for the
/// clamps applied to configured values).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct QuotaBackoff {
    pub base_ms: i64,
    pub factor: f64,
    pub max_ms: i64,
    pub jitter_ratio: f64,
}

impl Default for QuotaBackoff {
    /// spec §3.4: 120 s base (the blocked cooldown), ×2 per wait, at most 30 min, 20 % jitter.
    fn default() -> Self {
        QuotaBackoff {
            base_ms: 120_000,
            factor: 2.0,
            max_ms: 1_800_000,
            jitter_ratio: 0.2,
        }
    }
}

/// spec §3.4: the base never goes below one second.
const MIN_BASE_MS: i64 = 1_000;

/// A "retry after" longer than this is noise (a garbled number), not a hint: it is ignored and the
/// ordinary backoff applies, rather than parking a task for years.
const MAX_PLAUSIBLE_HINT_MS: i64 = 31 * DAY_MS;

const DAY_MS: i64 = 86_400_000;
const HOUR_MS: i64 = 3_600_000;
const MINUTE_MS: i64 = 60_000;

impl QuotaBackoff {
    /// The settings with spec §3.4's clamps applied: base at least 1 s, max at least base, factor
    /// above 1 (else 2), jitter ratio within 0..=1 (not a number: 0.2).
    pub fn normalized(&self) -> QuotaBackoff {
        let defaults = QuotaBackoff::default();
        let base_ms = self.base_ms.max(MIN_BASE_MS);
        let factor = if self.factor.is_finite() && self.factor > 1.0 {
            self.factor
        } else {
            defaults.factor
        };
        let jitter_ratio = if self.jitter_ratio.is_nan() {
            defaults.jitter_ratio
        } else {
            self.jitter_ratio.clamp(0.0, 1.0)
        };
        QuotaBackoff {
            base_ms,
            factor,
            max_ms: self.max_ms.max(base_ms),
            jitter_ratio,
        }
    }

    /// spec §3.4: `min(max, ceil(base × factor^attempt))`, before jitter and hints.
    pub fn exponential_ms(&self, attempt: u32) -> i64 {
        let cfg = self.normalized();
        let raw = (cfg.base_ms as f64 * cfg.factor.powf(f64::from(attempt))).ceil();
        if raw >= cfg.max_ms as f64 {
            cfg.max_ms
        } else {
            raw as i64
        }
    }
}

/// spec §3.4: the jitter seed, a ×31 rolling hash of `"{task_id}:{attempt}"` in wrapping `u32`
/// arithmetic over the UTF-8 bytes (the same as the original for ASCII task ids).
pub fn jitter_hash(task_id: &str, attempt: u32) -> u32 {
    format!("{task_id}:{attempt}")
        .bytes()
        .fold(0u32, |hash, b| {
            hash.wrapping_mul(31).wrapping_add(u32::from(b))
        })
}

/// How long to wait after the `attempt`-th quota wait (0 for the first), given the latest failure
/// message (spec §3.4).
pub fn quota_cooldown_ms(
    cfg: &QuotaBackoff,
    task_id: &str,
    attempt: u32,
    last_message: &str,
    now_ms: i64,
) -> i64 {
    let cfg = cfg.normalized();
    let exponential = cfg.exponential_ms(attempt);
    if let Some(hint) = parse_retry_hint(last_message, now_ms) {
        // spec §3.4: the provider knows best; its hint is neither capped nor jittered.
        return exponential.max(hint);
    }
    let max_jitter = (exponential as f64 * cfg.jitter_ratio).floor() as i64;
    let jitter = i64::from(jitter_hash(task_id, attempt)) % (max_jitter + 1);
    cfg.max_ms.min(exponential.saturating_add(jitter))
}

/// The longest retry hint in `message`, in milliseconds from `now_ms` (spec §3.4).
///
/// Hints: `retry in <dur>` (also "please retry in"; a unit is required), `retryDelay` followed by
/// `"`, `:`, `=` or spaces and a duration (`"retryDelay":"43s"`; a bare number is seconds), and a
/// clock time after `try again|retry|reset|resets|available [at]`: `3pm`, `3:30 PM`, or
/// `15:30 UTC`. A clock time is read as UTC; if it is not after `now_ms` today, it means
/// tomorrow. Durations: `N`, `Ns`, `Nms`, `Nm` (decimals allowed), also `Nh` and spelled units.
pub fn parse_retry_hint(message: &str, now_ms: i64) -> Option<i64> {
    let text = message.to_lowercase();
    let relative = text.match_indices("retry in").filter_map(|(at, m)| {
        let start = skip_separators(&text, at + m.len(), |b| b.is_ascii_whitespace())?;
        duration_ms_at(&text, start, false)
    });
    let retry_delay = text.match_indices("retrydelay").filter_map(|(at, m)| {
        let start = skip_separators(&text, at + m.len(), |b| {
            b.is_ascii_whitespace() || matches!(b, b'"' | b':' | b'=')
        })?;
        duration_ms_at(&text, start, true)
    });
    let clock = clock_hints(&text).map(|minute_of_day| until_next(minute_of_day, now_ms));
    relative
        .chain(retry_delay)
        .chain(clock)
        .filter(|ms| (1..=MAX_PLAUSIBLE_HINT_MS).contains(ms))
        .max()
}

/// The index after one or more separator bytes starting at `at`, or `None` if there is none.
fn skip_separators(text: &str, at: usize, is_separator: impl Fn(u8) -> bool) -> Option<usize> {
    let skipped = text.as_bytes()[at..]
        .iter()
        .take_while(|b| is_separator(**b))
        .count();
    (skipped > 0).then_some(at + skipped)
}

/// A duration at `at`: a decimal number and a unit, attached or after spaces. Without a unit it is
/// seconds if `bare_is_seconds`, else not a duration.
fn duration_ms_at(text: &str, at: usize, bare_is_seconds: bool) -> Option<i64> {
    let bytes = text.as_bytes();
    let int_digits = count_digits(bytes, at);
    if int_digits == 0 {
        return None;
    }
    let mut end = at + int_digits;
    if bytes.get(end) == Some(&b'.') {
        let frac_digits = count_digits(bytes, end + 1);
        if frac_digits > 0 {
            end += 1 + frac_digits;
        }
    }
    let amount: f64 = text[at..end].parse().ok()?;
    let attached = count_letters(bytes, end);
    let unit_ms = if attached > 0 {
        unit_ms(&text[end..end + attached])?
    } else {
        let spaced = end
            + bytes[end..]
                .iter()
                .take_while(|b| b.is_ascii_whitespace())
                .count();
        let letters = count_letters(bytes, spaced);
        match unit_ms(&text[spaced..spaced + letters]) {
            Some(ms) if spaced > end => ms,
            _ if bare_is_seconds => 1_000.0,
            _ => return None,
        }
    };
    let ms = (amount * unit_ms).ceil();
    // Anything this large is dropped by the plausibility filter anyway.
    (ms <= MAX_PLAUSIBLE_HINT_MS as f64).then_some(ms as i64)
}

/// Milliseconds per unit word.
fn unit_ms(word: &str) -> Option<f64> {
    let ms = match word {
        "ms" | "msec" | "msecs" | "millisecond" | "milliseconds" => 1.0,
        "s" | "sec" | "secs" | "second" | "seconds" => 1_000.0,
        "m" | "min" | "mins" | "minute" | "minutes" => MINUTE_MS as f64,
        "h" | "hr" | "hrs" | "hour" | "hours" => HOUR_MS as f64,
        _ => return None,
    };
    Some(ms)
}

fn count_digits(bytes: &[u8], at: usize) -> usize {
    bytes.get(at..).map_or(0, |rest| {
        rest.iter().take_while(|b| b.is_ascii_digit()).count()
    })
}

fn count_letters(bytes: &[u8], at: usize) -> usize {
    bytes.get(at..).map_or(0, |rest| {
        rest.iter().take_while(|b| b.is_ascii_alphabetic()).count()
    })
}

/// Words after which a clock time says when the quota comes back (spec §3.4).
const CLOCK_KEYWORDS: &[&str] = &["try again", "retry", "reset", "resets", "available"];

/// Every `<keyword> [at] <clock time>` in `text`, as minutes after midnight UTC.
fn clock_hints(text: &str) -> impl Iterator<Item = i64> + '_ {
    let bytes = text.as_bytes();
    CLOCK_KEYWORDS.iter().flat_map(move |keyword| {
        text.match_indices(keyword).filter_map(move |(at, m)| {
            if at > 0 && is_word_byte(bytes[at - 1]) {
                return None;
            }
            let mut start = skip_separators(text, at + m.len(), |b| b.is_ascii_whitespace())?;
            if text[start..].starts_with("at") {
                if let Some(after_at) =
                    skip_separators(text, start + 2, |b| b.is_ascii_whitespace())
                {
                    start = after_at;
                }
            }
            clock_at(bytes, start)
        })
    })
}

/// A clock time at `at`: `H[:MM] am|pm`, or 24-hour `HH:MM UTC|GMT`; minutes after midnight.
fn clock_at(bytes: &[u8], at: usize) -> Option<i64> {
    let hour_digits = count_digits(bytes, at);
    if !(1..=2).contains(&hour_digits) {
        return None;
    }
    let hour = parse_small(&bytes[at..at + hour_digits]);
    let mut end = at + hour_digits;
    let mut minute = None;
    if bytes.get(end) == Some(&b':') {
        let digits = bytes.get(end + 1..end + 3)?;
        if !digits.iter().all(u8::is_ascii_digit) || count_digits(bytes, end + 1) != 2 {
            return None;
        }
        minute = Some(parse_small(digits));
        end += 3;
    }
    while bytes.get(end).is_some_and(u8::is_ascii_whitespace) {
        end += 1;
    }
    let word_len = count_letters(bytes, end);
    let word = &bytes[end..end + word_len];
    let minute_of_hour = minute.unwrap_or(0);
    if minute_of_hour > 59 {
        return None;
    }
    let hour_of_day = match word {
        b"am" | b"pm" if (1..=12).contains(&hour) => hour % 12 + if word == b"pm" { 12 } else { 0 },
        // `HH:MM UTC`: only with minutes, so "retry 3 utc" is not a time.
        b"utc" | b"gmt" if minute.is_some() && hour <= 23 => hour,
        _ => return None,
    };
    if bytes.get(end + word_len).is_some_and(|b| is_word_byte(*b)) {
        return None;
    }
    Some(hour_of_day * 60 + minute_of_hour)
}

/// One or two ASCII digits as a number.
fn parse_small(digits: &[u8]) -> i64 {
    digits.iter().fold(0, |n, d| n * 10 + i64::from(d - b'0'))
}

/// Milliseconds from `now_ms` to the next `minute_of_day` (UTC) strictly after it.
fn until_next(minute_of_day: i64, now_ms: i64) -> i64 {
    let midnight = now_ms.div_euclid(DAY_MS) * DAY_MS;
    let today = midnight + minute_of_day * MINUTE_MS;
    let next = if today <= now_ms {
        today + DAY_MS
    } else {
        today
    };
    next - now_ms
}

fn is_word_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2024-01-01T12:00:00Z.
    const NOON: i64 = 1_704_110_400_000;

    #[test]
    fn exponential_grows_then_caps() {
        let cfg = QuotaBackoff::default();
        #[rustfmt::skip]
        let cases: &[(u32, i64)] = &[
            (0, 120_000), (1, 240_000), (2, 480_000), (3, 960_000),
            (4, 1_800_000), (10, 1_800_000), (u32::MAX, 1_800_000),
        ];
        for (attempt, expected) in cases {
            assert_eq!(cfg.exponential_ms(*attempt), *expected, "attempt {attempt}");
        }
        let gentle = QuotaBackoff {
            base_ms: 1_000,
            factor: 1.5,
            max_ms: 10_000,
            jitter_ratio: 0.0,
        };
        let cases: &[(u32, i64)] = &[(0, 1_000), (1, 1_500), (3, 3_375), (6, 10_000)];
        for (attempt, expected) in cases {
            assert_eq!(
                gentle.exponential_ms(*attempt),
                *expected,
                "attempt {attempt}"
            );
        }
    }

    #[test]
    fn settings_are_clamped() {
        let q = |base_ms, factor, max_ms, jitter_ratio| QuotaBackoff {
            base_ms,
            factor,
            max_ms,
            jitter_ratio,
        };
        #[rustfmt::skip]
        let cases = [
            (q(120_000, 2.0, 1_800_000, 0.2), q(120_000, 2.0, 1_800_000, 0.2)),
            (q(10, 2.0, 60_000, 0.2), q(1_000, 2.0, 60_000, 0.2)),
            (q(-5, 3.0, 0, 0.5), q(1_000, 3.0, 1_000, 0.5)),
            (q(5_000, 1.0, 60_000, 0.2), q(5_000, 2.0, 60_000, 0.2)),
            (q(5_000, 0.5, 60_000, 0.2), q(5_000, 2.0, 60_000, 0.2)),
            (q(5_000, f64::INFINITY, 60_000, 0.2), q(5_000, 2.0, 60_000, 0.2)),
            (q(5_000, 2.0, 60_000, -1.0), q(5_000, 2.0, 60_000, 0.0)),
            (q(5_000, 2.0, 60_000, 7.0), q(5_000, 2.0, 60_000, 1.0)),
            (q(5_000, 2.0, 60_000, f64::NAN), q(5_000, 2.0, 60_000, 0.2)),
        ];
        for (given, expected) in cases {
            assert_eq!(given.normalized(), expected, "{given:?}");
        }
    }

    #[test]
    fn jitter_hash_is_a_rolling_times_31() {
        #[rustfmt::skip]
        let cases: &[(&str, u32, u32)] = &[
            ("a", 0, (97 * 31 + 58) * 31 + 48), // "a:0"
            ("", 7, 58 * 31 + 55),              // ":7"
        ];
        for (task_id, attempt, expected) in cases {
            assert_eq!(
                jitter_hash(task_id, *attempt),
                *expected,
                "{task_id}:{attempt}"
            );
        }
        // Long ids wrap instead of overflowing; the attempt changes the hash.
        let id = "0b8f6c2e-5d1a-4c7b-9e3f-2a6d8c4b1e07";
        assert_eq!(jitter_hash(id, 3), jitter_hash(id, 3));
        assert_ne!(jitter_hash(id, 3), jitter_hash(id, 4));
    }

    #[test]
    fn jitter_is_deterministic_and_bounded() {
        let cfg = QuotaBackoff::default();
        // hash("a:0") = 95063; 95063 mod (floor(120000 × 0.2) + 1) = 23060.
        assert_eq!(quota_cooldown_ms(&cfg, "a", 0, "", NOON), 143_060);
        for attempt in 0..6 {
            let exponential = cfg.exponential_ms(attempt);
            for task_id in ["a", "task-1", "0b8f6c2e-5d1a-4c7b-9e3f-2a6d8c4b1e07", "ü"] {
                let first = quota_cooldown_ms(&cfg, task_id, attempt, "quota exceeded", NOON);
                let again = quota_cooldown_ms(&cfg, task_id, attempt, "quota exceeded", NOON);
                assert_eq!(first, again);
                let jitter = first - exponential;
                assert!(
                    jitter >= 0 && jitter * 5 <= exponential,
                    "{task_id}:{attempt} {first}"
                );
                assert!(first <= cfg.max_ms);
            }
        }
        let no_jitter = QuotaBackoff {
            jitter_ratio: 0.0,
            ..cfg
        };
        assert_eq!(quota_cooldown_ms(&no_jitter, "a", 1, "", NOON), 240_000);
    }

    #[test]
    fn retry_hints_are_parsed() {
        #[rustfmt::skip]
        let cases: &[(&str, Option<i64>)] = &[
            ("Please retry in 45.811974541s.", Some(45_812)),
            ("retry in 30s", Some(30_000)),
            ("Retry in 500ms", Some(500)),
            ("retry in 2m", Some(120_000)),
            ("please retry in 30 seconds", Some(30_000)),
            ("retry in 3 attempts", None),
            ("retry in 30", None),
            (r#"[{"@type":"google.rpc.RetryInfo","retryDelay":"43s"}]"#, Some(43_000)),
            (r#""retryDelay": "0.01s""#, Some(10)),
            ("retryDelay: 15", Some(15_000)),
            ("retrydelay=1.5s", Some(1_500)),
            ("retryDelay=2m", Some(120_000)),
            ("retryDelay: 250ms", Some(250)),
            ("retryDelay", None),
            ("You've hit your usage limit · resets 3pm", Some(3 * HOUR_MS)),
            ("resets at 3:30 PM", Some(3 * HOUR_MS + 30 * MINUTE_MS)),
            ("Try again at 1:05pm.", Some(HOUR_MS + 5 * MINUTE_MS)),
            ("available at 15:30 UTC", Some(3 * HOUR_MS + 30 * MINUTE_MS)),
            ("reset 09:00 gmt", Some(21 * HOUR_MS)),
            // Already past today: tomorrow.
            ("try again at 11am", Some(23 * HOUR_MS)),
            ("retry at 12pm", Some(DAY_MS)),
            ("retry at 12am", Some(12 * HOUR_MS)),
            ("resets at 13pm", None),
            ("resets 3:75pm", None),
            ("resets at 15:30", None),
            ("resets 123pm", None),
            ("presets 3pm", None),
            ("retrying 3pm", None),
            ("no hint here", None),
            ("", None),
            // Multiple hints: the largest.
            ("retry in 10s, then retry in 20s", Some(20_000)),
            ("retry in 5s; retryDelay: 90s; resets 1pm", Some(HOUR_MS)),
            // Not plausible: ignored.
            ("retry in 99999999s", None),
        ];
        for (message, expected) in cases {
            assert_eq!(parse_retry_hint(message, NOON), *expected, "{message:?}");
        }
    }

    #[test]
    fn clock_hints_count_from_now() {
        #[rustfmt::skip]
        let cases: &[(i64, &str, i64)] = &[
            (NOON + 30_000, "resets 3pm", 3 * HOUR_MS - 30_000),
            (NOON - 12 * HOUR_MS, "resets 12am", DAY_MS),
            (NOON - 12 * HOUR_MS - 1, "resets 12am", 1),
            // Before the epoch still counts from that day's midnight.
            (-HOUR_MS, "resets at 1am", 2 * HOUR_MS),
        ];
        for (now_ms, message, expected) in cases {
            let got = parse_retry_hint(message, *now_ms);
            assert_eq!(got, Some(*expected), "{message} @ {now_ms}");
        }
    }

    #[test]
    fn hints_replace_jitter_and_cap() {
        let cfg = QuotaBackoff::default();
        #[rustfmt::skip]
        let cases: &[(u32, &str, i64)] = &[
            // Longer than the cap: the hint wins, uncapped.
            (0, "usage limit · resets 3pm", 3 * HOUR_MS),
            // Shorter than the exponential: the exponential, without jitter.
            (2, "Please retry in 5s", 480_000),
            (0, "retryDelay: 130s", 130_000),
        ];
        for (attempt, message, expected) in cases {
            let got = quota_cooldown_ms(&cfg, "task-1", *attempt, message, NOON);
            assert_eq!(got, *expected, "{message}");
        }
    }
}

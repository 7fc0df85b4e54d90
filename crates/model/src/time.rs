//! Time as a plain value: a [`Timestamp`] is whole milliseconds since the Unix epoch, stored as
//! an integer in SQLite and shown as RFC 3339 in UTC, with spans and days. The engine never reads
//! the clock: the shell reads it once per tick (or takes `--now` / `OPENTIGER_NOW`) and passes a
//! `Timestamp` down.
//! Not for: reading the clock (`tick::Context` does, once per tick) or a workflow's cron and how
//! often it fires (`workflows`).

use std::fmt;

use chrono::{DateTime, SecondsFormat, TimeZone, Utc};
use serde::{Deserialize, Serialize};

/// Milliseconds since the Unix epoch, UTC.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Timestamp(pub i64);

/// A signed span of time in milliseconds.
pub type Millis = i64;

pub const SECOND: Millis = 1_000;
pub const MINUTE: Millis = 60 * SECOND;
pub const HOUR: Millis = 60 * MINUTE;
pub const DAY: Millis = 24 * HOUR;

impl Timestamp {
    /// The real clock. Only the shell calls this, once per tick.
    pub fn now() -> Self {
        Timestamp(Utc::now().timestamp_millis())
    }

    /// Parses RFC 3339 (`2026-11-21T12:40:00Z`, offsets allowed).
    pub fn parse_rfc3339(text: &str) -> Result<Self, String> {
        DateTime::parse_from_rfc3339(text.trim())
            .map(|t| Timestamp(t.timestamp_millis()))
            .map_err(|e| {
                format!("`{text}` is not an RFC 3339 time ({e}); write e.g. 2026-11-21T12:40:00Z")
            })
    }

    pub fn plus(self, span: Millis) -> Self {
        Timestamp(self.0.saturating_add(span))
    }

    pub fn minus(self, other: Timestamp) -> Millis {
        self.0.saturating_sub(other.0)
    }

    /// The UTC calendar day, `YYYY-MM-DD`: the key of the daily spend ledger.
    /// The whole second this instant falls in: GitHub's timestamps have one-second
    /// resolution, so anything compared with one is compared at this (issue 26 item 3).
    pub fn whole_second(self) -> i64 {
        self.0.div_euclid(SECOND)
    }

    /// Whether `self` (a GitHub time) is at or after `since`, at whole seconds: something a
    /// person wrote in the same second as `since` counts as after it, never lost.
    pub fn at_or_after_second(self, since: Timestamp) -> bool {
        self.whole_second() >= since.whole_second()
    }

    pub fn day(self) -> String {
        self.to_datetime().format("%Y-%m-%d").to_string()
    }

    /// Seconds since midnight UTC.
    pub fn seconds_of_day(self) -> i64 {
        self.0.rem_euclid(DAY) / SECOND
    }

    /// Start of this UTC day.
    pub fn start_of_day(self) -> Timestamp {
        Timestamp(self.0 - self.0.rem_euclid(DAY))
    }

    /// `HH:MM:SSZ`, for short status lines about today.
    pub fn clock(self) -> String {
        self.to_datetime().format("%H:%M:%SZ").to_string()
    }

    /// `12:40:00Z` for a time on the same UTC day as `now`, the full RFC 3339 time otherwise.
    pub fn relative_to(self, now: Timestamp) -> String {
        if self.day() == now.day() {
            self.clock()
        } else {
            self.to_string()
        }
    }

    fn to_datetime(self) -> DateTime<Utc> {
        Utc.timestamp_millis_opt(self.0)
            .single()
            .unwrap_or(DateTime::<Utc>::UNIX_EPOCH)
    }
}

impl fmt::Display for Timestamp {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(
            &self
                .to_datetime()
                .to_rfc3339_opts(SecondsFormat::Secs, true),
        )
    }
}

/// Human form of a span: `45s`, `12m`, `3h05m`, `2d04h`.
pub fn human_span(span: Millis) -> String {
    let s = (span.max(0) + SECOND - 1) / SECOND;
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        3600..=86_399 => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
        _ => format!("{}d{:02}h", s / 86_400, (s % 86_400) / 3600),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_round_trip() {
        let t = Timestamp::parse_rfc3339("2026-11-21T12:40:00Z").unwrap();
        assert_eq!(t.to_string(), "2026-11-21T12:40:00Z");
        assert_eq!(t.clock(), "12:40:00Z");
        assert_eq!(t.day(), "2026-11-21");
        assert_eq!(t.seconds_of_day(), 12 * 3600 + 40 * 60);
        let offset = Timestamp::parse_rfc3339("2026-11-21T13:40:00+01:00").unwrap();
        assert_eq!(offset, t);
        assert!(Timestamp::parse_rfc3339("yesterday").is_err());
    }

    /// Issue 26 item 3: GitHub's second against an import kept in milliseconds.
    #[test]
    fn github_times_compare_at_whole_seconds_inclusive() {
        let import = Timestamp(1_000_500); // 1000.5 s
        #[rustfmt::skip]
        let cases = [
            (Timestamp(1_000_000), true,  "same second, earlier millisecond"),
            (Timestamp(1_000_999), true,  "same second, later"),
            (Timestamp(1_001_000), true,  "next second"),
            (Timestamp(999_999),   false, "the second before"),
        ];
        for (at, want, name) in cases {
            assert_eq!(at.at_or_after_second(import), want, "{name}");
        }
        assert_eq!(Timestamp(-1).whole_second(), -1);
    }

    #[test]
    fn spans_read_naturally() {
        for (ms, text) in [
            (0, "0s"),
            (999, "1s"),
            (45 * SECOND, "45s"),
            (12 * MINUTE, "12m00s"),
            (3 * HOUR + 5 * MINUTE, "3h05m"),
            (2 * DAY + 4 * HOUR, "2d04h"),
        ] {
            assert_eq!(human_span(ms), text, "{ms} ms");
        }
    }
}

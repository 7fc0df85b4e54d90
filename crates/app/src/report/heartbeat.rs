//! The heartbeat, for people: when the last tick ran against how often the workflow's cron says
//! ticks should run. GitHub delays scheduled runs under load and disables them on repositories
//! without activity for 60 days, and nothing else would say so: a silent opentiger looks idle.
//!
//! The `ticks` table records a tick at least hourly, so "missed" allows for that.
//!
//! Not for: reading the workflow (`crate::workflows`) or the state (the callers do).

use crate::time::{Millis, Timestamp, HOUR, MINUTE};

/// The schedule a workflow gives the ticks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    /// The workflow file, for the message.
    pub file: String,
    pub cron: String,
    /// The longest gap between two scheduled runs.
    pub every: Millis,
}

/// Whether the ticks keep to their schedule, and the line that says so.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Heartbeat {
    OnTime(String),
    Missed(String),
}

impl Heartbeat {
    pub fn line(&self) -> &str {
        match self {
            Heartbeat::OnTime(line) | Heartbeat::Missed(line) => line,
        }
    }
}

/// `None` without a schedule (ticks run by hand or by events only: nothing to miss).
pub fn heartbeat(
    last_tick: Option<Timestamp>,
    schedule: Option<&Schedule>,
    now: Timestamp,
) -> Option<Heartbeat> {
    let schedule = schedule?;
    let every = span(schedule.every);
    let Some(last) = last_tick else {
        return Some(Heartbeat::Missed(format!(
            "no tick recorded yet, expected every {every} (`{}` in {})",
            schedule.cron, schedule.file
        )));
    };
    let ago = now.minus(last).max(0);
    // One scheduled run may be late or dropped, and a quiet tick records itself only hourly.
    let allowed = (2 * schedule.every).max(schedule.every + HOUR);
    if ago > allowed {
        Some(Heartbeat::Missed(format!(
            "the last scheduled tick was {} ago, expected every {every} (`{}` in {}): GitHub delays scheduled runs under load and disables them after 60 days without activity in the repository; check the workflow in the Actions tab (enable it, or run it by hand)",
            span(ago),
            schedule.cron,
            schedule.file
        )))
    } else {
        Some(Heartbeat::OnTime(format!(
            "last tick {} ago, expected every {every} (`{}` in {})",
            span(ago),
            schedule.cron,
            schedule.file
        )))
    }
}

/// `30 min`, `3h`, `3h 20 min`, `2 days`.
fn span(ms: Millis) -> String {
    let minutes = ms / MINUTE;
    let (days, hours, mins) = (minutes / (24 * 60), (minutes / 60) % 24, minutes % 60);
    match (days, hours, mins) {
        (0, 0, m) => format!("{m} min"),
        (0, h, 0) => format!("{h}h"),
        (0, h, m) => format!("{h}h {m} min"),
        (1, _, _) => "1 day".to_string(),
        (d, _, _) => format!("{d} days"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(minutes: i64) -> Timestamp {
        Timestamp(1_700_000_000_000 + minutes * MINUTE)
    }

    #[test]
    fn heartbeat_table() {
        let half_hourly = Schedule {
            file: ".github/workflows/opentiger.yml".into(),
            cron: "*/30 * * * *".into(),
            every: 30 * MINUTE,
        };
        let six_hourly = Schedule {
            every: 6 * HOUR,
            cron: "0 */6 * * *".into(),
            ..half_hourly.clone()
        };
        type Row<'a> = (
            &'a str,
            Option<i64>,
            Option<&'a Schedule>,
            i64,
            Option<&'a str>,
        );
        #[rustfmt::skip]
        let cases: Vec<Row> = vec![
            ("no schedule",            Some(0), None,               300, None),
            ("just ticked",            Some(0), Some(&half_hourly), 20,  Some("on time: last tick 20 min ago, expected every 30 min")),
            ("hourly record, on time", Some(0), Some(&half_hourly), 90,  Some("on time: last tick 1h 30 min ago")),
            ("three hours",            Some(0), Some(&half_hourly), 180, Some("missed: the last scheduled tick was 3h ago, expected every 30 min")),
            ("never ticked",           None,    Some(&half_hourly), 0,   Some("missed: no tick recorded yet, expected every 30 min")),
            ("slow schedule, on time", Some(0), Some(&six_hourly),  400, Some("on time: last tick 6h 40 min ago, expected every 6h")),
            ("slow schedule, missed",  Some(0), Some(&six_hourly),  60 * 24 * 2, Some("missed: the last scheduled tick was 2 days ago")),
        ];
        for (name, last, schedule, now, want) in cases {
            let got = heartbeat(last.map(at), schedule, at(now)).map(|h| match h {
                Heartbeat::OnTime(line) => format!("on time: {line}"),
                Heartbeat::Missed(line) => format!("missed: {line}"),
            });
            match (got, want) {
                (None, None) => {}
                (Some(got), Some(want)) => assert!(got.starts_with(want), "{name}: {got}"),
                (got, want) => panic!("{name}: {got:?}, wanted {want:?}"),
            }
        }
    }
}

//! What held a queued task back this tick, as data (issue 27 item 3): the kind, the words, and
//! the setting or task field that would let it run. `status --json` shows each queued task's
//! (`held_back`); when fewer runs start than `limits.max_runs_per_tick` allows, the tick and
//! `status` say what held the rest back in one line (`held_back_line`).
//!
//! Not for: deciding the hold (that is `dispatch`).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::model::TaskId;

/// Why dispatch did not start a queued task this tick.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum HoldKind {
    /// `limits.max_runs_per_tick` runs already started.
    TickCap,
    /// Every agent of its role is busy (`agents.<role>.count`).
    RoleSlots,
    /// A running or just-picked task has the same target area.
    TargetArea,
    /// Its lane (conflict recovery, docs) is at its cap.
    LaneFull,
    /// A task waits on quota: one run at a time (spec §2.2 quota throttle).
    QuotaThrottle,
    /// Its family already started a run this tick while other families waited (the fair queue).
    FamilyTurn,
    /// Its cooldown after a failure has not passed.
    Cooldown,
    /// A dependency is not done.
    Dependency,
    /// Its budget, or the day's, is spent.
    Budget,
    /// The repository is paused.
    Paused,
    /// Its run could not end before the tick's deadline (`limits.tick_minutes`, issue 38).
    TickTime,
}

impl HoldKind {
    /// Holds that a setting of concurrency or of the tick lifts (the rest are the task's own
    /// waits).
    pub fn is_concurrency(self) -> bool {
        match self {
            HoldKind::TickCap
            | HoldKind::RoleSlots
            | HoldKind::TargetArea
            | HoldKind::LaneFull
            | HoldKind::QuotaThrottle
            | HoldKind::FamilyTurn
            | HoldKind::TickTime => true,
            HoldKind::Cooldown | HoldKind::Dependency | HoldKind::Budget | HoldKind::Paused => {
                false
            }
        }
    }
}

/// One queued task's hold this tick.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Hold {
    pub kind: HoldKind,
    /// What held it, with the numbers that mattered.
    pub reason: String,
    /// The setting or task field that would let it run, or what it waits for.
    pub fix: String,
}

impl Hold {
    pub fn new(kind: HoldKind, reason: String, fix: impl Into<String>) -> Hold {
        Hold {
            kind,
            reason,
            fix: fix.into(),
        }
    }

    /// The words a `Wait` decision carries: the reason, then the fix.
    pub fn text(&self) -> String {
        format!("{}; {}", self.reason, self.fix)
    }
}

/// One line for the tick and `status` when fewer runs started than the tick allows and some
/// queued task was held back by concurrency: how many started, what held the rest, what lifts
/// it. `None` when nothing was held back by concurrency, or the tick's cap was the only limit.
pub fn held_back_line(
    started: u32,
    tick_cap: u32,
    holds: &BTreeMap<TaskId, Hold>,
) -> Option<String> {
    if started >= tick_cap {
        return None;
    }
    let mut by_kind: BTreeMap<HoldKind, (u32, &Hold)> = BTreeMap::new();
    for hold in holds.values().filter(|h| h.kind.is_concurrency()) {
        by_kind.entry(hold.kind).or_insert((0, hold)).0 += 1;
    }
    if by_kind.is_empty() {
        return None;
    }
    let held: u32 = by_kind.values().map(|(n, _)| n).sum();
    let parts: Vec<String> = by_kind
        .values()
        .map(|(n, hold)| format!("{n} by {} ({})", hold.reason, hold.fix))
        .collect();
    Some(format!(
        "started {started} of limits.max_runs_per_tick = {tick_cap}: {held} queued task(s) held back: {}",
        parts.join("; ")
    ))
}

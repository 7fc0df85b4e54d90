//! Fallback executors (issue 9): which executor of a role's chain a run uses, and what a quota
//! hit does to the executor that hit it.
//!
//! A role's chain is its agent, then `agents.<role>.fallbacks` (`AgentsConfig::chain`). An
//! executor, named by its key (`EffectiveAgent::executor_key`: `claude-code`, `codex:o4-mini`,
//! `command:./agent.sh`), that hits a quota is parked until a backoff — spec §3.4's arithmetic,
//! the provider's hint winning, grown by the executor's own consecutive hits — and meanwhile
//! every role that lists a fallback runs on the next executor that is free. A run that ends any
//! other way shows the executor's quota is fine again: its park is cleared.
//!
//! Pure: the runner says which executors of the chain it could build (a missing program, an
//! unreadable script), the state says which are parked. Not for: building executors
//! (`executor`, `runner`), or what the quota does to the task (`outcome`, which asks
//! [`after_quota`]).

use std::collections::BTreeMap;

use super::backoff::{quota_cooldown_ms, QuotaBackoff};
use super::{Action, Working};
use crate::time::Timestamp;

/// An executor parked on a quota.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutorWait {
    pub until: Timestamp,
    /// Quota hits in a row (none of its runs ended otherwise since): the backoff's exponent.
    pub hits: u32,
    /// What parked it, for people.
    pub reason: String,
}

/// Parked executors by key.
pub type ExecutorWaits = BTreeMap<String, ExecutorWait>;

/// One executor of a role's chain, as the runner found it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainEntry {
    pub key: String,
    /// It could be built here (its program exists, its script reads).
    pub available: bool,
}

/// Which executor of its role's chain a run used: kept with the run's result for its outcome.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecutorUse {
    pub chain: Vec<ChainEntry>,
    pub index: usize,
}

impl ExecutorUse {
    pub fn key(&self) -> Option<&str> {
        self.chain.get(self.index).map(|e| e.key.as_str())
    }
}

/// The chooser's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Choice {
    pub index: usize,
    /// The chosen executor can run and is not parked. When no executor is, the first that can
    /// run is chosen anyway (today's behaviour without fallbacks: try, and wait on a quota
    /// again), or the primary when none can, whose error says what is missing.
    pub ready: bool,
    /// Executors passed over before the chosen one; every executor when none is ready.
    pub skipped: Vec<Skipped>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Skipped {
    Parked { key: String, until: Timestamp },
    Unavailable { key: String },
}

impl Skipped {
    fn describe(&self) -> String {
        match self {
            Skipped::Parked { key, until } => format!("{key} waits on quota until {until}"),
            Skipped::Unavailable { key } => format!("{key} is unavailable"),
        }
    }
}

/// Until when `key` is parked, if it still is.
pub fn parked_until(waits: &ExecutorWaits, key: &str, now: Timestamp) -> Option<Timestamp> {
    waits.get(key).map(|w| w.until).filter(|until| *until > now)
}

/// The first executor of the chain that can run and is not parked (see [`Choice::ready`] for
/// when there is none).
pub fn choose_executor(chain: &[ChainEntry], waits: &ExecutorWaits, now: Timestamp) -> Choice {
    let mut skipped = Vec::new();
    for (index, entry) in chain.iter().enumerate() {
        let key = entry.key.clone();
        match (entry.available, parked_until(waits, &entry.key, now)) {
            (true, None) => {
                return Choice {
                    index,
                    ready: true,
                    skipped,
                }
            }
            (true, Some(until)) => skipped.push(Skipped::Parked { key, until }),
            (false, _) => skipped.push(Skipped::Unavailable { key }),
        }
    }
    Choice {
        index: chain.iter().position(|e| e.available).unwrap_or(0),
        ready: false,
        skipped,
    }
}

impl Choice {
    /// What the run records as its executor: the key, and why when it is not the primary or
    /// not free, e.g. `codex:o4-mini (fallback 1: claude-code waits on quota until …)`.
    pub fn label(&self, chain: &[ChainEntry]) -> String {
        let key = chain.get(self.index).map_or("", |e| e.key.as_str());
        let why = || {
            self.skipped
                .iter()
                .map(Skipped::describe)
                .collect::<Vec<_>>()
                .join("; ")
        };
        match (self.ready, self.index) {
            (true, 0) => key.to_string(),
            (true, n) => format!("{key} (fallback {n}: {})", why()),
            (false, _) => format!("{key} (no executor is free: {}; tried anyway)", why()),
        }
    }
}

/// What a quota hit of the executor a run used means for the chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AfterQuota {
    pub key: String,
    pub park: ExecutorWait,
    /// The executor that takes over at once (index in the chain, key), if one is free.
    pub next: Option<(usize, String)>,
    /// When none is: the earliest time another executor that can run here is free again.
    pub other_free_at: Option<Timestamp>,
}

/// Parks the executor `used` ran on: until the quota backoff of its `hits + 1`-th hit in a row
/// (spec §3.4: the provider's hint in `message` wins; the jitter is seeded by the key), and says
/// which executor of the chain, if any, can run the task now.
pub fn after_quota(
    used: &ExecutorUse,
    waits: &ExecutorWaits,
    backoff: &QuotaBackoff,
    message: &str,
    reason: String,
    now: Timestamp,
) -> Option<AfterQuota> {
    let key = used.key()?.to_string();
    let hits = waits.get(&key).map_or(0, |w| w.hits);
    let wait = quota_cooldown_ms(backoff, &key, hits, message, now.0);
    let park = ExecutorWait {
        until: now.plus(wait),
        hits: hits.saturating_add(1),
        reason,
    };
    let mut parked = waits.clone();
    parked.insert(key.clone(), park.clone());
    let choice = choose_executor(&used.chain, &parked, now);
    let next = choice
        .ready
        .then(|| (choice.index, used.chain[choice.index].key.clone()));
    let other_free_at = used
        .chain
        .iter()
        .enumerate()
        .filter(|(i, e)| *i != used.index && e.available)
        .filter_map(|(_, e)| parked_until(&parked, &e.key, now))
        .min();
    Some(AfterQuota {
        key,
        park,
        next,
        other_free_at,
    })
}

/// Every parked executor gets a `Wait` decision, so a dry run and the plan say which are parked
/// and why. Parked executors do not hold tasks back (no quota throttle): a role without a free
/// fallback finds out when its run hits the quota again.
pub(crate) fn explain_waits(w: &mut Working<'_>) {
    let waits = &w.snapshot.observations.executor_waits;
    let parked: Vec<(String, Timestamp, String)> = waits
        .iter()
        .filter(|(_, wait)| wait.until > w.now)
        .map(|(key, wait)| (key.clone(), wait.until, wait.reason.clone()))
        .collect();
    for (key, until, reason) in parked {
        w.decide(
            None,
            "executor.quota_wait",
            Action::Wait { until: Some(until) },
            format!(
                "executor {key} waits on quota until {until} ({reason}); roles with a fallback use it meanwhile"
            ),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{at, NOW};
    use super::*;

    /// (key, available) of each executor of a chain.
    type Entries = &'static [(&'static str, bool)];
    /// (key, minutes from now) of each parked executor.
    type Parked = &'static [(&'static str, i64)];
    type ChooseCase = (&'static str, Entries, Parked, usize, bool, &'static str);
    type QuotaCase = (
        &'static str,
        Entries,
        usize,
        Parked,
        &'static str,
        i64,
        u32,
        Option<usize>,
        Option<i64>,
    );

    fn chain(entries: &[(&str, bool)]) -> Vec<ChainEntry> {
        entries
            .iter()
            .map(|(key, available)| ChainEntry {
                key: key.to_string(),
                available: *available,
            })
            .collect()
    }

    fn waits(parked: &[(&str, i64)]) -> ExecutorWaits {
        parked
            .iter()
            .map(|(key, minutes)| {
                let wait = ExecutorWait {
                    until: at(*minutes),
                    hits: 1,
                    reason: "quota".to_string(),
                };
                (key.to_string(), wait)
            })
            .collect()
    }

    #[test]
    fn the_first_free_executor_that_can_run_is_chosen() {
        #[rustfmt::skip]
        let cases: &[ChooseCase] = &[
            // name, chain (key, available), parked (key, minutes from now), index, ready, label
            ("primary", &[("claude-code", true), ("codex", true)], &[],
                0, true, "claude-code"),
            ("a park that ended is ignored", &[("claude-code", true), ("codex", true)], &[("claude-code", 0)],
                0, true, "claude-code"),
            ("parked primary: fallback 1", &[("claude-code", true), ("codex", true)], &[("claude-code", 40)],
                1, true, "codex (fallback 1: claude-code waits on quota until 2026-11-21T12:40:00Z)"),
            ("missing primary: fallback 1", &[("claude-code", false), ("codex", true)], &[],
                1, true, "codex (fallback 1: claude-code is unavailable)"),
            ("skips both kinds", &[("claude-code", false), ("codex", true), ("aider", true)], &[("codex", 5)],
                2, true, "aider (fallback 2: claude-code is unavailable; codex waits on quota until 2026-11-21T12:05:00Z)"),
            ("all parked: the first that can run, tried anyway", &[("claude-code", false), ("codex", true)], &[("codex", 5)],
                1, false, "codex (no executor is free: claude-code is unavailable; codex waits on quota until 2026-11-21T12:05:00Z; tried anyway)"),
            ("none can run: the primary, whose error names it", &[("claude-code", false), ("codex", false)], &[],
                0, false, "claude-code (no executor is free: claude-code is unavailable; codex is unavailable; tried anyway)"),
            ("no fallbacks, parked: tried anyway", &[("claude-code", true)], &[("claude-code", 5)],
                0, false, "claude-code (no executor is free: claude-code waits on quota until 2026-11-21T12:05:00Z; tried anyway)"),
        ];
        for (name, entries, parked, index, ready, label) in cases {
            let chain = chain(entries);
            let choice = choose_executor(&chain, &waits(parked), NOW);
            assert_eq!((choice.index, choice.ready), (*index, *ready), "{name}");
            assert_eq!(choice.label(&chain), *label, "{name}");
        }
    }

    #[test]
    fn a_quota_parks_the_executor_and_names_who_takes_over() {
        let backoff = QuotaBackoff {
            jitter_ratio: 0.0,
            ..QuotaBackoff::default()
        };
        #[rustfmt::skip]
        let cases: &[QuotaCase] = &[
            // name, chain, index used, parked before, message, parked minutes, hits, next, other free at
            ("fallback free", &[("a", true), ("b", true)], 0, &[], "rate limited", 2, 1, Some(1), None),
            ("the provider's hint wins", &[("a", true), ("b", true)], 0, &[], "retry in 600s", 10, 1, Some(1), None),
            ("hits in a row grow the backoff", &[("a", true), ("b", true)], 0, &[("a", -1)], "rate limited", 4, 2, Some(1), None),
            ("the fallback hit it too: back to a free primary", &[("a", true), ("b", true)], 1, &[], "rate limited", 2, 1, Some(0), None),
            ("every other one parked", &[("a", true), ("b", true), ("c", true)], 0, &[("b", 30), ("c", 7)], "rate limited", 2, 1, None, Some(7)),
            ("the other one cannot run", &[("a", true), ("b", false)], 0, &[], "rate limited", 2, 1, None, None),
            ("no fallbacks", &[("a", true)], 0, &[], "rate limited", 2, 1, None, None),
        ];
        for (name, entries, index, parked, message, minutes, hits, next, free) in cases {
            let used = ExecutorUse {
                chain: chain(entries),
                index: *index,
            };
            let mut before = waits(parked);
            for w in before.values_mut() {
                w.hits = 1;
            }
            let after = after_quota(&used, &before, &backoff, message, "r".into(), NOW)
                .expect("an executor ran");
            assert_eq!(after.key, entries[*index].0, "{name}");
            assert_eq!(after.park.until, at(*minutes), "{name}");
            assert_eq!(after.park.hits, *hits, "{name}");
            assert_eq!(after.next.map(|(i, _)| i), *next, "{name}");
            assert_eq!(after.other_free_at, free.map(at), "{name}");
        }
        let nothing_ran = ExecutorUse {
            chain: Vec::new(),
            index: 0,
        };
        let none = after_quota(
            &nothing_ran,
            &BTreeMap::new(),
            &backoff,
            "x",
            "r".into(),
            NOW,
        );
        assert_eq!(none, None);
    }
}

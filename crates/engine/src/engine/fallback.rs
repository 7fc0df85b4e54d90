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
//! An executor whose run ended in an `agent_config` failure (issue 18: no key, an invalid one,
//! not logged in, an unknown model) is parked with the fingerprint of its configuration
//! ([`ChainEntry::config`]) instead of a time: it stays parked until that fingerprint changes
//! (the configuration or the keys it is given changed) or a person retries a task.
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
    /// Parked for its configuration (issue 18), not a quota: the fingerprint it was parked with;
    /// `until` does not apply.
    pub config: Option<String>,
}

impl ExecutorWait {
    /// A park for the configuration an executor ran with.
    pub fn for_config(fingerprint: &str, reason: String, now: Timestamp) -> ExecutorWait {
        ExecutorWait {
            until: now,
            hits: 0,
            reason,
            config: Some(fingerprint.to_string()),
        }
    }
}

/// Parked executors by key.
pub type ExecutorWaits = BTreeMap<String, ExecutorWait>;

/// One executor of a role's chain, as the runner found it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ChainEntry {
    pub key: String,
    /// It could be built here (its program exists, its script reads, its key is given).
    pub available: bool,
    /// The fingerprint of its configuration and of which keys it is given: a park for its
    /// configuration holds while this stays the same.
    pub config: String,
}

/// Which executor of its role's chain a run used: kept with the run's result for its outcome.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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
    Misconfigured { key: String },
    Unavailable { key: String },
}

impl Skipped {
    fn describe(&self) -> String {
        match self {
            Skipped::Parked { key, until } => format!("{key} waits on quota until {until}"),
            Skipped::Misconfigured { key } => {
                format!("{key} cannot reach its model as configured")
            }
            Skipped::Unavailable { key } => format!("{key} is unavailable"),
        }
    }
}

/// Why an executor of a chain is parked now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Park {
    Quota(Timestamp),
    /// Its configuration failed and has not changed since.
    Config,
}

/// Whether `entry` is parked now: on a quota until a time, or for its unchanged configuration.
pub fn parked(waits: &ExecutorWaits, entry: &ChainEntry, now: Timestamp) -> Option<Park> {
    let wait = waits.get(&entry.key)?;
    match &wait.config {
        Some(fingerprint) => (*fingerprint == entry.config).then_some(Park::Config),
        None => (wait.until > now).then_some(Park::Quota(wait.until)),
    }
}

/// Until when `entry` is parked on a quota, if it still is.
pub fn parked_until(
    waits: &ExecutorWaits,
    entry: &ChainEntry,
    now: Timestamp,
) -> Option<Timestamp> {
    match parked(waits, entry, now)? {
        Park::Quota(until) => Some(until),
        Park::Config => None,
    }
}

/// The first executor of the chain that can run and is not parked (see [`Choice::ready`] for
/// when there is none).
pub fn choose_executor(chain: &[ChainEntry], waits: &ExecutorWaits, now: Timestamp) -> Choice {
    let mut skipped = Vec::new();
    for (index, entry) in chain.iter().enumerate() {
        let key = entry.key.clone();
        match (entry.available, parked(waits, entry, now)) {
            (true, None) => {
                return Choice {
                    index,
                    ready: true,
                    skipped,
                }
            }
            (true, Some(Park::Quota(until))) => skipped.push(Skipped::Parked { key, until }),
            (true, Some(Park::Config)) => skipped.push(Skipped::Misconfigured { key }),
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
        config: None,
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
        .filter_map(|(_, e)| parked_until(&parked, e, now))
        .min();
    Some(AfterQuota {
        key,
        park,
        next,
        other_free_at,
    })
}

/// What an `agent_config` failure of the executor a run used means for the chain (issue 18).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AfterConfig {
    pub key: String,
    pub park: ExecutorWait,
    /// The executor that takes over at once (index in the chain, key), if one is free.
    pub next: Option<(usize, String)>,
}

/// Parks the executor `used` ran on for its configuration, and says which executor of the chain,
/// if any, can run the task now.
pub fn after_config(
    used: &ExecutorUse,
    waits: &ExecutorWaits,
    reason: String,
    now: Timestamp,
) -> Option<AfterConfig> {
    let entry = used.chain.get(used.index)?;
    let park = ExecutorWait::for_config(&entry.config, reason, now);
    let mut parked = waits.clone();
    parked.insert(entry.key.clone(), park.clone());
    let choice = choose_executor(&used.chain, &parked, now);
    let next = choice
        .ready
        .then(|| (choice.index, used.chain[choice.index].key.clone()));
    Some(AfterConfig {
        key: entry.key.clone(),
        park,
        next,
    })
}

/// Every parked executor gets a `Wait` decision, so a dry run and the plan say which are parked
/// and why. Parked executors do not hold tasks back (no quota throttle): a role without a free
/// fallback finds out when its run hits the quota again.
pub(crate) fn explain_waits(w: &mut Working<'_>) {
    let waits = &w.snapshot.observations.executor_waits;
    let parked: Vec<(String, Timestamp, String)> = waits
        .iter()
        .filter(|(_, wait)| wait.until > w.now && wait.config.is_none())
        .map(|(key, wait)| (key.clone(), wait.until, wait.reason.clone()))
        .collect();
    let misconfigured: Vec<(String, String)> = waits
        .iter()
        .filter(|(_, wait)| wait.config.is_some())
        .map(|(key, wait)| (key.clone(), wait.reason.clone()))
        .collect();
    for (key, reason) in misconfigured {
        w.decide(
            None,
            "executor.agent_config",
            Action::Wait { until: None },
            format!(
                "executor {key} cannot reach its model as configured ({reason}); it waits until its configuration or keys change, or a person retries a task"
            ),
        );
    }
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
                config: format!("{key}-config"),
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
                    config: None,
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

    #[test]
    fn a_config_park_holds_until_the_configuration_changes() {
        let entries = chain(&[("claude-code", true), ("codex", true)]);
        let used = ExecutorUse {
            chain: entries.clone(),
            index: 0,
        };
        let after = after_config(&used, &BTreeMap::new(), "not logged in".into(), NOW)
            .expect("an executor ran");
        assert_eq!(after.key, "claude-code");
        assert_eq!(after.next, Some((1, "codex".to_string())));
        let waits: ExecutorWaits = [(after.key.clone(), after.park.clone())].into();
        // Hours later, unchanged: still parked, the fallback runs.
        let later = NOW.plus(100 * 3_600_000);
        let choice = choose_executor(&entries, &waits, later);
        assert_eq!((choice.index, choice.ready), (1, true));
        assert_eq!(
            choice.label(&entries),
            "codex (fallback 1: claude-code cannot reach its model as configured)"
        );
        // Its configuration (or the keys it is given) changed: it runs again.
        let mut changed = entries.clone();
        changed[0].config = "new".into();
        assert_eq!(choose_executor(&changed, &waits, NOW).index, 0);
        // No fallback: nobody takes over.
        let alone = ExecutorUse {
            chain: entries[..1].to_vec(),
            index: 0,
        };
        let after = after_config(&alone, &BTreeMap::new(), "r".into(), NOW).unwrap();
        assert_eq!(after.next, None);
    }
}

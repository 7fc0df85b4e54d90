//! What metered tokens cost (issue 37): a price per model, from `pricing:` in the configuration
//! over the built-in table of the models the adapters name. A model is looked up by its name as
//! the answer gives it, without a provider prefix (`anthropic/`): an entry prices its own name
//! and its dated snapshots (`claude-sonnet-4-5-20250929`, `gpt-5-2025-08-07`,
//! `claude-sonnet-4-5@20250929`, `…-latest`), never another model that merely starts with it
//! (`claude-opus-4-6` is not `claude-opus-4`, `o3-mini` is not `o3`). A model no entry matches
//! is recorded with its tokens and no price ("no price known"), never at a guessed one.
//!
//! Not here: counting tokens (`meter`).

use std::collections::BTreeMap;

use crate::config::Pricing;

use super::meter::{Tokens, Usage};

/// USD per million tokens: (model prefix, input, cached input, output). Public list prices at
/// the time of writing; `pricing:` overrides any of them.
const BUILT_IN: &[(&str, f64, f64, f64)] = &[
    ("claude-opus-4-5", 5.0, 0.5, 25.0),
    ("claude-opus-4-1", 15.0, 1.5, 75.0),
    ("claude-opus-4", 15.0, 1.5, 75.0),
    ("claude-sonnet-4-5", 3.0, 0.3, 15.0),
    ("claude-sonnet-4", 3.0, 0.3, 15.0),
    ("claude-3-7-sonnet", 3.0, 0.3, 15.0),
    ("claude-haiku-4-5", 1.0, 0.1, 5.0),
    ("claude-3-5-haiku", 0.8, 0.08, 4.0),
    ("gpt-5-codex", 1.25, 0.125, 10.0),
    ("gpt-5-mini", 0.25, 0.025, 2.0),
    ("gpt-5-nano", 0.05, 0.005, 0.4),
    ("gpt-5", 1.25, 0.125, 10.0),
    ("gpt-4.1-mini", 0.4, 0.1, 1.6),
    ("gpt-4.1", 2.0, 0.5, 8.0),
    ("gpt-4o-mini", 0.15, 0.075, 0.6),
    ("gpt-4o", 2.5, 1.25, 10.0),
    ("o4-mini", 1.1, 0.275, 4.4),
    ("o3", 2.0, 0.5, 8.0),
    ("gemini-2.5-pro", 1.25, 0.31, 10.0),
    ("gemini-2.5-flash", 0.3, 0.075, 2.5),
];

/// The prices in force: the built-in table with `pricing:` laid over it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prices {
    table: BTreeMap<String, Pricing>,
}

/// What a run's metered tokens cost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cost {
    pub usd: f64,
    /// Models with tokens but no price: their tokens cost nothing here.
    pub unpriced: Vec<String>,
}

impl Prices {
    pub fn new(configured: &BTreeMap<String, Pricing>) -> Prices {
        let mut table: BTreeMap<String, Pricing> = BUILT_IN
            .iter()
            .map(|(model, input, cached, output)| {
                let price = Pricing {
                    input_per_mtok: *input,
                    output_per_mtok: *output,
                    cached_input_per_mtok: Some(*cached),
                };
                (model.to_string(), price)
            })
            .collect();
        for (model, price) in configured {
            table.insert(model.to_ascii_lowercase(), price.clone());
        }
        Prices { table }
    }

    /// The price of `model`: the entry that is its name (without a `provider/` prefix), or
    /// whose dated snapshot it is.
    pub fn of(&self, model: &str) -> Option<&Pricing> {
        let name = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        self.table
            .iter()
            .filter(|(entry, _)| {
                name.strip_prefix(entry.as_str())
                    .is_some_and(is_snapshot_suffix)
            })
            .max_by_key(|(entry, _)| entry.len())
            .map(|(_, price)| price)
    }

    pub fn tokens_cost(&self, model: &str, t: &Tokens) -> Option<f64> {
        let clamp = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        self.of(model)
            .map(|p| p.cost(clamp(t.input), clamp(t.cached_input), clamp(t.output)))
    }

    pub fn cost(&self, usage: &Usage) -> Cost {
        let mut cost = Cost::default();
        for (model, tokens) in usage {
            match self.tokens_cost(model, tokens) {
                Some(usd) => cost.usd += usd,
                None if tokens.input + tokens.output > 0 => cost.unpriced.push(model.clone()),
                None => {}
            }
        }
        cost
    }
}

/// Whether `rest`, what follows a model's name, names a snapshot of that same model: nothing,
/// a date (`-20250929`, `-2025-08-07`, `@20250929`), `-latest`, or a date and a version
/// (`-20250929-v1:0`, as Bedrock names them).
fn is_snapshot_suffix(rest: &str) -> bool {
    if rest.is_empty() {
        return true;
    }
    let Some(rest) = rest.strip_prefix('-').or_else(|| rest.strip_prefix('@')) else {
        return false;
    };
    if rest == "latest" {
        return true;
    }
    let (date, version) = match rest.split_once("-v") {
        Some((date, version)) => (date, Some(version)),
        None => (rest, None),
    };
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    let dated = digits(date, 8)
        || matches!(date.split('-').collect::<Vec<_>>()[..], [y, m, d] if digits(y, 4) && digits(m, 2) && digits(d, 2));
    dated
        && version.is_none_or(|v| {
            !v.is_empty()
                && v.split(':')
                    .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn models_match_their_longest_entry_and_the_configuration_wins() {
        let configured: BTreeMap<String, Pricing> = [(
            "claude-sonnet-4-5".to_string(),
            Pricing {
                input_per_mtok: 1.0,
                output_per_mtok: 2.0,
                cached_input_per_mtok: None,
            },
        )]
        .into_iter()
        .collect();
        let prices = Prices::new(&configured);
        let t = Tokens {
            input: 1_000_000,
            cached_input: 0,
            output: 1_000_000,
            answers: 1,
        };
        let cases = [
            ("claude-sonnet-4-5-20250929", Some(3.0)),
            ("anthropic/claude-sonnet-4-5", Some(3.0)),
            ("claude-sonnet-4-20250514", Some(18.0)),
            ("gpt-5-codex", Some(11.25)),
            ("gpt-5-2025-08-07", Some(11.25)),
            ("gpt-5-mini-2025-08-07", Some(2.25)),
            ("claude-sonnet-4-5@20250929", Some(3.0)),
            ("claude-3-7-sonnet-latest", Some(18.0)),
            ("claude-sonnet-4-5-20250929-v1:0", Some(3.0)),
            ("my-local-model", None),
            // A newer or different model that merely starts with a known name has no price
            // (never an older model's).
            ("claude-opus-4-6", None),
            ("claude-opus-4-1-20250805", Some(90.0)),
            ("o3-mini", None),
            ("o3-2025-04-16", Some(10.0)),
            ("gpt-5-pro", None),
            ("gpt-5-20250807x", None),
        ];
        for (model, usd) in cases {
            let got = prices.tokens_cost(model, &t);
            assert_eq!(got.map(|c| (c * 100.0).round() / 100.0), usd, "{model}");
        }
        let usage: Usage = [
            ("gpt-5-codex".to_string(), t),
            ("my-local-model".to_string(), t),
        ]
        .into_iter()
        .collect();
        let cost = prices.cost(&usage);
        assert_eq!(cost.unpriced, ["my-local-model"]);
        assert!((cost.usd - 11.25).abs() < 1e-9);
    }
}

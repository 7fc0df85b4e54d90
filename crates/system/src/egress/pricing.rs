//! What metered tokens cost (issues 37 and 50): a price per model, from the agent's provider's
//! `prices:` over `pricing:` in the configuration over the built-in table of the models the
//! adapters name — each CLI's default among them (claude-code 2.1.197 asks for
//! `claude-opus-4-8`, codex 0.169.0 for `gpt-6.1-sol`, aider 0.86.2 for `claude-sonnet-4-5` or
//! `gpt-4o`; opencode is never started without a model). A model is looked up by its name as
//! the answer gives it, without a provider prefix (`anthropic/`): an entry prices its own name
//! and its dated snapshots (`claude-sonnet-4-5-20250929`, `gpt-5-2025-08-07`,
//! `claude-sonnet-4-5@20250929`, `…-latest`), never another model that merely starts with it
//! (`claude-opus-4-6` is not `claude-opus-4`, `o3-mini` is not `o3`).
//!
//! No model is free by accident (issue 50): one no entry matches is priced at the highest
//! built-in price ([`CONSERVATIVE`]) and recorded as having no price known, so a budget still
//! stops a run on it; `0` is a price a person writes.
//!
//! Not here: counting tokens (`meter`).

use std::collections::BTreeMap;

use crate::config::Pricing;

use super::meter::{Tokens, Usage};

/// USD per million tokens: (model, input, cached input, output). Public list prices at the
/// time of writing; `pricing:` overrides any of them. The CLIs' defaults: `claude-opus-4-8`
/// (platform.claude.com/docs/en/models/opus-4-8/overview: $5 / $25, cache reads $0.50) and
/// `gpt-6.1-sol` (developers.openai.com/api/docs/models/gpt-6.1-sol: $2 / $10, cached input
/// $0.10; up to 272K input tokens), read in November 2026.
const BUILT_IN: &[(&str, f64, f64, f64)] = &[
    ("claude-opus-4-8", 5.0, 0.5, 25.0),
    ("claude-opus-4-5", 5.0, 0.5, 25.0),
    ("claude-opus-4-1", 15.0, 1.5, 75.0),
    ("claude-opus-4", 15.0, 1.5, 75.0),
    ("claude-sonnet-4-5", 3.0, 0.3, 15.0),
    ("claude-sonnet-4", 3.0, 0.3, 15.0),
    ("claude-3-7-sonnet", 3.0, 0.3, 15.0),
    ("claude-haiku-4-5", 1.0, 0.1, 5.0),
    ("claude-3-5-haiku", 0.8, 0.08, 4.0),
    ("gpt-6.1-sol", 2.0, 0.1, 10.0),
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

/// The price of a model no entry matches: the highest built-in input and output prices (a
/// budget stops a run on an unknown model as soon as on the dearest known one).
pub const CONSERVATIVE: Pricing = Pricing {
    input_per_mtok: 15.0,
    output_per_mtok: 75.0,
    cached_input_per_mtok: Some(1.5),
};

/// The prices in force: the built-in table with `pricing:` laid over it, and a provider's
/// `prices:` over that.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Prices {
    table: BTreeMap<String, Pricing>,
    /// The provider's own, looked up first.
    provider: BTreeMap<String, Pricing>,
}

/// What a run's metered tokens cost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cost {
    pub usd: f64,
    /// Models with tokens but no price known: priced at [`CONSERVATIVE`].
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
        Prices {
            table,
            provider: BTreeMap::new(),
        }
    }

    /// These prices with a provider's own (`providers.<name>.prices`) looked up first.
    pub fn with_provider(mut self, prices: &BTreeMap<String, Pricing>) -> Prices {
        self.provider = prices
            .iter()
            .map(|(model, price)| (model.to_ascii_lowercase(), price.clone()))
            .collect();
        self
    }

    /// The price of `model`: the provider's entry, else the table's, that is its name
    /// (without a `provider/` prefix), or whose dated snapshot it is.
    pub fn of(&self, model: &str) -> Option<&Pricing> {
        let name = model
            .rsplit('/')
            .next()
            .unwrap_or(model)
            .to_ascii_lowercase();
        // A provider's entry for the whole name, prefix and all, too (`openai/gpt-oss`).
        let whole = model.to_ascii_lowercase();
        self.provider
            .get(&whole)
            .or_else(|| snapshot_of(&self.provider, &name))
            .or_else(|| snapshot_of(&self.table, &name))
    }

    /// What `t` of `model` cost, and whether its price is known (else [`CONSERVATIVE`]'s).
    pub fn tokens_cost(&self, model: &str, t: &Tokens) -> (f64, bool) {
        let clamp = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
        let (price, known) = match self.of(model) {
            Some(p) => (p, true),
            None => (&CONSERVATIVE, false),
        };
        (
            price.cost(clamp(t.input), clamp(t.cached_input), clamp(t.output)),
            known,
        )
    }

    pub fn cost(&self, usage: &Usage) -> Cost {
        let mut cost = Cost::default();
        for (model, tokens) in usage {
            let (usd, known) = self.tokens_cost(model, tokens);
            cost.usd += usd;
            if !known && tokens.input + tokens.output > 0 {
                cost.unpriced.push(model.clone());
            }
        }
        cost
    }
}

/// The entry of `table` that is `name`, or whose dated snapshot it is (the longest).
fn snapshot_of<'a>(table: &'a BTreeMap<String, Pricing>, name: &str) -> Option<&'a Pricing> {
    table
        .iter()
        .filter(|(entry, _)| {
            name.strip_prefix(entry.as_str())
                .is_some_and(is_snapshot_suffix)
        })
        .max_by_key(|(entry, _)| entry.len())
        .map(|(_, price)| price)
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
            // Each CLI's default model (issue 50).
            ("claude-opus-4-8", Some(30.0)),
            ("gpt-6.1-sol", Some(12.0)),
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
            let (got, known) = prices.tokens_cost(model, &t);
            let got = (got * 100.0).round() / 100.0;
            // No price known: the conservative one, the dearest built-in.
            assert_eq!(known.then_some(got), usd, "{model}");
            if !known {
                assert_eq!(got, 90.0, "{model}");
            }
        }
        let usage: Usage = [
            ("gpt-5-codex".to_string(), t),
            ("my-local-model".to_string(), t),
        ]
        .into_iter()
        .collect();
        let cost = prices.cost(&usage);
        assert_eq!(cost.unpriced, ["my-local-model"]);
        assert!((cost.usd - 101.25).abs() < 1e-9, "{cost:?}");
    }

    /// Issue 50: a provider's prices come first, `0` is a price, and the conservative price is
    /// the dearest built-in one.
    #[test]
    fn a_provider_s_prices_come_first_and_zero_is_free() {
        let t = Tokens {
            input: 1_000_000,
            cached_input: 0,
            output: 1_000_000,
            answers: 1,
        };
        let price = |input, output| Pricing {
            input_per_mtok: input,
            output_per_mtok: output,
            cached_input_per_mtok: None,
        };
        let provider: BTreeMap<String, Pricing> = [
            ("smollm2-135m".to_string(), price(0.0, 0.0)),
            ("gpt-5".to_string(), price(1.0, 1.0)),
            ("org/Model-X".to_string(), price(2.0, 2.0)),
        ]
        .into_iter()
        .collect();
        let prices = Prices::new(&BTreeMap::new()).with_provider(&provider);
        assert_eq!(prices.tokens_cost("smollm2-135m", &t), (0.0, true));
        assert_eq!(prices.tokens_cost("gpt-5-2025-08-07", &t), (2.0, true));
        assert_eq!(prices.tokens_cost("org/model-x", &t), (4.0, true));
        assert_eq!(prices.tokens_cost("gpt-5-mini", &t), (2.25, true));
        let dearest = BUILT_IN
            .iter()
            .fold((0.0f64, 0.0f64), |(i, o), (_, input, _, output)| {
                (i.max(*input), o.max(*output))
            });
        assert_eq!(
            dearest,
            (CONSERVATIVE.input_per_mtok, CONSERVATIVE.output_per_mtok)
        );
    }
}

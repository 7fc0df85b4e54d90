//! What the egress proxy saw of one agent run or check (issue 37), as plain data for the run's
//! record and the reports: the model tokens it metered, and the hosts it refused with the
//! configuration line that would allow each. Not for: metering and refusing (`egress`), what
//! tokens cost (`egress::pricing`), or which hosts are allowed (`config::network`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// Tokens of one model: `input` counts every prompt token (cache reads and writes included),
/// `cached_input` the part served from the provider's cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tokens {
    pub input: u64,
    pub cached_input: u64,
    pub output: u64,
    /// Answers these tokens were counted from.
    pub answers: u64,
}

impl Tokens {
    pub fn add(&mut self, other: &Tokens) {
        self.input += other.input;
        self.cached_input += other.cached_input;
        self.output += other.output;
        self.answers += other.answers;
    }
}

/// What the proxy metered of a run's model traffic.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Metering {
    /// Tokens per model, as the answers named it.
    pub models: BTreeMap<String, Tokens>,
    /// What they cost at the prices in force (models without a price count nothing).
    pub usd: f64,
    /// Models with tokens and no price known.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpriced: Vec<String>,
}

impl Metering {
    pub fn is_empty(&self) -> bool {
        self.models.is_empty()
    }

    /// Every model's tokens added up.
    pub fn total(&self) -> Tokens {
        let mut total = Tokens::default();
        for t in self.models.values() {
            total.add(t);
        }
        total
    }

    pub fn add(&mut self, other: &Metering) {
        for (model, t) in &other.models {
            self.models.entry(model.clone()).or_default().add(t);
        }
        self.usd += other.usd;
        for m in &other.unpriced {
            if !self.unpriced.contains(m) {
                self.unpriced.push(m.clone());
            }
        }
    }

    /// `1,200 in (100 cached) / 80 out tokens, $0.0048` plus what has no price, for people.
    pub fn line(&self) -> String {
        let t = self.total();
        let mut text = format!(
            "{} in ({} cached) / {} out tokens metered, ${:.4}",
            t.input, t.cached_input, t.output, self.usd
        );
        if !self.unpriced.is_empty() {
            text.push_str(&format!(
                "; no price known for {} (add it under `pricing:`)",
                self.unpriced.join(", ")
            ));
        }
        text
    }
}

/// A host the proxy refused to let an agent or a check reach.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    pub host: String,
    pub port: u16,
    /// Whose allow list it is not on: its key under `sandbox.network.allow` (`worker`,
    /// `judge`, `checks`, ...).
    pub by: String,
    /// How many times it was tried.
    pub times: u32,
}

impl Refusal {
    /// The entry that would allow it: the host, with its port unless 443 or 80.
    pub fn allow_entry(&self) -> String {
        match self.port {
            443 | 80 => self.host.clone(),
            port => format!("{}:{port}", self.host),
        }
    }

    /// The configuration that would allow it, on one line, as it can be pasted into
    /// `.opentiger.yml` (issue 49: nested, not a dotted key the file does not take).
    pub fn allow_line(&self) -> String {
        allow_flow(&self.by, &self.allow_entry())
    }

    /// `evil.example:443 refused for the worker (2×); to allow it, add …`, for people.
    pub fn line(&self) -> String {
        let times = if self.times > 1 {
            format!(" ({}×)", self.times)
        } else {
            String::new()
        };
        format!(
            "{}:{} refused for the {}{times}; to allow it, add to .opentiger.yml (into its \
             `sandbox:` when it has one): `{}`",
            self.host,
            self.port,
            self.by,
            self.allow_line()
        )
    }
}

/// `sandbox.network.allow.<by>` holding `entry`, as nested YAML on one line (flow style): what
/// pasted into `.opentiger.yml` allows the host.
pub fn allow_flow(by: &str, entry: &str) -> String {
    format!(
        "sandbox: {{network: {{allow: {{{by}: [{}]}}}}}}",
        yaml_string(entry)
    )
}

/// The same as block YAML, one key a line, each indented under its parent.
pub fn allow_yaml(by: &str, entry: &str) -> String {
    format!(
        "sandbox:\n  network:\n    allow:\n      {by}: [{}]",
        yaml_string(entry)
    )
}

/// `text` as a double-quoted YAML string.
fn yaml_string(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// Adds `new` to `list`, counting repeats of a host, port and list once.
pub fn merge_refusals(list: &mut Vec<Refusal>, new: &[Refusal]) {
    for r in new {
        match list
            .iter_mut()
            .find(|e| e.host == r.host && e.port == r.port && e.by == r.by)
        {
            Some(e) => e.times += r.times,
            None => list.push(r.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_model_without_a_price_keeps_its_tokens_and_says_so() {
        let t = Tokens {
            input: 1200,
            cached_input: 100,
            output: 80,
            answers: 1,
        };
        let m = Metering {
            models: [("gpt-5".to_string(), t), ("my-local-model".to_string(), t)]
                .into_iter()
                .collect(),
            usd: 0.0023,
            unpriced: vec!["my-local-model".into()],
        };
        assert_eq!(m.total().input, 2400);
        assert_eq!(
            m.line(),
            "2400 in (200 cached) / 160 out tokens metered, $0.0023; no price known for my-local-model (add it under `pricing:`)"
        );
    }

    #[test]
    fn a_refusal_names_the_line_that_allows_it() {
        let r = Refusal {
            host: "evil.example".into(),
            port: 443,
            by: "worker".into(),
            times: 2,
        };
        assert_eq!(
            r.allow_line(),
            "sandbox: {network: {allow: {worker: [\"evil.example\"]}}}"
        );
        assert_eq!(
            allow_yaml("worker", "evil.example"),
            "sandbox:\n  network:\n    allow:\n      worker: [\"evil.example\"]"
        );
        assert!(r.line().contains("(2×)"), "{}", r.line());
        let odd = Refusal {
            port: 8443,
            by: "checks".into(),
            ..r.clone()
        };
        assert_eq!(
            odd.allow_line(),
            "sandbox: {network: {allow: {checks: [\"evil.example:8443\"]}}}"
        );
        let mut list = vec![r.clone()];
        merge_refusals(&mut list, &[r.clone(), odd.clone()]);
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].times, 4);
    }
}

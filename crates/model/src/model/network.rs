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
    /// What they cost at the prices in force.
    pub usd: f64,
    /// Models with tokens and no price known, priced at the highest built-in price (issue 50:
    /// no model is free by accident; before it, recorded at $0).
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
                "; no price known for {}, priced at the highest built-in price (give it one under its provider's `prices:` or `pricing:`; 0 for a free model)",
                self.unpriced.join(", ")
            ));
        }
        text
    }
}

/// A host the proxy refused to let an agent or a check reach; or, past the first
/// [`NAMED_HOSTS`] hosts of one list, the count of refusals of other hosts ([`Refusal::others`]).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Refusal {
    /// As the proxy parsed it ([`host_name`]), or [`OTHER_HOSTS`].
    pub host: String,
    pub port: u16,
    /// Whose allow list it is not on: its key under `sandbox.network.allow` (`worker`,
    /// `judge`, `checks`, ...).
    pub by: String,
    /// How many times it was tried.
    pub times: u32,
    /// The agent CLI whose own traffic it is (an update check, telemetry, a plugin install:
    /// `executor::Cli::background`), which no task needs: never advised to be allowed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own: Option<String>,
}

/// The most hosts a list of refusals names for one allow list (issue 46): the agent chooses
/// the names, so a run that tries thousands must not make the state and every report grow with
/// them; refusals of further hosts are counted in one entry.
pub const NAMED_HOSTS: usize = 10;
/// The `host` of the entry counting refusals of hosts past the named ones (never a host name:
/// [`host_name`] keeps no `*`).
pub const OTHER_HOSTS: &str = "*";
/// The longest host name kept (DNS's own limit); a longer one is cut and marked.
const HOST_MAX: usize = 253;

/// `text` as a refused host is recorded and shown: lower case, letters, digits and `.-:[]` only
/// (anything else `?`), at most 253 characters (a longer name is cut, ending in `…`). What an
/// agent asked for is shown as data: it can hold no markup, no backtick, no control character.
pub fn host_name(text: &str) -> String {
    let mut host: String = text
        .trim_end_matches('.')
        .chars()
        .take(HOST_MAX + 1)
        .map(|c| match c.to_ascii_lowercase() {
            c @ ('a'..='z' | '0'..='9' | '.' | '-' | ':' | '[' | ']') => c,
            _ => '?',
        })
        .collect();
    if host.len() > HOST_MAX {
        host.truncate(HOST_MAX - 1);
        host.push('…');
    }
    host
}

impl Refusal {
    /// The entry counting `times` refusals of hosts past the named ones, for `by`.
    pub fn others(by: &str, times: u32) -> Refusal {
        Refusal {
            host: OTHER_HOSTS.to_string(),
            port: 0,
            by: by.to_string(),
            times,
            own: None,
        }
    }

    /// Whether this entry counts refusals of hosts not named ([`Refusal::others`]).
    pub fn is_others(&self) -> bool {
        self.host == OTHER_HOSTS
    }

    /// The entry that would allow it: the host, with its port unless 443 or 80.
    pub fn allow_entry(&self) -> String {
        let host = host_name(&self.host);
        match self.port {
            443 | 80 => host,
            port => format!("{host}:{port}"),
        }
    }

    /// The configuration that would allow it, on one line, as it can be pasted into
    /// `.opentiger.yml` (issue 49: nested, not a dotted key the file does not take); none for
    /// the count of other hosts, nor for a CLI's own traffic (issue 50).
    pub fn allow_line(&self) -> Option<String> {
        (!self.is_others() && self.own.is_none()).then(|| allow_flow(&self.by, &self.allow_entry()))
    }

    /// `` `evil.example:443` refused for the worker (2×); to allow it, add … ``, for people: the
    /// host in a code span, as data.
    pub fn line(&self) -> String {
        if self.is_others() {
            return format!(
                "{} more refusal(s) of other hosts for the {} (only the first {NAMED_HOSTS} hosts refused are named)",
                self.times, self.by
            );
        }
        let times = if self.times > 1 {
            format!(" ({}×)", self.times)
        } else {
            String::new()
        };
        if let Some(cli) = &self.own {
            return format!(
                "`{}:{}` refused for the {}{times}: {cli}'s own traffic (an update check, telemetry or a plugin install), which the task does not need",
                host_name(&self.host),
                self.port,
                self.by
            );
        }
        format!(
            "`{}:{}` refused for the {}{times}; to allow it, add to .opentiger.yml (into its \
             `sandbox:` when it has one): `{}`",
            host_name(&self.host),
            self.port,
            self.by,
            self.allow_line().unwrap_or_default()
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

/// Adds `new` to `list`, counting repeats of a host, port and list once; past [`NAMED_HOSTS`]
/// hosts for one allow list, refusals of further hosts are counted in its
/// [`Refusal::others`] entry (kept last). The list stays small whatever is merged into it.
pub fn merge_refusals(list: &mut Vec<Refusal>, new: &[Refusal]) {
    for r in new {
        let same = |e: &&mut Refusal| e.host == r.host && e.port == r.port && e.by == r.by;
        if let Some(e) = list.iter_mut().find(same) {
            e.times = e.times.saturating_add(r.times);
            continue;
        }
        let named = list
            .iter()
            .filter(|e| e.by == r.by && !e.is_others())
            .count();
        if r.is_others() || named >= NAMED_HOSTS {
            match list.iter_mut().find(|e| e.by == r.by && e.is_others()) {
                Some(e) => e.times = e.times.saturating_add(r.times),
                None => list.push(Refusal::others(&r.by, r.times)),
            }
        } else {
            list.push(r.clone());
        }
    }
    // The counts of other hosts last, each list's after its names.
    list.sort_by_key(Refusal::is_others);
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
            "2400 in (200 cached) / 160 out tokens metered, $0.0023; no price known for my-local-model, priced at the highest built-in price (give it one under its provider's `prices:` or `pricing:`; 0 for a free model)"
        );
    }

    #[test]
    fn a_refusal_names_the_line_that_allows_it() {
        let r = Refusal {
            host: "evil.example".into(),
            port: 443,
            by: "worker".into(),
            times: 2,
            own: None,
        };
        assert_eq!(
            r.allow_line().unwrap(),
            "sandbox: {network: {allow: {worker: [\"evil.example\"]}}}"
        );
        assert_eq!(
            allow_yaml("worker", "evil.example"),
            "sandbox:\n  network:\n    allow:\n      worker: [\"evil.example\"]"
        );
        assert_eq!(
            r.line(),
            "`evil.example:443` refused for the worker (2×); to allow it, add to .opentiger.yml (into its `sandbox:` when it has one): `sandbox: {network: {allow: {worker: [\"evil.example\"]}}}`"
        );
        let odd = Refusal {
            port: 8443,
            by: "checks".into(),
            ..r.clone()
        };
        assert_eq!(
            odd.allow_line().unwrap(),
            "sandbox: {network: {allow: {checks: [\"evil.example:8443\"]}}}"
        );
        let mut list = vec![r.clone()];
        merge_refusals(&mut list, &[r.clone(), odd.clone()]);
        assert_eq!(list.len(), 2);
        assert_eq!(list[0].times, 4);
        // Issue 50: a CLI's own traffic is said as such, with nothing to allow.
        let own = Refusal {
            host: "chatgpt.com".into(),
            own: Some("codex".into()),
            ..r.clone()
        };
        assert_eq!(own.allow_line(), None);
        assert_eq!(
            own.line(),
            "`chatgpt.com:443` refused for the worker (2×): codex's own traffic (an update check, telemetry or a plugin install), which the task does not need"
        );
    }

    /// Issue 46: 20,000 refusals of distinct hosts (an agent's flood) leave ten names and one
    /// count per allow list, however they are merged (one by one, as the proxy does, or as
    /// lists, as the store does).
    #[test]
    fn a_flood_of_refused_hosts_stays_ten_names_and_a_count() {
        let one = |i: u32, by: &str| Refusal {
            host: format!("h{i}.evil.test"),
            port: 443,
            by: by.into(),
            times: 1,
            own: None,
        };
        let mut list = Vec::new();
        for i in 0..20_000 {
            merge_refusals(&mut list, &[one(i, "worker")]);
        }
        merge_refusals(&mut list, &[one(3, "worker"), one(7, "checks")]);
        assert_eq!(list.len(), NAMED_HOSTS + 2, "{list:?}");
        assert_eq!(list[3].times, 2, "a named host counts its repeats");
        let others = list.iter().find(|r| r.is_others()).unwrap();
        assert_eq!((others.by.as_str(), others.times), ("worker", 19_990));
        assert_eq!(
            others.line(),
            "19990 more refusal(s) of other hosts for the worker (only the first 10 hosts refused are named)"
        );
        assert_eq!(others.allow_line(), None);
        assert!(list.last().unwrap().is_others(), "the count comes last");
        let mut merged = list.clone();
        merge_refusals(&mut merged, &list);
        assert_eq!(merged.len(), list.len());
        let total: u32 = merged.iter().map(|r| r.times).sum();
        assert_eq!(total, 2 * 20_002);
    }

    /// What an agent asked for is shown as data: no markup, backtick or control character gets
    /// through, and a name is at most 253 characters.
    #[test]
    fn host_names_are_data() {
        let cases: &[(&str, &str)] = &[
            ("Evil.Example.", "evil.example"),
            ("a`b`**c**", "a?b???c??"),
            ("x\n# Title\u{1b}[31m", "x???title?[31m"),
            ("[::1]", "[::1]"),
        ];
        for (given, kept) in cases {
            assert_eq!(host_name(given), *kept, "{given:?}");
        }
        let long = host_name(&"a".repeat(100_000));
        assert_eq!(long.chars().count(), 253);
        assert!(long.ends_with('…'));
        let r = Refusal {
            host: "a`b".into(),
            port: 443,
            by: "worker".into(),
            times: 1,
            own: None,
        };
        assert!(r.line().starts_with("`a?b:443` refused"), "{}", r.line());
    }
}

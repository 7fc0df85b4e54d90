//! `sandbox.network:` — what agents and verification commands may reach (issue 37). Types,
//! defaults and the host rules' parsing and matching. Not for: applying them — the proxy
//! (`egress`), the namespace (`sandbox::netns`), a run's door on the proxy (`runner::network`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::AgentRole;
use crate::model::Role;

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkConfig {
    /// How an agent's network is confined. `auto` (default): a network namespace of its own
    /// where the kernel allows one (loopback only; opentiger's proxy is its only door), else
    /// Landlock's TCP rules (it may connect only to the proxy's port; UDP, DNS and raw sockets
    /// stay open), else nothing (said in the tick's output). `namespace`: refuse to run an agent
    /// without a namespace. `landlock`: Landlock's TCP rules even where a namespace would work
    /// (UDP, DNS and raw sockets stay open). `none`: no confinement; the proxy still holds the
    /// model key and meters, for agents that use it.
    pub isolation: NetworkIsolation,
    /// Hosts reachable through the proxy besides each executor's model API, which is always
    /// allowed for that agent. Empty by default: nothing else is reachable.
    pub allow: NetworkAllow,
    /// Tools a model API runs itself that opentiger's proxy lets an agent ask for.
    /// Each reaches beyond the allow list or the meter: `mcp` (the provider connects to MCP
    /// servers the request names), `web_search`, `web_fetch` (the provider fetches pages and
    /// files by URL: Anthropic's web fetch, Gemini's URL context, images and documents given by
    /// URL), `code_execution` (code run in the provider's container, paid apart from tokens),
    /// `file_search` (the account's stored files). Empty by default: a model call asking for one
    /// is refused, naming the field and this line.
    pub provider_tools: Vec<ProviderTool>,
}

/// A tool a model API runs on its own side (`sandbox.network.provider_tools`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ProviderTool {
    Mcp,
    WebSearch,
    WebFetch,
    CodeExecution,
    FileSearch,
}

impl ProviderTool {
    /// Its name under `sandbox.network.provider_tools`.
    pub fn name(self) -> &'static str {
        match self {
            ProviderTool::Mcp => "mcp",
            ProviderTool::WebSearch => "web_search",
            ProviderTool::WebFetch => "web_fetch",
            ProviderTool::CodeExecution => "code_execution",
            ProviderTool::FileSearch => "file_search",
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum NetworkIsolation {
    #[default]
    Auto,
    Namespace,
    Landlock,
    None,
}

/// Hosts each agent role (and the verification commands) may reach: a name (`crates.io`), a
/// name and port (`registry.example:8443`; without one, ports 443 and 80), or every name
/// below a domain (`*.githubusercontent.com`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct NetworkAllow {
    /// Every agent and the verification commands.
    pub all: Vec<String>,
    pub planner: Vec<String>,
    pub worker: Vec<String>,
    pub tester: Vec<String>,
    pub docser: Vec<String>,
    pub research: Vec<String>,
    pub judge: Vec<String>,
    /// The threat scan's detection agent (`scan.agent`), which needs nothing but its model.
    pub detector: Vec<String>,
    /// The verification commands (e.g. `registry.npmjs.org` for `npm ci`).
    pub checks: Vec<String>,
}

/// Who a network's allow list is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NetworkUser {
    Agent(AgentRole),
    Checks,
}

impl NetworkUser {
    /// Its key under `sandbox.network.allow`.
    pub fn key(self) -> &'static str {
        match self {
            NetworkUser::Agent(role) => role.name(),
            NetworkUser::Checks => "checks",
        }
    }
}

impl NetworkAllow {
    /// The rules of `user`: its own and `all`.
    pub fn rules(&self, user: NetworkUser) -> Vec<HostRule> {
        let own = match user {
            NetworkUser::Agent(AgentRole::Planner) => &self.planner,
            NetworkUser::Agent(AgentRole::Judge) => &self.judge,
            NetworkUser::Agent(AgentRole::Task(Role::Worker)) => &self.worker,
            NetworkUser::Agent(AgentRole::Task(Role::Tester)) => &self.tester,
            NetworkUser::Agent(AgentRole::Task(Role::Docser)) => &self.docser,
            NetworkUser::Agent(AgentRole::Task(Role::Research)) => &self.research,
            NetworkUser::Agent(AgentRole::Detector) => &self.detector,
            NetworkUser::Checks => &self.checks,
        };
        own.iter()
            .chain(&self.all)
            .filter_map(|text| HostRule::parse(text).ok())
            .collect()
    }

    /// Every list with its key, for the load checks.
    pub(super) fn lists(&self) -> [(&'static str, &Vec<String>); 9] {
        [
            ("all", &self.all),
            ("planner", &self.planner),
            ("worker", &self.worker),
            ("tester", &self.tester),
            ("docser", &self.docser),
            ("research", &self.research),
            ("judge", &self.judge),
            ("detector", &self.detector),
            ("checks", &self.checks),
        ]
    }
}

/// One allowed host.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HostRule {
    /// Lower case; for `*.example.com`, `example.com` with `subdomains` set.
    pub host: String,
    pub subdomains: bool,
    /// `None`: 443 and 80.
    pub port: Option<u16>,
}

impl HostRule {
    /// Parses `host`, `host:port` or `*.domain`; the problem in words otherwise.
    pub fn parse(text: &str) -> Result<HostRule, String> {
        let text = text.trim().to_ascii_lowercase();
        if text.contains("://") || text.contains('/') {
            return Err("give a host name, without a scheme or a path".to_string());
        }
        let (host, port) = match text.rsplit_once(':') {
            Some((host, port)) => {
                let port: u16 = port
                    .parse()
                    .ok()
                    .filter(|p| *p > 0)
                    .ok_or_else(|| format!("`{port}` is not a port"))?;
                (host.to_string(), Some(port))
            }
            None => (text.clone(), None),
        };
        let (host, subdomains) = match host.strip_prefix("*.") {
            Some(rest) => (rest.to_string(), true),
            None => (host, false),
        };
        let valid = !host.is_empty()
            && host.len() <= 253
            && host.split('.').all(|l| {
                !l.is_empty() && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
            });
        if !valid {
            return Err(format!("`{host}` is not a host name"));
        }
        Ok(HostRule {
            host,
            subdomains,
            port,
        })
    }

    pub fn matches(&self, host: &str, port: u16) -> bool {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let name = match self.subdomains {
            true => host.ends_with(&format!(".{}", self.host)),
            false => host == self.host,
        };
        let port_ok = match self.port {
            Some(p) => p == port,
            None => port == 443 || port == 80,
        };
        name && port_ok
    }
}

/// `(key, message, fix)` of the first allow entry that is not a host rule.
pub(super) fn check(network: &NetworkConfig) -> Result<(), (String, String, String)> {
    for (key, list) in network.allow.lists() {
        for (i, entry) in list.iter().enumerate() {
            if let Err(problem) = HostRule::parse(entry) {
                return Err((
                    format!("sandbox.network.allow.{key}[{i}]"),
                    problem,
                    "give a host (`registry.npmjs.org`), a host and port (`example.com:8443`) or a domain's hosts (`*.example.com`)".to_string(),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_rules_parse_and_match() {
        let cases: &[(&str, &str, u16, bool)] = &[
            ("registry.npmjs.org", "registry.npmjs.org", 443, true),
            ("registry.npmjs.org", "Registry.NPMjs.org.", 80, true),
            ("registry.npmjs.org", "registry.npmjs.org", 8080, false),
            ("registry.npmjs.org", "evil.registry.npmjs.org", 443, false),
            ("*.example.com", "a.b.example.com", 443, true),
            ("*.example.com", "example.com", 443, false),
            ("*.example.com", "badexample.com", 443, false),
            ("example.com:8443", "example.com", 8443, true),
            ("example.com:8443", "example.com", 443, false),
        ];
        for (rule, host, port, expected) in cases {
            let r = HostRule::parse(rule).unwrap();
            assert_eq!(r.matches(host, *port), *expected, "{rule} {host}:{port}");
        }
        for bad in [
            "https://x.com",
            "x.com/path",
            "x.com:0",
            "x.com:http",
            "",
            "a..b",
            "*.",
        ] {
            assert!(HostRule::parse(bad).is_err(), "{bad}");
        }
    }

    /// Every agent role, and the checks.
    fn users() -> impl Iterator<Item = NetworkUser> {
        AgentRole::ALL
            .iter()
            .map(|r| NetworkUser::Agent(*r))
            .chain([NetworkUser::Checks])
    }

    /// A refused host's advice names `sandbox.network.allow.<key>` for the agent it refused:
    /// every agent role and the checks have a list under that key, and it is theirs.
    #[test]
    fn every_network_user_has_the_list_its_advice_names() {
        for user in users() {
            let mut allow = NetworkAllow::default();
            let list = allow
                .lists()
                .iter()
                .position(|(key, _)| *key == user.key())
                .unwrap_or_else(|| panic!("no list named {}", user.key()));
            let lists = [
                &mut allow.all,
                &mut allow.planner,
                &mut allow.worker,
                &mut allow.tester,
                &mut allow.docser,
                &mut allow.research,
                &mut allow.judge,
                &mut allow.detector,
                &mut allow.checks,
            ];
            lists
                .into_iter()
                .nth(list)
                .unwrap()
                .push("own.example".into());
            let rules = allow.rules(user);
            assert!(
                rules.iter().any(|r| r.matches("own.example", 443)),
                "{}: its own list is not its rules",
                user.key()
            );
        }
    }

    /// Issue 49: the advice for a refused host, pasted into `.opentiger.yml` as written (block
    /// or flow style, into an empty file or after other keys), loads and allows that host for
    /// the one it refused.
    #[test]
    fn the_advice_for_a_refused_host_can_be_pasted_as_written() {
        use crate::model::network::{allow_flow, allow_yaml, Refusal};
        for user in users() {
            for (host, port) in [("registry.npmjs.org", 443), ("evil.example", 8443)] {
                let refusal = Refusal {
                    host: host.to_string(),
                    port,
                    by: user.key().to_string(),
                    times: 1,
                    own: None,
                };
                let entry = refusal.allow_entry();
                let shown = refusal.line();
                let pasted = shown.rsplit('`').nth(1).expect("the advice in backticks");
                for advice in [
                    allow_yaml(user.key(), &entry),
                    allow_flow(user.key(), &entry),
                    pasted.to_string(),
                ] {
                    for file in [
                        format!("{advice}\n"),
                        format!("mode: local-git\nlimits:\n  max_runs_per_tick: 2\n{advice}\n"),
                    ] {
                        let config = crate::config::load_str(&file, ".opentiger.yml")
                            .unwrap_or_else(|e| panic!("{file}\nrefused: {e}"));
                        let rules = config.sandbox.network.allow.rules(user);
                        assert!(
                            rules.iter().any(|r| r.matches(host, port)),
                            "{file}: does not allow {host}:{port} for the {}",
                            user.key()
                        );
                    }
                }
            }
        }
    }
}

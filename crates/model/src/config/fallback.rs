//! Fallback executors (`agents.<role>.fallbacks`): the ordered chain of agents a role may run on.
//! The chain is the role's effective agent, then each fallback entry laid over it; each executor
//! has a key (`claude-code`, `codex:o4-mini`), so a quota parks it for every role that uses it.
//!
//! Not for: which entry runs (`engine::fallback`, from what the runner can build and what waits
//! on quota), or what a fallback entry may not say (`config::agent_values`).

use super::{AgentConfig, AgentRole, AgentsConfig, EffectiveAgent, ExecutorKind};

impl ExecutorKind {
    /// The `executor:` word.
    pub fn as_str(self) -> &'static str {
        match self {
            ExecutorKind::ClaudeCode => "claude-code",
            ExecutorKind::Opencode => "opencode",
            ExecutorKind::Codex => "codex",
            ExecutorKind::Aider => "aider",
            ExecutorKind::Command => "command",
            ExecutorKind::Scripted => "scripted",
        }
    }
}

impl EffectiveAgent {
    /// What identifies this executor across roles and runs, so that a quota hit by one run
    /// parks it for every role that uses it: the `executor:` word, plus the model for a CLI
    /// adapter (`codex:o4-mini`: quotas are per model), the program for `command`
    /// (`command:./agent.sh`) and the script for `scripted`.
    pub fn executor_key(&self) -> String {
        let word = self.executor.as_str();
        let detail = match self.executor {
            ExecutorKind::ClaudeCode
            | ExecutorKind::Opencode
            | ExecutorKind::Codex
            | ExecutorKind::Aider => match (&self.provider, &self.model) {
                // Quotas are per provider and model.
                (Some(p), Some(model)) if !p.built_in => Some(format!("{}/{model}", p.name)),
                _ => self.model.clone(),
            },
            ExecutorKind::Command => self.command.as_ref().and_then(|c| c.first().cloned()),
            ExecutorKind::Scripted => self.script.clone(),
        };
        match detail {
            Some(detail) => format!("{word}:{detail}"),
            None => word.to_string(),
        }
    }
}

impl AgentsConfig {
    /// The fallback entries of a role and the key they are written under: the role's own list
    /// when it sets one (even an empty one), else its parent's (research: the worker's), else
    /// `agents.default.fallbacks`.
    pub fn fallback_entries(&self, role: AgentRole) -> (String, &[AgentConfig]) {
        if let Some(list) = &self.entry(role).fallbacks {
            return (format!("agents.{}.fallbacks", role.name()), list);
        }
        match self.parent(role).and_then(|p| p.fallbacks.as_deref()) {
            Some(list) => ("agents.worker.fallbacks".to_string(), list),
            None => (
                "agents.default.fallbacks".to_string(),
                self.default.fallbacks.as_deref().unwrap_or_default(),
            ),
        }
    }

    /// The executors of a role in the order they are tried: its effective agent first, then its
    /// fallbacks, each laid over the role's agent.
    pub fn chain(&self, role: AgentRole) -> Vec<EffectiveAgent> {
        let primary = self.effective(role);
        let (key, entries) = self.fallback_entries(role);
        let mut chain = Vec::with_capacity(entries.len() + 1);
        for (i, entry) in entries.iter().enumerate() {
            chain.push(over(
                &primary,
                entry,
                format!("{key}[{i}]"),
                &self.providers,
            ));
        }
        chain.insert(0, primary);
        chain
    }
}

/// A fallback entry over the role's agent. The keys that describe one executor (provider,
/// model, command, script, prices) are not carried over to another executor: a claude model
/// name means nothing to codex, and a `command:` written for one program would replace
/// another's.
fn over(
    primary: &EffectiveAgent,
    entry: &AgentConfig,
    config_key: String,
    providers: &std::collections::BTreeMap<String, super::providers::ProviderConfig>,
) -> EffectiveAgent {
    let executor = entry.executor.unwrap_or(primary.executor);
    let same = executor == primary.executor;
    // A provider goes with its model: another executor's entry names its own, or none.
    let provider = match &entry.provider {
        Some(name) => super::providers::AgentProvider::resolve(name, providers),
        None if same => primary.provider.clone(),
        None => None,
    };
    EffectiveAgent {
        executor,
        provider,
        model: tied(same, &entry.model, &primary.model),
        command: tied(same, &entry.command, &primary.command),
        timeout_minutes: entry.timeout_minutes.unwrap_or(primary.timeout_minutes),
        // A key listed for one CLI is carried to another (it may use the same provider), but
        // never to an arbitrary program that did not list it (issue 15).
        env_passthrough: entry.env_passthrough.clone().unwrap_or_else(|| {
            if same || executor.is_cli() == primary.executor.is_cli() {
                primary.env_passthrough.clone()
            } else {
                executor.default_passthrough()
            }
        }),
        home_files: entry.home_files.clone().unwrap_or_else(|| {
            if same {
                primary.home_files.clone()
            } else {
                executor.default_home_files()
            }
        }),
        count: primary.count,
        review: primary.review,
        script: tied(same, &entry.script, &primary.script),
        max_turns: entry.max_turns.unwrap_or(primary.max_turns),
        pricing: tied(same, &entry.pricing, &primary.pricing),
        idle_minutes: entry.idle_minutes.unwrap_or(primary.idle_minutes),
        command_at: match (&entry.command, same) {
            (None, true) => primary.command_at.clone(),
            (Some(_), _) | (None, false) => config_key.clone(),
        },
        limits: entry
            .limits
            .as_ref()
            .map_or_else(|| primary.limits.clone(), |own| own.over(&primary.limits)),
        config_key,
    }
}

/// The entry's own value, else the role's when the entry keeps the role's executor.
fn tied<T: Clone>(same_executor: bool, own: &Option<T>, inherited: &Option<T>) -> Option<T> {
    match own {
        Some(value) => Some(value.clone()),
        None if same_executor => inherited.clone(),
        None => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_str;
    use crate::model::Role;

    const WORKER: AgentRole = AgentRole::Task(Role::Worker);

    fn chain(yaml: &str, role: AgentRole) -> Vec<EffectiveAgent> {
        load_str(yaml, ".opentiger.yml").unwrap().agents.chain(role)
    }

    #[test]
    fn fallbacks_inherit_from_the_role_but_not_another_executors_keys() {
        let yaml = "agents:\n  default:\n    timeout_minutes: 20\n    env_passthrough: [ANTHROPIC_API_KEY]\n  worker:\n    model: opus\n    command: [\"/opt/claude\"]\n    max_turns: 40\n    pricing: {input_per_mtok: 3, output_per_mtok: 15}\n    fallbacks:\n      - executor: codex\n        model: o4-mini\n        env_passthrough: [OPENAI_API_KEY]\n      - model: sonnet\n        timeout_minutes: 5\n";
        let chain = chain(yaml, WORKER);
        let summary: Vec<_> = chain
            .iter()
            .map(|a| {
                (
                    a.executor_key(),
                    a.config_key.as_str(),
                    a.command.clone(),
                    a.timeout_minutes,
                    a.max_turns,
                    a.pricing.is_some(),
                    a.env_passthrough.join(","),
                )
            })
            .collect();
        let opt = Some(vec!["/opt/claude".to_string()]);
        #[rustfmt::skip]
        assert_eq!(summary, [
            ("claude-code:opus".to_string(), "agents.worker", opt.clone(), 20.0, 40, true, "ANTHROPIC_API_KEY".to_string()),
            ("codex:o4-mini".to_string(), "agents.worker.fallbacks[0]", None, 20.0, 40, false, "OPENAI_API_KEY".to_string()),
            ("claude-code:sonnet".to_string(), "agents.worker.fallbacks[1]", opt, 5.0, 40, true, "ANTHROPIC_API_KEY".to_string()),
        ]);
    }

    /// Issue 15: an arbitrary command gets what it lists, and a key listed for a CLI is not
    /// carried to a command fallback. Issue 37: nothing is passed by default (the runner holds
    /// the model keys; listed ones become placeholders).
    #[test]
    fn api_keys_reach_only_agents_that_need_or_list_them() {
        #[rustfmt::skip]
        let cases: &[(&str, &[&str])] = &[
            ("agents:\n  default:\n    executor: command\n    command: [x]\n", &[""]),
            ("agents:\n  worker:\n    executor: command\n    command: [x]\n", &[""]),
            ("agents:\n  worker:\n    executor: command\n    command: [x]\n    env_passthrough: [K]\n", &["K"]),
            ("agents:\n  worker:\n    executor: codex\n", &[""]),
            ("agents:\n  worker:\n    executor: scripted\n", &[""]),
            ("agents:\n  default:\n    env_passthrough: [ANTHROPIC_API_KEY]\n  worker:\n    fallbacks: [{executor: command, command: [x]}, {executor: codex}]\n",
                &["ANTHROPIC_API_KEY", "", "ANTHROPIC_API_KEY"]),
            ("agents:\n  worker:\n    executor: command\n    command: [x]\n    env_passthrough: [K]\n    fallbacks: [{executor: claude-code}]\n",
                &["K", ""]),
        ];
        for (yaml, expected) in cases {
            let got: Vec<String> = chain(yaml, WORKER)
                .iter()
                .map(|a| a.env_passthrough.join(","))
                .collect();
            assert_eq!(got, *expected, "{yaml}");
        }
    }

    #[test]
    fn default_fallbacks_apply_to_roles_that_set_none() {
        let yaml = "agents:\n  default:\n    fallbacks: [{executor: codex}]\n  judge:\n    fallbacks: []\n  tester:\n    fallbacks: [{executor: aider, model: gpt-5}]\n";
        let keys = |role| -> Vec<String> {
            chain(yaml, role)
                .iter()
                .map(|a| format!("{} {}", a.executor_key(), a.config_key))
                .collect()
        };
        assert_eq!(
            keys(WORKER),
            [
                "claude-code agents.worker",
                "codex agents.default.fallbacks[0]"
            ]
        );
        assert_eq!(keys(AgentRole::Judge), ["claude-code agents.judge"]);
        assert_eq!(
            keys(AgentRole::Task(Role::Tester)),
            [
                "claude-code agents.tester",
                "aider:gpt-5 agents.tester.fallbacks[0]"
            ]
        );
        assert_eq!(chain("", WORKER).len(), 1, "no fallbacks by default");
    }

    #[test]
    fn executor_keys_name_what_a_quota_belongs_to() {
        let cases = [
            ("executor: claude-code", "claude-code"),
            ("executor: codex\n    model: o4-mini", "codex:o4-mini"),
            (
                "executor: command\n    command: [./agent.sh, --fast]",
                "command:./agent.sh",
            ),
            (
                "executor: command\n    command: [x]\n    model: m",
                "command:x",
            ),
            ("executor: scripted", "scripted"),
            ("executor: scripted\n    script: s.json", "scripted:s.json"),
        ];
        for (lines, key) in cases {
            let yaml = format!("agents:\n  worker:\n    {lines}\n");
            assert_eq!(chain(&yaml, WORKER)[0].executor_key(), key, "{lines}");
        }
    }
}

//! An agent CLI's key (issue 18): whether the agent is given one, the fix a person needs when it
//! is missing or refused, and the fingerprint of what an executor runs with, so a park for its
//! configuration ends when that changes.
//!
//! A CLI runs when one of its keys (`Cli::keys`) is set in the runner's environment (the runner
//! holds it; the agent gets a placeholder, issue 37), or when it has a login of its own under
//! `$HOME` (`Cli::logins`, made by hand on a laptop). Without either it would only fail: the
//! runner does not start it. With a provider (issue 50) the key is that provider's: its
//! `providers.<name>.key` variable (none needed when it names none), or a built-in one's.
//! Every fix names the variable the agent's set-up reads: its provider's, the one set (a
//! refused key), the one its model's provider prefix calls for (`openai/…`: OPENAI_API_KEY),
//! or the one the CLI's docs recommend (codex: OPENAI_API_KEY).
//! Not here: reading what a CLI printed about its key (`engine::classify`, `report`).

use super::{known_cli, Cli};
use crate::config::{EffectiveAgent, ExecutorKind};
use crate::model::short_hash;

/// The keys the agent is given (through opentiger's proxy): its provider's, else its CLI's,
/// set and not blank in the runner's environment.
fn given(
    cli: &Cli,
    agent: &EffectiveAgent,
    lookup: &impl Fn(&str) -> Option<String>,
) -> Vec<String> {
    let candidates: Vec<String> = match &agent.provider {
        Some(p) => p.keys.clone(),
        None => cli.keys.iter().map(|k| k.to_string()).collect(),
    };
    candidates
        .into_iter()
        .filter(|k| lookup(k).is_some_and(|v| !v.trim().is_empty()))
        .collect()
}

/// Why the agent cannot reach a model as configured: its CLI needs a key, none is given and it
/// has no login of its own under `home`; or it is opencode without a model, which would
/// silently use opencode's own hosted default. The problem and its fix, naming the key.
pub fn missing_key(
    agent: &EffectiveAgent,
    lookup: impl Fn(&str) -> Option<String>,
    home: Option<&std::path::Path>,
) -> Option<String> {
    let cli = known_cli(agent.executor)?;
    if agent.executor == ExecutorKind::Opencode && agent.model.is_none() {
        return Some(format!(
            "{key}.executor is `opencode`, but no model is set: opencode would run on its own hosted default provider, not yours; it was not started\n  fix: set `{key}.model` to `provider/model`, e.g. `anthropic/claude-sonnet-4-5`",
            key = agent.config_key
        ));
    }
    if !given(cli, agent, &lookup).is_empty() {
        return None;
    }
    if let Some(p) = agent.provider.as_ref().filter(|p| !p.built_in) {
        let var = p.keys.first()?;
        return Some(format!(
            "{key}.provider is `{name}`, whose key {var} is not set for the runner ({line}), so the agent cannot reach its model; it was not started\n  {}",
            fix_with(cli, agent, &lookup),
            key = agent.config_key,
            name = p.name,
            line = p.key_line(),
        ));
    }
    if home.is_some_and(|h| cli.logins.iter().any(|l| h.join(l).is_file())) {
        return None;
    }
    let names: Vec<String> = match &agent.provider {
        Some(p) => p.keys.clone(),
        None => cli.keys.iter().map(|k| k.to_string()).collect(),
    };
    let problem = format!("none of {} is set", names.join(", "));
    Some(format!(
        "{key}.executor is `{kind}`, but the agent is given no key: {problem}, so it cannot reach its model; it was not started\n  {}",
        fix_with(cli, agent, &lookup),
        key = agent.config_key,
        kind = cli.kind,
    ))
}

/// `fix: …` for an agent that cannot reach its model as configured: the key to set and pass,
/// and the model to check.
pub fn config_fix(agent: &EffectiveAgent) -> String {
    match known_cli(agent.executor) {
        Some(cli) => fix_with(cli, agent, &|k| std::env::var(k).ok()),
        None => format!(
            "fix: check the key, login and model the agent at {} uses",
            agent.config_key
        ),
    }
}

/// The key variable a fix for `agent` names (module docs), with where it is configured when
/// its provider is one of `providers:`.
pub fn wanted_key(
    cli: &Cli,
    agent: &EffectiveAgent,
    lookup: &impl Fn(&str) -> Option<String>,
) -> Option<String> {
    if let Some(p) = &agent.provider {
        let set = p.keys.iter().find(|k| lookup(k).is_some());
        return set.or(p.keys.first()).cloned();
    }
    if let Some(k) = cli
        .keys
        .iter()
        .find(|k| lookup(k).is_some_and(|v| !v.trim().is_empty()))
    {
        return Some(k.to_string());
    }
    // The provider the model names (`openai/gpt-5` for opencode or aider).
    let by_model = agent
        .model
        .as_deref()
        .and_then(|m| m.split_once('/'))
        .and_then(|(p, _)| {
            let p = if p == "google" { "gemini" } else { p };
            crate::config::built_in(p).map(|b| b.keys[0])
        });
    let listed = cli
        .keys
        .iter()
        .find(|k| agent.env_passthrough.iter().any(|p| p == *k));
    let wanted = by_model
        .filter(|k| cli.keys.contains(k))
        .or(listed.copied())
        // codex reads CODEX_API_KEY, but OPENAI_API_KEY is what its docs and ours set.
        .or((cli.kind == "codex").then_some("OPENAI_API_KEY"))
        .unwrap_or(cli.keys[0]);
    Some(wanted.to_string())
}

fn fix_with(cli: &Cli, agent: &EffectiveAgent, lookup: &impl Fn(&str) -> Option<String>) -> String {
    let model = match &agent.model {
        Some(m) => format!(
            " and that `{}.model` ({m}) is a model it may use",
            agent.config_key
        ),
        None => String::new(),
    };
    let Some(wanted) = wanted_key(cli, agent, lookup) else {
        // A provider that takes no key: the endpoint refused anyway.
        let name = agent.provider.as_ref().map_or("", |p| p.name.as_str());
        return format!(
            "fix: `providers.{name}` names no key, but its endpoint refused the agent: give it `key:` with the variable holding one{model}"
        );
    };
    let line = match &agent.provider {
        Some(p) if !p.built_in => format!(" (the variable {} names)", p.key_line()),
        _ => String::new(),
    };
    format!(
        "fix: set {wanted}{line} in the workflow's env (`env: {wanted}: ${{{{ secrets.{wanted} }}}}`) for the runner, which holds it (the agent at `{key}` gets a placeholder and opentiger's proxy puts the key back on its model API's requests); check that the key is valid{model}",
        key = agent.config_key
    )
}

/// What an executor runs with, as a short hash: its configuration and which of its CLI's keys
/// it is given (names only: no secret, not even hashed, goes into the state). A park for its
/// configuration holds while this stays the same.
pub fn config_fingerprint(
    agent: &EffectiveAgent,
    lookup: impl Fn(&str) -> Option<String>,
) -> String {
    let keys = known_cli(agent.executor)
        .map(|cli| given(cli, agent, &lookup).join(","))
        .unwrap_or_default();
    // A provider's name only when one is set: the fingerprints of set-ups without stay as
    // they were.
    let provider = agent.provider.as_ref().map(|p| p.name.as_str());
    let command = agent.command.as_deref().unwrap_or_default().join("\u{1f}");
    let executor_key = agent.executor_key();
    let passthrough = agent.env_passthrough.join(",");
    let mut parts: Vec<&str> = vec![
        &executor_key,
        agent.model.as_deref().unwrap_or(""),
        &command,
        &passthrough,
        agent.script.as_deref().unwrap_or(""),
        &keys,
    ];
    parts.extend(provider);
    short_hash(&parts)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A variable lookup over `pairs`.
    fn env(
        pairs: &'static [(&'static str, &'static str)],
    ) -> impl Fn(&str) -> Option<String> + Copy {
        move |k: &str| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }
    use crate::config::{AgentRole, Config};
    use crate::model::Role;

    fn agent(yaml: &str) -> EffectiveAgent {
        let config: Config = crate::config::load_str(yaml, ".opentiger.yml").unwrap();
        config.agents.effective(AgentRole::Task(Role::Worker))
    }

    #[test]
    fn a_cli_without_a_key_or_login_is_not_started() {
        let claude = agent("agents:\n  worker:\n    executor: claude-code\n");
        let codex = agent(
            "agents:\n  worker:\n    executor: codex\n    env_passthrough: [OPENAI_API_KEY]\n",
        );
        let command = agent("agents:\n  worker:\n    executor: command\n    command: [x]\n");
        let home = tempfile::tempdir().unwrap();
        let none = env(&[]);
        let text = missing_key(&claude, none, Some(home.path())).expect("no key");
        for part in [
            "agents.worker.executor is `claude-code`, but the agent is given no key: none of ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN is set",
            "fix: set ANTHROPIC_API_KEY in the workflow's env",
            "for the runner, which holds it (the agent at `agents.worker` gets a placeholder",
        ] {
            assert!(text.contains(part), "{part:?} not in {text}");
        }
        assert_eq!(
            missing_key(&claude, env(&[("ANTHROPIC_API_KEY", "sk")]), None),
            None
        );
        assert!(
            missing_key(&claude, env(&[("ANTHROPIC_API_KEY", "  ")]), None).is_some(),
            "blank"
        );
        // Issue 37: a key set for the runner is given, listed or not (the agent gets a
        // placeholder).
        assert_eq!(
            missing_key(&claude, env(&[("CLAUDE_CODE_OAUTH_TOKEN", "t")]), None),
            None
        );
        // codex: the key it reads, or OPENAI_API_KEY (mapped to it by the adapter).
        assert_eq!(
            missing_key(&codex, env(&[("OPENAI_API_KEY", "sk")]), None),
            None
        );
        // The fix names the key the agent lists, not the one the CLI reads.
        assert!(missing_key(&codex, none, None)
            .unwrap()
            .contains("fix: set OPENAI_API_KEY"));
        // Issue 50: codex's fix names the key its docs and ours set, not the one it reads.
        let bare = agent("agents:\n  worker:\n    executor: codex\n");
        assert!(missing_key(&bare, none, None)
            .unwrap()
            .contains("fix: set OPENAI_API_KEY"));
        // A login made by hand on this machine.
        std::fs::create_dir_all(home.path().join(".claude")).unwrap();
        std::fs::write(home.path().join(".claude/.credentials.json"), "{}").unwrap();
        assert_eq!(missing_key(&claude, none, Some(home.path())), None);
        assert_eq!(missing_key(&command, none, None), None, "not a known CLI");
        // opencode with no model would use its own hosted default without any key.
        let opencode = agent("agents:\n  worker:\n    executor: opencode\n");
        let text = missing_key(&opencode, env(&[("ANTHROPIC_API_KEY", "sk")]), None).unwrap();
        assert!(
            text.contains("no model is set") && text.contains("fix: set `agents.worker.model`"),
            "{text}"
        );
        let with_model = agent(
            "agents:\n  worker:\n    executor: opencode\n    model: anthropic/claude-sonnet-4-5\n",
        );
        assert_eq!(
            missing_key(&with_model, env(&[("ANTHROPIC_API_KEY", "sk")]), None),
            None
        );
    }

    /// Issue 50: with a provider, its key is the one; every fix names its variable and line.
    #[test]
    fn a_provider_s_key_is_the_one_asked_for() {
        let local = "providers:\n  local:\n    api: openai-chat\n    base_url: http://127.0.0.1:8080/v1\n    key: LOCAL_MODEL_KEY\n  free:\n    api: openai-chat\n    base_url: http://127.0.0.1:8081/v1\n";
        let on = |provider: &str, executor: &str| {
            agent(&format!(
                "{local}agents:\n  worker:\n    executor: {executor}\n    provider: {provider}\n    model: m\n"
            ))
        };
        // Another CLI key does not serve: the provider's is the one.
        let text = missing_key(
            &on("local", "aider"),
            env(&[("OPENAI_API_KEY", "sk")]),
            None,
        )
        .expect("its key is not set");
        for part in [
            "agents.worker.provider is `local`, whose key LOCAL_MODEL_KEY is not set for the runner (`providers.local.key: LOCAL_MODEL_KEY`)",
            "fix: set LOCAL_MODEL_KEY (the variable `providers.local.key: LOCAL_MODEL_KEY` names)",
        ] {
            assert!(text.contains(part), "{part:?} not in {text}");
        }
        assert_eq!(
            missing_key(
                &on("local", "codex"),
                env(&[("LOCAL_MODEL_KEY", "k")]),
                None
            ),
            None
        );
        // A provider that takes no key needs none.
        assert_eq!(missing_key(&on("free", "opencode"), env(&[]), None), None);
        // A built-in provider: its own keys.
        let openai = on("openai", "aider");
        assert!(
            missing_key(&openai, env(&[("ANTHROPIC_API_KEY", "sk")]), None)
                .unwrap()
                .contains("none of OPENAI_API_KEY, CODEX_API_KEY is set")
        );
        // The refused key's fix names the variable the set-up reads: the one set, or the one
        // the model's provider prefix calls for.
        let cli = known_cli(ExecutorKind::Aider).unwrap();
        let by_model =
            agent("agents:\n  worker:\n    executor: aider\n    model: openai/gpt-4.1\n");
        assert_eq!(
            wanted_key(cli, &by_model, &|_| None).as_deref(),
            Some("OPENAI_API_KEY")
        );
        let codex = agent("agents:\n  worker:\n    executor: codex\n");
        let codex_cli = known_cli(ExecutorKind::Codex).unwrap();
        assert_eq!(
            wanted_key(codex_cli, &codex, &env(&[("OPENAI_API_KEY", "sk")])).as_deref(),
            Some("OPENAI_API_KEY")
        );
    }

    #[test]
    fn the_fingerprint_follows_the_configuration_and_the_keys_given() {
        let claude = agent("agents:\n  worker:\n    executor: claude-code\n");
        let opus = agent("agents:\n  worker:\n    executor: claude-code\n    model: opus\n");
        let with = |k: &str| (k == "ANTHROPIC_API_KEY").then(|| "sk-1".to_string());
        let other_value = |k: &str| (k == "ANTHROPIC_API_KEY").then(|| "sk-2".to_string());
        let without = |_: &str| None;
        let a = config_fingerprint(&claude, with);
        assert_eq!(
            a,
            config_fingerprint(&claude, other_value),
            "values are not part of it"
        );
        assert_ne!(a, config_fingerprint(&claude, without));
        assert_ne!(a, config_fingerprint(&opus, with));
        assert_eq!(a.len(), 12);
    }
}

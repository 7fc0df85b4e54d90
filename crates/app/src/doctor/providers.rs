//! The provider checks: each model API under `providers:` — its key set for the runner (or
//! none needed), the agents that pick it and how each one's CLI speaks its API (itself, or
//! through the proxy's translation of Responses to chat completions), and with `--online`
//! whether the endpoint answers, takes the key and lists each model an agent names. Every fix
//! names the provider's own key variable and configuration line.
//! Not for: the agents' programs and the built-in providers' keys (`doctor::agents`), asking
//! the endpoint (`egress::probe`).

use super::{Check, Vars};
use crate::config::{speaks, AgentRole, Config, EffectiveAgent, ProviderConfig, Speech};
use crate::egress::probe::{list_models, Listed};
use crate::egress::Provider;

/// Variables SDKs read a model API's base URL from, with the API shape it would be.
const BASE_URL_VARS: &[(&str, &str)] = &[
    ("OPENAI_BASE_URL", "openai-chat"),
    ("OPENAI_API_BASE", "openai-chat"),
    ("OPENROUTER_BASE_URL", "openai"),
    ("OPENROUTER_API_BASE", "openai"),
    ("OLLAMA_API_BASE", "openai-chat"),
    ("ANTHROPIC_BASE_URL", "anthropic"),
    ("ANTHROPIC_API_BASE", "anthropic"),
    ("GEMINI_BASE_URL", "gemini"),
    ("GEMINI_API_BASE", "gemini"),
];

/// Every configured provider's checks, in the order of `providers:`; before them, a base URL
/// set for the runner that no agent sees (the agents' base URLs are their routes on the proxy).
pub fn checks(config: &Config, vars: Vars<'_>, online: bool) -> Vec<Check> {
    let mut out = Vec::new();
    for (var, api) in BASE_URL_VARS {
        let Some(url) = vars(var).filter(|v| !v.trim().is_empty()) else {
            continue;
        };
        let shown: String = url.chars().take(120).collect();
        out.push(Check::warn(
            "providers",
            format!("{var}={shown} is set for the runner, but no agent sees it: each agent's base URL is its route on opentiger's proxy"),
            format!("to use that endpoint, declare it as a provider and pick it: `providers: {{local: {{api: {api}, base_url: \"{shown}\"}}}}` and `agents: {{default: {{provider: local, model: <its model>}}}}` (docs/agents.md, \"A model of your own\")"),
        ));
    }
    for (name, p) in &config.providers {
        let users = users(config, name);
        let at = format!("providers.{name}");
        let key_value = p
            .key
            .as_ref()
            .and_then(|var| vars(var))
            .filter(|v| !v.trim().is_empty());
        let key_words = match (&p.key, &key_value) {
            (None, _) => "it takes no key (none is sent)".to_string(),
            (Some(var), Some(_)) => format!("its key {var} is set for the runner"),
            (Some(var), None) => format!("its key {var} is not set"),
        };
        let used_by = if users.is_empty() {
            "no agent picks it".to_string()
        } else {
            let list: Vec<String> = users
                .iter()
                .map(|(at, roles, a)| speech(at, roles, a, p))
                .collect();
            format!("used by {}", list.join(", "))
        };
        let detail = format!(
            "{at}: {} at {}; {key_words}; {used_by}",
            p.api.describe(),
            p.base_url
        );
        if let (Some(var), None) = (&p.key, &key_value) {
            let level = if users.is_empty() {
                Check::warn
            } else {
                Check::fail
            };
            out.push(level("providers", detail, key_fix(name, var)));
            continue;
        }
        if !online {
            out.push(Check::ok(
                "providers",
                format!("{detail} (--online asks it for its models)"),
            ));
            continue;
        }
        out.push(Check::ok("providers", detail));
        out.push(online_check(name, p, key_value.as_deref(), &users));
    }
    out
}

/// The agents in use that pick provider `name`, the same agent once: where to edit it
/// (`agents.default` when roles share it, as `doctor::agents` says, else the role's or the
/// fallback's key), the roles it plays, the agent.
type Users = Vec<(String, Vec<&'static str>, EffectiveAgent)>;

fn users(config: &Config, name: &str) -> Users {
    let mut out: Users = Vec::new();
    for role in AgentRole::ALL
        .into_iter()
        .filter(|r| super::agents::used(config, *r))
    {
        for agent in config.agents.chain(role) {
            let picks = agent
                .provider
                .as_ref()
                .is_some_and(|p| !p.built_in && p.name == name);
            if !picks {
                continue;
            }
            let fallback = agent.config_key.contains(".fallbacks[");
            let same = |a: &EffectiveAgent| {
                a.executor == agent.executor
                    && a.model == agent.model
                    && (!fallback || a.config_key == agent.config_key)
            };
            match out.iter_mut().find(|(_, _, a)| same(a)) {
                Some((at, roles, _)) => {
                    roles.push(role.name());
                    if !fallback {
                        *at = "agents.default".to_string();
                    }
                }
                None => out.push((agent.config_key.clone(), vec![role.name()], agent)),
            }
        }
    }
    out
}

/// `the planner, worker (aider, agents.default)`, and how a CLI reaches an API it does not
/// speak itself.
fn speech(at: &str, roles: &[&str], agent: &EffectiveAgent, p: &ProviderConfig) -> String {
    let cli = agent.executor.as_str();
    let how = match speaks(agent.executor, p.api) {
        Some(Speech::Own) | None => String::new(),
        Some(Speech::Translated) => ", which speaks OpenAI Responses only: opentiger's proxy translates its calls to chat completions".to_string(),
    };
    format!("the {} ({cli} at {at}{how})", roles.join(", "))
}

fn key_fix(name: &str, var: &str) -> String {
    format!(
        "export {var}=... for the runner (in Actions: `env: {var}: ${{{{ secrets.{var} }}}}` on the opentiger step): `providers.{name}.key: {var}` names it; it stays with the runner, the agents get a placeholder. An endpoint that takes no key: remove `key:` from `providers.{name}`"
    )
}

/// `--online`: the endpoint's model list, asked with the key.
fn online_check(name: &str, p: &ProviderConfig, key: Option<&str>, users: &Users) -> Check {
    let at = format!("providers.{name}");
    let provider = match Provider::configured(name, p) {
        Ok(provider) => provider,
        Err(why) => return Check::fail("providers", why, "correct it (see docs/agents.md)"),
    };
    let listed = match list_models(&provider, key) {
        Ok(listed) => listed,
        Err(why) => {
            return Check::fail(
                "providers",
                format!("{at}: could not reach {}: {why}", p.base_url),
                format!(
                    "start the model's server, or correct `providers.{name}.base_url: {}` (the URL an SDK is given)",
                    p.base_url
                ),
            )
        }
    };
    judge(name, p, &listed, users)
}

/// What the model list says of the key and the agents' models.
fn judge(name: &str, p: &ProviderConfig, listed: &Listed, users: &Users) -> Check {
    let at = format!("providers.{name}");
    let Listed {
        url,
        status,
        models,
        said,
    } = listed;
    if matches!(status, 401 | 403) {
        let fix = match &p.key {
            Some(var) => format!(
                "check the key in {var} (`providers.{name}.key: {var}`), and that it may list models"
            ),
            None => format!(
                "the endpoint wants a key: add `key: ITS_VARIABLE` under `providers.{name}` and export that variable for the runner"
            ),
        };
        return Check::fail(
            "providers",
            format!("{at}: {url} refused the key ({status}: {said})"),
            fix,
        );
    }
    if !(200..300).contains(status) {
        return Check::warn(
            "providers",
            format!("{at}: {url} answered {status} ({said}): its models are not checked"),
            format!(
                "check `providers.{name}.base_url: {}` (the URL an SDK is given, e.g. ending in /v1)",
                p.base_url
            ),
        );
    }
    let wanted: Vec<(&str, &str)> = users
        .iter()
        .filter_map(|(at, _, a)| a.model.as_deref().map(|m| (at.as_str(), m)))
        .collect();
    let missing: Vec<&(&str, &str)> = wanted
        .iter()
        .filter(|(_, m)| !models.iter().any(|l| l == m))
        .collect();
    if models.is_empty() || missing.is_empty() {
        let names: Vec<&str> = wanted.iter().map(|(_, m)| *m).collect();
        let names = if names.is_empty() {
            String::new()
        } else if models.is_empty() {
            format!(
                ": it lists no models, so {} is not checked",
                names.join(", ")
            )
        } else {
            format!(": {} listed", dedup(names).join(", "))
        };
        return Check::ok("providers", format!("{at}: {url} answers{names}"));
    }
    let shown: Vec<&str> = models.iter().take(10).map(String::as_str).collect();
    let (who, model) = missing[0];
    Check::fail(
        "providers",
        format!(
            "{at}: {url} does not list `{model}`, the model `{who}.model` names (it lists {}{})",
            shown.join(", "),
            if models.len() > 10 { ", …" } else { "" }
        ),
        format!("set `{who}.model` to a model it lists, as it names it"),
    )
}

fn dedup(mut names: Vec<&str>) -> Vec<&str> {
    names.sort_unstable();
    names.dedup();
    names
}

#[cfg(test)]
#[path = "providers_tests.rs"]
mod tests;

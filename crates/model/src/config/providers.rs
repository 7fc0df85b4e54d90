//! `providers:` — the model APIs agents may use (issue 50): each endpoint's API shape, base
//! URL, the variable holding its key (or none), extra headers and query parameters, and the
//! price of its models; the four built-in ones (`anthropic`, `openai`, `openrouter`, `gemini`)
//! are entries of the same table, written here. An agent picks one with `provider:` and names
//! a model the endpoint knows. Checked at load: a name that can be a route on the proxy, a URL
//! over https (plain http only to loopback, or with `allow_http: true`), a key variable that is
//! no forge token, headers that carry no key, an executor that can speak the API (or whose
//! calls the proxy translates: codex's Responses to chat completions).
//!
//! Not for: routing, placing the key and translating (`egress`), what each CLI is told
//! (`executor`), the checks against the endpoint itself (`doctor`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::base_url::BaseUrl;
use super::{ExecutorKind, Pricing};

/// The shape of a model API's requests and answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ProviderApi {
    /// OpenAI chat completions only (`POST …/chat/completions`): llama.cpp's server, vLLM,
    /// LM Studio, Ollama's `/v1`, most gateways.
    OpenaiChat,
    /// OpenAI Responses only (`POST …/responses`).
    OpenaiResponses,
    /// Both OpenAI shapes (the OpenAI API itself, OpenRouter, Azure OpenAI's `v1` API).
    Openai,
    /// Anthropic Messages (`POST …/v1/messages`).
    Anthropic,
    /// Google's Gemini API (`…/v1beta/models/{model}:generateContent`).
    Gemini,
}

impl ProviderApi {
    /// Its word under `providers.<name>.api`.
    pub fn word(self) -> &'static str {
        match self {
            ProviderApi::OpenaiChat => "openai-chat",
            ProviderApi::OpenaiResponses => "openai-responses",
            ProviderApi::Openai => "openai",
            ProviderApi::Anthropic => "anthropic",
            ProviderApi::Gemini => "gemini",
        }
    }

    /// Every shape, in the order the docs give them.
    pub const ALL: [ProviderApi; 5] = [
        ProviderApi::OpenaiChat,
        ProviderApi::OpenaiResponses,
        ProviderApi::Openai,
        ProviderApi::Anthropic,
        ProviderApi::Gemini,
    ];

    pub fn from_word(word: &str) -> Option<ProviderApi> {
        ProviderApi::ALL.into_iter().find(|a| a.word() == word)
    }

    /// For people: `OpenAI chat completions`.
    pub fn describe(self) -> &'static str {
        match self {
            ProviderApi::OpenaiChat => "OpenAI chat completions",
            ProviderApi::OpenaiResponses => "OpenAI Responses",
            ProviderApi::Openai => "OpenAI chat completions and Responses",
            ProviderApi::Anthropic => "Anthropic Messages",
            ProviderApi::Gemini => "Google's Gemini API",
        }
    }

    /// Where the key goes when `key_header` is not set.
    pub fn default_key_header(self) -> &'static str {
        match self {
            ProviderApi::OpenaiChat | ProviderApi::OpenaiResponses | ProviderApi::Openai => {
                "authorization"
            }
            ProviderApi::Anthropic => "x-api-key",
            ProviderApi::Gemini => "x-goog-api-key",
        }
    }
}

/// How an executor reaches a provider of some API shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Speech {
    /// It speaks the API itself.
    Own,
    /// It speaks OpenAI Responses only; opentiger's proxy translates each call to chat
    /// completions and the answer back.
    Translated,
}

/// Whether `executor` can use a provider of `api`, and how; `None`: it cannot.
pub fn speaks(executor: ExecutorKind, api: ProviderApi) -> Option<Speech> {
    use ProviderApi as A;
    match (executor, api) {
        // Any program reads the door's variables and calls what it likes.
        (ExecutorKind::Command | ExecutorKind::Scripted, _) => Some(Speech::Own),
        (ExecutorKind::ClaudeCode, A::Anthropic) => Some(Speech::Own),
        (ExecutorKind::ClaudeCode, A::OpenaiChat | A::OpenaiResponses | A::Openai | A::Gemini) => {
            None
        }
        (ExecutorKind::Codex, A::OpenaiResponses | A::Openai) => Some(Speech::Own),
        (ExecutorKind::Codex, A::OpenaiChat) => Some(Speech::Translated),
        (ExecutorKind::Codex, A::Anthropic | A::Gemini) => None,
        (ExecutorKind::Opencode, _) => Some(Speech::Own),
        (ExecutorKind::Aider, A::OpenaiChat | A::Openai | A::Anthropic | A::Gemini) => {
            Some(Speech::Own)
        }
        (ExecutorKind::Aider, A::OpenaiResponses) => None,
    }
}

/// One model API (`providers.<name>`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProviderConfig {
    /// The shape of its API: `openai-chat` (chat completions only, as most local servers
    /// serve), `openai-responses`, `openai` (both), `anthropic`, `gemini`.
    pub api: ProviderApi,
    /// Where it is, as an SDK is given it: for the OpenAI shapes the URL that
    /// `/chat/completions` or `/responses` follows (`http://127.0.0.1:8080/v1`), for `anthropic`
    /// the one `/v1/messages` follows. https anywhere; plain http only to this machine's
    /// loopback (`127.0.0.1`, `::1`, `localhost`) or with `allow_http: true`.
    pub base_url: String,
    /// The variable holding its key, set for the runner (the agent gets a placeholder; the
    /// proxy puts the key back). Unset: the endpoint takes no key, and none is sent.
    #[serde(default)]
    pub key: Option<String>,
    /// The header the key goes in: `authorization` (as `Bearer <key>`), or any other header
    /// name taking the key as its whole value (Azure's `api-key`). Default: `authorization`
    /// for the OpenAI shapes, `x-api-key` for `anthropic`, `x-goog-api-key` for `gemini`.
    #[serde(default)]
    pub key_header: Option<String>,
    /// Headers the proxy adds to every call (OpenRouter's `HTTP-Referer` and `X-Title`). They
    /// are in the repository: never a secret here (a key goes in `key`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Query parameters the proxy adds to every call (Azure's `api-version`).
    #[serde(default)]
    pub query: BTreeMap<String, String>,
    /// Whether it takes OpenAI Responses over a websocket (`openai-responses`, `openai`).
    /// Default false: a CLI asking for one is answered 426 at once and uses HTTP.
    #[serde(default)]
    pub websocket: bool,
    /// The most tokens one answer may hold: added to each generation call that names no cap,
    /// and a larger cap lowered to it. A small local model may otherwise write until its context
    /// is full (most local servers set no cap of their own). Unset: the call's own.
    #[serde(default)]
    pub max_output_tokens: Option<u64>,
    /// Allow plain http to a host that is not this machine's loopback: the key and every call
    /// cross the network unencrypted. Default false.
    #[serde(default)]
    pub allow_http: bool,
    /// What its models' tokens cost, USD per million tokens, by the model's name as its answers
    /// give it (an entry also prices its dated snapshots). `0` is a price: a local model is
    /// free. Over `pricing:` and the built-in prices.
    #[serde(default)]
    pub prices: BTreeMap<String, Pricing>,
}

/// A built-in provider: the public APIs the adapters know.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BuiltIn {
    pub name: &'static str,
    pub api: ProviderApi,
    pub base_url: &'static str,
    /// Variables holding its keys, in the order a CLI prefers them.
    pub keys: &'static [&'static str],
    /// The variable SDKs read its base URL from.
    pub base_var: &'static str,
}

pub const BUILT_IN: &[BuiltIn] = &[
    BuiltIn {
        name: "anthropic",
        api: ProviderApi::Anthropic,
        base_url: "https://api.anthropic.com",
        keys: &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"],
        base_var: "ANTHROPIC_BASE_URL",
    },
    BuiltIn {
        name: "openai",
        api: ProviderApi::Openai,
        base_url: "https://api.openai.com/v1",
        keys: &["OPENAI_API_KEY", "CODEX_API_KEY"],
        base_var: "OPENAI_BASE_URL",
    },
    BuiltIn {
        name: "openrouter",
        api: ProviderApi::Openai,
        base_url: "https://openrouter.ai/api/v1",
        keys: &["OPENROUTER_API_KEY"],
        base_var: "OPENROUTER_BASE_URL",
    },
    BuiltIn {
        name: "gemini",
        api: ProviderApi::Gemini,
        base_url: "https://generativelanguage.googleapis.com",
        keys: &["GEMINI_API_KEY"],
        base_var: "GEMINI_BASE_URL",
    },
];

pub fn built_in(name: &str) -> Option<&'static BuiltIn> {
    BUILT_IN.iter().find(|b| b.name == name)
}

/// The provider an agent uses (`agents.<role>.provider`), resolved.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AgentProvider {
    pub name: String,
    pub api: ProviderApi,
    /// The variables holding its key (none: it takes no key).
    pub keys: Vec<String>,
    pub built_in: bool,
}

impl AgentProvider {
    /// `name` as configured in `providers`, or built in.
    pub fn resolve(name: &str, providers: &BTreeMap<String, ProviderConfig>) -> Option<Self> {
        if let Some(p) = providers.get(name) {
            return Some(AgentProvider {
                name: name.to_string(),
                api: p.api,
                keys: p.key.iter().cloned().collect(),
                built_in: false,
            });
        }
        built_in(name).map(|b| AgentProvider {
            name: b.name.to_string(),
            api: b.api,
            keys: b.keys.iter().map(|k| k.to_string()).collect(),
            built_in: true,
        })
    }

    /// Where its key is configured, for a fix: `providers.local.key`, or the built-in's
    /// variables.
    pub fn key_line(&self) -> String {
        match (self.built_in, self.keys.first()) {
            (true, _) => format!("the built-in provider `{}`", self.name),
            (false, Some(var)) => format!("`providers.{}.key: {var}`", self.name),
            (false, None) => format!("`providers.{}` (no `key:`)", self.name),
        }
    }
}

/// Variables no provider's key may name: the forge tokens and what every program needs.
const NOT_A_KEY: &[&str] = &[
    "GITHUB_TOKEN",
    "GH_TOKEN",
    "OPENTIGER_GITHUB_TOKEN",
    "OPENTIGER_PUSH_TOKEN",
    "GITHUB_PAT",
    "PATH",
    "HOME",
];

/// Headers a provider's `headers:` may not set: the proxy's and HTTP's own, and where keys go.
const NOT_A_HEADER: &[&str] = &[
    "host",
    "content-length",
    "content-type",
    "content-encoding",
    "transfer-encoding",
    "connection",
    "upgrade",
    "te",
    "trailer",
    "keep-alive",
    "proxy-authorization",
    "proxy-connection",
    "authorization",
    "x-api-key",
    "api-key",
    "x-goog-api-key",
    "cookie",
];

fn is_var_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    bytes
        .next()
        .is_some_and(|b| b.is_ascii_uppercase() || b == b'_')
        && bytes.all(|b| b.is_ascii_uppercase() || b.is_ascii_digit() || b == b'_')
}

fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_'))
}

/// `(key, message, fix)` of the first problem of `providers:`.
pub(super) fn check(config: &super::Config) -> Result<(), (String, String, String)> {
    let fail = |key: String, message: String, fix: &str| Err((key, message, fix.to_string()));
    for (name, p) in &config.providers {
        let at = format!("providers.{name}");
        let route_ok = !name.is_empty()
            && name.len() <= 32
            && name.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
            && name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_');
        if !route_ok {
            return fail(
                at,
                format!("`{name}` cannot name a provider: it becomes a path on opentiger's proxy"),
                "name it with lower-case letters, digits, `-` and `_` (at most 32), e.g. `local`",
            );
        }
        if built_in(name).is_some() {
            return fail(
                at,
                format!("`{name}` is a built-in provider"),
                "give yours another name (e.g. `my-gateway`) and pick it with `provider:`; the built-in one's prices go under `pricing:`",
            );
        }
        let url = match BaseUrl::parse(&p.base_url) {
            Ok(url) => url,
            Err(why) => {
                return fail(
                    format!("{at}.base_url"),
                    why,
                    "give the URL an SDK would be given, e.g. https://gateway.example/v1 or http://127.0.0.1:8080/v1",
                )
            }
        };
        if !url.https && !url.is_loopback() && !p.allow_http {
            return fail(
                format!("{at}.base_url"),
                format!(
                    "plain http to `{}`, which is not this machine's loopback: its key and every call would cross the network unencrypted",
                    url.host
                ),
                &format!("use https, or, if that network is yours, add `allow_http: true` under `{at}`"),
            );
        }
        if let Some(var) = &p.key {
            if !is_var_name(var) {
                return fail(
                    format!("{at}.key"),
                    format!("`{var}` is not the name of an environment variable"),
                    "name the variable holding the key, e.g. LOCAL_MODEL_KEY (upper case, digits, `_`)",
                );
            }
            if NOT_A_KEY.contains(&var.as_str()) {
                return fail(
                    format!("{at}.key"),
                    format!(
                        "`{var}` is not a model key: the proxy would send it to {}",
                        url.host
                    ),
                    "name the variable holding this provider's own key",
                );
            }
        }
        if let Some(header) = &p.key_header {
            let lower = header.to_ascii_lowercase();
            let reserved = NOT_A_HEADER.iter().any(|h| {
                *h == lower
                    && !matches!(
                        lower.as_str(),
                        "authorization" | "x-api-key" | "api-key" | "x-goog-api-key"
                    )
            });
            if !is_header_name(header) || reserved {
                return fail(
                    format!("{at}.key_header"),
                    format!("`{header}` cannot carry a key"),
                    "use `authorization` (Bearer) or the header the endpoint reads its key from, e.g. `api-key`",
                );
            }
        }
        let key_header = p
            .key_header
            .as_deref()
            .unwrap_or(p.api.default_key_header())
            .to_ascii_lowercase();
        for (header, value) in &p.headers {
            let lower = header.to_ascii_lowercase();
            if !is_header_name(header)
                || NOT_A_HEADER.contains(&lower.as_str())
                || lower == key_header
            {
                return fail(
                    format!("{at}.headers"),
                    format!("the proxy does not add the header `{header}`"),
                    "list only headers the endpoint asks for besides its key (the key goes in `key:`)",
                );
            }
            if value.chars().any(|c| c.is_control()) || value.len() > 1024 {
                return fail(
                    format!("{at}.headers.{header}"),
                    "a header value is one line of at most 1024 characters".to_string(),
                    "shorten it",
                );
            }
        }
        for (name, value) in &p.query {
            if !is_header_name(name) || value.chars().any(|c| c.is_control()) || value.len() > 256 {
                return fail(
                    format!("{at}.query"),
                    format!("`{name}` is not a query parameter the proxy adds"),
                    "give names of letters, digits, `-` and `_`, and short values, e.g. api-version: \"2024-10-21\"",
                );
            }
        }
        if p.max_output_tokens == Some(0) {
            return fail(
                format!("{at}.max_output_tokens"),
                "0 tokens leave no answer".to_string(),
                "give the most tokens one answer may hold, e.g. 4096, or remove it",
            );
        }
        if p.websocket && !matches!(p.api, ProviderApi::OpenaiResponses | ProviderApi::Openai) {
            return fail(
                format!("{at}.websocket"),
                format!(
                    "a websocket carries OpenAI Responses only, not {}",
                    p.api.describe()
                ),
                "remove it",
            );
        }
        for (model, price) in &p.prices {
            for (field, value) in [
                ("input_per_mtok", Some(price.input_per_mtok)),
                ("output_per_mtok", Some(price.output_per_mtok)),
                ("cached_input_per_mtok", price.cached_input_per_mtok),
            ] {
                if let Some(value) = value.filter(|v| !(*v >= 0.0 && v.is_finite())) {
                    return fail(
                        format!("{at}.prices.{model}.{field}"),
                        format!("{value} is not a price"),
                        "give a non-negative price in USD per million tokens (0: free)",
                    );
                }
            }
        }
    }
    Ok(())
}

/// Each agent entry's `provider:` as written (`entries`): it exists and its key variable is
/// not passed to the agent; each role's executors: each can speak its provider and has a model.
pub(super) fn agents(
    config: &super::Config,
    entries: &[(String, &super::AgentConfig)],
) -> Result<(), (String, String, String)> {
    let keys: Vec<(&String, &String)> = config
        .providers
        .iter()
        .filter_map(|(name, p)| p.key.as_ref().map(|k| (name, k)))
        .collect();
    for (at, entry) in entries {
        for var in entry.env_passthrough.iter().flatten() {
            if let Some((name, _)) = keys.iter().find(|(_, k)| *k == var) {
                return Err((
                    format!("{at}.env_passthrough"),
                    format!("`{var}` is the key of the provider `{name}`: the agent never holds it"),
                    "remove it: the runner holds the key, the agent gets a placeholder and opentiger's proxy puts the key back".to_string(),
                ));
            }
        }
        let Some(name) = entry.provider.as_deref() else {
            continue;
        };
        if AgentProvider::resolve(name, &config.providers).is_none() {
            let mut known: Vec<&str> = BUILT_IN.iter().map(|b| b.name).collect();
            known.extend(config.providers.keys().map(String::as_str));
            return Err((
                format!("{at}.provider"),
                format!("no provider is named `{name}`"),
                format!(
                    "declare it under `providers:` or pick one of: {}",
                    known.join(", ")
                ),
            ));
        }
    }
    for role in super::AgentRole::ALL {
        for agent in config.agents.chain(role) {
            let Some(provider) = &agent.provider else {
                continue;
            };
            let name = &provider.name;
            let at = &agent.config_key;
            if speaks(agent.executor, provider.api).is_none() {
                return Err((
                    format!("{at}.provider"),
                    format!(
                        "`{}` cannot speak {} (the API of the provider `{name}`)",
                        agent.executor.as_str(),
                        provider.api.describe()
                    ),
                    format!(
                        "pick a provider it speaks ({}) or another executor",
                        speakable(agent.executor)
                    ),
                ));
            }
            if !provider.built_in && agent.model.is_none() {
                return Err((
                    format!("{at}.provider"),
                    format!("the provider `{name}` is configured, but no model is set"),
                    format!(
                        "set `{at}.model` to a model `{name}` serves, as it names it (e.g. what `GET {}/models` lists)",
                        config.providers.get(name).map_or("", |p| p.base_url.as_str())
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// The API shapes `executor` speaks, for a fix.
fn speakable(executor: ExecutorKind) -> String {
    ProviderApi::ALL
        .into_iter()
        .filter(|a| speaks(executor, *a).is_some())
        .map(|a| format!("`api: {}`", a.word()))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
#[path = "providers_tests.rs"]
mod tests;

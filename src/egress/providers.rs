//! The model APIs the proxy routes (issue 37): each one's host, the variables holding its keys,
//! and its route on the proxy (`http://127.0.0.1:<port>/<route>`, handed to the agent as its base
//! URL under the variable SDKs and CLIs read). A key variable named here never reaches an agent
//! with its value. Data and look-ups only.
//! Not for: the placeholders and the agent's environment (`egress`, its `Door`), or putting the
//! key back, only on requests to that provider's host (`egress::proxy`).

/// One model API.
#[derive(Debug, PartialEq, Eq)]
pub struct Provider {
    /// The first segment of its path on the proxy.
    pub route: &'static str,
    /// Where the proxy forwards it (https).
    pub host: &'static str,
    /// Variables holding its keys, in the order a CLI prefers them.
    pub keys: &'static [&'static str],
    /// The variable holding its base URL for SDKs that read one.
    pub base_var: &'static str,
    /// The path under the host that the base URL names (OpenAI's `/v1`).
    pub base_path: &'static str,
}

pub const PROVIDERS: &[Provider] = &[
    Provider {
        route: "anthropic",
        host: "api.anthropic.com",
        keys: &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"],
        base_var: "ANTHROPIC_BASE_URL",
        base_path: "",
    },
    Provider {
        route: "openai",
        host: "api.openai.com",
        keys: &["OPENAI_API_KEY", "CODEX_API_KEY"],
        base_var: "OPENAI_BASE_URL",
        base_path: "/v1",
    },
    Provider {
        route: "openrouter",
        host: "openrouter.ai",
        keys: &["OPENROUTER_API_KEY"],
        base_var: "OPENROUTER_BASE_URL",
        base_path: "/api/v1",
    },
    Provider {
        route: "gemini",
        host: "generativelanguage.googleapis.com",
        keys: &["GEMINI_API_KEY"],
        base_var: "GEMINI_BASE_URL",
        base_path: "",
    },
];

/// The provider a key variable belongs to.
pub fn provider_of_key(name: &str) -> Option<&'static Provider> {
    PROVIDERS.iter().find(|p| p.keys.contains(&name))
}

/// Whether `name` holds a model key (never passed to an agent with its value).
pub fn is_model_key(name: &str) -> bool {
    provider_of_key(name).is_some()
}

/// The provider routed under `route`.
pub fn by_route(route: &str) -> Option<&'static Provider> {
    PROVIDERS.iter().find(|p| p.route == route)
}

/// The provider whose host is `host`.
pub fn by_host(host: &str) -> Option<&'static Provider> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    PROVIDERS.iter().find(|p| p.host == host)
}

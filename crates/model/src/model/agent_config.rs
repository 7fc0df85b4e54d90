//! Agent configuration errors in an agent's output (issue 18): the CLI cannot reach its model as
//! configured — no key or an invalid one, not logged in, an unknown model or provider, a CLI
//! configuration it refuses. Another run fails the same way, so these are never retried: a
//! person fixes the configuration (or a fallback executor takes over).
//!
//! Read by the failure classifier (`engine::classify`) and the agent adapters (`executor`).
//! Phrases are the ones the real CLIs print (claude 2.1.197, codex 0.169.0, opencode 1.18.33,
//! aider 0.86.2 and the providers' APIs behind them), matched as whole words. Not for: quota
//! and rate limits (`quota.rs`), or what the failure does (`engine::outcome`, `engine::fallback`).

use super::text::*;

/// Whether an agent's output says its key, login, model, provider or CLI configuration is wrong.
pub fn is_agent_config_message(text: &str) -> bool {
    let t = squash_whitespace(&text.to_lowercase());
    contains_any(&t, PHRASES) || names_a_key_problem(&t)
}

#[rustfmt::skip]
const PHRASES: &[&str] = &[
    // claude: `Not logged in · Please run /login`; Anthropic's API: `authentication_error`,
    // `invalid x-api-key`.
    "not logged in", "please run /login", "authentication_error", "invalid x-api-key",
    // aider (litellm): `litellm.AuthenticationError: Missing Anthropic API Key`.
    "authenticationerror",
    // codex: `unexpected status 401 Unauthorized`; OpenAI: `invalid_api_key`.
    "401 unauthorized", "status 401", "http 401", "invalid_api_key", "incorrect api key",
    "missing bearer or basic authentication",
    // opencode: `ProviderAuthError`, `ProviderModelNotFoundError`, `ProviderInitError`,
    // `ConfigInvalidError`, `ConfigJsonError`.
    "providerautherror", "providermodelnotfounderror", "provideriniterror", "configinvaliderror",
    "configjsonerror",
    // Models and providers that do not exist.
    "model_not_found", "model not found", "unknown model", "invalid model", "not a valid model",
    "model does not exist", "does not exist or you do not have access to it",
    "unknown provider", "provider not found", "notfounderror: model",
];

/// What is wrong with a key, said next to "api key" on the same line.
const KEY_PROBLEMS: &[&str] = &[
    "missing",
    "invalid",
    "incorrect",
    "expired",
    "revoked",
    "not set",
    "not found",
    "no api key",
    "must be set",
    "is required",
];

/// "Missing Anthropic API Key", "OPENAI_API_KEY is not set", "api key is invalid": a key
/// problem named on the line that names the key.
fn names_a_key_problem(t: &str) -> bool {
    t.lines().any(|line| {
        let names_key = contains_any(line, &["api key", "api_key", "apikey"])
            || line
                .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .any(|w| w.ends_with("_api_key"));
        names_key && contains_any(line, KEY_PROBLEMS)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_errors_are_told_from_other_failures() {
        #[rustfmt::skip]
        let cases: &[(&str, bool)] = &[
            // The real outputs of issue 18.
            ("Not logged in · Please run /login", true),
            ("litellm.AuthenticationError: Missing Anthropic API Key", true),
            ("unexpected status 401 Unauthorized: Missing bearer or basic authentication in header", true),
            ("ProviderAuthError: Invalid API key", true),
            ("OPENAI_API_KEY is not set", true),
            ("Error: The api_key client option must be set", true),
            ("ProviderModelNotFoundError: anthropic/claude-nope", true),
            ("The model `gpt-9` does not exist or you do not have access to it.", true),
            ("{\"type\":\"error\",\"error\":{\"type\":\"authentication_error\",\"message\":\"invalid x-api-key\"}}", true),
            // Not configuration.
            ("test_missing_api_key_is_reported ... ok", false),
            ("rate limit for this api key: retry in 60s", false),
            ("Unexpected server error", false),
            ("AssertionError: expected 2 to equal 3", false),
            ("remote: Invalid username or password. fatal: Authentication failed", false),
            ("", false),
        ];
        for (text, expected) in cases {
            assert_eq!(is_agent_config_message(text), *expected, "{text:?}");
        }
    }
}

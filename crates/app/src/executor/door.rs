//! The configured provider an agent's door routes (issue 50), as each adapter reads it from the
//! agent's environment (`egress::PROVIDER_VARS`: its name, API shape, base URL on the proxy,
//! placeholder key, websockets), and what each CLI is told of it: codex a model provider of its
//! own, opencode a provider of the same name, aider litellm's route of its API shape. Pure.
//! Not for: the rest of each CLI's command line (each adapter; claude's `ANTHROPIC_BASE_URL`
//! is set in `claude_code`), the door itself (`egress`).

use crate::config::ProviderApi;
use crate::egress::PROVIDER_VARS;
use serde_json::{json, Value};

/// A configured provider behind the agent's door.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DoorProvider {
    pub name: String,
    pub api: ProviderApi,
    /// Its base URL on the proxy.
    pub base_url: String,
    /// The variable holding its placeholder key.
    pub key_var: &'static str,
    pub key: String,
    pub websocket: bool,
}

/// The configured provider in `given`, the agent's environment, if its door routes one.
pub fn provider(given: &[(String, String)]) -> Option<DoorProvider> {
    let get = |name: &str| {
        given
            .iter()
            .find(|(k, v)| k == name && !v.is_empty())
            .map(|(_, v)| v.clone())
    };
    let v = &PROVIDER_VARS;
    Some(DoorProvider {
        name: get(v.name)?,
        api: ProviderApi::from_word(&get(v.api)?)?,
        base_url: get(v.base_url)?,
        key_var: v.key,
        key: get(v.key).unwrap_or_default(),
        websocket: get(v.websocket).as_deref() == Some("1"),
    })
}

/// codex: the provider as its own model provider, `opentiger`, speaking Responses (over HTTP
/// unless the provider takes websockets): `-c model_providers.opentiger={…}` and `-c
/// model_provider="opentiger"`, before the subcommand.
pub fn codex_provider(door: &DoorProvider) -> Vec<String> {
    let table = format!(
        "model_providers.opentiger={{name={}, base_url={}, env_key={}, wire_api=\"responses\", supports_websockets={}}}",
        toml_string(&format!("{} through opentiger", door.name)),
        toml_string(&door.base_url),
        toml_string(door.key_var),
        door.websocket
    );
    ["-c", &table, "-c", "model_provider=\"opentiger\""]
        .map(String::from)
        .to_vec()
}

/// The npm package opencode drives a configured provider of `api` with (each is bundled with
/// opencode 1.18.33: nothing is installed): chat completions through the OpenAI-compatible
/// one (a provider of its own id, so opencode calls its chat model, not `.responses()`),
/// Responses through OpenAI's.
pub fn sdk_of(api: crate::config::ProviderApi) -> &'static str {
    use crate::config::ProviderApi as A;
    match api {
        A::OpenaiChat | A::Openai => "@ai-sdk/openai-compatible",
        A::OpenaiResponses => "@ai-sdk/openai",
        A::Anthropic => "@ai-sdk/anthropic",
        A::Gemini => "@ai-sdk/google",
    }
}

/// opencode: the provider as an opencode provider of the same name: its SDK, its
/// route on the proxy (with what each SDK expects after it), the placeholder key, the model.
pub fn opencode_provider(door: &DoorProvider, model: Option<&str>) -> Value {
    use crate::config::ProviderApi as A;
    let suffix = match door.api {
        A::Anthropic => "/v1",
        A::Gemini => "/v1beta",
        A::OpenaiChat | A::OpenaiResponses | A::Openai => "",
    };
    let mut models = serde_json::Map::new();
    if let Some(model) = model {
        models.insert(
            model.to_string(),
            json!({ "name": model, "tool_call": true }),
        );
    }
    json!({
        "npm": sdk_of(door.api),
        "name": door.name,
        "options": { "baseURL": format!("{}{suffix}", door.base_url), "apiKey": door.key },
        "models": models,
    })
}

/// What aider (litellm) is told of a configured provider (issue 50): the base URL and key
/// variables of the litellm route of its API shape, and that route's model prefix.
pub fn aider_route(door: &DoorProvider) -> (Vec<(String, String)>, &'static str) {
    use crate::config::ProviderApi as A;
    let (base, key, prefix) = match door.api {
        A::Anthropic => ("ANTHROPIC_API_BASE", "ANTHROPIC_API_KEY", "anthropic"),
        A::Gemini => ("GEMINI_API_BASE", "GEMINI_API_KEY", "gemini"),
        A::OpenaiChat | A::OpenaiResponses | A::Openai => {
            ("OPENAI_API_BASE", "OPENAI_API_KEY", "openai")
        }
    };
    let env = vec![
        (base.to_string(), door.base_url.clone()),
        (key.to_string(), door.key.clone()),
    ];
    (env, prefix)
}

/// A value as a TOML basic string (codex's `-c` overrides are TOML).
pub fn toml_string(text: &str) -> String {
    let escaped: String = text
        .chars()
        .map(|c| match c {
            '"' => "\\\"".to_string(),
            '\\' => "\\\\".to_string(),
            c if c.is_control() => format!("\\u{:04x}", c as u32),
            c => c.to_string(),
        })
        .collect();
    format!("\"{escaped}\"")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 50: a configured provider is codex's own model provider, Responses over HTTP.
    #[test]
    fn a_configured_provider_is_codex_s_own_model_provider() {
        let door = DoorProvider {
            name: "local".into(),
            api: crate::config::ProviderApi::OpenaiChat,
            base_url: "http://127.0.0.1:3128/local/v1".into(),
            key_var: "OPENTIGER_PROVIDER_KEY",
            key: "opentiger-placeholder-1".into(),
            websocket: false,
        };
        assert_eq!(
            codex_provider(&door),
            [
                "-c",
                "model_providers.opentiger={name=\"local through opentiger\", base_url=\"http://127.0.0.1:3128/local/v1\", env_key=\"OPENTIGER_PROVIDER_KEY\", wire_api=\"responses\", supports_websockets=false}",
                "-c",
                "model_provider=\"opentiger\"",
            ]
        );
    }

    #[test]
    fn a_door_provider_is_read_from_the_agent_s_environment() {
        let pairs = |list: &[(&str, &str)]| -> Vec<(String, String)> {
            list.iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect()
        };
        let given = pairs(&[
            ("OPENTIGER_PROVIDER", "local"),
            ("OPENTIGER_PROVIDER_API", "openai-chat"),
            (
                "OPENTIGER_PROVIDER_BASE_URL",
                "http://127.0.0.1:3128/local/v1",
            ),
            ("OPENTIGER_PROVIDER_KEY", "opentiger-placeholder-1"),
            ("OPENTIGER_PROVIDER_WEBSOCKET", "0"),
        ]);
        assert_eq!(
            provider(&given),
            Some(DoorProvider {
                name: "local".into(),
                api: ProviderApi::OpenaiChat,
                base_url: "http://127.0.0.1:3128/local/v1".into(),
                key_var: "OPENTIGER_PROVIDER_KEY",
                key: "opentiger-placeholder-1".into(),
                websocket: false,
            })
        );
        assert_eq!(provider(&given[..2]), None, "no base URL");
        assert_eq!(provider(&pairs(&[("OPENAI_BASE_URL", "x")])), None);
        assert_eq!(toml_string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}

//! The configured provider an agent's door routes (issue 50), as each adapter reads it from the
//! agent's environment (`egress::PROVIDER_VARS`: its name, API shape, base URL on the proxy,
//! placeholder key, websockets), and the model name each CLI needs for it. Pure.
//! Not for: what each CLI is told (each adapter: codex's `model_providers`, opencode's
//! `provider`, aider's `OPENAI_API_BASE`, claude's `ANTHROPIC_BASE_URL`), the door itself
//! (`egress`).

use crate::config::ProviderApi;
use crate::egress::PROVIDER_VARS;

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

use super::*;
use crate::config::{load_str, AgentRole};
use crate::model::Role;

const LOCAL: &str =
    "providers:\n  local:\n    api: openai-chat\n    base_url: http://127.0.0.1:8080/v1\n";

#[test]
fn a_local_provider_is_an_agent_s_model_api() {
    let text = format!(
        "{LOCAL}    key: LOCAL_MODEL_KEY\n    prices:\n      smollm2: {{input_per_mtok: 0, output_per_mtok: 0}}\nagents:\n  default:\n    executor: aider\n    provider: local\n    model: smollm2\n  judge:\n    executor: codex\n"
    );
    let config = load_str(&text, ".opentiger.yml").unwrap();
    let worker = config.agents.effective(AgentRole::Task(Role::Worker));
    let provider = worker.provider.as_ref().unwrap();
    assert_eq!(
        (
            provider.name.as_str(),
            provider.api,
            provider.keys.clone(),
            provider.built_in
        ),
        (
            "local",
            ProviderApi::OpenaiChat,
            vec!["LOCAL_MODEL_KEY".to_string()],
            false
        )
    );
    assert_eq!(worker.executor_key(), "aider:local/smollm2");
    // The judge's own executor keeps the inherited provider and model (codex speaks Responses,
    // translated to chat completions).
    let judge = config.agents.effective(AgentRole::Judge);
    assert_eq!(
        judge.provider.as_ref().map(|p| p.name.as_str()),
        Some("local")
    );
    assert_eq!(
        speaks(judge.executor, ProviderApi::OpenaiChat),
        Some(Speech::Translated)
    );
    // A built-in name resolves to the built-in provider.
    let config = load_str(
        "agents:\n  default:\n    executor: codex\n    provider: openai\n",
        ".opentiger.yml",
    )
    .unwrap();
    let p = config
        .agents
        .effective(AgentRole::Planner)
        .provider
        .unwrap();
    assert!(
        p.built_in && p.keys == ["OPENAI_API_KEY", "CODEX_API_KEY"],
        "{p:?}"
    );
}

#[test]
fn a_fallback_of_another_executor_does_not_take_the_provider() {
    let text = format!(
        "{LOCAL}agents:\n  worker:\n    executor: aider\n    provider: local\n    model: m\n    fallbacks:\n      - executor: claude-code\n      - executor: aider\n        model: n\n"
    );
    let config = load_str(&text, ".opentiger.yml").unwrap();
    let chain = config.agents.chain(AgentRole::Task(Role::Worker));
    let names: Vec<Option<&str>> = chain
        .iter()
        .map(|a| a.provider.as_ref().map(|p| p.name.as_str()))
        .collect();
    assert_eq!(names, [Some("local"), None, Some("local")]);
}

/// Each mistake is named where it is written, with its fix.
#[test]
fn mistakes_name_their_key_and_fix() {
    let agent = "agents:\n  default:\n    executor: aider\n    provider: local\n    model: m\n";
    #[rustfmt::skip]
    let cases: &[(String, &str, &str)] = &[
        ("providers:\n  Local:\n    api: openai-chat\n    base_url: http://127.0.0.1:8080/v1\n".into(),
            "providers.Local", "lower-case"),
        ("providers:\n  openai:\n    api: openai-chat\n    base_url: https://x.example/v1\n".into(),
            "providers.openai", "is a built-in provider"),
        ("providers:\n  gw:\n    api: openai-chat\n    base_url: http://gw.example/v1\n".into(),
            "providers.gw.base_url", "allow_http: true"),
        ("providers:\n  gw:\n    api: openai-chat\n    base_url: ftp://gw.example/v1\n".into(),
            "providers.gw.base_url", "not an http or https URL"),
        ("providers:\n  gw:\n    api: openai-chat\n    base_url: https://user:pw@gw.example/v1\n".into(),
            "providers.gw.base_url", "no user name or password"),
        ("providers:\n  gw:\n    api: openai-chat\n    base_url: https://gw.example/v1?x=1\n".into(),
            "providers.gw.base_url", "`query:`"),
        ("providers:\n  gw:\n    api: openai-chat\n    base_url: https://gw.example/v1\n    key: GITHUB_TOKEN\n".into(),
            "providers.gw.key", "not a model key"),
        ("providers:\n  gw:\n    api: openai-chat\n    base_url: https://gw.example/v1\n    key: my-key\n".into(),
            "providers.gw.key", "not the name of an environment variable"),
        ("providers:\n  gw:\n    api: openai-chat\n    base_url: https://gw.example/v1\n    headers:\n      authorization: x\n".into(),
            "providers.gw.headers", "the key goes in `key:`"),
        ("providers:\n  gw:\n    api: anthropic\n    base_url: https://gw.example\n    websocket: true\n".into(),
            "providers.gw.websocket", "OpenAI Responses only"),
        ("providers:\n  gw:\n    api: openai-chat\n    base_url: https://gw.example/v1\n    prices:\n      m: {input_per_mtok: -1, output_per_mtok: 0}\n".into(),
            "providers.gw.prices.m.input_per_mtok", "-1 is not a price"),
        (format!("{LOCAL}agents:\n  default:\n    provider: locl\n"),
            "agents.default.provider", "one of: anthropic, openai, openrouter, gemini, local"),
        (format!("{LOCAL}agents:\n  default:\n    executor: claude-code\n    provider: local\n    model: m\n"),
            "agents.planner.provider", "`api: anthropic`"),
        (format!("{LOCAL}agents:\n  default:\n    executor: aider\n    provider: local\n"),
            "agents.planner.provider", "set `agents.planner.model`"),
        (format!("{LOCAL}    key: LOCAL_KEY\n{agent}    env_passthrough: [LOCAL_KEY]\n"),
            "agents.default.env_passthrough", "the agent never holds it"),
    ];
    for (text, key, says) in cases {
        let err = load_str(text, ".opentiger.yml").unwrap_err();
        assert_eq!(err.key, *key, "{text}\n{err}");
        assert!(err.line.is_some(), "{text}\n{err}");
        assert!(
            format!("{} {}", err.message, err.fix).contains(says),
            "{text}\n{err}"
        );
    }
    // What is allowed: https anywhere, http to loopback, http elsewhere when said.
    for text in [
        format!("{LOCAL}{agent}"),
        "providers:\n  gw:\n    api: openai\n    base_url: https://gw.example/openai/v1\n    key: GW_KEY\n    key_header: api-key\n    query: {api-version: \"2024-10-21\"}\n    headers: {X-Title: opentiger}\n    websocket: true\n".to_string(),
        "providers:\n  lan:\n    api: openai-chat\n    base_url: http://10.0.0.5:8000/v1\n    allow_http: true\n".to_string(),
        "providers:\n  v6:\n    api: anthropic\n    base_url: http://[::1]:9000\n".to_string(),
    ] {
        load_str(&text, ".opentiger.yml").unwrap_or_else(|e| panic!("{text}\n{e}"));
    }
}

#[test]
fn base_urls_are_read_as_the_proxy_routes_them() {
    let url = BaseUrl::parse("http://127.0.0.1:8080/v1/").unwrap();
    assert_eq!(
        (url.https, url.host.as_str(), url.port, url.path.as_str()),
        (false, "127.0.0.1", Some(8080), "/v1")
    );
    assert!(url.is_loopback());
    assert_eq!(url.authority(), "127.0.0.1:8080");
    let url = BaseUrl::parse("https://API.example.com").unwrap();
    assert_eq!(
        (url.host.as_str(), url.path.as_str()),
        ("api.example.com", "")
    );
    assert!(!url.is_loopback());
    assert!(BaseUrl::parse("http://localhost:1/a")
        .unwrap()
        .is_loopback());
    assert!(BaseUrl::parse("http://[::1]:1").unwrap().is_loopback());
    assert!(BaseUrl::parse("https://x.example/a/../b").is_err());
    assert!(BaseUrl::parse("https://x.example/a%2fb").is_err());
}

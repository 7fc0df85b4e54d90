//! Issue 50 on loopback: a configured provider behind a door — its route and variables, its key
//! in its own header (or none), its headers and query parameters, a Responses call translated
//! to chat completions and metered once at the provider's price, a websocket refused with 426,
//! and a CLI's own traffic refused without advice.

use super::*;
use crate::config::{ProviderApi, ProviderConfig};

fn chat_stream() -> Vec<u8> {
    let chunks = [
        r#"{"object":"chat.completion.chunk","model":"smollm2-135m","choices":[{"index":0,"delta":{"content":"Done."},"finish_reason":null}]}"#,
        r#"{"object":"chat.completion.chunk","model":"smollm2-135m","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#,
        r#"{"object":"chat.completion.chunk","model":"smollm2-135m","choices":[],"usage":{"prompt_tokens":812,"completion_tokens":41,"total_tokens":853}}"#,
    ];
    let mut body: String = chunks.iter().map(|c| format!("data: {c}\n\n")).collect();
    body.push_str("data: [DONE]\n\n");
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// A door whose route is `provider`, at `addr`, its key `key` (the variable LOCAL_KEY).
fn door_for(provider: ProviderConfig, key: Option<&str>) -> Door {
    let provider = Arc::new(Provider::configured("local", &provider).unwrap());
    let prices = pricing::Prices::new(&BTreeMap::new()).with_provider(&BTreeMap::from([(
        "smollm2-135m".to_string(),
        crate::config::Pricing {
            input_per_mtok: 0.0,
            output_per_mtok: 0.0,
            cached_input_per_mtok: None,
        },
    )]));
    let mut spec = spec(&[], None);
    spec.routes = vec![configured_route(provider, |k| {
        (k == "LOCAL_KEY").then(|| key.map(String::from)).flatten()
    })];
    spec.prices = prices;
    open(spec)
}

fn local(addr: SocketAddr, key: bool) -> ProviderConfig {
    ProviderConfig {
        api: ProviderApi::OpenaiChat,
        base_url: format!("http://{addr}/v1"),
        key: key.then(|| "LOCAL_KEY".to_string()),
        key_header: None,
        headers: BTreeMap::from([("X-Title".to_string(), "opentiger".to_string())]),
        query: BTreeMap::from([("api-version".to_string(), "2024 10".to_string())]),
        websocket: false,
        allow_http: false,
        max_output_tokens: None,
        prices: BTreeMap::new(),
    }
}

fn post(door: &Door, path: &str, auth: &str, body: &str) -> String {
    send(
        door,
        &format!(
            "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n{auth}content-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            body.len()
        ),
    )
}

#[test]
fn a_responses_call_to_a_chat_endpoint_is_translated_and_metered_once() {
    let (addr, seen) = endpoint(chat_stream());
    let door = door_for(local(addr, true), Some("sk-LOCAL-REAL-KEY"));
    assert_eq!(var(&door, "OPENTIGER_PROVIDER"), "local");
    assert_eq!(var(&door, "OPENTIGER_PROVIDER_API"), "openai-chat");
    assert_eq!(var(&door, "OPENTIGER_PROVIDER_WEBSOCKET"), "0");
    let base = var(&door, "OPENTIGER_PROVIDER_BASE_URL");
    assert!(base.ends_with("/local/v1"), "{base}");
    let placeholder = var(&door, "OPENTIGER_PROVIDER_KEY");
    let call = r#"{"model":"smollm2-135m","instructions":"Be brief.","input":"Say done.","stream":true,"store":false,"reasoning":{"effort":"low"}}"#;
    let answer = post(
        &door,
        "/local/v1/responses",
        &format!("authorization: Bearer {placeholder}\r\n"),
        call,
    );
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    for event in [
        "event: response.created",
        "event: response.output_text.delta",
        "\"delta\":\"Done.\"",
        "event: response.completed",
        "\"input_tokens\":812",
    ] {
        assert!(answer.contains(event), "{event}: {answer}");
    }
    let (head, body) = seen.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(
        head.starts_with("POST /v1/chat/completions?api-version=2024%2010 HTTP/1.1"),
        "{head}"
    );
    let lower = head.to_ascii_lowercase();
    assert!(
        lower.contains("authorization: bearer sk-local-real-key"),
        "{head}"
    );
    assert!(lower.contains("x-title: opentiger"), "{head}");
    assert!(lower.contains(&format!("host: {addr}")), "{head}");
    assert!(!head.contains("opentiger-placeholder"), "{head}");
    let chat: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        chat["messages"],
        serde_json::json!([{ "role": "system", "content": "Be brief." }, { "role": "user", "content": "Say done." }])
    );
    // Asked whole: not every chat server counts tokens in a stream.
    assert_eq!(chat["stream"], false);
    assert!(chat.get("stream_options").is_none());
    assert!(chat.get("reasoning").is_none() && chat.get("store").is_none());
    let traffic = door.close();
    let tokens = traffic.metering.models["smollm2-135m"];
    // The server's own counts, once: the translated `response.completed` is not counted again.
    assert_eq!((tokens.input, tokens.output, tokens.answers), (812, 41, 1));
    assert_eq!(traffic.metering.usd, 0.0, "a price of 0 is free");
    assert!(traffic.metering.unpriced.is_empty());
}

#[test]
fn the_key_goes_in_the_provider_s_own_header_or_nowhere() {
    let plain = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{}".to_vec();
    // Azure's way: the key whole in `api-key`, whatever header the CLI put its placeholder in.
    let (addr, seen) = endpoint(plain.clone());
    let mut azure = local(addr, true);
    azure.key_header = Some("api-key".into());
    let door = door_for(azure, Some("azure-REAL-key-0123"));
    let placeholder = var(&door, "OPENTIGER_PROVIDER_KEY");
    let answer = post(
        &door,
        "/local/v1/chat/completions",
        &format!("authorization: Bearer {placeholder}\r\n"),
        r#"{"model":"m","messages":[]}"#,
    );
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let (head, _) = seen.recv_timeout(Duration::from_secs(5)).unwrap();
    let lower = head.to_ascii_lowercase();
    assert!(lower.contains("api-key: azure-real-key-0123"), "{head}");
    assert!(!lower.contains("authorization"), "{head}");
    // A provider that takes no key: the placeholder is taken out, nothing put in.
    let (addr, seen) = endpoint(plain);
    let door = door_for(local(addr, false), None);
    let placeholder = var(&door, "OPENTIGER_PROVIDER_KEY");
    assert!(placeholder.starts_with("opentiger-placeholder-"));
    post(
        &door,
        "/local/v1/chat/completions",
        &format!("authorization: Bearer {placeholder}\r\n"),
        r#"{"model":"m","messages":[]}"#,
    );
    let (head, _) = seen.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(
        !head.to_ascii_lowercase().contains("authorization"),
        "{head}"
    );
    assert!(!head.contains("opentiger-placeholder"), "{head}");
}

#[test]
fn a_websocket_is_refused_at_once_and_a_cli_s_own_traffic_without_advice() {
    let (addr, seen) = endpoint(chat_stream());
    let door = door_for(local(addr, true), Some("sk-LOCAL-REAL-KEY"));
    let placeholder = var(&door, "OPENTIGER_PROVIDER_KEY");
    let upgrade = send(
        &door,
        &format!("GET /local/v1/responses HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nauthorization: Bearer {placeholder}\r\n\r\n"),
    );
    assert!(upgrade.starts_with("HTTP/1.1 426"), "{upgrade}");
    assert!(upgrade.contains("takes no websocket"), "{upgrade}");
    assert!(
        seen.recv_timeout(Duration::from_millis(300)).is_err(),
        "never forwarded"
    );
    let refused = send(
        &door,
        "CONNECT chatgpt.com:443 HTTP/1.1\r\nhost: chatgpt.com:443\r\nconnection: close\r\n\r\n",
    );
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    assert!(refused.contains("codex's own traffic"), "{refused}");
    assert!(!refused.contains("sandbox:"), "no advice: {refused}");
    let task_s = send(
        &door,
        "CONNECT pypi.org:443 HTTP/1.1\r\nhost: pypi.org:443\r\nconnection: close\r\n\r\n",
    );
    assert!(task_s.contains("worker: [\"pypi.org\"]"), "{task_s}");
    let traffic = door.close();
    let own: Vec<(&str, Option<&str>)> = traffic
        .refused
        .iter()
        .map(|r| (r.host.as_str(), r.own.as_deref()))
        .collect();
    assert_eq!(own, [("chatgpt.com", Some("codex")), ("pypi.org", None)]);
}

/// A chat server asked whole (llama-cpp-python counts no tokens in a stream): a streamed chat
/// call and a streamed Responses call each get the stream they asked for, with the server's
/// counts, metered once.
#[test]
fn a_streamed_call_to_a_chat_endpoint_is_asked_whole_and_streamed_back() {
    let whole = r#"{"id":"c1","object":"chat.completion","model":"smollm2-135m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Done."}}],"usage":{"prompt_tokens":700,"completion_tokens":9,"total_tokens":709}}"#;
    let response = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{whole}",
        whole.len()
    );
    let (addr, seen) = endpoint(response.into_bytes());
    let door = door_for(local(addr, false), None);
    let placeholder = var(&door, "OPENTIGER_PROVIDER_KEY");
    let auth = format!("authorization: Bearer {placeholder}\r\n");
    let chat = post(
        &door,
        "/local/v1/chat/completions",
        &auth,
        r#"{"model":"smollm2-135m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}"#,
    );
    assert!(chat.contains("content-type: text/event-stream"), "{chat}");
    assert!(chat.contains("\"content\":\"Done.\""), "{chat}");
    assert!(chat.contains("\"prompt_tokens\":700"), "{chat}");
    assert!(chat.contains("data: [DONE]"), "{chat}");
    let (_, asked) = seen.recv_timeout(Duration::from_secs(5)).unwrap();
    let asked: serde_json::Value = serde_json::from_str(&asked).unwrap();
    assert_eq!(asked["stream"], false, "{asked}");
    assert!(asked.get("stream_options").is_none(), "{asked}");
    let responses = post(
        &door,
        "/local/v1/responses",
        &auth,
        r#"{"model":"smollm2-135m","input":"hi","stream":true}"#,
    );
    assert!(
        responses.contains("event: response.completed"),
        "{responses}"
    );
    assert!(responses.contains("\"input_tokens\":700"), "{responses}");
    let traffic = door.close();
    let tokens = traffic.metering.models["smollm2-135m"];
    assert_eq!((tokens.input, tokens.output, tokens.answers), (1400, 18, 2));
}

/// An endpoint that has no websocket where one is asked (a stand-in or a gateway behind the
/// built-in OpenAI route answering 404): the CLI gets 426, which codex takes as "use HTTP" at
/// once; a 429 on the upgrade stays a quota.
#[test]
fn an_endpoint_refusing_a_websocket_is_answered_426() {
    let upgrade = "GET /openai/v1/responses HTTP/1.1\r\nhost: x\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
    for (status, expected) in [
        ("404 Not Found", "426"),
        ("501 Not Implemented", "426"),
        ("429 Too Many Requests", "429"),
    ] {
        let (addr, seen) = endpoint(
            format!("HTTP/1.1 {status}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n")
                .into_bytes(),
        );
        let door = open(spec(&[("api.openai.com", addr)], None));
        let answer = send(&door, upgrade);
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {expected}")),
            "{status}: {answer}"
        );
        assert!(
            seen.recv_timeout(Duration::from_secs(5)).is_ok(),
            "asked upstream"
        );
        if expected == "426" {
            assert!(answer.contains("takes none; use HTTP"), "{answer}");
        }
    }
}

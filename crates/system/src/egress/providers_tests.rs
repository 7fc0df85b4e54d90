use super::*;

#[test]
fn each_route_carries_its_model_calls_and_nothing_else() {
    let p = |route| by_route(route).unwrap();
    let cases: &[(&str, Verb, &str, Option<Call>)] = &[
        ("anthropic", Post, "/v1/messages", Some(Generate)),
        ("anthropic", Post, "/v1/messages/count_tokens", Some(Count)),
        ("anthropic", Get, "/v1/models", Some(List)),
        ("anthropic", Get, "/v1/models/claude-sonnet-4-5", Some(List)),
        ("anthropic", Get, "/v1/messages", None),
        ("anthropic", Post, "/v1/messages/batches", None),
        ("anthropic", Post, "/v1/files", None),
        ("anthropic", Post, "/v1/messages/../files", None),
        ("anthropic", Post, "/v1//messages", None),
        ("anthropic", Get, "/v1/models/%2e%2e", None),
        ("anthropic", Get, "/v1/models/a/b", None),
        ("anthropic", Post, "/v1/organizations/api_keys", None),
        ("openai", Post, "/v1/responses", Some(Generate)),
        ("openai", WebSocket, "/v1/responses", Some(Generate)),
        ("openai", WebSocket, "/v1/chat/completions", None),
        ("openai", Post, "/v1/chat/completions", Some(Generate)),
        ("openai", Post, "/v1/responses/input_tokens", Some(Count)),
        ("openai", Get, "/v1/responses/resp_1", None),
        ("openai", Post, "/v1/batches", None),
        ("openai", Post, "/v1/files", None),
        ("openai", Post, "/v1/uploads", None),
        ("openai", Post, "/v1/embeddings", None),
        ("openai", Post, "/v1/vector_stores", None),
        (
            "openrouter",
            Post,
            "/api/v1/chat/completions",
            Some(Generate),
        ),
        ("openrouter", Get, "/api/v1/keys", None),
        (
            "gemini",
            Post,
            "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
            Some(Generate),
        ),
        (
            "gemini",
            Post,
            "/v1beta/models/gemini-2.5-pro:countTokens",
            Some(Count),
        ),
        ("gemini", Post, "/v1beta/models/:generateContent", None),
        (
            "gemini",
            Post,
            "/v1beta/models/x:batchGenerateContent",
            None,
        ),
        (
            "gemini",
            Post,
            "/v1beta/tunedModels/x:generateContent",
            None,
        ),
        ("gemini", Post, "/v1beta/cachedContents", None),
        ("gemini", Post, "/upload/v1beta/files", None),
        ("gemini", Get, "/v1beta/models", Some(List)),
    ];
    for (route, verb, path, call) in cases {
        assert_eq!(
            p(route).endpoint(*verb, path).map(|e| e.call),
            *call,
            "{route} {verb:?} {path}"
        );
    }
    assert!(p("anthropic")
        .endpoint_list()
        .contains("GET /v1/models/{model}"));
}

/// A configured cap on an answer's tokens, in each API shape's own field.
#[test]
fn a_cap_on_answers_is_added_or_lowered_in_the_shape_s_field() {
    use serde_json::json;
    let config: ProviderConfig = serde_json::from_value(json!({
        "api": "openai-chat", "base_url": "http://127.0.0.1:8080/v1", "max_output_tokens": 512,
    }))
    .unwrap();
    let p = Provider::configured("local", &config).unwrap();
    let cases = [
        (
            "/v1/chat/completions",
            json!({ "model": "m" }),
            json!({ "model": "m", "max_tokens": 512 }),
        ),
        (
            "/v1/chat/completions",
            json!({ "max_tokens": 100 }),
            json!({ "max_tokens": 100 }),
        ),
        (
            "/v1/chat/completions",
            json!({ "max_completion_tokens": 9000 }),
            json!({ "max_completion_tokens": 512 }),
        ),
        (
            "/v1/responses",
            json!({ "input": "x" }),
            json!({ "input": "x", "max_output_tokens": 512 }),
        ),
        (
            "/v1/messages",
            json!({ "max_tokens": 32000 }),
            json!({ "max_tokens": 512 }),
        ),
        (
            "/v1beta/models/g:generateContent",
            json!({}),
            json!({ "generationConfig": { "maxOutputTokens": 512 } }),
        ),
        ("/v1/models", json!({}), json!({})),
    ];
    for (path, mut body, expected) in cases {
        let changed = p.cap_output(path, &mut body);
        assert_eq!(body, expected, "{path}");
        assert_eq!(
            changed,
            body != json!({ "max_tokens": 100 }) && path != "/v1/models",
            "{path}"
        );
    }
    let built_in = by_route("openai").unwrap();
    let mut body = json!({ "model": "m" });
    assert!(!built_in.cap_output("/v1/chat/completions", &mut body));
}

#[test]
fn every_provider_has_a_slot_and_a_generation() {
    for p in built_ins() {
        assert!(!p.slots.is_empty(), "{}", p.name);
        assert!(p.endpoints.iter().any(|e| e.call == Generate), "{}", p.name);
        assert!(
            p.endpoints
                .iter()
                .all(|e| e.path.starts_with(&format!("{}/", p.base_path))
                    || p.base_path.is_empty()),
            "{}: an endpoint outside its base URL",
            p.name
        );
    }
}

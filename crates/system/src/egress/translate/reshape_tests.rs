//! A whole chat answer streamed back as asked (`reshape.rs`).

use super::*;

/// What llama-cpp-python answers a chat call asked whole: a tool call, its usage.
fn whole() -> Value {
    json!({
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1_800_000_000, "model": "local-model",
        "choices": [{ "index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": "I will write it.",
            "tool_calls": [{ "id": "call_9", "type": "function",
                             "function": { "name": "write", "arguments": "{\"filePath\":\"sub.py\"}" } }] } }],
        "usage": { "prompt_tokens": 640, "completion_tokens": 22, "total_tokens": 662 },
    })
}

/// The data of each `data:` line of an SSE text.
fn data(text: &[u8]) -> Vec<String> {
    String::from_utf8(text.to_vec())
        .unwrap()
        .lines()
        .filter_map(|l| l.strip_prefix("data: ").map(String::from))
        .collect()
}

#[test]
fn a_whole_chat_answer_becomes_the_stream_a_chat_client_asked_for() {
    let bytes = whole().to_string().into_bytes();
    let mut r = Reshape::chat_stream();
    r.begin(true);
    assert_eq!(r.content_type(), "text/event-stream");
    let (a, b) = bytes.split_at(bytes.len() / 2);
    assert!(
        r.feed(a).is_empty() && r.feed(b).is_empty(),
        "held until whole"
    );
    let lines = data(&r.finish());
    assert_eq!(lines.len(), 3, "{lines:?}");
    let first: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(first["object"], "chat.completion.chunk");
    assert_eq!(first["model"], "local-model");
    assert_eq!(
        first["choices"][0]["delta"],
        json!({ "role": "assistant", "content": "I will write it.", "tool_calls": [
            { "index": 0, "id": "call_9", "type": "function",
              "function": { "name": "write", "arguments": "{\"filePath\":\"sub.py\"}" } }] })
    );
    let last: Value = serde_json::from_str(&lines[1]).unwrap();
    assert_eq!(last["choices"][0]["finish_reason"], "tool_calls");
    assert_eq!(last["usage"]["prompt_tokens"], 640);
    assert_eq!(lines[2], "[DONE]");
    // A server that streams anyway passes as it streams.
    let mut passing = Reshape::chat_stream();
    passing.begin(false);
    assert_eq!(passing.feed(b"data: {}\n\n"), b"data: {}\n\n");
    assert!(passing.finish().is_empty());
}

#[test]
fn a_whole_chat_answer_becomes_responses_events() {
    let mut r = Reshape::responses(ToResponses::new("local-model", true, Vec::new(), 1));
    r.begin(true);
    assert!(r.feed(whole().to_string().as_bytes()).is_empty());
    let out = String::from_utf8(r.finish()).unwrap();
    let done = out
        .split("\n\n")
        .find(|e| e.starts_with("event: response.completed"))
        .and_then(|e| e.split_once("data: "))
        .map(|(_, d)| serde_json::from_str::<Value>(d).unwrap())
        .unwrap_or_else(|| panic!("{out}"));
    let output = &done["response"]["output"];
    assert_eq!(output[0]["content"][0]["text"], "I will write it.");
    assert_eq!(
        (
            &output[1]["type"],
            &output[1]["call_id"],
            &output[1]["name"]
        ),
        (&json!("function_call"), &json!("call_9"), &json!("write"))
    );
    assert_eq!(done["response"]["usage"]["input_tokens"], 640);
    assert_eq!(done["response"]["usage"]["output_tokens"], 22);
    // Not streamed: one object.
    let mut once = Reshape::responses(ToResponses::new("local-model", false, Vec::new(), 1));
    once.begin(true);
    assert_eq!(once.content_type(), "application/json");
    once.feed(whole().to_string().as_bytes());
    let object: Value = serde_json::from_slice(&once.finish()).unwrap();
    assert_eq!(object["status"], "completed");
}

#[test]
fn an_answer_that_is_not_a_chat_completion_is_an_error_event() {
    let mut chat = Reshape::chat_stream();
    chat.begin(true);
    chat.feed(b"{not json");
    let lines = data(&chat.finish());
    assert_eq!(lines.len(), 1);
    assert!(lines[0].contains("\"error\""), "{lines:?}");
    let mut responses = Reshape::responses(ToResponses::new("m", true, Vec::new(), 1));
    responses.begin(true);
    responses.feed(b"{not json");
    let out = String::from_utf8(responses.finish()).unwrap();
    assert!(out.contains("event: response.failed"), "{out}");
    assert!(
        out.contains("was not the JSON of a chat completion"),
        "{out}"
    );
    // Past the cap: refused, not held.
    let mut big = Reshape::chat_stream();
    big.begin(true);
    big.feed(&vec![b' '; ANSWER_CAP + 1]);
    assert!(String::from_utf8(big.finish())
        .unwrap()
        .contains("too large"));
}

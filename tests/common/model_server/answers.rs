//! The stand-in's answers in each API's shape (Anthropic Messages, OpenAI Responses, chat
//! completions), plain or streamed as SSE, every one with the same token counts. Not for: what
//! to answer (the parent's scenarios), websockets (`websocket.rs`).

use serde_json::{json, Value};

use super::super::github::http::Response;
use super::{Api, Turn, INPUT_TOKENS, OUTPUT_TOKENS};

pub(super) fn streamed(body: &Value) -> bool {
    body.get("stream").and_then(Value::as_bool).unwrap_or(false)
}

pub(super) fn model(body: &Value) -> String {
    body.get("model")
        .and_then(Value::as_str)
        .unwrap_or("stand-in")
        .to_string()
}

pub(super) fn answer(api: Api, body: &Value, turn: Turn) -> Response {
    match api {
        Api::Messages => messages(body, turn),
        Api::Responses => responses(body, turn),
        Api::Chat => chat(body, turn),
    }
}

fn messages(body: &Value, turn: Turn) -> Response {
    let usage = json!({
        "input_tokens": INPUT_TOKENS, "output_tokens": OUTPUT_TOKENS,
        "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
    });
    let (block, stop) = match &turn {
        Turn::Text(text) => (json!({ "type": "text", "text": text }), "end_turn"),
        Turn::Tool(c) => (
            json!({ "type": "tool_use", "id": "toolu_standin", "name": c.name, "input": c.input }),
            "tool_use",
        ),
    };
    let message = json!({
        "id": "msg_standin", "type": "message", "role": "assistant", "model": model(body),
        "content": [block], "stop_reason": stop, "stop_sequence": null, "usage": usage,
    });
    if !streamed(body) {
        return json_response(200, &message);
    }
    let mut start = message.clone();
    start["content"] = json!([]);
    start["stop_reason"] = Value::Null;
    let (empty, delta) = match &turn {
        Turn::Text(text) => (
            json!({ "type": "text", "text": "" }),
            json!({ "type": "text_delta", "text": text }),
        ),
        Turn::Tool(c) => (
            json!({ "type": "tool_use", "id": "toolu_standin", "name": c.name, "input": {} }),
            json!({ "type": "input_json_delta", "partial_json": c.input.to_string() }),
        ),
    };
    let events = [
        json!({ "type": "message_start", "message": start }),
        json!({ "type": "content_block_start", "index": 0, "content_block": empty }),
        json!({ "type": "content_block_delta", "index": 0, "delta": delta }),
        json!({ "type": "content_block_stop", "index": 0 }),
        json!({ "type": "message_delta", "delta": { "stop_reason": stop, "stop_sequence": null },
                "usage": { "output_tokens": OUTPUT_TOKENS } }),
        json!({ "type": "message_stop" }),
    ];
    sse(events.iter().map(|e| (e["type"].as_str(), e)), false)
}

fn responses(body: &Value, turn: Turn) -> Response {
    let item = match &turn {
        Turn::Text(text) => json!({
            "type": "message", "id": "msg_standin", "role": "assistant", "status": "completed",
            "content": [{ "type": "output_text", "text": text, "annotations": [] }],
        }),
        Turn::Tool(c) if c.freeform => json!({
            "type": "custom_tool_call", "id": "ctc_standin", "call_id": "call_standin",
            "name": c.name, "input": c.input.as_str().unwrap_or_default(), "status": "completed",
        }),
        Turn::Tool(c) => json!({
            "type": "function_call", "id": "fc_standin", "call_id": "call_standin",
            "name": c.name, "arguments": c.input.to_string(), "status": "completed",
        }),
    };
    let usage = json!({
        "input_tokens": INPUT_TOKENS, "input_tokens_details": { "cached_tokens": 0 },
        "output_tokens": OUTPUT_TOKENS, "output_tokens_details": { "reasoning_tokens": 0 },
        "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
    });
    let response = json!({
        "id": "resp_standin", "object": "response", "model": model(body), "status": "completed",
        "output": [item], "usage": usage,
    });
    let mut created = response.clone();
    created["status"] = json!("in_progress");
    created["output"] = json!([]);
    let events = [
        json!({ "type": "response.created", "response": created }),
        json!({ "type": "response.output_item.added", "output_index": 0, "item": item }),
        json!({ "type": "response.output_item.done", "output_index": 0, "item": item }),
        json!({ "type": "response.completed", "response": response }),
    ];
    sse(events.iter().map(|e| (e["type"].as_str(), e)), false)
}

fn chat(body: &Value, turn: Turn) -> Response {
    let (message, finish) = match &turn {
        Turn::Text(text) => (json!({ "role": "assistant", "content": text }), "stop"),
        Turn::Tool(c) => (
            json!({ "role": "assistant", "content": null, "tool_calls": [{
                "index": 0, "id": "call_standin", "type": "function",
                "function": { "name": c.name, "arguments": c.input.to_string() },
            }] }),
            "tool_calls",
        ),
    };
    let usage = json!({
        "prompt_tokens": INPUT_TOKENS, "completion_tokens": OUTPUT_TOKENS,
        "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
    });
    let base = json!({ "id": "chatcmpl-standin", "created": 1_800_000_000, "model": model(body) });
    if !streamed(body) {
        let mut r = base.clone();
        r["object"] = json!("chat.completion");
        r["choices"] = json!([{ "index": 0, "message": message, "finish_reason": finish }]);
        r["usage"] = usage;
        return json_response(200, &r);
    }
    let mut first = base.clone();
    first["object"] = json!("chat.completion.chunk");
    first["choices"] = json!([{ "index": 0, "delta": message, "finish_reason": null }]);
    let mut last = base;
    last["object"] = json!("chat.completion.chunk");
    last["choices"] = json!([{ "index": 0, "delta": {}, "finish_reason": finish }]);
    last["usage"] = usage;
    sse([(None, &first), (None, &last)].into_iter(), true)
}

/// An SSE body: `event:` lines when named, then `data: [DONE]` for chat completions.
fn sse<'a>(events: impl Iterator<Item = (Option<&'a str>, &'a Value)>, done: bool) -> Response {
    let mut text = String::new();
    for (name, data) in events {
        if let Some(name) = name {
            text.push_str(&format!("event: {name}\n"));
        }
        text.push_str(&format!("data: {data}\n\n"));
    }
    if done {
        text.push_str("data: [DONE]\n\n");
    }
    Response {
        status: 200,
        headers: vec![
            ("Content-Type".into(), "text/event-stream".into()),
            ("Cache-Control".into(), "no-cache".into()),
        ],
        body: Some(text.into_bytes()),
    }
}

pub(super) fn json_response(status: u16, body: &Value) -> Response {
    let mut r = Response {
        status,
        headers: vec![("Content-Type".into(), "application/json".into())],
        body: Some(body.to_string().into_bytes()),
    };
    if status == 429 {
        // What Anthropic adds to a refused request; CLIs read either.
        r.headers
            .push(("anthropic-ratelimit-requests-remaining".into(), "0".into()));
    }
    r
}

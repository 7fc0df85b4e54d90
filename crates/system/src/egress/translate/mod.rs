//! OpenAI Responses calls to a provider that serves chat completions only (issue 50): codex
//! speaks nothing but Responses, and most local servers (llama.cpp's, llama-cpp-python, LM
//! Studio, vLLM, many gateways) serve chat completions only, so the proxy translates, both
//! ways, and the CLI runs unchanged.
//!
//! - The call ([`to_chat`]): `instructions` and the `input` items (messages with
//!   `input_text`/`output_text` parts and images, `function_call` and `function_call_output`,
//!   codex's freeform `custom_tool_call` and its output) become chat messages; `function` tools
//!   become chat tools and a freeform (`custom`) tool a function taking its text as `input`;
//!   `tool_choice`, `max_output_tokens`, `temperature`, `top_p` and `text.format` are mapped;
//!   `reasoning`, `store`, `include`, `parallel_tool_calls`, `prompt_cache_key` and the like,
//!   which a chat server does not take, are dropped. The chat call asks for the whole answer
//!   (`reshape.rs`: not every chat server counts tokens in a stream), so the meter reads the
//!   server's own counts.
//! - The answer ([`ToResponses`], `answer.rs`, fed by [`Reshape`]): the chat stream's content and `tool_calls`
//!   deltas, `finish_reason` and final `usage` become the Responses events the CLIs parse
//!   (`response.created` … `response.completed`, with `usage` in Responses' terms), or one
//!   Responses object when the call was not streamed. An error answer passes as it is (both
//!   shapes say `{"error": {…}}`).
//!
//! Pure: bytes and JSON in and out, table-tested (`tests.rs`). Bounded: one SSE event and the
//! answer held for its final events at most [`EVENT_CAP`] and [`ANSWER_CAP`].
//! Metering reads the chat stream before this translation, once (`egress::model`).
//! Not for: which calls are translated (`providers`: a provider of `api: openai-chat`), the
//! forwarding itself (`egress::model`).

mod answer;
mod reshape;

use serde_json::{json, Map, Value};

pub use answer::ToResponses;
pub use reshape::{chat_events, Reshape};

/// The most one SSE event of the chat stream may hold to be read.
pub const EVENT_CAP: usize = 4 << 20;
/// The most text and tool arguments one answer may hold: its final events repeat them whole.
pub const ANSWER_CAP: usize = 16 << 20;

/// A Responses call as a chat completion.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatCall {
    /// The chat request's body.
    pub body: Value,
    /// Whether the client asked for a stream (the chat call asks for the whole answer either
    /// way).
    pub stream: bool,
    pub model: String,
    /// The freeform tools offered: a call of one is answered as a `custom_tool_call`.
    pub custom: Vec<String>,
}

/// `request`, a Responses call's body, as a chat completion; why not, in words.
pub fn to_chat(request: &Value) -> Result<ChatCall, String> {
    let model = request
        .get("model")
        .and_then(Value::as_str)
        .ok_or("a Responses call names its `model`")?
        .to_string();
    let mut messages: Vec<Value> = Vec::new();
    if let Some(text) = request.get("instructions").and_then(Value::as_str) {
        if !text.is_empty() {
            messages.push(json!({ "role": "system", "content": text }));
        }
    }
    match request.get("input") {
        Some(Value::String(text)) => messages.push(json!({ "role": "user", "content": text })),
        Some(Value::Array(items)) => {
            for item in items {
                input_item(item, &mut messages)?;
            }
        }
        None | Some(Value::Null) => {}
        Some(_) => return Err("`input` is neither text nor a list of items".into()),
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    let (tools, custom) = tools(request.get("tools"));
    if !tools.is_empty() {
        body.insert("tools".into(), Value::Array(tools));
        if let Some(choice) = tool_choice(request.get("tool_choice")) {
            body.insert("tool_choice".into(), choice);
        }
    }
    if let Some(max) = request.get("max_output_tokens").filter(|v| v.is_u64()) {
        body.insert("max_tokens".into(), max.clone());
    }
    for key in ["temperature", "top_p"] {
        if let Some(v) = request.get(key).filter(|v| v.is_number()) {
            body.insert(key.into(), v.clone());
        }
    }
    if let Some(format) = request.pointer("/text/format") {
        match format.get("type").and_then(Value::as_str) {
            Some("json_schema") => {
                let mut schema = Map::new();
                for key in ["name", "schema", "strict", "description"] {
                    if let Some(v) = format.get(key) {
                        schema.insert(key.into(), v.clone());
                    }
                }
                body.insert(
                    "response_format".into(),
                    json!({ "type": "json_schema", "json_schema": schema }),
                );
            }
            Some("json_object") => {
                body.insert("response_format".into(), json!({ "type": "json_object" }));
            }
            _ => {}
        }
    }
    body.insert("stream".into(), json!(false));
    Ok(ChatCall {
        body: Value::Object(body),
        stream: request.get("stream").and_then(Value::as_bool) == Some(true),
        model,
        custom,
    })
}

/// One `input` item, added to `messages`.
fn input_item(item: &Value, messages: &mut Vec<Value>) -> Result<(), String> {
    let kind = item
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or(if item.get("role").is_some() {
            "message"
        } else {
            ""
        });
    match kind {
        "message" => {
            let role = match item.get("role").and_then(Value::as_str) {
                Some("assistant") => "assistant",
                Some("system" | "developer") => "system",
                _ => "user",
            };
            messages.push(json!({ "role": role, "content": content(item.get("content")) }));
        }
        "function_call" | "custom_tool_call" => {
            let call_id = text_of(item, "call_id")
                .or_else(|| text_of(item, "id"))
                .ok_or("a tool call in `input` has no `call_id`")?;
            let arguments = match kind {
                "function_call" => text_of(item, "arguments").unwrap_or_else(|| "{}".into()),
                _ => json!({ "input": text_of(item, "input").unwrap_or_default() }).to_string(),
            };
            let call = json!({
                "id": call_id, "type": "function",
                "function": { "name": text_of(item, "name").unwrap_or_default(), "arguments": arguments },
            });
            // The calls of one turn go on one assistant message (its text, if it had one).
            match messages.last_mut() {
                Some(last) if last["role"] == "assistant" && last.get("tool_calls").is_some() => {
                    if let Some(calls) = last["tool_calls"].as_array_mut() {
                        calls.push(call);
                    }
                }
                Some(last) if last["role"] == "assistant" => {
                    last["tool_calls"] = json!([call]);
                }
                _ => messages
                    .push(json!({ "role": "assistant", "content": null, "tool_calls": [call] })),
            }
        }
        "function_call_output" | "custom_tool_call_output" => {
            let call_id = text_of(item, "call_id").ok_or("a tool result has no `call_id`")?;
            let output = match item.get("output") {
                Some(Value::String(text)) => text.clone(),
                Some(other) => match content(Some(other)) {
                    Value::String(text) => text,
                    parts => parts.to_string(),
                },
                None => String::new(),
            };
            messages.push(json!({ "role": "tool", "tool_call_id": call_id, "content": output }));
        }
        // Reasoning (encrypted or summarised) and what a chat server has no place for.
        _ => {}
    }
    Ok(())
}

fn text_of(item: &Value, key: &str) -> Option<String> {
    item.get(key).and_then(Value::as_str).map(String::from)
}

/// A message's content: its text parts joined, or (with an image) chat's list of parts.
fn content(value: Option<&Value>) -> Value {
    let parts = match value {
        Some(Value::String(text)) => return json!(text),
        Some(Value::Array(parts)) => parts,
        _ => return json!(""),
    };
    let mut texts: Vec<&str> = Vec::new();
    let mut chat_parts: Vec<Value> = Vec::new();
    let mut images = false;
    for part in parts {
        match part.get("type").and_then(Value::as_str) {
            Some("input_text" | "output_text" | "text" | "refusal") => {
                let text = part
                    .get("text")
                    .or_else(|| part.get("refusal"))
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                texts.push(text);
                chat_parts.push(json!({ "type": "text", "text": text }));
            }
            Some("input_image") => {
                let url = part
                    .get("image_url")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                images = true;
                chat_parts.push(json!({ "type": "image_url", "image_url": { "url": url } }));
            }
            _ => {}
        }
    }
    if images {
        Value::Array(chat_parts)
    } else {
        json!(texts.join("\n"))
    }
}

/// The chat tools of a Responses call's `tools`, and the names of its freeform ones.
fn tools(list: Option<&Value>) -> (Vec<Value>, Vec<String>) {
    let (mut out, mut custom) = (Vec::new(), Vec::new());
    for tool in list.and_then(Value::as_array).into_iter().flatten() {
        let Some(name) = tool.get("name").and_then(Value::as_str) else {
            continue;
        };
        let description = tool.get("description").cloned().unwrap_or(json!(""));
        let parameters = match tool.get("type").and_then(Value::as_str) {
            Some("function") => tool
                .get("parameters")
                .cloned()
                .filter(Value::is_object)
                .unwrap_or_else(|| json!({ "type": "object", "properties": {} })),
            Some("custom") => {
                custom.push(name.to_string());
                json!({
                    "type": "object",
                    "properties": { "input": { "type": "string", "description": "The tool's whole input, as plain text." } },
                    "required": ["input"],
                })
            }
            // Tools the provider would run itself: a chat server runs none.
            _ => continue,
        };
        out.push(json!({
            "type": "function",
            "function": { "name": name, "description": description, "parameters": parameters },
        }));
    }
    (out, custom)
}

fn tool_choice(choice: Option<&Value>) -> Option<Value> {
    match choice? {
        Value::String(word) if matches!(word.as_str(), "auto" | "none" | "required") => {
            Some(json!(word))
        }
        Value::Object(o) if o.get("type").and_then(Value::as_str) == Some("function") => {
            let name = o.get("name")?.as_str()?;
            Some(json!({ "type": "function", "function": { "name": name } }))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests;

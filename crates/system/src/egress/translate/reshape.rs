//! A chat-completions answer on its way back from a provider of `api: openai-chat` (issue
//! 50). Not every chat server counts tokens in a stream (llama-cpp-python 0.3.36 sends no
//! `usage` however it is asked), so the proxy asks such a provider for whole answers and
//! streams each back the way the client asked: as chat completion chunks, or, for a Responses
//! call, as Responses events ([`ToResponses`]). The meter reads the whole answer first, with
//! the server's own counts. A server that streams anyway is passed on as it streams.
//!
//! Not for: the call (`translate::to_chat`), metering (`egress::meter`).

use serde_json::{json, Value};

use super::{ToResponses, ANSWER_CAP};

/// What the client gets of a chat answer.
pub struct Reshape {
    /// A Responses call's translation; none: chat completion chunks.
    responses: Option<ToResponses>,
    /// The whole answer, held while it arrives (`None`: it streams and passes).
    held: Option<Vec<u8>>,
    over_cap: bool,
}

impl Reshape {
    /// For a chat call the client wants streamed.
    pub fn chat_stream() -> Reshape {
        Reshape {
            responses: None,
            held: None,
            over_cap: false,
        }
    }

    /// For a Responses call, translated.
    pub fn responses(to: ToResponses) -> Reshape {
        Reshape {
            responses: Some(to),
            held: None,
            over_cap: false,
        }
    }

    /// The answer came as one JSON document (`whole`) or as a stream.
    pub fn begin(&mut self, whole: bool) {
        self.held = whole.then(Vec::new);
    }

    /// The `content-type` the client gets.
    pub fn content_type(&self) -> &'static str {
        match &self.responses {
            Some(to) if !to.streams() => "application/json",
            _ => "text/event-stream",
        }
    }

    /// The next bytes of the answer; what to send on now.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        if let Some(held) = self.held.as_mut() {
            if held.len() + bytes.len() <= ANSWER_CAP {
                held.extend_from_slice(bytes);
            } else {
                self.over_cap = true;
            }
            return Vec::new();
        }
        match self.responses.as_mut() {
            Some(to) => to.feed(bytes),
            None => bytes.to_vec(),
        }
    }

    /// The answer ended: the rest.
    pub fn finish(&mut self) -> Vec<u8> {
        let events = self.held.take().map(|held| {
            if self.over_cap {
                return error_event("the model's answer was too large to pass on");
            }
            match serde_json::from_slice::<Value>(&held) {
                Ok(answer) => chat_events(&answer),
                Err(_) => error_event("the model's answer was not the JSON of a chat completion"),
            }
        });
        match (self.responses.as_mut(), events) {
            (Some(to), Some(events)) => {
                let mut out = to.feed(&events);
                out.extend(to.finish());
                out
            }
            (Some(to), None) => to.finish(),
            (None, Some(events)) => events,
            (None, None) => Vec::new(),
        }
    }
}

/// `data: {"error": …}`: what a chat stream says of a failure.
fn error_event(message: &str) -> Vec<u8> {
    let error = json!({ "error": { "message": message, "type": "server_error" } });
    format!("data: {error}\n\n").into_bytes()
}

/// A whole chat completion as the chunks of a stream: its message's text and tool calls in
/// one, its finish reason and usage in the last, then `[DONE]`.
pub fn chat_events(answer: &Value) -> Vec<u8> {
    if answer.get("error").is_some() {
        return format!("data: {answer}\n\n").into_bytes();
    }
    let mut head = serde_json::Map::new();
    for key in ["id", "created", "model", "system_fingerprint"] {
        if let Some(v) = answer.get(key) {
            head.insert(key.into(), v.clone());
        }
    }
    head.insert("object".into(), json!("chat.completion.chunk"));
    let chunk = |choices: Value, usage: Option<&Value>| {
        let mut c = head.clone();
        c.insert("choices".into(), choices);
        if let Some(usage) = usage {
            c.insert("usage".into(), usage.clone());
        }
        format!("data: {}\n\n", Value::Object(c))
    };
    let choice = answer.pointer("/choices/0").cloned().unwrap_or_default();
    let message = choice.get("message").cloned().unwrap_or_default();
    let mut delta = serde_json::Map::new();
    delta.insert("role".into(), json!("assistant"));
    for key in ["content", "reasoning_content", "reasoning", "refusal"] {
        if let Some(text) = message.get(key).filter(|v| v.is_string()) {
            delta.insert(key.into(), text.clone());
        }
    }
    let calls: Vec<Value> = message
        .get("tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
        .map(|(i, call)| {
            let id = call
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
                .map_or_else(|| format!("call_opentiger_{i}"), String::from);
            json!({
                "index": i, "id": id, "type": "function",
                "function": {
                    "name": call.pointer("/function/name").cloned().unwrap_or(json!("")),
                    "arguments": call.pointer("/function/arguments").cloned().unwrap_or(json!("")),
                },
            })
        })
        .collect();
    if !calls.is_empty() {
        delta.insert("tool_calls".into(), Value::Array(calls));
    }
    let finish = choice
        .get("finish_reason")
        .filter(|v| v.is_string())
        .cloned()
        .unwrap_or(json!("stop"));
    let mut out = chunk(
        json!([{ "index": 0, "delta": Value::Object(delta), "finish_reason": null }]),
        None,
    );
    out.push_str(&chunk(
        json!([{ "index": 0, "delta": {}, "finish_reason": finish }]),
        answer.get("usage").filter(|u| u.is_object()),
    ));
    out.push_str("data: [DONE]\n\n");
    out.into_bytes()
}

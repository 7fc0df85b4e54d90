//! A chat completion's streamed answer as OpenAI Responses events (or one Responses object),
//! as its bytes pass. Not for: the call (`translate::to_chat`), metering (`egress::meter`,
//! which reads the chat stream before this).

use std::collections::BTreeMap;

use serde_json::{json, Value};

use super::{ANSWER_CAP, EVENT_CAP};

/// One output item being streamed.
struct Open {
    output_index: usize,
    id: String,
    /// A tool call's id, name and whether it is freeform (text: none of these).
    call: Option<(String, String, bool)>,
    /// Its text, or its arguments so far.
    text: String,
}

/// Turns the chat stream into Responses events as it is fed.
pub struct ToResponses {
    id: String,
    model: String,
    stream: bool,
    custom: Vec<String>,
    created_at: i64,
    sequence: u64,
    started: bool,
    /// The SSE line being read, and the data lines of the current event.
    line: Vec<u8>,
    data: Vec<u8>,
    over_cap: bool,
    text: Option<Open>,
    /// Tool calls by their index in the chat stream.
    calls: BTreeMap<u64, Open>,
    /// Items done, in order.
    output: Vec<Value>,
    next_index: usize,
    held: usize,
    usage: Option<Value>,
    finish: Option<String>,
    failed: Option<String>,
    ended: bool,
    out: Vec<u8>,
}

impl ToResponses {
    /// For a call to `model`; `stream`: whether the client asked for events, else one object
    /// at the end. `custom`: the freeform tools offered. `created_at`: the answer's time,
    /// seconds since the epoch.
    pub fn new(model: &str, stream: bool, custom: Vec<String>, created_at: i64) -> ToResponses {
        ToResponses {
            id: format!("resp_opentiger_{created_at:x}"),
            model: model.to_string(),
            stream,
            custom,
            created_at,
            sequence: 0,
            started: false,
            line: Vec::new(),
            data: Vec::new(),
            over_cap: false,
            text: None,
            calls: BTreeMap::new(),
            output: Vec::new(),
            next_index: 0,
            held: 0,
            usage: None,
            finish: None,
            failed: None,
            ended: false,
            out: Vec::new(),
        }
    }

    /// Whether the client gets events (else one object at the end).
    pub fn streams(&self) -> bool {
        self.stream
    }

    /// The next bytes of the chat stream; what to send on.
    pub fn feed(&mut self, bytes: &[u8]) -> Vec<u8> {
        for piece in bytes.split_inclusive(|b| *b == b'\n') {
            if self.ended {
                break;
            }
            if self.line.len() + piece.len() <= EVENT_CAP {
                self.line.extend_from_slice(piece);
            } else {
                self.over_cap = true;
            }
            if piece.ends_with(b"\n") {
                let line = std::mem::take(&mut self.line);
                self.sse_line(&line);
            }
        }
        std::mem::take(&mut self.out)
    }

    /// The chat stream ended: the last events (or the one object).
    pub fn finish(&mut self) -> Vec<u8> {
        if !self.ended {
            let line = std::mem::take(&mut self.line);
            self.sse_line(&line);
            self.dispatch();
            self.end();
        }
        std::mem::take(&mut self.out)
    }

    fn sse_line(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            self.dispatch();
        } else if let Some(rest) = line.strip_prefix(b"data:") {
            let rest = rest.strip_prefix(b" ").unwrap_or(rest);
            if self.data.len() + rest.len() < EVENT_CAP {
                if !self.data.is_empty() {
                    self.data.push(b'\n');
                }
                self.data.extend_from_slice(rest);
            } else {
                self.over_cap = true;
            }
        }
    }

    fn dispatch(&mut self) {
        let data = std::mem::take(&mut self.data);
        if std::mem::take(&mut self.over_cap) {
            self.fail("an event of the model's answer was too large to read");
            return;
        }
        if data.is_empty() {
            return;
        }
        if data == b"[DONE]" {
            self.end();
            return;
        }
        if let Ok(chunk) = serde_json::from_slice::<Value>(&data) {
            self.chunk(&chunk);
        }
    }

    fn chunk(&mut self, chunk: &Value) {
        if let Some(error) = chunk.get("error") {
            let message = error
                .get("message")
                .and_then(Value::as_str)
                .map_or_else(|| error.to_string(), String::from);
            self.fail(&message);
            return;
        }
        self.start();
        if let Some(model) = chunk.get("model").and_then(Value::as_str) {
            if !model.is_empty() {
                self.model = model.to_string();
            }
        }
        if let Some(usage) = chunk.get("usage").filter(|u| u.is_object()) {
            self.usage = Some(usage.clone());
        }
        let Some(choice) = chunk.pointer("/choices/0") else {
            return;
        };
        if let Some(text) = choice.pointer("/delta/content").and_then(Value::as_str) {
            if !text.is_empty() {
                self.text_delta(text);
            }
        }
        for call in choice
            .pointer("/delta/tool_calls")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            self.call_delta(call);
        }
        if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
            self.finish = Some(reason.to_string());
        }
    }

    fn start(&mut self) {
        if self.started {
            return;
        }
        self.started = true;
        let response = self.response("in_progress", Vec::new(), None);
        self.event("response.created", json!({ "response": response }));
        self.event("response.in_progress", json!({ "response": response }));
    }

    /// Holds `more` bytes of the answer, unless past [`ANSWER_CAP`].
    fn hold(&mut self, more: usize) -> bool {
        self.held += more;
        if self.held > ANSWER_CAP {
            self.fail("the model's answer was too large to pass on");
            return false;
        }
        true
    }

    fn text_delta(&mut self, delta: &str) {
        if !self.hold(delta.len()) {
            return;
        }
        if self.text.is_none() {
            let open = self.open(None);
            let item = json!({ "type": "message", "id": open.id, "status": "in_progress", "role": "assistant", "content": [] });
            self.event(
                "response.output_item.added",
                json!({ "output_index": open.output_index, "item": item }),
            );
            self.event(
                "response.content_part.added",
                json!({ "item_id": open.id, "output_index": open.output_index, "content_index": 0,
                        "part": { "type": "output_text", "text": "", "annotations": [] } }),
            );
            self.text = Some(open);
        }
        let Some(open) = self.text.as_mut() else {
            return;
        };
        open.text.push_str(delta);
        let (id, index) = (open.id.clone(), open.output_index);
        self.event(
            "response.output_text.delta",
            json!({ "item_id": id, "output_index": index, "content_index": 0, "delta": delta }),
        );
    }

    fn call_delta(&mut self, call: &Value) {
        let index = call.get("index").and_then(Value::as_u64).unwrap_or(0);
        let arguments = call
            .pointer("/function/arguments")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if !self.hold(arguments.len()) {
            return;
        }
        if !self.calls.contains_key(&index) {
            // Text before the calls is a finished message.
            self.close_text();
            let name = call
                .pointer("/function/name")
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_string();
            let call_id = call
                .get("id")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
                .map_or_else(|| format!("call_opentiger_{index}"), String::from);
            let custom = self.custom.contains(&name);
            let open = self.open(Some((call_id, name, custom)));
            let item = call_item(&open, "in_progress");
            self.event(
                "response.output_item.added",
                json!({ "output_index": open.output_index, "item": item }),
            );
            self.calls.insert(index, open);
        }
        let Some(open) = self.calls.get_mut(&index) else {
            return;
        };
        open.text.push_str(arguments);
        let freeform = open.call.as_ref().is_some_and(|c| c.2);
        let (id, output_index) = (open.id.clone(), open.output_index);
        if !arguments.is_empty() && !freeform {
            self.event(
                "response.function_call_arguments.delta",
                json!({ "item_id": id, "output_index": output_index, "delta": arguments }),
            );
        }
    }

    fn open(&mut self, call: Option<(String, String, bool)>) -> Open {
        let output_index = self.next_index;
        self.next_index += 1;
        let prefix = if call.is_some() { "fc" } else { "msg" };
        Open {
            output_index,
            id: format!("{prefix}_opentiger_{output_index}"),
            call,
            text: String::new(),
        }
    }

    fn close_text(&mut self) {
        let Some(open) = self.text.take() else {
            return;
        };
        let part = json!({ "type": "output_text", "text": open.text, "annotations": [] });
        let at =
            json!({ "item_id": open.id, "output_index": open.output_index, "content_index": 0 });
        let mut done = at.clone();
        done["text"] = json!(open.text);
        self.event("response.output_text.done", done);
        let mut part_done = at;
        part_done["part"] = part.clone();
        self.event("response.content_part.done", part_done);
        let item = json!({ "type": "message", "id": open.id, "status": "completed", "role": "assistant", "content": [part] });
        self.event(
            "response.output_item.done",
            json!({ "output_index": open.output_index, "item": item }),
        );
        self.output.push(item);
    }

    fn close_calls(&mut self) {
        for (_, open) in std::mem::take(&mut self.calls) {
            let freeform = open.call.as_ref().is_some_and(|c| c.2);
            if !freeform {
                self.event(
                    "response.function_call_arguments.done",
                    json!({ "item_id": open.id, "output_index": open.output_index, "arguments": open.text }),
                );
            }
            let item = call_item(&open, "completed");
            self.event(
                "response.output_item.done",
                json!({ "output_index": open.output_index, "item": item }),
            );
            self.output.push(item);
        }
    }

    fn fail(&mut self, message: &str) {
        if self.ended {
            return;
        }
        self.failed = Some(message.to_string());
        self.end();
    }

    /// The last events: the open items done, then `response.completed` (`incomplete` when the
    /// answer hit its length, `failed` when it broke off).
    fn end(&mut self) {
        if self.ended {
            return;
        }
        self.start();
        self.ended = true;
        self.close_text();
        self.close_calls();
        let (status, kind) = match (&self.failed, self.finish.as_deref()) {
            (Some(_), _) => ("failed", "response.failed"),
            (None, Some("length")) => ("incomplete", "response.incomplete"),
            (None, Some(_)) => ("completed", "response.completed"),
            (None, None) => {
                self.failed = Some("the model's answer ended before it finished".into());
                ("failed", "response.failed")
            }
        };
        let output = std::mem::take(&mut self.output);
        let response = self.response(status, output, self.usage.as_ref().map(usage));
        if self.stream {
            self.event(kind, json!({ "response": response }));
        } else {
            self.out.extend(response.to_string().into_bytes());
        }
    }

    fn response(&self, status: &str, output: Vec<Value>, usage: Option<Value>) -> Value {
        let mut r = json!({
            "id": self.id, "object": "response", "created_at": self.created_at, "status": status,
            "model": self.model, "output": output, "usage": usage,
            "error": null, "incomplete_details": null,
        });
        if let Some(message) = &self.failed {
            r["error"] = json!({ "code": "server_error", "message": message });
        }
        if status == "incomplete" {
            r["incomplete_details"] = json!({ "reason": "max_output_tokens" });
        }
        r
    }

    fn event(&mut self, kind: &str, mut body: Value) {
        if !self.stream {
            return;
        }
        body["type"] = json!(kind);
        body["sequence_number"] = json!(self.sequence);
        self.sequence += 1;
        self.out
            .extend(format!("event: {kind}\ndata: {body}\n\n").into_bytes());
    }
}

/// A tool call's item: a `function_call`, or a `custom_tool_call` whose input is the `input`
/// its function arguments carry.
fn call_item(open: &Open, status: &str) -> Value {
    let (call_id, name, freeform) = open.call.clone().unwrap_or_default();
    if freeform {
        let input = serde_json::from_str::<Value>(&open.text)
            .ok()
            .and_then(|v| v.get("input").and_then(Value::as_str).map(String::from))
            .unwrap_or_else(|| open.text.clone());
        return json!({ "type": "custom_tool_call", "id": open.id, "call_id": call_id,
                       "name": name, "input": input, "status": status });
    }
    json!({ "type": "function_call", "id": open.id, "call_id": call_id, "name": name,
            "arguments": open.text, "status": status })
}

/// Chat completions' `usage` in Responses' terms.
fn usage(chat: &Value) -> Value {
    let n = |pointer: &str| chat.pointer(pointer).and_then(Value::as_u64).unwrap_or(0);
    let (input, output) = (n("/prompt_tokens"), n("/completion_tokens"));
    json!({
        "input_tokens": input,
        "input_tokens_details": { "cached_tokens": n("/prompt_tokens_details/cached_tokens") },
        "output_tokens": output,
        "output_tokens_details": { "reasoning_tokens": n("/completion_tokens_details/reasoning_tokens") },
        "total_tokens": input + output,
    })
}

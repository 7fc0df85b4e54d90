//! Token usage read from a model API's answers as they stream through the proxy (issue 37):
//! Anthropic Messages (JSON, and SSE `message_start` / `message_delta`), OpenAI chat completions
//! (JSON, and SSE chunks carrying `usage`), OpenAI Responses (JSON, SSE and websocket events
//! with `response.usage`: `response.completed` and the like) and Gemini (`usageMetadata`, in
//! SSE or a streamed JSON array).
//!
//! An [`AnswerMeter`] is fed the answer's bytes in the order they pass and keeps only what it
//! must: the current SSE event or websocket message (each capped), never the whole answer. A
//! plain JSON answer is kept up to [`JSON_CAP`] (a model's non-streamed answer is far smaller),
//! beyond which its usage is not read. Pure: no I/O, table-tested with recorded shapes.
//!
//! Not here: prices (`pricing`), what the proxy does with the counts (`session`).

use std::collections::BTreeMap;

use serde_json::Value;

use super::frames::{Frames, Header, Piece};

/// The most of a plain JSON answer kept to read its usage.
pub const JSON_CAP: usize = 8 << 20;
/// The most one SSE event or websocket message may hold to be read.
pub const EVENT_CAP: usize = 4 << 20;

pub use crate::model::network::Tokens;

/// Tokens per model, as the answers named it.
pub type Usage = BTreeMap<String, Tokens>;

/// How an answer's body is framed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Framing {
    /// `text/event-stream`.
    Sse,
    /// A JSON document.
    Json,
    /// Websocket frames from the server (after an HTTP upgrade).
    WebSocket,
    /// Anything else: not read.
    Other,
}

impl Framing {
    /// The framing of an HTTP answer with this `content-type`.
    pub fn of_content_type(content_type: &str) -> Framing {
        let ct = content_type.to_ascii_lowercase();
        if ct.starts_with("text/event-stream") {
            Framing::Sse
        } else if ct.contains("json") {
            Framing::Json
        } else {
            Framing::Other
        }
    }
}

/// Reads the usage out of one answer as its bytes pass.
pub struct AnswerMeter {
    framing: Framing,
    /// JSON: the body so far; SSE: the current line.
    buf: Vec<u8>,
    /// SSE: the data lines of the current event.
    data: Vec<u8>,
    over_cap: bool,
    ws: WsState,
    frames: Frames,
    /// The answer being counted (Anthropic's message, Gemini's cumulative counts).
    open: Option<(String, Tokens)>,
    done: Usage,
}

impl AnswerMeter {
    pub fn new(framing: Framing) -> AnswerMeter {
        AnswerMeter {
            framing,
            buf: Vec::new(),
            data: Vec::new(),
            over_cap: false,
            ws: WsState::default(),
            frames: Frames::default(),
            open: None,
            done: Usage::new(),
        }
    }

    /// The next bytes of the answer.
    pub fn feed(&mut self, bytes: &[u8]) {
        match self.framing {
            Framing::Json => {
                if self.buf.len() + bytes.len() > JSON_CAP {
                    self.over_cap = true;
                    self.buf = Vec::new();
                } else if !self.over_cap {
                    self.buf.extend_from_slice(bytes);
                }
            }
            Framing::Sse => self.feed_sse(bytes),
            Framing::WebSocket => self.feed_ws(bytes),
            Framing::Other => {}
        }
    }

    /// Usage counted so far (completed answers), without ending the meter.
    pub fn take(&mut self) -> Usage {
        std::mem::take(&mut self.done)
    }

    /// The answer ended: what it used.
    pub fn finish(mut self) -> Usage {
        match self.framing {
            Framing::Json if !self.over_cap => match serde_json::from_slice::<Value>(&self.buf) {
                // Gemini's `streamGenerateContent` without `alt=sse`: an array of chunks.
                Ok(Value::Array(chunks)) => chunks.iter().for_each(|c| self.event(c)),
                Ok(value) => self.event(&value),
                Err(_) => {}
            },
            Framing::Sse => {
                // An event not closed by a blank line still counts.
                let line = std::mem::take(&mut self.buf);
                self.sse_line(&line);
                self.dispatch_sse();
            }
            Framing::Json | Framing::WebSocket | Framing::Other => {}
        }
        self.close_open();
        self.done
    }

    fn feed_sse(&mut self, bytes: &[u8]) {
        for chunk in bytes.split_inclusive(|b| *b == b'\n') {
            if self.buf.len() + chunk.len() <= EVENT_CAP {
                self.buf.extend_from_slice(chunk);
            } else {
                self.over_cap = true;
            }
            if chunk.ends_with(b"\n") {
                let line = std::mem::take(&mut self.buf);
                self.sse_line(&line);
            }
        }
    }

    fn sse_line(&mut self, line: &[u8]) {
        let line = line.strip_suffix(b"\n").unwrap_or(line);
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.is_empty() {
            self.dispatch_sse();
            return;
        }
        if let Some(rest) = line.strip_prefix(b"data:") {
            let rest = rest.strip_prefix(b" ").unwrap_or(rest);
            if !self.data.is_empty() {
                self.data.push(b'\n');
            }
            if self.data.len() + rest.len() <= EVENT_CAP {
                self.data.extend_from_slice(rest);
            } else {
                self.over_cap = true;
            }
        }
    }

    fn dispatch_sse(&mut self) {
        let data = std::mem::take(&mut self.data);
        let cut = std::mem::take(&mut self.over_cap);
        if data.is_empty() || cut || data == b"[DONE]" {
            return;
        }
        if let Ok(value) = serde_json::from_slice::<Value>(&data) {
            self.event(&value);
        }
    }

    /// One event (an SSE event's data, a websocket message) or a whole JSON answer.
    fn event(&mut self, value: &Value) {
        let kind = value.get("type").and_then(Value::as_str).unwrap_or("");
        match kind {
            // Anthropic, streamed: the message's counts open, deltas update, the stop closes.
            "message_start" => {
                self.close_open();
                if let Some(message) = value.get("message") {
                    let model = text(message, "model");
                    let tokens = message.get("usage").map(tokens_of).unwrap_or_default();
                    self.open = Some((model, tokens));
                }
            }
            "message_delta" => {
                if let (Some((_, tokens)), Some(usage)) = (&mut self.open, value.get("usage")) {
                    // Counts here are cumulative; input ones appear only in newer answers.
                    let now = tokens_of(usage);
                    tokens.output = now.output.max(tokens.output);
                    if usage.get("input_tokens").is_some() {
                        tokens.input = now.input.max(tokens.input);
                        tokens.cached_input = now.cached_input.max(tokens.cached_input);
                    }
                }
            }
            "message_stop" => self.close_open(),
            _ => self.other_event(value),
        }
    }

    fn other_event(&mut self, value: &Value) {
        // OpenAI Responses (SSE or websocket): the response's last event carries the usage
        // (`response.created` and `response.in_progress` may repeat the object, never to count).
        if let Some(response) = value.get("response").filter(|r| r.is_object()) {
            let last = matches!(
                value.get("type").and_then(Value::as_str),
                Some(
                    "response.completed"
                        | "response.incomplete"
                        | "response.failed"
                        | "response.done"
                )
            );
            if let (true, Some(usage)) = (last, response.get("usage").filter(|u| u.is_object())) {
                self.count(text(response, "model"), tokens_of(usage));
            }
            return;
        }
        // Gemini: every chunk carries the counts so far.
        if let Some(meta) = value.get("usageMetadata").filter(|u| u.is_object()) {
            let model = value
                .get("modelVersion")
                .and_then(Value::as_str)
                .unwrap_or("gemini")
                .to_string();
            let tokens = tokens_of(meta);
            self.open = Some((model, tokens));
            return;
        }
        // A whole answer (Anthropic, chat completions, Responses), or a chat completion chunk
        // that carries the usage (the last one, with `stream_options.include_usage`).
        if let Some(usage) = value.get("usage").filter(|u| u.is_object()) {
            self.count(text(value, "model"), tokens_of(usage));
        }
    }

    fn close_open(&mut self) {
        if let Some((model, tokens)) = self.open.take() {
            self.count(model, tokens);
        }
    }

    fn count(&mut self, model: String, mut tokens: Tokens) {
        tokens.answers = 1;
        let model = if model.is_empty() {
            "unknown".to_string()
        } else {
            model
        };
        self.done.entry(model).or_default().add(&tokens);
    }

    fn feed_ws(&mut self, bytes: &[u8]) {
        let mut frames = std::mem::take(&mut self.frames);
        frames.split(bytes, |piece| match piece {
            Piece::Header(h, _) => self.start_frame(h),
            Piece::Payload(p) => self.frame_bytes(p),
            Piece::End => self.end_frame(),
        });
        self.frames = frames;
    }

    fn start_frame(&mut self, header: Header) {
        self.ws.mask = header.mask;
        self.ws.mask_at = 0;
        self.ws.fin = header.fin;
        match header.opcode {
            // Text starts a message; continuation goes on with the current one.
            1 => {
                self.ws.message = Some(Vec::new());
                // RSV1: compressed.
                self.ws.skip = header.rsv & 0b100 != 0;
            }
            0 => {}
            // Binary, close, ping, pong: passed, not read.
            opcode => {
                if opcode == 2 {
                    self.ws.message = None;
                }
                self.ws.control = true;
            }
        }
    }

    fn frame_bytes(&mut self, bytes: &[u8]) {
        if self.ws.control || self.ws.skip {
            return;
        }
        let Some(message) = &mut self.ws.message else {
            return;
        };
        if message.len() + bytes.len() > EVENT_CAP {
            self.ws.skip = true;
            self.ws.message = Some(Vec::new());
            return;
        }
        match self.ws.mask {
            Some(mask) => {
                for b in bytes {
                    message.push(b ^ mask[self.ws.mask_at % 4]);
                    self.ws.mask_at += 1;
                }
            }
            None => message.extend_from_slice(bytes),
        }
    }

    fn end_frame(&mut self) {
        if std::mem::take(&mut self.ws.control) {
            return;
        }
        if self.ws.fin {
            let message = self.ws.message.take();
            let skipped = std::mem::take(&mut self.ws.skip);
            if let (Some(message), false) = (message, skipped) {
                if let Ok(value) = serde_json::from_slice::<Value>(&message) {
                    self.event(&value);
                }
            }
        }
    }
}

/// Where a websocket stream is.
#[derive(Default)]
struct WsState {
    fin: bool,
    /// A control or binary frame: its payload passes unread.
    control: bool,
    /// The current message is compressed or too large: not read.
    skip: bool,
    mask: Option<[u8; 4]>,
    mask_at: usize,
    message: Option<Vec<u8>>,
}

fn text(value: &Value, key: &str) -> String {
    value
        .get(key)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

fn num(value: &Value, pointer: &str) -> u64 {
    value.pointer(pointer).and_then(Value::as_u64).unwrap_or(0)
}

/// The tokens of a `usage` object of any of the shapes read here.
pub fn tokens_of(usage: &Value) -> Tokens {
    if usage.get("promptTokenCount").is_some() {
        // Gemini: thoughts are billed as output.
        return Tokens {
            input: num(usage, "/promptTokenCount"),
            cached_input: num(usage, "/cachedContentTokenCount"),
            output: num(usage, "/candidatesTokenCount") + num(usage, "/thoughtsTokenCount"),
            answers: 0,
        };
    }
    if usage.get("prompt_tokens").is_some() || usage.get("completion_tokens").is_some() {
        // Chat completions: reasoning tokens are part of completion tokens.
        return Tokens {
            input: num(usage, "/prompt_tokens"),
            cached_input: num(usage, "/prompt_tokens_details/cached_tokens"),
            output: num(usage, "/completion_tokens"),
            answers: 0,
        };
    }
    if usage.get("input_tokens_details").is_some() {
        // Responses: input tokens include cached ones, output tokens reasoning ones.
        return Tokens {
            input: num(usage, "/input_tokens"),
            cached_input: num(usage, "/input_tokens_details/cached_tokens"),
            output: num(usage, "/output_tokens"),
            answers: 0,
        };
    }
    // Anthropic: input tokens exclude the cache's reads and writes.
    let read = num(usage, "/cache_read_input_tokens");
    Tokens {
        input: num(usage, "/input_tokens") + num(usage, "/cache_creation_input_tokens") + read,
        cached_input: read,
        output: num(usage, "/output_tokens"),
        answers: 0,
    }
}

#[cfg(test)]
mod tests;

//! A local stand-in for the model providers' HTTP APIs, for the opt-in real-CLI test
//! (`tests/real_agent_clis.rs`): just enough of Anthropic Messages (`POST …/v1/messages`, plain
//! or streamed as SSE), OpenAI Responses (`POST …/responses`, streamed) and OpenAI chat
//! completions (`POST …/chat/completions`, plain or streamed) for the real agent CLIs to run a
//! session against it, on a std `TcpListener` (the HTTP/1.1 codec of the GitHub stand-in).
//!
//! Each server plays one canned [`Scenario`] for every request, and keeps no conversation
//! state: what to answer is read from the request (a tool result in it means the tool ran).
//! The tool call it makes uses the tool the CLI offers for writing a file (claude `Write`,
//! opencode `write`, codex `apply_patch` or a shell tool); a CLI that offers no tools (aider)
//! gets an aider SEARCH/REPLACE edit block in plain text.
//!
//! OpenAI Responses over a websocket too (issue 37: `GET …/responses` with `Upgrade: websocket`,
//! answered with `response.created` and `response.completed` frames, or HTTP 429 with
//! `retry-after` in the rate-limited scenario). Each request's key (`x-api-key`, or the bearer
//! token of `authorization`) and whole head are kept, for tests that check which key reached the
//! provider, and where. [`ModelServer::reflecting`] answers an unknown `anthropic-beta` with a
//! 400 quoting every header it got (issue 46: Anthropic quotes the value; this quotes the key
//! too, to try opentiger's filter).
//!
//! Not for: authentication beyond "a 401 scenario refuses everything", real token counting,
//! chunked request bodies, TLS.

use std::io::{BufReader, BufWriter, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{json, Value};

use super::github::http::{read_request, write_response, ReadError, Request, Response};

mod websocket;

/// The file the success scenario's tool call writes (relative to the CLI's working directory),
/// and what it writes.
pub const FILE: &str = "sub.txt";
pub const CONTENT: &str = "def sub(a, b):\n    return a - b\n";
/// The final answer of the success scenario.
pub const ANSWER: &str = "Wrote sub.txt with sub(a, b).";
/// The 429 scenario's `retry-after`, in seconds.
pub const RETRY_AFTER: u64 = 3600;
/// Token counts every answer reports.
pub const INPUT_TOKENS: u64 = 1200;
pub const OUTPUT_TOKENS: u64 = 80;

/// What the stand-in answers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scenario {
    /// A tool call that writes [`FILE`], then (once a tool result comes back) [`ANSWER`].
    Success,
    /// HTTP 429 with `retry-after: RETRY_AFTER` for every request.
    RateLimited,
    /// HTTP 401 (invalid key) for every request.
    Unauthorized,
    /// A tool call on every turn, never an answer (a turn cap must stop it).
    ToolLoop,
    /// This text for every request, no tool call (a judge's verdict line, a planner's plan).
    Reply(&'static str),
}

/// One request the stand-in saw.
#[derive(Clone, Debug)]
pub struct Seen {
    pub path: String,
    pub body: Value,
    /// Its key: `x-api-key`, or the token of `authorization: Bearer`.
    pub key: Option<String>,
    /// A websocket upgrade.
    pub websocket: bool,
    /// Its request line and every header, as they came (issue 46: where the key stood).
    pub head: String,
}

pub struct ModelServer {
    addr: SocketAddr,
    seen: Arc<Mutex<Vec<Seen>>>,
}

/// The `anthropic-beta` values the reflecting stand-in knows; any other is answered 400 with
/// every header of the request quoted (Anthropic quotes the value it does not know).
const KNOWN_BETAS: &[&str] = &["claude-code-20250219", "oauth-2025-04-20"];

impl ModelServer {
    /// Listens on a free local port, answering every request with `scenario` (the listener
    /// thread lives as long as the test process).
    pub fn start(scenario: Scenario) -> ModelServer {
        ModelServer::serving(scenario, false)
    }

    /// The same, answering an unknown `anthropic-beta` with a 400 that quotes every header it
    /// got — the credential among them — as an attacker's best reflection would.
    pub fn reflecting(scenario: Scenario) -> ModelServer {
        ModelServer::serving(scenario, true)
    }

    fn serving(scenario: Scenario, reflect: bool) -> ModelServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let log = Arc::clone(&log);
                std::thread::spawn(move || serve(scenario, reflect, &log, stream));
            }
        });
        ModelServer { addr, seen }
    }

    /// `http://127.0.0.1:<port>`, without a path.
    pub fn base_url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The requests seen so far.
    pub fn seen(&self) -> Vec<Seen> {
        self.seen
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

fn serve(scenario: Scenario, reflect: bool, log: &Mutex<Vec<Seen>>, stream: TcpStream) {
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut writer = BufWriter::new(write_half);
    loop {
        let req = match read_request(&mut reader, &mut writer) {
            Ok(req) => req,
            Err(ReadError::Closed) => return,
            Err(ReadError::Bad(why)) => {
                let r = json_response(400, &json!({ "error": { "message": why } }));
                let _ = write_response(&mut writer, &r, false);
                return;
            }
        };
        let body: Value = serde_json::from_slice(&req.body).unwrap_or(Value::Null);
        let key = req.header("x-api-key").map(str::to_string).or_else(|| {
            req.header("authorization")
                .and_then(|a| a.strip_prefix("Bearer "))
                .map(str::to_string)
        });
        let websocket = req
            .header("upgrade")
            .is_some_and(|u| u.eq_ignore_ascii_case("websocket"));
        let head = req
            .headers()
            .iter()
            .fold(req.target.clone(), |head, (k, v)| {
                format!("{head}\n{k}: {v}")
            });
        log.lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(Seen {
                path: req.path.clone(),
                body: body.clone(),
                key,
                websocket,
                head: head.clone(),
            });
        let beta = req
            .header("anthropic-beta")
            .unwrap_or("claude-code-20250219");
        if reflect && beta.split(',').any(|b| !KNOWN_BETAS.contains(&b.trim())) {
            let message = format!(
                "Unexpected value(s) `{beta}` for the `anthropic-beta` header. The request: {head}"
            );
            let r = json_response(
                400,
                &json!({ "type": "error", "error": { "type": "invalid_request_error", "message": message } }),
            );
            if write_response(&mut writer, &r, req.keep_alive).is_err() || !req.keep_alive {
                return;
            }
            continue;
        }
        if websocket && req.path.ends_with("/responses") && scenario != Scenario::RateLimited {
            let _ = websocket::websocket_session(&mut reader, &mut writer, scenario);
            return;
        }
        if websocket && req.path.ends_with("/responses") {
            let mut r = error(Api::Responses, 429);
            r.headers
                .push(("retry-after".into(), RETRY_AFTER.to_string()));
            let _ = write_response(&mut writer, &r, false);
            return;
        }
        let response = respond(scenario, &req, &body);
        if write_response(&mut writer, &response, req.keep_alive).is_err() || !req.keep_alive {
            return;
        }
    }
}

/// The provider API a request is for, by its path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    Messages,
    Responses,
    Chat,
}

fn api_of(path: &str) -> Option<Api> {
    if path.ends_with("/messages") {
        Some(Api::Messages)
    } else if path.ends_with("/responses") {
        Some(Api::Responses)
    } else if path.ends_with("/chat/completions") {
        Some(Api::Chat)
    } else {
        None
    }
}

fn respond(scenario: Scenario, req: &Request, body: &Value) -> Response {
    if req.method == "GET" && req.path.ends_with("/models") {
        return json_response(200, &json!({ "object": "list", "data": [] }));
    }
    let Some(api) = api_of(&req.path).filter(|_| req.method == "POST") else {
        return json_response(
            404,
            &json!({ "error": { "message": format!("no route {} {}", req.method, req.path) } }),
        );
    };
    match scenario {
        Scenario::Unauthorized => error(api, 401),
        Scenario::RateLimited => {
            let mut r = error(api, 429);
            r.headers
                .push(("retry-after".into(), RETRY_AFTER.to_string()));
            r
        }
        Scenario::Reply(text) => answer(api, body, Turn::Text(text)),
        Scenario::Success if has_tool_result(body) => answer(api, body, Turn::Text(ANSWER)),
        Scenario::Success | Scenario::ToolLoop => match tool_call(body, scenario) {
            Some(call) => answer(api, body, Turn::Tool(call)),
            None => answer(api, body, Turn::Text(&aider_edit())),
        },
    }
}

/// The provider's error body for `status` (401 or 429).
fn error(api: Api, status: u16) -> Response {
    let (kind, message) = if status == 401 {
        ("authentication_error", "invalid x-api-key")
    } else {
        (
            "rate_limit_error",
            "This request would exceed your account's rate limit. Please try again later.",
        )
    };
    let body = match api {
        Api::Messages => json!({ "type": "error", "error": { "type": kind, "message": message } }),
        Api::Responses | Api::Chat => {
            let (message, code) = if status == 401 {
                ("Incorrect API key provided: sk-***. You can find your API key at https://platform.openai.com/account/api-keys.", "invalid_api_key")
            } else {
                (
                    "Rate limit reached for requests. Please try again later.",
                    "rate_limit_exceeded",
                )
            };
            json!({ "error": { "message": message, "type": kind, "param": null, "code": code } })
        }
    };
    json_response(status, &body)
}

/// Whether the conversation holds a tool's result (the call was made and ran).
fn has_tool_result(body: &Value) -> bool {
    let text = body.to_string();
    [
        "\"tool_result\"",
        "\"function_call_output\"",
        "\"custom_tool_call_output\"",
        "\"role\":\"tool\"",
    ]
    .iter()
    .any(|marker| text.contains(marker))
}

/// A tool call: its name, its arguments, and whether it is a freeform (`custom`) Responses tool
/// whose input is plain text.
struct Call {
    name: String,
    input: Value,
    freeform: bool,
}

enum Turn<'a> {
    Text(&'a str),
    Tool(Call),
}

/// The names of the tools the request offers, with whether each is a freeform tool.
fn tools(body: &Value) -> Vec<(String, bool)> {
    let Some(list) = body.get("tools").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|t| {
            let name = t
                .get("name")
                .or_else(|| t.pointer("/function/name"))
                .and_then(Value::as_str)?;
            Some((name.to_string(), t.get("type") == Some(&json!("custom"))))
        })
        .collect()
}

/// The CLI's working directory, from the environment block of its system prompt.
fn working_directory(body: &Value) -> Option<String> {
    let text = body.to_string();
    for marker in ["Working directory: ", "<cwd>"] {
        if let Some(at) = text.find(marker) {
            let rest = &text[at + marker.len()..];
            let end = rest.find(['\\', '<', '"']).unwrap_or(rest.len());
            return Some(rest[..end].trim().to_string());
        }
    }
    None
}

/// The call that writes [`FILE`] with the tool this CLI offers; `None` when it offers none.
fn tool_call(body: &Value, scenario: Scenario) -> Option<Call> {
    let offered = tools(body);
    let has = |n: &str| offered.iter().find(|(name, _)| name == n);
    let cwd = working_directory(body).unwrap_or_else(|| ".".into());
    let content = match scenario {
        // A different file every turn: a CLI that has to read a file before it overwrites it
        // does not end the loop by refusing.
        Scenario::ToolLoop => format!("turn {}\n", body.to_string().len()),
        _ => CONTENT.to_string(),
    };
    let file = match scenario {
        Scenario::ToolLoop => format!("loop-{}.txt", body.to_string().len()),
        _ => FILE.to_string(),
    };
    if has("Write").is_some() {
        let path = format!("{cwd}/{file}");
        return Some(call(
            "Write",
            json!({ "file_path": path, "content": content }),
        ));
    }
    if has("write").is_some() {
        let path = format!("{cwd}/{file}");
        return Some(call(
            "write",
            json!({ "filePath": path, "content": content }),
        ));
    }
    if let Some((name, freeform)) = has("apply_patch") {
        let added: String = content.lines().map(|l| format!("+{l}\n")).collect();
        let patch = format!("*** Begin Patch\n*** Add File: {file}\n{added}*** End Patch\n");
        let input = if *freeform {
            Value::String(patch)
        } else {
            json!({ "input": patch })
        };
        return Some(Call {
            name: name.clone(),
            input,
            freeform: *freeform,
        });
    }
    let script = format!("printf '%s' '{content}' > {file}");
    if has("exec_command").is_some() {
        return Some(call("exec_command", json!({ "cmd": script })));
    }
    if has("shell").is_some() {
        return Some(call(
            "shell",
            json!({ "command": ["bash", "-lc", script], "workdir": cwd }),
        ));
    }
    None
}

fn call(name: &str, input: Value) -> Call {
    Call {
        name: name.to_string(),
        input,
        freeform: false,
    }
}

/// What aider applies: a SEARCH/REPLACE block creating [`FILE`], then [`ANSWER`].
fn aider_edit() -> String {
    format!("{FILE}\n```\n<<<<<<< SEARCH\n=======\n{CONTENT}>>>>>>> REPLACE\n```\n\n{ANSWER}\n")
}

fn streamed(body: &Value) -> bool {
    body.get("stream").and_then(Value::as_bool).unwrap_or(false)
}

fn model(body: &Value) -> String {
    body.get("model")
        .and_then(Value::as_str)
        .unwrap_or("stand-in")
        .to_string()
}

fn answer(api: Api, body: &Value, turn: Turn) -> Response {
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

fn json_response(status: u16, body: &Value) -> Response {
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

/// Writes a request log line per request seen, for a person reading a failed run.
pub fn describe(seen: &[Seen]) -> String {
    let mut out = Vec::new();
    for s in seen {
        let names: Vec<String> = tools(&s.body).into_iter().map(|(n, _)| n).collect();
        let _ = writeln!(
            out,
            "{} model={} stream={} tools={names:?} tool_result={}",
            s.path,
            model(&s.body),
            streamed(&s.body),
            has_tool_result(&s.body)
        );
    }
    String::from_utf8_lossy(&out).into_owned()
}

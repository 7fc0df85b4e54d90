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

mod answers;
mod websocket;

use answers::{answer, json_response, model, streamed};

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

/// How a stand-in serves besides its scenario.
#[derive(Clone, Debug, Default)]
struct Flavour {
    /// Quote every header of a request with an unknown `anthropic-beta` (issue 46).
    reflect: bool,
    /// Serve chat completions only, as most local servers do (issue 50): a Responses or
    /// Messages call is a 404.
    chat_only: bool,
    /// The models `GET …/models` lists.
    models: Vec<String>,
    /// The file a success writes, when not [`FILE`].
    file: Option<&'static str>,
}

/// The `anthropic-beta` values the reflecting stand-in knows; any other is answered 400 with
/// every header of the request quoted (Anthropic quotes the value it does not know).
const KNOWN_BETAS: &[&str] = &["claude-code-20250219", "oauth-2025-04-20"];

/// What the judge's prompt says (`templates/judge.md.hbs`): a request holding it is the judge's.
const JUDGE_ASKS: &str = "## Your verdict";
/// The verdict a local stand-in gives the judge, one line longer than 80 columns.
pub const VERDICT: &str = "{\"verdict\": \"approve\", \"summary\": \"The change adds a correct sub(a, b) function, as the task asked, and changes nothing else.\", \"findings\": []}";

impl ModelServer {
    /// Listens on a free local port, answering every request with `scenario` (the listener
    /// thread lives as long as the test process).
    pub fn start(scenario: Scenario) -> ModelServer {
        ModelServer::serving(scenario, Flavour::default(), "127.0.0.1:0").expect("bind 127.0.0.1:0")
    }

    /// The same, answering an unknown `anthropic-beta` with a 400 that quotes every header it
    /// got — the credential among them — as an attacker's best reflection would.
    pub fn reflecting(scenario: Scenario) -> ModelServer {
        let flavour = Flavour {
            reflect: true,
            ..Flavour::default()
        };
        ModelServer::serving(scenario, flavour, "127.0.0.1:0").expect("bind 127.0.0.1:0")
    }

    /// A local model server's stand-in at `addr` (issue 50): chat completions only, `model`
    /// listed, a task's worker answered as in [`Scenario::Success`] and the judge with
    /// [`VERDICT`]; the worker's file is `file` (with [`CONTENT`]).
    pub fn local_at(addr: &str, model: &str, file: &'static str) -> std::io::Result<ModelServer> {
        let flavour = Flavour {
            chat_only: true,
            models: vec![model.to_string()],
            file: Some(file),
            ..Flavour::default()
        };
        ModelServer::serving(Scenario::Success, flavour, addr)
    }

    /// A chat-completions-only stand-in on a free port playing `scenario`, `model` listed.
    pub fn chat_only(scenario: Scenario, model: &str) -> ModelServer {
        let flavour = Flavour {
            chat_only: true,
            models: vec![model.to_string()],
            ..Flavour::default()
        };
        ModelServer::serving(scenario, flavour, "127.0.0.1:0").expect("bind 127.0.0.1:0")
    }

    fn serving(scenario: Scenario, flavour: Flavour, addr: &str) -> std::io::Result<ModelServer> {
        let listener = TcpListener::bind(addr)?;
        let addr = listener.local_addr()?;
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let flavour = Arc::new(flavour);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (log, flavour) = (Arc::clone(&log), Arc::clone(&flavour));
                std::thread::spawn(move || serve(scenario, &flavour, &log, stream));
            }
        });
        Ok(ModelServer { addr, seen })
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

fn serve(scenario: Scenario, flavour: &Flavour, log: &Mutex<Vec<Seen>>, stream: TcpStream) {
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
        if flavour.reflect && beta.split(',').any(|b| !KNOWN_BETAS.contains(&b.trim())) {
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
        let response = if flavour.chat_only {
            local(scenario, flavour, &req, &body)
        } else if websocket && req.path.ends_with("/responses") && scenario != Scenario::RateLimited
        {
            let _ = websocket::websocket_session(&mut reader, &mut writer, scenario);
            return;
        } else if websocket && req.path.ends_with("/responses") {
            let mut r = error(Api::Responses, 429);
            r.headers
                .push(("retry-after".into(), RETRY_AFTER.to_string()));
            let _ = write_response(&mut writer, &r, false);
            return;
        } else {
            respond(scenario, &req, &body, FILE)
        };
        if write_response(&mut writer, &response, req.keep_alive).is_err() || !req.keep_alive {
            return;
        }
    }
}

/// What a chat-only local server answers: its models, a chat completion (the judge's
/// [`VERDICT`] when the request is the judge's), and 404 for anything else.
fn local(scenario: Scenario, flavour: &Flavour, req: &Request, body: &Value) -> Response {
    if req.method == "GET" && req.path.ends_with("/models") {
        let data: Vec<Value> = flavour
            .models
            .iter()
            .map(|m| json!({ "id": m, "object": "model", "owned_by": "stand-in" }))
            .collect();
        return json_response(200, &json!({ "object": "list", "data": data }));
    }
    if req.method != "POST" || api_of(&req.path) != Some(Api::Chat) {
        return json_response(
            404,
            &json!({ "error": { "message": format!("File Not Found: {} {}", req.method, req.path), "type": "not_found_error" } }),
        );
    }
    if body.to_string().contains(JUDGE_ASKS) {
        return answer(Api::Chat, body, Turn::Text(VERDICT));
    }
    respond(scenario, req, body, flavour.file.unwrap_or(FILE))
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

fn respond(scenario: Scenario, req: &Request, body: &Value, file: &str) -> Response {
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
        Scenario::Success | Scenario::ToolLoop => match tool_call(body, scenario, file) {
            Some(call) => answer(api, body, Turn::Tool(call)),
            None => answer(api, body, Turn::Text(&aider_edit(file, body))),
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

/// The call that writes `file` with the tool this CLI offers; `None` when it offers none.
fn tool_call(body: &Value, scenario: Scenario, file: &str) -> Option<Call> {
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
        _ => file.to_string(),
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

/// What aider applies: a SEARCH/REPLACE block creating `file`, then [`ANSWER`]; or, when its
/// prompt asks for whole files (its edit format for a model it does not know), `file`'s listing.
fn aider_edit(file: &str, body: &Value) -> String {
    if body.to_string().contains("*file listing*") {
        return format!("{file}\n```\n{CONTENT}```\n\n{ANSWER}\n");
    }
    format!("{file}\n```\n<<<<<<< SEARCH\n=======\n{CONTENT}>>>>>>> REPLACE\n```\n\n{ANSWER}\n")
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

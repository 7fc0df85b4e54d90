//! A local, stateful stand-in for GitHub's REST API, for tests of the GitHub mode.
//!
//! `GithubServer::start("o", "r")` listens on `127.0.0.1:0` (a thread per connection,
//! keep-alive) until dropped, and answers the endpoints opentiger uses with GitHub's JSON
//! shapes (checked against GitHub's OpenAPI description by
//! `tests/github_server.rs::responses_match_githubs_openapi_description`), GitHub's headers
//! (`ETag`, `Last-Modified`, `Link` with absolute URLs, `x-ratelimit-*`), 304s for matching
//! conditional GETs (free, as on GitHub), token auth, and injectable failures (rate limits,
//! 502s). Tests seed and inspect the state directly and observe every request.
//!
//! Not for: git. Branches are names with made-up shas (`set_branch` plays a push); a PR's
//! head branch springs into being when the PR is opened.

mod actions;
mod checks;
pub mod http;
mod issues;
mod pulls;
mod render;
mod routes;
mod seed;
mod state;

use std::collections::VecDeque;
use std::io::{BufReader, BufWriter};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use serde_json::{json, Value};

pub use actions::Dispatched;
use http::{
    etag, etag_matches, failure_reply, http_date, parse_rfc3339, read_request, rfc3339,
    write_response, ReadError, Request, Response,
};
use render::error;
use routes::{dispatch, find, Ctx, Endpoint, Reply};
pub use state::{CheckRun, Comment, Event, Issue, PullView};
use state::{CommitStatus, State};

/// The token `start` expects (`Authorization: Bearer …` or `token …`).
pub const TOKEN: &str = "ghs_opentigerTestToken0000000000000000";

/// A failure to serve instead of the next request(s).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Failure {
    /// 403, `x-ratelimit-remaining: 0` and the window's reset time.
    PrimaryRateLimit,
    /// 403, `retry-after: 60` and GitHub's "secondary rate limit" message.
    SecondaryRateLimit,
    /// 502 Bad Gateway.
    ServerError,
}

/// One request as the server saw it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedRequest {
    pub method: String,
    pub path_and_query: String,
    /// The token it carried (to tell a second accepted token's requests apart).
    pub token: String,
    pub status: u16,
    /// Whether it carried `If-None-Match` or `If-Modified-Since`.
    pub conditional: bool,
}

/// One response, with the OpenAPI path template of the operation that produced it (the raw
/// path when no route matched); `body` is `None` for 204 and 304.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedResponse {
    pub method: String,
    pub route_template: String,
    pub status: u16,
    pub body: Option<Value>,
}

#[derive(Default)]
struct Log {
    requests: Vec<RecordedRequest>,
    responses: Vec<RecordedResponse>,
    failures: VecDeque<Failure>,
}

struct Shared {
    state: Mutex<State>,
    log: Mutex<Log>,
    token: String,
    /// Further tokens accepted (`accept_token`), e.g. a workflow's own next to an App's.
    more_tokens: Mutex<Vec<String>>,
    base: String,
    stop: AtomicBool,
    request_ids: AtomicU64,
    conns: Mutex<Vec<(TcpStream, JoinHandle<()>)>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A test that panicked while holding the lock must not hide its own failure behind ours.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

pub struct GithubServer {
    shared: Arc<Shared>,
    addr: SocketAddr,
    accept: Option<JoinHandle<()>>,
}

impl GithubServer {
    /// A server for `owner/repo` that accepts `TOKEN`.
    pub fn start(owner: &str, repo: &str) -> GithubServer {
        GithubServer::with_token(owner, repo, TOKEN)
    }

    pub fn with_token(owner: &str, repo: &str, token: &str) -> GithubServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().expect("local addr");
        let shared = Arc::new(Shared {
            state: Mutex::new(State::new(owner, repo)),
            log: Mutex::new(Log::default()),
            token: token.to_string(),
            more_tokens: Mutex::new(Vec::new()),
            base: format!("http://{addr}"),
            stop: AtomicBool::new(false),
            request_ids: AtomicU64::new(0),
            conns: Mutex::new(Vec::new()),
        });
        let accept_shared = Arc::clone(&shared);
        let accept = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if accept_shared.stop.load(Ordering::SeqCst) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                let Ok(handle_stream) = stream.try_clone() else {
                    continue;
                };
                let conn_shared = Arc::clone(&accept_shared);
                let thread = std::thread::spawn(move || serve(&conn_shared, handle_stream));
                lock(&accept_shared.conns).push((stream, thread));
            }
        });
        GithubServer {
            shared,
            addr,
            accept: Some(accept),
        }
    }

    /// Puts a bare git repository behind the API: PR heads are read from its branches and a
    /// merge is a real squash commit on its base branch.
    pub fn with_git(self, bare: &Path) -> GithubServer {
        self.state().git_dir = Some(bare.to_path_buf());
        self
    }

    /// `http://127.0.0.1:PORT`, the API root (what octocrab calls the base URI).
    pub fn base_url(&self) -> String {
        self.shared.base.clone()
    }

    pub fn token(&self) -> &str {
        &self.shared.token
    }

    /// Accepts `token` too (its requests are recorded with it).
    pub fn accept_token(&self, token: &str) {
        lock(&self.shared.more_tokens).push(token.to_string());
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.shared.state)
    }

    // --- faults and observation ---

    /// Serves `failure` instead of each of the next `n` requests.
    pub fn fail_next(&self, n: usize, failure: Failure) {
        lock(&self.shared.log)
            .failures
            .extend(std::iter::repeat_n(failure, n));
    }

    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.shared.log).requests.clone()
    }

    pub fn request_count(&self) -> usize {
        lock(&self.shared.log).requests.len()
    }

    /// Forgets the requests and responses seen so far (not the state, not the rate limit).
    pub fn reset_counts(&self) {
        let mut log = lock(&self.shared.log);
        log.requests.clear();
        log.responses.clear();
    }

    pub fn responses(&self) -> Vec<RecordedResponse> {
        lock(&self.shared.log).responses.clone()
    }

    /// Writes each response seen as `NNNN.json` (`{method, route_template, status, body}`), the
    /// input of `tests/openapi/validate.mjs`; returns how many.
    pub fn write_responses(&self, dir: &Path) -> usize {
        let responses = self.responses();
        for (i, r) in responses.iter().enumerate() {
            let record = json!({
                "method": r.method,
                "route_template": r.route_template,
                "status": r.status,
                "body": r.body,
            });
            let text = serde_json::to_vec_pretty(&record).expect("JSON");
            std::fs::write(dir.join(format!("{i:04}.json")), text)
                .expect("write recorded response");
        }
        responses.len()
    }

    /// What `x-ratelimit-remaining` says now.
    pub fn rate_remaining(&self) -> u64 {
        self.state().rate.remaining()
    }

    pub fn set_rate_remaining(&self, remaining: u64) {
        let mut s = self.state();
        s.rate.used = s.rate.limit.saturating_sub(remaining);
    }

    // --- the clock ---

    /// Sets the server's clock (RFC 3339); it moves only when told to.
    pub fn set_now(&self, now: &str) {
        self.state().now =
            parse_rfc3339(now).unwrap_or_else(|| panic!("not an RFC 3339 time: {now}"));
    }

    pub fn advance(&self, seconds: i64) {
        self.state().now += seconds;
    }

    pub fn now(&self) -> String {
        rfc3339(self.state().now)
    }
}

impl Drop for GithubServer {
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::SeqCst);
        // Wake the accept loop so it sees the flag.
        let _ = TcpStream::connect(self.addr);
        if let Some(accept) = self.accept.take() {
            let _ = accept.join();
        }
        let conns = std::mem::take(&mut *lock(&self.shared.conns));
        for (stream, thread) in conns {
            let _ = stream.shutdown(Shutdown::Both);
            let _ = thread.join();
        }
    }
}

/// One connection: requests until the client closes, asks to, or the server stops.
fn serve(shared: &Shared, stream: TcpStream) {
    let Ok(write_half) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    let mut writer = BufWriter::new(write_half);
    while !shared.stop.load(Ordering::SeqCst) {
        let req = match read_request(&mut reader, &mut writer) {
            Ok(req) => req,
            Err(ReadError::Closed) => return,
            Err(ReadError::Bad(why)) => {
                let body = serde_json::to_vec(&error(400, &why)).expect("JSON");
                let r = Response {
                    status: 400,
                    headers: vec![],
                    body: Some(body),
                };
                let _ = write_response(&mut writer, &r, false);
                return;
            }
        };
        let response = respond(shared, &req);
        if write_response(&mut writer, &response, req.keep_alive).is_err() || !req.keep_alive {
            return;
        }
    }
}

fn authorized(shared: &Shared, req: &Request) -> bool {
    req.bearer()
        .is_some_and(|t| t == shared.token || lock(&shared.more_tokens).contains(&t))
}

/// Everything around a handler: faults, auth, the rate limit, ETags and 304s, headers, the log.
fn respond(shared: &Shared, req: &Request) -> Response {
    let conditional =
        req.header("if-none-match").is_some() || req.header("if-modified-since").is_some();
    let route = find(&req.method, &req.path);
    let template = route
        .as_ref()
        .map_or(req.path.clone(), |(_, t, _)| t.to_string());
    let failure = lock(&shared.log).failures.pop_front();
    let mut s = lock(&shared.state);
    s.follow_pushes();
    if s.now >= s.rate.reset {
        s.rate.used = 0;
        s.rate.reset = s.now + 3600;
    }
    // Whether this response uses up one request of the window (`/rate_limit` never does).
    let mut counted = false;
    let mut exhausted = false;
    let reply = if let Some(f) = failure {
        exhausted = f == Failure::PrimaryRateLimit;
        failure_reply(f)
    } else if !authorized(shared, req) {
        Reply::error(401, "Bad credentials")
    } else {
        match route {
            None => {
                counted = true;
                Reply::error(404, "Not Found")
            }
            Some((endpoint, _, _))
                if endpoint != Endpoint::RateLimit && s.rate.remaining() == 0 =>
            {
                exhausted = true;
                failure_reply(Failure::PrimaryRateLimit)
            }
            Some((endpoint, _, params)) => {
                counted = endpoint != Endpoint::RateLimit;
                dispatch(
                    endpoint,
                    Ctx {
                        s: &mut s,
                        base: &shared.base,
                        req,
                        params,
                    },
                )
            }
        }
    };

    let bytes = reply
        .body
        .as_ref()
        .map(|b| serde_json::to_vec(b).expect("JSON"));
    let last_modified = http_date(reply.last_modified.unwrap_or(s.now));
    let mut status = reply.status;
    let mut headers: Vec<(String, String)> = Vec::new();
    if let Some(bytes) = &bytes {
        let tag = etag(bytes);
        // GitHub: a conditional GET that matches costs nothing and has no body.
        let not_modified = req.method == "GET"
            && status == 200
            && match (req.header("if-none-match"), req.header("if-modified-since")) {
                (Some(inm), _) => etag_matches(inm, &tag),
                (None, Some(ims)) => ims == last_modified,
                (None, None) => false,
            };
        if not_modified {
            status = 304;
            counted = false;
        } else {
            headers.push((
                "Content-Type".into(),
                "application/json; charset=utf-8".into(),
            ));
        }
        headers.push(("ETag".into(), tag));
        headers.push(("Last-Modified".into(), last_modified));
    }
    if counted {
        s.rate.used += 1;
    }
    let used = if exhausted { s.rate.limit } else { s.rate.used };
    let remaining = if exhausted { 0 } else { s.rate.remaining() };
    headers.extend([
        (
            "Cache-Control".to_string(),
            "private, max-age=60, s-maxage=60".to_string(),
        ),
        (
            "Vary".into(),
            "Accept, Authorization, Cookie, X-GitHub-OTP".into(),
        ),
        ("x-github-api-version-selected".into(), "2022-11-28".into()),
        (
            "x-github-media-type".into(),
            "github.v3; format=json".into(),
        ),
        (
            "x-github-request-id".into(),
            format!(
                "0000:{:04X}",
                shared.request_ids.fetch_add(1, Ordering::SeqCst)
            ),
        ),
        ("x-ratelimit-limit".into(), s.rate.limit.to_string()),
        ("x-ratelimit-remaining".into(), remaining.to_string()),
        ("x-ratelimit-reset".into(), s.rate.reset.to_string()),
        ("x-ratelimit-used".into(), used.to_string()),
        ("x-ratelimit-resource".into(), "core".into()),
    ]);
    headers.extend(reply.headers);
    drop(s);

    let body = if status == 304 || status == 204 {
        None
    } else {
        bytes
    };
    let json_body = body
        .as_ref()
        .map(|b| serde_json::from_slice(b).expect("our own JSON"));
    let mut log = lock(&shared.log);
    log.requests.push(RecordedRequest {
        method: req.method.clone(),
        path_and_query: req.target.clone(),
        token: req.bearer().unwrap_or_default(),
        status,
        conditional,
    });
    log.responses.push(RecordedResponse {
        method: req.method.clone(),
        route_template: template,
        status,
        body: json_body,
    });
    Response {
        status,
        headers,
        body,
    }
}

/// `opentiger` run in `repo` at `now` against this stand-in, as a github-mode tick sees it in CI:
/// its token and API URL, none of the runner's own variables. Callers add what their scenario
/// needs (`.env(..)`) and the arguments.
pub fn opentiger_against(
    server: &GithubServer,
    repo: &std::path::Path,
    now: &str,
) -> std::process::Command {
    let repository = {
        let s = server.state();
        format!("{}/{}", s.owner, s.repo)
    };
    let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_opentiger"));
    cmd.arg("--repo")
        .arg(repo)
        .args(["--now", now])
        .env("GITHUB_TOKEN", server.token())
        .env("GITHUB_API_URL", server.base_url())
        .env("GITHUB_REPOSITORY", repository)
        .env_remove("OPENTIGER_GITHUB_TOKEN")
        .env_remove("GITHUB_RUN_ID")
        .env_remove("GITHUB_STEP_SUMMARY");
    cmd
}

/// The stdout of a tick that must have succeeded; its output in the failure message otherwise.
pub fn tick_output(out: std::process::Output, now: &str) -> String {
    assert!(
        out.status.success(),
        "tick at {now}: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

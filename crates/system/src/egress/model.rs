//! A model call (`/<route>/…`, the agent's base URL on the proxy) and what may pass through it
//! (issues 37 and 46):
//!
//! - only the endpoints of its provider's route (`providers::Provider::endpoints`: generation,
//!   token counting, the model list); any other path is refused, naming it; a websocket asked
//!   of a provider that takes none, or refused by the endpoint as one it has not (400, 404,
//!   405, 501), is answered 426 at once (codex then uses HTTP instead of retrying for seconds,
//!   issue 50);
//! - the runner's key in the provider's credential slot, nowhere else (`credential`);
//! - a body read whole (at most [`BODY_MAX`], within [`BODY_TIMEOUT`]) and, for a generation,
//!   refused when it asks for a tool the provider runs itself (`tools`);
//! - a Responses call to a provider of chat completions only translated, both ways
//!   (`translate`), and a chat call to one asked for its whole answer (not every chat server
//!   counts tokens in a stream) and streamed back as asked: the meter reads the chat answer,
//!   once, before it is reshaped;
//! - the provider's own headers and query parameters added (`providers.<name>.headers`), and
//!   its cap on an answer's tokens (`max_output_tokens`);
//! - the answer streamed back through the meter (`meter`) and the secret filter (`scrub`):
//!   SSE, JSON, or websocket frames after an upgrade (`websocket`); a 429 or 529 recorded as a
//!   quota hit (its `retry-after` kept); once the run's budget is spent, the call is refused in
//!   the provider's own error shape.
//!
//! Not here: serving the connection (`proxy`), what a session allows or has spent (`session`).

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderValue, Method, Request, Response, StatusCode};
use http_body::{Body, Frame};
use http_body_util::BodyExt;
use hyper::body::Incoming;

use super::credential;
use super::meter::{AnswerMeter, Framing};
use super::providers::{Call, Provider, Verb};
use super::reply::{api_error, full, BoxError, ProxyBody};
use super::scrub::{Scrubber, Secrets};
use super::session::{Admission, Flight, Held, QuotaHit, Route, Session, BODY_MAX};
use super::translate::{self, Reshape, ToResponses};
use super::upstream::{self, is_websocket, strip_hop_by_hop};

/// The longest a model call's body may take to arrive.
pub const BODY_TIMEOUT: Duration = Duration::from_secs(60);

/// Forwards one model call for `route`, or refuses it.
pub async fn call(
    mut req: Request<Incoming>,
    session: Arc<Session>,
    route: Route,
    admission: Arc<Admission>,
) -> Response<ProxyBody> {
    let provider = route.provider.clone();
    let error =
        |status, code: &str, words: &str| api_error(&session, &provider, status, code, words);
    if let Some(words) = session.budget_spent() {
        return error(
            StatusCode::FORBIDDEN,
            "opentiger_budget_spent",
            &format!("opentiger: {words}"),
        );
    }
    let websocket = is_websocket(req.headers());
    let verb = if req.method() == Method::GET {
        Some(if websocket {
            Verb::WebSocket
        } else {
            Verb::Get
        })
    } else if req.method() == Method::POST {
        Some(Verb::Post)
    } else {
        None
    };
    let path = match &req.uri().path()[1 + provider.name.len()..] {
        "" => "/".to_string(),
        path => path.to_string(),
    };
    if websocket && !provider.websocket {
        // 426: codex falls back to HTTP at once (a 404 or 501 it retries for seconds).
        return error(
            StatusCode::UPGRADE_REQUIRED,
            "opentiger_websocket_refused",
            &format!(
                "{} takes no websocket through opentiger's proxy; use HTTP",
                provider.name
            ),
        );
    }
    let Some(endpoint) = verb.and_then(|v| provider.endpoint(v, &path)).cloned() else {
        let shown: String = path.chars().take(200).collect();
        return error(
            StatusCode::NOT_FOUND,
            "opentiger_path_refused",
            &format!(
                "opentiger's proxy does not forward `{} {shown}` to {}: its model route carries model calls only ({})",
                req.method(),
                provider.authority(),
                provider.endpoint_list()
            ),
        );
    };
    if let Some(encoding) = encoded(req.headers()) {
        return error(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "opentiger_encoding_refused",
            &format!("opentiger's proxy reads a model call's body to check the tools it asks for; send it without `content-encoding: {encoding}`"),
        );
    }
    let client_upgrade = websocket.then(|| hyper::upgrade::on(&mut req));
    let (mut parts, body) = req.into_parts();
    let placeholders: Vec<&str> = session
        .spec
        .routes
        .iter()
        .flat_map(|r| r.keys.iter().map(|(_, p, _)| p.as_str()))
        .collect();
    let query = match credential::place_key(
        &mut parts.headers,
        &path,
        parts.uri.query(),
        &route,
        &placeholders,
    ) {
        Ok(query) => query.map(|q| format!("?{q}")).unwrap_or_default(),
        Err(misplaced) => {
            return error(
                StatusCode::BAD_REQUEST,
                "opentiger_key_misplaced",
                &misplaced.message(&route),
            )
        }
    };
    let (body, held) = match read_body(body, &session).await {
        Ok(read) => read,
        Err((status, words)) => return error(status, "opentiger_body_refused", &words),
    };
    let generation = matches!(endpoint.call, Call::Generate | Call::Translated);
    let mut reshape = None;
    let (mut body, mut path) = (body, path);
    if generation && !body.is_empty() {
        let Ok(value) = serde_json::from_slice::<serde_json::Value>(&body) else {
            return error(
                StatusCode::BAD_REQUEST,
                "opentiger_body_refused",
                "opentiger's proxy reads a model call's body as JSON, to check the tools it asks for; this one is not JSON",
            );
        };
        if let Some(refusal) = super::tools::refused(&value, &session.spec.provider_tools) {
            return error(
                StatusCode::FORBIDDEN,
                "opentiger_tool_refused",
                &refusal.message(),
            );
        }
        if endpoint.call == Call::Translated {
            let chat = match translate::to_chat(&value) {
                Ok(chat) => chat,
                Err(why) => {
                    return error(
                        StatusCode::BAD_REQUEST,
                        "opentiger_translation_refused",
                        &format!("opentiger's proxy translates Responses calls to {}'s chat completions; this one it cannot: {why}", provider.name),
                    )
                }
            };
            body = Bytes::from(chat.body.to_string());
            path = format!("{}/chat/completions", provider.base_path);
            parts.headers.remove(header::CONTENT_LENGTH);
            reshape = Some(Reshape::responses(ToResponses::new(
                &chat.model,
                chat.stream,
                chat.custom,
                chrono::Utc::now().timestamp(),
            )));
        } else if let Some(whole) = whole_answer(&provider, &path, &value) {
            // Asked whole, so it carries the server's counts; streamed back as asked.
            body = Bytes::from(whole.to_string());
            parts.headers.remove(header::CONTENT_LENGTH);
            reshape = Some(Reshape::chat_stream());
        }
        if provider.max_output_tokens.is_some() {
            if let Ok(mut upstream) = serde_json::from_slice::<serde_json::Value>(&body) {
                if provider.cap_output(&path, &mut upstream) {
                    body = Bytes::from(upstream.to_string());
                    parts.headers.remove(header::CONTENT_LENGTH);
                }
            }
        }
    }
    let base = match session.mapped(&provider.host) {
        Some(addr) => format!("http://{addr}"),
        None => provider.origin(),
    };
    let query = with_params(&query, &provider.query);
    parts.uri = match format!("{base}{path}{query}").parse() {
        Ok(uri) => uri,
        Err(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "opentiger_path_refused",
                "a path the proxy cannot read",
            )
        }
    };
    strip_hop_by_hop(&mut parts.headers, websocket);
    // Answers are read as they pass: uncompressed, and websocket messages unextended.
    parts.headers.remove(header::ACCEPT_ENCODING);
    parts.headers.remove(header::SEC_WEBSOCKET_EXTENSIONS);
    match HeaderValue::from_str(&provider.authority()) {
        Ok(host) => parts.headers.insert(header::HOST, host),
        Err(_) => parts.headers.remove(header::HOST),
    };
    for (name, value) in &provider.headers {
        if let (Ok(name), Ok(value)) = (
            http::HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            parts.headers.insert(name, value);
        }
    }
    let flight = session.begin();
    let sent = upstream::client()
        .request(Request::from_parts(parts, full(body)))
        .await;
    drop(held);
    let res = match sent {
        Ok(res) => res,
        Err(e) => {
            return error(
                StatusCode::BAD_GATEWAY,
                "opentiger_upstream_failed",
                &format!(
                    "opentiger's proxy could not reach {}: {e}",
                    provider.authority()
                ),
            );
        }
    };
    answer(
        res,
        &provider,
        session,
        flight,
        client_upgrade,
        admission,
        reshape,
    )
}

/// A streamed chat call to a provider of `api: openai-chat` as a call for the whole answer
/// (`translate::reshape`: not every chat server counts tokens in a stream); `None` for any
/// other call.
fn whole_answer(
    provider: &Provider,
    path: &str,
    call: &serde_json::Value,
) -> Option<serde_json::Value> {
    let chat = provider.api == crate::config::ProviderApi::OpenaiChat
        && !provider.built_in
        && path == format!("{}/chat/completions", provider.base_path);
    if !chat || call.get("stream").and_then(serde_json::Value::as_bool) != Some(true) {
        return None;
    }
    let mut whole = call.clone();
    whole["stream"] = serde_json::Value::Bool(false);
    if let Some(object) = whole.as_object_mut() {
        object.remove("stream_options");
    }
    Some(whole)
}

/// `query` (`?a=b`, or empty) with the provider's own parameters added, each value
/// %-encoded.
fn with_params(query: &str, params: &[(String, String)]) -> String {
    if params.is_empty() {
        return query.to_string();
    }
    let added: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{k}={}", super::credential::percent_encoded(v)))
        .collect();
    match query.strip_prefix('?') {
        Some(q) if !q.is_empty() => format!("?{q}&{}", added.join("&")),
        _ => format!("?{}", added.join("&")),
    }
}

/// The request's body, whole: at most [`BODY_MAX`] bytes, within [`BODY_TIMEOUT`], held against
/// the session's [`super::session::BUFFERED_MAX`].
async fn read_body(
    mut body: Incoming,
    session: &Arc<Session>,
) -> Result<(Bytes, Held), (StatusCode, String)> {
    let too_large = || {
        (
            StatusCode::PAYLOAD_TOO_LARGE,
            format!(
                "opentiger's proxy takes model calls of at most {} MiB",
                BODY_MAX >> 20
            ),
        )
    };
    if body.size_hint().lower() > BODY_MAX as u64 {
        return Err(too_large());
    }
    let mut held = session.hold();
    let mut bytes = Vec::new();
    let read = tokio::time::timeout(BODY_TIMEOUT, async {
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| {
                (
                    StatusCode::BAD_REQUEST,
                    format!("opentiger's proxy could not read the model call's body: {e}"),
                )
            })?;
            // Trailers carry no body.
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if bytes.len() + data.len() > BODY_MAX {
                return Err(too_large());
            }
            if !held.add(data.len()) {
                return Err((
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!(
                        "opentiger's proxy holds at most {} MiB of model calls for a run at once; try again when one has been answered",
                        super::session::BUFFERED_MAX >> 20
                    ),
                ));
            }
            bytes.extend_from_slice(&data);
        }
        Ok(())
    })
    .await;
    match read {
        Ok(Ok(())) => Ok((Bytes::from(bytes), held)),
        Ok(Err(refused)) => Err(refused),
        Err(_) => Err((
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "opentiger's proxy waited {} s for the model call's body",
                BODY_TIMEOUT.as_secs()
            ),
        )),
    }
}

/// The model API's answer, passed back: quota hits kept, headers and body filtered, a
/// websocket pumped.
fn answer(
    mut res: Response<Incoming>,
    provider: &Provider,
    session: Arc<Session>,
    flight: Flight,
    client_upgrade: Option<hyper::upgrade::OnUpgrade>,
    admission: Arc<Admission>,
    reshape: Option<Reshape>,
) -> Response<ProxyBody> {
    let status = res.status();
    if status == StatusCode::TOO_MANY_REQUESTS || status.as_u16() == 529 {
        session.quota(QuotaHit {
            status: status.as_u16(),
            host: provider.authority(),
            retry_after: retry_after(res.headers()),
        });
    }
    let secrets = session.secrets().clone();
    scrub_headers(res.headers_mut(), &secrets);
    if client_upgrade.is_some() && no_websocket_here(status) {
        // The endpoint has no websocket: 426 is what makes codex use HTTP at once (a 404 or 501
        // it tries seven times over 6 s).
        return api_error(
            &session,
            provider,
            StatusCode::UPGRADE_REQUIRED,
            "opentiger_websocket_refused",
            &format!(
                "{} answered {} to a websocket: it takes none; use HTTP",
                provider.authority(),
                status.as_u16()
            ),
        );
    }
    if let (StatusCode::SWITCHING_PROTOCOLS, Some(client_upgrade)) = (status, client_upgrade) {
        drop(flight);
        strip_hop_by_hop(res.headers_mut(), true);
        let upstream_upgrade = hyper::upgrade::on(&mut res);
        let pump = super::websocket::pump(client_upgrade, upstream_upgrade, session.clone());
        session.spawn(async move {
            // The websocket counts as the connection it was.
            let _admission = admission;
            pump.await;
        });
        let (parts, _) = res.into_parts();
        return Response::from_parts(parts, full(Bytes::new()));
    }
    strip_hop_by_hop(res.headers_mut(), false);
    if let Some(encoding) = encoded(res.headers()) {
        return api_error(
            &session,
            provider,
            StatusCode::BAD_GATEWAY,
            "opentiger_encoding_refused",
            &format!("{} answered with `content-encoding: {encoding}`, which opentiger's proxy cannot read to keep secrets out of it", provider.authority()),
        );
    }
    let framing = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map_or(Framing::Other, Framing::of_content_type);
    // A chat answer, whole or streamed, is reshaped for the client; an error passes as it is.
    let reshape = reshape
        .filter(|_| status.is_success() && matches!(framing, Framing::Sse | Framing::Json))
        .map(|mut r| {
            r.begin(framing == Framing::Json);
            r
        });
    if let Some(r) = &reshape {
        let headers = res.headers_mut();
        headers.remove(header::CONTENT_LENGTH);
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static(r.content_type()),
        );
    }
    res.map(|inner| {
        Answer {
            inner,
            meter: Some(AnswerMeter::new(framing)),
            reshape,
            scrubber: Scrubber::new(secrets),
            trailers: None,
            ended: false,
            session,
            flight: Some(flight),
        }
        .boxed()
    })
}

/// Whether `status`, answering a websocket upgrade, says the endpoint has no websocket there
/// (not a quota, a key or a server error, which pass as they are).
fn no_websocket_here(status: StatusCode) -> bool {
    matches!(status.as_u16(), 400 | 404 | 405 | 426 | 501)
}

/// The `content-encoding` of a message, unless none or `identity`: a body the proxy cannot read.
fn encoded(headers: &HeaderMap) -> Option<String> {
    headers
        .get(header::CONTENT_ENCODING)
        .filter(|e| !e.as_bytes().eq_ignore_ascii_case(b"identity"))
        .map(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// Header values that hold a secret, replaced whole.
fn scrub_headers(headers: &mut HeaderMap, secrets: &Secrets) {
    for value in headers.values_mut() {
        if secrets.in_bytes(value.as_bytes()) {
            *value = HeaderValue::from_static("[REDACTED]");
        }
    }
}

/// `retry-after` in seconds (a number, or an HTTP date from now).
fn retry_after(headers: &HeaderMap) -> Option<u64> {
    let value = headers.get(header::RETRY_AFTER)?.to_str().ok()?.trim();
    if let Ok(secs) = value.parse::<f64>() {
        return (secs.is_finite() && secs >= 0.0).then(|| secs.ceil() as u64);
    }
    let at = chrono::DateTime::parse_from_rfc2822(value).ok()?;
    let secs = (at.timestamp() - chrono::Utc::now().timestamp()).max(0);
    u64::try_from(secs).ok()
}

/// A model API's answer passing through: metered, reshaped (a chat answer as the stream or
/// the Responses events the client asked for), then filtered, as it goes.
struct Answer {
    inner: Incoming,
    meter: Option<AnswerMeter>,
    reshape: Option<Reshape>,
    scrubber: Scrubber,
    /// Trailers waiting for the filter's last bytes to pass first.
    trailers: Option<HeaderMap>,
    ended: bool,
    session: Arc<Session>,
    /// The request stays in flight until its answer ends.
    flight: Option<Flight>,
}

impl Answer {
    fn finish(&mut self) {
        if let Some(meter) = self.meter.take() {
            self.session.add_usage(meter.finish());
        }
        self.flight.take();
    }

    /// The reshaped answer's and the filter's last bytes, then the trailers, then the end.
    fn drain(&mut self) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        if let Some(mut reshape) = self.reshape.take() {
            let last = reshape.finish();
            self.scrubber.content(&last);
        }
        let rest = self.scrubber.finish();
        if !rest.is_empty() {
            return Poll::Ready(Some(Ok(Frame::data(rest.into()))));
        }
        if let Some(mut trailers) = self.trailers.take() {
            scrub_headers(&mut trailers, self.session.secrets());
            return Poll::Ready(Some(Ok(Frame::trailers(trailers))));
        }
        Poll::Ready(None)
    }
}

impl Drop for Answer {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Body for Answer {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            if this.ended {
                return this.drain();
            }
            match Pin::new(&mut this.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(data) => {
                        if let Some(meter) = this.meter.as_mut() {
                            meter.feed(&data);
                            this.session.add_usage(meter.take());
                        }
                        this.session.touch();
                        match this.reshape.as_mut() {
                            Some(r) => {
                                let out = r.feed(&data);
                                this.scrubber.content(&out);
                            }
                            None => this.scrubber.content(&data),
                        }
                        let out = this.scrubber.take();
                        if !out.is_empty() {
                            return Poll::Ready(Some(Ok(Frame::data(out.into()))));
                        }
                    }
                    Err(frame) => {
                        this.trailers = frame.into_trailers().ok();
                    }
                },
                Poll::Ready(Some(Err(e))) => {
                    this.finish();
                    return Poll::Ready(Some(Err(e.into())));
                }
                Poll::Ready(None) => {
                    this.finish();
                    this.ended = true;
                }
                Poll::Pending => return Poll::Pending,
            }
        }
    }
}

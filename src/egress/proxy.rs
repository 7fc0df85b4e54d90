//! The proxy's HTTP side (hyper): what one connection from an agent or a check may do.
//!
//! - `CONNECT host:port` (HTTPS through `HTTPS_PROXY`): a tunnel when the host is on the
//!   allow list, else 403 naming the configuration line that would allow it (recorded).
//! - `GET http://host/…` (plain HTTP through `HTTP_PROXY`): forwarded when allowed, else 403.
//! - `/<route>/…` (the agent's base URL, e.g. `/anthropic/v1/messages`): forwarded to that
//!   model API over https with the placeholder key replaced by the real one; the answer streams
//!   back through an [`AnswerMeter`] (SSE, JSON, or websocket frames after an upgrade); a 429
//!   or 529 is recorded as a quota hit (its `retry-after` kept); once the run's budget is
//!   spent, the call is refused with an error in the provider's own shape.
//!
//! Not here: what a session allows or has spent (`session`), where upstream is (`upstream`).

use std::convert::Infallible;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use http_body::{Body, Frame, SizeHint};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

use super::meter::{AnswerMeter, Framing};
use super::providers::Provider;
use super::session::{QuotaHit, Route, Session};
use super::upstream;

type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub type ProxyBody = BoxBody<Bytes, BoxError>;

/// Serves `listener` for `session` until the task is aborted.
pub async fn serve(listener: TcpListener, session: Arc<Session>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(connection(stream, session.clone()));
            }
            Err(e) => {
                tracing::debug!(error = %e, "the proxy could not accept a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

async fn connection(stream: TcpStream, session: Arc<Session>) {
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |req| {
        let session = session.clone();
        async move { Ok::<_, Infallible>(handle(req, session).await) }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
    if let Err(e) = served {
        tracing::debug!(error = %e, "a proxy connection ended with an error");
    }
}

async fn handle(req: Request<Incoming>, session: Arc<Session>) -> Response<ProxyBody> {
    session.touch();
    if req.method() == Method::CONNECT {
        return connect(req, session).await;
    }
    if req.uri().authority().is_some() {
        return forward_plain(req, session).await;
    }
    let route = req
        .uri()
        .path()
        .trim_start_matches('/')
        .split('/')
        .next()
        .unwrap_or("")
        .to_string();
    match session.route(&route).cloned() {
        Some(route) => model(req, session, route).await,
        None => {
            let routes: Vec<String> = session
                .spec
                .routes
                .iter()
                .map(|r| format!("/{}/", r.provider.route))
                .collect();
            text(
                StatusCode::NOT_FOUND,
                format!(
                    "opentiger's proxy: no model API is routed under /{route}/ for this agent (routed: {})",
                    if routes.is_empty() { "none".to_string() } else { routes.join(", ") }
                ),
            )
        }
    }
}

fn text(status: StatusCode, body: String) -> Response<ProxyBody> {
    let mut res = Response::new(full(body));
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res
}

fn full(body: impl Into<Bytes>) -> ProxyBody {
    Full::new(body.into())
        .map_err(|never| match never {})
        .boxed()
}

/// 403 for a host not on the allow list, naming the line that would allow it.
fn refused(session: &Session, host: &str, port: u16) -> Response<ProxyBody> {
    let by = session.spec.user.key();
    let entry = match port {
        443 | 80 => host.to_string(),
        p => format!("{host}:{p}"),
    };
    text(
        StatusCode::FORBIDDEN,
        format!(
            "opentiger's proxy refused {host}:{port}: it is not on the {by}'s allow list. To allow it, add to .opentiger.yml (into its `sandbox:` when it has one):\n{}\n",
            crate::model::network::allow_yaml(by, &entry)
        ),
    )
}

async fn connect(req: Request<Incoming>, session: Arc<Session>) -> Response<ProxyBody> {
    let Some(authority) = req.uri().authority().cloned() else {
        return text(
            StatusCode::BAD_REQUEST,
            "CONNECT needs host:port".to_string(),
        );
    };
    let (host, port) = (
        authority.host().to_string(),
        authority.port_u16().unwrap_or(443),
    );
    if !session.allows(&host, port) {
        return refused(&session, &host, port);
    }
    let target = match session.mapped(&host) {
        Some(addr) => addr.to_string(),
        None => format!("{host}:{port}"),
    };
    let mut upstream = match TcpStream::connect(&target).await {
        Ok(s) => s,
        Err(e) => {
            return text(
                StatusCode::BAD_GATEWAY,
                format!("opentiger's proxy could not reach {host}:{port}: {e}"),
            )
        }
    };
    tokio::spawn(async move {
        if let Ok(upgraded) = hyper::upgrade::on(req).await {
            let mut client = TokioIo::new(upgraded);
            let _ = tokio::io::copy_bidirectional(&mut client, &mut upstream).await;
        }
    });
    Response::new(full(Bytes::new()))
}

async fn forward_plain(req: Request<Incoming>, session: Arc<Session>) -> Response<ProxyBody> {
    let uri = req.uri().clone();
    let host = uri.host().unwrap_or_default().to_string();
    let port = uri.port_u16().unwrap_or(80);
    if uri.scheme_str() != Some("http") {
        return text(
            StatusCode::BAD_REQUEST,
            "opentiger's proxy forwards plain http only; use CONNECT (HTTPS_PROXY) for https"
                .to_string(),
        );
    }
    if !session.allows(&host, port) {
        return refused(&session, &host, port);
    }
    let (mut parts, body) = req.into_parts();
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let base = match session.mapped(&host) {
        Some(addr) => format!("http://{addr}"),
        None => format!("http://{host}:{port}"),
    };
    parts.uri = match format!("{base}{path}").parse() {
        Ok(uri) => uri,
        Err(_) => {
            return text(
                StatusCode::BAD_REQUEST,
                "a URI the proxy cannot read".to_string(),
            )
        }
    };
    strip_hop_by_hop(&mut parts.headers, false);
    if let Ok(v) = HeaderValue::from_str(&host) {
        parts.headers.insert(header::HOST, v);
    }
    match upstream::client()
        .request(Request::from_parts(parts, body))
        .await
    {
        Ok(res) => res.map(|b| b.map_err(BoxError::from).boxed()),
        Err(e) => text(
            StatusCode::BAD_GATEWAY,
            format!("opentiger's proxy could not reach {host}:{port}: {e}"),
        ),
    }
}

/// Headers of one connection, not of the request (RFC 9110 §7.6.1); a websocket upgrade keeps
/// its `connection` and `upgrade`.
fn strip_hop_by_hop(headers: &mut HeaderMap, websocket: bool) {
    let named: Vec<HeaderName> = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .filter_map(|n| HeaderName::from_bytes(n.trim().as_bytes()).ok())
        .filter(|n| !(websocket && n == header::UPGRADE))
        .collect();
    for name in named {
        headers.remove(name);
    }
    for name in [
        "proxy-connection",
        "keep-alive",
        "proxy-authenticate",
        "proxy-authorization",
        "te",
        "trailer",
        "transfer-encoding",
    ] {
        headers.remove(name);
    }
    if !websocket {
        headers.remove(header::CONNECTION);
        headers.remove(header::UPGRADE);
    }
}

fn is_websocket(headers: &HeaderMap) -> bool {
    headers
        .get(header::UPGRADE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.eq_ignore_ascii_case("websocket"))
}

/// `text` with every placeholder of `route` replaced by its key.
fn with_keys(text: &str, route: &Route) -> String {
    let mut out = text.to_string();
    for (_, placeholder, key) in &route.keys {
        if out.contains(placeholder.as_str()) {
            out = out.replace(placeholder.as_str(), key);
        }
    }
    out
}

async fn model(
    mut req: Request<Incoming>,
    session: Arc<Session>,
    route: Route,
) -> Response<ProxyBody> {
    let provider = route.provider;
    if let Some(words) = session.budget_spent() {
        return budget_refusal(provider, &words);
    }
    let websocket = is_websocket(req.headers());
    let client_upgrade = websocket.then(|| hyper::upgrade::on(&mut req));
    let (mut parts, body) = req.into_parts();
    let path = parts.uri.path()[1 + provider.route.len()..].to_string();
    let path = if path.is_empty() {
        "/".to_string()
    } else {
        path
    };
    let query = parts
        .uri
        .query()
        .map(|q| format!("?{}", with_keys(q, &route)))
        .unwrap_or_default();
    let base = match session.mapped(provider.host) {
        Some(addr) => format!("http://{addr}"),
        None => format!("https://{}", provider.host),
    };
    parts.uri = match format!("{base}{path}{query}").parse() {
        Ok(uri) => uri,
        Err(_) => {
            return text(
                StatusCode::BAD_REQUEST,
                "a path the proxy cannot read".to_string(),
            )
        }
    };
    strip_hop_by_hop(&mut parts.headers, websocket);
    // Answers are read as they pass: uncompressed, and websocket messages unextended.
    parts.headers.remove(header::ACCEPT_ENCODING);
    parts.headers.remove(header::SEC_WEBSOCKET_EXTENSIONS);
    parts
        .headers
        .insert(header::HOST, HeaderValue::from_static(provider.host));
    let names: Vec<HeaderName> = parts.headers.keys().cloned().collect();
    for name in names {
        let values: Vec<HeaderValue> = parts
            .headers
            .get_all(&name)
            .iter()
            .map(|v| match v.to_str() {
                Ok(t) if route.keys.iter().any(|(_, p, _)| t.contains(p.as_str())) => {
                    HeaderValue::from_str(&with_keys(t, &route)).unwrap_or_else(|_| v.clone())
                }
                _ => v.clone(),
            })
            .collect();
        parts.headers.remove(&name);
        for v in values {
            parts.headers.append(name.clone(), v);
        }
    }
    let flight = session.begin();
    let mut res = match upstream::client()
        .request(Request::from_parts(parts, body))
        .await
    {
        Ok(res) => res,
        Err(e) => {
            return text(
                StatusCode::BAD_GATEWAY,
                format!("opentiger's proxy could not reach {}: {e}", provider.host),
            );
        }
    };
    let status = res.status();
    if status == StatusCode::TOO_MANY_REQUESTS || status.as_u16() == 529 {
        session.quota(QuotaHit {
            status: status.as_u16(),
            host: provider.host.to_string(),
            retry_after: retry_after(res.headers()),
        });
    }
    if let (StatusCode::SWITCHING_PROTOCOLS, Some(client_upgrade)) = (status, client_upgrade) {
        drop(flight);
        let upstream_upgrade = hyper::upgrade::on(&mut res);
        tokio::spawn(pump(client_upgrade, upstream_upgrade, session));
        let (parts, _) = res.into_parts();
        return Response::from_parts(parts, full(Bytes::new()));
    }
    let framing = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map_or(Framing::Other, Framing::of_content_type);
    res.map(|inner| {
        Metered {
            inner,
            meter: Some(AnswerMeter::new(framing)),
            session,
            flight: Some(flight),
        }
        .boxed()
    })
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

/// The error a model call gets once the budget is spent, in its provider's shape, so the CLI
/// reports it as an error (not a rate limit it would wait out).
fn budget_refusal(provider: &Provider, words: &str) -> Response<ProxyBody> {
    let message = format!("opentiger: {words}");
    let body = match provider.route {
        "anthropic" => serde_json::json!({
            "type": "error", "error": { "type": "permission_error", "message": message }
        }),
        _ => serde_json::json!({
            "error": { "message": message, "type": "invalid_request_error", "code": "opentiger_budget_spent", "param": null }
        }),
    };
    let mut res = Response::new(full(body.to_string()));
    *res.status_mut() = StatusCode::FORBIDDEN;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

/// A model API's answer passing through, metered as it goes.
struct Metered {
    inner: Incoming,
    meter: Option<AnswerMeter>,
    session: Arc<Session>,
    /// The request stays in flight until its answer ends.
    flight: Option<super::session::Flight>,
}

impl Metered {
    fn finish(&mut self) {
        if let Some(meter) = self.meter.take() {
            self.session.add_usage(meter.finish());
        }
        self.flight.take();
    }
}

impl Drop for Metered {
    fn drop(&mut self) {
        self.finish();
    }
}

impl Body for Metered {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let (Some(data), Some(meter)) = (frame.data_ref(), this.meter.as_mut()) {
                    meter.feed(data);
                    let done = meter.take();
                    this.session.add_usage(done);
                    this.session.touch();
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(Some(Err(e))) => {
                this.finish();
                Poll::Ready(Some(Err(e.into())))
            }
            Poll::Ready(None) => {
                this.finish();
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Both directions of an upgraded websocket: the client's messages pass as they are, the
/// server's are metered; a spent budget closes it.
async fn pump(
    client: hyper::upgrade::OnUpgrade,
    upstream: hyper::upgrade::OnUpgrade,
    session: Arc<Session>,
) {
    let (Ok(client), Ok(upstream)) = (client.await, upstream.await) else {
        return;
    };
    let (mut client_read, mut client_write) = tokio::io::split(TokioIo::new(client));
    let (mut up_read, mut up_write) = tokio::io::split(TokioIo::new(upstream));
    let out_session = session.clone();
    let outgoing = tokio::spawn(async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            out_session.touch();
            if up_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = up_write.shutdown().await;
    });
    let mut meter = AnswerMeter::new(Framing::WebSocket);
    let mut buf = vec![0u8; 16 * 1024];
    loop {
        let n = match up_read.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        meter.feed(&buf[..n]);
        session.add_usage(meter.take());
        session.touch();
        if client_write.write_all(&buf[..n]).await.is_err() {
            break;
        }
        if session.budget_spent().is_some() {
            break;
        }
    }
    let _ = client_write.shutdown().await;
    session.add_usage(meter.finish());
    outgoing.abort();
}

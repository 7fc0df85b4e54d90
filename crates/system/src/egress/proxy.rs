//! The proxy's HTTP side (hyper): what one connection from an agent or a check may do.
//!
//! - `CONNECT host:port` (HTTPS through `HTTPS_PROXY`): a tunnel when the host is on the
//!   allow list, else 403 naming the configuration line that would allow it (recorded).
//! - `GET http://host/…` (plain HTTP through `HTTP_PROXY`): forwarded when allowed, else 403.
//! - `/<route>/…` (the agent's base URL, e.g. `/anthropic/v1/messages`): a model call (`model`).
//!
//! Bounded (issue 46): at most [`MAX_CONNECTIONS`] open per run (past it, 503 and closed at
//! once); a request head of at most [`HEAD_MAX`] bytes, whole within [`HEAD_TIMEOUT`] (a
//! connection waiting longer for one, an idle keep-alive one included, is closed); every task
//! serving the run ends with its door.
//!
//! Not here: what a session allows or has spent (`session`), a model route (`model`), where
//! upstream is (`upstream`).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderValue, Method, Request, Response, StatusCode};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};

use super::reply::{full, say, BoxError, ProxyBody};
use super::session::{Admission, Session, MAX_CONNECTIONS};
use super::upstream::{self, strip_hop_by_hop};

/// The longest a request head may take, from when the proxy starts waiting for it.
pub const HEAD_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest request head (its line and headers) the proxy reads.
pub const HEAD_MAX: usize = 64 << 10;

/// Serves `listener` for `session` until the task is aborted.
pub async fn serve(listener: TcpListener, session: Arc<Session>) {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => match session.admit() {
                Some(admission) => session.spawn(connection(stream, session.clone(), admission)),
                None => turn_away(stream),
            },
            Err(e) => {
                tracing::debug!(error = %e, "the proxy could not accept a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// A connection past [`MAX_CONNECTIONS`]: told why, if its socket takes it at once, and closed.
fn turn_away(stream: TcpStream) {
    let words = format!(
        "opentiger's proxy: this run already holds {MAX_CONNECTIONS} connections open, the most it may; close one first\n"
    );
    let answer = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{words}",
        words.len()
    );
    let _ = stream.try_write(answer.as_bytes());
}

async fn connection(stream: TcpStream, session: Arc<Session>, admission: Arc<Admission>) {
    let _ = stream.set_nodelay(true);
    let service = hyper::service::service_fn(move |req| {
        let (session, admission) = (session.clone(), admission.clone());
        async move { Ok::<_, Infallible>(handle(req, session, admission).await) }
    });
    let served = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEAD_TIMEOUT)
        .max_buf_size(HEAD_MAX)
        .serve_connection(TokioIo::new(stream), service)
        .with_upgrades()
        .await;
    if let Err(e) = served {
        tracing::debug!(error = %e, "a proxy connection ended with an error");
    }
}

async fn handle(
    req: Request<Incoming>,
    session: Arc<Session>,
    admission: Arc<Admission>,
) -> Response<ProxyBody> {
    session.touch();
    if req.method() == Method::CONNECT {
        return connect(req, session, admission).await;
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
        Some(route) => super::model::call(req, session, route, admission).await,
        None => {
            let routes: Vec<String> = session
                .spec
                .routes
                .iter()
                .map(|r| format!("/{}/", r.provider.name))
                .collect();
            let route: String = route.chars().take(64).collect();
            say(
                &session,
                StatusCode::NOT_FOUND,
                &format!(
                    "opentiger's proxy: no model API is routed under /{route}/ for this agent (routed: {})",
                    if routes.is_empty() { "none".to_string() } else { routes.join(", ") }
                ),
            )
        }
    }
}

/// 403 for a host not on the allow list, naming the line that would allow it; a CLI's own
/// traffic is refused with no advice (issue 50).
fn refused(session: &Session, host: &str, port: u16) -> Response<ProxyBody> {
    let by = session.spec.user.key();
    let own = &session.spec.own_traffic;
    if own.holds(host, port) {
        return say(
            session,
            StatusCode::FORBIDDEN,
            &format!(
                "opentiger's proxy refused {}:{port}: {}'s own traffic (an update check, telemetry or a plugin install), which the task does not need\n",
                crate::model::network::host_name(host),
                own.cli
            ),
        );
    }
    let host = crate::model::network::host_name(host);
    let entry = match port {
        443 | 80 => host.clone(),
        p => format!("{host}:{p}"),
    };
    say(
        session,
        StatusCode::FORBIDDEN,
        &format!(
            "opentiger's proxy refused {host}:{port}: it is not on the {by}'s allow list. To allow it, add to .opentiger.yml (into its `sandbox:` when it has one):\n{}\n",
            crate::model::network::allow_yaml(by, &entry)
        ),
    )
}

async fn connect(
    req: Request<Incoming>,
    session: Arc<Session>,
    admission: Arc<Admission>,
) -> Response<ProxyBody> {
    let Some(authority) = req.uri().authority().cloned() else {
        return say(&session, StatusCode::BAD_REQUEST, "CONNECT needs host:port");
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
            return say(
                &session,
                StatusCode::BAD_GATEWAY,
                &format!("opentiger's proxy could not reach {host}:{port}: {e}"),
            )
        }
    };
    session.spawn(async move {
        // The tunnel counts as the connection it was.
        let _admission = admission;
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
        return say(
            &session,
            StatusCode::BAD_REQUEST,
            "opentiger's proxy forwards plain http only; use CONNECT (HTTPS_PROXY) for https",
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
            return say(
                &session,
                StatusCode::BAD_REQUEST,
                "a URI the proxy cannot read",
            )
        }
    };
    strip_hop_by_hop(&mut parts.headers, false);
    if let Ok(v) = HeaderValue::from_str(&host) {
        parts.headers.insert(header::HOST, v);
    }
    let body = body.map_err(BoxError::from).boxed();
    match upstream::client()
        .request(Request::from_parts(parts, body))
        .await
    {
        Ok(res) => res.map(|b| b.map_err(BoxError::from).boxed()),
        Err(e) => say(
            &session,
            StatusCode::BAD_GATEWAY,
            &format!("opentiger's proxy could not reach {host}:{port}: {e}"),
        ),
    }
}

//! What the proxy says itself: its refusals and errors, as plain text to a program behind the
//! door, or in a model API's own error shape on a model route (so the CLI reports it as an
//! error, not a rate limit it would wait out). Every word passes the secret filter first
//! (issue 46): a refusal may quote what the agent sent, never what the runner holds.
//! Not for: deciding what is refused (`proxy`, `model`, `credential`, `tools`).

use bytes::Bytes;
use http::{header, HeaderValue, Response, StatusCode};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};

use super::providers::Provider;
use super::session::Session;
use crate::config::ProviderApi;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
/// The body of whatever the proxy sends, either way.
pub type ProxyBody = BoxBody<Bytes, BoxError>;

pub fn full(body: impl Into<Bytes>) -> ProxyBody {
    Full::new(body.into())
        .map_err(|never| match never {})
        .boxed()
}

/// `words` as a plain-text answer.
pub fn say(session: &Session, status: StatusCode, words: &str) -> Response<ProxyBody> {
    let mut res = Response::new(full(session.secrets().scrub(words)));
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    res
}

/// `words` as `provider`'s own error answer, with `code` for OpenAI-shaped clients.
pub fn api_error(
    session: &Session,
    provider: &Provider,
    status: StatusCode,
    code: &str,
    words: &str,
) -> Response<ProxyBody> {
    let message = session.secrets().scrub(words);
    let body = match provider.api {
        ProviderApi::Anthropic => {
            let kind = match status {
                StatusCode::FORBIDDEN => "permission_error",
                StatusCode::NOT_FOUND => "not_found_error",
                StatusCode::PAYLOAD_TOO_LARGE => "request_too_large",
                StatusCode::SERVICE_UNAVAILABLE => "overloaded_error",
                _ => "invalid_request_error",
            };
            serde_json::json!({ "type": "error", "error": { "type": kind, "message": message } })
        }
        ProviderApi::Openai | ProviderApi::OpenaiChat | ProviderApi::OpenaiResponses => {
            serde_json::json!({
                "error": { "message": message, "type": "invalid_request_error", "code": code, "param": null }
            })
        }
        ProviderApi::Gemini => {
            let kind = match status {
                StatusCode::FORBIDDEN => "PERMISSION_DENIED",
                StatusCode::NOT_FOUND => "NOT_FOUND",
                StatusCode::SERVICE_UNAVAILABLE => "UNAVAILABLE",
                _ => "INVALID_ARGUMENT",
            };
            serde_json::json!({ "error": { "code": status.as_u16(), "message": message, "status": kind } })
        }
    };
    let mut res = Response::new(full(body.to_string()));
    *res.status_mut() = status;
    res.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    res
}

//! `doctor --online` asking a configured provider for its models (issue 50): one `GET` of its
//! model list, from the runner (no agent is behind it), with its key in the slot its calls
//! carry it in, its own headers and query parameters — what a run's first call would meet:
//! whether the endpoint answers, refuses the key, and lists the model an agent names.
//! Bounded: [`PROBE_TIMEOUT`] for the whole answer, at most [`LIST_MAX`] bytes read.
//!
//! Not for: judging the answer (`doctor`), forwarding an agent's calls (`model`).

use std::time::Duration;

use bytes::Bytes;
use http::{header, HeaderName, HeaderValue, Request};
use http_body_util::BodyExt;

use super::providers::{Provider, Slot};
use super::reply::full;
use crate::config::ProviderApi;

/// The longest the model list may take, connection included.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of the model list read.
pub const LIST_MAX: usize = 4 << 20;

/// What the endpoint answered to the model list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Listed {
    /// The URL asked, without the key.
    pub url: String,
    pub status: u16,
    /// The model ids the answer lists (OpenAI's and Anthropic's `data[].id`, Gemini's
    /// `models[].name` without `models/`); empty when it lists none or is no list.
    pub models: Vec<String>,
    /// The answer's first line, for an error (secrets the runner holds are not in it: it
    /// comes from the endpoint, which never had them but the key, filtered out).
    pub said: String,
}

/// Where `provider`'s model list is: `…/models` for the OpenAI shapes, `…/v1/models` for
/// Anthropic's, `…/v1beta/models` for Gemini's.
pub fn models_path(provider: &Provider) -> String {
    let base = &provider.base_path;
    match provider.api {
        ProviderApi::OpenaiChat | ProviderApi::OpenaiResponses | ProviderApi::Openai => {
            format!("{base}/models")
        }
        ProviderApi::Anthropic => format!("{base}/v1/models"),
        ProviderApi::Gemini => format!("{base}/v1beta/models"),
    }
}

/// Asks `provider` for its models with `key` (none: no key is sent); the problem in words when
/// it cannot be asked or does not answer.
pub fn list_models(provider: &Provider, key: Option<&str>) -> Result<Listed, String> {
    let origin = match super::upstream::overrides().get(&provider.host) {
        Some(addr) => format!("http://{addr}"),
        None => provider.origin(),
    };
    let mut params: Vec<(String, String)> = provider.query.clone();
    let slot = provider
        .key_slot
        .clone()
        .or_else(|| provider.slots.first().cloned());
    let mut headers: Vec<(HeaderName, HeaderValue)> = Vec::new();
    if let (Some(key), Some(slot)) = (key.filter(|k| !k.is_empty()), slot) {
        let sensitive = |text: String| {
            let mut value = HeaderValue::from_str(&text)
                .map_err(|_| "the key is not a valid header value".to_string())?;
            value.set_sensitive(true);
            Ok::<_, String>(value)
        };
        match slot {
            Slot::Bearer => {
                headers.push((header::AUTHORIZATION, sensitive(format!("Bearer {key}"))?))
            }
            Slot::Header(name) => headers.push((
                HeaderName::from_bytes(name.as_bytes()).map_err(|e| e.to_string())?,
                sensitive(key.to_string())?,
            )),
            Slot::Query(name) => params.push((name, key.to_string())),
        }
    }
    for (name, value) in &provider.headers {
        if let (Ok(name), Ok(value)) = (
            HeaderName::from_bytes(name.as_bytes()),
            HeaderValue::from_str(value),
        ) {
            headers.push((name, value));
        }
    }
    if provider.api == ProviderApi::Anthropic {
        headers.push((
            HeaderName::from_static("anthropic-version"),
            HeaderValue::from_static("2023-06-01"),
        ));
    }
    let path = models_path(provider);
    let shown = format!("{}{path}", provider.origin());
    let query: Vec<String> = params
        .iter()
        .map(|(k, v)| format!("{k}={}", super::credential::percent_encoded(v)))
        .collect();
    let query = if query.is_empty() {
        String::new()
    } else {
        format!("?{}", query.join("&"))
    };
    let uri = format!("{origin}{path}{query}");
    let mut request = Request::get(&uri)
        .header(header::ACCEPT, "application/json")
        .body(full(Bytes::new()))
        .map_err(|e| format!("`{shown}` is not a URL: {e}"))?;
    if let Ok(host) = HeaderValue::from_str(&provider.authority()) {
        request.headers_mut().insert(header::HOST, host);
    }
    for (name, value) in headers {
        request.headers_mut().insert(name, value);
    }
    let runtime = super::runtime()?;
    let (status, body) = runtime.block_on(async {
        tokio::time::timeout(PROBE_TIMEOUT, async {
            let res = super::upstream::client()
                .request(request)
                .await
                .map_err(|e| describe(&e))?;
            let status = res.status().as_u16();
            let mut body = res.into_body();
            let mut read: Vec<u8> = Vec::new();
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| e.to_string())?;
                if let Some(data) = frame.data_ref() {
                    let room = LIST_MAX.saturating_sub(read.len());
                    read.extend_from_slice(&data[..data.len().min(room)]);
                    if read.len() >= LIST_MAX {
                        break;
                    }
                }
            }
            Ok::<_, String>((status, read))
        })
        .await
        .map_err(|_| format!("no answer within {} s", PROBE_TIMEOUT.as_secs()))?
    })?;
    let value: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
    let mut models: Vec<String> = value
        .get("data")
        .and_then(|d| d.as_array())
        .into_iter()
        .flatten()
        .filter_map(|m| m.get("id").and_then(|i| i.as_str()))
        .map(String::from)
        .collect();
    models.extend(
        value
            .get("models")
            .and_then(|d| d.as_array())
            .into_iter()
            .flatten()
            .filter_map(|m| m.get("name").and_then(|i| i.as_str()))
            .map(|n| n.strip_prefix("models/").unwrap_or(n).to_string()),
    );
    let said = value
        .pointer("/error/message")
        .and_then(|m| m.as_str())
        .map(String::from)
        .unwrap_or_else(|| {
            String::from_utf8_lossy(&body)
                .lines()
                .next()
                .unwrap_or("")
                .to_string()
        });
    let said = said
        .replace(key.unwrap_or("\u{0}"), "[key]")
        .chars()
        .take(300)
        .collect();
    Ok(Listed {
        url: shown,
        status,
        models,
        said,
    })
}

/// A connection error in words, with its cause (`connection refused`, a certificate problem).
fn describe(e: &hyper_util::client::legacy::Error) -> String {
    let mut text = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        text.push_str(&format!(": {cause}"));
        source = cause.source();
    }
    text
}

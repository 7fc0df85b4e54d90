//! The HTTP under the GitHub client (issue 51: in place of octocrab, which brought some 55
//! crates to every cold build for what this is): one hyper client over rustls with the
//! system's roots, driven by the client's own single-threaded runtime; the token as
//! `Authorization: Bearer`, GitHub's required `User-Agent`; a request tried again at once, up to
//! [`RETRIES`] times, after a transport error, a 5xx or a 429 (what octocrab's default did);
//! redirects followed on the same host only (the token never leaves it), at most
//! [`REDIRECTS`]; each try bounded by [`TIMEOUT`].
//!
//! Not for: what GitHub's answers mean — rate limits, ETags, errors (`github`).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper_rustls::HttpsConnector;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

/// Tries after the first, on a transport error, a 5xx or a 429.
const RETRIES: usize = 3;
/// Redirects followed, at most.
const REDIRECTS: usize = 5;
/// The longest one try may take, connection and body included.
const TIMEOUT: Duration = Duration::from_secs(60);

/// What GitHub answered: the status, the headers (lower-case names) and the body as text.
pub struct Response {
    pub status: u16,
    pub headers: BTreeMap<String, String>,
    pub text: String,
}

/// The way to GitHub's API at one base URL, with one token.
pub struct Transport {
    client: Client<HttpsConnector<HttpConnector>, Full<Bytes>>,
    /// `https://api.github.com`, or GitHub Enterprise's `https://host/api/v3`, without the
    /// trailing slash.
    base: String,
    host: String,
    token: String,
}

impl Transport {
    /// Needs a runtime entered (the client's connector spawns on it).
    pub fn new(base_url: &str, token: &str) -> Result<Transport, String> {
        let base = base_url.trim_end_matches('/').to_string();
        let uri: Uri = base
            .parse()
            .map_err(|e| format!("GITHUB_API_URL `{base_url}` is not a URL: {e}"))?;
        let (Some(scheme), Some(host)) = (uri.scheme_str(), uri.authority()) else {
            return Err(format!(
                "GITHUB_API_URL `{base_url}` is not a URL: it needs a scheme and a host, e.g. https://api.github.com"
            ));
        };
        if !matches!(scheme, "https" | "http") {
            return Err(format!(
                "GITHUB_API_URL `{base_url}`: only https (or http for a local stand-in)"
            ));
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_native_roots(provider)
            .map_err(|e| format!("no system certificates to check GitHub's with: {e}"))?
            .https_or_http()
            .enable_http1()
            .build();
        Ok(Transport {
            client: Client::builder(TokioExecutor::new()).build(connector),
            host: host.to_string(),
            base,
            token: token.to_string(),
        })
    }

    /// The full URL of `path` (`/repos/…`, or a `next` link that already holds the base's path).
    fn url(&self, path: &str) -> String {
        let prefix = self
            .base
            .split_once("://")
            .and_then(|(_, rest)| rest.find('/').map(|i| &rest[i..]))
            .unwrap_or("");
        if !prefix.is_empty() && path.starts_with(prefix) {
            let origin = &self.base[..self.base.len() - prefix.len()];
            format!("{origin}{path}")
        } else {
            format!("{}{path}", self.base)
        }
    }

    /// One request with `headers` and a JSON `body`, retried and redirected as the module
    /// says. `Err` is a transport failure, in words.
    pub async fn send(
        &self,
        method: &Method,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&serde_json::Value>,
    ) -> Result<Response, String> {
        let bytes = match body {
            Some(value) => Bytes::from(serde_json::to_vec(value).map_err(|e| e.to_string())?),
            None => Bytes::new(),
        };
        let mut url = self.url(path);
        let mut redirects = 0;
        let mut tries = 0;
        loop {
            let answer = self
                .once(method, &url, headers, body.is_some(), &bytes)
                .await;
            let retry = match &answer {
                Err(_) => true,
                Ok(r) => r.status >= 500 || r.status == 429,
            };
            if retry && tries < RETRIES {
                tries += 1;
                continue;
            }
            let response = answer?;
            let location = response.headers.get("location").cloned();
            match (response.status, location) {
                (301 | 302 | 307 | 308, Some(to)) if redirects < REDIRECTS => {
                    let next = if to.starts_with('/') {
                        self.url(&to)
                    } else {
                        to
                    };
                    let same_host = next
                        .parse::<Uri>()
                        .ok()
                        .and_then(|u| u.authority().map(|a| a.to_string()))
                        .is_some_and(|h| h == self.host);
                    if !same_host {
                        return Ok(response);
                    }
                    redirects += 1;
                    url = next;
                }
                _ => return Ok(response),
            }
        }
    }

    async fn once(
        &self,
        method: &Method,
        url: &str,
        headers: &[(&str, &str)],
        json: bool,
        body: &Bytes,
    ) -> Result<Response, String> {
        let mut builder = Request::builder()
            .method(method.clone())
            .uri(url)
            .header("authorization", format!("Bearer {}", self.token))
            .header(
                "user-agent",
                concat!("opentiger/", env!("CARGO_PKG_VERSION")),
            );
        if json {
            builder = builder.header("content-type", "application/json");
        }
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        let request = builder
            .body(Full::new(body.clone()))
            .map_err(|e| format!("could not make the request: {e}"))?;
        let exchange = async {
            let response = self
                .client
                .request(request)
                .await
                .map_err(|e| describe(&e))?;
            let status = response.status().as_u16();
            let headers = response
                .headers()
                .iter()
                .filter_map(|(k, v)| {
                    v.to_str()
                        .ok()
                        .map(|v| (k.as_str().to_ascii_lowercase(), v.to_string()))
                })
                .collect();
            let body = response
                .into_body()
                .collect()
                .await
                .map_err(|e| format!("reading the answer: {e}"))?
                .to_bytes();
            Ok(Response {
                status,
                headers,
                text: String::from_utf8_lossy(&body).into_owned(),
            })
        };
        tokio::time::timeout(TIMEOUT, exchange)
            .await
            .map_err(|_| format!("no answer within {} s", TIMEOUT.as_secs()))?
    }
}

/// A transport error with its causes (hyper's own words say little: "client error (Connect)").
fn describe(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_join_the_base_and_its_enterprise_prefix_once() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let _guard = runtime.enter();
        let dotcom = Transport::new("https://api.github.com/", "t").unwrap();
        assert_eq!(dotcom.url("/repos/a/b"), "https://api.github.com/repos/a/b");
        let ghe = Transport::new("https://ghe.example/api/v3", "t").unwrap();
        assert_eq!(
            ghe.url("/repos/a/b"),
            "https://ghe.example/api/v3/repos/a/b"
        );
        assert_eq!(
            ghe.url("/api/v3/repos/a/b/issues?page=2"),
            "https://ghe.example/api/v3/repos/a/b/issues?page=2"
        );
        assert!(Transport::new("ftp://x", "t").is_err());
        assert!(Transport::new("not a url", "t").is_err());
    }
}

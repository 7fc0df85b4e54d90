//! The GitHub REST client: the token, retries and the base URL (GitHub Enterprise via
//! `GITHUB_API_URL`) in `forge::http`, our own slim types for the bodies, conditional requests
//! with ETags, and relative pagination (DESIGN §14).
//!
//! Synchronous on purpose: a tick makes a handful of calls in sequence, so the client owns a
//! single-threaded runtime and blocks on each call.
//!
//! Not for: which calls opentiger makes and what their answers mean (`calls`, `ci`, `checks`,
//! `comments`, `conversation`).

use std::collections::BTreeMap;

use http::Method;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::time::{Timestamp, SECOND};

/// Why a call did not give an answer.
#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    #[error("GitHub refused the token ({status}): {message}\n  fix: set GITHUB_TOKEN (or OPENTIGER_GITHUB_TOKEN) to a token with access to {repo}")]
    Unauthorized {
        status: u16,
        message: String,
        repo: String,
    },
    /// Primary or secondary rate limit: not an error of ours, a time to wait until.
    #[error("GitHub rate limit ({kind}): retry after {until}")]
    RateLimited {
        until: Timestamp,
        kind: &'static str,
    },
    #[error("GitHub {method} {path}: {status} {message}")]
    Http {
        method: String,
        path: String,
        status: u16,
        message: String,
    },
    #[error("GitHub {method} {path}: {detail}")]
    Transport {
        method: String,
        path: String,
        detail: String,
    },
    #[error("{0}")]
    Config(String),
}

/// A raw answer: status, the headers we use, and the JSON body (none for a 304 or a 204).
#[derive(Clone, Debug)]
pub struct Answer {
    pub status: u16,
    pub etag: Option<String>,
    /// `rel="next"` of the `Link` header, made relative (path and query).
    pub next: Option<String>,
    pub body: Option<Value>,
}

/// The result of a conditional GET.
#[derive(Clone, Debug, PartialEq)]
pub enum Conditional<T> {
    /// 304: nothing changed since the ETag we sent.
    NotModified,
    Fresh {
        value: T,
        etag: Option<String>,
    },
}

impl<T> Conditional<T> {
    /// The fresh value turned into another (a 304 stays a 304), with its ETag.
    pub fn map<U>(self, f: impl FnOnce(T) -> U) -> Conditional<U> {
        match self {
            Conditional::NotModified => Conditional::NotModified,
            Conditional::Fresh { value, etag } => Conditional::Fresh {
                value: f(value),
                etag,
            },
        }
    }
}

pub struct GithubClient {
    http: super::http::Transport,
    runtime: tokio::runtime::Runtime,
    /// `owner/repo`.
    pub repo: String,
    /// Requests sent by this client (for the report; 304s are free on GitHub's side).
    pub requests: std::cell::Cell<u32>,
    /// GitHub refused a check-run write for the token's permissions: opentiger's checks go out
    /// as commit statuses for the rest of the process (issue 28).
    pub checks_refused: std::cell::Cell<bool>,
}

/// `owner/name` from a remote URL (https, ssh or scp-like); never the credentials in it.
pub fn owner_and_name(url: &str) -> Option<String> {
    let path = url.trim().trim_end_matches('/').trim_end_matches(".git");
    let mut parts = path.rsplit(['/', ':']);
    let name = parts.next().filter(|s| !s.is_empty())?;
    let owner = parts.next().filter(|s| !s.is_empty() && !s.contains('@'))?;
    Some(format!("{owner}/{name}"))
}

impl GithubClient {
    /// From the environment: `GITHUB_TOKEN` or `OPENTIGER_GITHUB_TOKEN`, `GITHUB_API_URL`
    /// (default `https://api.github.com`), and the repository (`GITHUB_REPOSITORY` unless given).
    pub fn from_env(
        repo: Option<&str>,
        env: impl Fn(&str) -> Option<String>,
    ) -> Result<GithubClient, ForgeError> {
        let token = env("OPENTIGER_GITHUB_TOKEN")
            .or_else(|| env("GITHUB_TOKEN"))
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| ForgeError::Config("no GitHub token: set GITHUB_TOKEN (in Actions: `env: GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}`) or OPENTIGER_GITHUB_TOKEN".to_string()))?;
        let repo = repo
            .map(String::from)
            .or_else(|| env("GITHUB_REPOSITORY"))
            .filter(|r| r.split('/').count() == 2)
            .ok_or_else(|| {
                ForgeError::Config(
                    "which repository? set GITHUB_REPOSITORY=owner/repo (Actions sets it)"
                        .to_string(),
                )
            })?;
        let base = env("GITHUB_API_URL").unwrap_or_else(|| "https://api.github.com".to_string());
        GithubClient::new(&base, &token, &repo)
    }

    pub fn new(base_url: &str, token: &str, repo: &str) -> Result<GithubClient, ForgeError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| ForgeError::Config(format!("could not start the HTTP runtime: {e}")))?;
        let http = {
            let _guard = runtime.enter();
            super::http::Transport::new(base_url, token).map_err(ForgeError::Config)?
        };
        Ok(GithubClient {
            http,
            runtime,
            repo: repo.to_string(),
            requests: std::cell::Cell::new(0),
            checks_refused: std::cell::Cell::new(false),
        })
    }

    /// `/repos/{owner}/{repo}` + `rest`.
    pub fn path(&self, rest: &str) -> String {
        format!("/repos/{}{rest}", self.repo)
    }

    /// One request. `etag` makes a GET conditional. Rate limits and auth failures come back as
    /// their own errors; other non-2xx statuses as `Http`.
    pub fn send(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        etag: Option<&str>,
        now: Timestamp,
    ) -> Result<Answer, ForgeError> {
        self.requests.set(self.requests.get() + 1);
        let method_text = method.to_string();
        let transport = |detail: String| ForgeError::Transport {
            method: method_text.clone(),
            path: path.to_string(),
            detail,
        };
        let mut headers = vec![
            ("accept", "application/vnd.github+json"),
            ("x-github-api-version", "2022-11-28"),
        ];
        if let Some(tag) = etag {
            headers.push(("if-none-match", tag));
        }
        let super::http::Response {
            status,
            headers,
            text,
        } = self
            .runtime
            .block_on(self.http.send(&method, path, &headers, body))
            .map_err(transport)?;
        let json: Option<Value> = if text.trim().is_empty() {
            None
        } else {
            serde_json::from_str(&text).ok()
        };
        if let Some(limit) = rate_limit(status, &headers, json.as_ref(), now) {
            return Err(limit);
        }
        let message = json
            .as_ref()
            .and_then(|j| j.get("message"))
            .and_then(|m| m.as_str())
            .unwrap_or("")
            .to_string();
        match status {
            200..=299 | 304 => Ok(Answer {
                status,
                etag: headers.get("etag").cloned(),
                next: next_link(headers.get("link")),
                body: json,
            }),
            401 | 403 => Err(ForgeError::Unauthorized {
                status,
                message,
                repo: self.repo.clone(),
            }),
            _ => Err(ForgeError::Http {
                method: method_text,
                path: path.to_string(),
                status,
                message,
            }),
        }
    }

    /// A conditional GET of every page (following `Link: rel="next"`).
    pub fn get_all<T: DeserializeOwned>(
        &self,
        path: &str,
        etag: Option<&str>,
        now: Timestamp,
    ) -> Result<Conditional<Vec<T>>, ForgeError> {
        let first = self.send(Method::GET, path, None, etag, now)?;
        if first.status == 304 {
            return Ok(Conditional::NotModified);
        }
        let etag = first.etag.clone();
        let mut items: Vec<T> = parse_list(path, first.body)?;
        let mut next = first.next;
        while let Some(page) = next {
            let answer = self.send(Method::GET, &page, None, None, now)?;
            items.extend(parse_list::<T>(&page, answer.body)?);
            next = answer.next;
        }
        Ok(Conditional::Fresh { value: items, etag })
    }

    /// A JSON request whose answer is one object.
    pub fn call<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&Value>,
        now: Timestamp,
    ) -> Result<T, ForgeError> {
        let answer = self.send(method.clone(), path, body, None, now)?;
        let value = answer.body.unwrap_or(Value::Null);
        serde_json::from_value(value).map_err(|e| ForgeError::Http {
            method: method.to_string(),
            path: path.to_string(),
            status: answer.status,
            message: format!("unexpected answer: {e}"),
        })
    }
}

fn parse_list<T: DeserializeOwned>(path: &str, body: Option<Value>) -> Result<Vec<T>, ForgeError> {
    serde_json::from_value(body.unwrap_or(Value::Array(Vec::new()))).map_err(|e| ForgeError::Http {
        method: "GET".to_string(),
        path: path.to_string(),
        status: 200,
        message: format!("unexpected answer: {e}"),
    })
}

/// GitHub's rate limits (primary: `x-ratelimit-remaining: 0` with a reset time; secondary:
/// `retry-after`, or the "secondary rate limit" message): a wait until a time, never a crash.
pub fn rate_limit(
    status: u16,
    headers: &BTreeMap<String, String>,
    body: Option<&Value>,
    now: Timestamp,
) -> Option<ForgeError> {
    if !matches!(status, 403 | 429) {
        return None;
    }
    if let Some(seconds) = headers
        .get("retry-after")
        .and_then(|v| v.trim().parse::<i64>().ok())
    {
        return Some(ForgeError::RateLimited {
            until: now.plus(seconds.max(1) * SECOND),
            kind: "secondary",
        });
    }
    let message = body
        .and_then(|b| b.get("message"))
        .and_then(|m| m.as_str())
        .unwrap_or("")
        .to_lowercase();
    if headers.get("x-ratelimit-remaining").map(|v| v.trim()) == Some("0") {
        let reset = headers
            .get("x-ratelimit-reset")
            .and_then(|v| v.trim().parse::<i64>().ok());
        let until = reset.map_or(now.plus(60 * SECOND), |r| Timestamp(r * 1000));
        return Some(ForgeError::RateLimited {
            until: until.max(now.plus(SECOND)),
            kind: "primary",
        });
    }
    if message.contains("secondary rate limit") || status == 429 {
        // No hint: GitHub's docs say wait at least a minute.
        return Some(ForgeError::RateLimited {
            until: now.plus(60 * SECOND),
            kind: "secondary",
        });
    }
    None
}

/// The `rel="next"` target of a `Link` header, as a relative path and query: an absolute URL
/// would leave a test server or GitHub Enterprise (DESIGN §14).
pub fn next_link(link: Option<&String>) -> Option<String> {
    let link = link?;
    link.split(',').find_map(|part| {
        let (url, rel) = part.split_once(';')?;
        if !rel.contains("rel=\"next\"") {
            return None;
        }
        let url = url.trim().trim_start_matches('<').trim_end_matches('>');
        let after_scheme = url.split_once("://").map_or(url, |(_, rest)| rest);
        let path = after_scheme.find('/').map_or("/", |i| &after_scheme[i..]);
        Some(path.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// status, headers, body, expected (until, kind).
    type RateCase = (
        u16,
        BTreeMap<String, String>,
        Option<Value>,
        Option<(i64, &'static str)>,
    );

    #[test]
    fn rate_limits_become_waits() {
        let now = Timestamp(1_795_262_400_000);
        let cases: Vec<RateCase> = vec![
            (
                403,
                headers(&[
                    ("x-ratelimit-remaining", "0"),
                    ("x-ratelimit-reset", "1795263000"),
                ]),
                None,
                Some((1_795_263_000_000, "primary")),
            ),
            (
                403,
                headers(&[("retry-after", "120")]),
                None,
                Some((now.0 + 120_000, "secondary")),
            ),
            (429, headers(&[]), None, Some((now.0 + 60_000, "secondary"))),
            (
                403,
                headers(&[]),
                Some(serde_json::json!({"message": "You have exceeded a secondary rate limit"})),
                Some((now.0 + 60_000, "secondary")),
            ),
            (
                403,
                headers(&[("x-ratelimit-remaining", "12")]),
                Some(serde_json::json!({"message": "Resource not accessible by integration"})),
                None,
            ),
            (200, headers(&[("x-ratelimit-remaining", "0")]), None, None),
        ];
        for (status, h, body, expected) in cases {
            let got = rate_limit(status, &h, body.as_ref(), now).map(|e| match e {
                ForgeError::RateLimited { until, kind } => (until.0, kind),
                other => panic!("{other}"),
            });
            assert_eq!(got, expected, "{status} {h:?}");
        }
    }

    #[test]
    fn next_links_are_made_relative() {
        let link = "<https://api.github.com/repositories/1/issues?page=2&per_page=100>; rel=\"next\", <https://api.github.com/repositories/1/issues?page=9>; rel=\"last\"".to_string();
        assert_eq!(
            next_link(Some(&link)).as_deref(),
            Some("/repositories/1/issues?page=2&per_page=100")
        );
        let local = "<http://127.0.0.1:4040/repos/o/r/pulls?page=3>; rel=\"next\"".to_string();
        assert_eq!(
            next_link(Some(&local)).as_deref(),
            Some("/repos/o/r/pulls?page=3")
        );
        let last_only = "<http://x/y?page=1>; rel=\"prev\"".to_string();
        assert_eq!(next_link(Some(&last_only)), None);
        assert_eq!(next_link(None), None);
    }
}

//! The model APIs the proxy routes (issues 37, 46 and 50): each one's scheme, host and base
//! path, the variables holding its keys, its route on the proxy
//! (`http://127.0.0.1:<port>/<name>`, handed to the agent as its base URL), the shape of its
//! API, the credential slots its key may stand in (and, for a configured provider, the one it
//! goes in upstream), the headers and query parameters added to each call, and the endpoints
//! its route carries — the model calls (generation, token counting, the model list) and
//! nothing else. The four built-in providers are rows written here; a `providers:` entry of
//! the configuration becomes one the same way ([`Provider::configured`]), its endpoints those
//! of its API shape under its base path. A key variable of a built-in provider never reaches
//! an agent with its value (a configured one's may not be listed: `config`). Data and
//! look-ups only.
//! Not for: the placeholders and the agent's environment (`egress`, its `Door`), putting the key
//! in its slot (`egress::credential`), forwarding (`egress::model`), translating a call
//! (`egress::translate`).

use std::sync::{Arc, OnceLock};

use crate::config::{BaseUrl, ProviderApi, ProviderConfig, BUILT_IN};

/// One model API.
#[derive(Debug, PartialEq, Eq)]
pub struct Provider {
    /// Its name: the first segment of its path on the proxy, and its key under `providers:`.
    pub name: String,
    /// https, or plain http (loopback, or `allow_http`).
    pub https: bool,
    /// Where the proxy forwards it.
    pub host: String,
    pub port: Option<u16>,
    /// Variables holding its keys, in the order a CLI prefers them (none: it takes no key).
    pub keys: Vec<String>,
    /// The variable holding its base URL for SDKs that read one (built-in providers).
    pub base_var: Option<&'static str>,
    /// The path under the host that the base URL names (OpenAI's `/v1`).
    pub base_path: String,
    /// The shape of its requests, answers and errors.
    pub api: ProviderApi,
    /// Where an agent may put its placeholder, and (built in) where the key goes.
    pub slots: Vec<Slot>,
    /// Where the key goes upstream instead of where the agent put its placeholder (a configured
    /// provider's `key_header`: Azure's `api-key`, whatever the CLI sends).
    pub key_slot: Option<Slot>,
    /// The requests its route carries; any other is refused, naming its path.
    pub endpoints: Vec<Endpoint>,
    /// Headers added to each call (`providers.<name>.headers`).
    pub headers: Vec<(String, String)>,
    /// Query parameters added to each call (`providers.<name>.query`).
    pub query: Vec<(String, String)>,
    /// Whether it takes Responses over a websocket; without, an upgrade is answered 426.
    pub websocket: bool,
    /// The most tokens one answer may hold (`providers.<name>.max_output_tokens`).
    pub max_output_tokens: Option<u64>,
    pub built_in: bool,
}

/// A place a key is carried in a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Slot {
    /// A header whose whole value is the key (`x-api-key: <key>`), lower case.
    Header(String),
    /// `authorization: Bearer <key>`.
    Bearer,
    /// A query parameter whose value is the key (`?key=<key>`: Gemini's documented form).
    Query(String),
}

impl Slot {
    /// For people: `x-api-key`, `authorization: Bearer`, `the query parameter key`.
    pub fn describe(&self) -> String {
        match self {
            Slot::Header(name) => format!("`{name}`"),
            Slot::Bearer => "`authorization: Bearer …`".to_string(),
            Slot::Query(name) => format!("the query parameter `{name}`"),
        }
    }
}

/// How a request is made.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    Get,
    Post,
    /// `GET` with `Upgrade: websocket` (OpenAI Responses over a websocket, as codex uses it).
    WebSocket,
}

impl Verb {
    pub fn name(self) -> &'static str {
        match self {
            Verb::Get => "GET",
            Verb::Post => "POST",
            Verb::WebSocket => "GET (websocket)",
        }
    }
}

/// What a model call does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Call {
    /// Generation: its body is read for tools the provider runs itself.
    Generate,
    /// A Responses call to a provider of chat completions only: translated both ways
    /// (`translate`), then forwarded as a chat completion.
    Translated,
    /// Token counting.
    Count,
    /// The model list, or one model.
    List,
}

/// One request a route carries: its verb and its path on the provider's host, where `*` stands
/// for one name (a model's id) and `*:verb` for a name followed by `:verb` (Gemini's methods).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub verb: Verb,
    pub path: String,
    pub call: Call,
}

fn at(verb: Verb, path: impl Into<String>, call: Call) -> Endpoint {
    Endpoint {
        verb,
        path: path.into(),
        call,
    }
}

use Call::{Count, Generate, List, Translated};
use Verb::{Get, Post, WebSocket};

/// The built-in providers (`config::BUILT_IN`), with the endpoints each one's route carries.
pub fn built_ins() -> &'static [Arc<Provider>] {
    static TABLE: OnceLock<Vec<Arc<Provider>>> = OnceLock::new();
    TABLE.get_or_init(|| {
        BUILT_IN
            .iter()
            .map(|b| {
                let url = BaseUrl::parse(b.base_url).expect("a built-in base URL is a URL");
                let base = url.path.as_str();
                let (slots, endpoints) = match b.name {
                    // An API key in `x-api-key`, an OAuth token as a bearer token.
                    "anthropic" => (
                        vec![Slot::Header("x-api-key".into()), Slot::Bearer],
                        anthropic_endpoints(base),
                    ),
                    "openai" => (vec![Slot::Bearer], {
                        let mut e = responses_endpoints(base, true);
                        e.extend(chat_endpoints(base));
                        dedup(e)
                    }),
                    "openrouter" => (
                        vec![Slot::Bearer],
                        vec![
                            at(Post, format!("{base}/chat/completions"), Generate),
                            at(Post, format!("{base}/responses"), Generate),
                            at(Post, format!("{base}/messages"), Generate),
                            at(Get, format!("{base}/models"), List),
                        ],
                    ),
                    _ => (
                        vec![
                            Slot::Header("x-goog-api-key".into()),
                            Slot::Query("key".into()),
                        ],
                        gemini_endpoints(base),
                    ),
                };
                Arc::new(Provider {
                    name: b.name.to_string(),
                    https: url.https,
                    host: url.host,
                    port: url.port,
                    keys: b.keys.iter().map(|k| k.to_string()).collect(),
                    base_var: Some(b.base_var),
                    base_path: url.path,
                    api: b.api,
                    slots,
                    key_slot: None,
                    endpoints,
                    headers: Vec::new(),
                    query: Vec::new(),
                    websocket: b.api == ProviderApi::Openai,
                    max_output_tokens: None,
                    built_in: true,
                })
            })
            .collect()
    })
}

fn dedup(list: Vec<Endpoint>) -> Vec<Endpoint> {
    let mut out: Vec<Endpoint> = Vec::new();
    for e in list {
        if !out.contains(&e) {
            out.push(e);
        }
    }
    out
}

fn models(base: &str) -> [Endpoint; 2] {
    [
        at(Get, format!("{base}/models"), List),
        at(Get, format!("{base}/models/*"), List),
    ]
}

fn chat_endpoints(base: &str) -> Vec<Endpoint> {
    let mut e = vec![at(Post, format!("{base}/chat/completions"), Generate)];
    e.extend(models(base));
    e
}

fn responses_endpoints(base: &str, websocket: bool) -> Vec<Endpoint> {
    let mut e = vec![at(Post, format!("{base}/responses"), Generate)];
    if websocket {
        e.push(at(WebSocket, format!("{base}/responses"), Generate));
    }
    e.extend([
        // codex's remote compaction of a long history: a generation.
        at(Post, format!("{base}/responses/compact"), Generate),
        at(Post, format!("{base}/responses/input_tokens"), Count),
    ]);
    e.extend(models(base));
    e
}

fn anthropic_endpoints(base: &str) -> Vec<Endpoint> {
    vec![
        at(Post, format!("{base}/v1/messages"), Generate),
        at(Post, format!("{base}/v1/messages/count_tokens"), Count),
        at(Get, format!("{base}/v1/models"), List),
        at(Get, format!("{base}/v1/models/*"), List),
    ]
}

fn gemini_endpoints(base: &str) -> Vec<Endpoint> {
    let mut e = Vec::new();
    for version in ["v1beta", "v1"] {
        e.extend([
            at(
                Post,
                format!("{base}/{version}/models/*:generateContent"),
                Generate,
            ),
            at(
                Post,
                format!("{base}/{version}/models/*:streamGenerateContent"),
                Generate,
            ),
            at(
                Post,
                format!("{base}/{version}/models/*:countTokens"),
                Count,
            ),
            at(Get, format!("{base}/{version}/models"), List),
            at(Get, format!("{base}/{version}/models/*"), List),
        ]);
    }
    e
}

impl Provider {
    /// The provider `providers.<name>` describes (checked at load: a bad URL here is an error
    /// of a configuration that skipped its checks).
    pub fn configured(name: &str, config: &ProviderConfig) -> Result<Provider, String> {
        let url = BaseUrl::parse(&config.base_url)
            .map_err(|why| format!("providers.{name}.base_url: {why}"))?;
        let base = url.path.as_str();
        let endpoints = match config.api {
            ProviderApi::OpenaiChat => {
                let mut e = chat_endpoints(base);
                // codex and other Responses-only clients: translated to chat completions.
                e.push(at(Post, format!("{base}/responses"), Translated));
                e
            }
            ProviderApi::OpenaiResponses => responses_endpoints(base, config.websocket),
            ProviderApi::Openai => {
                let mut e = responses_endpoints(base, config.websocket);
                e.push(at(Post, format!("{base}/chat/completions"), Generate));
                e
            }
            ProviderApi::Anthropic => anthropic_endpoints(base),
            ProviderApi::Gemini => gemini_endpoints(base),
        };
        // Where a CLI of this shape sends its key; the key goes in `key_header` upstream.
        let slots = match config.api {
            ProviderApi::OpenaiChat | ProviderApi::OpenaiResponses | ProviderApi::Openai => {
                vec![Slot::Bearer]
            }
            ProviderApi::Anthropic => vec![Slot::Header("x-api-key".into()), Slot::Bearer],
            ProviderApi::Gemini => {
                vec![
                    Slot::Header("x-goog-api-key".into()),
                    Slot::Query("key".into()),
                ]
            }
        };
        let key_header = config
            .key_header
            .as_deref()
            .unwrap_or(config.api.default_key_header())
            .to_ascii_lowercase();
        let key_slot = match key_header.as_str() {
            "authorization" => Slot::Bearer,
            header => Slot::Header(header.to_string()),
        };
        Ok(Provider {
            name: name.to_string(),
            https: url.https,
            host: url.host,
            port: url.port,
            keys: config.key.iter().cloned().collect(),
            base_var: None,
            base_path: url.path,
            api: config.api,
            slots,
            key_slot: Some(key_slot),
            endpoints,
            headers: config
                .headers
                .iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
                .collect(),
            query: config
                .query
                .iter()
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            websocket: config.websocket,
            max_output_tokens: config.max_output_tokens,
            built_in: false,
        })
    }

    /// `host` or `host:port`, as the `host` header and messages say it.
    pub fn authority(&self) -> String {
        match self.port {
            Some(port) => format!("{}:{port}", self.host),
            None => self.host.clone(),
        }
    }

    /// Where the proxy sends its calls: `https://api.openai.com`, `http://127.0.0.1:8080`.
    pub fn origin(&self) -> String {
        let scheme = if self.https { "https" } else { "http" };
        format!("{scheme}://{}", self.authority())
    }

    /// The endpoint a request for `path` (on the provider's host) with `verb` is, if its route
    /// carries it.
    pub fn endpoint(&self, verb: Verb, path: &str) -> Option<&Endpoint> {
        self.endpoints
            .iter()
            .find(|e| e.verb == verb && path_matches(&e.path, path))
    }

    /// `call`, a generation's body to `path`, held to [`Provider::max_output_tokens`]: the cap
    /// its API shape names added when it names none, a larger one lowered. Whether it changed.
    pub fn cap_output(&self, path: &str, call: &mut serde_json::Value) -> bool {
        let (Some(cap), Some(object)) = (self.max_output_tokens, call.as_object_mut()) else {
            return false;
        };
        let (object, keys): (&mut serde_json::Map<String, serde_json::Value>, &[&str]) = if path
            .ends_with("/chat/completions")
        {
            (object, &["max_tokens", "max_completion_tokens"])
        } else if path.ends_with("/responses") || path.ends_with("/responses/compact") {
            (object, &["max_output_tokens"])
        } else if path.ends_with("/messages") {
            (object, &["max_tokens"])
        } else if path.ends_with(":generateContent") || path.ends_with(":streamGenerateContent") {
            let config = object
                .entry("generationConfig")
                .or_insert_with(|| serde_json::json!({}));
            match config.as_object_mut() {
                Some(config) => (config, &["maxOutputTokens"]),
                None => return false,
            }
        } else {
            return false;
        };
        let mut changed = false;
        let mut named = false;
        for key in keys {
            if let Some(asked) = object.get(*key).and_then(serde_json::Value::as_u64) {
                named = true;
                if asked > cap {
                    object.insert(key.to_string(), cap.into());
                    changed = true;
                }
            }
        }
        if !named {
            object.insert(keys[0].to_string(), cap.into());
            changed = true;
        }
        changed
    }

    /// The endpoints for people: `POST /v1/messages, GET /v1/models/{id}, …`.
    pub fn endpoint_list(&self) -> String {
        self.endpoints
            .iter()
            .map(|e| format!("{} {}", e.verb.name(), e.path.replace('*', "{model}")))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// Whether `path` is `pattern`: the same segments, `*` one name (letters, digits, `-._@`), a
/// `*:verb` segment a name and `:verb`. A path with an empty, `.` or `..` segment, or any other
/// character (`%` among them: nothing is decoded on the way), matches nothing.
fn path_matches(pattern: &str, path: &str) -> bool {
    let name = |s: &str| {
        !s.is_empty()
            && s != "."
            && s != ".."
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'@'))
    };
    let (mut pattern, mut path) = (pattern.split('/'), path.split('/'));
    loop {
        match (pattern.next(), path.next()) {
            (None, None) => return true,
            (Some(p), Some(s)) => {
                let ok = match p.strip_prefix('*') {
                    Some("") => name(s),
                    Some(verb) => s
                        .strip_suffix(verb)
                        .is_some_and(|model| verb.starts_with(':') && name(model)),
                    None => p == s,
                };
                if !ok {
                    return false;
                }
            }
            _ => return false,
        }
    }
}

/// The built-in provider a key variable belongs to.
pub fn provider_of_key(name: &str) -> Option<&'static Arc<Provider>> {
    built_ins()
        .iter()
        .find(|p| p.keys.iter().any(|k| k == name))
}

/// Whether `name` holds a built-in provider's key (never passed to an agent with its value).
pub fn is_model_key(name: &str) -> bool {
    provider_of_key(name).is_some()
}

/// The built-in provider named `name`.
pub fn by_route(name: &str) -> Option<&'static Arc<Provider>> {
    built_ins().iter().find(|p| p.name == name)
}

/// The built-in provider whose host is `host`.
pub fn by_host(host: &str) -> Option<&'static Arc<Provider>> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    built_ins().iter().find(|p| p.host == host)
}

#[cfg(test)]
#[path = "providers_tests.rs"]
mod tests;

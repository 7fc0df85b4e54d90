//! The model APIs the proxy routes (issues 37 and 46): each one's host, the variables holding its
//! keys, its route on the proxy (`http://127.0.0.1:<port>/<route>`, handed to the agent as its
//! base URL under the variable SDKs and CLIs read), the shape of its API, the credential slots
//! its key may stand in, and the endpoints its route carries — the model calls (generation,
//! token counting, the model list) and nothing else. A key variable named here never reaches an
//! agent with its value. Data and look-ups only: each [`Provider`] is one row, later one entry
//! of a configured `providers:` table.
//! Not for: the placeholders and the agent's environment (`egress`, its `Door`), putting the key
//! in its slot (`egress::credential`), or forwarding (`egress::model`).

/// One model API.
#[derive(Debug, PartialEq, Eq)]
pub struct Provider {
    /// The first segment of its path on the proxy.
    pub route: &'static str,
    /// Where the proxy forwards it (https).
    pub host: &'static str,
    /// Variables holding its keys, in the order a CLI prefers them.
    pub keys: &'static [&'static str],
    /// The variable holding its base URL for SDKs that read one.
    pub base_var: &'static str,
    /// The path under the host that the base URL names (OpenAI's `/v1`).
    pub base_path: &'static str,
    /// The shape of its requests, answers and errors.
    pub api: Api,
    /// Where its key goes in a request, and nowhere else.
    pub slots: &'static [Slot],
    /// The requests its route carries; any other is refused, naming its path.
    pub endpoints: &'static [Endpoint],
}

/// The shape of a model API.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Api {
    /// Anthropic Messages.
    Anthropic,
    /// OpenAI chat completions and Responses (OpenRouter too).
    OpenAi,
    /// Google's Gemini API.
    Gemini,
}

/// A place a key is carried in a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slot {
    /// A header whose whole value is the key (`x-api-key: <key>`).
    Header(&'static str),
    /// `authorization: Bearer <key>`.
    Bearer,
    /// A query parameter whose value is the key (`?key=<key>`: Gemini's documented form).
    Query(&'static str),
}

impl Slot {
    /// For people: `x-api-key`, `authorization: Bearer`, `the query parameter key`.
    pub fn describe(self) -> String {
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
    /// Token counting.
    Count,
    /// The model list, or one model.
    List,
}

/// One request a route carries: its verb and its path on the provider's host, where `*` stands
/// for one name (a model's id) and `*:verb` for a name followed by `:verb` (Gemini's methods).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Endpoint {
    pub verb: Verb,
    pub path: &'static str,
    pub call: Call,
}

const fn at(verb: Verb, path: &'static str, call: Call) -> Endpoint {
    Endpoint { verb, path, call }
}

use Call::{Count, Generate, List};
use Verb::{Get, Post, WebSocket};

pub const PROVIDERS: &[Provider] = &[
    Provider {
        route: "anthropic",
        host: "api.anthropic.com",
        keys: &["ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"],
        base_var: "ANTHROPIC_BASE_URL",
        base_path: "",
        api: Api::Anthropic,
        // An API key in `x-api-key`, an OAuth token as a bearer token.
        slots: &[Slot::Header("x-api-key"), Slot::Bearer],
        endpoints: &[
            at(Post, "/v1/messages", Generate),
            at(Post, "/v1/messages/count_tokens", Count),
            at(Get, "/v1/models", List),
            at(Get, "/v1/models/*", List),
        ],
    },
    Provider {
        route: "openai",
        host: "api.openai.com",
        keys: &["OPENAI_API_KEY", "CODEX_API_KEY"],
        base_var: "OPENAI_BASE_URL",
        base_path: "/v1",
        api: Api::OpenAi,
        slots: &[Slot::Bearer],
        endpoints: &[
            at(Post, "/v1/responses", Generate),
            at(WebSocket, "/v1/responses", Generate),
            // codex's remote compaction of a long history: a generation.
            at(Post, "/v1/responses/compact", Generate),
            at(Post, "/v1/responses/input_tokens", Count),
            at(Post, "/v1/chat/completions", Generate),
            at(Get, "/v1/models", List),
            at(Get, "/v1/models/*", List),
        ],
    },
    Provider {
        route: "openrouter",
        host: "openrouter.ai",
        keys: &["OPENROUTER_API_KEY"],
        base_var: "OPENROUTER_BASE_URL",
        base_path: "/api/v1",
        api: Api::OpenAi,
        slots: &[Slot::Bearer],
        endpoints: &[
            at(Post, "/api/v1/chat/completions", Generate),
            at(Post, "/api/v1/responses", Generate),
            at(Post, "/api/v1/messages", Generate),
            at(Get, "/api/v1/models", List),
        ],
    },
    Provider {
        route: "gemini",
        host: "generativelanguage.googleapis.com",
        keys: &["GEMINI_API_KEY"],
        base_var: "GEMINI_BASE_URL",
        base_path: "",
        api: Api::Gemini,
        slots: &[Slot::Header("x-goog-api-key"), Slot::Query("key")],
        endpoints: &[
            at(Post, "/v1beta/models/*:generateContent", Generate),
            at(Post, "/v1beta/models/*:streamGenerateContent", Generate),
            at(Post, "/v1beta/models/*:countTokens", Count),
            at(Get, "/v1beta/models", List),
            at(Get, "/v1beta/models/*", List),
            at(Post, "/v1/models/*:generateContent", Generate),
            at(Post, "/v1/models/*:streamGenerateContent", Generate),
            at(Post, "/v1/models/*:countTokens", Count),
            at(Get, "/v1/models", List),
            at(Get, "/v1/models/*", List),
        ],
    },
];

impl Provider {
    /// The endpoint a request for `path` (on the provider's host) with `verb` is, if its route
    /// carries it.
    pub fn endpoint(&self, verb: Verb, path: &str) -> Option<&'static Endpoint> {
        self.endpoints
            .iter()
            .find(|e| e.verb == verb && path_matches(e.path, path))
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

/// The provider a key variable belongs to.
pub fn provider_of_key(name: &str) -> Option<&'static Provider> {
    PROVIDERS.iter().find(|p| p.keys.contains(&name))
}

/// Whether `name` holds a model key (never passed to an agent with its value).
pub fn is_model_key(name: &str) -> bool {
    provider_of_key(name).is_some()
}

/// The provider routed under `route`.
pub fn by_route(route: &str) -> Option<&'static Provider> {
    PROVIDERS.iter().find(|p| p.route == route)
}

/// The provider whose host is `host`.
pub fn by_host(host: &str) -> Option<&'static Provider> {
    let host = host.trim_end_matches('.').to_ascii_lowercase();
    PROVIDERS.iter().find(|p| p.host == host)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_route_carries_its_model_calls_and_nothing_else() {
        let p = |route| by_route(route).unwrap();
        let cases: &[(&str, Verb, &str, Option<Call>)] = &[
            ("anthropic", Post, "/v1/messages", Some(Generate)),
            ("anthropic", Post, "/v1/messages/count_tokens", Some(Count)),
            ("anthropic", Get, "/v1/models", Some(List)),
            ("anthropic", Get, "/v1/models/claude-sonnet-4-5", Some(List)),
            ("anthropic", Get, "/v1/messages", None),
            ("anthropic", Post, "/v1/messages/batches", None),
            ("anthropic", Post, "/v1/files", None),
            ("anthropic", Post, "/v1/messages/../files", None),
            ("anthropic", Post, "/v1//messages", None),
            ("anthropic", Get, "/v1/models/%2e%2e", None),
            ("anthropic", Get, "/v1/models/a/b", None),
            ("anthropic", Post, "/v1/organizations/api_keys", None),
            ("openai", Post, "/v1/responses", Some(Generate)),
            ("openai", WebSocket, "/v1/responses", Some(Generate)),
            ("openai", WebSocket, "/v1/chat/completions", None),
            ("openai", Post, "/v1/chat/completions", Some(Generate)),
            ("openai", Post, "/v1/responses/input_tokens", Some(Count)),
            ("openai", Get, "/v1/responses/resp_1", None),
            ("openai", Post, "/v1/batches", None),
            ("openai", Post, "/v1/files", None),
            ("openai", Post, "/v1/uploads", None),
            ("openai", Post, "/v1/embeddings", None),
            ("openai", Post, "/v1/vector_stores", None),
            (
                "openrouter",
                Post,
                "/api/v1/chat/completions",
                Some(Generate),
            ),
            ("openrouter", Get, "/api/v1/keys", None),
            (
                "gemini",
                Post,
                "/v1beta/models/gemini-2.5-pro:streamGenerateContent",
                Some(Generate),
            ),
            (
                "gemini",
                Post,
                "/v1beta/models/gemini-2.5-pro:countTokens",
                Some(Count),
            ),
            ("gemini", Post, "/v1beta/models/:generateContent", None),
            (
                "gemini",
                Post,
                "/v1beta/models/x:batchGenerateContent",
                None,
            ),
            (
                "gemini",
                Post,
                "/v1beta/tunedModels/x:generateContent",
                None,
            ),
            ("gemini", Post, "/v1beta/cachedContents", None),
            ("gemini", Post, "/upload/v1beta/files", None),
            ("gemini", Get, "/v1beta/models", Some(List)),
        ];
        for (route, verb, path, call) in cases {
            assert_eq!(
                p(route).endpoint(*verb, path).map(|e| e.call),
                *call,
                "{route} {verb:?} {path}"
            );
        }
        assert!(p("anthropic")
            .endpoint_list()
            .contains("GET /v1/models/{model}"));
    }

    #[test]
    fn every_provider_has_a_slot_and_a_generation() {
        for p in PROVIDERS {
            assert!(!p.slots.is_empty(), "{}", p.route);
            assert!(
                p.endpoints.iter().any(|e| e.call == Generate),
                "{}",
                p.route
            );
            assert!(
                p.endpoints
                    .iter()
                    .all(|e| e.path.starts_with(&format!("{}/", p.base_path))
                        || p.base_path.is_empty()),
                "{}: an endpoint outside its base URL",
                p.route
            );
        }
    }
}

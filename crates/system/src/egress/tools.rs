//! Model calls carry model calls only (issue 46): a request body that asks the model API to
//! reach out on its own is refused, naming the field, unless `sandbox.network.provider_tools`
//! allows that kind of tool. Read from any API's shape, wherever it stands (the request, or a
//! Responses websocket's `response.create` message):
//!
//! - `mcp`: Anthropic's `mcp_servers` and `mcp_toolset` tools, Responses' `mcp` tools — the
//!   provider connects to a server the request names, carrying what the agent chose;
//! - `web_search`: tools whose type starts with `web_search` (Anthropic, Responses), chat
//!   completions' `web_search_options`, OpenRouter's `web` plugin and `:online` models,
//!   Gemini's `googleSearch`, `googleSearchRetrieval`, `enterpriseWebSearch`, `googleMaps`;
//! - `web_fetch`: tools whose type starts with `web_fetch`, Gemini's `urlContext`, and content
//!   given by URL for the provider to fetch (an image or document `source` of type `url`, an
//!   `input_image`, `image_url` or `file` part with an http(s) URL, an `input_file`'s
//!   `file_url`, Gemini's `fileData`);
//! - `code_execution`: Anthropic's `code_execution_*`, Responses' `code_interpreter`, Gemini's
//!   `codeExecution` — code run in the provider's container, paid apart from tokens;
//! - `file_search`: Responses' and Gemini's `file_search`, and content naming a stored file
//!   (`source` of type `file`, a `file_id`) — the account's files, not the run's.
//!
//! Tools the client runs itself (functions, `bash`, `text_editor`, `computer`, …) pass. Pure.
//! Not for: which paths a route carries (`providers`), forwarding (`egress::model`).

use serde_json::Value;

use crate::config::ProviderTool;

/// A model call asking for a tool the provider runs itself, not allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolRefusal {
    /// Where in the body: `tools[1].type`, `messages[0].content[2].source`.
    pub field: String,
    /// What stood there (cut short).
    pub value: String,
    pub tool: ProviderTool,
}

impl ToolRefusal {
    /// The refusal's words: the field, what it asks for, and the line that would allow it.
    pub fn message(&self) -> String {
        let what = match self.tool {
            ProviderTool::Mcp => "an MCP server the model API would connect to",
            ProviderTool::WebSearch => "a web search the model API would run",
            ProviderTool::WebFetch => "a page or file the model API would fetch by URL",
            ProviderTool::CodeExecution => "code the model API would run in its own container",
            ProviderTool::FileSearch => "the account's stored files",
        };
        format!(
            "opentiger's proxy refused this model call: `{}` ({}) asks for {what}, beyond the run's allow list and meter. To allow it, add `sandbox.network.provider_tools: [{}]` to .opentiger.yml (docs/security.md says what that allows)",
            self.field,
            self.value,
            self.tool.name()
        )
    }
}

/// The first tool in `body` the provider would run itself that `allowed` does not list.
pub fn refused(body: &Value, allowed: &[ProviderTool]) -> Option<ToolRefusal> {
    let mut found = Vec::new();
    request(body, "", &mut found);
    if let Some(response) = body.get("response").filter(|r| r.is_object()) {
        request(response, "response.", &mut found);
    }
    content(body, &mut String::new(), &mut found);
    found.into_iter().find(|r| !allowed.contains(&r.tool))
}

fn hit(found: &mut Vec<ToolRefusal>, field: String, value: &Value, tool: ProviderTool) {
    let value = match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    let value: String = value
        .chars()
        .take(80)
        .map(|c| if c == '`' || c.is_control() { '?' } else { c })
        .collect();
    found.push(ToolRefusal { field, value, tool });
}

/// A request's own fields: its tools, MCP servers, search options, plugins, model.
fn request(body: &Value, at: &str, found: &mut Vec<ToolRefusal>) {
    use ProviderTool::{Mcp, WebSearch};
    if let Some(servers) = body
        .get("mcp_servers")
        .filter(|s| s.as_array().is_some_and(|a| !a.is_empty()))
    {
        hit(found, format!("{at}mcp_servers"), servers, Mcp);
    }
    if let Some(options) = body.get("web_search_options").filter(|o| !o.is_null()) {
        hit(found, format!("{at}web_search_options"), options, WebSearch);
    }
    for (i, plugin) in array(body, "plugins") {
        if let Some(id) = plugin.get("id").filter(|id| *id == "web") {
            hit(found, format!("{at}plugins[{i}].id"), id, WebSearch);
        }
    }
    if let Some(model) = body
        .get("model")
        .filter(|m| m.as_str().is_some_and(|m| m.ends_with(":online")))
    {
        hit(found, format!("{at}model"), model, WebSearch);
    }
    for (i, tool) in array(body, "tools") {
        if let Some(kind) = tool.get("type") {
            if let Some(t) = kind.as_str().and_then(tool_type) {
                hit(found, format!("{at}tools[{i}].type"), kind, t);
            }
        }
        // Gemini: a tool is an object whose one key names it.
        for (key, value) in tool.as_object().into_iter().flatten() {
            if let Some(t) = gemini_tool(key) {
                hit(found, format!("{at}tools[{i}].{key}"), value, t);
            }
        }
    }
}

fn array<'a>(body: &'a Value, key: &str) -> impl Iterator<Item = (usize, &'a Value)> {
    body.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
}

/// The kind of a tool `type` (Anthropic's dated names, Responses' names), if the provider runs
/// it.
fn tool_type(kind: &str) -> Option<ProviderTool> {
    use ProviderTool::*;
    let kind = kind.to_ascii_lowercase();
    [
        ("mcp", Mcp),
        ("web_search", WebSearch),
        ("web_fetch", WebFetch),
        ("code_execution", CodeExecution),
        ("code_interpreter", CodeExecution),
        ("file_search", FileSearch),
    ]
    .into_iter()
    .find(|(prefix, _)| kind.starts_with(prefix))
    .map(|(_, t)| t)
}

fn gemini_tool(key: &str) -> Option<ProviderTool> {
    use ProviderTool::*;
    Some(match key {
        "googleSearch"
        | "google_search"
        | "googleSearchRetrieval"
        | "google_search_retrieval"
        | "enterpriseWebSearch"
        | "enterprise_web_search"
        | "googleMaps"
        | "google_maps" => WebSearch,
        "urlContext" | "url_context" => WebFetch,
        "codeExecution" | "code_execution" => CodeExecution,
        "fileSearch" | "file_search" => FileSearch,
        _ => return None,
    })
}

fn is_url(value: Option<&Value>) -> bool {
    value.and_then(Value::as_str).is_some_and(|u| {
        let u = u.trim_start().to_ascii_lowercase();
        u.starts_with("http://") || u.starts_with("https://") || u.starts_with("//")
    })
}

/// Content given by URL or as a stored file, anywhere in `value` (`path` is where it is).
fn content(value: &Value, path: &mut String, found: &mut Vec<ToolRefusal>) {
    use ProviderTool::{FileSearch, WebFetch};
    match value {
        Value::Object(map) => {
            let kind = map.get("type").and_then(Value::as_str).unwrap_or("");
            let source = map.get("source");
            let source_kind = source.and_then(|s| s.get("type")).and_then(Value::as_str);
            let image_url = map.get("image_url");
            let at =
                |field: &str| format!("{path}{}{field}", if path.is_empty() { "" } else { "." });
            match (kind, source_kind) {
                (_, Some("url")) => hit(found, at("source"), source.unwrap_or(value), WebFetch),
                (_, Some("file")) => hit(found, at("source"), source.unwrap_or(value), FileSearch),
                _ => {}
            }
            let by_url = match kind {
                "input_image" => is_url(image_url).then_some("image_url"),
                "image_url" => (is_url(image_url) || is_url(image_url.and_then(|u| u.get("url"))))
                    .then_some("image_url"),
                "input_file" => map.contains_key("file_url").then_some("file_url"),
                "file" => is_url(map.get("file").and_then(|f| f.get("file_data")))
                    .then_some("file.file_data"),
                _ => None,
            };
            if let Some(field) = by_url {
                hit(found, at(field), value, WebFetch);
            }
            if matches!(kind, "input_image" | "input_file") && map.contains_key("file_id") {
                hit(found, at("file_id"), &map["file_id"], FileSearch);
            }
            for key in ["fileData", "file_data"] {
                if let Some(data) = map.get(key).filter(|d| d.is_object()) {
                    hit(found, at(key), data, WebFetch);
                }
            }
            for (key, inner) in map {
                let len = path.len();
                if !path.is_empty() {
                    path.push('.');
                }
                path.push_str(key);
                content(inner, path, found);
                path.truncate(len);
            }
        }
        Value::Array(items) => {
            for (i, inner) in items.iter().enumerate() {
                let len = path.len();
                path.push_str(&format!("[{i}]"));
                content(inner, path, found);
                path.truncate(len);
            }
        }
        Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use ProviderTool::*;

    #[test]
    fn tools_the_provider_runs_are_refused_with_their_field() {
        let cases: &[(Value, Option<(&str, ProviderTool)>)] = &[
            // Anthropic Messages.
            (
                json!({"model": "claude-sonnet-4-5", "mcp_servers": [{"type": "url", "url": "https://evil.test/sse"}]}),
                Some(("mcp_servers", Mcp)),
            ),
            (json!({"mcp_servers": []}), None),
            (
                json!({"tools": [{"name": "Write", "input_schema": {}}, {"type": "web_fetch_20250910", "name": "web_fetch"}]}),
                Some(("tools[1].type", WebFetch)),
            ),
            (
                json!({"tools": [{"type": "web_search_20250305", "name": "web_search"}]}),
                Some(("tools[0].type", WebSearch)),
            ),
            (
                json!({"tools": [{"type": "code_execution_20250825", "name": "code_execution"}]}),
                Some(("tools[0].type", CodeExecution)),
            ),
            (
                json!({"tools": [{"type": "mcp_toolset", "mcp_server_name": "x"}]}),
                Some(("tools[0].type", Mcp)),
            ),
            (
                json!({"tools": [{"type": "bash_20250124", "name": "bash"}, {"type": "text_editor_20250728"}, {"type": "custom", "name": "x"}]}),
                None,
            ),
            (
                json!({"messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "https://evil.test/?k=v"}}]}]}),
                Some(("messages[0].content[0].source", WebFetch)),
            ),
            (
                json!({"messages": [{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}}]}]}),
                None,
            ),
            (
                json!({"messages": [{"content": [{"type": "document", "source": {"type": "file", "file_id": "file_1"}}]}]}),
                Some(("messages[0].content[0].source", FileSearch)),
            ),
            // A client tool's input that names a URL is the agent's own call: it passes.
            (
                json!({"messages": [{"content": [{"type": "tool_use", "name": "WebFetch", "input": {"url": "https://docs.rs/"}}]}]}),
                None,
            ),
            // OpenAI Responses (HTTP and websocket).
            (
                json!({"tools": [{"type": "function", "name": "shell"}, {"type": "mcp", "server_url": "https://evil.test"}]}),
                Some(("tools[1].type", Mcp)),
            ),
            (
                json!({"type": "response.create", "response": {"tools": [{"type": "web_search_preview"}]}}),
                Some(("response.tools[0].type", WebSearch)),
            ),
            (
                json!({"type": "response.create", "tools": [{"type": "web_search", "external_web_access": true}]}),
                Some(("tools[0].type", WebSearch)),
            ),
            (
                json!({"tools": [{"type": "code_interpreter", "container": {"type": "auto"}}]}),
                Some(("tools[0].type", CodeExecution)),
            ),
            (
                json!({"tools": [{"type": "file_search", "vector_store_ids": ["vs_1"]}]}),
                Some(("tools[0].type", FileSearch)),
            ),
            (
                json!({"input": [{"role": "user", "content": [{"type": "input_image", "image_url": "https://evil.test/x.png"}]}]}),
                Some(("input[0].content[0].image_url", WebFetch)),
            ),
            (
                json!({"input": [{"content": [{"type": "input_image", "image_url": "data:image/png;base64,AAAA"}]}]}),
                None,
            ),
            (
                json!({"input": [{"content": [{"type": "input_file", "file_url": "https://evil.test/a.pdf"}]}]}),
                Some(("input[0].content[0].file_url", WebFetch)),
            ),
            // Chat completions, OpenRouter.
            (
                json!({"web_search_options": {}}),
                Some(("web_search_options", WebSearch)),
            ),
            (
                json!({"messages": [{"content": [{"type": "image_url", "image_url": {"url": "HTTPS://evil.test/x"}}]}]}),
                Some(("messages[0].content[0].image_url", WebFetch)),
            ),
            (
                json!({"plugins": [{"id": "web", "max_results": 3}]}),
                Some(("plugins[0].id", WebSearch)),
            ),
            (
                json!({"model": "openai/gpt-4o:online"}),
                Some(("model", WebSearch)),
            ),
            // Gemini.
            (
                json!({"tools": [{"functionDeclarations": []}, {"googleSearch": {}}]}),
                Some(("tools[1].googleSearch", WebSearch)),
            ),
            (
                json!({"tools": [{"url_context": {}}]}),
                Some(("tools[0].url_context", WebFetch)),
            ),
            (
                json!({"tools": [{"codeExecution": {}}]}),
                Some(("tools[0].codeExecution", CodeExecution)),
            ),
            (
                json!({"contents": [{"parts": [{"fileData": {"fileUri": "https://evil.test/v"}}]}]}),
                Some(("contents[0].parts[0].fileData", WebFetch)),
            ),
        ];
        for (body, expected) in cases {
            let got = refused(body, &[]).map(|r| (r.field.clone(), r.tool));
            let expected = expected.map(|(f, t)| (f.to_string(), t));
            assert_eq!(got, expected, "{body}");
        }
    }

    #[test]
    fn a_configured_tool_passes_and_the_refusal_names_its_line() {
        let body =
            json!({"tools": [{"type": "web_search_20250305"}], "mcp_servers": [{"url": "x"}]});
        let first = refused(&body, &[]).unwrap();
        assert_eq!(first.tool, Mcp);
        let words = refused(&body, &[Mcp]).unwrap().message();
        assert!(
            words.contains("`tools[0].type` (web_search_20250305)")
                && words.contains("`sandbox.network.provider_tools: [web_search]`"),
            "{words}"
        );
        assert_eq!(refused(&body, &[Mcp, WebSearch]), None);
    }
}

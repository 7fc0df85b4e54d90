use super::*;
use crate::config::load_str;
use crate::doctor::Level;
use std::io::{BufRead, BufReader, Write};

fn config(yaml: &str) -> Config {
    load_str(yaml, ".opentiger.yml").unwrap()
}

fn lookup(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
    move |k: &str| {
        pairs
            .iter()
            .find(|(n, _)| *n == k)
            .map(|(_, v)| v.to_string())
    }
}

const LOCAL: &str = "providers:\n  local:\n    api: openai-chat\n    base_url: BASE\n    key: LOCAL_MODEL_KEY\n  free:\n    api: openai-chat\n    base_url: http://127.0.0.1:9/v1\nagents:\n  default:\n    executor: aider\n    provider: local\n    model: local-model\n  judge:\n    executor: codex\n";

/// Offline: a missing key fails naming the provider's own variable and configuration line;
/// each user is named with how its CLI speaks the API; a provider no agent picks is said so.
#[test]
fn each_provider_is_checked_with_its_own_key_and_users() {
    let c = config(&LOCAL.replace("BASE", "http://127.0.0.1:8080/v1"));
    let missing = checks(&c, &lookup(&[("OPENAI_API_KEY", "sk-other")]), false);
    let local: Vec<&Check> = missing
        .iter()
        .filter(|c| c.detail.starts_with("providers.local:"))
        .collect();
    assert_eq!(local.len(), 1, "{missing:?}");
    assert_eq!(local[0].level, Level::Fail, "{missing:?}");
    assert!(
        local[0]
            .detail
            .contains("its key LOCAL_MODEL_KEY is not set"),
        "{missing:?}"
    );
    let fix = local[0].fix.as_deref().unwrap_or_default();
    assert!(
        fix.starts_with("export LOCAL_MODEL_KEY=... for the runner")
            && fix.contains("`providers.local.key: LOCAL_MODEL_KEY` names it"),
        "{fix}"
    );
    assert!(
        !fix.contains("OPENAI_API_KEY") && !fix.contains("ANTHROPIC"),
        "{fix}"
    );
    let set = checks(&c, &lookup(&[("LOCAL_MODEL_KEY", "k")]), false);
    let text: Vec<String> = set.iter().map(|c| c.detail.clone()).collect();
    assert!(set.iter().all(|c| c.level == Level::Ok), "{text:?}");
    assert!(
        text[1].contains("OpenAI chat completions at http://127.0.0.1:8080/v1; its key LOCAL_MODEL_KEY is set for the runner; used by the planner, worker, tester, docser, research (aider at agents.default), "),
        "{text:?}"
    );
    assert!(
        text[1].contains("the judge (codex at agents.judge, which speaks OpenAI Responses only: opentiger's proxy translates its calls to chat completions)"),
        "{text:?}"
    );
    assert!(
        text[1].ends_with("(--online asks it for its models)"),
        "{text:?}"
    );
    assert!(
        text[0].starts_with("providers.free: OpenAI chat completions at http://127.0.0.1:9/v1; it takes no key (none is sent); no agent picks it"),
        "{text:?}"
    );
}

/// A stand-in endpoint answering one request with `status` and `body`; it sends the request
/// head it read.
fn endpoint(status: u16, body: &'static str) -> (String, std::sync::mpsc::Receiver<String>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        if let Some(stream) = listener.incoming().flatten().next() {
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut head = String::new();
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                head.push_str(&line);
            }
            let _ = tx.send(head);
            let mut stream = stream;
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (format!("http://{addr}/v1"), rx)
}

/// `--online` against loopback stand-ins: the model listed, not listed, the key refused, the
/// endpoint down; the key goes in its header and the query parameters come along.
#[test]
fn online_the_endpoint_lists_the_model_and_takes_the_key() {
    let run = |status, body: &'static str, query: &str| {
        let (base, seen) = endpoint(status, body);
        let c = config(&format!(
            "{}{query}",
            LOCAL.replace("BASE", &base).replace(
                "    key: LOCAL_MODEL_KEY\n",
                "    key: LOCAL_MODEL_KEY\n    key_header: api-key\n    query: {api-version: \"2024 10\"}\n"
            )
        ));
        let checks = checks(&c, &lookup(&[("LOCAL_MODEL_KEY", "sk-local-1")]), true);
        let head = seen
            .recv_timeout(std::time::Duration::from_secs(10))
            .unwrap_or_default();
        let online = checks
            .iter()
            .find(|c| c.detail.starts_with("providers.local:") && !c.detail.contains(" at "))
            .cloned()
            .unwrap_or_else(|| panic!("{checks:?}"));
        (online, head)
    };
    let (ok, head) = run(
        200,
        r#"{"object":"list","data":[{"id":"local-model"},{"id":"other"}]}"#,
        "",
    );
    assert_eq!(ok.level, Level::Ok, "{ok:?}");
    assert!(
        ok.detail
            .ends_with("/v1/models answers: local-model listed"),
        "{ok:?}"
    );
    assert!(
        head.starts_with("GET /v1/models?api-version=2024%2010 HTTP/1.1"),
        "{head}"
    );
    assert!(
        head.to_ascii_lowercase().contains("api-key: sk-local-1"),
        "{head}"
    );
    let (missing, _) = run(200, r#"{"data":[{"id":"other"}]}"#, "");
    assert_eq!(missing.level, Level::Fail, "{missing:?}");
    assert!(
        missing.detail.contains(
            "does not list `local-model`, the model `agents.default.model` names (it lists other)"
        ),
        "{missing:?}"
    );
    assert_eq!(
        missing.fix.as_deref(),
        Some("set `agents.default.model` to a model it lists, as it names it")
    );
    let (refused, _) = run(
        401,
        r#"{"error":{"message":"Invalid API key sk-local-1"}}"#,
        "",
    );
    assert_eq!(refused.level, Level::Fail, "{refused:?}");
    assert!(
        refused
            .detail
            .contains("refused the key (401: Invalid API key [key])"),
        "{refused:?}"
    );
    assert!(
        refused.fix.as_deref().unwrap_or_default().starts_with(
            "check the key in LOCAL_MODEL_KEY (`providers.local.key: LOCAL_MODEL_KEY`)"
        ),
        "{refused:?}"
    );
    // Nothing listens on port 9 of loopback.
    let c = config("providers:\n  free:\n    api: openai-chat\n    base_url: http://127.0.0.1:9/v1\nagents:\n  default:\n    executor: aider\n    provider: free\n    model: m\n");
    let down = checks(&c, &lookup(&[]), true);
    let down = down
        .iter()
        .find(|c| c.detail.starts_with("providers.free: could not reach"))
        .unwrap_or_else(|| panic!("{down:?}"));
    assert_eq!(down.level, Level::Fail);
    assert!(
        down.fix
            .as_deref()
            .unwrap_or_default()
            .contains("correct `providers.free.base_url: http://127.0.0.1:9/v1`"),
        "{down:?}"
    );
}

/// A base URL set for the runner reaches no agent: said, with the provider to declare instead.
#[test]
fn a_base_url_for_the_runner_is_said_to_reach_no_agent() {
    let c = config("agents:\n  default:\n    executor: aider\n    model: openai/m\n");
    let out = checks(
        &c,
        &lookup(&[("OPENAI_API_BASE", "http://127.0.0.1:8080/v1")]),
        false,
    );
    assert_eq!(out.len(), 1, "{out:?}");
    assert_eq!(out[0].level, Level::Warn);
    assert!(
        out[0].detail.starts_with(
            "OPENAI_API_BASE=http://127.0.0.1:8080/v1 is set for the runner, but no agent sees it"
        ),
        "{out:?}"
    );
    assert!(
        out[0].fix.as_deref().unwrap_or_default().contains(
            "`providers: {local: {api: openai-chat, base_url: \"http://127.0.0.1:8080/v1\"}}`"
        ),
        "{out:?}"
    );
    // The configuration it suggests loads.
    config("providers: {local: {api: openai-chat, base_url: \"http://127.0.0.1:8080/v1\"}}\nagents: {default: {executor: aider, provider: local, model: m}}\n");
}

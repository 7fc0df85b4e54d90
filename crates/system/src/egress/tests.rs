//! The proxy end to end on loopback: a door in `Open` isolation (its listener on the host's
//! loopback), a plain TCP client playing the agent, and a stand-in upstream that records what
//! reached it and answers with a canned response.

use super::*;
use crate::config::{AgentRole, HostRule, NetworkUser};
use crate::model::Role;
use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::mpsc;
use std::time::Duration;

/// A stand-in upstream: answers every connection with `response` (after reading the request
/// head and its body), and sends each request head it read.
fn upstream(response: Vec<u8>) -> (SocketAddr, mpsc::Receiver<String>) {
    let (addr, both) = endpoint(response);
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for (head, _) in both {
            let _ = tx.send(head);
        }
    });
    (addr, rx)
}

/// [`upstream`], sending each request's head and body.
fn endpoint(response: Vec<u8>) -> (SocketAddr, mpsc::Receiver<(String, String)>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (tx, response) = (tx.clone(), response.clone());
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let head = read_head(&mut reader);
                let mut body = vec![0u8; content_length(&head)];
                let _ = reader.read_exact(&mut body);
                let _ = tx.send((head, String::from_utf8_lossy(&body).into_owned()));
                let mut stream = stream;
                let _ = stream.write_all(&response);
                // A websocket answer goes on: keep the connection until the client closes.
                if response.starts_with(b"HTTP/1.1 101") {
                    let mut rest = Vec::new();
                    let _ = reader.read_to_end(&mut rest);
                }
            });
        }
    });
    (addr, rx)
}

fn read_head(reader: &mut impl BufRead) -> String {
    let mut head = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            return head;
        }
        head.push_str(&line);
    }
}

fn content_length(head: &str) -> usize {
    head.lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .unwrap_or(0)
}

fn spec(resolve: &[(&str, SocketAddr)], budget: Option<f64>) -> SessionSpec {
    let key = |v: &str| match v {
        "ANTHROPIC_API_KEY" => Some("sk-ant-REAL-KEY".to_string()),
        "OPENAI_API_KEY" => Some("sk-REAL-OPENAI".to_string()),
        _ => None,
    };
    SessionSpec {
        user: NetworkUser::Agent(AgentRole::Task(Role::Worker)),
        allow: vec![HostRule::parse("allowed.test").unwrap()],
        routes: routes(
            &["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"],
            key,
        ),
        prices: pricing::Prices::new(&BTreeMap::new()),
        budget: budget.map(|usd| Budget {
            remaining_usd: usd,
            what: "budget.per_task_usd".to_string(),
        }),
        resolve: resolve
            .iter()
            .map(|(h, a)| (h.to_string(), *a))
            .collect::<BTreeMap<_, _>>(),
        provider_tools: Vec::new(),
        secrets: Secrets::new([FORGE_TOKEN.to_string()]),
        own_traffic: OwnTraffic {
            cli: "codex".to_string(),
            hosts: vec![HostRule::parse("chatgpt.com").unwrap()],
        },
    }
}

/// A forge token the runner holds: no answer may carry it back.
const FORGE_TOKEN: &str = "ghp_FORGEtokenOfTheRunner0123456789ab";

fn open(spec: SessionSpec) -> Door {
    let isolation = NetIsolation::Open {
        why: "a test".to_string(),
    };
    Door::open(spec, isolation).unwrap()
}

fn port(door: &Door) -> u16 {
    let proxy = door
        .env()
        .iter()
        .find(|(k, _)| k == "HTTP_PROXY")
        .unwrap()
        .1
        .clone();
    proxy.rsplit(':').next().unwrap().parse().unwrap()
}

fn var(door: &Door, name: &str) -> String {
    door.env()
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.clone())
        .unwrap_or_else(|| panic!("{name} not given"))
}

/// Sends `request` to the proxy and reads the whole answer (the proxy closes after it).
fn send(door: &Door, request: &str) -> String {
    let mut s = TcpStream::connect(("127.0.0.1", port(door))).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    String::from_utf8_lossy(&out).into_owned()
}

fn sse_answer() -> Vec<u8> {
    let events = [
        r#"{"type":"message_start","message":{"model":"claude-sonnet-4-5","usage":{"input_tokens":1200,"output_tokens":1}}}"#,
        r#"{"type":"message_delta","delta":{},"usage":{"output_tokens":80}}"#,
        r#"{"type":"message_stop"}"#,
    ];
    let body: String = events.iter().map(|e| format!("data: {e}\n\n")).collect();
    format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

#[test]
fn a_model_call_gets_the_real_key_and_its_streamed_tokens_are_metered() {
    let (addr, seen) = upstream(sse_answer());
    let door = open(spec(&[("api.anthropic.com", addr)], None));
    let placeholder = var(&door, "ANTHROPIC_API_KEY");
    assert!(
        placeholder.starts_with("opentiger-placeholder-"),
        "{placeholder}"
    );
    let base = var(&door, "ANTHROPIC_BASE_URL");
    assert!(base.ends_with("/anthropic"), "{base}");
    for _ in 0..2 {
        let answer = send(
            &door,
            &format!("POST /anthropic/v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: {placeholder}\r\naccept-encoding: gzip\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{{}}"),
        );
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains("message_stop"), "{answer}");
    }
    let head = seen.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(head.starts_with("POST /v1/messages HTTP/1.1"), "{head}");
    assert!(head.contains("x-api-key: sk-ant-REAL-KEY"), "{head}");
    assert!(!head.contains("opentiger-placeholder"), "{head}");
    assert!(
        !head.to_ascii_lowercase().contains("accept-encoding"),
        "{head}"
    );
    assert!(head.contains("host: api.anthropic.com"), "{head}");
    let traffic = door.close();
    let tokens = traffic.metering.models["claude-sonnet-4-5"];
    assert_eq!(
        (tokens.input, tokens.output, tokens.answers),
        (2400, 160, 2)
    );
    // claude-sonnet-4-5 at $3 / $15 per million.
    assert!((traffic.metering.usd - (2400.0 * 3.0 + 160.0 * 15.0) / 1e6).abs() < 1e-9);
    assert!(traffic.refused.is_empty() && traffic.quota.is_none());
}

#[test]
fn hosts_off_the_list_are_refused_with_the_line_that_allows_them() {
    let (addr, _) =
        upstream(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok".to_vec());
    let door = open(spec(&[("allowed.test", addr)], None));
    let refused = send(
        &door,
        "CONNECT evil.test:443 HTTP/1.1\r\nhost: evil.test:443\r\nconnection: close\r\n\r\n",
    );
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    assert!(
        refused.contains("sandbox:\n  network:\n    allow:\n      worker: [\"evil.test\"]"),
        "{refused}"
    );
    let plain = send(
        &door,
        "GET http://evil.test:8080/x HTTP/1.1\r\nhost: evil.test\r\nconnection: close\r\n\r\n",
    );
    assert!(plain.starts_with("HTTP/1.1 403"), "{plain}");
    let allowed = send(
        &door,
        "GET http://allowed.test/x HTTP/1.1\r\nhost: allowed.test\r\nconnection: close\r\n\r\n",
    );
    assert!(
        allowed.starts_with("HTTP/1.1 200") && allowed.ends_with("ok"),
        "{allowed}"
    );
    // A tunnel to an allowed host carries bytes both ways.
    let mut s = TcpStream::connect(("127.0.0.1", port(&door))).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"CONNECT allowed.test:443 HTTP/1.1\r\nhost: allowed.test:443\r\n\r\n")
        .unwrap();
    let mut reader = BufReader::new(s.try_clone().unwrap());
    let head = read_head(&mut reader);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    s.write_all(b"GET / HTTP/1.1\r\nhost: allowed.test\r\ncontent-length: 0\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    let _ = reader.read_to_string(&mut answer);
    assert!(answer.ends_with("ok"), "{answer}");
    let traffic = door.close();
    let lines: Vec<String> = traffic
        .refused
        .iter()
        .filter_map(|r| r.allow_line())
        .collect();
    assert_eq!(
        lines,
        [
            "sandbox: {network: {allow: {worker: [\"evil.test\"]}}}",
            "sandbox: {network: {allow: {worker: [\"evil.test:8080\"]}}}"
        ]
    );
}

#[test]
fn a_429_or_529_is_kept_with_its_retry_time() {
    // Anthropic answers 529 when it is overloaded, OpenAI and others 429; either stops the run
    // as a quota wait, with the retry time when the answer gives one.
    let cases: &[(&str, Option<u64>)] = &[
        ("429 Too Many Requests", Some(3600)),
        ("529 Overloaded", Some(30)),
        ("529 Overloaded", None),
    ];
    for (status, retry) in cases {
        let header = retry.map_or(String::new(), |s| format!("retry-after: {s}\r\n"));
        let (addr, _) = upstream(
            format!(
                "HTTP/1.1 {status}\r\n{header}content-type: application/json\r\ncontent-length: 2\r\nconnection: close\r\n\r\n{{}}"
            )
            .into_bytes(),
        );
        let door = open(spec(&[("api.anthropic.com", addr)], None));
        let answer = send(&door, "POST /anthropic/v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
        let code = &status[..3];
        assert!(answer.starts_with(&format!("HTTP/1.1 {code}")), "{answer}");
        let reason = door.session().stop_reason().expect("a quota stops the run");
        assert!(reason.contains(&format!("HTTP {code}")), "{reason}");
        if let Some(s) = retry {
            assert!(reason.contains(&format!("retry in {s}s")), "{reason}");
        }
        let hit = door.close().quota.expect("the quota hit is recorded");
        assert_eq!(
            (hit.status.to_string(), hit.retry_after),
            (code.to_string(), *retry)
        );
    }
}

#[test]
fn a_spent_budget_refuses_the_next_model_call() {
    let (addr, seen) = upstream(sse_answer());
    // One answer costs $0.0048: the budget allows the first call, not the second.
    let door = open(spec(&[("api.anthropic.com", addr)], Some(0.004)));
    let request = "POST /anthropic/v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\nconnection: close\r\n\r\n";
    assert!(send(&door, request).starts_with("HTTP/1.1 200"));
    let refused = send(&door, request);
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    assert!(
        refused.contains("permission_error") && refused.contains("budget"),
        "{refused}"
    );
    seen.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(
        seen.recv_timeout(Duration::from_millis(200)).is_err(),
        "one call went through"
    );
    let traffic = door.close();
    assert!(traffic.budget_refused.is_some());
}

#[test]
fn websocket_answers_are_metered_and_a_429_on_the_upgrade_is_a_quota() {
    let completed = r#"{"type":"response.completed","response":{"model":"gpt-5-codex","usage":{"input_tokens":1200,"input_tokens_details":{"cached_tokens":0},"output_tokens":80}}}"#;
    let mut response = b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\nsec-websocket-accept: x\r\n\r\n".to_vec();
    response.push(0x81);
    response.push(126);
    response.extend((completed.len() as u16).to_be_bytes());
    response.extend(completed.as_bytes());
    let (addr, seen) = upstream(response);
    let door = open(spec(&[("api.openai.com", addr)], None));
    let mut s = TcpStream::connect(("127.0.0.1", port(&door))).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"GET /openai/v1/responses HTTP/1.1\r\nhost: x\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\nsec-websocket-extensions: permessage-deflate\r\n\r\n").unwrap();
    let mut reader = BufReader::new(s.try_clone().unwrap());
    let head = read_head(&mut reader);
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    let mut frame = vec![0u8; 4 + completed.len()];
    reader.read_exact(&mut frame).unwrap();
    assert_eq!(&frame[4..], completed.as_bytes());
    let up = seen.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(up.starts_with("GET /v1/responses"), "{up}");
    assert!(!up.contains("permessage-deflate"), "{up}");
    drop(reader);
    drop(s);
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while door.session().traffic().metering.is_empty() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let t = door.close().metering.models["gpt-5-codex"];
    assert_eq!((t.input, t.output), (1200, 80));

    let (addr, _) = upstream(
        b"HTTP/1.1 429 Too Many Requests\r\nretry-after: 3600\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec(),
    );
    let door = open(spec(&[("api.openai.com", addr)], None));
    let answer = send(&door, "GET /openai/v1/responses HTTP/1.1\r\nhost: x\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n");
    assert!(answer.starts_with("HTTP/1.1 429"), "{answer}");
    let hit = door.close().quota.expect("a quota hit");
    assert_eq!((hit.status, hit.retry_after), (429, Some(3600)));
}

#[test]
fn only_set_model_keys_are_routed() {
    let lookup = |v: &str| match v {
        "OPENAI_API_KEY" => Some("sk-o".to_string()),
        "CODEX_API_KEY" => Some("sk-c".to_string()),
        "GEMINI_API_KEY" => Some("  ".to_string()),
        _ => None,
    };
    let routes = routes(
        &[
            "ANTHROPIC_API_KEY",
            "OPENAI_API_KEY",
            "CODEX_API_KEY",
            "GEMINI_API_KEY",
            "PATH",
        ],
        lookup,
    );
    assert_eq!(routes.len(), 1);
    let vars: Vec<&str> = routes[0].keys.iter().map(|(v, _, _)| v.as_str()).collect();
    assert_eq!(vars, ["OPENAI_API_KEY", "CODEX_API_KEY"]);
    assert_ne!(
        routes[0].keys[0].1, routes[0].keys[1].1,
        "each its own placeholder"
    );
}

#[test]
fn a_request_in_flight_is_never_idle_and_its_end_however_it_ends_is_traffic() {
    let session = std::sync::Arc::new(Session::new(spec(&[], None)));
    std::thread::sleep(Duration::from_millis(30));
    assert!(session.quiet() >= Duration::from_millis(30));
    let flight = session.begin();
    std::thread::sleep(Duration::from_millis(30));
    assert_eq!(
        session.quiet(),
        Duration::ZERO,
        "waiting for an answer is not idle"
    );
    drop(flight);
    assert!(session.quiet() < Duration::from_millis(30));
}

mod configured;
mod key_and_bounds;

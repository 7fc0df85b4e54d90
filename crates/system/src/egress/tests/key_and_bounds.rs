//! Issue 46 on loopback: the key stands only in its provider's credential slot and never comes
//! back (a stand-in that reflects every header it got, in small chunks, and a header of its
//! own); a model route carries model calls only; the proxy is bounded (connections, heads,
//! bodies, refused hosts).

use super::*;

/// A stand-in provider that answers every request 400 with all it got reflected — its request
/// head and body, in 3-byte chunks, the way Anthropic quotes an unknown `anthropic-beta` — plus
/// the runner's forge token and a header echoing the credential, and sends what it got.
fn reflector() -> (SocketAddr, mpsc::Receiver<String>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let head = read_head(&mut reader);
                let mut body = vec![0u8; content_length(&head)];
                let _ = reader.read_exact(&mut body);
                let got = format!("{head}\r\n{}", String::from_utf8_lossy(&body));
                let _ = tx.send(got.clone());
                let credential = head
                    .lines()
                    .find_map(|l| l.strip_prefix("x-api-key: "))
                    .unwrap_or("none")
                    .to_string();
                let message = serde_json::json!({"type": "error", "error": {
                    "type": "invalid_request_error",
                    "message": format!("Unexpected value(s) in {got} and {FORGE_TOKEN}")
                }})
                .to_string();
                let mut answer = format!(
                    "HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\nx-echo: {credential}\r\ntransfer-encoding: chunked\r\nconnection: close\r\n\r\n"
                )
                .into_bytes();
                for chunk in message.as_bytes().chunks(3) {
                    answer.extend(format!("{:x}\r\n", chunk.len()).as_bytes());
                    answer.extend(chunk);
                    answer.extend(b"\r\n");
                }
                answer.extend(b"0\r\n\r\n");
                let mut stream = stream;
                let _ = stream.write_all(&answer);
            });
        }
    });
    (addr, rx)
}

fn request(path: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut text = format!("POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n");
    for (k, v) in headers {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text.push_str(&format!(
        "content-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    ));
    text
}

/// An answer's head and its body, de-chunked.
fn dechunked(answer: &str) -> String {
    let Some((head, mut rest)) = answer.split_once("\r\n\r\n") else {
        return answer.to_string();
    };
    if !head.contains("transfer-encoding: chunked") {
        return answer.to_string();
    }
    let mut body = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let size = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if size == 0 || after.len() < size {
            break;
        }
        body.push_str(&after[..size]);
        rest = after[size..].trim_start_matches("\r\n");
    }
    format!("{head}\r\n\r\n{body}")
}

#[test]
fn the_key_stands_only_in_its_slot_and_never_comes_back() {
    let (addr, seen) = reflector();
    let door = open(spec(
        &[
            ("api.anthropic.com", addr),
            ("generativelanguage.googleapis.com", addr),
        ],
        None,
    ));
    let key = var(&door, "ANTHROPIC_API_KEY");
    // The placeholder anywhere but the credential slot: refused, naming where, never sent.
    for (path, headers, place) in [
        (
            "/anthropic/v1/messages".to_string(),
            vec![
                ("x-api-key", key.as_str()),
                ("anthropic-beta", key.as_str()),
            ],
            "the header `anthropic-beta`",
        ),
        (
            format!("/anthropic/v1/messages?beta={key}"),
            vec![("x-api-key", key.as_str())],
            "the query parameter `beta`",
        ),
        (
            format!("/anthropic/v1/models/{key}"),
            vec![("x-api-key", key.as_str())],
            "the path",
        ),
    ] {
        let mut text = request(&path, &headers, "{}");
        if place == "the path" {
            text = text.replacen("POST", "GET", 1);
        }
        let answer = send(&door, &text);
        assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
        assert!(answer.contains(place), "{place}: {answer}");
        assert!(!answer.contains("sk-ant-REAL-KEY"), "{answer}");
    }
    assert!(seen.recv_timeout(Duration::from_millis(300)).is_err());
    // In its slot, with an unknown beta: the stand-in reflects all it got, the key among it;
    // the agent reads the reflection without the key or the forge token, in any chunking.
    let answer = send(
        &door,
        &request(
            "/anthropic/v1/messages",
            &[("x-api-key", &key), ("anthropic-beta", "bogus-2025")],
            r#"{"model":"claude-sonnet-4-5","messages":[]}"#,
        ),
    );
    let answer = dechunked(&answer);
    let got = seen.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(got.contains("x-api-key: sk-ant-REAL-KEY"), "{got}");
    assert_eq!(
        got.matches("sk-ant-REAL-KEY").count(),
        1,
        "only the slot: {got}"
    );
    assert!(answer.starts_with("HTTP/1.1 400"), "{answer}");
    assert!(answer.contains("bogus-2025"), "{answer}");
    for secret in ["sk-ant-REAL-KEY", FORGE_TOKEN, "REAL-KEY"] {
        assert!(!answer.contains(secret), "{secret} came back: {answer}");
    }
    assert!(answer.contains("x-echo: [REDACTED]"), "{answer}");
    assert!(answer.contains("[REDACTED]"), "{answer}");
    // Gemini's documented exception: the key in the `key` query parameter.
    let gemini = door
        .session()
        .spec
        .routes
        .iter()
        .any(|r| r.provider.name == "gemini");
    assert!(
        !gemini,
        "no Gemini key in this spec: its placeholder is not routed"
    );
}

#[test]
fn gemini_s_key_goes_in_its_query_parameter() {
    let (addr, seen) = reflector();
    let mut spec = spec(&[("generativelanguage.googleapis.com", addr)], None);
    spec.routes = routes(&["GEMINI_API_KEY"], |_| {
        Some("AIzaREALgeminiKEY0123".into())
    });
    let door = open(spec);
    let key = var(&door, "GEMINI_API_KEY");
    let answer = send(
        &door,
        &request(
            &format!("/gemini/v1beta/models/gemini-2.5-pro:generateContent?key={key}"),
            &[],
            r#"{"contents":[]}"#,
        ),
    );
    let got = seen.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(
        got.starts_with(
            "POST /v1beta/models/gemini-2.5-pro:generateContent?key=AIzaREALgeminiKEY0123 "
        ),
        "{got}"
    );
    assert!(!answer.contains("AIzaREALgeminiKEY0123"), "{answer}");
    let json = answer.split("\r\n\r\n").nth(1).unwrap_or_default();
    assert!(!json.is_empty(), "{answer}");
}

#[test]
fn a_model_route_carries_model_calls_only() {
    let (addr, seen) = reflector();
    let door = open(spec(&[("api.anthropic.com", addr)], None));
    let key = var(&door, "ANTHROPIC_API_KEY");
    let headers = [("x-api-key", key.as_str())];
    let files = send(&door, &request("/anthropic/v1/files", &headers, "x"));
    assert!(files.starts_with("HTTP/1.1 404"), "{files}");
    assert!(
        files.contains("`POST /v1/files`") && files.contains("POST /v1/messages"),
        "{files}"
    );
    for (body, field, line) in [
        (
            r#"{"model":"m","messages":[],"mcp_servers":[{"type":"url","url":"https://evil.test/mcp","name":"x"}]}"#,
            "`mcp_servers`",
            "provider_tools: [mcp]",
        ),
        (
            r#"{"model":"m","messages":[],"tools":[{"type":"web_fetch_20250910","name":"web_fetch"}]}"#,
            "`tools[0].type`",
            "provider_tools: [web_fetch]",
        ),
    ] {
        let answer = send(&door, &request("/anthropic/v1/messages", &headers, body));
        assert!(answer.starts_with("HTTP/1.1 403"), "{answer}");
        assert!(
            answer.contains(field) && answer.contains(line) && answer.contains("permission_error"),
            "{answer}"
        );
    }
    let not_json = send(&door, &request("/anthropic/v1/messages", &headers, "{"));
    assert!(not_json.starts_with("HTTP/1.1 400"), "{not_json}");
    assert!(
        seen.recv_timeout(Duration::from_millis(300)).is_err(),
        "a refused call reached the provider"
    );
    // Allowed by `sandbox.network.provider_tools`, the MCP server's call goes through.
    let mut allowing = spec(&[("api.anthropic.com", addr)], None);
    allowing.provider_tools = vec![crate::config::ProviderTool::Mcp];
    let door = open(allowing);
    let key = var(&door, "ANTHROPIC_API_KEY");
    let body =
        r#"{"model":"m","messages":[],"mcp_servers":[{"type":"url","url":"https://mcp.test/"}]}"#;
    send(
        &door,
        &request("/anthropic/v1/messages", &[("x-api-key", &key)], body),
    );
    let got = seen.recv_timeout(Duration::from_secs(5)).unwrap();
    assert!(got.contains("mcp_servers"), "{got}");
}

#[test]
fn a_body_past_the_cap_is_refused_before_it_is_read() {
    let (addr, seen) = reflector();
    let door = open(spec(&[("api.anthropic.com", addr)], None));
    let mut s = TcpStream::connect(("127.0.0.1", port(&door))).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST /anthropic/v1/messages HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        super::super::session::BODY_MAX + 1
    )
    .unwrap();
    let mut reader = BufReader::new(s);
    let head = read_head(&mut reader);
    assert!(head.starts_with("HTTP/1.1 413"), "{head}");
    assert!(seen.recv_timeout(Duration::from_millis(200)).is_err());
}

/// The open files of this process.
fn open_files() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

/// Connections holding an unfinished head: past the cap they are turned away at once (the
/// runner keeps its files); the rest are closed once their head is overdue.
#[test]
fn connections_are_capped_and_an_unfinished_head_is_dropped() {
    let door = open(spec(&[], None));
    let before = open_files();
    let extra = 200;
    let mut held = Vec::new();
    let mut turned_away = 0;
    for _ in 0..MAX_CONNECTIONS + extra {
        let mut s = TcpStream::connect(("127.0.0.1", port(&door))).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        let _ = s.write_all(b"GET /anthropic/v1/models HTTP/1.1\r\nx-slow: ");
        held.push(s);
    }
    // Wait until the proxy has seen them all: each is admitted or turned away.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while door.session().open_connections() < MAX_CONNECTIONS
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(door.session().open_connections(), MAX_CONNECTIONS);
    // Other tests of this process open files meanwhile: the margin is theirs, far below the
    // 200 more an unbounded proxy would hold.
    let proxy_side = open_files().saturating_sub(before + held.len());
    assert!(
        proxy_side <= MAX_CONNECTIONS + extra / 2,
        "the proxy holds {proxy_side} files for {MAX_CONNECTIONS} connections"
    );
    for s in &mut held {
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        if answer.starts_with("HTTP/1.1 503") {
            assert!(answer.contains("connections open"), "{answer}");
            turned_away += 1;
        }
    }
    // Every read above ended: the turned-away ones at once, the others when their head was
    // overdue (HEAD_TIMEOUT), not at the test's 20-second read limit.
    assert_eq!(turned_away, extra);
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while door.session().open_connections() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(door.session().open_connections(), 0);
}

/// An agent trying thousands of hosts leaves ten names and a count, never a list as long as its
/// attempts.
#[test]
fn a_refusal_flood_is_ten_names_and_a_count() {
    let door = open(spec(&[], None));
    let mut s = TcpStream::connect(("127.0.0.1", port(&door))).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let tries = 2000;
    let mut batch = String::new();
    for i in 0..tries {
        batch.push_str(&format!(
            "CONNECT h{i}.evil.test:443 HTTP/1.1\r\nhost: h{i}.evil.test:443\r\n\r\n"
        ));
    }
    batch.push_str("CONNECT last.evil.test:443 HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
    s.write_all(batch.as_bytes()).unwrap();
    let mut answers = String::new();
    let _ = s.read_to_string(&mut answers);
    assert_eq!(answers.matches("HTTP/1.1 403").count(), tries + 1);
    let refused = door.close().refused;
    assert_eq!(
        refused.len(),
        crate::model::network::NAMED_HOSTS + 1,
        "{refused:?}"
    );
    let total: u32 = refused.iter().map(|r| r.times).sum();
    assert_eq!(total as usize, tries + 1);
}

/// A Responses websocket: a `response.create` asking for a provider tool never reaches the
/// provider (the client gets a close naming the field); the server's frames pass filtered.
#[test]
fn a_websocket_message_asking_for_a_provider_tool_never_passes() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let (tx, got) = mpsc::channel();
    std::thread::spawn(move || {
        let (stream, _) = listener.accept().unwrap();
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        read_head(&mut reader);
        let mut stream = stream;
        stream
            .write_all(b"HTTP/1.1 101 Switching Protocols\r\nupgrade: websocket\r\nconnection: Upgrade\r\n\r\n")
            .unwrap();
        let mut rest = Vec::new();
        let _ = reader.read_to_end(&mut rest);
        let _ = tx.send(rest);
    });
    let door = open(spec(&[("api.openai.com", addr)], None));
    let key = var(&door, "OPENAI_API_KEY");
    let mut s = TcpStream::connect(("127.0.0.1", port(&door))).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /openai/v1/responses HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {key}\r\nconnection: Upgrade\r\nupgrade: websocket\r\nsec-websocket-version: 13\r\nsec-websocket-key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n").unwrap();
    let mut reader = BufReader::new(s.try_clone().unwrap());
    assert!(read_head(&mut reader).starts_with("HTTP/1.1 101"));
    let message =
        br#"{"type":"response.create","tools":[{"type":"mcp","server_url":"https://evil.test/"}]}"#;
    let mask = [7u8, 1, 2, 3];
    let mut frame = vec![0x81, 0x80 | 126];
    frame.extend((message.len() as u16).to_be_bytes());
    frame.extend(mask);
    frame.extend(message.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    s.write_all(&frame).unwrap();
    let mut close = Vec::new();
    let _ = reader.read_to_end(&mut close);
    assert_eq!(close.first(), Some(&0x88), "{close:?}");
    assert_eq!(&close[2..4], &1008u16.to_be_bytes());
    assert!(
        String::from_utf8_lossy(&close).contains("tools[0].type"),
        "{close:?}"
    );
    drop(door);
    let upstream = got.recv_timeout(Duration::from_secs(10)).unwrap();
    assert!(
        upstream.is_empty(),
        "the provider got {} bytes",
        upstream.len()
    );
}

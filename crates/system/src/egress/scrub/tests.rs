//! The secret filter's tables: every chunk boundary, framing between a secret's bytes, each
//! form, and memory bounded on a long stream.

use super::*;

const KEY: &str = "sk-ant-api03-SECRETsecret0123456789";

fn secrets() -> Arc<Secrets> {
    Arc::new(Secrets::new([
        KEY.to_string(),
        "ghs_TOKENtoken0123456789abcdefghijkl".to_string(),
        "short".to_string(),
        "a/b\"c+d 0123".to_string(),
    ]))
}

/// `text` through a scrubber in chunks of `size` bytes, taking after each.
fn streamed(text: &[u8], size: usize) -> Vec<u8> {
    let mut s = Scrubber::new(secrets());
    let mut out = Vec::new();
    for chunk in text.chunks(size.max(1)) {
        s.content(chunk);
        out.extend(s.take());
        assert!(s.held() < secrets().longest(), "held {}", s.held());
    }
    out.extend(s.finish());
    out
}

#[test]
fn each_form_of_a_secret_is_replaced_at_every_chunk_boundary() {
    let cases: &[(&str, &str)] = &[
        (
            "key: sk-ant-api03-SECRETsecret0123456789.",
            "key: [REDACTED]*************************.",
        ),
        (
            r#"{"message":"Unexpected value `sk-ant-api03-SECRETsecret0123456789` for anthropic-beta"}"#,
            r#"{"message":"Unexpected value `[REDACTED]*************************` for anthropic-beta"}"#,
        ),
        (
            "two: ghs_TOKENtoken0123456789abcdefghijklghs_TOKENtoken0123456789abcdefghijkl!",
            "two: [REDACTED]**************************[REDACTED]**************************!",
        ),
        // JSON-escaped, with `\/`, and %-encoded.
        (r#"x "a/b\"c+d 0123" y"#, r#"x "[REDACTED]***" y"#),
        (r#"a\/b\"c+d 0123"#, "[REDACTED]****"),
        ("q=a%2Fb%22c%2Bd%200123&", "q=[REDACTED]**********&"),
        // Too short to look for; a prefix that never completes passes whole.
        (
            "short and sk-ant-api03-SECRET",
            "short and sk-ant-api03-SECRET",
        ),
        ("", ""),
    ];
    for (given, expected) in cases {
        assert_eq!(given.len(), expected.len(), "same length: {given}");
        for size in 1..=given.len().max(1) {
            let out = streamed(given.as_bytes(), size);
            assert_eq!(String::from_utf8_lossy(&out), *expected, "chunks of {size}");
        }
    }
}

#[test]
fn nothing_waits_that_cannot_begin_a_secret() {
    let mut s = Scrubber::new(secrets());
    s.content(b"data: {\"type\":\"message_stop\"}\n\n");
    assert_eq!(s.take(), b"data: {\"type\":\"message_stop\"}\n\n");
    s.content(b"the key is sk-an");
    assert_eq!(s.take(), b"the key is ");
    assert_eq!(s.held(), 5);
    s.content(b"t-api03-SECRETsecret0123456789 ok");
    assert_eq!(s.take(), b"[REDACTED]************************* ok");
}

/// A websocket frame's header between a secret's bytes is passed as it is, and the secret is
/// still found and replaced in the payloads around it.
#[test]
fn a_secret_is_found_across_framing_and_the_framing_kept() {
    let split = 9;
    let (a, b) = KEY.as_bytes().split_at(split);
    let header = [0x81u8, 0x7e, 0x00, 0x10];
    for size in 1..=12 {
        let mut s = Scrubber::new(secrets());
        let mut out = Vec::new();
        let mut feed = |s: &mut Scrubber, bytes: &[u8], framing: bool| {
            for chunk in bytes.chunks(size) {
                if framing {
                    s.framing(chunk);
                } else {
                    s.content(chunk);
                }
                out.extend(s.take());
            }
        };
        feed(&mut s, b"<<", false);
        feed(&mut s, a, false);
        feed(&mut s, &header, true);
        feed(&mut s, b, false);
        feed(&mut s, b">>", false);
        out.extend(s.finish());
        let mut expected = b"<<".to_vec();
        let fill = filler(KEY.len());
        expected.extend_from_slice(&fill[..split]);
        expected.extend_from_slice(&header);
        expected.extend_from_slice(&fill[split..]);
        expected.extend_from_slice(b">>");
        assert_eq!(out, expected, "chunks of {size}");
    }
}

#[test]
fn the_proxy_s_own_words_are_scrubbed() {
    let s = secrets();
    assert_eq!(
        s.scrub(&format!("could not reach {KEY}.example")),
        "could not reach [REDACTED].example"
    );
    assert!(s.in_bytes(KEY.as_bytes()) && !s.in_bytes(b"sk-ant-api03"));
    assert_eq!(format!("{s:?}"), "Secrets { 3 values }");
}

/// Memory stays bounded: a long stream, with a secret now and then, never holds more than the
/// longest secret.
#[test]
fn a_long_stream_holds_no_more_than_a_secret() {
    let mut s = Scrubber::new(secrets());
    let mut chunk = vec![b'x'; 64 * 1024 - KEY.len()];
    chunk.extend_from_slice(KEY.as_bytes());
    let (mut passed, mut found) = (0usize, 0usize);
    for _ in 0..256 {
        s.content(&chunk[..1000]);
        s.content(&chunk[1000..]);
        let out = s.take();
        passed += out.len();
        found += memchr::memmem::find_iter(&out, b"[REDACTED]").count();
        assert!(s.held() < s.secrets.longest());
        assert!(!secrets().in_bytes(&out));
    }
    passed += s.finish().len();
    assert_eq!((passed, found), (256 * 64 * 1024, 256));
}

//! Websocket frames through the proxy's two filters, chunked every way.

use super::*;
use crate::egress::frames::frame;
use crate::egress::scrub::Secrets;

const KEY: &str = "sk-proj-SECRETsecret0123456789abcd";

const MASK: Option<[u8; 4]> = Some([1, 2, 3, 4]);

/// `bytes` fed to `from` in chunks of `size`.
fn client(bytes: &[u8], size: usize) -> Result<Vec<u8>, Close> {
    let mut from = FromClient::new(Vec::new());
    let mut out = Vec::new();
    for chunk in bytes.chunks(size) {
        out.extend(from.feed(chunk)?);
    }
    Ok(out)
}

#[test]
fn a_client_message_asking_for_a_provider_tool_never_passes() {
    let fine = br#"{"type":"response.create","model":"gpt-5-codex","tools":[{"type":"function","name":"shell"}]}"#;
    let asks = br#"{"type":"response.create","tools":[{"type":"function","name":"shell"},{"type":"web_search","external_web_access":true}]}"#;
    let ping = frame(true, 9, b"hi", MASK);
    for size in [1, 3, 7, 64, 4096] {
        let sent = frame(true, 1, fine, MASK);
        assert_eq!(client(&sent, size), Ok(sent.clone()), "chunks of {size}");
        // Fragmented, a ping between the fragments: the ping passes at once, the message
        // whole once it is read.
        let (a, b) = fine.split_at(20);
        let mut stream = frame(false, 1, a, MASK);
        stream.extend(&ping);
        stream.extend(frame(true, 0, b, Some([9, 8, 7, 6])));
        let mut expected = ping.clone();
        expected.extend(frame(false, 1, a, MASK));
        expected.extend(frame(true, 0, b, Some([9, 8, 7, 6])));
        assert_eq!(client(&stream, size), Ok(expected), "chunks of {size}");
        let (code, words) = client(&frame(true, 1, asks, MASK), size).unwrap_err();
        assert_eq!(code, 1008);
        assert!(words.contains("`tools[1].type` (web_search)"), "{words}");
    }
    let mut allowed = FromClient::new(vec![ProviderTool::WebSearch]);
    assert!(allowed.feed(&frame(true, 1, asks, MASK)).is_ok());
    let compressed = [0xc1, 0x80, 0, 0, 0, 0];
    assert_eq!(client(&compressed, 6).unwrap_err().0, 1002);
}

#[test]
fn server_frames_keep_their_length_and_lose_the_secret() {
    let secrets = Arc::new(Secrets::new([KEY.to_string()]));
    let first = format!(
        r#"{{"type":"error","error":{{"message":"bad header {}"#,
        &KEY[..12]
    );
    let second = format!(r#"{}"}}}}"#, &KEY[12..]);
    let mut stream = frame(false, 1, first.as_bytes(), None);
    stream.extend(frame(true, 0, second.as_bytes(), None));
    let long = format!("{}{KEY}", "x".repeat(70_000));
    stream.extend(frame(true, 1, long.as_bytes(), None));
    for size in [1, 5, 13, 1000, 1 << 20] {
        let mut from = FromServer::new(Scrubber::new(secrets.clone()));
        let mut out = Vec::new();
        for chunk in stream.chunks(size) {
            out.extend(from.feed(chunk).expect("frames a server may send").0);
        }
        out.extend(from.finish().0);
        assert_eq!(out.len(), stream.len(), "chunks of {size}");
        // Read back as frames: the same headers, the key gone from the payloads.
        let mut payload = Vec::new();
        let mut headers = Vec::new();
        Frames::default().split(&out, |piece| match piece {
            Piece::Header(h, _) => headers.push((h.fin, h.opcode, h.len)),
            Piece::Payload(p) => payload.extend_from_slice(p),
            Piece::End => {}
        });
        assert_eq!(
            headers,
            [
                (false, 1, first.len() as u64),
                (true, 0, second.len() as u64),
                (true, 1, long.len() as u64)
            ]
        );
        let text = String::from_utf8(payload).unwrap();
        assert!(!text.contains(KEY) && !text.contains(&KEY[..12]), "{size}");
        assert_eq!(text.matches("[REDACTED]").count(), 2, "chunks of {size}");
    }
    let mut from = FromServer::new(Scrubber::new(secrets));
    assert!(
        from.feed(&frame(true, 1, b"{}", MASK)).is_none(),
        "a masked frame"
    );
}

#[test]
fn the_close_frame_fits_its_words() {
    let frame = close_frame(&(1008, "é".repeat(100)));
    assert_eq!(frame[0], 0x88);
    assert!(usize::from(frame[1]) <= 125 && frame.len() == 2 + usize::from(frame[1]));
    assert_eq!(&frame[2..4], &1008u16.to_be_bytes());
    assert!(std::str::from_utf8(&frame[4..]).is_ok());
}

//! The stand-in's Responses session over a websocket (issue 37): the handshake's answer, the
//! client's first message, then two events and a close. Not for: HTTP answers (the parent).

use std::io::Write;

use serde_json::json;

use super::{Scenario, ANSWER, INPUT_TOKENS, OUTPUT_TOKENS};

/// A Responses session over a websocket: the handshake's answer, the client's first message,
/// then `response.created` and `response.completed` (with the usage every answer reports) as
/// text frames and a close frame.
pub fn websocket_session(
    reader: &mut impl std::io::BufRead,
    writer: &mut impl Write,
    scenario: Scenario,
) -> std::io::Result<()> {
    writer.write_all(
        b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n",
    )?;
    writer.flush()?;
    // The client's frame: masked, its length in the second byte (or the next two).
    let mut head = [0u8; 2];
    std::io::Read::read_exact(reader, &mut head)?;
    let mut len = u64::from(head[1] & 0x7f);
    if len == 126 {
        let mut ext = [0u8; 2];
        std::io::Read::read_exact(reader, &mut ext)?;
        len = u64::from(u16::from_be_bytes(ext));
    }
    let mut rest = vec![0u8; 4 + len as usize];
    std::io::Read::read_exact(reader, &mut rest)?;
    if scenario == Scenario::Unauthorized {
        return Ok(());
    }
    let text = if let Scenario::Reply(text) = scenario {
        text
    } else {
        ANSWER
    };
    let item = json!({ "type": "message", "id": "msg_standin", "role": "assistant",
        "status": "completed", "content": [{ "type": "output_text", "text": text, "annotations": [] }] });
    let usage = json!({
        "input_tokens": INPUT_TOKENS, "input_tokens_details": { "cached_tokens": 0 },
        "output_tokens": OUTPUT_TOKENS, "output_tokens_details": { "reasoning_tokens": 0 },
        "total_tokens": INPUT_TOKENS + OUTPUT_TOKENS,
    });
    let response = json!({ "id": "resp_standin", "object": "response", "model": "gpt-5-codex",
        "status": "completed", "output": [item], "usage": usage });
    for event in [
        json!({ "type": "response.created", "response": { "id": "resp_standin", "status": "in_progress" } }),
        json!({ "type": "response.completed", "response": response }),
    ] {
        let payload = event.to_string().into_bytes();
        let mut frame = vec![0x81u8];
        if payload.len() < 126 {
            frame.push(payload.len() as u8);
        } else {
            frame.push(126);
            frame.extend((payload.len() as u16).to_be_bytes());
        }
        frame.extend(payload);
        writer.write_all(&frame)?;
    }
    writer.write_all(&[0x88, 0x00])?;
    writer.flush()
}

use super::*;
use serde_json::json;

/// Feeds `body` in pieces of `step` bytes.
fn meter(framing: Framing, body: &[u8], step: usize) -> Usage {
    let mut m = AnswerMeter::new(framing);
    for piece in body.chunks(step.max(1)) {
        m.feed(piece);
    }
    m.finish()
}

fn sse(events: &[serde_json::Value], done: bool) -> Vec<u8> {
    let mut text = String::new();
    for e in events {
        if let Some(kind) = e.get("type").and_then(|t| t.as_str()) {
            text.push_str(&format!("event: {kind}\r\n"));
        }
        text.push_str(&format!("data: {e}\r\n\r\n"));
    }
    if done {
        text.push_str("data: [DONE]\n\n");
    }
    text.into_bytes()
}

fn tokens(input: u64, cached: u64, output: u64, answers: u64) -> Tokens {
    Tokens {
        input,
        cached_input: cached,
        output,
        answers,
    }
}

fn one(model: &str, t: Tokens) -> Usage {
    [(model.to_string(), t)].into_iter().collect()
}

#[test]
fn anthropic_streams_count_the_start_and_the_last_delta() {
    let events = [
        json!({"type": "message_start", "message": {"model": "claude-sonnet-4-5", "usage": {
            "input_tokens": 1000, "cache_creation_input_tokens": 100, "cache_read_input_tokens": 100, "output_tokens": 1}}}),
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}}),
        json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 40}}),
        json!({"type": "message_delta", "delta": {}, "usage": {"output_tokens": 80}}),
        json!({"type": "message_stop"}),
    ];
    let body = sse(&events, false);
    for step in [1, 3, 7, 64, body.len()] {
        assert_eq!(
            meter(Framing::Sse, &body, step),
            one("claude-sonnet-4-5", tokens(1200, 100, 80, 1)),
            "step {step}"
        );
    }
    // Cut before the stop: what arrived still counts.
    let cut = sse(&events[..3], false);
    assert_eq!(
        meter(Framing::Sse, &cut, 5),
        one("claude-sonnet-4-5", tokens(1200, 100, 40, 1))
    );
}

#[test]
fn json_answers_of_each_provider() {
    let cases = [
        (
            json!({"type": "message", "model": "claude-haiku-4-5", "usage": {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 2}}),
            "claude-haiku-4-5",
            tokens(12, 2, 5, 1),
        ),
        (
            json!({"object": "chat.completion", "model": "gpt-4.1", "usage": {"prompt_tokens": 30, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 10}}}),
            "gpt-4.1",
            tokens(30, 10, 9, 1),
        ),
        (
            json!({"object": "response", "model": "gpt-5-codex", "usage": {"input_tokens": 50, "input_tokens_details": {"cached_tokens": 20}, "output_tokens": 7}}),
            "gpt-5-codex",
            tokens(50, 20, 7, 1),
        ),
    ];
    for (value, model, expected) in cases {
        let body = value.to_string().into_bytes();
        assert_eq!(
            meter(Framing::Json, &body, 4),
            one(model, expected),
            "{value}"
        );
    }
    assert!(meter(Framing::Json, b"{not json", 4).is_empty());
    assert!(meter(Framing::Other, b"{\"usage\": {\"input_tokens\": 1}}", 4).is_empty());
}

#[test]
fn openai_streams_count_the_chunk_or_event_that_carries_usage() {
    let chat = sse(
        &[
            json!({"object": "chat.completion.chunk", "model": "gpt-4.1", "choices": [{"delta": {"content": "a"}}], "usage": null}),
            json!({"object": "chat.completion.chunk", "model": "gpt-4.1", "choices": [], "usage": {"prompt_tokens": 1200, "completion_tokens": 80}}),
        ],
        true,
    );
    assert_eq!(
        meter(Framing::Sse, &chat, 9),
        one("gpt-4.1", tokens(1200, 0, 80, 1))
    );
    let responses = sse(
        &[
            // A created event that repeats the object (some servers do) is not counted.
            json!({"type": "response.created", "response": {"model": "gpt-5-codex", "usage": {
                "input_tokens": 1200, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 80}}}),
            json!({"type": "response.output_item.added", "item": {"type": "message"}}),
            json!({"type": "response.completed", "response": {"model": "gpt-5-codex", "usage": {
                "input_tokens": 1200, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 80}}}),
        ],
        false,
    );
    assert_eq!(
        meter(Framing::Sse, &responses, 2),
        one("gpt-5-codex", tokens(1200, 0, 80, 1))
    );
}

#[test]
fn gemini_streams_keep_the_last_counts() {
    let chunks = [
        json!({"modelVersion": "gemini-2.5-pro", "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 3}}),
        json!({"modelVersion": "gemini-2.5-pro", "usageMetadata": {"promptTokenCount": 100, "candidatesTokenCount": 30, "thoughtsTokenCount": 5}}),
    ];
    let expected = one("gemini-2.5-pro", tokens(100, 0, 35, 1));
    assert_eq!(meter(Framing::Sse, &sse(&chunks, false), 11), expected);
    // `streamGenerateContent` without `alt=sse`: one JSON array of the chunks.
    let array = serde_json::to_vec(&chunks).unwrap();
    assert_eq!(meter(Framing::Json, &array, 11), expected);
}

/// A websocket frame (unmasked unless `mask`), as the tests here name its arguments.
fn frame(opcode: u8, fin: bool, payload: &[u8], mask: Option<[u8; 4]>) -> Vec<u8> {
    crate::egress::frames::frame(fin, opcode, payload, mask)
}

#[test]
fn websocket_messages_are_read_across_frames_and_pieces() {
    let completed = json!({"type": "response.completed", "response": {"model": "gpt-5-codex",
        "usage": {"input_tokens": 1200, "input_tokens_details": {"cached_tokens": 100}, "output_tokens": 80},
        "padding": "x".repeat(300)}})
    .to_string()
    .into_bytes();
    let (a, b) = completed.split_at(100);
    let mut stream = Vec::new();
    stream.extend(frame(
        1,
        true,
        br#"{"type":"response.created","response":{"usage":null}}"#,
        None,
    ));
    stream.extend(frame(9, true, b"ping", None));
    stream.extend(frame(1, false, a, None));
    stream.extend(frame(10, true, b"", None));
    stream.extend(frame(0, true, b, Some([1, 2, 3, 4])));
    stream.extend(frame(2, true, &[0xff; 70_000], None));
    for step in [1, 5, 13, 4096, stream.len()] {
        assert_eq!(
            meter(Framing::WebSocket, &stream, step),
            one("gpt-5-codex", tokens(1200, 100, 80, 1)),
            "step {step}"
        );
    }
    // A compressed message is passed, not read.
    let mut compressed = frame(1, true, &completed, None);
    compressed[0] |= 0x40;
    assert!(meter(Framing::WebSocket, &compressed, 7).is_empty());
}

#[test]
fn an_oversized_event_is_skipped_and_the_rest_still_counts() {
    let big = format!("data: {}\n\n", "x".repeat(EVENT_CAP + 10));
    let mut body = big.into_bytes();
    body.extend(sse(
        &[json!({"object": "chat.completion.chunk", "model": "m", "usage": {"prompt_tokens": 1, "completion_tokens": 2}})],
        true,
    ));
    assert_eq!(
        meter(Framing::Sse, &body, 65536),
        one("m", tokens(1, 0, 2, 1))
    );
}

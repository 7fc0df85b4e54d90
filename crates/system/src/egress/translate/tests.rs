use super::*;

/// What codex 0.169.0 sends (its shape, recorded against a stand-in; texts shortened).
fn codex_call() -> Value {
    json!({
        "model": "smollm2-135m",
        "instructions": "You are a coding agent.",
        "input": [
            { "type": "message", "role": "developer", "content": [{ "type": "input_text", "text": "<permissions>" }] },
            { "type": "message", "role": "user", "content": [
                { "type": "input_text", "text": "<environment_context>" },
                { "type": "input_text", "text": "Add sub." }] },
            { "type": "reasoning", "summary": [], "encrypted_content": "gAAA" },
            { "type": "message", "role": "assistant", "content": [{ "type": "output_text", "text": "I will write it." }] },
            { "type": "function_call", "name": "shell", "arguments": "{\"command\":[\"ls\"]}", "call_id": "call_1" },
            { "type": "function_call_output", "call_id": "call_1", "output": "a.py\n" },
            { "type": "custom_tool_call", "name": "apply_patch", "input": "*** Begin Patch", "call_id": "call_2" },
            { "type": "custom_tool_call_output", "call_id": "call_2", "output": [{ "type": "input_text", "text": "Done!" }] },
        ],
        "tools": [
            { "type": "function", "name": "shell", "description": "Runs a command", "strict": false,
              "parameters": { "type": "object", "properties": { "command": { "type": "array" } } } },
            { "type": "custom", "name": "apply_patch", "description": "Edits files", "format": { "type": "grammar" } },
            { "type": "web_search" },
        ],
        "tool_choice": "auto",
        "parallel_tool_calls": false,
        "reasoning": { "effort": "medium" },
        "store": false,
        "stream": true,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": "019a",
        "max_output_tokens": 2048,
        "text": { "format": { "type": "json_schema", "name": "verdict", "schema": { "type": "object" }, "strict": true } },
    })
}

#[test]
fn a_codex_call_becomes_a_chat_completion() {
    let call = to_chat(&codex_call()).unwrap();
    assert!(call.stream);
    assert_eq!(call.model, "smollm2-135m");
    assert_eq!(call.custom, ["apply_patch"]);
    let expected = json!({
        "model": "smollm2-135m",
        "messages": [
            { "role": "system", "content": "You are a coding agent." },
            { "role": "system", "content": "<permissions>" },
            { "role": "user", "content": "<environment_context>\nAdd sub." },
            { "role": "assistant", "content": "I will write it.", "tool_calls": [
                { "id": "call_1", "type": "function", "function": { "name": "shell", "arguments": "{\"command\":[\"ls\"]}" } }] },
            { "role": "tool", "tool_call_id": "call_1", "content": "a.py\n" },
            { "role": "assistant", "content": null, "tool_calls": [
                { "id": "call_2", "type": "function", "function": { "name": "apply_patch", "arguments": "{\"input\":\"*** Begin Patch\"}" } }] },
            { "role": "tool", "tool_call_id": "call_2", "content": "Done!" },
        ],
        "tools": [
            { "type": "function", "function": { "name": "shell", "description": "Runs a command",
              "parameters": { "type": "object", "properties": { "command": { "type": "array" } } } } },
            { "type": "function", "function": { "name": "apply_patch", "description": "Edits files",
              "parameters": { "type": "object", "properties": { "input": { "type": "string", "description": "The tool's whole input, as plain text." } }, "required": ["input"] } } },
        ],
        "tool_choice": "auto",
        "max_tokens": 2048,
        "response_format": { "type": "json_schema", "json_schema": { "name": "verdict", "schema": { "type": "object" }, "strict": true } },
        "stream": false,
    });
    assert_eq!(call.body, expected);
}

#[test]
fn short_calls_and_refusals() {
    let cases: &[(Value, Result<Value, &str>)] = &[
        (
            json!({ "model": "m", "input": "hi" }),
            Ok(json!([{ "role": "user", "content": "hi" }])),
        ),
        (
            json!({ "model": "m", "input": [{ "role": "user", "content": [
                { "type": "input_text", "text": "see" },
                { "type": "input_image", "image_url": "data:image/png;base64,AA" }] }] }),
            Ok(json!([{ "role": "user", "content": [
                { "type": "text", "text": "see" },
                { "type": "image_url", "image_url": { "url": "data:image/png;base64,AA" } }] }])),
        ),
        (json!({ "input": "hi" }), Err("names its `model`")),
        (json!({ "model": "m", "input": 3 }), Err("neither text")),
        (
            json!({ "model": "m", "input": [{ "type": "function_call_output", "output": "x" }] }),
            Err("no `call_id`"),
        ),
    ];
    for (request, expected) in cases {
        match (to_chat(request), expected) {
            (Ok(call), Ok(messages)) => {
                assert_eq!(&call.body["messages"], messages, "{request}");
                assert!(
                    !call.stream && call.body.get("tools").is_none(),
                    "{request}"
                );
            }
            (Err(why), Err(says)) => assert!(why.contains(says), "{request}: {why}"),
            (got, _) => panic!("{request}: {got:?}"),
        }
    }
    let choice = to_chat(&json!({ "model": "m", "input": "x",
        "tools": [{ "type": "function", "name": "f" }],
        "tool_choice": { "type": "function", "name": "f" } }))
    .unwrap();
    assert_eq!(
        choice.body["tool_choice"],
        json!({ "type": "function", "function": { "name": "f" } })
    );
    assert_eq!(
        choice.body["tools"][0]["function"]["parameters"],
        json!({ "type": "object", "properties": {} })
    );
}

fn chunk(delta: Value, finish: Option<&str>) -> String {
    let c = json!({ "id": "c", "object": "chat.completion.chunk", "model": "smollm2-135m",
                    "choices": [{ "index": 0, "delta": delta, "finish_reason": finish }] });
    format!("data: {c}\n\n")
}

fn usage_chunk() -> String {
    let c = json!({ "id": "c", "object": "chat.completion.chunk", "model": "smollm2-135m", "choices": [],
                    "usage": { "prompt_tokens": 812, "completion_tokens": 41, "total_tokens": 853,
                               "prompt_tokens_details": { "cached_tokens": 12 } } });
    format!("data: {c}\n\n")
}

/// The events `stream` becomes, fed in pieces of `step` bytes: (type, the event).
fn events(stream: &str, step: usize, custom: &[&str]) -> Vec<(String, Value)> {
    let custom = custom.iter().map(|c| c.to_string()).collect();
    let mut t = ToResponses::new("smollm2-135m", true, custom, 1_800_000_000);
    let mut out = Vec::new();
    for piece in stream.as_bytes().chunks(step.max(1)) {
        out.extend(t.feed(piece));
    }
    out.extend(t.finish());
    let text = String::from_utf8(out).unwrap();
    let mut seen = Vec::new();
    for block in text.split("\n\n").filter(|b| !b.is_empty()) {
        let (head, data) = block.split_once('\n').unwrap();
        let kind = head.strip_prefix("event: ").unwrap().to_string();
        let event: Value = serde_json::from_str(data.strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(event["type"], kind.as_str());
        seen.push((kind, event));
    }
    for (i, (_, e)) in seen.iter().enumerate() {
        assert_eq!(e["sequence_number"], i, "numbered in order");
    }
    seen
}

fn kinds(events: &[(String, Value)]) -> Vec<&str> {
    events.iter().map(|(k, _)| k.as_str()).collect()
}

#[test]
fn a_streamed_text_answer_becomes_responses_events() {
    let stream = chunk(json!({ "role": "assistant", "content": "" }), None)
        + &chunk(json!({ "content": "Hel" }), None)
        + &chunk(json!({ "content": "lo." }), None)
        + &chunk(json!({}), Some("stop"))
        + &usage_chunk()
        + "data: [DONE]\n\n";
    let reference = events(&stream, stream.len(), &[]);
    assert_eq!(
        kinds(&reference),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let (_, done) = &reference[9];
    assert_eq!(done["response"]["status"], "completed");
    assert_eq!(
        done["response"]["output"],
        json!([{ "type": "message", "id": "msg_opentiger_0", "status": "completed", "role": "assistant",
                 "content": [{ "type": "output_text", "text": "Hello.", "annotations": [] }] }])
    );
    assert_eq!(
        done["response"]["usage"],
        json!({ "input_tokens": 812, "input_tokens_details": { "cached_tokens": 12 }, "output_tokens": 41,
                "output_tokens_details": { "reasoning_tokens": 0 }, "total_tokens": 853 })
    );
    assert_eq!(reference[6].1["text"], "Hello.");
    for step in [1, 3, 7, 64] {
        assert_eq!(events(&stream, step, &[]), reference, "step {step}");
    }
    // With CRLF line ends and no [DONE]: the same.
    let crlf = stream
        .replace("\n", "\r\n")
        .replace("data: [DONE]\r\n\r\n", "");
    assert_eq!(kinds(&events(&crlf, 5, &[])), kinds(&reference));
}

#[test]
fn streamed_tool_calls_become_function_and_custom_calls() {
    let call = |index: u64, id: Option<&str>, name: Option<&str>, args: &str| {
        let mut c =
            json!({ "index": index, "type": "function", "function": { "arguments": args } });
        if let Some(id) = id {
            c["id"] = json!(id);
        }
        if let Some(name) = name {
            c["function"]["name"] = json!(name);
        }
        chunk(json!({ "tool_calls": [c] }), None)
    };
    let stream = chunk(json!({ "content": "Let me look." }), None)
        + &call(0, Some("call_a"), Some("shell"), "")
        + &call(0, None, None, "{\"command\":")
        + &call(1, Some("call_b"), Some("apply_patch"), "{\"input\":")
        + &call(0, None, None, "[\"ls\"]}")
        + &call(1, None, None, "\"*** Begin Patch\"}")
        + &chunk(json!({}), Some("tool_calls"))
        + &usage_chunk();
    let got = events(&stream, 11, &["apply_patch"]);
    assert_eq!(
        kinds(&got),
        [
            "response.created",
            "response.in_progress",
            "response.output_item.added",
            "response.content_part.added",
            "response.output_text.delta",
            "response.output_text.done",
            "response.content_part.done",
            "response.output_item.done",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.output_item.added",
            "response.function_call_arguments.delta",
            "response.function_call_arguments.done",
            "response.output_item.done",
            "response.output_item.done",
            "response.completed",
        ]
    );
    let output = &got.last().unwrap().1["response"]["output"];
    assert_eq!(
        output[1],
        json!({ "type": "function_call", "id": "fc_opentiger_1", "call_id": "call_a", "name": "shell",
                "arguments": "{\"command\":[\"ls\"]}", "status": "completed" })
    );
    assert_eq!(
        output[2],
        json!({ "type": "custom_tool_call", "id": "fc_opentiger_2", "call_id": "call_b", "name": "apply_patch",
                "input": "*** Begin Patch", "status": "completed" })
    );
}

#[test]
fn ends_that_are_not_a_finished_answer() {
    let text = chunk(json!({ "content": "Hi" }), None);
    // Cut off at its length limit: incomplete.
    let length = text.clone() + &chunk(json!({}), Some("length"));
    let got = events(&length, 9, &[]);
    let (kind, last) = got.last().unwrap();
    assert_eq!(kind, "response.incomplete");
    assert_eq!(
        last["response"]["incomplete_details"]["reason"],
        "max_output_tokens"
    );
    // Broken off, or an error in the stream: failed, with the server's words.
    let got = events(&text, 9, &[]);
    assert_eq!(got.last().unwrap().0, "response.failed");
    let error = text + "data: {\"error\":{\"message\":\"the model crashed\"}}\n\n";
    let got = events(&error, 9, &[]);
    let (kind, last) = got.last().unwrap();
    assert_eq!(kind, "response.failed");
    assert_eq!(last["response"]["error"]["message"], "the model crashed");
    // Larger than the proxy holds: failed, said so.
    let mut t = ToResponses::new("m", true, Vec::new(), 0);
    let big = chunk(json!({ "content": "x".repeat(ANSWER_CAP + 1) }), None);
    let out = String::from_utf8([t.feed(big.as_bytes()), t.finish()].concat()).unwrap();
    assert!(
        out.contains("response.failed") && out.contains("too large"),
        "{}",
        &out[..200]
    );
}

#[test]
fn an_answer_not_streamed_is_one_response_object() {
    let stream = chunk(json!({ "content": "Done." }), Some("stop")) + &usage_chunk();
    let mut t = ToResponses::new("smollm2-135m", false, Vec::new(), 7);
    let mut out = t.feed(stream.as_bytes());
    assert!(out.is_empty(), "nothing before the end");
    out.extend(t.finish());
    let response: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(response["object"], "response");
    assert_eq!(response["status"], "completed");
    assert_eq!(response["output"][0]["content"][0]["text"], "Done.");
    assert_eq!(response["usage"]["input_tokens"], 812);
}

#[path = "reshape_tests.rs"]
mod reshape_tests;

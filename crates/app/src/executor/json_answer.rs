//! Finding the JSON object an agent answered with inside the text of its reply (issue 39): the
//! judge's verdict and the planner's plan when their CLI cannot write the result file.
//!
//! A model writes around its JSON (prose, a fence), and a console may have wrapped the reply,
//! putting raw line breaks inside JSON strings. So: the last top-level object that has the key
//! the role answers with (`verdict`, `tasks`) wins over any other object, an object broken only
//! by raw control characters inside its strings is read with them escaped, and without an
//! object holding the key the last object found is returned for the caller's error to name.
//!
//! Not for: what the object must hold (`runner::verdict_answer`, `planner::plan`).

use serde_json::Value;

/// The last JSON object in `text` that is not inside another one (e.g. the verdict at the end of
/// a judge's reply, fenced or not).
pub fn extract_json_object(text: &str) -> Option<Value> {
    extract_answer(text, None)
}

/// The last top-level JSON object of `text` holding `key` at its top, else the last top-level
/// object (see the module documentation).
pub fn extract_answer(text: &str, key: Option<&str>) -> Option<Value> {
    // A reply is short; past this, only its end is searched.
    let mut start = text.len().saturating_sub(256 * 1024);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    let text = &text[start..];
    let mut last = None;
    let mut keyed = None;
    let mut at = 0;
    while let Some(offset) = text[at..].find('{') {
        let start = at + offset;
        match object_at(&text[start..]) {
            Some((value, len)) => {
                if key.is_some_and(|k| value.get(k).is_some()) {
                    keyed = Some(value.clone());
                }
                last = Some(value);
                at = start + len;
            }
            None => at = start + 1,
        }
    }
    keyed.or(last)
}

/// The object `text` starts with and the bytes it spans; one broken by raw control characters
/// inside its strings is read with them escaped.
fn object_at(text: &str) -> Option<(Value, usize)> {
    let mut objects = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    if let Some(Ok(value @ Value::Object(_))) = objects.next() {
        return Some((value, objects.byte_offset()));
    }
    let (repaired, spans) = escape_controls_in_strings(text)?;
    let mut objects = serde_json::Deserializer::from_str(&repaired).into_iter::<Value>();
    match objects.next() {
        Some(Ok(value @ Value::Object(_))) => {
            let end = objects.byte_offset();
            Some((value, spans.get(end).copied().unwrap_or(text.len())))
        }
        _ => None,
    }
}

/// `text` with raw control characters inside JSON strings escaped (a wrapped line becomes a
/// space, as the writer meant it), and for each byte of the result the offset in `text` it
/// came from. `None` when there was nothing to escape.
fn escape_controls_in_strings(text: &str) -> Option<(String, Vec<usize>)> {
    let mut out = String::with_capacity(text.len());
    let mut spans = Vec::with_capacity(text.len() + 1);
    let (mut in_string, mut escaped, mut changed) = (false, false, false);
    for (i, c) in text.char_indices() {
        let piece: String = match c {
            '\n' | '\r' | '\t' if in_string => {
                changed = true;
                // A console broke the line at a space it dropped: put one back.
                if c == '\n' && !out.ends_with(' ') {
                    " ".to_string()
                } else {
                    String::new()
                }
            }
            _ => {
                if in_string && !escaped && c == '"' {
                    in_string = false;
                } else if !in_string && c == '"' {
                    in_string = true;
                }
                escaped = in_string && !escaped && c == '\\';
                c.to_string()
            }
        };
        spans.extend(std::iter::repeat_n(i, piece.len()));
        out.push_str(&piece);
    }
    spans.push(text.len());
    changed.then_some((out, spans))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_top_level_json_object_is_extracted() {
        #[rustfmt::skip]
        let cases: &[(&str, Option<&str>)] = &[
            (r#"{"verdict": "approve", "summary": "ok", "findings": []}"#, Some("approve")),
            ("I reviewed it.\n\n```json\n{\"verdict\": \"request_changes\", \"findings\": [\"x {y}\"]}\n```\n", Some("request_changes")),
            (r#"first {"verdict": "approve"} then {"verdict": "request_changes", "n": {"a": 1}}"#, Some("request_changes")),
            ("a brace { that never closes", None),
            ("no json here", None),
            ("[1, 2, 3]", None),
            ("", None),
        ];
        for (text, verdict) in cases {
            let got = extract_json_object(text);
            let got = got
                .as_ref()
                .and_then(|v| v.get("verdict"))
                .and_then(Value::as_str);
            assert_eq!(got, *verdict, "{text:?}");
        }
    }

    /// Issue 39: aider's console wrapped the verdict at 80 columns; a model wrote an object
    /// after it; a summary object was taken for the answer.
    #[test]
    fn the_answer_is_found_whole_around_what_the_model_wrote() {
        let wrapped = "{\"verdict\": \"approve\", \"summary\": \"The change adds sub.txt with a correct sub(a,\nb) function as asked.\", \"findings\": []}\n\nTokens: 100 sent";
        let v = extract_answer(wrapped, Some("verdict")).expect("found");
        assert_eq!(v["verdict"], "approve");
        assert_eq!(
            v["summary"],
            "The change adds sub.txt with a correct sub(a, b) function as asked."
        );
        let after = r#"{"verdict": "approve", "summary": "fine"} Example: {"a": 1}"#;
        assert_eq!(
            extract_answer(after, Some("verdict")).unwrap()["verdict"],
            "approve"
        );
        assert_eq!(extract_answer(after, None).unwrap()["a"], 1);
        // Broken beyond repair around a valid inner object: the object found is returned, and
        // the caller says what it holds.
        let broken = "{\"verdict\": \"approve\", \"summary\": {\"text\": \"ok\"} \"findings\": }";
        let v = extract_answer(broken, Some("verdict")).unwrap();
        assert_eq!(v, serde_json::json!({"text": "ok"}));
        let plan = "Here is the plan:\n{\"tasks\": [{\"key\": \"a\", \"title\": \"Add\nsub\"}]}";
        assert_eq!(
            extract_answer(plan, Some("tasks")).unwrap()["tasks"][0]["title"],
            "Add sub"
        );
        // A string holding an escaped quote and a brace stays as written.
        let escaped = "{\"verdict\": \"approve\", \"summary\": \"say \\\"}\\\"\nthen\"}";
        assert_eq!(
            extract_answer(escaped, Some("verdict")).unwrap()["summary"],
            "say \"}\" then"
        );
    }
}

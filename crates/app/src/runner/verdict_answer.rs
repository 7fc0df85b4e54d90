//! The judge's answer read (DESIGN §6): `{"verdict": "approve" | "request_changes", "summary":
//! "...", "findings": ["..."], "criteria": [...]}`. A wrong answer is an error saying what was
//! found ("a verdict object whose `summary` is an object, not text", issue 39), never a guess
//! and never an approval.
//!
//! Not for: finding the object in a reply (`executor::extract_answer`), what a verdict means
//! for the task (`engine::verdict`).

use serde_json::Value;

use crate::model::Verdict;

/// The judge gave no JSON: what to say, with the end of its reply when it wrote one.
pub fn missing(reply: Option<&str>) -> String {
    match reply.map(str::trim).filter(|r| !r.is_empty()) {
        Some(reply) => {
            let chars: Vec<char> = reply.chars().collect();
            let end: String = chars[chars.len().saturating_sub(200)..].iter().collect();
            format!("the judge agent wrote no verdict to $OPENTIGER_RESULT_FILE, and its reply holds no JSON object; it ends: {end}")
        }
        None => "the judge agent wrote no verdict to $OPENTIGER_RESULT_FILE".to_string(),
    }
}

/// What kind of JSON value `v` is, in words.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a true/false value",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// The verdict, its summary and its findings; `Err` says what the answer held instead.
pub fn parse_verdict(value: &Value) -> Result<(Verdict, String, Vec<String>), String> {
    let Some(object) = value.as_object() else {
        return Err(format!(
            "the judge's answer is {}, not a verdict object",
            kind(value)
        ));
    };
    let Some(word) = object.get("verdict") else {
        let keys: Vec<String> = object.keys().map(|k| format!("`{k}`")).collect();
        return Err(if keys.is_empty() {
            "the judge's answer is an empty object: it has no \"verdict\"".to_string()
        } else {
            format!(
                "the judge's answer has no \"verdict\": an object with {}",
                keys.join(", ")
            )
        });
    };
    let word = word.as_str().ok_or_else(|| {
        format!(
            "a verdict object whose `verdict` is {}, not text",
            kind(word)
        )
    })?;
    let verdict = word
        .parse::<Verdict>()
        .map_err(|e| format!("the verdict JSON is invalid: {e}"))?;
    let summary = match object.get("summary") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(other) => {
            return Err(format!(
                "a verdict object whose `summary` is {}, not text",
                kind(other)
            ))
        }
    };
    let findings = match object.get("findings") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|f| match f {
                Value::String(s) => Ok(s.clone()),
                other => Err(format!(
                    "a verdict object whose `findings` hold {}, not text",
                    kind(other)
                )),
            })
            .collect::<Result<_, _>>()?,
        Some(other) => {
            return Err(format!(
                "a verdict object whose `findings` is {}, not a list of texts",
                kind(other)
            ))
        }
    };
    Ok((verdict, summary, findings))
}

/// The `criteria` of a verdict: (number from 1, met, one-line reason); entries without a number
/// or a `met` are left out, and a reason is kept to its first line.
pub fn parse_criteria(value: &serde_json::Value) -> Vec<(usize, bool, String)> {
    let Some(list) = value.get("criteria").and_then(|c| c.as_array()) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|entry| {
            let n = usize::try_from(entry.get("item")?.as_u64()?).ok()?;
            let met = entry.get("met")?.as_bool()?;
            let reason = entry
                .get("reason")
                .and_then(|r| r.as_str())
                .unwrap_or("")
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string();
            Some((n, met, reason))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_wrong_answer_says_what_was_found() {
        #[rustfmt::skip]
        let cases: &[(Value, Result<&str, &str>)] = &[
            (json!({"verdict": "approve", "summary": "ok", "findings": []}), Ok("ok")),
            (json!({"verdict": "request_changes", "findings": ["fix x"]}), Ok("")),
            (json!({"verdict": "approve", "summary": {"text": "ok"}}), Err("a verdict object whose `summary` is an object, not text")),
            (json!({"verdict": "approve", "findings": "none"}), Err("a verdict object whose `findings` is text, not a list of texts")),
            (json!({"verdict": "approve", "findings": [{"a": 1}]}), Err("a verdict object whose `findings` hold an object, not text")),
            (json!({"verdict": true}), Err("a verdict object whose `verdict` is a true/false value, not text")),
            (json!({"text": "ok", "score": 3}), Err("the judge's answer has no \"verdict\": an object with `score`, `text`")),
            (json!({}), Err("the judge's answer is an empty object: it has no \"verdict\"")),
            (json!([1]), Err("the judge's answer is a list, not a verdict object")),
            (json!({"verdict": "maybe"}), Err("the verdict JSON is invalid")),
        ];
        for (value, want) in cases {
            match (parse_verdict(value), want) {
                (Ok((_, summary, _)), Ok(s)) => assert_eq!(summary, *s, "{value}"),
                (Err(e), Err(s)) => assert!(e.starts_with(s), "{value}: {e}"),
                (got, _) => panic!("{value}: {got:?}"),
            }
        }
        assert!(missing(Some("I approve.")).ends_with("it ends: I approve."));
        assert_eq!(
            missing(None),
            "the judge agent wrote no verdict to $OPENTIGER_RESULT_FILE"
        );
    }
}

//! The judge agent's answer, read as data (DESIGN §6): its verdict, summary and findings, and
//! its answer per acceptance criterion. Whatever else the agent wrote is ignored.
//!
//! Not for: asking the agent or acting on the verdict (`super`).

use crate::model::Verdict;

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

/// `{"verdict": "approve" | "request_changes", "summary": "...", "findings": ["..."]}` (DESIGN §6).
pub fn parse_verdict(value: &serde_json::Value) -> Result<(Verdict, String, Vec<String>), String> {
    let verdict = value
        .get("verdict")
        .and_then(|v| v.as_str())
        .ok_or("the verdict JSON has no \"verdict\"")?
        .parse::<Verdict>()
        .map_err(|e| format!("the verdict JSON is invalid: {e}"))?;
    let summary = value
        .get("summary")
        .and_then(|v| v.as_str())
        .unwrap_or("")
        .to_string();
    let findings = value
        .get("findings")
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    Ok((verdict, summary, findings))
}

//! YAML syntax and type errors said in the user's words: what is wrong on their line, and the
//! fix written with their own value ("use a list: [\"cargo test\"]"), instead of the parser's
//! vocabulary ("expected sequence start", "invalid u32").
//!
//! Not for: unknown keys, unknown values and duplicate keys (`load.rs` words those, with "did
//! you mean"), nor checks of values that parsed (`load.rs::validate`, `entry.rs`).

#[path = "indent.rs"]
pub(super) mod indent;

/// A better message and fix for the parser's `message` about `key` (dotted, may be empty) at
/// `line` of `text`, when one is known: `(line, message, fix)`.
pub(super) fn in_plain_words(
    message: &str,
    key: &str,
    text: &str,
    line: Option<u64>,
) -> Option<(Option<u64>, String, String)> {
    if let Some(tab_line) = tab_indented_line(text, line, message) {
        return Some((
            Some(tab_line),
            "a tab is not allowed for indentation".to_string(),
            format!("indent line {tab_line} with spaces; YAML does not allow tabs there"),
        ));
    }
    let leaf = key.rsplit('.').next().unwrap_or(key);
    let value = line.and_then(|l| value_on_line(text, l));
    let shown = value.clone().unwrap_or_default();
    if message.contains("unclosed bracket") {
        return Some((
            line,
            "a `[` list is never closed with `]`".to_string(),
            format!("close it on the same line, e.g. `{leaf}: [\"cargo test\"]`"),
        ));
    }
    if message.contains("expected sequence start") || message.contains("expected a sequence") {
        let item = value
            .map(|v| quoted(&v))
            .unwrap_or_else(|| "\"...\"".to_string());
        return Some((
            line,
            "expected a list, found a single value".to_string(),
            format!("use a list: `{leaf}: [{item}]` (one entry per item)"),
        ));
    }
    if message.contains("expected mapping start") || message.contains("expected a map") {
        let fix = match (key.strip_prefix("agents."), value.as_deref()) {
            (Some(role), Some(word)) if !role.contains('.') && is_executor(word) => format!(
                "name the executor as a key under it: `{role}: {{ executor: {word} }}`, or on \
                 the next line, indented: `executor: {word}`"
            ),
            _ => format!(
                "write the keys of `{key}` on the lines below it, indented (its keys: \
                 `opentiger config schema`)"
            ),
        };
        return Some((line, format!("`{key}` holds keys, not a single value"), fix));
    }
    if [
        "invalid u8",
        "invalid u16",
        "invalid u32",
        "invalid u64",
        "invalid usize",
    ]
    .iter()
    .any(|m| message.contains(m))
    {
        return Some((
            line,
            format!("`{shown}` is not a whole number of 0 or more"),
            format!("write a whole number, e.g. `{leaf}: 2`"),
        ));
    }
    if [
        "invalid i8",
        "invalid i16",
        "invalid i32",
        "invalid i64",
        "invalid isize",
    ]
    .iter()
    .any(|m| message.contains(m))
    {
        return Some((
            line,
            format!("`{shown}` is not a whole number"),
            format!("write a whole number, e.g. `{leaf}: 10` (or `-5`)"),
        ));
    }
    if message.contains("invalid floating point") || message.contains("invalid f64") {
        return Some((
            line,
            format!("`{shown}` is not a number"),
            format!("write a number, e.g. `{leaf}: 30` (fractions allowed)"),
        ));
    }
    if message.contains("invalid boolean") {
        return Some((
            line,
            format!("`{shown}` is not true or false"),
            format!("write `{leaf}: true` or `{leaf}: false`"),
        ));
    }
    None
}

/// The line whose indentation holds a tab, when the error is about a tab or the reported line
/// or its neighbours are tab-indented.
fn tab_indented_line(text: &str, line: Option<u64>, message: &str) -> Option<u64> {
    let tabbed: Vec<u64> = text
        .lines()
        .enumerate()
        .filter(|(_, l)| {
            let indent = &l[..l.len() - l.trim_start().len()];
            indent.contains('\t')
        })
        .map(|(i, _)| i as u64 + 1)
        .collect();
    let near = line.and_then(|l| tabbed.iter().copied().find(|t| t + 1 >= l && *t <= l + 1));
    if message.contains("tab") {
        near.or_else(|| tabbed.first().copied()).or(line)
    } else {
        near
    }
}

/// What follows `key:` on line `line` (1-based), without a trailing comment; else the next
/// line's text when the value starts there.
fn value_on_line(text: &str, line: u64) -> Option<String> {
    let lines: Vec<&str> = text.lines().collect();
    let index = usize::try_from(line).ok()?.checked_sub(1)?;
    let here = lines.get(index)?;
    let after = here.split_once(':').map_or(*here, |(_, v)| v);
    let value = strip_comment(after).trim().to_string();
    if !value.is_empty() {
        return Some(value);
    }
    lines[index + 1..]
        .iter()
        .map(|l| strip_comment(l).trim())
        .find(|l| !l.is_empty())
        .map(str::to_string)
}

fn strip_comment(text: &str) -> &str {
    text.split_once(" #").map_or(text, |(v, _)| v)
}

/// `value` as one JSON-style list item: kept when already quoted.
fn quoted(value: &str) -> String {
    let quoted = |q: char| value.len() >= 2 && value.starts_with(q) && value.ends_with(q);
    if quoted('"') || quoted('\'') {
        value.to_string()
    } else {
        format!("\"{}\"", value.replace('"', "\\\""))
    }
}

fn is_executor(word: &str) -> bool {
    matches!(
        word,
        "claude-code" | "opencode" | "codex" | "aider" | "command" | "scripted"
    )
}

#[cfg(test)]
mod tests {
    use crate::config::load_str;

    /// Each mistake as written → line, message and fix (substrings), in the user's words.
    #[test]
    fn syntax_and_type_errors_are_said_plainly() {
        #[rustfmt::skip]
        let cases: &[(&str, u64, &str, &str)] = &[
            ("limits:\n\tmax_runs_per_tick: 2\n", 2, "a tab is not allowed for indentation", "indent line 2 with spaces"),
            ("limits:\n  max_runs_per_tick: 2\n\tlease_minutes: 3\n", 3, "a tab is not allowed", "line 3"),
            ("verify:\n  commands: \"cargo test\"\n", 2, "expected a list", "use a list: `commands: [\"cargo test\"]`"),
            ("verify:\n  commands: cargo test # the tests\n", 2, "expected a list", "[\"cargo test\"]"),
            ("verify:\n  commands:\n    cargo test\n", 3, "expected a list", "[\"cargo test\"]"),
            ("agents:\n  default:\n    executor: command\n    command: ./agent.sh\n", 4, "expected a list", "`command: [\"./agent.sh\"]`"),
            ("verify:\n  commands: [cargo test\n", 2, "never closed", "close it"),
            ("limits: 5\n", 1, "`limits` holds keys, not a single value", "lines below it, indented"),
            ("agents:\n  worker: codex\n", 2, "`agents.worker` holds keys", "`worker: { executor: codex }`"),
            ("limits:\n  max_runs_per_tick: two\n", 2, "`two` is not a whole number of 0 or more", "`max_runs_per_tick: 2`"),
            ("limits:\n  max_runs_per_tick: -1\n", 2, "`-1` is not a whole number of 0 or more", "whole number"),
            ("agents:\n  default:\n    timeout_minutes: soon\n", 3, "`soon` is not a number", "fractions allowed"),
            ("merge:\n  require_checks: maybe\n", 2, "`maybe` is not true or false", "`require_checks: true`"),
        ];
        for (text, line, message, fix) in cases {
            let err = load_str(text, ".opentiger.yml").unwrap_err();
            assert_eq!(err.line, Some(*line), "line for {text:?}: {err}");
            assert!(err.message.contains(message), "message for {text:?}: {err}");
            assert!(err.fix.contains(fix), "fix for {text:?}: {err}");
            assert!(!err.fix.contains("right type"), "{text:?}: {err}");
        }
    }

    /// An error about `agents.default` names `agents.default`, on the line the user wrote.
    #[test]
    fn an_error_in_the_default_agent_names_the_default_agent() {
        let text = "mode: local-git\nagents:\n  default:\n    executor: command\n";
        let err = load_str(text, ".opentiger.yml").unwrap_err();
        assert_eq!(err.key, "agents.default.command", "{err}");
        assert_eq!(err.line, Some(4), "{err}");
        let text = "agents:\n  worker:\n    executor: command\n";
        let err = load_str(text, ".opentiger.yml").unwrap_err();
        assert_eq!(err.key, "agents.worker.command", "{err}");
    }
}

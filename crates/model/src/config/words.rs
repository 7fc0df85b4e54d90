//! YAML syntax and type errors said in the user's words: what is wrong on their line, and the
//! fix written with their own value ("use a list: [\"cargo test\"]"), instead of the parser's
//! vocabulary ("expected sequence start", "invalid u32").
//!
//! Not for: unknown keys, unknown values and duplicate keys (`load.rs` words those, with "did
//! you mean"), nor checks of values that parsed (`load.rs::validate`, `entry.rs`).

#[path = "indent.rs"]
pub(super) mod indent;
#[path = "shapes.rs"]
mod shapes;
#[path = "syntax.rs"]
pub(super) mod syntax;

/// How long a value the user wrote may be when a message or a fix shows it (issue 49: a
/// 5,000-character value is not echoed whole).
pub(super) const SHOWN_CHARS: usize = 80;

/// `text` cut to `max` characters, with an ellipsis when cut.
pub(super) fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max.saturating_sub(1)) {
        Some((cut, _)) if text.chars().count() > max => format!("{}…", &text[..cut]),
        _ => text.to_string(),
    }
}

/// A better message and fix for the parser's `message` about `key` (dotted, may be empty) at
/// `line` of `text`, when one is known: `(line, message, fix)`. `schema` is the configuration's
/// JSON Schema: which shape each key takes.
pub(super) fn in_plain_words(
    message: &str,
    key: &str,
    text: &str,
    line: Option<u64>,
    schema: &str,
) -> Option<(Option<u64>, String, String)> {
    if let Some(tab_line) = tab_indented_line(text, line, message) {
        return Some((
            Some(tab_line),
            "a tab is not allowed for indentation".to_string(),
            format!("indent line {tab_line} with spaces; YAML does not allow tabs there"),
        ));
    }
    let schema: serde_json::Value = serde_json::from_str(schema).unwrap_or_default();
    let lines = shapes::Text::of(text);
    // The key's own line (issue 49: `budget: |` is reported where `budget:` is, not at its
    // text), 0-based.
    let key_at = super::keys::line_of_key(text, key)
        .filter(|l| line.is_none_or(|r| *l <= r))
        .and_then(|l| usize::try_from(l).ok()?.checked_sub(1));
    let shaped = |found: Option<shapes::Shaped>| found.map(|(l, m, f)| (Some(l), m, f));
    let leaf = key.rsplit('.').next().unwrap_or(key);
    let value = line.and_then(|l| value_on_line(text, l));
    let shown = shorten(&value.clone().unwrap_or_default(), SHOWN_CHARS);
    if message.contains("expected sequence start") || message.contains("expected a sequence") {
        if let Some(said) =
            shaped(key_at.and_then(|at| shapes::not_a_list(&lines, &schema, key, at)))
        {
            return Some(said);
        }
        let item = value
            .map(|v| shapes::quoted(&shorten(&v, SHOWN_CHARS)))
            .unwrap_or_else(|| "\"...\"".to_string());
        return Some((
            line,
            "expected a list, found a single value".to_string(),
            format!("use a list: `{leaf}: [{item}]` (one entry per item)"),
        ));
    }
    if message.contains("expected string") {
        let at = key_at.or_else(|| usize::try_from(line?).ok()?.checked_sub(1));
        let found = at.and_then(|at| {
            shapes::item_is_a_value(&lines, key, at)
                .or_else(|| shapes::one_value(&lines, &schema, key, at))
        });
        if let Some(said) = shaped(found) {
            return Some(said);
        }
    }
    if message.contains("expected mapping start") || message.contains("expected a map") {
        if key.is_empty() {
            return Some((
                line,
                "the file is one value, not keys".to_string(),
                "write `key: value` lines, e.g. `mode: local-git` (the keys: `opentiger config schema`)"
                    .to_string(),
            ));
        }
        if let Some(said) =
            shaped(key_at.and_then(|at| shapes::item_needs_keys(&lines, &schema, key, at)))
        {
            return Some(said);
        }
        // A block scalar (`budget: |`): the key's line, not the text's.
        let block_scalar = key_at.filter(|at| {
            let own = text.lines().nth(*at).unwrap_or_default();
            let after = own.split_once(':').map_or("", |(_, v)| v).trim_start();
            after.starts_with(['|', '>'])
        });
        // `verify:` then `  commands []`: a key whose `:` is missing reads as a value.
        let below = line.and_then(|l| usize::try_from(l).ok()?.checked_sub(1));
        let all: Vec<&str> = text.lines().collect();
        if let Some((l, _, m, f)) = below
            .filter(|b| Some(*b) != key_at && block_scalar.is_none())
            .and_then(|b| syntax::missing_colon(&all, b, &schema))
        {
            return Some((Some(l), m, f));
        }
        let line = block_scalar.map_or(line, |at| Some(at as u64 + 1));
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
pub(super) fn tab_indented_line(text: &str, line: Option<u64>, message: &str) -> Option<u64> {
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
            ("verify:\n  commands:\n    cargo test\n", 2, "expected a list", "[\"cargo test\"]"),
            ("agents:\n  default:\n    executor: command\n    command: ./agent.sh\n", 4, "expected a list", "`command: [\"./agent.sh\"]`"),
            ("verify:\n  commands: [cargo test\n", 2, "never closed", "close it"),
            ("limits: 5\n", 1, "`limits` holds keys, not a single value", "lines below it, indented"),
            ("agents:\n  worker: codex\n", 2, "`agents.worker` holds keys", "`worker: { executor: codex }`"),
            ("limits:\n  max_runs_per_tick: two\n", 2, "`two` is not a whole number of 0 or more", "`max_runs_per_tick: 2`"),
            ("limits:\n  max_runs_per_tick: -1\n", 2, "`-1` is not a whole number of 0 or more", "whole number"),
            ("agents:\n  default:\n    timeout_minutes: soon\n", 3, "`soon` is not a number", "fractions allowed"),
            ("merge:\n  require_checks: maybe\n", 2, "`maybe` is not true or false", "`require_checks: true`"),
            // Issue 49: a block of text is reported at its key, not at the text.
            ("budget: |\n  lots\n  of money\n", 1, "`budget` holds keys, not a single value", "on the lines below it"),
            ("verify:\n  commands []\n", 2, "`commands []` is not a `key: value` line", "write `commands: []`"),
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

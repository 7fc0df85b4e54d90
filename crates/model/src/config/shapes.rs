//! A value of the wrong shape, and the fix that can be pasted over it (issue 49): a list written
//! as one value or as keys, a list item written as a value where the items hold keys (a
//! `when_changed` rule, a fallback), keys where the item is one value (a `writable` folder).
//! Which shape a key takes comes from the configuration's JSON Schema, and the fix is written
//! with the user's own values, at the key's indentation, as the lines that replace theirs.
//!
//! Not for: the other type errors (numbers, booleans, keys of a block: `words.rs`).

use serde_json::Value;

use super::indent::resolve;

/// What is wrong and its fix, when the shape can be said: `(line, message, fix)`.
pub(super) type Shaped = (u64, String, String);

/// The file's lines as the shape fixes read them.
pub(super) struct Text<'a> {
    lines: Vec<&'a str>,
}

impl<'a> Text<'a> {
    pub(super) fn of(text: &'a str) -> Text<'a> {
        Text {
            lines: text.lines().collect(),
        }
    }

    fn indent(&self, i: usize) -> usize {
        let l = self.lines[i];
        l.len() - l.trim_start_matches(' ').len()
    }

    fn content(&self, i: usize) -> bool {
        let t = self.lines[i].trim();
        !t.is_empty() && !t.starts_with('#')
    }

    /// The value after `key:` on line `i`, without a comment.
    fn inline(&self, i: usize) -> &'a str {
        let l = self.lines[i];
        let after = l.split_once(':').map_or("", |(_, v)| v);
        after.split_once(" #").map_or(after, |(v, _)| v).trim()
    }

    /// The lines of the block under line `i` (more indented), comments and blanks left out.
    fn block(&self, i: usize) -> Vec<usize> {
        let own = self.indent(i);
        let mut out = Vec::new();
        for j in i + 1..self.lines.len() {
            if !self.content(j) {
                continue;
            }
            if self.indent(j) <= own {
                break;
            }
            out.push(j);
        }
        out
    }
}

/// `key: value` as written on a line: the key and the value (without a comment).
fn pair(line: &str) -> Option<(&str, &str)> {
    let t = line.trim_start().trim_start_matches("- ").trim_start();
    let (k, v) = t.split_once(':')?;
    let simple = !k.is_empty()
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !simple || !(v.is_empty() || v.starts_with(' ')) {
        return None;
    }
    Some((k, v.split_once(" #").map_or(v, |(v, _)| v).trim()))
}

/// The schema node of a dotted key (`name[n]` an item of the list `name`).
fn node<'s>(schema: &'s Value, key: &str) -> Option<&'s Value> {
    let path: Vec<String> = key.split('.').map(str::to_string).collect();
    super::indent::node_at(schema, &path)
}

/// What the items of the list at `key` are: keys (with their names) or one value each.
enum Items {
    Keys(Vec<String>),
    Values,
}

fn items(schema: &Value, key: &str) -> Option<Items> {
    let list = node(schema, key)?;
    let array = |t: &Value| t.as_str() == Some("array");
    let is_list = match list.get("type") {
        Some(Value::Array(types)) => types.iter().any(array),
        Some(t) => array(t),
        None => false,
    };
    if !is_list {
        return None;
    }
    let item = resolve(schema, list.get("items")?);
    Some(match item.get("properties").and_then(Value::as_object) {
        Some(props) => Items::Keys(props.keys().cloned().collect()),
        None => Items::Values,
    })
}

/// One item of a list of keys, from what the user wrote as a single value: the value goes to
/// the key that takes it (`paths` of a rule, `executor` of a fallback), with an example of
/// what else the item needs.
fn item_of(keys: &[String], value: &str) -> Vec<String> {
    let has = |k: &str| keys.iter().any(|x| x == k);
    if has("paths") && has("commands") {
        return vec![
            format!("paths: [{}]", quoted(value)),
            "commands: [\"cargo test\"]".to_string(),
        ];
    }
    if has("executor") {
        return vec![format!("executor: {}", plain(value))];
    }
    let first = keys.first().cloned().unwrap_or_else(|| "name".to_string());
    vec![format!("{first}: {}", plain(value))]
}

/// `value` as one quoted list item (kept when already quoted).
pub(super) fn quoted(value: &str) -> String {
    let quoted = |q: char| value.len() >= 2 && value.starts_with(q) && value.ends_with(q);
    if quoted('"') || quoted('\'') {
        value.to_string()
    } else {
        format!("\"{}\"", value.replace('\\', "\\\\").replace('"', "\\\""))
    }
}

/// `value` without the quotes around it.
fn plain(value: &str) -> &str {
    value.trim_matches(|c| c == '"' || c == '\'')
}

/// Lines at `indent`, one per entry, each line of an entry after the first indented under it.
fn render(indent: usize, entries: &[Vec<String>], dash: bool) -> String {
    let pad = " ".repeat(indent);
    let mut out = Vec::new();
    for entry in entries {
        for (n, line) in entry.iter().enumerate() {
            match (dash, n) {
                (true, 0) => out.push(format!("{pad}- {line}")),
                (true, _) => out.push(format!("{pad}  {line}")),
                (false, _) => out.push(format!("{pad}{line}")),
            }
        }
    }
    out.join("\n")
}

/// "expected a list" at `key`, whose line is `at` (0-based): the list written as the user meant.
pub(super) fn not_a_list(text: &Text<'_>, schema: &Value, key: &str, at: usize) -> Option<Shaped> {
    let leaf = key.rsplit('.').next()?.split('[').next()?;
    let kind = items(schema, key)?;
    let indent = text.indent(at);
    let inline = text.inline(at);
    let block = text.block(at);
    let n = at as u64 + 1;
    let head = format!("{}{leaf}:", " ".repeat(indent));
    let keyed: Vec<(&str, &str)> = block.iter().filter_map(|i| pair(text.lines[*i])).collect();
    let too_long = inline.chars().count() > super::SHOWN_CHARS;
    match kind {
        Items::Keys(keys) if !inline.is_empty() && !too_long => {
            let item = item_of(&keys, inline);
            Some((
                n,
                format!(
                    "`{leaf}` is a list of items with keys ({}), not one value",
                    keys.join(", ")
                ),
                format!(
                    "replace line {n} with:\n{head}\n{}",
                    render(indent + 2, &[item], true)
                ),
            ))
        }
        Items::Keys(_) if !block.is_empty() && keyed.len() == block.len() => {
            // One item written without its `- `: the same lines, made an item.
            let lines: Vec<String> = block
                .iter()
                .map(|i| text.lines[*i].trim().to_string())
                .collect();
            let last = block.last().map_or(n, |l| *l as u64 + 1);
            Some((
                n,
                format!("`{leaf}` is a list, and its item is written without `- `"),
                format!(
                    "replace lines {n}–{last} with:\n{head}\n{}",
                    render(indent + 2, &[lines], true)
                ),
            ))
        }
        Items::Values if !block.is_empty() && keyed.len() == block.len() => {
            let values: Vec<Vec<String>> = keyed
                .iter()
                .map(|(k, v)| vec![plain(if v.is_empty() { k } else { v }).to_string()])
                .collect();
            let shown: Vec<String> = keyed
                .iter()
                .take(2)
                .map(|(k, v)| super::shorten(&format!("{k}: {v}"), 40))
                .collect();
            let last = block.last().map_or(n, |l| *l as u64 + 1);
            Some((
                n,
                format!(
                    "`{leaf}` is a list of values, and here it holds keys (`{}`)",
                    shown.join("`, `")
                ),
                format!(
                    "replace lines {n}–{last} with:\n{head}\n{}",
                    render(indent + 2, &values, true)
                ),
            ))
        }
        Items::Values | Items::Keys(_) if inline.is_empty() && !block.is_empty() => {
            // The value on the lines below: they go with the key's line.
            let value: Vec<&str> = block.iter().map(|i| text.lines[*i].trim()).collect();
            let value = value.join(" ");
            let last = block.last().map_or(n, |l| *l as u64 + 1);
            if value.chars().count() > super::SHOWN_CHARS {
                return Some((
                    n,
                    "expected a list, found a single value".to_string(),
                    format!("put the value in a list: `{leaf}: [` before it and `]` after it, on one line"),
                ));
            }
            Some((
                n,
                "expected a list, found a single value".to_string(),
                format!(
                    "replace lines {n}–{last} with:\n{head} [{}]",
                    list_items(leaf, &value).join(", ")
                ),
            ))
        }
        Items::Values | Items::Keys(_) => {
            let value = if inline.is_empty() {
                block
                    .first()
                    .map(|i| text.lines[*i].trim())
                    .unwrap_or_default()
            } else {
                inline
            };
            let (message, fix) = if value.chars().count() > super::SHOWN_CHARS {
                (
                    format!(
                        "expected a list, found a single value (`{}`)",
                        super::shorten(value, 40)
                    ),
                    format!("put the value in a list: `{leaf}: [` before it and `]` after it"),
                )
            } else {
                let items = list_items(leaf, value);
                (
                    "expected a list, found a single value".to_string(),
                    format!(
                        "use a list: `{leaf}: [{}]` (one entry per item)",
                        items.join(", ")
                    ),
                )
            };
            Some((n, message, fix))
        }
    }
}

/// A single value as the items of a list: an argv list (`command`) is its words; any other
/// list takes the value as one item.
fn list_items(leaf: &str, value: &str) -> Vec<String> {
    if leaf == "command" && !value.starts_with(['"', '\'']) {
        value.split_whitespace().map(quoted).collect()
    } else if value.is_empty() {
        vec!["\"...\"".to_string()]
    } else {
        vec![quoted(value)]
    }
}

/// "expected a string" where a list or keys were written (`base_branch: [main]`): one value.
pub(super) fn one_value(text: &Text<'_>, schema: &Value, key: &str, at: usize) -> Option<Shaped> {
    let leaf = key.rsplit('.').next()?;
    if leaf.contains('[') {
        return None;
    }
    let example = node(schema, key)
        .and_then(|n| n.get("default"))
        .and_then(Value::as_str)
        .filter(|d| !d.is_empty())
        .map_or_else(|| "\"...\"".to_string(), |d| d.to_string());
    let n = at as u64 + 1;
    let block = text.block(at);
    let last = block.last().map_or(n, |l| *l as u64 + 1);
    let lines = if last > n {
        format!("lines {n}–{last}")
    } else {
        format!("line {n}")
    };
    Some((
        n,
        format!("`{leaf}` takes one value, not a list or keys"),
        format!(
            "replace {lines} with:\n{}{leaf}: {example}",
            " ".repeat(text.indent(at))
        ),
    ))
}

/// "holds keys" at a list item (`verify.when_changed[0]` written `- "*.rs"`): the item as one.
pub(super) fn item_needs_keys(
    text: &Text<'_>,
    schema: &Value,
    key: &str,
    at: usize,
) -> Option<Shaped> {
    let (list, _) = key.rsplit_once('[')?;
    let leaf = list.rsplit('.').next()?;
    let Items::Keys(keys) = items(schema, list)? else {
        return None;
    };
    let line = text.lines.get(at)?;
    let value = line.trim_start().strip_prefix('-')?.trim();
    if value.is_empty() || value.chars().count() > super::SHOWN_CHARS {
        return None;
    }
    let n = at as u64 + 1;
    Some((
        n,
        format!(
            "each item of `{leaf}` holds keys ({}), not one value",
            keys.join(", ")
        ),
        format!(
            "replace line {n} with:\n{}",
            render(text.indent(at), &[item_of(&keys, value)], true)
        ),
    ))
}

/// "expected a string" at a list item written with keys (`- path: /var/cache`): the value.
pub(super) fn item_is_a_value(text: &Text<'_>, key: &str, at: usize) -> Option<Shaped> {
    let (list, _) = key.rsplit_once('[')?;
    let leaf = list.rsplit('.').next()?;
    let line = text.lines.get(at)?;
    let (_, value) = pair(line)?;
    if value.is_empty() || value.chars().count() > super::SHOWN_CHARS {
        return None;
    }
    let n = at as u64 + 1;
    Some((
        n,
        format!("each item of `{leaf}` is one value, not keys"),
        format!(
            "replace line {n} with:\n{}",
            render(text.indent(at), &[vec![plain(value).to_string()]], true)
        ),
    ))
}

#[cfg(test)]
mod tests {
    use crate::config::load_str;

    /// Pastes a fix's lines over the lines it names ("replace line N with:" / "lines N–M"),
    /// or a one-line fix in backticks over the key's line.
    fn pasted(text: &str, line: u64, fix: &str) -> String {
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        if let Some((head, body)) = fix.split_once(" with:\n") {
            let range = head.rsplit(' ').next().unwrap();
            let (from, to) = match range.split_once('–') {
                Some((a, b)) => (a.parse::<usize>().unwrap(), b.parse::<usize>().unwrap()),
                None => (range.parse().unwrap(), range.parse().unwrap()),
            };
            lines.splice(from - 1..to, body.lines().map(str::to_string));
        } else {
            let shown = fix.split('`').nth(1).expect("a fix in backticks");
            let at = usize::try_from(line).unwrap() - 1;
            let indent = lines[at].len() - lines[at].trim_start().len();
            lines[at] = format!("{}{shown}", " ".repeat(indent));
        }
        lines.join("\n") + "\n"
    }

    /// Each wrong shape → its line and a fix that, pasted as written, loads.
    #[test]
    fn a_fix_for_a_wrong_shape_can_be_pasted_as_written() {
        #[rustfmt::skip]
        let cases: &[(&str, u64, &str)] = &[
            ("verify:\n  when_changed: \"*.rs\"\n", 2, "a list of items with keys (commands, paths)"),
            ("verify:\n  when_changed:\n    paths: [\"*.rs\"]\n    commands: [\"cargo test\"]\n", 2, "written without `- `"),
            ("verify:\n  when_changed:\n    - \"*.rs\"\n", 3, "each item of `when_changed` holds keys"),
            ("sandbox:\n  writable:\n    cache: /var/cache\n    tmp: /var/tmp\n", 2, "a list of values, and here it holds keys (`cache: /var/cache`, `tmp: /var/tmp`)"),
            ("sandbox:\n  writable:\n    - path: /var/cache\n", 3, "each item of `writable` is one value, not keys"),
            ("agents:\n  worker:\n    fallbacks: codex\n", 3, "a list of items with keys"),
            ("agents:\n  worker:\n    fallbacks:\n      - codex\n", 4, "each item of `fallbacks` holds keys"),
            ("agents:\n  worker:\n    executor: command\n    command: ./a.sh --fast\n", 4, "expected a list"),
            ("backlog:\n  labels: opentiger\n", 2, "expected a list"),
            ("verify:\n  commands:\n    cargo test\n", 2, "expected a list"),
            ("base_branch: [main, dev]\n", 1, "takes one value, not a list or keys"),
            ("base_branch:\n  name: main\n", 1, "takes one value, not a list or keys"),
        ];
        for (text, line, message) in cases {
            let err = load_str(text, ".opentiger.yml").unwrap_err();
            assert_eq!(err.line, Some(*line), "line for {text:?}: {err}");
            assert!(err.message.contains(message), "message for {text:?}: {err}");
            let fixed = pasted(text, *line, &err.fix);
            if let Err(e) = load_str(&fixed, ".opentiger.yml") {
                panic!("{text:?}: the fix\n{err}\npasted:\n{fixed}\nis refused: {e}");
            }
        }
        let fixed = pasted(
            "agents:\n  worker:\n    executor: command\n    command: ./a.sh --fast\n",
            4,
            &load_str(
                "agents:\n  worker:\n    executor: command\n    command: ./a.sh --fast\n",
                "x",
            )
            .unwrap_err()
            .fix,
        );
        let config = load_str(&fixed, "x").unwrap();
        let worker = config
            .agents
            .effective(crate::config::AgentRole::Task(crate::model::Role::Worker));
        assert_eq!(
            worker.command,
            Some(vec!["./a.sh".to_string(), "--fast".to_string()])
        );
    }

    /// A long value is shortened wherever a message or a fix shows it.
    #[test]
    fn long_values_are_shortened() {
        let long = "y".repeat(5000);
        for text in [
            format!("mode: {long}\n"),
            format!("limits:\n  max_runs_per_tick: {long}\n"),
            format!("verify:\n  commands: {long}\n"),
            format!("merge:\n  required_checks: {long}\n"),
            format!("{long}: 3\n"),
            format!("agents:\n  judge:\n    model: \"{long}\n"),
            format!("agents:\n  judge:\n    model: {long}: x\n"),
        ] {
            let err = load_str(&text, ".opentiger.yml").unwrap_err().to_string();
            assert!(err.len() < 600, "{} characters: {}", err.len(), &err[..300]);
            assert!(!err.contains(&"y".repeat(81)), "{err}");
        }
    }
}

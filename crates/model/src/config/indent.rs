//! Indentation mistakes behind a parse error, said as what they are (issue 40). YAML reads a
//! mis-indented line as something else, and the parser then blames a value or a key that is
//! not the mistake:
//!
//! - a key indented under a key that has a value (`store: file` then `    path: x`) joins that
//!   value (`file path: x`), which is then "not an accepted value";
//! - a key left out of its block (`verify:` then `commands:` at the same indent) is read as a
//!   key of the block around it — an unknown key, or another key of the same name (the
//!   top-level `commands:` of the comment commands);
//! - a key with no value on its line (`timeout_minutes: >` and no indented text below) is
//!   reported at the next key's line, with the next key's words as its value.
//!
//! Which keys belong to which block comes from the JSON Schema of the configuration, so what
//! this says is what the loader accepts. Not for: any other syntax or type error (`words.rs`).

use serde_json::Value;

/// A parse error's mistake said plainly: `(line, key as the user meant it, message, fix)`.
pub(in crate::config) type Said = (u64, String, String, String);

/// A parse error as the loader has it: `key` dotted (for an unknown key, the path ending in
/// it), the `line` the parser reported, the line its key was found at by indentation, and
/// whether the key is unknown where it is.
pub(in crate::config) struct Reported<'a> {
    pub key: &'a str,
    pub line: Option<u64>,
    pub key_line: Option<u64>,
    pub unknown: bool,
}

/// The indentation mistake behind a parse error in `text`, when there is one; `schema` is the
/// configuration's JSON Schema, which says what each block holds.
pub(in crate::config) fn mistake(text: &str, error: &Reported<'_>, schema: &str) -> Option<Said> {
    let lines = Lines::of(text);
    let key = error.key;
    let leaf = key.rsplit('.').next().filter(|l| !l.is_empty())?;
    let at =
        key_line(&lines, leaf, error.line).or_else(|| key_line(&lines, leaf, error.key_line))?;
    under_a_value(&lines, at)
        .or_else(|| out_of_its_block(&lines, at, leaf, key, error.unknown, schema))
        .or_else(|| empty_value(&lines, at, leaf, key))
}

/// `key: value` followed by a more indented `name:` line: that line joined the value.
fn under_a_value(lines: &Lines<'_>, at: usize) -> Option<Said> {
    let value = lines.value(at)?;
    if value.is_empty() || value.starts_with(['|', '>', '[', '{', '&', '*', '#']) {
        return None;
    }
    let next = lines.next_content(at)?;
    let name = lines.key(next)?;
    if lines.indent(next) <= lines.indent(at) {
        return None;
    }
    let key = lines.key(at)?;
    let path = lines.path(at)?;
    let meant = path[..path.len() - 1]
        .iter()
        .map(String::as_str)
        .chain([name])
        .collect::<Vec<_>>()
        .join(".");
    Some((
        next as u64 + 1,
        meant,
        format!(
            "`{name}:` is indented under `{key}: {value}` (line {}), so YAML reads it as part of that value: an indentation mistake",
            at + 1
        ),
        format!(
            "indent `{name}:` like `{key}:` ({} spaces), or further under a key that holds keys",
            lines.indent(at)
        ),
    ))
}

/// A key at the same indent as the block before it, which holds it: it was meant inside.
fn out_of_its_block(
    lines: &Lines<'_>,
    at: usize,
    leaf: &str,
    key: &str,
    unknown: bool,
    schema: &str,
) -> Option<Said> {
    let indent = lines.indent(at);
    let block = (0..at)
        .rev()
        .filter(|i| lines.is_content(*i))
        .take_while(|i| lines.indent(*i) >= indent)
        .find(|i| lines.indent(*i) == indent)?;
    let name = lines.key(block)?;
    let value = lines.value(block)?;
    if !value.is_empty() {
        return None;
    }
    // An unknown key may go in a block that holds keys already; a known one only in a block
    // left empty (else it is where it belongs, and the error is another).
    let empty = lines
        .next_content(block)
        .is_none_or(|n| lines.indent(n) <= indent);
    if !(unknown || empty) {
        return None;
    }
    let block_path = lines.path(block)?;
    let schema: Value = serde_json::from_str(schema).ok()?;
    if !keys_of(&schema, &block_path)?.iter().any(|k| k == leaf) {
        return None;
    }
    let meant = format!("{}.{leaf}", block_path.join("."));
    let read_as = if unknown {
        "so it is read as a key it is not".to_string()
    } else {
        format!("so it is read as `{key}`, another key, and `{name}` is left empty")
    };
    Some((
        at as u64 + 1,
        meant,
        format!(
            "`{leaf}:` is not indented under `{name}:` (line {}), {read_as}: an indentation mistake",
            block + 1
        ),
        format!(
            "indent `{leaf}:` (and the lines that go with it) under `{name}:`, e.g. {} spaces",
            indent + 2
        ),
    ))
}

/// `key:` or `key: >` with nothing indented under it: the parser reports the next line.
fn empty_value(lines: &Lines<'_>, at: usize, leaf: &str, key: &str) -> Option<Said> {
    let value = lines.value(at)?;
    let header = value.starts_with(['|', '>'])
        && value[1..]
            .trim_start_matches(['-', '+'])
            .trim_start_matches(|c: char| c.is_ascii_digit())
            .trim_start_matches(['-', '+'])
            .trim()
            .is_empty();
    if !(value.is_empty() || header) {
        return None;
    }
    if lines
        .next_content(at)
        .is_some_and(|n| lines.indent(n) > lines.indent(at))
    {
        return None;
    }
    let (message, fix) = if header {
        (
            format!("`{leaf}: {value}` is empty: a block of text goes on the lines below it, indented more than `{leaf}:`, and there are none"),
            format!("write the value on the same line, e.g. `{leaf}: ...`, or indent its text under it"),
        )
    } else {
        (
            format!("`{leaf}:` has no value"),
            format!("write its value after `{leaf}:`, or remove the line to use the default"),
        )
    };
    Some((at as u64 + 1, key.to_string(), message, fix))
}

/// The line of `leaf`'s key: `line` (1-based) when it holds it, else none found here.
fn key_line(lines: &Lines<'_>, leaf: &str, line: Option<u64>) -> Option<usize> {
    let i = usize::try_from(line?).ok()?.checked_sub(1)?;
    (lines.key(i) == Some(leaf)).then_some(i)
}

/// The keys a block at `path` may hold, from the schema: its properties (through `$ref`,
/// `anyOf` and maps); a segment `name[n]` is an item of the list `name`.
pub(in crate::config) fn keys_of(schema: &Value, path: &[String]) -> Option<Vec<String>> {
    let node = node_at(schema, path)?;
    let props = node.get("properties")?.as_object()?;
    Some(props.keys().cloned().collect())
}

/// The schema of the key at `path` (segments as [`keys_of`] takes them), resolved.
pub(in crate::config) fn node_at<'s>(schema: &'s Value, path: &[String]) -> Option<&'s Value> {
    let mut node = resolve(schema, schema);
    for segment in path {
        let (name, item) = match segment.split_once('[') {
            Some((name, _)) => (name, true),
            None => (segment.as_str(), false),
        };
        node = match node.get("properties").and_then(|p| p.get(name)) {
            Some(next) => resolve(schema, next),
            None => resolve(schema, node.get("additionalProperties")?),
        };
        if item {
            node = resolve(schema, node.get("items")?);
        }
    }
    Some(node)
}

/// `node` with `$ref` followed and the object variant of an `anyOf`/`oneOf` taken.
pub(in crate::config) fn resolve<'a>(root: &'a Value, node: &'a Value) -> &'a Value {
    let mut node = node;
    for _ in 0..8 {
        if let Some(name) = node
            .get("$ref")
            .and_then(Value::as_str)
            .and_then(|r| r.strip_prefix("#/$defs/"))
        {
            match root.get("$defs").and_then(|d| d.get(name)) {
                Some(def) => node = def,
                None => return node,
            }
            continue;
        }
        let variants = node.get("anyOf").or_else(|| node.get("oneOf"));
        match variants.and_then(Value::as_array).and_then(|v| {
            v.iter()
                .find(|v| v.get("$ref").is_some() || v.get("properties").is_some())
        }) {
            Some(v) => node = v,
            None => return node,
        }
    }
    node
}

/// The file's lines, as the checks read them.
struct Lines<'a>(Vec<&'a str>);

impl<'a> Lines<'a> {
    fn of(text: &'a str) -> Lines<'a> {
        Lines(text.lines().collect())
    }

    fn is_content(&self, i: usize) -> bool {
        self.0
            .get(i)
            .is_some_and(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
    }

    fn indent(&self, i: usize) -> usize {
        let l = self.0[i];
        l.len() - l.trim_start_matches(' ').len()
    }

    /// The key of a `key: ...` line (not a list item).
    fn key(&self, i: usize) -> Option<&'a str> {
        let text = self.0.get(i)?.trim_start();
        let (key, rest) = text.split_once(':')?;
        let simple = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        (simple && (rest.is_empty() || rest.starts_with([' ', '\t']))).then_some(key)
    }

    /// What follows `key:` on its line, without a comment.
    fn value(&self, i: usize) -> Option<&'a str> {
        self.key(i)?;
        let (_, rest) = self.0[i].split_once(':')?;
        let rest = rest.split_once(" #").map_or(rest, |(v, _)| v);
        Some(rest.trim())
    }

    fn next_content(&self, i: usize) -> Option<usize> {
        (i + 1..self.0.len()).find(|j| self.is_content(*j))
    }

    /// The keys from the top down to line `i`'s, by indentation; `None` inside a list.
    fn path(&self, i: usize) -> Option<Vec<String>> {
        let mut path = vec![self.key(i)?.to_string()];
        let mut indent = self.indent(i);
        for j in (0..i).rev() {
            if indent == 0 {
                break;
            }
            if !self.is_content(j) || self.indent(j) >= indent {
                continue;
            }
            if self.0[j].trim_start().starts_with('-') {
                return None;
            }
            path.push(self.key(j)?.to_string());
            indent = self.indent(j);
        }
        path.reverse();
        Some(path)
    }
}

#[cfg(test)]
mod tests {
    use crate::config::load_str;

    /// Each mistake as written → line, key, message and fix (substrings).
    #[test]
    fn indentation_mistakes_are_said_as_such() {
        #[rustfmt::skip]
        let cases: &[(&str, u64, &str, &str, &str)] = &[
            // A key indented under a scalar: not "`file path` is not an accepted value".
            ("mode: local-git\nstate:\n  store: file\n    path: x.sqlite\n", 4, "state.path",
                "`path:` is indented under `store: file` (line 3), so YAML reads it as part of that value: an indentation mistake",
                "indent `path:` like `store:` (2 spaces)"),
            ("limits:\n  max_runs_per_tick: 2\n    lease_minutes: 30\n", 3, "limits.lease_minutes",
                "`lease_minutes:` is indented under `max_runs_per_tick: 2` (line 2)", "like `max_runs_per_tick:`"),
            // A key out of its empty block: not blamed on the top-level `commands`.
            ("mode: local-git\nverify:\ncommands: [\"cargo test\"]\n", 3, "verify.commands",
                "`commands:` is not indented under `verify:` (line 2), so it is read as `commands`, another key, and `verify` is left empty",
                "indent `commands:` (and the lines that go with it) under `verify:`, e.g. 2 spaces"),
            // An unknown key that belongs to the block before it.
            ("agents:\n  default:\n    executor: command\n  command: [\"./a.sh\"]\n", 4, "agents.default.command",
                "`command:` is not indented under `default:` (line 2), so it is read as a key it is not",
                "under `default:`, e.g. 4 spaces"),
            ("limits:\nmax_runs_per_tick: 2\n", 2, "limits.max_runs_per_tick",
                "`max_runs_per_tick:` is not indented under `limits:` (line 1)", "e.g. 2 spaces"),
            // An empty block scalar: at its own line, not the next key's.
            ("limits:\n  max_runs_per_tick: >\nmode: local-git\n", 2, "limits.max_runs_per_tick",
                "`max_runs_per_tick: >` is empty: a block of text goes on the lines below it",
                "write the value on the same line"),
            ("agents:\n  default:\n    timeout_minutes: >-\n    executor: command\n", 3, "agents.default.timeout_minutes",
                "`timeout_minutes: >-` is empty", "or indent its text under it"),
        ];
        for (text, line, key, message, fix) in cases {
            let err = load_str(text, ".opentiger.yml").unwrap_err();
            assert_eq!(err.line, Some(*line), "line for {text:?}: {err}");
            assert_eq!(err.key, *key, "key for {text:?}: {err}");
            assert!(err.message.contains(message), "message for {text:?}: {err}");
            assert!(err.fix.contains(fix), "fix for {text:?}: {err}");
        }
    }

    /// What is not an indentation mistake is left to the other messages.
    #[test]
    fn other_mistakes_are_not_called_indentation() {
        for text in [
            "limits:\n  max_runs_per_tick: two\n",
            "merge:\n  method: squish\n",
            "limits:\n  max_runs_per_tick: 2\nverify:\n  commands: [\"x\"]\n  timeout_seconds: soon\n",
            "agents:\n  default:\n    executor: command\n    comand: [\"./a.sh\"]\n",
        ] {
            let err = load_str(text, ".opentiger.yml").unwrap_err();
            assert!(!err.message.contains("indentation"), "{text:?}: {err}");
        }
    }
}

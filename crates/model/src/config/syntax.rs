//! YAML syntax errors said as what they are (issue 49). Where the parser gives up is rarely the
//! mistake, and the key path it had reached then is not one the user wrote (`agents.judge.?`):
//! the line is found in the text (an unclosed `[`, `{` or quote opened above it, else the line
//! the parser stopped at), the key is the one written there, by indentation, and the fix is a
//! syntax fix, written with the user's own text so it can be pasted over that line — never a
//! type fix.
//!
//! Not for: type errors and keys the parser read as something else (`words.rs`, `indent.rs`).

/// A syntax error said plainly: `(line, key written there, message, fix)`.
pub(in crate::config) type Said = (u64, String, String, String);

/// The syntax mistake behind the parser's `message` at `line` of `text`; `schema` (the
/// configuration's JSON Schema) says which block a key belongs in.
pub(in crate::config) fn said(message: &str, text: &str, line: Option<u64>, schema: &str) -> Said {
    let lines: Vec<&str> = text.lines().collect();
    let schema: serde_json::Value = serde_json::from_str(schema).unwrap_or_default();
    let last = lines.len().max(1);
    let at = line
        .and_then(|l| usize::try_from(l).ok())
        .map_or(last, |l| l.clamp(1, last))
        - 1;
    if let Some(tab) = super::tab_indented_line(text, line, message) {
        let i = usize::try_from(tab).unwrap_or(1).saturating_sub(1);
        // The key as meant: the tabs stand for the indentation of the line above.
        let width = (0..i).rev().find(|j| is_content(lines[*j])).map_or(0, |j| {
            indent_of(lines[j]) + if ends_block(lines[j]) { 2 } else { 0 }
        });
        let spaced = format!("{}{}", " ".repeat(width), lines[i].trim_start());
        let mut meant = lines.clone();
        meant[i] = &spaced;
        return (
            tab,
            key_path(&meant, i),
            "a tab is not allowed for indentation".to_string(),
            format!("indent line {tab} with spaces; YAML does not allow tabs there"),
        );
    }
    if let Some(open) = unclosed(&lines, at) {
        return never_closed(&lines, &open);
    }
    let shown = lines.get(at).copied().unwrap_or_default();
    let key = key_path(&lines, at);
    let n = at as u64 + 1;
    let said = |message: String, fix: String| (n, key.clone(), message, fix);
    let entry = Entry::of(shown);
    if message.contains("trailing content after") {
        if let Some(e) = &entry {
            let inside: String = e
                .value
                .chars()
                .filter(|c| *c != '"' && *c != '\'')
                .collect();
            let fix = if inside.chars().count() > super::SHOWN_CHARS {
                "put the whole value inside the quotes".to_string()
            } else {
                format!(
                    "put the whole value inside the quotes: `{}`",
                    e.with_value(&quote(&inside))
                )
            };
            return said("the value goes on after its closing quote".to_string(), fix);
        }
    }
    if message.contains("unexpected character") || message.contains("not find expected node") {
        if let Some(e) = entry.as_ref().filter(|e| e.value.starts_with(RESERVED)) {
            return said(
                format!(
                    "`{}` cannot start a plain value in YAML",
                    e.value.chars().next().unwrap_or('@')
                ),
                quote_fix(e),
            );
        }
    }
    if message.contains("mapping values are not allowed")
        || message.contains("placement of ':'")
        || message.contains("mapping keys are not allowed")
    {
        if let Some(e) = entry
            .as_ref()
            .filter(|e| e.value.contains(": ") || e.value.ends_with(':'))
        {
            return said(
                "the value holds `: `, which YAML reads as the start of another key".to_string(),
                quote_fix(e),
            );
        }
    }
    if message.contains("unknown anchor") || message.contains("alias") {
        return said(
            "an alias (`*name`) refers to an anchor (`&name`) not defined above it".to_string(),
            "write the value itself instead of the alias".to_string(),
        );
    }
    if let Some((n, key, message, fix)) = missing_colon(&lines, at, &schema) {
        return (n, key, message, fix);
    }
    if let Some((n, key, message, fix)) = misplaced(&lines, at, &schema) {
        return (n, key, message, fix);
    }
    said(
        format!(
            "this line is not valid YAML ({})",
            super::shorten(message, 80)
        ),
        format!(
            "check line {n}'s indentation against the lines above, and quote a value that holds \
             `: ` or ` #` or starts with one of {}",
            RESERVED
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(" ")
        ),
    )
}

/// A `[`, `{` or quote left open at or above `line` of `text`: whatever the parser said then
/// (a type error, when what it read so far is the wrong kind), that is the mistake.
pub(in crate::config) fn never_closed_at(text: &str, line: Option<u64>) -> Option<Said> {
    let lines: Vec<&str> = text.lines().collect();
    let at = usize::try_from(line?).ok()?.checked_sub(1)?;
    let open = unclosed(&lines, at.min(lines.len().checked_sub(1)?))?;
    Some(never_closed(&lines, &open))
}

/// Characters a plain YAML value cannot start with.
const RESERVED: &[char] = &['@', '`', '*', '&', '!', '%', '|', '>', '[', '{', '"', '\''];

/// `key: value` on a line (a list item's too), with the text before the key kept.
struct Entry<'a> {
    before: &'a str,
    key: &'a str,
    value: String,
}

impl<'a> Entry<'a> {
    fn of(line: &'a str) -> Option<Entry<'a>> {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        let (dash, rest) = match trimmed.strip_prefix("- ") {
            Some(rest) => (2 + rest.len() - rest.trim_start().len(), rest.trim_start()),
            None => (0, trimmed),
        };
        let (key, value) = rest.split_once(':')?;
        let simple = !key.is_empty()
            && key
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
        if !simple || !(value.is_empty() || value.starts_with(' ')) {
            return None;
        }
        let value = value.split_once(" #").map_or(value, |(v, _)| v).trim();
        Some(Entry {
            before: &line[..indent + dash],
            key,
            value: value.to_string(),
        })
    }

    /// The line with another value, as it would be pasted over the old one.
    fn with_value(&self, value: &str) -> String {
        format!("{}{}: {value}", self.before.trim_start(), self.key)
    }
}

/// Quote the value of `e`: the line as it would be pasted, or (a long value) how.
fn quote_fix(e: &Entry<'_>) -> String {
    if e.value.chars().count() > super::SHOWN_CHARS {
        return format!("put the value of `{}:` in double quotes", e.key);
    }
    format!("quote the value: `{}`", e.with_value(&quote(&e.value)))
}

/// `text` in double quotes, YAML-escaped.
fn quote(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// What is left open at the end of line `at`: the opener's line and what closes it, in order.
struct Open {
    line: usize,
    closers: Vec<char>,
    quote: Option<char>,
}

/// A `[`, `{` or `"` opened on a line at or above `at` and not closed by the end of it.
fn unclosed(lines: &[&str], at: usize) -> Option<Open> {
    let mut stack: Vec<(char, usize)> = Vec::new();
    let mut quote: Option<(char, usize)> = None;
    for (i, line) in lines.iter().enumerate().take(at + 1) {
        let mut prev = ' ';
        let mut chars = line.chars().peekable();
        while let Some(c) = chars.next() {
            match (quote, c) {
                (Some(('"', _)), '\\') => {
                    chars.next();
                }
                (Some((q, _)), c) if c == q => quote = None,
                (Some(_), _) => {}
                (None, '#') if prev == ' ' || prev == '\t' => break,
                (None, '"') => quote = Some(('"', i)),
                // A single quote opens a value only where a value starts.
                (None, '\'') if matches!(prev, ' ' | '[' | '{' | ',' | ':') => {
                    quote = Some(('\'', i))
                }
                (None, '[') => stack.push((']', i)),
                (None, '{') => stack.push(('}', i)),
                (None, ']' | '}') => {
                    stack.pop();
                }
                (None, _) => {}
            }
            prev = c;
        }
        // A plain multi-line quoted value is legal YAML; the parser's error says it was not.
    }
    if let Some((q, line)) = quote {
        return Some(Open {
            line,
            closers: stack.iter().rev().map(|(c, _)| *c).collect(),
            quote: Some(q),
        });
    }
    let line = stack.first().map(|(_, l)| *l)?;
    Some(Open {
        line,
        closers: stack.iter().rev().map(|(c, _)| *c).collect(),
        quote: None,
    })
}

fn never_closed(lines: &[&str], open: &Open) -> Said {
    let text = lines[open.line];
    let code = text.split_once(" #").map_or(text, |(v, _)| v).trim_end();
    let what = match (open.quote, open.closers.last()) {
        (Some(q), _) => format!("a `{q}` quote is never closed"),
        (None, Some('}')) => "a `{` is never closed with `}`".to_string(),
        (None, _) => "a `[` list is never closed with `]`".to_string(),
    };
    let mut closed = code.trim_start().trim_end_matches(',').to_string();
    if let Some(q) = open.quote {
        closed.push(q);
    }
    closed.extend(open.closers.iter());
    let empty = open.quote.is_none() && code.trim_end().ends_with(['[', '{']);
    let fix = match Entry::of(text) {
        Some(e) if empty => format!(
            "close it on the same line, with its items inside: `{}`",
            e.with_value(&format!(
                "{}{}",
                e.value,
                open.closers.iter().collect::<String>()
            ))
        ),
        _ if closed.chars().count() > 2 * super::SHOWN_CHARS => format!(
            "close it at the end of line {}: add `{}`",
            open.line + 1,
            open.quote
                .into_iter()
                .chain(open.closers.iter().copied())
                .collect::<String>()
        ),
        _ => format!("close it on line {}: `{closed}`", open.line + 1),
    };
    (open.line as u64 + 1, key_path(lines, open.line), what, fix)
}

/// A line of a bare word (`per_day_usd 50`, `merge`): the `:` after its key is missing.
pub(in crate::config) fn missing_colon(
    lines: &[&str],
    at: usize,
    schema: &serde_json::Value,
) -> Option<Said> {
    let line = lines.get(at)?;
    let trimmed = line.trim();
    if trimmed.contains(':') || trimmed.starts_with(['-', '#', '[', '{', '"', '\'']) {
        return None;
    }
    let (word, rest) = trimmed.split_once(' ').unwrap_or((trimmed, ""));
    if !word
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    {
        return None;
    }
    let block = block_at(lines, at, indent_of(line));
    let known = super::indent::keys_of(schema, &block).unwrap_or_default();
    let name = if known.iter().any(|k| k == word) {
        word.to_string()
    } else {
        crate::config::keys::did_you_mean(word, &known).unwrap_or_else(|| word.to_string())
    };
    let fixed = if rest.trim().is_empty() {
        format!("{name}:")
    } else {
        format!("{name}: {}", rest.trim())
    };
    let key = block
        .iter()
        .cloned()
        .chain([name])
        .collect::<Vec<_>>()
        .join(".");
    Some((
        at as u64 + 1,
        key,
        format!(
            "`{}` is not a `key: value` line: the `:` after the key is missing",
            super::shorten(trimmed, 60)
        ),
        format!("write `{}`", super::shorten(&fixed, 120)),
    ))
}

/// The path of the block a line indented `indent` at `at` falls in, by the lines above it.
fn block_at(lines: &[&str], at: usize, indent: usize) -> Vec<String> {
    let parent = (0..at)
        .rev()
        .filter(|i| is_content(lines[*i]))
        .find(|i| indent_of(lines[*i]) < indent);
    match parent {
        Some(p) => key_path(lines, p)
            .split('.')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        None => Vec::new(),
    }
}

/// A key line ending its line with `:` alone (a block follows).
fn ends_block(line: &str) -> bool {
    Entry::of(line).is_some_and(|e| e.value.is_empty())
}

/// A line at an indentation that fits no block above it, or a list item among keys (then with
/// the block's key: the item is no key of its own). A key goes where the schema has it: of the
/// indentations open above the line, the one whose block holds that key.
fn misplaced(lines: &[&str], at: usize, schema: &serde_json::Value) -> Option<Said> {
    let line = lines.get(at)?;
    let n = at as u64 + 1;
    let indent = indent_of(line);
    let above = (0..at).rev().find(|i| is_content(lines[*i]))?;
    let prev = lines[above];
    let item = line.trim_start().starts_with("- ") || line.trim() == "-";
    let prev_item = prev.trim_start().starts_with('-');
    if item && !prev_item && Entry::of(prev).is_some_and(|e| !e.value.is_empty()) {
        let parent = key_path(lines, above);
        let parent = parent.rsplit_once('.').map_or("", |(p, _)| p).to_string();
        let under = if parent.is_empty() {
            "at the top level".to_string()
        } else {
            format!("among the keys of `{parent}`")
        };
        return Some((
            n,
            parent,
            format!(
                "a list item (`{}`) {under}, where a key is expected",
                super::shorten(line.trim(), 60)
            ),
            "put it under the key whose list it belongs to (a line `name:` with the items \
             indented below it), or remove the `- `"
                .to_string(),
        ));
    }
    if item {
        return None;
    }
    let entry = Entry::of(line)?;
    // Where a key may stand: under the line above when it opens a block, or beside any line
    // of the chain of blocks above it.
    let mut places: Vec<usize> = Vec::new();
    if ends_block(prev) {
        places.push(indent_of(prev) + 2);
    }
    let mut limit = usize::MAX;
    for i in (0..at).rev().filter(|i| is_content(lines[*i])) {
        let own = indent_of(lines[i]);
        if own < limit {
            places.push(own);
            limit = own;
        }
    }
    if places.contains(&indent) {
        return None;
    }
    let fits = |place: usize| {
        let block = block_at(lines, at, place);
        super::indent::keys_of(schema, &block)
            .is_some_and(|keys| keys.iter().any(|k| k == entry.key))
            .then_some(block)
    };
    let mut by_distance = places.clone();
    by_distance.sort_by_key(|p| p.abs_diff(indent));
    let (place, block) = by_distance
        .iter()
        .find_map(|p| fits(*p).map(|b| (*p, b)))
        .or_else(|| by_distance.first().map(|p| (*p, block_at(lines, at, *p))))?;
    let like = (at.saturating_sub(40)..at)
        .rev()
        .filter(|i| is_content(lines[*i]) && indent_of(lines[*i]) == place)
        .find_map(|i| Entry::of(lines[i]).map(|e| format!(", like `{}:` on line {}", e.key, i + 1)))
        .unwrap_or_default();
    let key = block
        .iter()
        .map(String::as_str)
        .chain([entry.key])
        .collect::<Vec<_>>()
        .join(".");
    Some((
        n,
        key,
        format!(
            "`{}:` is indented {indent} spaces, which lines up with no block above it",
            entry.key
        ),
        format!("indent it {place} spaces{like}"),
    ))
}

fn indent_of(line: &str) -> usize {
    line.len() - line.trim_start_matches(' ').len()
}

fn is_content(line: &str) -> bool {
    let t = line.trim();
    !t.is_empty() && !t.starts_with('#')
}

/// The dotted key the user wrote at line `at` (0-based) or, when it holds no key, of the block
/// it is in, by indentation; list items as `name[n]`. Empty at the top of the file.
pub(in crate::config) fn key_path(lines: &[&str], at: usize) -> String {
    let mut segments: Vec<String> = Vec::new();
    let mut limit = usize::MAX;
    let mut item: Option<usize> = None;
    for i in (0..=at.min(lines.len().saturating_sub(1))).rev() {
        let line = lines[i];
        if !is_content(line) {
            continue;
        }
        let indent = indent_of(line);
        let trimmed = line.trim_start();
        let dash = trimmed.starts_with("- ") || trimmed == "-";
        if dash && indent < limit {
            // The item holding the path: its index among the items of its list.
            let mut n = 0;
            for j in (0..i).rev().filter(|j| is_content(lines[*j])) {
                let other = indent_of(lines[j]);
                if other < indent {
                    break;
                }
                if other == indent && lines[j].trim_start().starts_with('-') {
                    n += 1;
                }
            }
            let entry = Entry::of(line);
            if let Some(e) = entry.filter(|_| i == at) {
                segments.push(e.key.to_string());
            }
            item = Some(n);
            limit = indent;
            continue;
        }
        if dash || indent >= limit && i != at {
            continue;
        }
        let Some(e) = Entry::of(line) else {
            continue;
        };
        let mut segment = e.key.to_string();
        if let Some(n) = item.take() {
            segment.push_str(&format!("[{n}]"));
        }
        segments.push(segment);
        limit = indent;
        if indent == 0 {
            break;
        }
    }
    segments.reverse();
    segments.join(".")
}

#[cfg(test)]
mod tests {
    use super::key_path;
    use crate::config::load_str;

    #[test]
    fn the_key_of_a_line_is_the_one_written_there() {
        let text = "agents:\n  judge:\n    timeout_minutes: 3\n   review: true\n  worker:\n    fallbacks:\n      - executor: codex\n        model: m\n      - executor: aider\n# note\n";
        let lines: Vec<&str> = text.lines().collect();
        #[rustfmt::skip]
        let cases = [
            (0, "agents"), (2, "agents.judge.timeout_minutes"), (3, "agents.judge.review"),
            (6, "agents.worker.fallbacks[0].executor"), (7, "agents.worker.fallbacks[0].model"),
            (8, "agents.worker.fallbacks[1].executor"), (9, "agents.worker.fallbacks[1]"),
        ];
        for (at, key) in cases {
            assert_eq!(key_path(&lines, at), key, "line {}", at + 1);
        }
    }

    /// Each syntax mistake → its line, the key written there, and a syntax fix (never a type
    /// fix, never a made-up key) that, pasted over the line, loads.
    #[test]
    fn syntax_errors_name_the_line_and_key_written_and_a_syntax_fix() {
        #[rustfmt::skip]
        let cases: &[(&str, u64, &str, &str, &str)] = &[
            ("agents:\n  judge:\n    command: [\"a\", \"b\"\n    timeout_minutes: 3\n", 3, "agents.judge.command",
                "never closed", "close it on line 3: `command: [\"a\", \"b\"]`"),
            ("agents:\n  judge:\n    command: {a: b\n", 3, "agents.judge.command",
                "`{` is never closed", "`command: {a: b}`"),
            ("agents:\n  judge:\n    model: \"abc\n    timeout_minutes: 3\n", 3, "agents.judge.model",
                "quote is never closed", "`model: \"abc\"`"),
            ("agents:\n  judge:\n    timeout_minutes: 3\n   review: true\n", 4, "agents.judge.review",
                "`review:` is indented 3 spaces", "indent it 4 spaces, like `timeout_minutes:` on line 3"),
            ("agents:\n  judge:\n    timeout_minutes: 3\n    - a\n", 4, "agents.judge",
                "a list item (`- a`) among the keys of `agents.judge`", "or remove the `- `"),
            ("agents:\n  judge:\n    model: @x\n", 3, "agents.judge.model",
                "`@` cannot start a plain value", "quote the value: `model: \"@x\"`"),
            ("agents:\n  judge:\n    model: o4: mini\n", 3, "agents.judge.model",
                "holds `: `", "quote the value: `model: \"o4: mini\"`"),
            ("agents:\n  judge:\n    model: \"o4\" mini\n", 3, "agents.judge.model",
                "after its closing quote", "`model: \"o4 mini\"`"),
            ("agents:\n  judge:\n    model: &a x\n  worker:\n    model: *b\n", 5, "agents.worker.model",
                "anchor", "the value itself"),
            ("mode: [\n", 1, "mode", "never closed", "with its items inside: `mode: []`"),
        ];
        for (text, line, key, message, fix) in cases {
            let err = load_str(text, ".opentiger.yml").unwrap_err();
            assert_eq!(err.line, Some(*line), "line for {text:?}: {err}");
            assert_eq!(err.key, *key, "key for {text:?}: {err}");
            assert!(err.message.contains(message), "message for {text:?}: {err}");
            assert!(err.fix.contains(fix), "fix for {text:?}: {err}");
            assert!(
                !err.key.contains('?') && !err.fix.contains("right type"),
                "{text:?}: {err}"
            );
        }
    }
}

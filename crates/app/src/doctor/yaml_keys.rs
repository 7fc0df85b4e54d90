//! Keys given twice in one mapping of a workflow file (issue 51): GitHub rejects such a file
//! ("'token' is already defined"), so the workflow never runs, while a YAML reader that keeps
//! the last value would take it. A scan of the block mappings by indentation, enough for
//! workflow files: comments, quoted keys, list items that open a mapping (`- uses: …`) and block
//! scalars (`run: |`, `if: >-`) are understood; flow mappings (`{a: 1, a: 2}`) are not looked
//! into.
//!
//! Not for: reading what a workflow means (`workflows`, `doctor::workflow`), or linting it
//! (actionlint does).

use std::collections::BTreeMap;

/// A key given twice in one mapping.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Duplicate {
    pub key: String,
    /// 1-based lines of its first and its second appearance.
    pub first: usize,
    pub again: usize,
}

/// One open mapping: the column of its keys and the keys seen so far, with their lines.
struct Mapping {
    column: usize,
    keys: BTreeMap<String, usize>,
}

/// Every key given a second time in its mapping, in the order they appear.
pub fn duplicates(text: &str) -> Vec<Duplicate> {
    let mut open: Vec<Mapping> = Vec::new();
    let mut out = Vec::new();
    // A block scalar's lines: everything indented deeper than the key that opened it.
    let mut scalar_above: Option<usize> = None;
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let content = raw.trim_start_matches(' ');
        let indent = raw.len() - content.len();
        if content.is_empty() || content.starts_with('#') {
            continue;
        }
        if let Some(column) = scalar_above {
            if indent > column {
                continue;
            }
            scalar_above = None;
        }
        // `- key: value` opens a mapping at the key's column; a bare `- item` opens none.
        let (column, rest, item) = match content
            .strip_prefix("- ")
            .or(content.strip_prefix('-').filter(|r| r.is_empty()))
        {
            Some(rest) => {
                let inner = rest.trim_start_matches(' ');
                (indent + 1 + (rest.len() - inner.len()) + 1, inner, true)
            }
            None => (indent, content, false),
        };
        let Some((key, value)) = key_of(rest) else {
            continue;
        };
        // Mappings deeper than this key are closed; so is the one at its column when a list
        // item starts a new mapping there.
        open.retain(|m| m.column < column || (m.column == column && !item));
        match open.last_mut().filter(|m| m.column == column) {
            Some(mapping) => match mapping.keys.get(&key) {
                Some(first) => out.push(Duplicate {
                    key,
                    first: *first,
                    again: line,
                }),
                None => {
                    mapping.keys.insert(key, line);
                }
            },
            None => open.push(Mapping {
                column,
                keys: BTreeMap::from([(key, line)]),
            }),
        }
        if opens_block_scalar(value) {
            scalar_above = Some(column);
        }
    }
    out
}

/// `key: value` or `key:` at the start of `text` (a plain or quoted key), and its value.
fn key_of(text: &str) -> Option<(String, &str)> {
    let (key, after) = match text.chars().next()? {
        quote @ ('"' | '\'') => {
            let end = text[1..].find(quote)? + 1;
            (text[1..end].to_string(), &text[end + 1..])
        }
        '{' | '[' | '&' | '*' | '!' | '|' | '>' | '%' | '@' | '`' => return None,
        _ => {
            let end = colon(text)?;
            (text[..end].trim_end().to_string(), &text[end..])
        }
    };
    let value = after.strip_prefix(':')?;
    if !(value.is_empty() || value.starts_with(' ') || value.starts_with('\t')) {
        return None;
    }
    Some((key, value.trim()))
}

/// Where a plain key ends: the first `:` followed by a blank or the end of the line.
fn colon(text: &str) -> Option<usize> {
    let bytes = text.as_bytes();
    (0..bytes.len())
        .find(|&i| bytes[i] == b':' && bytes.get(i + 1).is_none_or(|b| *b == b' ' || *b == b'\t'))
}

/// Whether a value opens a block scalar (`|`, `>-`, `|+2`, with a comment after).
fn opens_block_scalar(value: &str) -> bool {
    let value = value.split(" #").next().unwrap_or("").trim();
    value.starts_with('|') || value.starts_with('>')
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A workflow's text and the duplicates found in it: (key, first line, second line).
    type Case<'a> = (&'a str, &'a [(&'a str, usize, usize)]);

    #[test]
    fn keys_given_twice_in_one_mapping_are_found() {
        let cases: &[Case] = &[
            ("a: 1\nb: 2\n", &[]),
            ("a: 1\na: 2\n", &[("a", 1, 2)]),
            // The same key in two list items' mappings, or at two depths, is no duplicate.
            (
                "steps:\n  - uses: x\n    with:\n      token: a\n  - uses: y\n    with:\n      token: b\n",
                &[],
            ),
            // The trap of issue 51: the step's `token:` uncommented next to the one there.
            (
                "steps:\n  - uses: o/o@v0\n    with:\n      token: ${{ secrets.GITHUB_TOKEN }}\n      # c\n      token: ${{ steps.app.outputs.token }}\n",
                &[("token", 4, 6)],
            ),
            // A block scalar's lines are text, not keys.
            (
                "run: |\n  a: 1\n  a: 2\nif: >-\n  x: y\n  x: y\nenv:\n  A: 1\n",
                &[],
            ),
            ("\"on\": 1\non: 2\n", &[("on", 1, 2)]),
            ("a:\n  b: 1\nc:\n  b: 2\n", &[]),
            ("a:\n  b: 1\n  c: x:y\n  b: 2\n", &[("b", 2, 4)]),
            ("- a: 1\n  a: 2\n- a: 3\n", &[("a", 1, 2)]),
            ("url: http://x\nurl: https://y\n", &[("url", 1, 2)]),
        ];
        for (text, expected) in cases {
            let found: Vec<(String, usize, usize)> = duplicates(text)
                .into_iter()
                .map(|d| (d.key, d.first, d.again))
                .collect();
            let expected: Vec<(String, usize, usize)> = expected
                .iter()
                .map(|(k, a, b)| (k.to_string(), *a, *b))
                .collect();
            assert_eq!(found, expected, "{text}");
        }
    }

    #[test]
    fn the_example_workflows_have_no_key_twice() {
        for text in [
            crate::init::WORKFLOW,
            include_str!("../../../../examples/workflows/opentiger-fanout.yml"),
            include_str!("../../../../.github/workflows/ci.yml"),
            include_str!("../../../../.github/workflows/release.yml"),
        ] {
            assert_eq!(duplicates(text), [], "{text}");
        }
    }
}

//! Keys in the configuration's text: the line a dotted key is written on, found by
//! indentation, and the known key closest to a misspelt one. Shared by the loader's messages and
//! the plain-words ones.
//!
//! Not for: parsing (`load.rs`) or saying what is wrong (`words.rs`).

/// The closest candidate within a small edit distance.
pub fn did_you_mean(word: &str, candidates: &[String]) -> Option<String> {
    candidates
        .iter()
        .map(|c| (edit_distance(&word.to_lowercase(), &c.to_lowercase()), c))
        .filter(|(d, c)| *d <= (c.len() / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c.clone())
}

fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The line of a dotted key in block-style YAML, found by indentation (best effort). When the
/// key itself is absent (a required value is missing), the line of its deepest present parent.
/// A segment may pick a list item, as serde names it: `agents.worker.fallbacks[1].command`.
pub fn line_of_key(text: &str, dotted: &str) -> Option<u64> {
    let segments: Vec<(&str, Option<usize>)> = dotted.split('.').map(list_index).collect();
    let mut at = 0;
    let mut min_indent = 0usize;
    let mut parent_line = None;
    let mut list: Option<ListSearch> = None;
    for (i, line) in text.lines().enumerate() {
        let mut trimmed = line.trim_start();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let mut indent = line.len() - trimmed.len();
        if let Some(search) = &mut list {
            let is_item = trimmed == "-" || trimmed.starts_with("- ");
            let dash = *search.dash_indent.get_or_insert(indent);
            if indent < search.key_indent || indent < dash || (indent == dash && !is_item) {
                return parent_line; // the list ended before the item
            }
            if indent > dash || !is_item {
                continue; // inside an earlier item
            }
            if search.skip > 0 {
                search.skip -= 1;
                continue;
            }
            list = None;
            parent_line = Some(i as u64 + 1);
            at += 1;
            if at == segments.len() {
                return parent_line;
            }
            min_indent = indent + 1;
            // The item's first key sits on the dash's line.
            let rest = trimmed[1..].trim_start();
            indent += trimmed.len() - rest.len();
            trimmed = rest;
        } else if indent < min_indent {
            return parent_line;
        }
        let Some((key, _)) = trimmed.split_once(':') else {
            continue;
        };
        let (name, index) = segments[at];
        if key.trim().trim_matches(|c| c == '"' || c == '\'') != name {
            continue;
        }
        parent_line = Some(i as u64 + 1);
        match index {
            Some(skip) => {
                list = Some(ListSearch {
                    skip,
                    key_indent: indent,
                    dash_indent: None,
                })
            }
            None => {
                at += 1;
                if at == segments.len() {
                    return parent_line;
                }
                min_indent = indent + 1;
            }
        }
    }
    parent_line
}

/// Looking for the n-th item of a block list under a key.
struct ListSearch {
    /// Items still to pass.
    skip: usize,
    key_indent: usize,
    /// The indentation of the list's dashes, once the first is seen.
    dash_indent: Option<usize>,
}

/// `fallbacks[1]` → (`fallbacks`, 1).
fn list_index(segment: &str) -> (&str, Option<usize>) {
    segment
        .strip_suffix(']')
        .and_then(|s| s.split_once('['))
        .and_then(|(name, n)| Some((name, Some(n.parse().ok()?))))
        .unwrap_or((segment, None))
}

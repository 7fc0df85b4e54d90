//! File names as data (issue 48): a name is shown with its control characters escaped, and a
//! name a change adds must be one every checkout can hold — no control character (a newline in
//! a name split the import's list of paths in two), no name Windows cannot create (a reserved
//! device name such as `CON` or `aux.c`, a trailing dot or space, one of `<>:"|?*\`), and no
//! two names of the tree that differ only by case (macOS and Windows check out one of them).
//! Pure. Not for: reading the names from git (`runner::content`) or what a violation does
//! (`policy_violation`, decided by the engine).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// Why a name a change adds cannot be checked out everywhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NameProblem {
    /// A newline, carriage return, tab or other control character.
    Control,
    /// A Windows device name (`CON`, `PRN`, `AUX`, `NUL`, `COM1`…, `LPT1`…), with any extension.
    Reserved(String),
    /// A component ending in a dot or a space (Windows drops it).
    TrailingDotOrSpace(String),
    /// A character Windows refuses in a name.
    Character(char),
    /// Another name of the tree differing only by case (one file on macOS and Windows).
    Case { other: String },
}

/// A name a change adds, and why it cannot be checked out everywhere.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NameViolation {
    pub path: String,
    pub problem: NameProblem,
}

impl fmt::Display for NameViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let path = shown(&self.path);
        match &self.problem {
            NameProblem::Control => write!(
                f,
                "the file name {path} holds a control character (shown escaped): names are data, and none may hold one"
            ),
            NameProblem::Reserved(part) => write!(
                f,
                "the file name {path} uses `{}`, a device name Windows reserves: rename it (or allow it with `policy.portable_names: false`)",
                shown(part)
            ),
            NameProblem::TrailingDotOrSpace(part) => write!(
                f,
                "the file name {path} has `{}` ending in a dot or a space, which Windows drops: rename it (or allow it with `policy.portable_names: false`)",
                shown(part)
            ),
            NameProblem::Character(c) => write!(
                f,
                "the file name {path} holds `{}`, which Windows refuses in a name: rename it (or allow it with `policy.portable_names: false`)",
                shown(&c.to_string())
            ),
            NameProblem::Case { other } => write!(
                f,
                "the file name {path} differs from {} only by case: macOS and Windows check out one of them; rename it (or allow it with `policy.portable_names: false`)",
                shown(other)
            ),
        }
    }
}

/// `name` with every character a terminal or a line-based record would act on written as an
/// escape (`\n`, `\r`, `\t`, `\x1b`, `\u{202e}`), and `\` as `\\`: what a name holds, shown.
pub fn shown(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || c == '\u{7f}' => {
                out.push_str(&format!("\\x{:02x}", c as u32))
            }
            c if invisible(c) => out.push_str(&format!("\\u{{{:04x}}}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Raw bytes of a name (not UTF-8 perhaps), shown as [`shown`] does, invalid bytes as `\xff`.
pub fn shown_bytes(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        out.push_str(&shown(chunk.valid()));
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

/// Characters that show nothing or reorder what follows, and the C1 controls.
fn invisible(c: char) -> bool {
    matches!(c,
        '\u{80}'..='\u{9f}' | '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{feff}' | '\u{e0000}'..='\u{e007f}')
}

/// Whether `path` holds a control character (always refused, whatever the settings).
pub fn has_control(path: &str) -> bool {
    path.chars().any(|c| c.is_control())
}

/// What keeps `path` (a name a change adds) from being checked out on Windows or macOS, by its
/// own components; control characters first.
pub fn name_problem(path: &str) -> Option<NameProblem> {
    if has_control(path) {
        return Some(NameProblem::Control);
    }
    for part in path.split('/') {
        if let Some(c) = part
            .chars()
            .find(|c| matches!(c, '<' | '>' | ':' | '"' | '|' | '?' | '*' | '\\'))
        {
            return Some(NameProblem::Character(c));
        }
        if part.ends_with('.') || part.ends_with(' ') {
            return Some(NameProblem::TrailingDotOrSpace(part.to_string()));
        }
        let stem = part.split('.').next().unwrap_or(part).trim_end_matches(' ');
        if reserved(stem) {
            return Some(NameProblem::Reserved(part.to_string()));
        }
    }
    None
}

/// A Windows device name, whatever its case.
fn reserved(stem: &str) -> bool {
    let upper = stem.to_ascii_uppercase();
    if matches!(
        upper.as_str(),
        "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$"
    ) {
        return true;
    }
    let digit = |rest: &str| {
        rest.len() == 1 && rest.as_bytes()[0].is_ascii_digit()
            || matches!(rest, "\u{b9}" | "\u{b2}" | "\u{b3}")
    };
    upper.strip_prefix("COM").is_some_and(digit) || upper.strip_prefix("LPT").is_some_and(digit)
}

/// The names of a tree (`names`: every file and folder path of it) that differ only by case
/// from one another, where one of each pair is among `added` (paths the change adds) or a
/// folder of one: `(added, other)`. Pairs of names that were both there before (`before`
/// says, given the two) are left out.
pub fn case_collisions<'a>(
    names: impl Iterator<Item = &'a str>,
    added: &[&str],
    mut before: impl FnMut(&str, &str) -> bool,
) -> Vec<(String, String)> {
    let mut folded: BTreeMap<String, BTreeSet<&str>> = BTreeMap::new();
    for name in names {
        folded.entry(name.to_lowercase()).or_default().insert(name);
    }
    let mut touched: BTreeSet<&str> = BTreeSet::new();
    for path in added {
        let mut at = *path;
        touched.insert(at);
        while let Some((parent, _)) = at.rsplit_once('/') {
            touched.insert(parent);
            at = parent;
        }
    }
    let mut out = Vec::new();
    let mut seen: BTreeSet<String> = BTreeSet::new();
    for name in &touched {
        let Some(group) = folded.get(&name.to_lowercase()) else {
            continue;
        };
        for other in group.iter().filter(|o| *o != name) {
            let key = name.to_lowercase();
            if seen.contains(&key) || before(name, other) {
                continue;
            }
            seen.insert(key);
            out.push((name.to_string(), other.to_string()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_shown_with_what_they_hide_escaped() {
        assert_eq!(shown("x\n/proc/1/environ"), "x\\n/proc/1/environ");
        assert_eq!(shown("a\rb\tc\u{1b}d"), "a\\rb\\tc\\x1bd");
        assert_eq!(shown("evil\u{202e}txt.exe"), "evil\\u{202e}txt.exe");
        assert_eq!(shown("a\\n"), "a\\\\n");
        assert_eq!(shown("plain/ünïcode.md"), "plain/ünïcode.md");
        assert_eq!(shown_bytes(b"a\xffb\n"), "a\\xffb\\n");
    }

    #[test]
    fn names_that_cannot_be_checked_out_everywhere_are_named() {
        #[rustfmt::skip]
        let cases: Vec<(&str, Option<NameProblem>)> = vec![
            ("src/main.rs", None),
            ("docs/a b.md", None),
            ("x\n/abs/path", Some(NameProblem::Control)),
            ("a\rb", Some(NameProblem::Control)),
            ("con", Some(NameProblem::Reserved("con".into()))),
            ("src/aux.c", Some(NameProblem::Reserved("aux.c".into()))),
            ("LPT9.txt.bak", Some(NameProblem::Reserved("LPT9.txt.bak".into()))),
            ("COM\u{b9}", Some(NameProblem::Reserved("COM\u{b9}".into()))),
            ("console.rs", None),
            ("com10", None),
            ("auxiliary/x", None),
            ("name.", Some(NameProblem::TrailingDotOrSpace("name.".into()))),
            ("dir /x", Some(NameProblem::TrailingDotOrSpace("dir ".into()))),
            ("a:b", Some(NameProblem::Character(':'))),
            ("what?.md", Some(NameProblem::Character('?'))),
            ("back\\slash", Some(NameProblem::Character('\\'))),
            (".github/CODEOWNERS", None),
        ];
        for (path, want) in cases {
            assert_eq!(name_problem(path), want, "{path:?}");
        }
    }

    /// Issue 48: README.md, readme.md and Readme.MD in one tree; a new folder differing from
    /// one of the tree by case; a collision both names of which were there before is not the
    /// change's.
    #[test]
    fn names_differing_only_by_case_are_found_against_the_whole_tree() {
        let tree = [
            "README.md",
            "readme.md",
            "docs",
            "docs/a.md",
            "Docs",
            "Docs/b.md",
            "Old",
            "old",
            "old/x",
            "src",
            "src/lib.rs",
        ];
        let added = ["readme.md", "Docs/b.md", "old/x", "src/lib.rs"];
        let before = |a: &str, b: &str| [a, b].iter().all(|n| ["Old", "old"].contains(n));
        let found = case_collisions(tree.into_iter(), &added, before);
        assert_eq!(
            found,
            [
                ("Docs".to_string(), "docs".to_string()),
                ("readme.md".to_string(), "README.md".to_string()),
            ]
        );
    }
}

//! What a change holds, beyond its paths: a symbolic link must stay inside the worktree and the
//! allowed paths and neither be nor point to a denied one, and no added line of the diff may hold
//! a secret. Pure.
//! Not for: reading the links and the diff from git (`runner::content`), what a secret looks like
//! (`redact::Redactor::secret_in`), or secrets written encoded and the threat scan (`scan`).

use std::fmt;

/// One line a change adds, with its place in the new file (1-based).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AddedLine {
    pub path: String,
    pub line: u32,
    pub text: String,
}

/// A problem with what a change holds. Never carries a secret's value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ContentViolation {
    /// A symbolic link whose target leaves the worktree (absolute, or too many `..`).
    LinkOutsideWorktree { path: String },
    /// A symbolic link into the worktree, but to a path the task may not touch.
    LinkOutsideAllowed { path: String, target: String },
    /// A symbolic link whose own path is, or stands for a folder of, a denied path.
    LinkDenied { path: String, pattern: String },
    /// A symbolic link to a denied path (or into a `.git`).
    LinkToDenied {
        path: String,
        target: String,
        pattern: String,
    },
    /// An added line holding a secret of this kind.
    Secret {
        path: String,
        line: u32,
        kind: &'static str,
    },
}

impl fmt::Display for ContentViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ContentViolation::LinkOutsideWorktree { path } => {
                write!(f, "symbolic link {path} points outside the worktree")
            }
            ContentViolation::LinkOutsideAllowed { path, target } => write!(
                f,
                "symbolic link {path} points to {target}, outside the allowed paths"
            ),
            ContentViolation::LinkDenied { path, pattern } => write!(
                f,
                "symbolic link {path} stands where a denied path is ({pattern}); links may not take a denied folder's name"
            ),
            ContentViolation::LinkToDenied {
                path,
                target,
                pattern,
            } => write!(
                f,
                "symbolic link {path} points to {target}, a denied path ({pattern})"
            ),
            ContentViolation::Secret { path, line, kind } => write!(
                f,
                "{path}:{line} holds {kind}; secrets never go into a change"
            ),
        }
    }
}

/// Where a link at `link` (repository-relative) with target `target` points, repository-
/// relative, resolved by its text alone; `None` when it leaves the repository.
pub fn resolve_link(link: &str, target: &str) -> Option<String> {
    if target.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = link.split('/').collect();
    parts.pop(); // the link's own name
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            other => parts.push(other),
        }
    }
    Some(parts.join("/"))
}

/// Where a link at `link` with target `target` leads in a tree, component by component as a
/// file system resolves it: `is_link(path)` gives the target of a link of the tree at a
/// repository-relative path. `None` when the way leaves the tree (an absolute target, `..`
/// above the top) or passes more than 40 links (a loop).
pub fn resolve_in_tree(
    link: &str,
    target: &str,
    mut is_link: impl FnMut(&str) -> Option<String>,
) -> Option<String> {
    let mut resolved: Vec<String> = link.split('/').map(str::to_string).collect();
    resolved.pop(); // the link's own name
    let mut todo: std::collections::VecDeque<String> = std::collections::VecDeque::new();
    let mut hops = 0;
    push_front(&mut todo, target)?;
    while let Some(part) = todo.pop_front() {
        match part.as_str() {
            "" | "." => {}
            ".." => {
                resolved.pop()?;
            }
            name => {
                let mut candidate = resolved.clone();
                candidate.push(name.to_string());
                let joined = candidate.join("/");
                match is_link(&joined) {
                    Some(next) => {
                        hops += 1;
                        if hops > 40 {
                            return None;
                        }
                        push_front(&mut todo, &next)?;
                    }
                    None => resolved = candidate,
                }
            }
        }
    }
    Some(resolved.join("/"))
}

/// Puts a relative target's components before what is left to resolve.
fn push_front(todo: &mut std::collections::VecDeque<String>, target: &str) -> Option<()> {
    if target.starts_with('/') {
        return None;
    }
    for part in target.split('/').rev() {
        todo.push_front(part.to_string());
    }
    Some(())
}

/// The lines a unified diff (`git diff -U0`) adds, per file, with their line numbers in the new
/// file. Deleted files add no lines; binary files add lines only when diffed with `--text`.
pub fn added_lines(diff: &str) -> Vec<AddedLine> {
    let mut walker = DiffWalker::default();
    diff.lines()
        .filter_map(|line| {
            walker
                .feed(line.as_bytes())
                .map(|(path, line, text)| AddedLine {
                    path: path.to_string(),
                    line,
                    text: String::from_utf8_lossy(text).into_owned(),
                })
        })
        .collect()
}

/// Reads a unified diff line by line (bytes: a binary file diffed with `--text` is not UTF-8)
/// and says which lines are added where, keeping nothing but the current file and line.
#[derive(Debug, Default)]
pub struct DiffWalker {
    path: Option<String>,
    in_hunk: bool,
    next_line: u32,
}

impl DiffWalker {
    /// One line of the diff (without its newline): `Some((file, line, text))` when it adds one.
    pub fn feed<'a>(&mut self, line: &'a [u8]) -> Option<(&str, u32, &'a [u8])> {
        if line.starts_with(b"diff --git ") {
            (self.path, self.in_hunk) = (None, false);
        } else if let Some(rest) = line.strip_prefix(b"@@ ") {
            // @@ -a,b +c,d @@
            self.in_hunk = true;
            self.next_line = String::from_utf8_lossy(rest)
                .split_whitespace()
                .find_map(|w| w.strip_prefix('+').map(str::to_string))
                .and_then(|w| w.split(',').next().and_then(|n| n.parse().ok()))
                .unwrap_or(0);
        } else if !self.in_hunk {
            if let Some(rest) = line.strip_prefix(b"+++ ") {
                // Issue 48: git quotes a name holding `"`, `\` or a control character; its
                // lines are scanned like any other's.
                let rest = unquote(rest);
                self.path = rest
                    .strip_prefix(b"b/")
                    .map(|p| String::from_utf8_lossy(p).into_owned());
            }
        } else if let (Some(text), Some(path)) = (line.strip_prefix(b"+"), &self.path) {
            let at = self.next_line;
            self.next_line = self.next_line.saturating_add(1);
            return Some((path.as_str(), at, text));
        } else if line.starts_with(b" ") {
            self.next_line = self.next_line.saturating_add(1);
        }
        None
    }
}

/// A path as git writes it in a diff's header: C-quoted (`"b/a\tb"`, octal escapes for bytes)
/// when it holds what a line cannot, else as it is.
pub fn unquote(text: &[u8]) -> std::borrow::Cow<'_, [u8]> {
    let Some(inner) = text.strip_prefix(b"\"").and_then(|t| t.strip_suffix(b"\"")) else {
        return std::borrow::Cow::Borrowed(text);
    };
    let mut out = Vec::with_capacity(inner.len());
    let mut i = 0;
    while i < inner.len() {
        if inner[i] != b'\\' || i + 1 == inner.len() {
            out.push(inner[i]);
            i += 1;
            continue;
        }
        let next = inner[i + 1];
        let octal = inner
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        if let Some(digits) = octal {
            let value = digits.iter().fold(0u32, |n, d| n * 8 + u32::from(d - b'0'));
            out.push(u8::try_from(value).unwrap_or(b'?'));
            i += 4;
            continue;
        }
        out.push(match next {
            b'n' => b'\n',
            b't' => b'\t',
            b'r' => b'\r',
            b'a' => 7,
            b'b' => 8,
            b'f' => 12,
            b'v' => 11,
            other => other,
        });
        i += 2;
    }
    std::borrow::Cow::Owned(out)
}

/// The secrets among `lines`, one per file and line, as `secret_in` names them.
pub fn secrets(
    lines: &[AddedLine],
    secret_in: impl Fn(&str) -> Option<&'static str>,
) -> Vec<ContentViolation> {
    lines
        .iter()
        .filter_map(|l| {
            secret_in(&l.text).map(|kind| ContentViolation::Secret {
                path: l.path.clone(),
                line: l.line,
                kind,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_resolve_by_their_text() {
        let cases = [
            ("out/link", "x.txt", Some("out/x.txt")),
            ("out/link", "../src/a.rs", Some("src/a.rs")),
            ("out/link", "./../../outside", None),
            ("out/link", "../../..", None),
            ("out/link", "/etc/passwd", None),
            ("link", "..", None),
            ("a/b/link", "../../c", Some("c")),
            ("link", "dir/", Some("dir")),
        ];
        for (link, target, want) in cases {
            assert_eq!(
                resolve_link(link, target).as_deref(),
                want,
                "{link} -> {target}"
            );
        }
    }

    /// Issue 35: links are followed through the tree's own links, as the file system would.
    #[test]
    fn links_resolve_through_the_tree_s_own_links() {
        let tree_links = |p: &str| -> Option<String> {
            match p {
                "up" => Some("../..".into()),
                "docs" => Some("real/docs".into()),
                "loop" => Some("loop".into()),
                "abs" => Some("/etc".into()),
                _ => None,
            }
        };
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("a/b", "c", Some("a/c")),
            ("a/b", "../c", Some("c")),
            ("x", "up/etc/passwd", None),
            ("x", "docs/readme", Some("real/docs/readme")),
            ("x", "loop/y", None),
            ("x", "abs/y", None),
            ("x", "/etc/passwd", None),
            ("a/x", "../../y", None),
            ("x", "./docs/../z", Some("real/z")),
        ];
        for (link, target, want) in cases {
            assert_eq!(
                resolve_in_tree(link, target, tree_links).as_deref(),
                *want,
                "{link} -> {target}"
            );
        }
    }

    #[test]
    fn added_lines_carry_their_new_line_numbers() {
        let diff = "diff --git a/a.txt b/a.txt\nindex 1..2 100644\n--- a/a.txt\n+++ b/a.txt\n@@ -1,0 +2,2 @@\n+two\n+three\n@@ -9 +11 @@\n-old\n+eleven\ndiff --git a/gone.txt b/gone.txt\ndeleted file mode 100644\n--- a/gone.txt\n+++ /dev/null\n@@ -1 +0,0 @@\n-bye\ndiff --git a/n.txt b/n.txt\nnew file mode 100644\n--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1,2 @@\n++plus\n+++ b/x\n";
        let got: Vec<(String, u32, String)> = added_lines(diff)
            .into_iter()
            .map(|l| (l.path, l.line, l.text))
            .collect();
        let want = [
            ("a.txt", 2, "two"),
            ("a.txt", 3, "three"),
            ("a.txt", 11, "eleven"),
            ("n.txt", 1, "+plus"),
            ("n.txt", 2, "++ b/x"),
        ]
        .map(|(p, n, t)| (p.to_string(), n, t.to_string()));
        assert_eq!(got, want);
    }

    /// Issue 48: a file whose name git quotes in the diff's header is scanned like any other.
    #[test]
    fn added_lines_of_quoted_names_are_read() {
        let diff = "diff --git \"a/x\\ny\" \"b/x\\ny\"\n--- /dev/null\n+++ \"b/x\\ny\\\"q\\303\\251\"\n@@ -0,0 +1 @@\n+hidden\n";
        let got = added_lines(diff);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(got[0].path, "x\ny\"qé");
        assert_eq!(got[0].text, "hidden");
    }

    #[test]
    fn secrets_are_named_by_file_line_and_kind() {
        let lines = added_lines("+++ b/k.toml\n@@ -0,0 +1,2 @@\n+a = 1\n+key = SECRET\n");
        let found = secrets(&lines, |t| t.contains("SECRET").then_some("a test secret"));
        assert_eq!(found.len(), 1);
        let text = found[0].to_string();
        assert_eq!(
            text,
            "k.toml:2 holds a test secret; secrets never go into a change"
        );
    }
}

//! Path globs anchored at the repository root: the one matcher behind `allowed_paths`,
//! `denied_paths` and `verify.when_changed` (DESIGN §7; spec §8 item 14 found three matchers that
//! disagreed, this is the only one).
//!
//! Semantics (gitignore-like, like minimatch with `dot: true`, but always anchored at the root):
//!
//! - A pattern is a `/`-separated list of segments matched against the path's segments, from the
//!   repository root. `*.pem` matches `a.pem` only; write `**/*.pem` for any depth. `.env*` matches
//!   `.env` and `.env.local`, not `a/.env`.
//! - `**` as a whole segment matches any number of segments, including none (`**/*.pem` matches
//!   `a.pem` and `x/y/a.pem`), except at the end of a pattern, where it matches one or more:
//!   `src/**` matches `src/a` and `src/a/b` but not `src` itself (paths are files, and `src` is a
//!   directory). `**` alone matches every path.
//! - `*` matches any run of characters within one segment, `?` one character, `[abc]`, `[a-z]`
//!   and `[!a]` (or `[^a]`) one character of a class; none of them ever matches `/`. Dotfiles get
//!   no special treatment. `**` inside a longer segment (`a**b`) is a plain `*`.
//! - A trailing `/` means "everything under": `build/` is `build/**`. A leading `./` is ignored
//!   on patterns and paths alike; `\` escapes the next character. Matching is case-sensitive.
//!
//! Rejected, so that a typo never silently matches nothing (or everything): empty patterns,
//! absolute patterns, `..` and `.` segments, empty segments (`a//b`), unbalanced `[`, reversed
//! ranges, a trailing `\`, `!` negation and `{a,b}` alternatives (neither is supported).
//!
//! Not for: deciding what a match means (see [`super::PathPolicy`]), nor listing files. Matching is
//! iterative with one backtrack point per level, so its cost is bounded by pattern length times
//! path length; no pattern can make it exponential.

use std::fmt;

/// A compiled path pattern. See the module documentation for the semantics.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Glob {
    pattern: String,
    segments: Vec<Segment>,
}

/// Why a pattern was rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("invalid path pattern `{pattern}`: {problem}")]
pub struct GlobError {
    pub pattern: String,
    pub problem: GlobProblem,
}

/// What is wrong with a pattern; the text says how to fix it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GlobProblem {
    Empty,
    Absolute,
    ParentSegment,
    DotSegment,
    EmptySegment,
    UnbalancedBracket,
    ReversedRange { from: char, to: char },
    TrailingBackslash,
    Negation,
    BraceAlternatives,
}

impl fmt::Display for GlobProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GlobProblem::Empty => f.write_str("the pattern is empty; use `**` for every path"),
            GlobProblem::Absolute => {
                f.write_str("patterns are relative to the repository root; drop the leading `/`")
            }
            GlobProblem::ParentSegment => f.write_str(
                "`..` would leave the repository; patterns are relative to the repository root",
            ),
            GlobProblem::DotSegment => {
                f.write_str("a `.` segment is only allowed at the start (`./src/**`); remove it")
            }
            GlobProblem::EmptySegment => {
                f.write_str("it has an empty segment (`//`); use a single `/`")
            }
            GlobProblem::UnbalancedBracket => f.write_str(
                "a `[` opens a character class that is never closed with `]` within the segment; \
                 close it, or escape a literal bracket as `\\[`",
            ),
            GlobProblem::ReversedRange { from, to } => write!(
                f,
                "the character range `{from}-{to}` is reversed; write `{to}-{from}`"
            ),
            GlobProblem::TrailingBackslash => {
                f.write_str("it ends with a `\\` that escapes nothing; remove it or write `\\\\`")
            }
            GlobProblem::Negation => f.write_str(
                "`!` negation is not supported; list the path in `denied_paths` instead, \
                 or escape a literal `!` as `\\!`",
            ),
            GlobProblem::BraceAlternatives => f.write_str(
                "`{a,b}` alternatives are not supported; write one pattern per alternative, \
                 or escape a literal brace as `\\{`",
            ),
        }
    }
}

/// One level of the pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    /// `**`: any number of whole path segments, including none.
    AnyDepth,
    /// Exactly one path segment matching these pieces.
    One(Vec<Piece>),
}

/// One element of a segment pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Piece {
    Literal(char),
    /// `?`
    AnyChar,
    /// `*`
    AnyRun,
    /// `[...]`
    Class {
        negated: bool,
        items: Vec<ClassItem>,
    },
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum ClassItem {
    Char(char),
    Range(char, char),
}

impl Glob {
    /// Compiles `pattern`, or says what is wrong with it.
    pub fn new(pattern: &str) -> Result<Glob, GlobError> {
        let fail = |problem| GlobError {
            pattern: pattern.to_string(),
            problem,
        };
        if pattern.trim().is_empty() {
            return Err(fail(GlobProblem::Empty));
        }
        if pattern.starts_with('/') {
            return Err(fail(GlobProblem::Absolute));
        }
        if pattern.starts_with('!') {
            return Err(fail(GlobProblem::Negation));
        }
        if has_brace_alternatives(pattern) {
            return Err(fail(GlobProblem::BraceAlternatives));
        }
        let mut rest = pattern;
        while let Some(stripped) = rest.strip_prefix("./") {
            rest = stripped;
        }
        // A trailing `/` means "everything under": `build/` is `build/**`.
        let (rest, directory) = match rest.strip_suffix('/') {
            Some(stripped) => (stripped, true),
            None => (rest, false),
        };
        if rest.is_empty() {
            return Err(fail(GlobProblem::Empty));
        }
        let mut segments = Vec::new();
        for raw in rest.split('/') {
            let segment = match raw {
                "" => return Err(fail(GlobProblem::EmptySegment)),
                ".." => return Err(fail(GlobProblem::ParentSegment)),
                "." => return Err(fail(GlobProblem::DotSegment)),
                "**" => Segment::AnyDepth,
                _ => Segment::One(parse_segment(raw).map_err(fail)?),
            };
            // `**/**` is `**`; collapsing keeps matching linear in the pattern.
            if !(segment == Segment::AnyDepth && segments.last() == Some(&Segment::AnyDepth)) {
                segments.push(segment);
            }
        }
        if directory && segments.last() != Some(&Segment::AnyDepth) {
            segments.push(Segment::AnyDepth);
        }
        // A trailing `**` matches one or more segments: `src/**` is not `src` itself.
        if segments.last() == Some(&Segment::AnyDepth) {
            segments.insert(segments.len() - 1, Segment::One(vec![Piece::AnyRun]));
        }
        Ok(Glob {
            pattern: pattern.to_string(),
            segments,
        })
    }

    /// The pattern as written.
    pub fn as_str(&self) -> &str {
        &self.pattern
    }

    /// Whether the repository-relative `path` (with `/` separators) matches. A leading `./`, empty
    /// segments and `.` segments are ignored; an absolute path or one with a `..` segment is not
    /// inside the repository and matches nothing, nor does an empty path.
    pub fn matches(&self, path: &str) -> bool {
        if path.starts_with('/') {
            return false;
        }
        let parts: Vec<&str> = path
            .split('/')
            .filter(|part| !part.is_empty() && *part != ".")
            .collect();
        if parts.is_empty() || parts.contains(&"..") {
            return false;
        }
        match_segments(&self.segments, &parts)
    }
}

impl fmt::Display for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.pattern)
    }
}

/// An unescaped `{` followed later by `,` and then `}`: minimatch alternatives, which would
/// otherwise silently match only a literal brace.
fn has_brace_alternatives(pattern: &str) -> bool {
    let mut chars = pattern.chars();
    let mut open = false;
    let mut comma = false;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                chars.next();
            }
            '{' => open = true,
            ',' if open => comma = true,
            '}' if open && comma => return true,
            '}' => (open, comma) = (false, false),
            _ => {}
        }
    }
    false
}

fn parse_segment(raw: &str) -> Result<Vec<Piece>, GlobProblem> {
    let chars: Vec<char> = raw.chars().collect();
    let mut pieces = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                let escaped = chars.get(i + 1).ok_or(GlobProblem::TrailingBackslash)?;
                pieces.push(Piece::Literal(*escaped));
                i += 2;
            }
            '*' => {
                if pieces.last() != Some(&Piece::AnyRun) {
                    pieces.push(Piece::AnyRun);
                }
                i += 1;
            }
            '?' => {
                pieces.push(Piece::AnyChar);
                i += 1;
            }
            '[' => {
                let (class, next) = parse_class(&chars, i + 1)?;
                pieces.push(class);
                i = next;
            }
            c => {
                pieces.push(Piece::Literal(c));
                i += 1;
            }
        }
    }
    Ok(pieces)
}

/// Parses a class whose `[` is just before `start`; returns it and the index after its `]`.
/// A `]` right after `[` or `[!` is a member, as in gitignore.
fn parse_class(chars: &[char], start: usize) -> Result<(Piece, usize), GlobProblem> {
    let mut i = start;
    let negated = matches!(chars.get(i), Some('!' | '^'));
    if negated {
        i += 1;
    }
    let first = i;
    let mut items = Vec::new();
    loop {
        let c = match chars.get(i) {
            None => return Err(GlobProblem::UnbalancedBracket),
            Some(']') if i > first => return Ok((Piece::Class { negated, items }, i + 1)),
            Some('\\') => {
                i += 1;
                *chars.get(i).ok_or(GlobProblem::UnbalancedBracket)?
            }
            Some(c) => *c,
        };
        i += 1;
        let is_range = chars.get(i) == Some(&'-') && !matches!(chars.get(i + 1), None | Some(']'));
        if !is_range {
            items.push(ClassItem::Char(c));
            continue;
        }
        let to = match chars.get(i + 1) {
            Some('\\') => {
                i += 1;
                *chars.get(i + 1).ok_or(GlobProblem::UnbalancedBracket)?
            }
            Some(to) => *to,
            None => return Err(GlobProblem::UnbalancedBracket),
        };
        if to < c {
            return Err(GlobProblem::ReversedRange { from: c, to });
        }
        items.push(ClassItem::Range(c, to));
        i += 2;
    }
}

/// Matches path segments against pattern segments. `AnyDepth` plays the role of `*` in the classic
/// wildcard algorithm and every `One` consumes exactly one segment, so backtracking to the last
/// `AnyDepth` only is complete, and the work is at most pattern length × path length.
fn match_segments(pattern: &[Segment], path: &[&str]) -> bool {
    let (mut p, mut s) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while s < path.len() {
        match pattern.get(p) {
            Some(Segment::AnyDepth) => {
                backtrack = Some((p + 1, s));
                p += 1;
                continue;
            }
            Some(Segment::One(pieces)) if match_pieces(pieces, path[s]) => {
                p += 1;
                s += 1;
                continue;
            }
            Some(Segment::One(_)) | None => {}
        }
        match backtrack {
            Some((after_star, from)) => {
                // Let the `**` swallow one more segment and retry what follows it.
                backtrack = Some((after_star, from + 1));
                p = after_star;
                s = from + 1;
            }
            None => return false,
        }
    }
    pattern[p..]
        .iter()
        .all(|segment| *segment == Segment::AnyDepth)
}

/// The same algorithm within one segment, over characters: `AnyRun` is the star.
fn match_pieces(pieces: &[Piece], segment: &str) -> bool {
    let text: Vec<char> = segment.chars().collect();
    let (mut p, mut t) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while t < text.len() {
        match pieces.get(p) {
            Some(Piece::AnyRun) => {
                backtrack = Some((p + 1, t));
                p += 1;
                continue;
            }
            Some(piece @ (Piece::Literal(_) | Piece::AnyChar | Piece::Class { .. }))
                if piece_matches(piece, text[t]) =>
            {
                p += 1;
                t += 1;
                continue;
            }
            Some(Piece::Literal(_) | Piece::AnyChar | Piece::Class { .. }) | None => {}
        }
        match backtrack {
            Some((after_star, from)) => {
                backtrack = Some((after_star, from + 1));
                p = after_star;
                t = from + 1;
            }
            None => return false,
        }
    }
    pieces[p..].iter().all(|piece| *piece == Piece::AnyRun)
}

fn piece_matches(piece: &Piece, c: char) -> bool {
    match piece {
        Piece::Literal(l) => *l == c,
        Piece::AnyChar | Piece::AnyRun => true,
        Piece::Class { negated, items } => {
            let member = items.iter().any(|item| match item {
                ClassItem::Char(m) => *m == c,
                ClassItem::Range(from, to) => (*from..=*to).contains(&c),
            });
            member != *negated
        }
    }
}

//! The requirement document, read the way the planner reads it (spec §2.1 step 1).
//!
//! A requirement is markdown with well-known headings, matched case-insensitively and with or
//! without a trailing colon: `Goal`, `Background`, `Constraints`, `Acceptance Criteria`, `Scope`
//! (with `In Scope` / `Out of Scope` subsections), `Allowed Paths`, `Risk Assessment` and `Notes`.
//! A section runs from its heading to the next heading of the same or a higher level (an H2 ends
//! at the next H2 or H1), so subsections belong to it. Headings inside fenced code blocks are text.
//! Setext headings (underlined with `===`) are not recognised.
//!
//! Every document parses: missing sections fall back to defaults (spec §2.1 step 1), so a goal, at
//! least one acceptance criterion and at least one allowed path always exist.
//!
//! Not for: reading the file, asking an agent to complete a sparse requirement (spec §2.1 step 2),
//! or deciding what to plan. Pure: no I/O.

use std::ops::Range;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::model::Risk;

/// spec §2.1 step 1: the goal when the document has no line of text at all.
const DEFAULT_GOAL: &str = "Deliver the requirement described in this document.";

/// A parsed requirement document.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Requirement {
    pub goal: String,
    pub background: String,
    pub constraints: Vec<String>,
    pub acceptance_criteria: Vec<String>,
    pub in_scope: Vec<String>,
    pub out_of_scope: Vec<String>,
    /// Path patterns the work may touch; `["**"]` when the document names none.
    pub allowed_paths: Vec<String>,
    pub risks: Vec<RiskRow>,
    pub notes: String,
}

/// One row of the `Risk Assessment` table.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RiskRow {
    pub risk: String,
    pub level: Risk,
    pub mitigation: String,
}

impl Requirement {
    /// The highest level in the risk table, `low` when the table is missing or empty.
    pub fn max_risk(&self) -> Risk {
        self.risks
            .iter()
            .map(|row| row.level)
            .max()
            .unwrap_or(Risk::Low)
    }
}

/// The SHA-256 (hex) of the document with line endings normalised to `\n`, so a checkout with
/// CRLF line endings does not look like a new requirement.
pub fn content_hash(markdown: &str) -> String {
    let normalized = markdown.replace("\r\n", "\n").replace('\r', "\n");
    Sha256::digest(normalized.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Parses a requirement document; never fails (spec §2.1 step 1, with its fallbacks).
pub fn parse_requirement(markdown: &str) -> Requirement {
    let doc = Doc::new(markdown);
    let all = 0..doc.lines.len();

    let goal = doc
        .section(all.clone(), "goal")
        .map(|body| doc.text(body))
        .filter(|text| !text.is_empty())
        .or_else(|| doc.first_text_line(all.clone()))
        .unwrap_or_else(|| DEFAULT_GOAL.to_string());

    let acceptance_criteria = match doc.section(all.clone(), "acceptance criteria") {
        Some(body) => {
            let items = doc.list_items(body.clone());
            if items.is_empty() {
                doc.first_text_line(body).into_iter().collect()
            } else {
                items
            }
        }
        None => Vec::new(),
    };
    let acceptance_criteria = if acceptance_criteria.is_empty() {
        vec![format!(
            "Deliver a verifiable first increment toward: {goal}"
        )]
    } else {
        acceptance_criteria
    };

    // `In Scope` belongs under `Scope`; a document that puts it at the top level still counts.
    let scope = doc.section(all.clone(), "scope").unwrap_or(all.clone());
    let subsection = |name: &str| {
        doc.section(scope.clone(), name)
            .or_else(|| doc.section(all.clone(), name))
            .map(|body| doc.list_items(body))
            .unwrap_or_default()
    };
    let in_scope = subsection("in scope");
    let out_of_scope = subsection("out of scope");

    let allowed_paths = doc
        .section(all.clone(), "allowed paths")
        .map(|body| doc.paths(body))
        .filter(|paths| !paths.is_empty())
        .unwrap_or_else(|| vec!["**".to_string()]);

    let text_of = |name: &str| {
        doc.section(all.clone(), name)
            .map(|body| doc.text(body))
            .unwrap_or_default()
    };
    let list_of = |name: &str| {
        doc.section(all.clone(), name)
            .map(|body| doc.list_items(body))
            .unwrap_or_default()
    };

    Requirement {
        goal,
        background: text_of("background"),
        constraints: list_of("constraints"),
        acceptance_criteria,
        in_scope,
        out_of_scope,
        allowed_paths,
        risks: doc
            .section(all.clone(), "risk assessment")
            .map(|body| doc.risk_rows(body))
            .unwrap_or_default(),
        notes: text_of("notes"),
    }
}

/// One line of the document, with its heading (level and normalised name) if it is one.
struct Line<'a> {
    text: &'a str,
    heading: Option<(usize, String)>,
    /// A fence line or a line inside a fenced code block: never a heading nor a list item.
    code: bool,
}

/// The document as lines.
struct Doc<'a> {
    lines: Vec<Line<'a>>,
}

impl<'a> Doc<'a> {
    fn new(markdown: &'a str) -> Doc<'a> {
        let mut fence: Option<char> = None;
        let lines = markdown
            .split('\n')
            .map(|raw| {
                let text = raw.strip_suffix('\r').unwrap_or(raw);
                let trimmed = text.trim_start();
                let marker = if trimmed.starts_with("```") {
                    Some('`')
                } else if trimmed.starts_with("~~~") {
                    Some('~')
                } else {
                    None
                };
                match (fence, marker) {
                    (None, Some(c)) => {
                        fence = Some(c);
                        Line {
                            text,
                            heading: None,
                            code: true,
                        }
                    }
                    (Some(open), Some(c)) if open == c => {
                        fence = None;
                        Line {
                            text,
                            heading: None,
                            code: true,
                        }
                    }
                    (Some(_), _) => Line {
                        text,
                        heading: None,
                        code: true,
                    },
                    (None, None) => Line {
                        text,
                        heading: heading(text),
                        code: false,
                    },
                }
            })
            .collect();
        Doc { lines }
    }

    /// The body (lines after the heading) of the first section called `name` within `range`.
    fn section(&self, range: Range<usize>, name: &str) -> Option<Range<usize>> {
        let end = range.end;
        let (start, level) = range.clone().find_map(|i| match &self.lines[i].heading {
            Some((level, heading)) if heading == name => Some((i, *level)),
            Some(_) | None => None,
        })?;
        let stop = (start + 1..end)
            .find(|&i| matches!(&self.lines[i].heading, Some((l, _)) if *l <= level))
            .unwrap_or(end);
        Some(start + 1..stop)
    }

    /// The body as text, without leading and trailing blank lines.
    fn text(&self, range: Range<usize>) -> String {
        let lines: Vec<&str> = self.lines[range]
            .iter()
            .map(|l| l.text.trim_end())
            .collect();
        let first = lines.iter().position(|l| !l.trim().is_empty());
        let last = lines.iter().rposition(|l| !l.trim().is_empty());
        match (first, last) {
            (Some(first), Some(last)) => lines[first..=last].join("\n"),
            (Some(_), None) | (None, Some(_)) | (None, None) => String::new(),
        }
    }

    /// The first non-empty line that is neither a heading nor code, trimmed.
    fn first_text_line(&self, range: Range<usize>) -> Option<String> {
        self.lines[range]
            .iter()
            .find(|l| l.heading.is_none() && !l.code && !l.text.trim().is_empty())
            .map(|l| l.text.trim().to_string())
    }

    /// Top-level list items (`-`, `*`, `+`, `1.`, `1)`), checkboxes stripped. An indented line
    /// that is not itself an item continues the item before it (a soft-wrapped item is one
    /// item); nested items are details of their parent and are left out.
    fn list_items(&self, range: Range<usize>) -> Vec<String> {
        let mut items: Vec<String> = Vec::new();
        let mut open = false;
        for line in &self.lines[range] {
            if line.code || line.heading.is_some() || line.text.trim().is_empty() {
                open = false;
                continue;
            }
            let indent = line.text.len() - line.text.trim_start().len();
            match list_item(line.text) {
                Some(item) if indent < 2 => {
                    let item = strip_checkbox(item).trim();
                    open = !item.is_empty();
                    if open {
                        items.push(item.to_string());
                    }
                }
                Some(_) => open = false,
                None if indent > 0 && open => {
                    if let Some(last) = items.last_mut() {
                        last.push(' ');
                        last.push_str(line.text.trim());
                    }
                }
                None => open = false,
            }
        }
        items
    }

    /// `Allowed Paths`: every backticked span, else list items containing `/` or `*`; markdown
    /// escapes (`\*`, `\_`) undone; duplicates dropped.
    fn paths(&self, range: Range<usize>) -> Vec<String> {
        let mut paths: Vec<String> = Vec::new();
        for line in &self.lines[range] {
            if line.code || line.heading.is_some() {
                continue;
            }
            let spans = backticked(line.text);
            let found: Vec<&str> = if !spans.is_empty() {
                spans
            } else {
                list_item(line.text)
                    .and_then(path_token)
                    .into_iter()
                    .collect()
            };
            for path in found {
                let path = path.trim().replace("\\*", "*").replace("\\_", "_");
                if !path.is_empty() && !paths.contains(&path) {
                    paths.push(path);
                }
            }
        }
        paths
    }

    /// Rows `| risk | level | mitigation |` whose level is a known word; the header row, the
    /// separator row and anything else is skipped.
    fn risk_rows(&self, range: Range<usize>) -> Vec<RiskRow> {
        self.lines[range]
            .iter()
            .filter(|l| !l.code && l.text.trim_start().starts_with('|'))
            .filter_map(|l| {
                let cells = table_cells(l.text);
                let level = risk_level(cells.get(1)?)?;
                Some(RiskRow {
                    risk: cells.first()?.to_string(),
                    level,
                    mitigation: cells.get(2).map(|c| c.to_string()).unwrap_or_default(),
                })
            })
            .collect()
    }
}

/// An ATX heading: its level and its name lower-cased, without closing `#`s and trailing `:`.
fn heading(text: &str) -> Option<(usize, String)> {
    let indent = text.len() - text.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = text.trim_start_matches(' ');
    let level = rest.len() - rest.trim_start_matches('#').len();
    if !(1..=6).contains(&level) {
        return None;
    }
    let after = &rest[level..];
    if !(after.is_empty() || after.starts_with(' ') || after.starts_with('\t')) {
        return None;
    }
    let mut name = after.trim();
    // A closing sequence of `#`s (`## Goal ##`) is not part of the name.
    let without_closing = name.trim_end_matches('#');
    if without_closing.is_empty() || without_closing.ends_with([' ', '\t']) {
        name = without_closing.trim_end();
    }
    let name = name.trim_end_matches(':').trim();
    let name = name.split_whitespace().collect::<Vec<_>>().join(" ");
    Some((level, name.to_lowercase()))
}

/// The text of a list item (after `- `, `* `, `+ `, `1. ` or `1) `), or `None`.
fn list_item(text: &str) -> Option<&str> {
    let rest = text.trim_start();
    let after_marker = if let Some(stripped) = rest.strip_prefix(['-', '*', '+']) {
        stripped
    } else {
        let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
        if digits == 0 {
            return None;
        }
        rest[digits..].strip_prefix(['.', ')'])?
    };
    if after_marker.is_empty() {
        return Some("");
    }
    after_marker.strip_prefix([' ', '\t']).map(str::trim_start)
}

/// `[ ] text`, `[x] text` and `[X] text` → `text`.
fn strip_checkbox(item: &str) -> &str {
    ["[ ]", "[x]", "[X]"]
        .into_iter()
        .find_map(|b| item.strip_prefix(b))
        .filter(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
        .unwrap_or(item)
}

/// The contents of every `` `code span` `` in a line.
fn backticked(text: &str) -> Vec<&str> {
    let mut spans = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find('`') {
        let after = &rest[open + 1..];
        let Some(close) = after.find('`') else { break };
        let span = &after[..close];
        if !span.trim().is_empty() {
            spans.push(span);
        }
        rest = &after[close + 1..];
    }
    spans
}

/// The path in a list item: the item itself when it is one word, else its first word that looks
/// like a path (`- src/** (the code)` → `src/**`).
fn path_token(item: &str) -> Option<&str> {
    let looks_like_path = |s: &str| s.contains('/') || s.contains('*');
    if !looks_like_path(item) {
        return None;
    }
    item.split_whitespace().find(|word| looks_like_path(word))
}

/// The trimmed cells of a table row (`| a | b |` → `["a", "b"]`).
fn table_cells(text: &str) -> Vec<&str> {
    let row = text.trim();
    let row = row.strip_prefix('|').unwrap_or(row);
    let row = row.strip_suffix('|').unwrap_or(row);
    row.split('|').map(str::trim).collect()
}

/// `high`/`medium`/`low` in any case, or `高`/`中`/`低`; emphasis around the word is ignored.
fn risk_level(cell: &str) -> Option<Risk> {
    match cell
        .trim_matches(['*', '_', '`', ' '])
        .to_lowercase()
        .as_str()
    {
        "high" | "高" => Some(Risk::High),
        "medium" | "中" => Some(Risk::Medium),
        "low" | "低" => Some(Risk::Low),
        _ => None,
    }
}

#[cfg(test)]
#[path = "requirement_tests.rs"]
mod tests;

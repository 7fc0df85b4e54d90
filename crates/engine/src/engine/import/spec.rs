//! An issue's text as the spec of its task (issue 14): the size cap that keeps the head and the
//! acceptance criteria, the acceptance-criteria checklist, and whether an edit changes the spec.
//!
//! Pure string work. Not for: redaction (the shell redacts before anything here sees the text),
//! fetching, or how the text is shown (the prompt templates fence it as untrusted data).

use crate::config::BacklogConfig;
use crate::model::Issue;
use crate::model::{short_hash, IssueSpec};

/// The most of an issue body kept (bytes): enough for any real spec, small enough to push the
/// state every tick and to fit a prompt.
pub const BODY_CAP: usize = 12_000;
/// The most of an issue title kept (bytes).
pub const TITLE_CAP: usize = 300;
/// Checklist items kept, and the length of each.
const MAX_CRITERIA: usize = 20;
const CRITERION_CAP: usize = 300;

/// `body` cut to at most about `cap` bytes: the head, a visible "cut here" note saying how many
/// bytes were left out, then the acceptance criteria (which the judge checks item by item).
pub fn cap_body(body: &str, cap: usize) -> String {
    if body.len() <= cap {
        return body.to_string();
    }
    let criteria = acceptance_criteria(body);
    let mut tail = String::new();
    if !criteria.is_empty() {
        tail.push_str("## Acceptance criteria\n\n");
        for item in &criteria {
            tail.push_str(&format!("- [ ] {item}\n"));
        }
    }
    // What is left for the head, after the note (at most ~120 bytes) and the criteria.
    let room = cap.saturating_sub(tail.len() + 160).max(cap / 4);
    let mut head = &body[..floor_boundary(body, room)];
    // End the head at a line break when one is near, so no line is cut in half.
    if let Some(nl) = head.rfind('\n').filter(|&nl| nl + 400 >= head.len()) {
        head = &body[..nl];
    }
    // Criteria already inside the head are not repeated.
    if criteria.iter().all(|item| head.contains(item.as_str())) {
        tail.clear();
    }
    let dropped = body.len() - head.len();
    let then = if tail.is_empty() {
        ""
    } else {
        "; the acceptance criteria follow, listed again"
    };
    let mut out = format!(
        "{}\n\n[… cut here: {dropped} bytes of the issue body were left out to fit the \
         prompt{then} …]\n",
        head.trim_end()
    );
    if !tail.is_empty() {
        out.push('\n');
        out.push_str(&tail);
    }
    out
}

/// `title` cut to [`TITLE_CAP`] bytes, on one line.
pub fn cap_title(title: &str) -> String {
    let one_line = title.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.len() <= TITLE_CAP {
        return one_line;
    }
    format!("{}…", &one_line[..floor_boundary(&one_line, TITLE_CAP)])
}

/// The largest char boundary of `s` at or below `at`.
fn floor_boundary(s: &str, at: usize) -> usize {
    let mut at = at.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    at
}

/// The checklist of an issue body: the items of its `Acceptance criteria` section (any heading
/// level, or a line `**Acceptance criteria:**`), else every task-list item (`- [ ] …`) of the
/// body. Lines inside code fences are not items. At most [`MAX_CRITERIA`], each cut short.
pub fn acceptance_criteria(body: &str) -> Vec<String> {
    let lines = outside_fences(body);
    let mut in_section = false;
    let mut section = Vec::new();
    for line in &lines {
        if let Some(title) = heading(line) {
            in_section = is_criteria_title(&title);
            continue;
        }
        if in_section {
            if let Some(item) = list_item(line) {
                section.push(item);
            }
        }
    }
    let items = if section.is_empty() {
        lines.iter().filter_map(|l| task_item(l)).collect()
    } else {
        section
    };
    items
        .into_iter()
        .filter(|i| !i.is_empty())
        .take(MAX_CRITERIA)
        .map(|i| {
            if i.len() <= CRITERION_CAP {
                i
            } else {
                format!("{}…", &i[..floor_boundary(&i, CRITERION_CAP)])
            }
        })
        .collect()
}

/// The lines of `body` outside fenced code blocks (a fence closes with the same character,
/// at least as long).
fn outside_fences(body: &str) -> Vec<&str> {
    let mut open: Option<(char, usize)> = None;
    let mut out = Vec::new();
    for line in body.lines() {
        let t = line.trim_start();
        let fence = ['`', '~'].into_iter().find_map(|c| {
            let n = t.chars().take_while(|&x| x == c).count();
            (n >= 3).then_some((c, n))
        });
        match (open, fence) {
            (None, Some(f)) => open = Some(f),
            (Some((c, n)), Some((fc, fnum))) if c == fc && fnum >= n => open = None,
            (None, None) => out.push(line),
            (Some(_), _) => {}
        }
    }
    out
}

/// The text of a heading line: `## Title`, or a line that is only emphasis (`**Title:**`).
fn heading(line: &str) -> Option<String> {
    let t = line.trim();
    if let Some(rest) = t.strip_prefix('#') {
        let rest = rest.trim_start_matches('#');
        if rest.is_empty() || rest.starts_with(' ') {
            return Some(rest.trim().to_string());
        }
    }
    let bold = t
        .strip_prefix("**")
        .and_then(|r| r.strip_suffix("**"))
        .or_else(|| t.strip_prefix("__").and_then(|r| r.strip_suffix("__")))?;
    Some(bold.to_string())
}

fn is_criteria_title(title: &str) -> bool {
    let words: String = title
        .trim_matches(|c: char| c == ':' || c == '*' || c.is_whitespace())
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    matches!(
        words.as_str(),
        "acceptance criteria" | "acceptance criterion" | "acceptance"
    )
}

/// A list item's text (`- x`, `* x`, `+ x`, `1. x`, `1) x`), without a task-list box.
fn list_item(line: &str) -> Option<String> {
    let t = line.trim_start();
    let rest = if let Some(r) = t.strip_prefix(['-', '*', '+']) {
        r
    } else {
        let digits = t.chars().take_while(char::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        t[digits..].strip_prefix(['.', ')'])?
    };
    if !rest.starts_with(' ') {
        return None;
    }
    let rest = rest.trim_start();
    let rest = ["[ ]", "[x]", "[X]"]
        .iter()
        .find_map(|b| rest.strip_prefix(b))
        .unwrap_or(rest);
    Some(rest.trim().to_string())
}

/// A task-list item's text (`- [ ] x`, `* [x] x`).
fn task_item(line: &str) -> Option<String> {
    let t = line.trim_start();
    let rest = t.strip_prefix(['-', '*', '+'])?.trim_start();
    ["[ ]", "[x]", "[X]"]
        .iter()
        .find_map(|b| rest.strip_prefix(b))
        .map(|r| r.trim().to_string())
}

/// The spec a task keeps of `issue` (whose text the shell already redacted and capped).
pub fn spec_of(issue: &Issue) -> IssueSpec {
    IssueSpec {
        number: issue.number,
        title: issue.title.clone(),
        body: issue.body.clone(),
        author: issue.author.clone(),
        url: issue.html_url.clone(),
        hash: short_hash(&["issue-text", &issue.title, &issue.body]),
        updated_at: issue.updated_at,
    }
}

/// What a fresh read of an issue does to the spec kept for its tasks.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SpecChange {
    /// No spec kept yet: keep this one.
    New(IssueSpec),
    /// The text changed and the change can be trusted: the next attempt works from this one.
    Edited(IssueSpec),
    /// The same text (or only its metadata moved).
    Unchanged,
    /// The text changed, but the issue's author is not trusted (the issue was trusted because a
    /// maintainer labelled it): anyone who can edit it now could rewrite the task, so the spec
    /// stays as it was imported.
    UntrustedEdit { author: String },
}

/// Issue 14 item 3: an edit changes the spec only when the issue's author is trusted by their
/// association (GitHub lets only the author and people with write access edit an issue body);
/// an outsider's issue keeps the text a maintainer saw when labelling it.
pub fn spec_change(issue: &Issue, kept: Option<&IssueSpec>, config: &BacklogConfig) -> SpecChange {
    let fresh = spec_of(issue);
    let Some(kept) = kept else {
        return SpecChange::New(fresh);
    };
    if kept.hash == fresh.hash {
        return SpecChange::Unchanged;
    }
    if author_trusted(issue, config) {
        SpecChange::Edited(fresh)
    } else {
        SpecChange::UntrustedEdit {
            author: issue.author.clone(),
        }
    }
}

/// Whether the issue's author is trusted by their association (not by a maintainer's label):
/// only then may edits of the issue change what its tasks do.
pub fn author_trusted(issue: &Issue, config: &BacklogConfig) -> bool {
    let association = issue.author_association.as_str();
    config
        .trusted_associations
        .iter()
        .any(|a| a.trim().eq_ignore_ascii_case(association))
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;

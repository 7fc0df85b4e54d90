//! Research tasks (issue 28): the rules over what a read-only research run wrote. Whether its
//! report counts (present, not empty, every acceptance criterion answered), the proposals it
//! may make (capped), which `path:line` references become links to the base commit, which
//! boxes of the report comment a person ticked, and the task an approved proposal becomes.
//!
//! Pure: reading the files, asking git which paths exist and posting the comment are the
//! shell's (`runner::research`, `tick::people`). Not for: rendering the comment
//! (`report::research`).

use std::collections::BTreeSet;

use crate::model::{short_hash, BlockReason, CriterionCheck, Proposal, Task, TaskId, TaskStatus};
use crate::time::Timestamp;

/// The most proposals one report may make; more are left out (and said so in the report).
pub const MAX_PROPOSALS: usize = 10;
/// GitHub refuses a comment longer than 65,536 characters.
pub const COMMENT_CAP: usize = 65_536;
/// The report's share of the comment: the heading, the criteria (at most 20 of 500 + 500
/// characters), the proposals (10 of 120 + 1,000) and the marker fit in the rest.
pub const REPORT_CAP: usize = 32_000;
const TITLE_CAP: usize = 120;
const GOAL_CAP: usize = 1_000;
const ANSWER_CAP: usize = 500;

/// Which acceptance criterion an answer is for: its number from 1, or its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CriterionRef {
    Number(usize),
    Text(String),
}

/// One answer of the result file's `criteria` list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Answer {
    pub criterion: CriterionRef,
    pub met: Option<bool>,
    pub answer: String,
}

/// The report and the criteria answered, or what is missing, in words that name it.
pub fn check_report(
    report: Option<&str>,
    criteria: &[String],
    answers: &[Answer],
) -> Result<Vec<CriterionCheck>, String> {
    let report = report.ok_or(
        "the research agent wrote no report: report.md ($OPENTIGER_REPORT_FILE) is missing",
    )?;
    if report.trim().is_empty() {
        return Err("the research agent's report.md ($OPENTIGER_REPORT_FILE) is empty".into());
    }
    let mut checks = Vec::new();
    let mut missing = Vec::new();
    for (i, item) in criteria.iter().enumerate() {
        let found = answers.iter().find(|a| {
            let answered = !a.answer.trim().is_empty();
            answered
                && match &a.criterion {
                    CriterionRef::Number(n) => *n == i + 1,
                    CriterionRef::Text(t) => same_words(t, item),
                }
        });
        match found {
            Some(a) => checks.push(CriterionCheck {
                item: item.clone(),
                met: a.met,
                reason: one_line(&a.answer, ANSWER_CAP),
            }),
            None => missing.push(format!("{} \"{item}\"", i + 1)),
        }
    }
    if !missing.is_empty() {
        return Err(format!(
            "the research report leaves acceptance criterion {} unanswered: each needs an entry \
             in the result file's `criteria` ({{\"criterion\": <number or text>, \"met\": \
             true|false|null, \"answer\": \"...\"}})",
            missing.join(", ")
        ));
    }
    Ok(checks)
}

fn same_words(a: &str, b: &str) -> bool {
    let words = |s: &str| -> Vec<String> {
        s.split_whitespace()
            .map(|w| {
                w.trim_matches(|c: char| !c.is_alphanumeric())
                    .to_lowercase()
            })
            .filter(|w| !w.is_empty())
            .collect()
    };
    words(a) == words(b)
}

/// The proposals kept: titles on one line, both capped, empty titles dropped, at most
/// [`MAX_PROPOSALS`]. The second value counts those left out.
pub fn cap_proposals(raw: Vec<Proposal>) -> (Vec<Proposal>, usize) {
    let kept: Vec<Proposal> = raw
        .into_iter()
        .map(|p| Proposal {
            title: one_line(&p.title, TITLE_CAP),
            goal: cap(p.goal.trim(), GOAL_CAP),
        })
        .filter(|p| !p.title.is_empty())
        .collect();
    let left_out = kept.len().saturating_sub(MAX_PROPOSALS);
    (kept.into_iter().take(MAX_PROPOSALS).collect(), left_out)
}

/// `text` cut to `max` characters, with a visible note when something was left out.
pub fn cap(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((at, _)) => format!("{}… (cut at {max} characters)", &text[..at]),
    }
}

fn one_line(text: &str, max: usize) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    cap(&line, max)
}

/// A `path:line` or `path:line-line` reference of a report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Evidence {
    pub path: String,
    pub start: u32,
    pub end: Option<u32>,
}

/// One reference found in a line: its byte range (backticks included when the whole code
/// span is the reference) and whether it was written as code.
struct Found {
    range: std::ops::Range<usize>,
    evidence: Evidence,
    code: bool,
}

/// The paths the report's references name, in order, each once: the shell asks git which of
/// them exist in the base commit, in one process.
pub fn evidence_paths(report: &str) -> Vec<String> {
    let mut paths: Vec<String> = Vec::new();
    for line in prose_lines(report).into_iter().flatten() {
        for found in references(line) {
            if !paths.contains(&found.evidence.path) {
                paths.push(found.evidence.path);
            }
        }
    }
    paths
}

/// The report with each reference to a path in `existing` made a link to the base commit
/// (`blob_base` is `https://github.com/<owner>/<repo>/blob/<sha>`); references inside code
/// blocks, links or longer code spans, and to paths not in the commit, stay as written.
pub fn link_evidence(report: &str, blob_base: &str, existing: &BTreeSet<String>) -> String {
    let lines = prose_lines(report);
    let mut out = String::with_capacity(report.len());
    for (raw, prose) in report.split_inclusive('\n').zip(lines) {
        let Some(line) = prose else {
            out.push_str(raw);
            continue;
        };
        let mut at = 0;
        for found in references(line) {
            if !existing.contains(&found.evidence.path) {
                continue;
            }
            let Evidence { path, start, end } = &found.evidence;
            let anchor = match end {
                Some(end) => format!("#L{start}-L{end}"),
                None => format!("#L{start}"),
            };
            let text = &line[found.range.clone()];
            out.push_str(&line[at..found.range.start]);
            let shown = if found.code {
                text.to_string()
            } else {
                text.replace('[', "\\[")
            };
            out.push_str(&format!("[{shown}]({blob_base}/{path}{anchor})"));
            at = found.range.end;
        }
        out.push_str(&raw[at..]);
    }
    out
}

/// Per line (with its line ending), the line when it is prose, `None` inside a fenced or
/// indented code block.
fn prose_lines(text: &str) -> Vec<Option<&str>> {
    let mut fence: Option<&str> = None;
    text.split_inclusive('\n')
        .map(|raw| {
            let line = raw.trim();
            if let Some(open) = fence {
                if line.starts_with(open) {
                    fence = None;
                }
                return None;
            }
            for open in ["```", "~~~"] {
                if line.starts_with(open) {
                    fence = Some(open);
                    return None;
                }
            }
            let indented = raw.starts_with("    ") || raw.starts_with('\t');
            (!indented).then_some(raw)
        })
        .collect()
}

/// The references of one prose line, in order.
fn references(line: &str) -> Vec<Found> {
    let bytes = line.as_bytes();
    let spans = code_spans(line);
    let is_path_byte = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'/' | b'-');
    let mut found: Vec<Found> = Vec::new();
    for (colon, _) in line.match_indices(':') {
        if !bytes.get(colon + 1).is_some_and(u8::is_ascii_digit) {
            continue;
        }
        let mut from = colon;
        while from > 0 && is_path_byte(bytes[from - 1]) {
            from -= 1;
        }
        let path = &line[from..colon];
        let digits = |at: usize| {
            let n = bytes[at..]
                .iter()
                .take_while(|b| b.is_ascii_digit())
                .count();
            (line[at..at + n].parse::<u32>().ok(), at + n)
        };
        let (Some(start), mut to) = digits(colon + 1) else {
            continue;
        };
        let mut end = None;
        if bytes.get(to) == Some(&b'-') && bytes.get(to + 1).is_some_and(u8::is_ascii_digit) {
            if let (Some(last), after) = digits(to + 1) {
                end = Some(last);
                to = after;
            }
        }
        let before = from.checked_sub(1).map(|i| bytes[i]);
        let after = bytes.get(to).copied();
        let word_goes_on =
            after.is_some_and(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'/' | b':'));
        let plausible = !path.is_empty()
            && !path.starts_with('/')
            && !path.starts_with('-')
            && !path.split('/').any(|part| part == ".." || part.is_empty())
            && start >= 1
            && end.is_none_or(|e| e >= start)
            && !matches!(before, Some(b':' | b'/' | b'[' | b'#' | b'@'))
            && !word_goes_on
            && !found.iter().any(|f| f.range.end > from);
        if !plausible {
            continue;
        }
        let path = path.trim_start_matches("./").to_string();
        let mut range = from..to;
        let mut code = false;
        if let Some(span) = spans.iter().find(|s| s.start < from && from < s.end) {
            // Inside a code span: linked only when the span is the reference itself.
            if span.start + 1 != from || span.end - 1 != to {
                continue;
            }
            range = span.clone();
            code = true;
        }
        found.push(Found {
            range,
            evidence: Evidence { path, start, end },
            code,
        });
    }
    found
}

/// The byte ranges of a line's single-backtick code spans, backticks included.
fn code_spans(line: &str) -> Vec<std::ops::Range<usize>> {
    let ticks: Vec<usize> = line.match_indices('`').map(|(i, _)| i).collect();
    ticks.chunks_exact(2).map(|p| p[0]..p[1] + 1).collect()
}

/// The hidden line that starts the proposals of a report comment. Only boxes after its last
/// occurrence count: the report above is the agent's text, which must not tick a box.
pub const PROPOSALS_MARKER: &str = "<!-- opentiger:proposals -->";

/// Agent text shown in a comment, made harmless: `<!--` can open no hidden marker of ours (the
/// comment's own, the proposals'), and `@name` notifies nobody (a zero-width space after `@`).
pub fn neutral(text: &str) -> String {
    let text = text.replace("<!--", "&lt;!--");
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '@' && chars.peek().is_some_and(|n| n.is_ascii_alphanumeric()) {
            out.push('\u{200B}');
        }
    }
    out
}

/// The numbers of the proposals whose box is ticked in a report comment's body
/// (`- [x] 3. …`), after the last [`PROPOSALS_MARKER`] and outside code blocks.
pub fn ticked(body: &str) -> Vec<u32> {
    let mut numbers = Vec::new();
    let Some((_, boxes)) = body.rsplit_once(PROPOSALS_MARKER) else {
        return numbers;
    };
    for line in prose_lines(boxes).into_iter().flatten() {
        let line = line.trim();
        let Some(rest) = ["- [x] ", "- [X] ", "* [x] ", "* [X] "]
            .iter()
            .find_map(|open| line.strip_prefix(open))
        else {
            continue;
        };
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let number = rest[digits.len()..]
            .starts_with('.')
            .then(|| digits.parse::<u32>().ok())
            .flatten();
        if let Some(n) = number.filter(|n| !numbers.contains(n)) {
            numbers.push(n);
        }
    }
    numbers
}

/// A report comment of ours as the comment feed brought it back: its ticked boxes approve
/// proposals (`tick::people`'s ticked boxes).
#[derive(Clone, Debug)]
pub struct ReportComment {
    pub task: TaskId,
    pub thread: u64,
    pub url: String,
    pub body: String,
}

const TASK_OPEN: &str = "<!-- opentiger:research task=";

/// The hidden line of a report comment naming the research task whose report it shows.
pub fn task_marker(task: &TaskId) -> String {
    format!("{TASK_OPEN}{task} -->")
}

/// The research task a report comment shows, from its last task marker (agent text in the
/// comment cannot open one: [`neutral`]).
pub fn marked(body: &str) -> Option<TaskId> {
    let rest = body.rsplit_once(TASK_OPEN)?.1;
    let id = rest.split_once(" -->")?.0;
    let valid = !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    valid.then(|| TaskId(id.to_string()))
}

/// The id of the task proposal `number` of research task `research` becomes: the same
/// approval decided twice creates nothing twice.
pub fn proposal_task_id(research: &TaskId, number: u32) -> TaskId {
    TaskId(short_hash(&[
        "proposal",
        research.as_str(),
        &number.to_string(),
    ]))
}

/// The worker task an approved proposal becomes. In github mode it gets its issue first
/// (`blocked(issue_linking)`, as an approved planned task does), then runs.
pub fn proposal_task(
    research: &Task,
    number: u32,
    proposal: &Proposal,
    github: bool,
    by: &str,
    now: Timestamp,
) -> Task {
    let mut task = Task::new(
        proposal_task_id(&research.id, number),
        &proposal.title,
        if proposal.goal.is_empty() {
            &proposal.title
        } else {
            &proposal.goal
        },
        now,
    );
    let from = match research.issue_number {
        Some(n) => format!("research task {} (#{n})", research.id),
        None => format!("research task {}", research.id),
    };
    task.notes = format!("Proposal {number} of {from}, approved {by}.");
    task.priority = research.priority;
    task.risk = research.risk;
    task.allowed_paths = research.allowed_paths.clone();
    if github {
        task.status = TaskStatus::Blocked;
        task.block_reason = Some(BlockReason::IssueLinking);
        task.status_reason = Some(format!(
            "proposal {number} of {from} approved {by}: its issue is opened, then it runs"
        ));
    } else {
        task.status_reason = Some(format!("proposal {number} of {from} approved {by}"));
    }
    task
}

#[cfg(test)]
#[path = "research_tests.rs"]
mod tests;

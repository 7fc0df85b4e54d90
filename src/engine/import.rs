//! Backlog import: which open GitHub issues become tasks, and how (spec §6 items 2-5, DESIGN §10).
//!
//! Pure: [`import_issues`] decides, per issue, to create a task, to move a linked task to the role
//! the issue now asks for, or to skip the issue with a reason the dashboard shows. Not for:
//! fetching, labelling or commenting on issues (the shell), nor importing open PRs for review.
//!
//! Departures from the spec, on purpose: an issue whose tasks were all cancelled comes back only
//! once it was updated after the last cancellation (spec §8 item 11: cancel and re-import looped
//! forever; so the shell must not comment on or relabel an issue when it cancels its task); an
//! issue naming no role becomes a worker task instead of stalling as backlog (§8 item 11); only a
//! closing keyword in an open PR holds an issue back, not any mention. The issue body reaches no
//! trusted field (title, goal, notes): agents see it only inside the prompt's untrusted-data fence.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::Serialize;

use crate::config::BacklogConfig;
use crate::forge::types::{Issue, PullRequest};
use crate::model::graph::reachable;
use crate::model::{short_hash, Lane, Risk, Role, Task, TaskId, TaskKind, TaskStatus};
use crate::time::Timestamp;

/// What the import decides on.
#[derive(Clone, Copy, Debug)]
pub struct ImportInput<'a> {
    /// Open issues carrying a backlog label (filtered by the caller; checked again here).
    pub issues: &'a [Issue],
    pub open_prs: &'a [PullRequest],
    /// Every task that has an `issue_number`, in any status, with its dependencies.
    pub tasks: &'a [Task],
    pub config: &'a BacklogConfig,
    /// The requirement's allowed paths, used when the issue names none (empty: the config
    /// policy applies).
    pub default_allowed: &'a [String],
    pub now: Timestamp,
}

/// What happens to one issue. An issue gets one `Create` or `Skip`, or one `Retarget` per
/// linked task that moves.
// A few per tick, matched by value: boxing the task would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ImportDecision {
    /// A new queued task for the issue.
    Create { task: Task, reason: String },
    /// The issue names another role than its queued, failed or blocked task has. The caller
    /// moves the lane with the role ([`lane_of`]).
    Retarget {
        task_id: TaskId,
        role: Role,
        reason: String,
    },
    /// Not imported, and why.
    Skip { issue: u64, reason: SkipReason },
}

/// Why an issue is not imported.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SkipReason {
    Untrusted { author: String, association: String },
    ReferencedByPr { pr: u64 },
    AlreadyLinked { task: TaskId, status: TaskStatus },
    Done { task: TaskId },
    CancelledUnchanged { task: TaskId },
    NoBacklogLabel,
    Closed,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::Untrusted {
                author,
                association,
            } => write!(
                f,
                "opened by @{author} ({association}), who is not trusted, and no trusted person \
                 applied the label"
            ),
            SkipReason::ReferencedByPr { pr } => write!(f, "open pull request #{pr} closes it"),
            SkipReason::AlreadyLinked { task, status } => {
                write!(f, "already has task {task} ({status})")
            }
            SkipReason::Done { task } => write!(f, "its task {task} is done; close the issue"),
            SkipReason::CancelledUnchanged { task } => write!(
                f,
                "its task {task} was cancelled and the issue has not changed since; edit or \
                 relabel the issue to import it again"
            ),
            SkipReason::NoBacklogLabel => f.write_str("carries none of the backlog labels"),
            SkipReason::Closed => f.write_str("is closed"),
        }
    }
}

/// The lane a task of this role runs in.
pub fn lane_of(role: Role) -> Lane {
    match role {
        Role::Docser => Lane::Docser,
        Role::Worker | Role::Tester => Lane::Feature,
    }
}

/// The id of the task imported from this version of the issue: the same import decided twice
/// gives the same id, a re-import after an edit a new one.
pub fn issue_task_id(issue: &Issue) -> TaskId {
    TaskId(short_hash(&[
        "issue",
        &issue.number.to_string(),
        &issue.updated_at.0.to_string(),
    ]))
}

/// Decides every issue, in ascending issue number.
pub fn import_issues(input: &ImportInput<'_>) -> Vec<ImportDecision> {
    let mut issues: Vec<&Issue> = input.issues.iter().collect();
    issues.sort_by_key(|i| i.number);
    issues.dedup_by_key(|i| i.number);
    let outcomes: Vec<Outcome> = issues.iter().map(|i| decide(i, input)).collect();

    // Second pass: dependencies may name an issue imported in this same batch.
    let batch: BTreeMap<u64, TaskId> = outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Create(d) => Some((d.task.issue_number?, d.task.id.clone())),
            Outcome::Decided(_) => None,
        })
        .collect();
    let mut edges: BTreeMap<TaskId, Vec<TaskId>> = BTreeMap::new();
    let mut decisions = Vec::new();
    for outcome in outcomes {
        match outcome {
            Outcome::Decided(list) => decisions.extend(list),
            Outcome::Create(draft) => {
                decisions.push(finish(*draft, input.tasks, &batch, &mut edges));
            }
        }
    }
    decisions
}

enum Outcome {
    Decided(Vec<ImportDecision>),
    Create(Box<Draft>),
}

/// A task to create, before its dependencies are resolved.
struct Draft {
    task: Task,
    reason: String,
    depends_on: Vec<u64>,
    notes: Vec<String>,
}

fn decide(issue: &Issue, input: &ImportInput<'_>) -> Outcome {
    let n = issue.number;
    let skip = |reason| Outcome::Decided(vec![ImportDecision::Skip { issue: n, reason }]);
    if !issue.state.trim().eq_ignore_ascii_case("open") {
        return skip(SkipReason::Closed);
    }
    let backlog = &input.config.labels;
    if !issue
        .labels
        .iter()
        .any(|l| backlog.iter().any(|b| same_word(l, b)))
    {
        return skip(SkipReason::NoBacklogLabel);
    }
    let Some(trust) = trusted_because(issue, input.config) else {
        return skip(SkipReason::Untrusted {
            author: issue.author.clone(),
            association: issue.author_association.as_str().to_string(),
        });
    };
    let linked = linked_to(n, input.tasks);
    let role = explicit_role(issue);
    if let Some(open) = pick_open(&linked) {
        let retargets = retargets(n, role.as_ref(), &linked);
        if retargets.is_empty() {
            let (task, status) = (open.id.clone(), open.status);
            return skip(SkipReason::AlreadyLinked { task, status });
        }
        return Outcome::Decided(retargets);
    }
    if let Some(task) = newest(&linked, TaskStatus::Done).map(|t| t.id.clone()) {
        return skip(SkipReason::Done { task });
    }
    if let Some(pr) = referencing_pr(n, input.open_prs) {
        return skip(SkipReason::ReferencedByPr { pr });
    }
    // Every linked task left is cancelled.
    let id = issue_task_id(issue);
    let cancelled = newest(&linked, TaskStatus::Cancelled);
    if let Some(last) = cancelled {
        let same_version = linked.iter().any(|t| t.id == id);
        if issue.updated_at <= last.updated_at || same_version {
            let task = last.id.clone();
            return skip(SkipReason::CancelledUnchanged { task });
        }
    }
    let mut draft = draft(issue, id, role, input);
    draft.reason = match cancelled {
        Some(last) => format!(
            "issue #{n} ({trust}) was updated at {} after task {} was cancelled at {}: {}",
            issue.updated_at, last.id, last.updated_at, draft.reason
        ),
        None => format!("issue #{n} ({trust}): {}", draft.reason),
    };
    Outcome::Create(Box::new(draft))
}

fn draft(
    issue: &Issue,
    id: TaskId,
    role: Option<(Role, String)>,
    input: &ImportInput<'_>,
) -> Draft {
    let n = issue.number;
    let title = match issue.title.trim() {
        "" => format!("GitHub issue #{n}"),
        t => t.to_string(),
    };
    let goal = format!(
        "Resolve GitHub issue #{n}: {title}. Make the change complete, so that a pull request \
         saying `Closes #{n}` can close the issue."
    );
    let (role, role_source) =
        role.unwrap_or((Role::Worker, "by default: the issue names none".to_string()));
    let (accepted, dropped) = allowed_paths(&issue.body);
    let mut notes = vec![format!(
        "Imported from GitHub issue #{n} ({}) opened by @{}.",
        issue.html_url, issue.author
    )];
    notes.extend(dropped);
    let mut task = Task::new(id, &title, &goal, input.now);
    task.kind = TaskKind::Feature;
    task.role = role;
    task.lane = lane_of(role);
    task.status = TaskStatus::Queued;
    task.priority = priority(&issue.labels);
    task.risk = risk(&issue.labels);
    // No paths named: the requirement's, else (empty) the config policy alone.
    task.allowed_paths = if accepted.is_empty() {
        input.default_allowed.to_vec()
    } else {
        accepted
    };
    task.issue_number = Some(n);
    let reason = format!(
        "new {role} task {} (role {role_source}), priority {}, risk {}",
        task.id, task.priority, task.risk
    );
    Draft {
        task,
        reason,
        depends_on: dependencies(&issue.body),
        notes,
    }
}

/// Resolves the draft's dependencies and writes its notes.
fn finish(
    mut draft: Draft,
    tasks: &[Task],
    batch: &BTreeMap<u64, TaskId>,
    edges: &mut BTreeMap<TaskId, Vec<TaskId>>,
) -> ImportDecision {
    let me = draft.task.id.clone();
    let mut deps: Vec<TaskId> = Vec::new();
    for n in draft.depends_on {
        if draft.task.issue_number == Some(n) {
            continue;
        }
        let linked = linked_to(n, tasks);
        let target = if let Some(open) = pick_open(&linked) {
            open.id.clone()
        } else if let Some(id) = batch.get(&n) {
            if reachable(edges, id).contains(&me) {
                draft.notes.push(format!(
                    "Dependency on #{n} dropped: #{n} depends on this issue, which would be a cycle."
                ));
                continue;
            }
            id.clone()
        } else {
            draft.notes.push(match newest(&linked, TaskStatus::Done) {
                Some(done) => format!("Dependency on #{n} ignored: its task {} is done.", done.id),
                None => format!("Dependency on #{n} ignored: #{n} has no open task."),
            });
            continue;
        };
        if !deps.contains(&target) {
            deps.push(target);
        }
    }
    if !deps.is_empty() {
        let list: Vec<&str> = deps.iter().map(TaskId::as_str).collect();
        draft.reason = format!("{}, after {}", draft.reason, list.join(", "));
    }
    edges.insert(me, deps.clone());
    draft.task.dependencies = deps;
    draft.task.notes = draft.notes.join("\n");
    let (task, reason) = (draft.task, draft.reason);
    ImportDecision::Create { task, reason }
}

fn linked_to(n: u64, tasks: &[Task]) -> Vec<&Task> {
    tasks.iter().filter(|t| t.issue_number == Some(n)).collect()
}

fn same_word(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

/// Why the issue is trusted (DESIGN §10), or `None`.
fn trusted_because(issue: &Issue, config: &BacklogConfig) -> Option<String> {
    let association = issue.author_association.as_str();
    let trusted = &config.trusted_associations;
    if trusted.iter().any(|a| same_word(a, association)) {
        return Some(format!("opened by @{} ({association})", issue.author));
    }
    issue
        .labelled_by
        .iter()
        .find(|e| e.actor_can_write && config.labels.iter().any(|l| same_word(l, &e.label)))
        .map(|e| format!("labelled `{}` by @{}, who can write", e.label, e.actor))
}

/// The non-terminal task to name for an issue: running before queued before blocked before
/// failed, then the newest.
fn pick_open<'t>(linked: &[&'t Task]) -> Option<&'t Task> {
    fn rank(status: TaskStatus) -> Option<u8> {
        match status {
            TaskStatus::Running => Some(0),
            TaskStatus::Queued => Some(1),
            TaskStatus::Blocked => Some(2),
            TaskStatus::Failed => Some(3),
            TaskStatus::Done | TaskStatus::Cancelled => None,
        }
    }
    linked
        .iter()
        .filter_map(|t| Some((rank(t.status)?, *t)))
        .min_by_key(|(rank, t)| (*rank, Reverse(t.created_at), Reverse(&t.id)))
        .map(|(_, t)| t)
}

/// The most recently updated linked task in `status`.
fn newest<'t>(linked: &[&'t Task], status: TaskStatus) -> Option<&'t Task> {
    linked
        .iter()
        .copied()
        .filter(|t| t.status == status)
        .max_by(|a, b| a.updated_at.cmp(&b.updated_at).then(a.id.cmp(&b.id)))
}

/// Linked tasks that can still change role and have another one than the issue names.
fn retargets(n: u64, role: Option<&(Role, String)>, linked: &[&Task]) -> Vec<ImportDecision> {
    let Some((role, source)) = role else {
        return Vec::new();
    };
    let mut movable: Vec<&Task> = linked
        .iter()
        .copied()
        .filter(|t| match t.status {
            TaskStatus::Queued | TaskStatus::Failed | TaskStatus::Blocked => t.role != *role,
            TaskStatus::Running | TaskStatus::Done | TaskStatus::Cancelled => false,
        })
        .collect();
    movable.sort_by(|a, b| a.id.cmp(&b.id));
    let retarget = |t: &Task| ImportDecision::Retarget {
        task_id: t.id.clone(),
        role: *role,
        reason: format!(
            "issue #{n} now asks for role {role} ({source}); task {} ({}) was {}",
            t.id, t.status, t.role
        ),
    };
    movable.into_iter().map(retarget).collect()
}

/// The role the issue names, and where it says so: a label, else a `Role:` line of the body.
fn explicit_role(issue: &Issue) -> Option<(Role, String)> {
    let from_label = issue.labels.iter().find_map(|label| {
        let word = squash(label);
        let bare = word
            .strip_prefix("role:")
            .or_else(|| word.strip_prefix("agent:"))
            .unwrap_or(&word);
        let role = bare.parse::<Role>().ok()?;
        Some((role, format!("from label `{}`", label.trim())))
    });
    from_label.or_else(|| {
        issue.body.lines().find_map(|line| {
            let (key, value) = key_value(line)?;
            if !matches!(key.as_str(), "role" | "agent" | "agent role") {
                return None;
            }
            let word = value
                .split_whitespace()
                .next()?
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            let role = word.parse::<Role>().ok()?;
            Some((role, format!("from a `{key}:` line of the issue body")))
        })
    })
}

/// `- **Key**: value` → (`key`, `value`): optional bullet, emphasis, `:` or full-width `：`.
fn key_value(line: &str) -> Option<(String, &str)> {
    let line = line.trim_start();
    let line = line
        .strip_prefix(['-', '*', '+'])
        .filter(|rest| rest.starts_with(char::is_whitespace))
        .unwrap_or(line);
    let (key, value) = line.split_once([':', '：'])?;
    let key = key
        .trim_matches(|c: char| c.is_whitespace() || matches!(c, '*' | '_' | '`'))
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    // The closing `**` of `**Role:** tester`, not a `**` glob.
    let value = value.trim();
    let emphasis = value.trim_start_matches(['*', '_']);
    let value = if emphasis.starts_with(char::is_whitespace) {
        emphasis.trim_start()
    } else {
        value
    };
    Some((key, value))
}

/// A label as one lower-case word: `Priority: High` → `priority:high`.
fn squash(label: &str) -> String {
    let word: String = label.chars().filter(|c| !c.is_whitespace()).collect();
    word.to_lowercase()
}

/// spec §6 item 4: `priority:high`/`p0`/`p1` → 90, `priority:medium`/`p2` → 60, else 40.
fn priority(labels: &[String]) -> i64 {
    let has = |names: &[&str]| labels.iter().any(|l| names.contains(&squash(l).as_str()));
    if has(&["priority:high", "p0", "p1"]) {
        90
    } else if has(&["priority:medium", "p2"]) {
        60
    } else {
        40
    }
}

/// spec §6 item 4: critical/security/urgent → high, bug/important/fix → medium, else low. A label
/// counts by its words, so `type: bug` and `priority: critical` count and `debug` does not.
fn risk(labels: &[String]) -> Risk {
    let words: BTreeSet<String> = labels
        .iter()
        .flat_map(|l| {
            l.split(|c: char| !c.is_alphanumeric())
                .map(str::to_lowercase)
        })
        .collect();
    let has = |names: &[&str]| names.iter().any(|n| words.contains(*n));
    if has(&["critical", "security", "urgent"]) {
        Risk::High
    } else if has(&["bug", "important", "fix"]) {
        Risk::Medium
    } else {
        Risk::Low
    }
}

/// A markdown heading's text, lower case without trailing `#`s and `:`; `None` for other lines.
fn heading(line: &str) -> Option<String> {
    let line = line.trim();
    let hashes = line.chars().take_while(|c| *c == '#').count();
    let rest = &line[hashes..];
    if !(1..=6).contains(&hashes) || !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    let title = rest.trim().trim_end_matches(['#', ':', '：']);
    Some(title.trim().to_lowercase())
}

/// The lines of every section whose heading is one of `names`.
fn section_lines<'b>(body: &'b str, names: &[&str]) -> Vec<&'b str> {
    let mut inside = false;
    let mut lines = Vec::new();
    for line in body.lines() {
        if let Some(title) = heading(line) {
            inside = names.contains(&title.as_str());
        } else if inside {
            lines.push(line);
        }
    }
    lines
}

/// spec §6 item 4: the paths of the `## Allowed Paths` section (one per line or bullet) and of
/// inline `Allowed paths: a, b` lines, and a note per path dropped.
fn allowed_paths(body: &str) -> (Vec<String>, Vec<String>) {
    let section = section_lines(body, &["allowed paths", "allowed path"])
        .into_iter()
        .map(|line| line.trim())
        .filter(|line| !line.starts_with("```") && !line.starts_with("~~~"))
        .map(|line| {
            line.strip_prefix(['-', '*', '+'])
                .map_or(line, str::trim_start)
        });
    let inline = body
        .lines()
        .filter(|l| heading(l).is_none())
        .filter_map(|line| {
            let (key, value) = key_value(line)?;
            matches!(key.as_str(), "allowed paths" | "allowed path").then_some(value)
        });
    let (mut accepted, mut dropped) = (Vec::new(), Vec::new());
    for token in section.chain(inline).flat_map(tokens) {
        match normalize_path(token) {
            Ok(list) => list.into_iter().for_each(|p| {
                if !accepted.contains(&p) {
                    accepted.push(p);
                }
            }),
            Err(problem) => dropped.push(dropped_note(token, problem)),
        }
    }
    (accepted, dropped)
}

/// The comma-separated parts of `text`, each one's backticked spans when it has any; blank
/// parts skipped.
fn tokens(text: &str) -> Vec<&str> {
    text.split(',')
        .filter(|part| !part.trim().is_empty())
        .flat_map(|part| {
            if part.contains('`') {
                part.split('`').skip(1).step_by(2).collect()
            } else {
                vec![part]
            }
        })
        .collect()
}

/// One path as written → the patterns it stands for, or why it is refused.
fn normalize_path(token: &str) -> Result<Vec<String>, &'static str> {
    let quotes = ['`', '"', '\'', '“', '”', '‘', '’'];
    let mut path = token.trim().trim_matches(quotes).trim();
    while let Some(rest) = path.strip_prefix("./") {
        path = rest;
    }
    if matches!(path, "" | "." | "/") {
        return Ok(vec!["**".to_string()]);
    }
    if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("it contains spaces; write one path per line or separate them by commas");
    }
    let bytes = path.as_bytes();
    let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    if path.starts_with(['/', '\\', '~']) || drive {
        return Err("it is absolute; write it relative to the repository root");
    }
    if path.split(['/', '\\']).any(|segment| segment == "..") {
        return Err("it has a `..` segment, which would leave the repository");
    }
    if path.contains(['*', '?', '[', '{']) {
        return Ok(vec![path.to_string()]);
    }
    let path = path.trim_end_matches('/');
    let last = path.rsplit('/').next().unwrap_or(path);
    if last.contains('.') {
        return Ok(vec![path.to_string()]);
    }
    Ok(vec![path.to_string(), format!("{path}/**")])
}

/// The note for a dropped path. The path is issue text: it is quoted only when it is made of
/// plain path characters, so no sentence of the body reaches the trusted notes.
fn dropped_note(token: &str, problem: &str) -> String {
    let path = token.trim();
    let plain = path.len() <= 120
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/\\*?~:[]{}".contains(c));
    if plain {
        format!("Allowed path `{path}` from the issue was dropped: {problem}.")
    } else {
        format!("An allowed path from the issue (not quoted here) was dropped: {problem}.")
    }
}

fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Leading digits of `text` as a number, when no word character follows them.
fn number(text: &str) -> Option<u64> {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    if end == 0 || text[end..].starts_with(is_word_char) {
        return None;
    }
    text[..end].parse().ok()
}

/// Every `#N` of `text` that is a reference on its own (not `o/r#N`, not `#N2x`).
fn hash_refs(text: &str) -> Vec<u64> {
    text.char_indices()
        .filter(|(i, c)| *c == '#' && !text[..*i].ends_with(|p: char| is_word_char(p) || p == '/'))
        .filter_map(|(i, _)| number(&text[i + 1..]))
        .collect()
}

/// Does `line` (lower case) contain `phrase` as whole words?
fn has_phrase(line: &str, phrase: &str) -> bool {
    line.match_indices(phrase).any(|(i, _)| {
        !line[..i].ends_with(is_word_char) && !line[i + phrase.len()..].starts_with(is_word_char)
    })
}

/// spec §6 item 5: issues this one depends on, in order of mention.
fn dependencies(body: &str) -> Vec<u64> {
    const SECTIONS: &[&str] = &["dependencies", "dependency", "depends on", "blocked by"];
    const PHRASES: &[&str] = &[
        "depends on",
        "blocked by",
        "requires",
        "dependency",
        "dependencies",
    ];
    let mut refs: Vec<u64> = Vec::new();
    let section = section_lines(body, SECTIONS);
    let mentions = body.lines().filter(|line| {
        let lower = line.to_lowercase();
        PHRASES.iter().any(|p| has_phrase(&lower, p))
    });
    for line in section.into_iter().chain(mentions) {
        for n in hash_refs(line) {
            if !refs.contains(&n) {
                refs.push(n);
            }
        }
    }
    refs
}

/// The lowest-numbered open PR that says it closes issue `n`.
fn referencing_pr(n: u64, prs: &[PullRequest]) -> Option<u64> {
    prs.iter()
        .filter(|pr| pr.state.trim().eq_ignore_ascii_case("open"))
        .filter(|pr| {
            closing_references(&pr.title).contains(&n) || closing_references(&pr.body).contains(&n)
        })
        .map(|pr| pr.number)
        .min()
}

/// Issue numbers after GitHub's closing keywords: `fixes #N`, `Closes: o/r#N`,
/// `resolved https://…/issues/N` (whole words, any case).
fn closing_references(text: &str) -> Vec<u64> {
    const KEYWORDS: &[&str] = &[
        "close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved",
    ];
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .windows(2)
        .filter_map(|pair| {
            let keyword = pair[0]
                .trim_start_matches(|c: char| !c.is_alphanumeric())
                .trim_end_matches([':', '*', '_'])
                .to_lowercase();
            KEYWORDS
                .contains(&keyword.as_str())
                .then(|| reference(pair[1]))?
        })
        .collect()
}

/// The issue a closing keyword points at: `#N`, `owner/repo#N` or a URL ending in `/issues/N`.
fn reference(word: &str) -> Option<u64> {
    let word = word.trim_start_matches(['(', '[']);
    if let Some((_, tail)) = word.rsplit_once("/issues/") {
        return number(tail);
    }
    let (repo, num) = word.split_once('#')?;
    let slug = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    let repo_ok = repo.is_empty()
        || repo
            .split_once('/')
            .is_some_and(|(o, r)| slug(o) && slug(r));
    repo_ok.then(|| number(num))?
}

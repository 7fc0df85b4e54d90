//! The follow-up tasks the engine creates for a change: AutoFix (a review asked for changes),
//! conflict fix, recreate. Each keeps its source's goal, paths, checks and issue; its id derives
//! from the source, kind and number, so deciding twice creates it once.
//!
//! Not for: deciding whether a follow-up is due (see `verdict` and `recovery`).

use crate::model::{short_hash, Lane, Risk, Task, TaskId, TaskKind};
use crate::time::Timestamp;

/// The title words of each kind of follow-up task ("AutoFix 2/3: <goal's title>").
fn title_prefix(kind: TaskKind) -> Option<&'static str> {
    match kind {
        TaskKind::Autofix => Some("AutoFix"),
        TaskKind::AutofixConflict => Some("Conflict fix"),
        TaskKind::Recreate => Some("Recreate"),
        TaskKind::Feature
        | TaskKind::Rework
        | TaskKind::PrReview
        | TaskKind::Docs
        | TaskKind::Research => None,
    }
}

/// The goal's title, without the "AutoFix k/m: " (or other follow-up prefix) of a follow-up.
pub(crate) fn goal_title(task: &Task) -> &str {
    title_prefix(task.kind)
        .and_then(|prefix| task.title.strip_prefix(prefix))
        .and_then(|rest| rest.split_once(": "))
        .map_or(task.title.as_str(), |(_, title)| title)
}

/// A follow-up of `source` of `kind`, number `n` of at most `max`: same goal, paths, checks and
/// issue; its id derives from the source, kind and number, so deciding twice creates it once.
pub(crate) fn derived_child(
    source: &Task,
    kind: TaskKind,
    n: u32,
    max: u32,
    now: Timestamp,
) -> Task {
    let id = TaskId(short_hash(&[
        kind.as_str(),
        source.id.as_str(),
        &n.to_string(),
    ]));
    let prefix = title_prefix(kind).unwrap_or("Follow-up");
    let title = format!("{prefix} {n}/{max}: {}", goal_title(source));
    let mut child = Task::new(id, &title, &source.goal, now);
    child.kind = kind;
    child.role = source.role;
    child.lane = Lane::ConflictRecovery;
    child.risk = Risk::Medium.max(source.risk);
    child.parent_task_id = Some(source.id.clone());
    child.rework_depth = source.rework_depth;
    child.allowed_paths = source.allowed_paths.clone();
    child.commands = source.commands.clone();
    child.touches = source.touches.clone();
    child.target_area = source.target_area.clone();
    child.issue_number = source.issue_number;
    child.source_pr = source.source_pr;
    child.status_reason = Some(format!("created from the review of {}", source.id));
    child
}

/// The AutoFix child of DESIGN §4: tied to its source by a column, findings in its notes.
pub fn autofix_child(
    source: &Task,
    summary: &str,
    findings: &[String],
    n: u32,
    max: u32,
    now: Timestamp,
) -> Task {
    let mut child = derived_child(source, TaskKind::Autofix, n, max, now);
    child.priority = source.priority.max(0) + 80;
    let mut notes = format!("The review of this change asked for changes: {summary}\n");
    for f in findings {
        notes.push_str(&format!("- {f}\n"));
    }
    notes.push_str("Fix these findings on the existing branch; keep the rest of the change.");
    if !source.notes.trim().is_empty() {
        notes = format!("{}\n\n{notes}", source.notes.trim_end());
    }
    child.notes = notes;
    child
}

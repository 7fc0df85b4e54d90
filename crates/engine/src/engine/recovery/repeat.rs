//! Issue 27 item 2: the same failure twice is not retried blindly.
//!
//! A `policy_violation`, or a failure whose signature (spec §3.4) matches the family's previous
//! failed attempt, is not retried as it is: the first time, one rework whose notes name the
//! failure precisely; when the family already had its rework, a person, with the failure and
//! the fix. This comes before the per-category budgets of spec §3.4, which still bound
//! failures that differ each time (spec §2.5 step 5 retried a policy violation up to 3 times
//! and only escalated after 4 identical signatures: each of those runs was paid for and failed
//! the same way).
//!
//! Not for: failures that differ from the last one (`recover_failed`'s budgets), quota and
//! configuration failures (`outcome`).

use super::super::classify::{failure_signature, Classification};
use super::super::fairness::Families;
use super::super::Working;
use crate::model::{FailureCategory, FailureCode, Run, RunStatus, TaskId};

/// Why this failure must not be retried as it is, naming it, or `None` when a plain retry
/// within the budget is fine.
pub(super) fn not_again(
    w: &Working<'_>,
    id: &TaskId,
    class: &Classification,
    last: Option<&Run>,
) -> Option<String> {
    let failure = last.map(violation).unwrap_or_default();
    if class.category == FailureCategory::Policy {
        return Some(format!(
            "a policy violation is not retried as it is: {failure}"
        ));
    }
    let family = family_failures(w, id);
    match family.as_slice() {
        [newest, before, ..] if newest == before => Some(format!(
            "the same failure as the attempt before ({}), not retried as it is: {failure}",
            class.reason
        )),
        _ => None,
    }
}

/// The signatures of the failed runs of the task's family, newest first. Only failures the
/// agent's work caused: a cancelled run (a lost lease) or a quota or configuration failure
/// says nothing about the work.
fn family_failures(w: &Working<'_>, id: &TaskId) -> Vec<String> {
    let families = Families::new(&w.tasks, &w.runs);
    let family = families.family(id);
    let mut runs: Vec<&Run> = families
        .of
        .iter()
        .filter(|(_, f)| **f == family)
        .flat_map(|(task, _)| w.task_runs(task).iter().copied())
        .filter(|r| r.status == RunStatus::Failed)
        .filter(|r| {
            !matches!(
                r.failure_code,
                Some(FailureCode::QuotaFailure | FailureCode::AgentConfig)
            )
        })
        .collect();
    runs.sort_by(|a, b| b.started_at.cmp(&a.started_at).then(b.id.cmp(&a.id)));
    runs.iter()
        .map(|r| failure_signature(r.error.as_deref().unwrap_or(""), r.failure_code))
        .collect()
}

/// The failure as the runner said it, on one line and bounded: what the rework's notes and the
/// person's question quote.
pub(super) fn violation(run: &Run) -> String {
    let text = run.error.as_deref().unwrap_or("no message recorded");
    let line: String = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(4)
        .collect::<Vec<_>>()
        .join(" / ");
    let mut cut: String = line.chars().take(600).collect();
    if cut.len() < line.len() {
        cut.push('…');
    }
    match run.failure_code {
        Some(code) => format!("{code}: {cut}"),
        None => cut,
    }
}

/// What a person (or the agent's instructions) changes so this failure does not come back.
pub(super) fn fix_for(failure: &str) -> &'static str {
    let lower = failure.to_lowercase();
    let has = |words: &[&str]| words.iter().all(|w| lower.contains(w));
    if has(&["git", "configuration"]) {
        "the agent changed the git configuration (the runner put it back): make its command or \
         instructions leave git configuration alone"
    } else if has(&["result file"]) {
        "the agent must write its result file as a regular file of at most 1 MiB at \
         $OPENTIGER_RESULT_FILE (no link, FIFO or device)"
    } else if has(&["symbolic link"]) {
        "symbolic links must point inside the worktree and the task's allowed paths: make the \
         agent stop creating links that leave them"
    } else if has(&["secrets never go into a change"]) {
        "a secret was written into a file: keep keys out of what the agent writes (and out of \
         its instructions)"
    } else if has(&["outside allowed paths"]) || has(&["denied path"]) {
        "the change touched paths the task may not: widen the task's allowed_paths (or \
         policy.denied_paths) if it needs them, or tell the agent to stay inside"
    } else {
        "fix the cause above (the agent's instructions, the task or the configuration)"
    }
}

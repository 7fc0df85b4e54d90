//! Recovery's decisions for a github-mode task whose PR stalled, from the rules of
//! `engine::stall`: CI that never started (diagnose, dispatch, escalate) and a PR off the base
//! branch (retarget, escalate).

use super::super::stall::{base_step, next_step, BaseStep, Stall, StallStep};
use super::super::verdict::short_sha;
use super::super::{Action, PullState, Working};
use crate::model::{BlockReason, TaskId, TaskState};

/// Recovery's use of [`next_step`] for a task whose PR stalled: the decisions it makes.
pub(super) fn heal_stalled_pull(
    w: &mut Working<'_>,
    id: &TaskId,
    pr: u64,
    branch: &str,
    head_sha: &str,
    missing: &[String],
) {
    let observations = &w.snapshot.observations;
    let stall = Stall {
        task: id.as_str(),
        pr,
        branch,
        head_sha,
        missing,
        origin: observations.expected_checks.origin(),
    };
    let step = next_step(
        &stall,
        observations.ci_heals.get(&pr),
        &observations.ci_setup,
        &w.config.merge,
        w.now,
    );
    let escalate = |w: &mut Working<'_>, reason: String| {
        w.transition(
            id,
            TaskState::blocked(BlockReason::AwaitingHuman),
            None,
            Some(None),
            "judge.ci_never_started",
            reason,
        );
    };
    match step {
        StallStep::Diagnose {
            comment,
            dispatch,
            escalate: question,
        } => {
            let why = match &dispatch {
                Some(workflow) => format!(
                    "PR #{pr}: expected checks never started on {} ({}): comment, and dispatch `{workflow}` once",
                    short_sha(head_sha),
                    missing.join(", ")
                ),
                None => format!(
                    "PR #{pr}: expected checks never started on {} ({}): comment once",
                    short_sha(head_sha),
                    missing.join(", ")
                ),
            };
            w.decide(
                Some(id),
                "judge.ci_diagnosis",
                Action::HealCi {
                    pr,
                    head_sha: head_sha.to_string(),
                    branch: branch.to_string(),
                    comment,
                    dispatch,
                },
                why,
            );
            if let Some(question) = question {
                escalate(w, question);
            }
        }
        StallStep::Wait { until, reason } => {
            w.wait(id, Some(until), "judge.ci_dispatched", reason);
        }
        StallStep::Escalate { reason } => escalate(w, reason),
    }
}

/// A PR off the configured base (renamed or deleted): retargeted once, else a person decides.
/// `true` when that decided the task's next step.
pub(super) fn retarget_or_escalate(
    w: &mut Working<'_>,
    id: &TaskId,
    pr: u64,
    state: Option<PullState>,
) -> bool {
    let open = match state {
        Some(PullState::Open) => true,
        Some(PullState::Closed) => false,
        Some(PullState::Merged) | None => return false,
    };
    let observations = &w.snapshot.observations;
    let step = base_step(
        id.as_str(),
        pr,
        observations.pull_bases.get(&pr).map(String::as_str),
        &w.config.base_branch,
        open,
        observations.retargeted.get(&pr).map(String::as_str),
    );
    match step {
        BaseStep::Fine => false,
        BaseStep::Retarget { from } => {
            let to = w.config.base_branch.clone();
            let reason =
                format!("PR #{pr} targets `{from}`, not the base branch `{to}`: retargeted (once)");
            w.decide(
                Some(id),
                "judge.retarget_pr",
                Action::RetargetPull { pr, from, to },
                reason,
            );
            true
        }
        BaseStep::Escalate { reason } => {
            w.transition(
                id,
                TaskState::blocked(BlockReason::AwaitingHuman),
                None,
                Some(None),
                "judge.pr_base_gone",
                reason,
            );
            true
        }
    }
}

//! Recovery's decisions about a github-mode task's PR and its CI, from the rules of
//! `engine::stall` and `engine::ci_start`: CI started on a head once it passed the scan and,
//! if configured, the review (issue 36, `scan.ci`), CI that never started (diagnose, dispatch,
//! escalate) and a PR off the base branch (retarget, escalate). Not for: the rules themselves
//! (those two modules), sending the dispatch or the comment (`tick::ci_gate`), or CI's checks
//! that did run (`engine::gate`, applied in `review.rs`).

use super::super::ci_start::{ci_start_step, CiStartStep, Head};
use super::super::stall::{base_step, next_step, BaseStep, Stall, StallStep};
use super::super::verdict::short_sha;
use super::super::{Action, PullState, Working};
use crate::config::CiStart;
use crate::model::{BlockReason, Run, TaskId, TaskKind, TaskState};
use crate::time::Timestamp;

/// What comes before the CI gate of a head opentiger pushed (issue 36, `scan.ci`).
pub(super) enum BeforeGate {
    /// The gate runs, its grace period and timeout counted from here (the push, or CI's start
    /// on purpose).
    Gate(Timestamp),
    /// The judge reviews the head before any CI runs on it (`after-review`).
    ReviewFirst,
    /// Decided here: CI started, or a person asked.
    Decided,
}

/// Issue 36 (`scan.ci`): what comes before the CI gate of a head opentiger pushed.
pub(super) fn start_ci(
    w: &mut Working<'_>,
    id: &TaskId,
    run: &Run,
    pr: u64,
    people_approved: bool,
) -> BeforeGate {
    let pushed_at = run.finished_at.unwrap_or(run.started_at);
    // A person's PR: their pushes start their CI.
    if w.tasks[id].kind == TaskKind::PrReview {
        return BeforeGate::Gate(pushed_at);
    }
    let observations = &w.snapshot.observations;
    let pushed = run.head_sha.clone().unwrap_or_default();
    let head = Head {
        pushed: &pushed,
        observed: observations
            .pull_checks
            .get(&pr)
            .map(|o| o.head_sha.as_str()),
        approved: people_approved || observations.judge_approved.contains(&pushed),
    };
    let step = ci_start_step(
        w.config.scan.ci,
        head,
        observations.ci_heals.get(&pr),
        &observations.ci_setup,
    );
    match step {
        CiStartStep::Gate { since } => BeforeGate::Gate(since.unwrap_or(pushed_at)),
        CiStartStep::ReviewFirst => BeforeGate::ReviewFirst,
        CiStartStep::Start { workflows } => {
            let reason = format!(
                "PR #{pr}: {} passed the threat scan{}: start {} on it, once",
                short_sha(&pushed),
                if w.config.scan.ci == CiStart::AfterReview {
                    " and was approved"
                } else {
                    ""
                },
                super::super::stall::quoted(&workflows)
            );
            let branch = run.branch.clone().unwrap_or_default();
            w.decide(
                Some(id),
                "judge.start_ci",
                Action::StartCi {
                    pr,
                    head_sha: pushed.clone(),
                    branch,
                    workflows,
                },
                reason,
            );
            BeforeGate::Decided
        }
        CiStartStep::CannotStart { reason } => {
            w.transition(
                id,
                TaskState::blocked(BlockReason::AwaitingHuman),
                None,
                Some(None),
                "judge.ci_cannot_start",
                format!("PR #{pr}: {reason}"),
            );
            BeforeGate::Decided
        }
    }
}

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
            let why = if dispatch.is_empty() {
                format!(
                    "PR #{pr}: expected checks never started on {} ({}): comment once",
                    short_sha(head_sha),
                    missing.join(", ")
                )
            } else {
                format!(
                    "PR #{pr}: expected checks never started on {} ({}): comment, and dispatch {} once",
                    short_sha(head_sha),
                    missing.join(", "),
                    super::super::stall::quoted(&dispatch)
                )
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

//! What a judge's decision does to the task it judged (DESIGN §8; spec §2.4 step 8 with the
//! bounds of spec §8 items 6 and 9 enforced).
//!
//! - merged → `done`;
//! - request changes → an AutoFix child carrying the findings, on the same branch; the source
//!   waits in `blocked(needs_rework)` and follows the child. At most `max_autofix_attempts`
//!   children, then a person decides;
//! - the judge itself failed (agent down, bad verdict) → judged again later, at most
//!   `retry.max_judge_retries` times, then a person decides. A failed review never approves;
//! - the branch conflicts with the base (or the base kept moving under `merge_attempts` merges) →
//!   a conflict-fix child merges the base into the branch and resolves it, at most
//!   `max_conflict_autofix_attempts` times; then the goal is recreated from the base (old PR
//!   closed, a new task and branch), at most `max_recreate_attempts` times; then a person decides.
//!
//! Not for: reaching the conclusion (`runner::judge`: the checks, the review, the merge), or
//! CI's word on the head before the review (`engine::gate`).

mod conflict;
mod refusal;
pub use refusal::merge_refusal;

use super::followup::autofix_child;
use crate::config::Config;
use crate::model::{AttemptKey, Attempts, BlockReason, Task, TaskId, TaskKind, TaskState};
use crate::time::Timestamp;
use conflict::conflict_recovery;

/// What the judge concluded about one run.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum JudgeConclusion {
    /// Approved and merged into the base branch.
    Merged { commit: String },
    /// Changes requested (failed checks, policy, or the reviewer's findings).
    RequestChanges {
        summary: String,
        findings: Vec<String>,
    },
    /// The judge could not decide (its agent failed, or returned no valid verdict).
    Failed { error: String },
    /// Approved, but the base branch kept moving under the merge (other merges won the race).
    BaseMoved { base: String },
    /// The branch cannot be merged with the base without resolving conflicts.
    Conflict { base: String, files: Vec<String> },
    /// github mode: the PR was behind the base; the base was merged into its branch (checked
    /// again) and pushed as `head`, which CI and the judge look at next.
    Updated { head: String },
    /// The forge refuses the merge for a reason no follow-up task can fix (branch protection).
    Refused { reason: String },
    /// Approved and left for a person to merge (a person's PR, `backlog.merge_imported_prs` off).
    Approved { summary: String },
    /// Issue 36 (`scan.ci: after-review`): approved before any CI ran on the head; CI starts on
    /// it now, and it is merged once its checks pass, without a second review.
    ApprovedBeforeCi { summary: String },
    /// Approved, but the last look before the merge found it held by people (a standing
    /// request for changes, a hold label or comment; issue 26): not merged, looked at again.
    Held { reason: String },
    /// Approved inside the review window (issue 38): the approval is kept, bound to the head,
    /// and the PR merges at the first tick after `until` unless people hold it first.
    WindowOpen { until: Timestamp, summary: String },
}

/// The change a judged task belongs to, and the follow-up tasks it already had (the bounds of
/// spec §8 items 6 and 9 count over all of them).
#[derive(Clone, Debug, PartialEq)]
pub struct Lineage {
    /// The task whose branch and PR hold the change: the judged task, or the source of a fix.
    pub root: TaskId,
    /// The task the goal came from: `root`, or the source of `root` when it is a recreation.
    pub origin: TaskId,
    /// AutoFix children of `root`.
    pub autofixes: u32,
    /// Conflict-fix children of `root`.
    pub conflict_fixes: u32,
    /// Recreations of `origin`.
    pub recreates: u32,
}

impl Lineage {
    /// `find` looks a task up; `children` counts a task's children of one kind.
    pub fn of(
        task: &Task,
        find: impl Fn(&TaskId) -> Option<Task>,
        children: impl Fn(&TaskId, TaskKind) -> u32,
    ) -> Lineage {
        let root = match (task.kind, &task.parent_task_id) {
            (TaskKind::Autofix | TaskKind::AutofixConflict, Some(parent)) => parent.clone(),
            _ => task.id.clone(),
        };
        let root_task = if root == task.id {
            Some(task.clone())
        } else {
            find(&root)
        };
        let origin = match root_task {
            Some(Task {
                kind: TaskKind::Recreate,
                parent_task_id: Some(origin),
                ..
            }) => origin,
            _ => root.clone(),
        };
        Lineage {
            autofixes: children(&root, TaskKind::Autofix),
            conflict_fixes: children(&root, TaskKind::AutofixConflict),
            recreates: children(&origin, TaskKind::Recreate),
            root,
            origin,
        }
    }

    /// A task with no follow-ups yet.
    pub fn fresh(task: &Task) -> Lineage {
        Lineage::of(task, |_| None, |_, _| 0)
    }
}

/// The transition and the child task a conclusion causes.
#[derive(Clone, Debug, PartialEq)]
pub struct VerdictDecision {
    pub to: TaskState,
    pub attempts: Option<Attempts>,
    pub reason: String,
    pub create: Option<Task>,
    /// The judged run goes back to "not judged" so it is reviewed again.
    pub rejudge: bool,
    /// When a failed review is tried again.
    pub next_attempt_at: Option<Timestamp>,
    /// The judged run now stands for this head (the base was merged into its branch).
    pub rebind_head: Option<String>,
}

pub fn decide_verdict(
    task: &Task,
    conclusion: &JudgeConclusion,
    lineage: &Lineage,
    config: &Config,
    now: Timestamp,
) -> VerdictDecision {
    if task.kind == TaskKind::PrReview {
        if let Some(reviewed) = person_pr_reviewed(conclusion) {
            return VerdictDecision {
                to: TaskState::DONE,
                attempts: None,
                reason: reviewed,
                create: None,
                rejudge: false,
                next_attempt_at: None,
                rebind_head: None,
            };
        }
    }
    match conclusion {
        JudgeConclusion::Approved { summary } => VerdictDecision {
            to: TaskState::DONE,
            attempts: None,
            reason: format!("approved, left for a person to merge: {summary}"),
            create: None,
            rejudge: false,
            next_attempt_at: None,
            rebind_head: None,
        },
        JudgeConclusion::ApprovedBeforeCi { summary } => VerdictDecision {
            to: TaskState::blocked(BlockReason::AwaitingJudge),
            attempts: None,
            reason: format!(
                "approved before CI ran (scan.ci: after-review): {summary}; CI starts on the head, and it is merged once its checks pass"
            ),
            create: None,
            // Claimable again: once CI passed, the judge merges the head it approved, without
            // reviewing it again (`runner::judge`, `ReviewBrief::approved_before`).
            rejudge: true,
            next_attempt_at: None,
            rebind_head: None,
        },
        JudgeConclusion::Merged { commit } => VerdictDecision {
            to: TaskState::DONE,
            attempts: None,
            reason: format!("approved and merged as {}", short_sha(commit)),
            create: None,
            rejudge: false,
            next_attempt_at: None,
            rebind_head: None,
        },
        JudgeConclusion::RequestChanges { summary, findings } => {
            let max = config.limits.max_autofix_attempts;
            let autofix_children = lineage.autofixes;
            if autofix_children >= max {
                return VerdictDecision {
                    to: TaskState::blocked(BlockReason::AwaitingHuman),
                    attempts: None,
                    reason: format!(
                        "changes requested again after {autofix_children} AutoFix attempts (limit {max}): {summary}. Decide: fix the branch by hand and `opentiger task retry {}`, or `opentiger task cancel {}`",
                        task.id, task.id
                    ),
                    create: None,
                    rejudge: false,
                    next_attempt_at: None,
                    rebind_head: None,
                };
            }
            let mut child = autofix_child(task, summary, findings, autofix_children + 1, max, now);
            child.parent_task_id = Some(lineage.root.clone());
            hand_over(
                task,
                lineage,
                child,
                format!(
                    "changes requested: {summary}; AutoFix {{child}} ({}/{max}) works on the same branch",
                    autofix_children + 1
                ),
            )
        }
        JudgeConclusion::Conflict { base, files } => {
            let shown = files.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
            conflict_recovery(
                task,
                lineage,
                &format!("the branch conflicts with {base} ({shown})"),
                files,
                config,
                now,
            )
        }
        // `merge_attempts` counts the first merge too; each update from the base is one more.
        JudgeConclusion::BaseMoved { base } => merge_attempt(
            task,
            lineage,
            config,
            now,
            |n, limit| format!("{base} moved under {n} merge attempts (limit {limit})"),
            |n, limit| VerdictDecision {
                to: TaskState::blocked(BlockReason::AwaitingJudge),
                attempts: Some(task.attempts.bumped(AttemptKey::Merge)),
                reason: format!("approved, but {base} moved while merging: merged again later (merge attempt {n}/{limit})"),
                create: None,
                rejudge: true,
                next_attempt_at: Some(now.plus(doubling(config.merge.retry_seconds, n))),
                rebind_head: None,
            },
        ),
        // A base that never stops moving ends in conflict recovery, not in an endless update loop.
        JudgeConclusion::Updated { head } => merge_attempt(
            task,
            lineage,
            config,
            now,
            |n, limit| format!("the base moved under {n} updates of the branch (limit {limit})"),
            |n, limit| VerdictDecision {
                to: TaskState::blocked(BlockReason::AwaitingJudge),
                attempts: Some(task.attempts.bumped(AttemptKey::Merge)),
                reason: format!(
                    "approved, but behind the base: the base was merged into the branch as {} (update {n}/{limit}); CI and the judge look at it next",
                    short_sha(head)
                ),
                create: None,
                rejudge: true,
                next_attempt_at: None,
                rebind_head: Some(head.clone()),
            },
        ),
        // People have the last word (issue 26): the merge waits for them, and nothing is spent
        // from a budget; the PR gate says what holds it until it is lifted.
        JudgeConclusion::Held { reason } => VerdictDecision {
            to: TaskState::blocked(BlockReason::AwaitingJudge),
            attempts: None,
            reason: format!("approved, but not merged: {reason}"),
            create: None,
            rejudge: true,
            next_attempt_at: None,
            rebind_head: None,
        },
        // Issue 38: people keep their window. Nothing is spent from a budget: the approval
        // stands, and the first tick after the window merges without asking the judge again.
        JudgeConclusion::WindowOpen { until, summary } => VerdictDecision {
            to: TaskState::blocked(BlockReason::AwaitingJudge),
            attempts: None,
            reason: format!(
                "approved: {summary}; merges after the review window, at {until} \
                 (merge.review_window_minutes)"
            ),
            create: None,
            rejudge: true,
            next_attempt_at: Some(*until),
            rebind_head: None,
        },
        JudgeConclusion::Refused { reason } => VerdictDecision {
            to: TaskState::blocked(BlockReason::AwaitingHuman),
            attempts: None,
            reason: format!(
                "approved, but {reason}. Decide: merge it by hand (the task follows), or change the rule and `opentiger task retry {}`",
                task.id
            ),
            create: None,
            rejudge: false,
            next_attempt_at: None,
            rebind_head: None,
        },
        JudgeConclusion::Failed { error } if super::classify::is_quota_message(error) => {
            // The judge's agent is out of quota: wait it out like a run would (spec §3.4, the
            // provider's hint first), on the quota budget, not the judge retry budget.
            let waits = task.attempts.get(AttemptKey::Quota);
            let max = config.retry.quota.max_waits;
            let wait = super::backoff::quota_cooldown_ms(
                &crate::engine::outcome::quota_backoff(config),
                task.id.as_str(),
                waits,
                error,
                now.0,
            );
            bounded_rejudge(
                task,
                AttemptKey::Quota,
                max,
                now.plus(wait),
                format!("the judge's agent is out of quota ({error}): reviewed again after the wait (quota wait {}/{max})", waits + 1),
                format!(
                    "the judge's agent hit its quota {} times (limit {max}): {error}. A failed review is never an approval. Decide: check the judge agent's plan or key, then `opentiger task retry {}`",
                    waits + 1,
                    task.id
                ),
            )
        }
        JudgeConclusion::Failed { error } => {
            let limit = config.retry.max_judge_retries;
            let n = task.attempts.get(AttemptKey::Judge) + 1;
            bounded_rejudge(
                task,
                AttemptKey::Judge,
                limit,
                now.plus(doubling(config.retry.cooldown_seconds, n)),
                format!("the judge failed ({error}): reviewed again next tick (judge retry {n}/{limit})"),
                format!(
                    "the judge failed {n} times (limit {limit}): {error}. A failed review is never an approval. Decide: fix the judge agent and `opentiger task retry {}`",
                    task.id
                ),
            )
        }
    }
}

/// A person's PR is reviewed, never worked on: nothing is pushed to their branch, so a verdict
/// other than a failed review or a lost merge race ends the review (the PR comment says what to
/// do; a new push is reviewed again as a new task). `None`: decided like any change.
fn person_pr_reviewed(conclusion: &JudgeConclusion) -> Option<String> {
    Some(match conclusion {
        JudgeConclusion::Merged { .. }
        | JudgeConclusion::Failed { .. }
        | JudgeConclusion::BaseMoved { .. }
        | JudgeConclusion::Updated { .. }
        | JudgeConclusion::ApprovedBeforeCi { .. }
        | JudgeConclusion::Held { .. }
        | JudgeConclusion::WindowOpen { .. } => return None,
        JudgeConclusion::Approved { summary } => {
            format!("approved, left for a person to merge: {summary}")
        }
        JudgeConclusion::RequestChanges { summary, .. } => {
            format!(
                "changes requested ({summary}): the author decides; a new push is reviewed again"
            )
        }
        JudgeConclusion::Conflict { base, .. } => {
            format!("conflicts with {base}: the author resolves it; a new push is reviewed again")
        }
        JudgeConclusion::Refused { reason } => format!("approved, but {reason}"),
    })
}

/// Merge attempt `n` of `limits.merge_attempts`: `retry(n, limit)` while attempts are left, then
/// conflict recovery saying `exhausted(n, limit)`.
fn merge_attempt(
    task: &Task,
    lineage: &Lineage,
    config: &Config,
    now: Timestamp,
    exhausted: impl FnOnce(u32, u32) -> String,
    retry: impl FnOnce(u32, u32) -> VerdictDecision,
) -> VerdictDecision {
    let limit = config.limits.merge_attempts;
    let n = task.attempts.get(AttemptKey::Merge) + 1;
    if n < limit {
        return retry(n, limit);
    }
    let mut d = conflict_recovery(task, lineage, &exhausted(n, limit), &[], config, now);
    d.attempts = Some(task.attempts.bumped(AttemptKey::Merge));
    d
}

/// The judged task hands the change to `child`: it waits for it (`needs_rework`) when it is the
/// change's root, or gives way to it (`cancelled`) when it is itself a fix of that root — one
/// chain per change, which the root follows. `{child}` in `reason` names the child.
fn hand_over(task: &Task, lineage: &Lineage, child: Task, reason: String) -> VerdictDecision {
    let reason = reason.replace("{child}", child.id.as_str());
    let (to, reason) = if task.id == lineage.root {
        (TaskState::blocked(BlockReason::NeedsRework), reason)
    } else {
        (
            TaskState::CANCELLED,
            format!(
                "{reason}; superseded by {}, which {} follows",
                child.id, lineage.root
            ),
        )
    };
    VerdictDecision {
        to,
        attempts: None,
        reason,
        create: Some(child),
        rejudge: false,
        next_attempt_at: None,
        rebind_head: None,
    }
}

/// A review to do again at `retry_at` while `key` has retries left, else a person decides.
fn bounded_rejudge(
    task: &Task,
    key: AttemptKey,
    retries: u32,
    retry_at: Timestamp,
    retry: String,
    give_up: String,
) -> VerdictDecision {
    let attempts = Some(task.attempts.bumped(key));
    if task.attempts.get(key) >= retries {
        VerdictDecision {
            to: TaskState::blocked(BlockReason::AwaitingHuman),
            attempts,
            reason: give_up,
            create: None,
            rejudge: false,
            next_attempt_at: None,
            rebind_head: None,
        }
    } else {
        VerdictDecision {
            to: TaskState::blocked(BlockReason::AwaitingJudge),
            attempts,
            reason: retry,
            create: None,
            rejudge: true,
            next_attempt_at: Some(retry_at),
            rebind_head: None,
        }
    }
}

/// The wait before try `n` (1-based) of something that failed: `base_seconds`, doubled each
/// time, at most a day (milliseconds).
pub fn doubling(base_seconds: u32, n: u32) -> i64 {
    let factor = 1_i64 << n.saturating_sub(1).min(20);
    (i64::from(base_seconds) * crate::time::SECOND)
        .saturating_mul(factor)
        .min(24 * crate::time::HOUR)
}

/// The first ten characters of a commit id, for messages.
pub fn short_sha(commit: &str) -> &str {
    commit.get(..10).unwrap_or(commit)
}

#[cfg(test)]
#[path = "verdict_tests.rs"]
mod tests;

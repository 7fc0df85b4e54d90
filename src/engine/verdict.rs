//! What a judge's decision does to the task it judged (DESIGN §8; spec §2.4 step 8 with the
//! bounds of spec §8 items 6 and 9 enforced).
//!
//! - merged → `done`;
//! - request changes → an AutoFix child carrying the findings, on the same branch; the source
//!   waits in `blocked(needs_rework)` and follows the child. At most `max_autofix_attempts`
//!   children, then a person decides;
//! - the judge itself failed (agent down, bad verdict) → judged again later, at most
//!   `retry.max_judge_retries` times, then a person decides. A failed review never approves.

use super::Action;
use crate::config::Config;
use crate::model::{
    short_hash, AttemptKey, Attempts, BlockReason, Lane, Risk, Task, TaskId, TaskKind, TaskState,
};
use crate::time::Timestamp;

/// What the judge concluded about one run.
#[derive(Clone, Debug, PartialEq)]
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
}

/// `autofix_children`: how many AutoFix children this task already has.
pub fn decide_verdict(
    task: &Task,
    conclusion: &JudgeConclusion,
    autofix_children: u32,
    config: &Config,
    now: Timestamp,
) -> VerdictDecision {
    match conclusion {
        JudgeConclusion::Merged { commit } => VerdictDecision {
            to: TaskState::DONE,
            attempts: None,
            reason: format!("approved and merged as {}", short_sha(commit)),
            create: None,
            rejudge: false,
            next_attempt_at: None,
        },
        JudgeConclusion::RequestChanges { summary, findings } => {
            let max = config.limits.max_autofix_attempts;
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
                };
            }
            let mut child = autofix_child(task, summary, findings, autofix_children + 1, max, now);
            let mut to = TaskState::blocked(BlockReason::NeedsRework);
            let mut reason = format!(
                "changes requested: {summary}; AutoFix {} ({}/{max}) works on the same branch",
                child.id,
                autofix_children + 1
            );
            // A fix of a fix: one chain per change. The new fix hangs off the same root, so it
            // works on the root's branch and PR and the root follows it; this fix is superseded.
            if let (TaskKind::Autofix | TaskKind::AutofixConflict, Some(root)) =
                (task.kind, &task.parent_task_id)
            {
                child.parent_task_id = Some(root.clone());
                to = TaskState::CANCELLED;
                reason = format!(
                    "changes requested: {summary}; superseded by AutoFix {} ({}/{max}) of {root} on the same branch",
                    child.id,
                    autofix_children + 1
                );
            }
            VerdictDecision {
                to,
                attempts: None,
                reason,
                create: Some(child),
                rejudge: false,
                next_attempt_at: None,
            }
        }
        JudgeConclusion::BaseMoved { base } => {
            // `merge_attempts` counts the first merge too: its retries are one fewer.
            let limit = config.limits.merge_attempts;
            let n = task.attempts.get(AttemptKey::Merge) + 1;
            bounded_rejudge(
                task,
                AttemptKey::Merge,
                limit.saturating_sub(1),
                now.plus(i64::from(config.merge.retry_seconds) * crate::time::SECOND),
                format!("approved, but {base} moved while merging: merged again later (merge attempt {n}/{limit})"),
                format!("approved, but {base} moved under {n} merge attempts (limit {limit}). Decide: `opentiger task retry {}` when merges calm down", task.id),
            )
        }
        JudgeConclusion::Failed { error } => {
            let limit = config.retry.max_judge_retries;
            let n = task.attempts.get(AttemptKey::Judge) + 1;
            bounded_rejudge(
                task,
                AttemptKey::Judge,
                limit,
                now.plus(i64::from(config.retry.cooldown_seconds) * crate::time::SECOND),
                format!("the judge failed ({error}): reviewed again next tick (judge retry {n}/{limit})"),
                format!(
                    "the judge failed {n} times (limit {limit}): {error}. A failed review is never an approval. Decide: fix the judge agent and `opentiger task retry {}`",
                    task.id
                ),
            )
        }
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
        }
    } else {
        VerdictDecision {
            to: TaskState::blocked(BlockReason::AwaitingJudge),
            attempts,
            reason: retry,
            create: None,
            rejudge: true,
            next_attempt_at: Some(retry_at),
        }
    }
}

/// The first ten characters of a commit id, for messages.
pub(crate) fn short_sha(commit: &str) -> &str {
    commit.get(..10).unwrap_or(commit)
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
    let id = TaskId(short_hash(&["autofix", source.id.as_str(), &n.to_string()]));
    // The goal's title, without the "AutoFix k/m: " of a fix being fixed again.
    let title = source
        .title
        .split_once(": ")
        .filter(|(prefix, _)| prefix.starts_with("AutoFix ") && source.kind == TaskKind::Autofix)
        .map_or(source.title.as_str(), |(_, rest)| rest);
    let mut child = Task::new(
        id,
        &format!("AutoFix {n}/{max}: {title}"),
        &source.goal,
        now,
    );
    child.kind = TaskKind::Autofix;
    child.role = source.role;
    child.lane = Lane::ConflictRecovery;
    child.priority = source.priority.max(0) + 80;
    child.risk = Risk::Medium.max(source.risk);
    child.parent_task_id = Some(source.id.clone());
    child.rework_depth = source.rework_depth;
    child.allowed_paths = source.allowed_paths.clone();
    child.commands = source.commands.clone();
    child.touches = source.touches.clone();
    child.target_area = source.target_area.clone();
    child.issue_number = source.issue_number;
    child.source_pr = source.source_pr;
    let mut notes = format!("The review of this change asked for changes: {summary}\n");
    for f in findings {
        notes.push_str(&format!("- {f}\n"));
    }
    notes.push_str("Fix these findings on the existing branch; keep the rest of the change.");
    if !source.notes.trim().is_empty() {
        notes = format!("{}\n\n{notes}", source.notes.trim_end());
    }
    child.notes = notes;
    child.status_reason = Some(format!("created from the review of {}", source.id));
    child
}

/// The decisions a verdict becomes, for the store to apply like any plan.
pub fn verdict_actions(
    task: &Task,
    decision: &VerdictDecision,
) -> Vec<(Option<TaskId>, &'static str, Action, String)> {
    let mut out = Vec::new();
    if let Some(child) = &decision.create {
        out.push((
            Some(child.id.clone()),
            "judge.autofix_child",
            Action::CreateTask {
                task: Box::new(child.clone()),
            },
            format!("AutoFix for {}", task.id),
        ));
    }
    if decision.to != task.state() {
        out.push((
            Some(task.id.clone()),
            "judge.verdict",
            Action::Transition {
                from: task.state(),
                to: decision.to,
                attempts: decision.attempts.clone(),
                next_attempt_at: None,
            },
            decision.reason.clone(),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::super::testkit::{task, TaskExt, NOW};
    use super::*;

    #[test]
    fn conclusions_move_the_task() {
        let config = Config::default();
        let judged = || task("a").blocked(BlockReason::AwaitingJudge);
        let changes = JudgeConclusion::RequestChanges {
            summary: "tests missing".into(),
            findings: vec!["add a test for sub".into()],
        };
        let failed = JudgeConclusion::Failed {
            error: "judge agent exited 1".into(),
        };
        let cases: Vec<(&str, Task, JudgeConclusion, u32, TaskState, bool, &str)> = vec![
            (
                "merged",
                judged(),
                JudgeConclusion::Merged {
                    commit: "abcdef1234567".into(),
                },
                0,
                TaskState::DONE,
                false,
                "merged as abcdef1234",
            ),
            (
                "first request",
                judged(),
                changes.clone(),
                0,
                TaskState::blocked(BlockReason::NeedsRework),
                true,
                "(1/3) works on the same branch",
            ),
            (
                "third request",
                judged(),
                changes.clone(),
                2,
                TaskState::blocked(BlockReason::NeedsRework),
                true,
                "(3/3)",
            ),
            (
                "bound hit",
                judged(),
                changes.clone(),
                3,
                TaskState::blocked(BlockReason::AwaitingHuman),
                false,
                "after 3 AutoFix attempts (limit 3)",
            ),
            (
                "judge down",
                judged(),
                failed.clone(),
                0,
                TaskState::blocked(BlockReason::AwaitingJudge),
                false,
                "judge retry 1/3",
            ),
            (
                "judge down too often",
                judged().attempts(AttemptKey::Judge, 3),
                failed,
                0,
                TaskState::blocked(BlockReason::AwaitingHuman),
                false,
                "never an approval",
            ),
            (
                "merge race",
                judged(),
                JudgeConclusion::BaseMoved {
                    base: "main".into(),
                },
                0,
                TaskState::blocked(BlockReason::AwaitingJudge),
                false,
                "merge attempt 1/3",
            ),
            (
                "merge races bounded",
                judged().attempts(AttemptKey::Merge, 2),
                JudgeConclusion::BaseMoved {
                    base: "main".into(),
                },
                0,
                TaskState::blocked(BlockReason::AwaitingHuman),
                false,
                "moved under 3 merge attempts",
            ),
        ];
        for (name, t, conclusion, children, to, creates, reason) in cases {
            let d = decide_verdict(&t, &conclusion, children, &config, NOW);
            assert_eq!(d.to, to, "{name}");
            assert_eq!(d.create.is_some(), creates, "{name}");
            assert!(d.reason.contains(reason), "{name}: {}", d.reason);
        }
    }

    #[test]
    fn autofix_children_carry_findings_and_are_deterministic() {
        let source = task("a");
        let a = autofix_child(&source, "tests missing", &["add a test".into()], 1, 3, NOW);
        let b = autofix_child(&source, "tests missing", &["add a test".into()], 1, 3, NOW);
        assert_eq!(a.id, b.id);
        assert_eq!(a.parent_task_id, Some(source.id.clone()));
        assert_eq!(a.kind, TaskKind::Autofix);
        assert!(a.notes.contains("- add a test"), "{}", a.notes);
        assert_eq!(a.title, "AutoFix 1/3: task a");
        assert_ne!(a.id, autofix_child(&source, "x", &[], 2, 3, NOW).id);
    }
}

#[cfg(test)]
mod chain_tests {
    use super::super::testkit::{task, TaskExt, NOW};
    use super::*;

    /// A fix whose own review asks for changes is superseded by the next fix of the same root:
    /// one branch and PR per change, one chain the root follows, one budget for all of it.
    #[test]
    fn a_fix_of_a_fix_hangs_off_the_root() {
        let config = Config::default();
        let root = task("root").with(|t| t.title = "Add a greeting".into());
        let first = autofix_child(&root, "tests red", &[], 1, 3, NOW);
        assert_eq!(first.title, "AutoFix 1/3: Add a greeting");
        let mut judged = first.clone();
        judged.status = crate::model::TaskStatus::Blocked;
        judged.block_reason = Some(BlockReason::AwaitingJudge);
        let conclusion = JudgeConclusion::RequestChanges {
            summary: "still red".into(),
            findings: vec!["fix test_sub".into()],
        };
        let d = decide_verdict(&judged, &conclusion, 1, &config, NOW);
        let second = d.create.expect("a second fix");
        assert_eq!(second.parent_task_id, Some(root.id.clone()));
        assert_eq!(second.title, "AutoFix 2/3: Add a greeting");
        assert_eq!(d.to, TaskState::CANCELLED);
        assert!(d.reason.contains("superseded by AutoFix"), "{}", d.reason);
        assert_eq!(
            crate::workspace::task_branch(&second),
            crate::workspace::task_branch(&first),
            "same branch, same PR"
        );
        // The budget is the root's: the third request after three fixes waits on a person.
        let d = decide_verdict(&judged, &conclusion, 3, &config, NOW);
        assert_eq!(d.to, TaskState::blocked(BlockReason::AwaitingHuman));
        assert!(d.create.is_none());
    }
}

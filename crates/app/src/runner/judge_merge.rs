//! The end of a review: a review no judge agent needs (people's approval, or this head's own);
//! in github mode the approved head merged by GitHub, bound to the reviewed SHA, after a last look
//! at what people say (issue 26: a request for changes or a hold seen now stops it); in local-git
//! the commit that puts it on the base; a conflict; an approval kept through the review window
//! (issue 38). Not for: the review (`runner::judge_review`), the GitHub calls (`tick::publish`
//! implements `PullMerger`), or what a conclusion does to the task (`engine::verdict`).

use super::{JudgeResult, Review};
use crate::engine::objection::LastWord;
use crate::engine::verdict::{short_sha, JudgeConclusion};
use crate::forge::calls::MergeAnswer;
use crate::model::{Run, Task, Verdict};
use crate::store::JudgementRow;

/// How an approved change lands when it is a pull request (github mode): the forge merges it.
/// Without one the judge advances the base branch itself (local-git).
pub trait PullMerger {
    /// Merges PR `pr` if its head is still `head`; the message carries `Task: <id>` so a merge
    /// whose outcome was lost is recognised on the base.
    fn merge(&self, pr: u64, head: &str, title: &str, message: &str)
        -> Result<MergeAnswer, String>;

    /// Issue 26: what people say about `head` of PR `pr`, read again just before it is
    /// merged (their reviews, the PR's hold labels, a `/opentiger hold`). `Err` when it cannot
    /// be read: the merge does not happen then.
    fn last_word(&self, pr: u64, head: &str) -> Result<LastWord, String>;

    /// Issue 28: the approval is published on the head (the judge's check run) before the
    /// merge, so a branch rule requiring that check lets the merge through. Visibility only.
    fn approved(&self, head: &str, judgement: &JudgementRow);
}

/// A review that needs no judge agent: people's approval where `merge.human_approval:
/// required`, or the judge's own approval of this very head before CI ran (issue 36, `scan.ci:
/// after-review`: CI passed since, and the head is the one approved).
pub(super) fn settled(
    act: &crate::runner::Act<'_>,
    asked: super::ReviewBrief<'_>,
) -> Option<Review> {
    let by_people = act.config.merge.human_approval == crate::config::HumanApproval::Required
        && !asked.approved_by.is_empty();
    let summary = if by_people {
        let who: Vec<String> = asked.approved_by.iter().map(|a| format!("@{a}")).collect();
        format!(
            "approved by {} (merge.human_approval: required)",
            who.join(", ")
        )
    } else {
        format!(
            "approved on this head at an earlier review (CI passed since, or the review window ended): {}",
            asked.approved_before?
        )
    };
    Some(Review {
        verdict: Verdict::Approve,
        summary,
        findings: Vec::new(),
        criteria: Vec::new(),
    })
}

/// github mode: the approved head is merged by GitHub, bound to the reviewed SHA; reviewed
/// `before_ci` (issue 36), the approval is recorded and CI starts on the head first.
pub(super) fn merge_pull(
    merger: &dyn PullMerger,
    task: &Task,
    run: &Run,
    head: &str,
    review: Review,
    before_ci: bool,
) -> JudgeResult {
    let failed = |error: String| JudgeResult {
        spend: None,
        verification: Vec::new(),
        conclusion: JudgeConclusion::Failed { error },
        judgement: None,
    };
    let Some(pr) = run.pr_number else {
        return failed(format!("run {} recorded no pull request", run.id));
    };
    if before_ci {
        return JudgeResult {
            spend: None,
            verification: Vec::new(),
            judgement: Some(review.row(head)),
            conclusion: JudgeConclusion::ApprovedBeforeCi {
                summary: review.summary,
            },
        };
    }
    // People have the last word (issue 26): whatever the review said, a trusted person's
    // standing request for changes or a hold, seen now, keeps the PR from being merged.
    match merger.last_word(pr, head) {
        Ok(LastWord::Clear { .. }) => {}
        Ok(LastWord::Fix { conclusion, .. }) => {
            let row = match &conclusion {
                JudgeConclusion::RequestChanges { summary, findings } => Some(JudgementRow {
                    head_sha: head.to_string(),
                    verdict: Verdict::RequestChanges,
                    summary: summary.clone(),
                    findings: findings.clone(),
                    criteria: Vec::new(),
                }),
                _ => None,
            };
            return JudgeResult {
 spend: None,
verification: Vec::new(),
                conclusion,
                judgement: row,
            };
        }
        Ok(held @ LastWord::Held(_)) => {
            return JudgeResult {
 spend: None,
verification: Vec::new(),
                conclusion: JudgeConclusion::Held {
                    reason: held.held_text().unwrap_or_default(),
                },
                judgement: None,
            }
        }
        Err(e) => {
            return failed(format!(
                "not merged: people's reviews of PR #{pr} could not be read again before the merge: {e}"
            ))
        }
    }
    merger.approved(head, &review.row(head));
    let title = format!("{} (#{pr})", task.title);
    let message = format!("{}\n\nTask: {}", review.summary.trim(), task.id);
    match merger.merge(pr, head, &title, &message) {
        Ok(MergeAnswer::Merged { commit }) => JudgeResult {
            spend: None,
            verification: Vec::new(),
            judgement: Some(review.row(head)),
            conclusion: JudgeConclusion::Merged { commit },
        },
        Ok(MergeAnswer::NotMergeable { message }) => JudgeResult {
            spend: None,
            verification: Vec::new(),
            conclusion: crate::engine::verdict::merge_refusal(pr, &message),
            judgement: None,
        },
        Ok(MergeAnswer::HeadMoved) => failed(format!(
            "PR #{pr} head moved after the review of {}: reviewed again",
            short_sha(head)
        )),
        Err(e) => failed(format!("merging PR #{pr} failed: {e}")),
    }
}

/// The commit that puts the approved change on the base: one new commit on top of the base
/// (squash and rebase) or a merge commit of base and branch.
pub(super) fn merge_commit(
    act: &super::Act<'_>,
    git: &crate::git::Git,
    task: &Task,
    base_head: &str,
    merged: &str,
) -> Result<String, crate::git::GitError> {
    let tree = git.run(&["rev-parse", &format!("{merged}^{{tree}}")])?;
    let message = format!("[opentiger] {}\n\nTask: {}", task.title, task.id);
    match act.config.merge.method {
        crate::config::MergeMethod::Squash | crate::config::MergeMethod::Rebase => {
            git.run(&["commit-tree", &tree, "-p", base_head, "-m", &message])
        }
        crate::config::MergeMethod::Merge => {
            let branch_head = git
                .run(&["rev-parse", &format!("{merged}^2")])
                .unwrap_or_else(|_| merged.to_string());
            git.run(&[
                "commit-tree",
                &tree,
                "-p",
                base_head,
                "-p",
                &branch_head,
                "-m",
                &message,
            ])
        }
    }
}

/// The branch conflicts with the base: changes requested naming the files.
pub(super) fn conflict(base: &str, head: &str, files: Vec<String>) -> JudgeResult {
    JudgeResult {
        spend: None,
        verification: Vec::new(),
        judgement: Some(JudgementRow {
            head_sha: head.to_string(),
            verdict: Verdict::RequestChanges,
            summary: format!("the branch conflicts with {base}"),
            findings: files
                .iter()
                .map(|f| format!("conflicts with {base}: {f}"))
                .collect(),
            criteria: Vec::new(),
        }),
        conclusion: JudgeConclusion::Conflict {
            base: base.to_string(),
            files,
        },
    }
}

/// Issue 38: inside the review window an approval is recorded, bound to the head, and the merge
/// waits for the first tick after it.
pub(super) fn window_open(
    asked: super::ReviewBrief<'_>,
    head: &str,
    review: &Review,
) -> Option<JudgeResult> {
    let until = asked.merge_after?;
    Some(JudgeResult {
        spend: None,
        verification: Vec::new(),
        judgement: Some(review.row(head)),
        conclusion: JudgeConclusion::WindowOpen {
            until,
            summary: review.summary.clone(),
        },
    })
}

/// An approval that stood (through CI, through the review window) is recorded once, not again
/// with the merge it lets through.
pub(super) fn recorded_once(asked: super::ReviewBrief<'_>, result: &mut JudgeResult) {
    let again = result
        .judgement
        .as_ref()
        .is_some_and(|j| j.verdict == Verdict::Approve);
    if asked.approved_before.is_some() && again {
        result.judgement = None;
    }
}

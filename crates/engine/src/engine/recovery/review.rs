//! Tasks on their way to a merge (spec §2.4, DESIGN §8): a review claimed when due (after the
//! review window, before the tick's deadline), a PR followed on GitHub (merged, closed, its CI
//! gate), a person's PR queued again sent back to the judge, a PR superseded by a recreation
//! closed, and a task waiting for the judge with nothing to review run again.
//!
//! Not for: what a verdict does to the task (`engine::verdict`), CI that never started or a PR
//! off its base (`stalls.rs`), or running the review (`runner::judge`).

use super::super::gate::{checks_gate_from, CheckGate};
use super::super::objection::{last_word, LastWord, PeopleSay};
use super::super::verdict::{decide_verdict, short_sha, JudgeConclusion, Lineage};
use super::super::{Action, Working};
use crate::config::HumanApproval;
use crate::model::{AttemptKey, BlockReason, Mode, RunId, RunStatus, TaskId, TaskKind, TaskState};
use crate::time::SECOND;

/// A person's PR review put back in the queue (`task retry`): no worker runs it, the judge
/// reviews its head again.
pub(super) fn review_person_pr_again(w: &mut Working<'_>, id: &TaskId) {
    let run = w
        .task_runs(id)
        .iter()
        .find(|r| r.status == RunStatus::Success)
        .map(|r| r.id.clone());
    let Some(run_id) = run else {
        w.transition(
            id,
            TaskState::CANCELLED,
            None,
            Some(None),
            "recovery.pr_review_without_head",
            "a PR review without the head it reviews: the next push is imported again".to_string(),
        );
        return;
    };
    w.decide(
        Some(id),
        "recovery.pr_review_again",
        Action::ResetJudgeClaim {
            run_id: run_id.clone(),
        },
        format!("review run {run_id} again"),
    );
    w.transition(
        id,
        TaskState::blocked(BlockReason::AwaitingJudge),
        None,
        Some(None),
        "recovery.pr_review_again",
        "queued again by a person: the judge reviews the PR's head again".to_string(),
    );
}

/// A recreation whose goal has been recreated again since (its own conflicts ran out): the
/// newer recreation, which this one gives way to.
pub(super) fn newer_recreation(w: &Working<'_>, id: &TaskId) -> Option<TaskId> {
    let task = &w.tasks[id];
    let origin = task.parent_task_id.as_ref()?;
    if task.kind != TaskKind::Recreate {
        return None;
    }
    w.tasks
        .values()
        .filter(|t| t.kind == TaskKind::Recreate && t.parent_task_id.as_ref() == Some(origin))
        .filter(|t| t.created_at > task.created_at)
        .map(|t| t.id.clone())
        .next()
}

/// github mode: the open PR of a change whose goal is recreated elsewhere is closed, with a
/// comment saying by what (spec §2.4: the old PR is closed when the goal is recreated).
pub(super) fn close_superseded_pull(w: &mut Working<'_>, id: &TaskId, by: &TaskId) {
    let Some(pr) = w.tasks[id].source_pr else {
        return;
    };
    let open =
        w.snapshot.observations.pull_requests.get(&pr) == Some(&super::super::PullState::Open);
    if w.config.mode == Mode::Github && open {
        w.decide(
            Some(id),
            "judge.close_superseded_pr",
            Action::ClosePull {
                pr,
                superseded_by: by.clone(),
            },
            format!("PR #{pr} is abandoned: its goal is recreated from the base as {by}"),
        );
    }
}

/// `awaiting_judge` without a reviewable run (its run was lost or never recorded): retried a
/// bounded number of times, then a person decides.
pub(super) fn recover_awaiting_judge(w: &mut Working<'_>, id: &TaskId) {
    if w.config.mode == Mode::Github {
        follow_pull_request(w, id);
        return;
    }
    let reviewable = w
        .task_runs(id)
        .iter()
        .any(|r| r.status == RunStatus::Success && r.judged_at.is_none());
    let being_judged = w.leases.contains_key(id);
    if reviewable || being_judged {
        return; // judge_work, or the judge holding the lease, takes care of it.
    }
    let task = &w.tasks[id];
    let due = task
        .updated_at
        .plus(i64::from(w.config.retry.cooldown_seconds) * SECOND);
    if due > w.now {
        w.wait(
            id,
            Some(due),
            "recovery.awaiting_judge",
            format!(
                "awaiting_judge without a reviewable run: requeued after {due} unless one appears"
            ),
        );
        return;
    }
    let used = task.attempts.get(AttemptKey::Judge);
    let limit = w.config.retry.max_judge_retries;
    if used >= limit {
        w.transition(
            id,
            TaskState::blocked(BlockReason::AwaitingHuman),
            None,
            None,
            "recovery.judge_budget_exhausted",
            format!("no reviewable run after {used} judge retries (limit {limit}). Decide: `opentiger task retry {id}` or `opentiger task cancel {id}`"),
        );
    } else {
        let attempts = task.attempts.bumped(AttemptKey::Judge);
        w.transition(
            id,
            TaskState::QUEUED,
            Some(attempts),
            Some(None),
            "recovery.awaiting_judge_retry",
            format!(
                "no reviewable run: run it again (judge retry {}/{limit})",
                used + 1
            ),
        );
    }
}

/// github mode: a task whose change is in a pull request follows the PR (spec §6: merged PRs
/// close their issue; DESIGN §8). Merged → done; closed unmerged → cancelled with the reason;
/// open → waits for its review and merge.
pub(super) fn follow_pull_request(w: &mut Working<'_>, id: &TaskId) {
    let Some(pr) = w.tasks[id].source_pr else {
        w.wait(
            id,
            None,
            "recovery.awaiting_pr",
            "waits for its pull request to be opened".to_string(),
        );
        return;
    };
    let state = w.snapshot.observations.pull_requests.get(&pr).copied();
    if super::stalls::retarget_or_escalate(w, id, pr, state) {
        return;
    }
    match state {
        Some(super::super::PullState::Merged) => w.transition(id, TaskState::DONE, None, Some(None), "recovery.pr_merged", format!("PR #{pr} was merged")),
        Some(super::super::PullState::Closed) => w.transition(
            id,
            TaskState::CANCELLED,
            None,
            Some(None),
            "recovery.pr_closed",
            format!("PR #{pr} was closed without being merged; reopen it or `opentiger task retry {id}`"),
        ),
        Some(super::super::PullState::Open) => gate_open_pull_request(w, id, pr),
        None => w.wait(id, None, "recovery.awaiting_pr", format!("PR #{pr} is open: waits for review and merge")),
    }
}

/// github mode, an open PR: CI on the head the task's run pushed decides first (DESIGN §8).
/// Red CI requests changes through a bounded AutoFix child on the same branch and PR; CI pending
/// past `merge.checks_timeout_minutes` waits on a person; otherwise the PR waits for its merge.
pub(super) fn gate_open_pull_request(w: &mut Working<'_>, id: &TaskId, pr: u64) {
    let run = w
        .task_runs(id)
        .iter()
        .copied()
        .find(|r| r.status == RunStatus::Success && r.pr_number == Some(pr));
    let Some(run) = run else {
        w.wait(
            id,
            None,
            "recovery.awaiting_pr",
            format!("PR #{pr} is open: waits for review and merge"),
        );
        return;
    };
    // Issues 14 and 26: people have the last word. A trusted person's request for changes no
    // AutoFix answered yet gets one, as the judge's does; one still standing, a hold label or a
    // `/opentiger hold` holds the merge; their approval may be required before it.
    let people = people_say(w, id, run, pr);
    if let LastWord::Fix {
        conclusion,
        held_by,
    } = &people
    {
        fix_on_pull(w, id, pr, conclusion, "judge.review_changes", Some(held_by));
        return;
    }
    let needs_approval = w.config.merge.human_approval == HumanApproval::Required
        && !matches!(&people, LastWord::Clear { approved_by } if !approved_by.is_empty());
    let head = run.head_sha.clone().unwrap_or_default();
    // Issue 36 (scan.ci): CI on opentiger's heads may wait for the scan and the review.
    let people_approved =
        matches!(&people, LastWord::Clear { approved_by } if !approved_by.is_empty());
    let since = match super::stalls::start_ci(w, id, run, pr, people_approved) {
        super::stalls::BeforeGate::Gate(since) => since,
        super::stalls::BeforeGate::Decided => return,
        super::stalls::BeforeGate::ReviewFirst => {
            if !review_if_due_as(w, id, true) {
                w.wait(
                    id,
                    None,
                    "judge.awaiting_review_before_ci",
                    format!(
                        "PR #{pr}: no CI runs on {} until the judge or a person approves it (scan.ci: after-review)",
                        short_sha(&head)
                    ),
                );
            }
            return;
        }
    };
    let observed = w.snapshot.observations.pull_checks.get(&pr);
    let expected = &w.snapshot.observations.expected_checks;
    match checks_gate_from(run, since, observed, expected, &w.config.merge, w.now) {
        CheckGate::Proceed { note } if people.held_text().is_some() => w.wait(
            id,
            None,
            super::super::objection::HELD_RULE,
            format!(
                "PR #{pr}: {note}; not merged: {}{}",
                people.held_text().unwrap_or_default(),
                autofix_note(w, id)
            ),
        ),
        CheckGate::Proceed { note } if needs_approval => w.wait(
            id,
            None,
            "judge.awaiting_approval",
            format!(
                "PR #{pr}: {note}; waits for a maintainer's approving review of {} \
                 (merge.human_approval: required)",
                short_sha(&head)
            ),
        ),
        CheckGate::Proceed { note } => {
            use super::super::stall::{mergeable_step, MergeableStep};
            match mergeable_step(id.as_str(), pr, observed, w.now) {
                MergeableStep::Proceed => {}
                MergeableStep::Wait { until, reason } => {
                    return w.wait(id, Some(until), "judge.mergeable_unknown", reason);
                }
                MergeableStep::Escalate { reason } => {
                    return w.transition(
                        id,
                        TaskState::blocked(BlockReason::AwaitingHuman),
                        None,
                        Some(None),
                        "judge.mergeable_unknown",
                        reason,
                    );
                }
            }
            if !review_if_due(w, id) {
                w.wait(
                    id,
                    None,
                    "judge.checks_passed",
                    format!("PR #{pr}: {note}; waits for review and merge"),
                );
            }
        }
        CheckGate::Stale { observed } => w.wait(
            id,
            None,
            "judge.head_moved",
            format!(
                "PR #{pr} head moved to {} after run {}: waits for review and merge",
                short_sha(&observed),
                run.id
            ),
        ),
        CheckGate::Wait { pending, deadline } => w.wait(
            id,
            Some(deadline),
            "judge.checks_pending",
            format!(
                "PR #{pr}: CI pending ({}); a person decides if still pending at {deadline}",
                if pending.is_empty() {
                    "not read yet".to_string()
                } else {
                    pending.join(", ")
                }
            ),
        ),
        CheckGate::TimedOut { reason } => w.transition(
            id,
            TaskState::blocked(BlockReason::AwaitingHuman),
            None,
            Some(None),
            "judge.checks_timeout",
            format!("PR #{pr}: {reason}"),
        ),
        CheckGate::NeverStarted {
            head_sha, missing, ..
        } => {
            let branch = run.branch.clone().unwrap_or_default();
            super::stalls::heal_stalled_pull(w, id, pr, &branch, &head_sha, &missing);
        }
        CheckGate::Failed(conclusion) => {
            fix_on_pull(w, id, pr, &conclusion, "judge.checks_failed", None);
        }
    }
}

/// Changes requested on an open PR (red CI, a person's review): a bounded AutoFix child on the
/// same branch, or a person once the budget is spent (`engine::verdict::decide_verdict`).
fn fix_on_pull(
    w: &mut Working<'_>,
    id: &TaskId,
    pr: u64,
    conclusion: &JudgeConclusion,
    rule: &'static str,
    held_by: Option<&str>,
) {
    let task = w.tasks[id].clone();
    // The snapshot holds a blocked task's children and its source's: all a lineage needs.
    let lineage = Lineage::of(
        &task,
        |t| w.tasks.get(t).cloned(),
        |parent, kind| {
            let n = w
                .tasks
                .values()
                .filter(|t| t.parent_task_id.as_ref() == Some(parent) && t.kind == kind)
                .count();
            u32::try_from(n).unwrap_or(u32::MAX)
        },
    );
    let decision = decide_verdict(&task, conclusion, &lineage, w.config, w.now);
    if let Some(child) = decision.create {
        let reason = format!("AutoFix for {id} on PR #{pr}");
        w.decide(
            Some(&child.id.clone()),
            "judge.autofix_child",
            Action::CreateTask {
                task: Box::new(child),
            },
            reason,
        );
    }
    w.transition(
        id,
        decision.to,
        decision.attempts,
        Some(None),
        rule,
        match held_by {
            // Issue 26 item 4: the progress comment says who holds the merge.
            Some(by) => format!("PR #{pr}: held by {by}: {}", decision.reason),
            None => format!("PR #{pr}: {}", decision.reason),
        },
    );
}

/// What people said about the PR of `id`'s run (issue 26): its trusted reviews, labels and
/// holds, and when the change's newest AutoFix was made (it answered older reviews).
fn people_say(w: &Working<'_>, id: &TaskId, run: &crate::model::Run, pr: u64) -> LastWord {
    let obs = &w.snapshot.observations;
    let head = run.head_sha.clone().unwrap_or_default();
    let issue = w.tasks[id].issue_number;
    let held_by = obs
        .holds
        .get(&pr)
        .or_else(|| issue.and_then(|n| obs.holds.get(&n)))
        .map(String::as_str);
    let say = PeopleSay {
        head: &head,
        reviews: obs.reviews.get(&pr).map_or(&[], Vec::as_slice),
        labels: obs.pull_labels.get(&pr).map_or(&[], Vec::as_slice),
        held_by,
        fixed_at: newest_autofix(w, id).map(|t| t.created_at),
    };
    last_word(&say, &w.config.merge)
}

/// The newest AutoFix of the change `id` belongs to (itself, when it is one).
fn newest_autofix<'a>(w: &'a Working<'_>, id: &TaskId) -> Option<&'a crate::model::Task> {
    let task = &w.tasks[id];
    let root = match (task.kind, &task.parent_task_id) {
        (TaskKind::Autofix, Some(parent)) => parent.clone(),
        _ => task.id.clone(),
    };
    w.tasks
        .values()
        .filter(|t| t.kind == TaskKind::Autofix)
        .filter(|t| t.id == *id || t.parent_task_id.as_ref() == Some(&root))
        .max_by_key(|t| t.created_at)
}

/// "; AutoFix 1/3 done" when an AutoFix answered the change's reviews.
fn autofix_note(w: &Working<'_>, id: &TaskId) -> String {
    newest_autofix(w, id)
        .map(|t| {
            let n = t.title.split(':').next().unwrap_or("AutoFix");
            format!("; {n} {}", t.status)
        })
        .unwrap_or_default()
}

/// Emits the judge's work: one review per task with an unjudged successful run (spec §2.4 step 3:
/// newest run per task). In direct mode there is no judge: such tasks are done (spec §2.4).
pub(crate) fn judge_work(w: &mut Working<'_>) {
    if w.config.mode == Mode::Github {
        return; // A PR is reviewed once CI passed on its head: see `gate_open_pull_request`.
    }
    for id in w.ids_in(TaskState::blocked(BlockReason::AwaitingJudge)) {
        review_if_due(w, &id);
    }
}

/// Claims the review of the task's newest successful, unjudged run, or waits out the backoff of
/// a failed review. `false` when there is nothing to review (or it is being reviewed).
///
/// Issue 38: a head is reviewed at most once per tick; an approved run waits out its review
/// window (`merge.review_window_minutes` after the push) and is then claimed to merge, without
/// asking the judge agent again; a review claimed inside the window records the approval and
/// leaves the merge for later; and a review is claimed only when it can end before the tick's
/// deadline.
pub(super) fn review_if_due(w: &mut Working<'_>, id: &TaskId) -> bool {
    review_if_due_as(w, id, false)
}

/// [`review_if_due`]; `before_ci`: the review comes before any CI ran on the head (issue 36,
/// `scan.ci: after-review`), so an approval is recorded, not merged.
fn review_if_due_as(w: &mut Working<'_>, id: &TaskId, before_ci: bool) -> bool {
    use super::super::rounds::{self, REVIEWED_RULE, TIME_RULE, WINDOW_RULE};
    let leased = w.leases.contains_key(id) && !w.released_judge_leases.contains(id);
    if leased {
        return false;
    }
    let reset: Vec<RunId> = w
        .decisions
        .iter()
        .filter(|d| d.task_id.as_ref() == Some(id))
        .filter_map(|d| match &d.action {
            Action::ResetJudgeClaim { run_id } => Some(run_id.clone()),
            _ => None,
        })
        .collect();
    let run = w.task_runs(id).iter().copied().find(|r| {
        r.status == RunStatus::Success && (r.judged_at.is_none() || reset.contains(&r.id))
    });
    let Some(run) = run else { return false };
    let run_id = run.id.clone();
    let obs = &w.snapshot.observations;
    let head = run.head_sha.clone().unwrap_or_default();
    if obs.tick.reviewed.contains(&(run_id.clone(), head.clone())) {
        w.wait(
            id,
            None,
            REVIEWED_RULE,
            format!(
                "run {run_id} was reviewed in an earlier round of this tick at {}: looked at \
                 again next tick",
                short_sha(&head)
            ),
        );
        return true;
    }
    // Issue 49: a person's uncommitted work in the merge's way (local-git): nothing is claimed,
    // no review spent, until they commit or stash it.
    if let Some(files) = obs.checkout_holds.get(id) {
        let reason = super::super::waits::held_by_checkout(&w.config.base_branch, files);
        w.wait(id, None, super::super::waits::HELD_BY_CHECKOUT, reason);
        return true;
    }
    let approved = obs.judge_approved.contains(&head);
    // CI gates the merge when checks are required and the repository has CI to wait for (or
    // it is not known yet whether it has: the gate waits for that first).
    let ci_gates = w.config.merge.require_checks && obs.expected_checks.may_gate();
    let minutes = rounds::review_window(w.config, ci_gates);
    let window = rounds::window_open_until(run, minutes, w.now);
    if let (true, Some(until)) = (approved, window) {
        let reason = rounds::window_reason(w.config, id, minutes, until, w.now);
        w.wait(id, Some(until), WINDOW_RULE, reason);
        return true;
    }
    if let Some(at) = w.tasks[id].next_attempt_at.filter(|at| *at > w.now) {
        w.wait(
            id,
            Some(at),
            "judge.backoff",
            format!("reviewed again after {at} (the last review failed)"),
        );
        return true;
    }
    if w.config.mode == Mode::Direct {
        w.transition(
            id,
            TaskState::DONE,
            None,
            None,
            "judge.direct_mode",
            format!("direct mode has no review: run {run_id} accepted"),
        );
        return true;
    }
    let bound = rounds::review_bound(&w.tasks[id], w.config, !approved);
    if let Err(too_long) = w.take_time(bound) {
        let what = if approved { "its merge" } else { "its review" };
        let reason = format!("{}; {}", too_long.text(what), rounds::TooLong::FIX);
        w.wait(id, None, TIME_RULE, reason);
        return true;
    }
    let expires_at = w
        .now
        .plus(i64::from(w.config.limits.lease_minutes) * crate::time::MINUTE);
    let (rule, reason) = match (before_ci, approved, window) {
        (true, _, _) => (
            "judge.review_before_ci",
            format!("run {run_id} succeeded: the judge reviews it before CI runs on it (scan.ci: after-review)"),
        ),
        (false, true, _) => (
            "judge.review",
            format!("run {run_id} was approved on this head: merge it, with no second review"),
        ),
        (false, false, Some(until)) => (
            "judge.review",
            format!(
                "run {run_id} succeeded and is not judged yet; if approved, it merges after the \
                 review window, at {until}"
            ),
        ),
        (false, false, None) => (
            "judge.review",
            format!("run {run_id} succeeded and is not judged yet"),
        ),
    };
    w.decide(
        Some(id),
        rule,
        Action::Judge {
            run_id,
            expires_at,
            before_ci,
            // An approval before CI is not merged whatever the window says.
            merge_after: window.filter(|_| !before_ci),
        },
        reason,
    );
    true
}

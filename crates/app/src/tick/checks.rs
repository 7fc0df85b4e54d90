//! github mode, opentiger's own checks on the heads it pushes (issue 28): `opentiger / verify`
//! (the verification commands as they ran) and `opentiger / judge` (queued when the head is
//! pushed, in progress while the judge reviews it, completed with the verdict); commit statuses
//! of the same names stand for them where the token may not write check runs (the tick says so
//! once). Visibility only: a check not written is a warning, never a failed run. Not for: each
//! step (`engine::checks`), the text (`report::check_run`) or the GitHub calls (`forge::checks`).

use super::Context;
use crate::engine::checks::{judge_state, step, Step};
use crate::engine::verdict::JudgeConclusion;
use crate::forge::checks::refused_for_permission;
use crate::forge::github::{ForgeError, GithubClient};
use crate::git::Git;
use crate::model::checks::{CheckReport, CheckStatus, CommandReport};
use crate::model::{Run, Task, TaskKind};
use crate::report::check_run::{external_id, judge_report, verify_report, ReviewText};
use crate::store::JudgementRow;

/// What the tick says once when it published commit statuses instead of check runs.
pub const STATUSES_NOTE: &str = "opentiger's checks were published as commit statuses: the token may not write check runs (a fork's token, `checks: read`, or a personal access token); give the workflow `checks: write` (or use a GitHub App token) for check runs with output and annotations";

/// A head opentiger pushed to a task's PR: its verification, and the judge's check waiting.
pub fn after_push(
    client: &GithubClient,
    ctx: &Context,
    task: &Task,
    run: &str,
    head: &str,
    verification: &[CommandReport],
) {
    if task.kind == TaskKind::PrReview {
        return;
    }
    let id = external_id(task.id.as_str(), run);
    let known = files_at(ctx, head);
    publish(
        client,
        ctx,
        &verify_report(head, id.clone(), verification, None, &known),
    );
    let waiting = (
        CheckStatus::Queued,
        "waiting for opentiger's judge".to_string(),
    );
    publish(
        client,
        ctx,
        &judge_report(head, id, waiting, None, &|_| false),
    );
}

/// The judge took up the review of a run's head.
pub fn review_started(client: &GithubClient, ctx: &Context, task: &Task, run: &Run) {
    let (Some(head), false) = (run.head_sha.as_deref(), task.kind == TaskKind::PrReview) else {
        return;
    };
    let state = (
        CheckStatus::InProgress,
        "opentiger's judge is reviewing this head".to_string(),
    );
    let id = external_id(task.id.as_str(), run.id.as_str());
    publish(
        client,
        ctx,
        &judge_report(head, id, state, None, &|_| false),
    );
}

/// The judge's verdict on a run's head, before the merge (branch protection may require it)
/// and after the review; the judge's own verification, when it failed on the head merged with
/// the base; and a head the judge pushed (the base merged in) gets its own checks.
pub fn review_done(
    client: &GithubClient,
    ctx: &Context,
    task: &Task,
    run: &Run,
    conclusion: &JudgeConclusion,
    judgement: Option<&JudgementRow>,
    verification: &[CommandReport],
) {
    let (Some(head), false) = (run.head_sha.as_deref(), task.kind == TaskKind::PrReview) else {
        return;
    };
    let id = external_id(task.id.as_str(), run.id.as_str());
    let base = ctx.config.base_branch.as_str();
    let known = files_at(ctx, head);
    if verification.iter().any(|c| !c.passed()) {
        publish(
            client,
            ctx,
            &verify_report(head, id.clone(), verification, Some(base), &known),
        );
    }
    // Whether the branch moved past the head: asked (one fetch) only after a failed review.
    let moved_on = matches!(conclusion, JudgeConclusion::Failed { .. })
        && branch_tip(ctx, run).is_some_and(|tip| tip != head);
    let state = judge_state(conclusion, moved_on);
    if let Some(state) = state {
        let review = judgement.map(|j| ReviewText {
            summary: &j.summary,
            findings: &j.findings,
            criteria: &j.criteria,
        });
        publish(
            client,
            ctx,
            &judge_report(head, id.clone(), state, review.as_ref(), &known),
        );
    }
    if let JudgeConclusion::Updated { head: merged } = conclusion {
        after_push(client, ctx, task, run.id.as_str(), merged, verification);
    }
}

/// The run's branch as it is now on the remote (one fetch of that branch; asked only when a
/// review failed, to tell a head that moved on from one that is retried).
fn branch_tip(ctx: &Context, run: &Run) -> Option<String> {
    let branch = run.branch.as_deref()?;
    let git = Git::new(&ctx.repo);
    let branches = crate::workspace::Branches::new(&git, &ctx.config.remote);
    branches.refresh(&[branch]).ok()?;
    branches.head(branch).ok().flatten()
}

/// Just before the merge of an approved head: the judge's check passes, so a branch rule that
/// requires it lets the merge through.
pub fn approved(
    client: &GithubClient,
    ctx: &Context,
    task: &Task,
    run: &str,
    head: &str,
    judgement: &JudgementRow,
) {
    if task.kind == TaskKind::PrReview {
        return;
    }
    let state = (
        CheckStatus::Completed(crate::model::checks::CheckConclusion::Success),
        "approved by opentiger's judge".to_string(),
    );
    let review = ReviewText {
        summary: &judgement.summary,
        findings: &judgement.findings,
        criteria: &judgement.criteria,
    };
    let id = external_id(task.id.as_str(), run);
    let known = files_at(ctx, head);
    publish(
        client,
        ctx,
        &judge_report(head, id, state, Some(&review), &known),
    );
}

/// Writes `report` on its head: the check run created, updated or left as it is; a commit
/// status instead once GitHub refused a check-run write for the token's permissions.
pub fn publish(client: &GithubClient, ctx: &Context, report: &CheckReport) {
    let report = &redacted(ctx, report);
    let now = ctx.later();
    if !client.checks_refused.get() {
        let written = client
            .latest_check(&report.head_sha, report.name, now)
            .and_then(|existing| match step(existing.as_ref(), report) {
                Step::Create => client.create_check(report, now).map(|_| ()),
                Step::Update(id) => client.update_check(id, report, now),
                Step::Keep => Ok(()),
            });
        match written {
            Ok(()) => return,
            Err(e) if refused_for_permission(&e) => {
                tracing::warn!("check runs refused ({e}): commit statuses instead");
                client.checks_refused.set(true);
            }
            Err(e) => return warn(report, &e),
        }
    }
    if let Err(e) = client.set_status(report, now) {
        warn(report, &e);
    }
}

/// Every text of a check through the tick's redactor once more, whatever made it: what reaches
/// GitHub never holds a secret the tick knows.
fn redacted(ctx: &Context, report: &CheckReport) -> CheckReport {
    let redactor = ctx.redactor();
    let mut out = report.clone();
    out.title = redactor.redact(&report.title);
    out.summary = redactor.redact(&report.summary);
    out.text = report.text.as_deref().map(|t| redactor.redact(t));
    for a in &mut out.annotations {
        a.message = redactor.redact(&a.message);
        a.title = redactor.redact(&a.title);
    }
    out
}

fn warn(report: &CheckReport, e: &ForgeError) {
    tracing::warn!(
        "could not publish `{}` on {}: {e}",
        report.name,
        crate::engine::verdict::short_sha(&report.head_sha)
    );
}

/// Which of the paths a check's output names are files of the repository at `head` (an
/// annotation must point at one): a `git ls-tree` per distinct path asked about.
fn files_at(ctx: &Context, head: &str) -> impl Fn(&str) -> bool {
    let git = Git::new(&ctx.repo);
    let head = head.to_string();
    let seen = std::cell::RefCell::new(std::collections::HashMap::<String, bool>::new());
    move |path: &str| {
        if let Some(known) = seen.borrow().get(path) {
            return *known;
        }
        let known = git
            .run(&["ls-tree", "--name-only", &head, "--", path])
            .is_ok_and(|listed| listed.lines().any(|l| l == path));
        seen.borrow_mut().insert(path.to_string(), known);
        known
    }
}

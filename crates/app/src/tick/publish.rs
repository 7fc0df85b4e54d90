//! github mode, the effects a tick's work has on GitHub: a finished run's one PR (opened or
//! updated) and its status label, the judge's verdict comment, issues for planned tasks,
//! superseded PRs closed, and merges through the API after people's last word
//! ([`super::people::LastWordCheck`]). Each is keyed (by branch, or by a marker naming the
//! task) so a killed tick converges.
//!
//! Not for: deciding any of it (the engine did), reading GitHub (see [`super::observe`]), the
//! dashboard issue ([`super::dashboard`]) or comments answering people ([`super::people`]).

use super::Context;
use crate::forge::calls::marker;
use crate::forge::github::{Conditional, ForgeError, GithubClient};

/// After a successful run in github mode: open or update the task's one PR and label its issue.
/// Returns the PR number. Under `scan.ci` other than `on-push` (issue 36) the PR is opened with
/// the push token, whose events start no workflow: opened by the forge token, `pull_request`
/// would start CI on the head before opentiger does.
pub fn publish_pull(
    client: &GithubClient,
    ctx: &Context,
    task: &crate::model::Task,
    run: &str,
    branch: &str,
    summary: &str,
) -> Result<u64, ForgeError> {
    let now = ctx.later();
    let mut body = format!("{}\n\n**Goal:** {}\n", summary.trim(), task.goal);
    if let Some(issue) = task.issue_number {
        body.push_str(&format!("\nCloses #{issue}\n"));
    }
    body.push_str(&format!("\n{}\n", marker(task.id.as_str(), Some(run))));
    let pusher = match crate::credentials::Token::for_heads(&ctx.config) {
        crate::credentials::Token::Push => Some(GithubClient::from_env(None, |k: &str| {
            match k {
                // The push token alone: never the forge token in its place.
                "OPENTIGER_GITHUB_TOKEN" => crate::credentials::push_token(),
                "GITHUB_TOKEN" => None,
                other => crate::credentials::lookup(other),
            }
        })?),
        crate::credentials::Token::Forge => None,
    };
    let pr = client.upsert_pull(
        (pusher.as_ref().unwrap_or(client), branch),
        &ctx.config.base_branch,
        &format!("[opentiger] {}", task.title),
        &body,
        now,
    )?;
    if let Some(issue) = task.issue_number {
        // The issue's progress comment is written after the tick records this run
        // (`tick::progress`). A status label people can filter on; adding one that is there changes nothing.
        client.set_status_label(issue, "opentiger:", "opentiger:in-review", &[], now)?;
    }
    Ok(pr.number)
}

/// The judge's verdict as one comment on the PR, keyed by the reviewed run: a tick killed after
/// posting it edits the same comment next time instead of adding another.
pub fn post_verdict(
    client: &GithubClient,
    ctx: &Context,
    pr: u64,
    task: &crate::model::Task,
    run: &str,
    conclusion: &crate::engine::verdict::JudgeConclusion,
    ci_note: Option<&str>,
) -> Result<(), ForgeError> {
    use crate::engine::verdict::JudgeConclusion;
    let person = task.kind == crate::model::TaskKind::PrReview;
    let text = match conclusion {
        JudgeConclusion::Merged { commit } => {
            let mut text = format!(
                "**opentiger judge: approved** — merged as {commit} (task `{}`).",
                task.id
            );
            if let Some(note) = ci_note {
                text.push_str(&format!("\n\nCI: {note}."));
            }
            text
        }
        JudgeConclusion::RequestChanges { summary, findings } => listed(
            &format!(
                "**opentiger judge: changes requested** (task `{}`): {summary}",
                task.id
            ),
            findings,
            if person {
                "opentiger does not push to this branch: push a fix and the new head is reviewed again."
            } else {
                "An AutoFix task works on this branch, or a person decides once its budget is spent."
            },
        ),
        JudgeConclusion::ApprovedBeforeCi { summary } => format!(
            "**opentiger judge: approved before CI** (task `{}`): {summary}\n\nCI starts on this head now (`scan.ci: after-review`); the PR is merged once its checks pass.",
            task.id
        ),
        JudgeConclusion::Approved { summary } => format!(
            "**opentiger judge: approved** (task `{}`): {summary}\n\nNot merged automatically (`backlog.merge_imported_prs` is off): a maintainer merges it.",
            task.id
        ),
        JudgeConclusion::Conflict { base, files } => listed(
            &format!(
                "**opentiger judge: cannot merge** (task `{}`): the branch conflicts with `{base}`.",
                task.id
            ),
            files,
            if person {
                "Merge the base into this branch and resolve the conflicts; the new head is reviewed again."
            } else {
                "A conflict-fix task merges the base into this branch and resolves it; once that budget is spent the goal is recreated from the base (this PR is then closed), and after that a person decides."
            },
        ),
        JudgeConclusion::Updated { head } => format!(
            "**opentiger judge: approved, but behind the base** (task `{}`): the base was merged into this branch as {head}; it is merged once CI passes on that head.",
            task.id
        ),
        JudgeConclusion::Refused { reason } => format!(
            "**opentiger judge: approved, not merged** (task `{}`): {reason}. A person decides: merge it by hand, or change the rule and retry the task.",
            task.id
        ),
        JudgeConclusion::WindowOpen { until, summary } => format!(
            "**opentiger judge: approved** (task `{}`): {summary}\n\nMerged after the review window, at {until} (`merge.review_window_minutes`), by the first tick after it. Until then a request for changes from a maintainer, a hold label ({}) or `/opentiger hold` stops it.",
            task.id,
            ctx.config
                .merge
                .hold_labels
                .iter()
                .map(|l| format!("`{l}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
        JudgeConclusion::Held { reason } => format!(
            "**opentiger judge: approved, not merged** (task `{}`): {reason}. It is merged once nothing holds it.",
            task.id
        ),
        JudgeConclusion::Failed { .. } | JudgeConclusion::BaseMoved { .. } => return Ok(()),
    };
    let marker = format!("<!-- opentiger:verdict task={} run={run} -->", task.id);
    client.upsert_comment(pr, &marker, &ctx.redactor().redact(&text), ctx.later())?;
    Ok(())
}

/// A verdict comment: its first line, a list, and what happens next.
fn listed(heading: &str, items: &[String], next: &str) -> String {
    let mut text = format!("{heading}\n");
    for item in items {
        text.push_str(&format!("\n- {item}"));
    }
    format!("{text}\n\n{next}")
}

/// Closes the PR of a change whose goal is recreated from the base, after one comment saying
/// why and by what (keyed by the task, so a killed tick does not say it twice).
pub fn close_superseded_pull(
    client: &GithubClient,
    ctx: &Context,
    pr: u64,
    task: &crate::model::TaskId,
    by: &crate::model::TaskId,
) -> Result<(), ForgeError> {
    let now = ctx.later();
    let text = format!(
        "**opentiger: closing this PR.** Its branch kept conflicting with `{}` after the conflict fixes it was allowed, so the goal of task `{task}` is implemented again from the base by task `{by}`, in a new PR.",
        ctx.config.base_branch
    );
    let marker = format!("<!-- opentiger:closed task={task} -->");
    client.upsert_comment(pr, &marker, &text, now)?;
    client.close_pull(pr, now)?;
    Ok(())
}

/// Approved PRs are merged by GitHub with the configured method, bound to the reviewed head,
/// after a last look at what people say about it (issue 26).
pub struct ApiMerger<'a> {
    pub client: &'a GithubClient,
    pub ctx: &'a Context,
    pub method: crate::config::MergeMethod,
    pub now: crate::time::Timestamp,
    pub last_word: Option<&'a super::people::LastWordCheck>,
    /// The task and run under review: the judge's check run is theirs.
    pub task: &'a crate::model::Task,
    pub run: &'a str,
}

impl crate::runner::judge::PullMerger for ApiMerger<'_> {
    fn merge(
        &self,
        pr: u64,
        head: &str,
        title: &str,
        message: &str,
    ) -> Result<crate::forge::calls::MergeAnswer, String> {
        let method = match self.method {
            crate::config::MergeMethod::Merge => "merge",
            crate::config::MergeMethod::Squash => "squash",
            crate::config::MergeMethod::Rebase => "rebase",
        };
        self.client
            .merge_pull(pr, head, method, title, message, self.now)
            .map_err(|e| e.to_string())
    }

    fn approved(&self, head: &str, judgement: &crate::store::JudgementRow) {
        super::checks::approved(self.client, self.ctx, self.task, self.run, head, judgement);
    }

    fn last_word(&self, pr: u64, head: &str) -> Result<crate::engine::objection::LastWord, String> {
        let check = self.last_word.ok_or_else(|| {
            format!("nothing was read about PR #{pr} when its review was claimed")
        })?;
        check
            .look(self.ctx, self.client, head)
            .map_err(|e| e.to_string())
    }
}

/// Opens the issue that mirrors a planned task, unless one exists already (found by its marker
/// among the backlog issues): a tick killed after opening it links it next time instead.
pub fn open_issue(
    client: &GithubClient,
    ctx: &Context,
    task: &crate::model::Task,
) -> Result<u64, ForgeError> {
    let now = ctx.later();
    let mark = marker(task.id.as_str(), None);
    for label in &ctx.config.backlog.labels {
        if let Conditional::Fresh { value, .. } = client.backlog_issues(label, None, now)? {
            if let Some(existing) = value.iter().find(|i| i.body.contains(&mark)) {
                return Ok(existing.number);
            }
        }
    }
    let mut body = format!("{}\n\n", task.goal);
    if !task.allowed_paths.is_empty() {
        body.push_str(&format!(
            "Allowed paths: {}\n\n",
            task.allowed_paths.join(", ")
        ));
    }
    if !task.commands.is_empty() {
        body.push_str(&format!(
            "Verification: {}\n\n",
            task.commands
                .iter()
                .map(|c| format!("`{c}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    body.push_str(&format!(
        "Planned by opentiger (task `{}`).\n\n{mark}\n",
        task.id
    ));
    client.create_issue(&task.title, &body, &ctx.config.backlog.labels, now)
}

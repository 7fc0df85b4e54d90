//! github mode: research tasks' reports (issue 28). After a tick recorded its work, the newest
//! research report kept for each issue is posted as one comment on it, found by a marker keyed
//! by the issue and edited in place when it changed (a proposal approved, a rerun's report:
//! an edited issue is a new task, which would otherwise post a second comment); the comment
//! names its task in a second marker, for its boxes. The text last posted is a cursor, so an
//! unchanged report costs no call.
//! Kept in the state first (`record_run`), so a failed post or a killed tick loses nothing:
//! the next tick posts what is owed.
//!
//! And the boxes of that comment: only people with write access (and opentiger) can edit
//! opentiger's comment, and the repository comment feed the commands read brings it back when
//! edited, so a ticked box costs no request. Each newly ticked box is decided as `/opentiger
//! approve <n>` on the issue (`engine::commands`), in the claim phase's state write.
//!
//! Not for: the rules (`engine::research`) or the text (`report::research`).

use super::checkboxes::act_on_box;
use super::commands::Source;
use super::{Context, Failure};
use crate::engine::commands::{Command, Parsed, Place, Verb};
use crate::engine::research::{proposal_task_id, task_marker, ticked, ReportComment};
use crate::forge::github::{ForgeError, GithubClient};
use crate::model::Issue;
use crate::report::research::research_comment;
use crate::store::{Cursor, Store, Writer};

/// The hidden marker of the research report comment on `issue` (what `upsert_comment` finds).
pub fn marker(issue: u64) -> String {
    format!("<!-- opentiger:research issue={issue} -->")
}

fn key(issue: u64) -> String {
    format!("research:issue:{issue}")
}

/// After `work --run` or `apply` recorded a research task's run: its report is posted by the
/// job that holds the token, not left for the next tick (visibility only: a failure is a
/// warning, and the report stays owed).
pub(super) fn post_after_work(
    ctx: &Context,
    forge: Option<&GithubClient>,
    task: &crate::model::Task,
) {
    let (Some(client), crate::model::TaskKind::Research) = (forge, task.kind) else {
        return;
    };
    match ctx
        .read_store()
        .and_then(|store| post_reports(ctx, client, &store))
    {
        Ok(lines) => lines.iter().for_each(|l| tracing::info!("{l}")),
        Err(e) => tracing::warn!("could not post the research report: {}", e.message),
    }
}

/// Posts each report of `store` whose comment text changed; returns a line per comment
/// written. `store` is the one the tick's progress reports read (one state read for both).
pub fn post_reports(
    ctx: &Context,
    client: &GithubClient,
    store: &Store,
) -> Result<Vec<String>, Failure> {
    let redactor = ctx.redactor();
    // The newest report of each issue (reports come oldest first).
    let mut newest = std::collections::BTreeMap::new();
    for report in store.research_reports()? {
        if let Some(issue) = store
            .task(&report.task_id)
            .ok()
            .and_then(|t| t.issue_number)
        {
            newest.insert(issue, report);
        }
    }
    let mut posted = Vec::new();
    for (issue, report) in newest {
        let approved = store.approved_proposals(&report)?;
        let comment = research_comment(&report, &approved);
        let text = redactor.redact(&format!("{comment}\n{}", task_marker(&report.task_id)));
        if store.cursor(&key(issue))?.body.as_deref() == Some(text.as_str()) {
            continue;
        }
        let task = report.task_id;
        match client.upsert_comment(issue, &marker(issue), &text, ctx.later()) {
            Ok(_) => posted.push((task.clone(), issue, text, false)),
            // Deleted, or transferred elsewhere: kept as said, so no tick asks again.
            Err(ForgeError::Http {
                status: 301 | 404 | 410,
                ..
            }) => posted.push((task.clone(), issue, text, true)),
            Err(e) => tracing::warn!("could not post the research report on #{issue}: {e}"),
        }
    }
    if posted.is_empty() {
        return Ok(Vec::new());
    }
    ctx.write_state("research reports", |store| {
        for (_, issue, text, _) in &posted {
            let cursor = Cursor {
                etag: None,
                body: Some(text.clone()),
            };
            store.set_cursor(&key(*issue), &cursor, ctx.now)?;
        }
        Ok(())
    })?;
    Ok(posted
        .iter()
        .map(|(task, issue, _, gone)| match gone {
            false => format!("task {task}: research report posted on #{issue}"),
            true => {
                format!("task {task}: issue #{issue} is gone: its research report is not posted")
            }
        })
        .collect())
}

/// Acts on the newly ticked boxes of our report comments; returns report lines.
pub fn apply_boxes(
    ctx: &Context,
    store: &mut Store,
    comments: &[ReportComment],
    issues: &[Issue],
    writer: Writer<'_>,
) -> Result<Vec<String>, Failure> {
    let mut lines = Vec::new();
    for comment in comments {
        for number in ticked(&comment.body) {
            // Approved already (by a box or a comment): its box reads ticked from now on.
            if store.task(&proposal_task_id(&comment.task, number)).is_ok() {
                continue;
            }
            let parsed = Parsed::Command(Command {
                verb: Verb::ApproveProposal(number),
                task: Some(comment.task.to_string()),
            });
            let place = Place::Thread {
                number: comment.thread,
                tasks: store.tasks_of_thread(comment.thread)?,
            };
            let source = Source {
                actor: "github:report-checkbox".to_string(),
                author: "",
                url: &comment.url,
                nonce: comment.thread,
            };
            let what = format!("box {number} of research task {}", comment.task);
            lines.push(act_on_box(
                ctx, store, &parsed, place, &source, &what, issues, writer,
            )?);
        }
    }
    Ok(lines)
}

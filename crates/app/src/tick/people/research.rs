//! github mode: research tasks' reports (issue 28). After a tick recorded its work, the newest
//! research report kept for each issue is posted as one comment on it, found by a marker keyed
//! by the issue and edited in place when it changed (a proposal approved, a rerun's report:
//! an edited issue is a new task, which would otherwise post a second comment); the comment
//! names its task in a second marker, for its boxes. The text last posted is a cursor, so an
//! unchanged report costs no call.
//! Kept in the state first (`record_run`), so a failed post or a killed tick loses nothing:
//! the next tick posts what is owed.
//!
//! Not for: the rules (`engine::research`), the text (`report::research`) or the ticked boxes
//! of the comment (`boxes.rs`).

use crate::engine::research::task_marker;
use crate::forge::github::{ForgeError, GithubClient};
use crate::report::research::research_comment;
use crate::store::{Cursor, Store};
use crate::tick::{Context, Failure};

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
pub fn post_after_work(ctx: &Context, forge: Option<&GithubClient>, task: &crate::model::Task) {
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

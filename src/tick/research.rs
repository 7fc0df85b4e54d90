//! github mode: research tasks' reports (issue 28). After a tick recorded its work, each
//! research report kept in the state is posted as one comment on its task's issue, found by a
//! marker keyed by the task and edited in place when it changed (a rerun's new report, a
//! proposal approved); the text last posted is a cursor, so an unchanged report costs no call.
//! Kept in the state first (`record_run`), so a failed post or a killed tick loses nothing:
//! the next tick posts what is owed.
//!
//! And the boxes of that comment: only people with write access (and opentiger) can edit
//! opentiger's comment, and the repository comment feed the commands read brings it back when
//! edited, so a ticked box costs no request. Each newly ticked box is decided as `/opentiger
//! approve <n>` on the issue (`engine::commands`), in the claim phase's state write.
//!
//! Not for: the rules (`engine::research`) or the text (`report::research`).

use super::commands::{apply_effects, decide_on, Asked, Source};
use super::{Context, Failure};
use crate::engine::commands::{Command, Outcome, Parsed, Place, Verb};
use crate::engine::research::{proposal_task_id, ticked};
use crate::forge::github::{ForgeError, GithubClient};
use crate::model::{Issue, TaskId};
use crate::report::research::research_comment;
use crate::store::{Cursor, Store, Writer};

const OPEN: &str = "<!-- opentiger:research task=";

/// The hidden marker of research task `task`'s report comment.
pub fn marker(task: &TaskId) -> String {
    format!("{OPEN}{task} -->")
}

/// The research task a comment of ours reports for, from its marker.
pub fn marked(body: &str) -> Option<TaskId> {
    let rest = body.rsplit_once(OPEN)?.1;
    let id = rest.split_once(" -->")?.0;
    let valid = !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    valid.then(|| TaskId(id.to_string()))
}

fn key(task: &TaskId) -> String {
    format!("research:{task}")
}

/// A report comment of ours as the feed brought it back.
#[derive(Clone, Debug)]
pub struct ReportComment {
    pub task: TaskId,
    pub thread: u64,
    pub url: String,
    pub body: String,
}

/// Posts each report whose comment text changed; returns a line per comment written.
pub fn post_reports(ctx: &Context, client: &GithubClient) -> Result<Vec<String>, Failure> {
    let store = ctx.read_store()?;
    let redactor = ctx.redactor();
    let mut posted = Vec::new();
    for report in store.research_reports()? {
        let Ok(task) = store.task(&report.task_id) else {
            continue;
        };
        let Some(issue) = task.issue_number else {
            continue;
        };
        let approved = store.approved_proposals(&report)?;
        let text = redactor.redact(&research_comment(&report, &approved));
        if store.cursor(&key(&task.id))?.body.as_deref() == Some(text.as_str()) {
            continue;
        }
        match client.upsert_comment(issue, &marker(&task.id), &text, ctx.later()) {
            Ok(_) => posted.push((task.id, issue, text, false)),
            // Deleted, or transferred elsewhere: kept as said, so no tick asks again.
            Err(ForgeError::Http {
                status: 301 | 404 | 410,
                ..
            }) => posted.push((task.id, issue, text, true)),
            Err(e) => tracing::warn!("could not post the research report on #{issue}: {e}"),
        }
    }
    if posted.is_empty() {
        return Ok(Vec::new());
    }
    ctx.write_state("research reports", |store| {
        for (task, _, text, _) in &posted {
            let cursor = Cursor {
                etag: None,
                body: Some(text.clone()),
            };
            store.set_cursor(&key(task), &cursor, ctx.now)?;
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
            let asked = Asked {
                author: "",
                allowed: true,
                refused_before: false,
                place: Place::Thread {
                    number: comment.thread,
                    tasks: store.tasks_of_thread(comment.thread)?,
                },
                checkbox: true,
            };
            let decision = decide_on(ctx, store, &parsed, asked, issues, writer.now)?;
            let source = Source {
                actor: "github:report-checkbox".to_string(),
                author: "",
                url: &comment.url,
                nonce: comment.thread,
            };
            let what = format!("box {number} of research task {}", comment.task);
            let said = decision.reply.clone().unwrap_or_default();
            match apply_effects(store, &decision.effects, &source, issues, writer) {
                Err(e) => lines.push(format!("{what}: could not be done: {e}")),
                Ok(()) => match decision.outcome {
                    Outcome::Done => lines.push(format!("{what}: {said}")),
                    Outcome::Refused | Outcome::NotAllowed | Outcome::Help => {
                        lines.push(format!("{what}: refused: {said}"))
                    }
                },
            }
        }
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_marker_names_its_task_and_nothing_else() {
        let id = TaskId("0123abcd4567".to_string());
        let body = format!("report\n\n{}", marker(&id));
        assert_eq!(marked(&body), Some(id));
        #[rustfmt::skip]
        let cases = [
            "<!-- opentiger:task=0123abcd4567 -->",
            "<!-- opentiger:research task= -->",
            "<!-- opentiger:research task=a b -->",
            "<!-- opentiger:research task=x",
            "",
        ];
        for body in cases {
            assert_eq!(marked(body), None, "{body}");
        }
    }
}

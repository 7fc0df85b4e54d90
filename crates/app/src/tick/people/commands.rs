//! github mode, the claim phase's side of the comment feed: everything the feed saw is
//! written in the claim's state write — its cursors, the replies and questions seen posted —
//! and each new command is decided (`engine::commands::decide`, where it was posted: the
//! dashboard, the requirement's issue or a task's thread), its effects applied and its comment
//! id recorded with the reply owed, in that same write, so it acts exactly once.
//!
//! Not for: reading the feed (`feed.rs`), posting the reply (`replies.rs`) or ticked boxes
//! (`boxes.rs`).

use super::effects::{apply_effects, decide_on, Asked, Source};
use super::feed::{CommandFeed, SeenCommand};
use crate::engine::commands::{self, Outcome, Place};
use crate::model::Issue;
use crate::store::{CommandRecord, Store, Writer};
use crate::tick::{plan_thread, Context, Failure};

/// Decides and applies each new command, recording its comment id with the reply owed, in
/// the claim phase's state write (re-run on fresh state if the save loses a race: a command
/// recorded by the winner is skipped). Returns report lines.
///
/// `issues` are the backlog issues as this tick read them: `replan` re-reads a task's
/// issue from them.
pub(super) fn apply(
    feed: &CommandFeed,
    ctx: &Context,
    store: &mut Store,
    issues: &[Issue],
    writer: Writer<'_>,
) -> Result<Vec<String>, Failure> {
    for (key, cursor) in &feed.cursors {
        store.set_cursor(key, cursor, writer.now)?;
    }
    for id in &feed.replied {
        store.mark_replied(*id, writer.now)?;
    }
    if !feed.questions.is_empty() {
        let recorded = store.escalations()?;
        for (task, question, id, body) in &feed.questions {
            let known = recorded
                .iter()
                .find(|e| &e.task_id == task && &e.question == question);
            if known.is_some_and(|e| {
                e.comment_id != Some(*id) || e.posted_body.as_deref() != Some(body.as_str())
            }) {
                store.escalation_posted(task, question, *id, body)?;
            }
        }
    }
    let mut lines = Vec::new();
    if feed.commands.is_empty() {
        return Ok(lines);
    }
    let mut seen: Vec<&SeenCommand> = feed.commands.iter().collect();
    seen.sort_by_key(|c| c.comment.id);
    for command in seen {
        let comment = &command.comment;
        if store.command_seen(comment.id)? {
            continue;
        }
        let place = if command.on_dashboard {
            Place::Dashboard
        } else if plan_thread::thread(store)? == Some(comment.thread) {
            Place::Plan {
                number: comment.thread,
                tasks: plan_thread::latest_plan(store)?
                    .map(|(_, tasks)| tasks.into_iter().map(|t| t.id).collect())
                    .unwrap_or_default(),
            }
        } else {
            Place::Thread {
                number: comment.thread,
                tasks: store.tasks_of_thread(comment.thread)?,
            }
        };
        let asked = Asked {
            author: &comment.author,
            allowed: command.allowed,
            refused_before: store.refused_before(comment.thread, &comment.author)?,
            place,
            checkbox: false,
        };
        let decision = decide_on(ctx, store, &command.parsed, asked, issues, writer.now)?;
        let mut outcome = decision.outcome;
        let mut reply = decision.reply.clone();
        let source = Source {
            actor: format!("github:{}", comment.author),
            author: &comment.author,
            url: &comment.html_url,
            nonce: comment.id,
        };
        if let Err(e) = apply_effects(store, &decision.effects, &source, issues, writer) {
            // The state moved on under the command (a race with a run ending): say so.
            outcome = Outcome::Refused;
            reply = Some(format!("This could not be done: {e}; nothing was changed."));
        }
        let line = command_line(&comment.body);
        lines.push(format!(
            "command `{line}` by @{} on #{}: {}",
            comment.author,
            comment.thread,
            outcome.word()
        ));
        store.record_command(
            &CommandRecord {
                comment_id: comment.id,
                thread: comment.thread,
                author: comment.author.clone(),
                line,
                outcome: outcome.word().to_string(),
                reply,
                replied_at: None,
            },
            writer.now,
        )?;
    }
    Ok(lines)
}

/// The command line as written (for the record and the report), shortened.
fn command_line(body: &str) -> String {
    let line = body
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(commands::PREFIX))
        .unwrap_or(commands::PREFIX);
    crate::report::truncate(line, 80).replace('`', "'")
}

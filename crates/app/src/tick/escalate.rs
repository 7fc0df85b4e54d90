//! github mode: one question comment per task and question when a task waits on a person
//! (issue 17 item 3). [`decide`] runs in the claim phase and records what `engine::escalation`
//! says to ask, restate or close (and a due `escalation.default`'s move); [`publish`] runs after
//! it: a question GitHub does not show is posted once (its marker comes back through the comment
//! feed, which records its id) or edited in place. Not for: what to ask (`engine::escalation`) or
//! acting on the person's answer (`tick::people`, `engine::commands`).

use std::collections::BTreeMap;

use super::{Context, Failure};
use crate::engine::escalation::{self, Open, Question, Step};
use crate::forge::github::GithubClient;
use crate::model::{BlockReason, TaskId, TaskState, TaskStatus};
use crate::store::{Escalation, Store, TaskChanges, TaskFilter, Writer};

/// Decides and records this tick's escalation steps; returns report lines.
pub fn decide(
    ctx: &Context,
    store: &mut Store,
    writer: Writer<'_>,
) -> Result<Vec<String>, Failure> {
    let tasks = store.list_tasks(&TaskFilter {
        status: Some(TaskStatus::Blocked),
        include_terminal: false,
    })?;
    let recorded = store.escalations()?;
    let open: Vec<Open> = recorded
        .iter()
        .map(|e| Open {
            task_id: e.task_id.clone(),
            question: e.question.clone(),
            opened_at: e.opened_at,
            resolved: e.resolved_at.is_some(),
            body: e.body.clone(),
        })
        .collect();
    let mut prs: BTreeMap<TaskId, u64> = BTreeMap::new();
    for task in tasks
        .iter()
        .filter(|t| t.state() == TaskState::blocked(BlockReason::AwaitingHuman))
        .filter(|t| t.issue_number.is_none() && t.source_pr.is_none())
    {
        if let Some(pr) = store.pr_of_task(&task.id)? {
            prs.insert(task.id.clone(), pr);
        }
    }
    let steps = escalation::escalate(
        &tasks,
        &open,
        escalation::Estimate {
            budget_usd: ctx.config.budget.per_task_usd,
            typical_usd: store.typical_task_spend()?,
        },
        &|t| {
            t.issue_number
                .or(t.source_pr)
                .or_else(|| prs.get(&t.id).copied())
        },
        &|id, q| {
            recorded
                .iter()
                .any(|e| &e.task_id == id && e.question == q.word() && e.defaults > 0)
        },
        &ctx.config.escalation,
        writer.now,
    );
    let mut lines = Vec::new();
    for step in steps {
        match step {
            Step::Ask {
                task_id,
                question,
                thread,
                body,
                opened_at,
            } => {
                store.upsert_escalation(&Escalation {
                    task_id: task_id.clone(),
                    question: question.word().to_string(),
                    thread,
                    body,
                    comment_id: None,
                    posted_body: None,
                    opened_at,
                    resolved_at: None,
                    defaults: 0,
                })?;
                lines.push(format!(
                    "task {task_id}: asks a person on #{thread} ({})",
                    question.word()
                ));
            }
            Step::Close { task_id, question } => {
                store.resolve_escalation(&task_id, &question, false, writer.now)?;
            }
            Step::Default {
                task_id,
                question,
                to,
                reset_attempts,
                reason,
            } => {
                let changes = TaskChanges {
                    attempts: reset_attempts.then(Default::default),
                    next_attempt_at: reset_attempts.then_some(None),
                    needs_approval: None,
                };
                store.transition_task(&task_id, to, &reason, changes, writer)?;
                store.resolve_escalation(&task_id, question.word(), true, writer.now)?;
                lines.push(format!("task {task_id}: {reason}"));
            }
        }
    }
    Ok(lines)
}

/// The open escalations whose comment does not yet say what it should.
pub fn unpublished(ctx: &Context, store: &Store) -> Result<Vec<Escalation>, Failure> {
    let redactor = ctx.redactor();
    Ok(store
        .escalations()?
        .into_iter()
        .filter(|e| e.resolved_at.is_none())
        .filter(|e| e.posted_body.as_deref() != Some(redactor.redact(&e.body).as_str()))
        .collect())
}

/// Posts or edits each question comment. A new one is posted only after a complete read of
/// the comment feed (then one posted by a killed tick has been seen and recorded). Failures
/// are warnings: the question stays unpublished for the next tick. Returns who posted (the
/// token's login), when a comment was posted.
pub fn publish(
    ctx: &Context,
    client: &GithubClient,
    feed_complete: bool,
    owed: &[Escalation],
) -> Option<String> {
    let redactor = ctx.redactor();
    let mut poster = None;
    for e in owed {
        let body = redactor.redact(&e.body);
        let post = e.comment_id.is_none() && feed_complete;
        let result = match e.comment_id {
            Some(id) => client
                .edit_comment(id, &body, ctx.later())
                .map(|found| !found),
            None => Ok(post),
        }
        .and_then(|post| {
            if post {
                client
                    .post_comment(e.thread, &body, ctx.later())
                    .map(|login| poster = Some(login))
            } else {
                Ok(())
            }
        });
        if let Err(err) = result {
            tracing::warn!(
                "could not publish the question of task {} on #{}: {err}",
                e.task_id,
                e.thread
            );
        }
    }
    poster
}

/// The escalation a comment of ours carries, from its marker: (task, question).
pub fn marked(body: &str) -> Option<(TaskId, String)> {
    let rest = body.split("<!-- opentiger:escalation=").nth(1)?;
    let (key, _) = rest.split_once(" -->")?;
    let (task, question) = key.rsplit_once(':')?;
    let known = [Question::Approval, Question::Stuck]
        .iter()
        .any(|q| q.word() == question);
    (known && !task.is_empty()).then(|| (TaskId(task.to_string()), question.to_string()))
}

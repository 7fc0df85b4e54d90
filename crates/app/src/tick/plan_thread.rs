//! github mode: planner approval in the thread (issue 17). When the planner's latest plan holds
//! tasks for approval (`execution_mode: ask`, or `decide` for risky ones), opentiger opens one
//! issue for the requirement (label `opentiger:plan`, found again by its marker) and shows the
//! plan there as ONE comment (`report::plan`), edited in place when the plan's tasks move or a
//! new plan replaces it. `/opentiger approve` there opens the tasks' issues and runs them
//! (`engine::commands`, `Place::Plan`). Only the tasks of the latest plan are shown.
//!
//! What was posted is kept in the state, so a tick with nothing new makes no request here.
//! Visibility: a failure is a warning and is tried again by the next tick. Not for: the comment's
//! text (`report::plan`) or acting on the commands posted there (`engine::commands::plan`).

use serde::{Deserialize, Serialize};

use super::{Context, Failure};
use crate::engine::commands::waits_approval;
use crate::forge::github::{Conditional, GithubClient};
use crate::model::{Mode, Task};
use crate::store::{Cursor, Store, StoreError, TaskFilter};

/// The label of the requirement's issue.
pub const PLAN_LABEL: &str = "opentiger:plan";
/// The state key of the requirement's issue number.
const THREAD: &str = "plan:thread";
const POSTED: &str = "plan:comment";
const ISSUE_MARKER: &str = "<!-- opentiger:requirement -->";
const COMMENT_MARKER: &str = "<!-- opentiger:plan-comment -->";

#[derive(Serialize, Deserialize)]
struct Posted {
    plan: String,
    text: String,
}

/// The requirement's issue, once opened.
pub fn thread(store: &Store) -> Result<Option<u64>, StoreError> {
    Ok(store.cursor(THREAD)?.body.and_then(|b| b.parse().ok()))
}

/// The latest plan that created tasks, and its tasks as they are now.
pub fn latest_plan(store: &Store) -> Result<Option<(String, Vec<Task>)>, StoreError> {
    let Some(plan) = store.plan_history(None)?.last_created else {
        return Ok(None);
    };
    let planned = store.plan_of_tasks()?;
    let tasks: Vec<Task> = store
        .list_tasks(&TaskFilter {
            status: None,
            include_terminal: true,
        })?
        .into_iter()
        .filter(|t| planned.get(&t.id) == Some(&plan.id))
        .collect();
    Ok((!tasks.is_empty()).then_some((plan.id, tasks)))
}

/// Posts or edits the plan comment when it should say something new; returns report lines.
pub fn publish(ctx: &Context, client: &GithubClient) -> Vec<String> {
    match try_publish(ctx, client) {
        Ok(lines) => lines,
        Err(e) => {
            tracing::warn!(
                "could not show the plan on the requirement's issue: {}",
                e.message
            );
            Vec::new()
        }
    }
}

fn try_publish(ctx: &Context, client: &GithubClient) -> Result<Vec<String>, Failure> {
    if ctx.config.mode != Mode::Github {
        return Ok(Vec::new());
    }
    let store = ctx.read_store()?;
    let Some((plan, tasks)) = latest_plan(&store)? else {
        return Ok(Vec::new());
    };
    let posted: Option<Posted> = store
        .cursor(POSTED)?
        .body
        .and_then(|b| serde_json::from_str(&b).ok());
    let asks = tasks.iter().any(waits_approval);
    // A plan nobody was asked about (always-execute) gets no comment.
    if !asks && posted.as_ref().is_none_or(|p| p.plan != plan) {
        return Ok(Vec::new());
    }
    let text = ctx.redactor().redact(&crate::report::plan::plan_comment(
        &plan,
        &ctx.config.requirement.clone(),
        &tasks,
        ctx.config.budget.per_task_usd,
    ));
    if posted.as_ref().is_some_and(|p| p.text == text) {
        return Ok(Vec::new());
    }
    let now = ctx.later();
    let known = thread(&store)?;
    drop(store);
    let number = match known {
        Some(n) => n,
        None => requirement_issue(ctx, client).map_err(|e| Failure::tick(e.to_string()))?,
    };
    client
        .upsert_comment(number, COMMENT_MARKER, &text, now)
        .map_err(|e| Failure::tick(e.to_string()))?;
    ctx.write_state("plan comment", |store| {
        let posted = serde_json::to_string(&Posted {
            plan: plan.clone(),
            text: text.clone(),
        })
        .ok();
        store.set_cursor(
            POSTED,
            &Cursor {
                etag: None,
                body: posted,
            },
            ctx.now,
        )?;
        store.set_cursor(
            THREAD,
            &Cursor {
                etag: None,
                body: Some(number.to_string()),
            },
            ctx.now,
        )?;
        Ok(())
    })?;
    Ok(vec![format!(
        "plan {plan}: shown on the requirement's issue #{number}"
    )])
}

/// Finds the requirement's issue (by label and marker: a tick killed after opening it finds it
/// again) or opens it.
fn requirement_issue(
    ctx: &Context,
    client: &GithubClient,
) -> Result<u64, crate::forge::github::ForgeError> {
    let now = ctx.later();
    if let Conditional::Fresh { value, .. } = client.backlog_issues(PLAN_LABEL, None, now)? {
        if let Some(found) = value
            .iter()
            .filter(|i| i.body.contains(ISSUE_MARKER))
            .min_by_key(|i| i.number)
        {
            return Ok(found.number);
        }
    }
    let path = ctx.config.requirement.clone();
    let goal = ctx
        .requirement_text()
        .map(|t| crate::planner::parse_requirement(&t).goal)
        .unwrap_or_default();
    let title = format!(
        "opentiger plan: {}",
        crate::engine::import::cap_title(goal.lines().next().unwrap_or("the requirement"))
    );
    let body = format!(
        "opentiger plans `{path}` here. Each plan it makes is shown as one comment below; while its tasks wait for approval, `/opentiger approve` here opens their issues and runs them, `/opentiger cancel` cancels them and `/opentiger replan` plans again.\n\n{ISSUE_MARKER}\n"
    );
    client.create_issue(
        &ctx.redactor().redact(&title),
        &body,
        &[PLAN_LABEL.to_string()],
        now,
    )
}

//! `approve` (DESIGN §9, issue 17; issue 36): a task waiting for a person's approval goes on
//! — queued, or to its issue first when it is a planned task in github mode — and a change the
//! threat scan held is let out, exactly that change; `approve all` on the dashboard approves
//! every waiting task. Not for: `approve <n>` of a research proposal (`research.rs`) or the
//! requirement's whole plan (`plan.rs`).

use super::{done, refuse, waits_approval, Decision, Effect, Origin, Request};
use crate::engine::scan::{held_change, short, wrong_change};
use crate::model::{BlockReason, Task, TaskState};

/// `approve all` (on the dashboard, without a task): every task that waits for approval.
pub(super) fn decide_all(req: &Request<'_>, by: &str) -> Decision {
    let waiting: Vec<&Task> = req.tasks.values().filter(|t| waits_approval(t)).collect();
    if waiting.is_empty() {
        return refuse("No task waits for approval".to_string());
    }
    let effects = waiting.iter().map(|t| approve_effect(t, req, by)).collect();
    let ids: Vec<String> = waiting.iter().map(|t| format!("`{}`", t.id)).collect();
    done(
        effects,
        format!(
            "Approved by @{}: {} queued ({}).",
            req.author,
            waiting.len(),
            ids.join(", ")
        ),
    )
}

/// `approve` of `task` (the thread's, or the one named); `named_change` is the commit the
/// command named instead of a task (issue 36), if any.
pub(super) fn decide(
    task: &Task,
    named_change: Option<&str>,
    req: &Request<'_>,
    by: &str,
) -> Decision {
    let id = &task.id;
    let state = task.state();
    let last_held = req.last_runs.get(id).and_then(|l| l.held.as_ref());
    if let Some(held) = held_change(task, last_held) {
        if let Some(why) = named_change.and_then(|w| wrong_change(w, held)) {
            return refuse(why);
        }
        let head = short(&held.head);
        return done(
            vec![Effect::ApproveChange {
                task: id.clone(),
                held: held.clone(),
                reason: format!("its change {head} approved {by} after the threat scan"),
            }],
            format!("Approved {by}: task `{id}`'s change {head} (held by the threat scan) is let out by the next tick, exactly that change; the approval covers it only, once."),
        );
    }
    if let Some(word) = named_change {
        return refuse(format!("Task `{id}` holds no change for approval (it is {state}), so `{word}` approves nothing"));
    }
    if !waits_approval(task) {
        return refuse(format!(
            "Task `{id}` does not wait for approval (it is {state})"
        ));
    }
    let effect = approve_effect(task, req, by);
    let next = match &effect {
        Effect::Move { to, .. } if *to == TaskState::QUEUED => "is queued",
        _ => "gets its issue next, then runs",
    };
    done(vec![effect], format!("Approved {by}: task `{id}` {next}."))
}

fn approve_effect(task: &Task, req: &Request<'_>, by: &str) -> Effect {
    let planned = matches!(req.origins.get(&task.id), Some(Origin::Plan(_)));
    Effect::Move {
        task: task.id.clone(),
        // Comments are read in github mode only.
        to: approved_state(task, planned, true),
        reset_attempts: false,
        approved: true,
        reason: format!("approved {by}"),
    }
}

/// Where an approved task goes (a comment, a dashboard box, `opentiger task approve` alike): a
/// planned task in github mode that has no issue yet gets its issue first
/// (`blocked(issue_linking)`, spec §2.1 step 10), as an unheld planned task does; any other
/// task is queued.
pub fn approved_state(task: &Task, planned: bool, github: bool) -> TaskState {
    match (planned && github, task.issue_number) {
        (true, None) => TaskState::blocked(BlockReason::IssueLinking),
        _ => TaskState::QUEUED,
    }
}

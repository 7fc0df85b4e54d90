//! `opentiger task retry|stop|cancel|approve`: a person's moves on tasks of the local backlog,
//! by the same rules as the comment commands (`engine::commands`): a retry of the task a person
//! knows acts on the AutoFix or rework child waiting in its stead, a cancel takes the children
//! working on it along (issue 40), a stop asks the tick running the task's agent to end it
//! (issue 51, `engine::stop`). Not for: the rules themselves (`engine::commands::retry`,
//! `engine::commands::approve`), or adding, listing and showing tasks (`cli::task`).

use super::{CmdResult, Context, Failure};
use crate::engine::commands::{
    approved_state, cancel_family, cancel_refusal, retry_move, retry_target, RetryMove,
};
use crate::model::{BlockReason, Task, TaskState, TaskStatus};
use crate::store::{TaskChanges, TaskFilter, Writer};

/// Who writes: a person at the command line.
pub(super) fn writer(ctx: &Context) -> Writer<'_> {
    Writer {
        tick_id: None,
        actor: "human",
        now: ctx.now,
    }
}

/// Every task of the state, for the family rules.
fn all_tasks(
    store: &crate::store::Store,
) -> Result<std::collections::BTreeMap<crate::model::TaskId, Task>, Failure> {
    let filter = TaskFilter {
        status: None,
        include_terminal: true,
    };
    Ok(store
        .list_tasks(&filter)?
        .into_iter()
        .map(|t| (t.id.clone(), t))
        .collect())
}

pub(super) fn retry(ctx: &Context, id: &str, reason: &str) -> CmdResult {
    let line = ctx.write_state("task retry", |store| {
        let named = store.resolve_task_id(id)?;
        let tasks = all_tasks(store)?;
        let Some(asked) = tasks.get(&named) else {
            return Err(Failure::usage(format!("no task {named}")));
        };
        // Issue 40: the task a person knows may follow a rework that waits in its stead.
        let task = retry_target(asked, &tasks).clone();
        let id = task.id.clone();
        let via = if id == named {
            String::new()
        } else {
            format!(" (the {} {named} follows)", task.kind)
        };
        // The rule is the comment command's too (`/opentiger retry`), so both agree.
        let last = store.last_run(&id)?;
        match retry_move(&task, last.as_ref(), ctx.now) {
            Err(why) if via.is_empty() => return Err(Failure::usage(why)),
            Err(why) => return Err(Failure::usage(format!("{named} follows {id}: {why}"))),
            Ok(RetryMove::Rejudge { run }) => {
                store.rejudge(&id, &run, reason, writer(ctx))?;
                return Ok(format!(
                    "{id}{via}: {} → blocked(awaiting_judge): the next tick asks the judge about run {run} again (no new worker run)",
                    task.state()
                ));
            }
            Ok(RetryMove::EndCooldown) => {
                store.clear_cooldown(&id, reason, writer(ctx))?;
                return Ok(format!(
                    "{id}{via}: queued, its cooldown cleared: the next tick may start it"
                ));
            }
            Ok(RetryMove::Requeue) => {}
        }
        // A person's retry starts the budgets afresh: they decided the cause is dealt with.
        let changes = TaskChanges {
            attempts: Some(Default::default()),
            next_attempt_at: Some(None),
            needs_approval: Some(false),
        };
        store.transition_task(&id, TaskState::QUEUED, reason, changes, writer(ctx))?;
        // Issue 18: a person retrying says the agents' configuration is dealt with.
        let unparked = store.clear_config_parks()?;
        let note = if unparked > 0 {
            format!(" ({unparked} executor(s) parked for their configuration may run again)")
        } else {
            String::new()
        };
        Ok(format!(
            "{id}{via}: {} → queued{note}; {}",
            task.state(),
            next_start_note(ctx, &task)
        ))
    })?;
    outln!("{line}");
    Ok(())
}

/// Which start the next run of a retried task gets, said for the person who retried it.
fn next_start_note(ctx: &Context, task: &Task) -> String {
    use crate::workspace::{next_start, task_branch, NextStart};
    let base = &ctx.config.base_branch;
    let branch = task_branch(task);
    match next_start(&crate::git::Git::new(&ctx.repo), &branch, base) {
        Ok(NextStart::Base) => {
            format!("the next run starts from the current {base} ({branch} holds no agent work)")
        }
        Ok(NextStart::Branch { commits }) => format!(
            "the next run continues on {branch}, keeping its {commits} commit(s) of earlier work \
             (WIP); `opentiger task cancel` and a new task start from {base} instead"
        ),
        Err(e) => format!("could not look at {branch}: {e}"),
    }
}

/// Who asks, as a stop request names them: the Actions actor, else the login.
fn person() -> String {
    ["GITHUB_ACTOR", "USER", "LOGNAME"]
        .into_iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "a person".to_string())
}

pub(super) fn stop(ctx: &Context, id: &str) -> CmdResult {
    let by = format!("{} (opentiger task stop)", person());
    let line = ctx.write_state("task stop", |store| {
        let id = store.resolve_task_id(id)?;
        let task = store.task(&id)?;
        let leased = store
            .leased_tasks()?
            .into_iter()
            .find_map(|(t, run)| (t == id).then_some(run));
        let run = crate::engine::stop::stop_target(&task, leased.as_ref()).map_err(Failure::usage)?;
        store.request_stop(&id, &run, &by, writer(ctx))?;
        Ok(format!(
            "{id}: run {run} asked to stop: the tick running its agent ends it within 30 s, then the task waits for you (`opentiger task retry {id}` queues it again, `opentiger task cancel {id}` drops it)"
        ))
    })?;
    outln!("{line}");
    Ok(())
}

pub(super) fn cancel(ctx: &Context, id: &str, reason: &str) -> CmdResult {
    let lines = ctx.write_state("task cancel", |store| {
        let id = store.resolve_task_id(id)?;
        let tasks = all_tasks(store)?;
        let Some(task) = tasks.get(&id) else {
            return Err(Failure::usage(format!("no task {id}")));
        };
        // The rule is the comment command's too (`/opentiger cancel`), so both agree.
        if let Some(why) = cancel_refusal(task) {
            return Err(Failure::usage(why));
        }
        // Issue 40: the children working on it go with it, first.
        let mut lines = Vec::new();
        for member in cancel_family(task, &tasks) {
            let state = tasks[&member].state();
            store.transition_task(
                &member,
                TaskState::CANCELLED,
                reason,
                TaskChanges::default(),
                writer(ctx),
            )?;
            lines.push(format!("{member}: {state} → cancelled"));
        }
        Ok(lines)
    })?;
    for line in lines {
        outln!("{line}");
    }
    Ok(())
}

pub(super) fn approve(
    ctx: &Context,
    id: Option<&str>,
    all: bool,
    commit: Option<&str>,
) -> CmdResult {
    if let Some(word) = commit.filter(|w| !crate::engine::scan::looks_like_commit(w)) {
        return Err(Failure::usage(format!(
            "--commit {word}: not a commit (7 to 40 hex digits)\n  fix: name the held commit `opentiger task show ID` reports"
        )));
    }
    let lines = ctx.write_state("task approve", |store| {
        let waiting: Vec<Task> = store
            .list_tasks(&TaskFilter { status: Some(TaskStatus::Blocked), include_terminal: false })?
            .into_iter()
            .filter(|t| t.needs_approval && t.block_reason == Some(BlockReason::AwaitingHuman))
            .collect();
        let chosen: Vec<&Task> = match id {
            Some(given) => {
                let id = store.resolve_task_id(given)?;
                // Issue 36: a change the threat scan held, approved exactly.
                let task = store.task(&id)?;
                let last = store.last_run(&id)?;
                let last_held = last.as_ref().and_then(|l| l.held.as_ref());
                let held = crate::engine::scan::held_change(&task, last_held);
                if let Some(word) = commit {
                    // A person names what they looked at: anything else is approved by nobody.
                    let Some(held) = held else {
                        return Err(Failure::usage(format!(
                            "task {id} holds no change to approve by commit (it is {})\n  fix: drop --commit to approve the task itself",
                            task.state()
                        )));
                    };
                    if let Some(why) = crate::engine::scan::wrong_change(word, held) {
                        return Err(Failure::usage(format!("task {id}: {why}")));
                    }
                }
                if let Some(held) = held {
                    let head = held.head.clone();
                    let reason = format!("its change {head} approved by a person after the threat scan");
                    store.approve_change(&id, held, "a person (opentiger task approve)", &reason, writer(ctx))?;
                    return Ok(vec![format!(
                        "{id}: its change {head} (held by the threat scan) is approved; the next tick lets exactly that change out, once"
                    )]);
                }
                match waiting.iter().find(|t| t.id == id) {
                    Some(t) => vec![t],
                    None => {
                        let task = store.task(&id)?;
                        return Err(Failure::usage(format!(
                            "task {id} does not wait for approval (it is {})\n  fix: `opentiger task list --status blocked` shows what waits",
                            task.state()
                        )));
                    }
                }
            }
            None if all => waiting.iter().collect(),
            None => Vec::new(),
        };
        let planned = store.plan_of_tasks()?;
        let github = ctx.config.mode == crate::model::Mode::Github;
        let mut lines = Vec::new();
        for task in chosen {
            // The rule is the comment command's too: a planned task gets its issue first.
            let to = approved_state(task, planned.contains_key(&task.id), github);
            let changes = TaskChanges { attempts: None, next_attempt_at: None, needs_approval: Some(false) };
            store.transition_task(&task.id, to, "approved by a person", changes, writer(ctx))?;
            lines.push(format!("{}: approved → {to}", task.id));
        }
        Ok(lines)
    })?;
    if lines.is_empty() {
        outln!("No task waits for approval.");
    }
    for line in lines {
        outln!("{line}");
    }
    Ok(())
}

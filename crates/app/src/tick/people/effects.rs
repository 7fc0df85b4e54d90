//! github mode: one decided command made real — what `engine::commands::decide` reads of the
//! state ([`decide_on`]) and its effects applied to it, all or nothing ([`apply_effects`]) —
//! shared by the comment commands and the ticked boxes, so a box and a comment follow one rule.
//!
//! Not for: where the command came from (`commands.rs`, `boxes.rs`) or the rules themselves
//! (`engine::commands`).

use std::collections::BTreeMap;

use crate::engine::commands::{self, Effect, Origin, Parsed, Place, Request};
use crate::model::{Issue, TaskId};
use crate::store::{RepoPause, Store, TaskChanges, TaskFilter, Writer};
use crate::tick::Context;
use crate::time::Timestamp;

/// Who asks, where, and how (everything of a [`Request`] besides the state).
pub(super) struct Asked<'a> {
    pub author: &'a str,
    pub allowed: bool,
    pub refused_before: bool,
    pub place: Place,
    pub checkbox: bool,
}

/// Decides one command on the state as it is now (`engine::commands::decide`).
pub(super) fn decide_on(
    ctx: &Context,
    store: &Store,
    parsed: &Parsed,
    asked: Asked<'_>,
    issues: &[Issue],
    now: Timestamp,
) -> Result<commands::Decision, crate::store::StoreError> {
    let tasks: BTreeMap<TaskId, crate::model::Task> = store
        .list_tasks(&TaskFilter {
            status: None,
            include_terminal: true,
        })?
        .into_iter()
        .map(|t| (t.id.clone(), t))
        .collect();
    let pause = store.repo_pause()?;
    let origins = origins(store, &tasks, issues)?;
    Ok(commands::decide(
        parsed,
        &Request {
            author: asked.author,
            allowed: asked.allowed,
            refused_before: asked.refused_before,
            place: asked.place,
            tasks: &tasks,
            repo_paused_by: pause.as_ref().map(|p| p.by.as_str()),
            spent: &store.spend_by_task()?,
            budgets: &store.task_budgets()?,
            default_budget: ctx.config.budget.per_task_usd,
            origins: &origins,
            now,
            checkbox: asked.checkbox,
            reports: &store
                .research_reports()?
                .into_iter()
                .map(|r| (r.task_id.clone(), r))
                .collect(),
            last_runs: &last_runs(store, &tasks)?,
        },
    ))
}

/// The latest run of each task that waits on a person (what `retry` looks at).
fn last_runs(
    store: &Store,
    tasks: &BTreeMap<TaskId, crate::model::Task>,
) -> Result<BTreeMap<TaskId, commands::LastRun>, crate::store::StoreError> {
    let waiting = tasks.values().filter(|t| {
        t.state() == crate::model::TaskState::blocked(crate::model::BlockReason::AwaitingHuman)
    });
    let mut runs = BTreeMap::new();
    for task in waiting {
        if let Some(last) = store.last_run(&task.id)? {
            runs.insert(task.id.clone(), last);
        }
    }
    Ok(runs)
}

/// Where each task's plan came from, for `replan`: the planner's plan, else the issue it was
/// imported from (fix children and tasks added by hand have none).
fn origins(
    store: &Store,
    tasks: &BTreeMap<TaskId, crate::model::Task>,
    issues: &[Issue],
) -> Result<BTreeMap<TaskId, Origin>, crate::store::StoreError> {
    let planned = store.plan_of_tasks()?;
    Ok(tasks
        .values()
        .filter_map(|t| {
            let origin = match (planned.get(&t.id), t.issue_number) {
                (Some(plan), _) => Origin::Plan(plan.clone()),
                (None, Some(number)) if t.parent_task_id.is_none() => Origin::Issue {
                    number,
                    open: issues.iter().any(|i| i.number == number),
                },
                (None, _) => return None,
            };
            Some((t.id.clone(), origin))
        })
        .collect())
}

/// Who gave a command, and where, for the record.
pub(super) struct Source<'a> {
    /// The event's actor, e.g. `github:alice`.
    pub actor: String,
    pub author: &'a str,
    /// The comment (or issue) that gave it.
    pub url: &'a str,
    /// Unique per command: a replan's salt.
    pub nonce: u64,
}

/// The effects of one command, all or nothing.
pub(super) fn apply_effects(
    store: &mut Store,
    effects: &[Effect],
    source: &Source<'_>,
    issues: &[Issue],
    writer: Writer<'_>,
) -> Result<(), crate::store::StoreError> {
    // Check every move first, so a command never half-happens.
    for effect in effects {
        match effect {
            Effect::Move { task, to, .. } => {
                crate::model::check_transition(store.task(task)?.state(), *to)?;
            }
            Effect::Rejudge { task, .. } => {
                let to = crate::model::TaskState::blocked(crate::model::BlockReason::AwaitingJudge);
                crate::model::check_transition(store.task(task)?.state(), to)?;
            }
            Effect::ApproveChange { task, .. } => {
                crate::model::check_transition(
                    store.task(task)?.state(),
                    crate::model::TaskState::QUEUED,
                )?;
            }
            Effect::Respec { issue, .. } if !issues.iter().any(|i| i.number == *issue) => {
                return Err(crate::store::StoreError::Invalid(format!(
                    "issue #{issue} was not in this tick's backlog list"
                )));
            }
            Effect::Respec { .. }
            | Effect::AddTask(_)
            | Effect::EndCooldown { .. }
            | Effect::SetBudget { .. }
            | Effect::PauseRepo
            | Effect::ResumeRepo
            | Effect::Replan { .. }
            | Effect::Hold { .. }
            | Effect::Stop { .. } => {}
        }
    }
    for effect in effects {
        match effect {
            Effect::Move {
                task,
                to,
                reset_attempts,
                approved,
                reason,
            } => {
                let changes = TaskChanges {
                    attempts: reset_attempts.then(Default::default),
                    next_attempt_at: reset_attempts.then_some(None),
                    needs_approval: approved.then_some(false),
                };
                let reason = format!("{reason} ({})", source.url);
                let writer = Writer {
                    actor: &source.actor,
                    ..writer
                };
                store.transition_task(task, *to, &reason, changes, writer)?;
                // Issue 18: a person's retry says the agents' configuration is dealt with,
                // as `opentiger task retry` does: executors parked for it may run again.
                if *reset_attempts {
                    store.clear_config_parks()?;
                }
            }
            Effect::SetBudget { task, usd } => {
                store.set_task_budget(task, *usd, source.author, writer.now)?;
            }
            Effect::PauseRepo => store.set_repo_pause(Some(&RepoPause {
                by: source.author.to_string(),
                at: writer.now,
                comment: Some(source.url.to_string()),
            }))?,
            Effect::ResumeRepo => store.set_repo_pause(None)?,
            Effect::Respec { issue, .. } => {
                // Present: checked above.
                if let Some(read) = issues.iter().find(|i| i.number == *issue) {
                    store.set_issue_spec(&crate::engine::import::spec_of(read))?;
                }
            }
            Effect::EndCooldown { task, reason } => {
                let writer = Writer {
                    actor: &source.actor,
                    ..writer
                };
                store.clear_cooldown(task, &format!("{reason} ({})", source.url), writer)?;
            }
            Effect::AddTask(task) => {
                let writer = Writer {
                    actor: &source.actor,
                    ..writer
                };
                store.add_proposal_task(task, writer)?;
            }
            Effect::ApproveChange { task, held, reason } => {
                let writer = Writer {
                    actor: &source.actor,
                    ..writer
                };
                let reason = format!("{reason} ({})", source.url);
                store.approve_change(task, held, source.author, &reason, writer)?;
            }
            Effect::Rejudge { task, run, reason } => {
                let writer = Writer {
                    actor: &source.actor,
                    ..writer
                };
                store.rejudge(task, run, &format!("{reason} ({})", source.url), writer)?;
            }
            Effect::Hold { thread, by } => store.set_hold(*thread, by.as_deref(), writer.now)?,
            Effect::Replan { .. } => store.request_replan(source.nonce, writer.now)?,
            Effect::Stop { task, by } => {
                // The run holding the lease now; none when it ended since the command was read.
                let leased = store
                    .leased_tasks()?
                    .into_iter()
                    .find_map(|(t, run)| (&t == task).then_some(run));
                if let Some(run) = leased {
                    let writer = Writer {
                        actor: &source.actor,
                        ..writer
                    };
                    store.request_stop(task, &run, by, writer)?;
                }
            }
        }
    }
    Ok(())
}

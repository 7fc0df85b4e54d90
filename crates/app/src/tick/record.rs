//! Phase 3 of a tick, **record** (DESIGN §3 step 6), under the lock again: each finished piece
//! of work re-reads its task, the engine decides (`decide_outcome`, `decide_verdict`), and the
//! store writes — only where this tick still holds the lease, else a `stray` event. Then old runs
//! are pruned and the heartbeat is written when due.
//!
//! Not for: deciding anything itself; every rule is the engine's.

use super::done::Done;
use super::{Context, Failure, RunFailure, TickSummary};
use crate::engine::outcome::{decide_outcome, RunExecutors};
use crate::engine::verdict::{decide_verdict, JudgeConclusion};
use crate::model::{excerpt, PlanStatus, TaskState};
use crate::report;
use crate::runner::judge::JudgeResult;
use crate::runner::planner::PlanResult;
use crate::runner::work::WorkResult;
use crate::store::{Recorded, Store, TickRecord, Writer};

#[derive(Default)]
pub(super) struct RecordedLines {
    pub(super) lines: Vec<String>,
    pub(super) stray: usize,
    pub(super) spent_today: f64,
    pub(super) tasks_done: usize,
    pub(super) merged: usize,
    pub(super) spend_usd: f64,
    pub(super) failures: Vec<RunFailure>,
    /// Runs an interrupt stopped.
    pub(super) interrupted: usize,
}

pub(super) fn record(
    ctx: &Context,
    store: &mut Store,
    done: &[Done],
    now: crate::time::Timestamp,
    summary: &TickSummary,
) -> Result<RecordedLines, Failure> {
    let writer = Writer {
        tick_id: Some(&ctx.tick_id),
        actor: ctx.agent_id.as_str(),
        now,
    };
    let mut out = RecordedLines::default();
    for item in done {
        record_one(ctx, store, item, writer, &mut out)?;
    }
    out.spent_today = store.spend_on(&now.day())?;
    let pruned = store.prune(now, ctx.config.state.retention_days)?;
    if !pruned.is_empty() {
        out.lines.push(pruned.line());
    }
    // The heartbeat: every tick that did something, and at least hourly otherwise, so a quiet
    // tick on a state branch pushes nothing.
    let busy = summary.decisions > 0 || !done.is_empty();
    let stale = store
        .last_tick()?
        .is_none_or(|t| now.minus(t.started_at) >= crate::time::HOUR);
    if busy || stale {
        store.record_tick(&TickRecord {
            id: ctx.tick_id.to_string(),
            agent_id: ctx.agent_id.to_string(),
            started_at: ctx.now,
            finished_at: Some(now),
            // Issue 49: `status` shows a tick a signal stopped as interrupted, not as ok.
            outcome: Some(match crate::process::interrupt::requested() {
                Some(signal) => format!("interrupted by {}", signal.name()),
                None => "ok".to_string(),
            }),
            summary: serde_json::json!({ "decisions": summary.decisions, "runs": summary.claimed, "reviews": summary.judged }),
        })?;
    }
    Ok(out)
}

/// Records one finished piece of work for `writer`: this tick's, or a dead tick's whose record
/// was never saved (`super::unsaved`), each re-reading its task and applied only where the
/// writer still holds the lease.
pub(super) fn record_one(
    ctx: &Context,
    store: &mut Store,
    item: &Done,
    writer: Writer<'_>,
    out: &mut RecordedLines,
) -> Result<(), Failure> {
    let now = writer.now;
    // What was recorded, and whether it finished the task.
    let (recorded, finished) = match item {
        Done::Work(task_id, run_id, WorkResult { outcome, record }) => {
            let task = store.task(task_id)?;
            let waits = store.executor_waits()?;
            let executors = RunExecutors {
                used: record.executor_use.as_ref(),
                waits: &waits,
            };
            let decision = decide_outcome(&task, outcome, &executors, &ctx.config, now);
            // Issue 51: the task, what ran, what it cost, what is next; the move and the
            // metering are details.
            let cost = if record.cost_usd > 0.0 {
                format!(" (${:.2})", record.cost_usd)
            } else {
                String::new()
            };
            let next = match decision.to {
                TaskState::FAILED => String::new(),
                to => format!("; {}", super::report::next_words(to)),
            };
            out.lines.push(format!(
                "{} {:?}: {} {}{cost}{next}",
                task.id,
                truncate(&task.title),
                task.role,
                if outcome.success { "ran" } else { "failed" },
            ));
            out.lines.push(format!(
                "[outcome] {}: {} → {}",
                task.id,
                task.state(),
                decision.to
            ));
            out.spend_usd += record.cost_usd;
            // Issue 37: what its door metered and refused, in the tick's output and summary.
            let metered = record.metered.as_ref();
            if let Some(line) =
                report::spend_line(record.cost_usd, record.reported_cost_usd, metered)
            {
                out.lines.push(format!("    [spend] {line}"));
            }
            for refusal in &record.refused {
                out.lines.push(format!("    refused: {}", refusal.line()));
            }
            if !outcome.success {
                let headline = excerpt::headline(&outcome.message);
                let tail = excerpt::tail(&outcome.message);
                out.lines.push(format!("    {headline}"));
                out.lines
                    .extend(tail.iter().map(|l| format!("      | {l}")));
                out.failures.push(RunFailure {
                    task_id: task.id.to_string(),
                    title: task.title.clone(),
                    failure_code: outcome.failure_code.map(|c| c.as_str()),
                    message: headline,
                    output_tail: tail,
                    task_state: decision.to.to_string(),
                });
            }
            let recorded = store.record_run(task_id, run_id, record, &decision, writer)?;
            // Issue 52: what the run teaches about the host, and its prompt's size.
            out.lines.extend(super::learned::learn_from_run(
                store,
                ctx,
                (&task, run_id),
                record,
                outcome.success,
                now,
            )?);
            (recorded, decision.to == TaskState::DONE)
        }
        Done::HostProbed(snapshot) => {
            store.save_host_snapshot(snapshot)?;
            (Recorded::Applied, false)
        }
        Done::Review(
            task_id,
            run_id,
            JudgeResult {
                conclusion,
                judgement,
                spend,
                ..
            },
        ) => {
            if let Some(spend) = spend {
                out.spend_usd += spend.cost_usd;
                store.record_agent_spend(spend, writer)?;
            }
            let task = store.task(task_id)?;
            let lineage = store.lineage(&task)?;
            let decision = decide_verdict(&task, conclusion, &lineage, &ctx.config, now);
            out.lines.push(format!(
                "{} {:?}: review: {}",
                task.id,
                truncate(&task.title),
                decision.reason
            ));
            if matches!(conclusion, JudgeConclusion::Merged { .. }) {
                out.merged += 1;
            }
            (
                store.record_judgement(task_id, run_id, judgement.as_ref(), &decision, writer)?,
                decision.to == TaskState::DONE,
            )
        }
        Done::Issue(task_id, opened) => {
            match opened {
                Ok(n) => {
                    store.link_issue(task_id, *n)?;
                    out.lines.push(format!("{task_id}: opened issue #{n}"));
                }
                Err(e) => out.lines.push(format!(
                    "{task_id}: could not open its issue, tried again next tick: {e}"
                )),
            }
            (Recorded::Applied, false)
        }
        Done::Unstarted(task_id, run_id, why) => {
            out.lines.push(format!("{task_id}: {why}"));
            let record = crate::store::RunRecord {
                error: Some(why.clone()),
                ..Default::default()
            };
            (
                store.record_run(task_id, run_id, &record, &requeued(why), writer)?,
                false,
            )
        }
        Done::Interrupted(task_id, run_id, WorkResult { record, .. }, why) => {
            out.lines.push(format!("{task_id}: {why}"));
            out.interrupted += 1;
            out.spend_usd += record.cost_usd;
            let record = crate::store::RunRecord {
                error: Some(why.clone()),
                ..record.clone()
            };
            (
                store.record_run(task_id, run_id, &record, &requeued(why), writer)?,
                false,
            )
        }
        Done::Stopped(task_id, run_id, WorkResult { record, .. }, request) => {
            let task = store.task(task_id)?;
            let decision = crate::engine::stop::stopped(&task, &request.by, request.at);
            out.lines.push(format!(
                "{task_id} {:?}: stopped by {}; it waits for you: `opentiger task retry {task_id}` queues it again",
                truncate(&task.title),
                request.by
            ));
            out.spend_usd += record.cost_usd;
            let record = crate::store::RunRecord {
                error: Some(format!("stopped on request by {}", request.by)),
                ..record.clone()
            };
            let recorded = store.record_run(task_id, run_id, &record, &decision, writer)?;
            store.forget_stop(run_id)?;
            (recorded, false)
        }
        Done::PullClosed(task_id, pr, closed) => {
            match closed {
                Ok(()) => {
                    store.set_pull_state(*pr, crate::engine::PullState::Closed, None, now)?;
                    out.lines.push(format!(
                        "{task_id}: closed PR #{pr}, its goal is recreated from the base"
                    ));
                }
                Err(e) => out.lines.push(format!(
                    "{task_id}: could not close PR #{pr}, tried again next tick: {e}"
                )),
            }
            (Recorded::Applied, false)
        }
        Done::Retargeted(task_id, pr, base, moved) => {
            match moved {
                Ok(()) => {
                    store.set_pull_base(*pr, base, now)?;
                    out.lines
                        .push(format!("{task_id}: PR #{pr} now targets `{base}`"));
                }
                Err(e) => out.lines.push(format!(
                    "{task_id}: could not retarget PR #{pr} to `{base}` (a person decides next tick): {e}"
                )),
            }
            (Recorded::Applied, false)
        }
        Done::CiHealed(heal, healed) => {
            out.lines
                .extend(super::ci_gate::record_heal(store, heal, healed, now)?);
            (Recorded::Applied, false)
        }
        Done::Plan(plan) => {
            out.lines.push(plan_line(plan));
            if let Some(spend) = &plan.spend {
                out.spend_usd += spend.cost_usd;
                store.record_agent_spend(spend, writer)?;
            }
            if !store.record_plan(&plan.record, &plan.tasks, writer)? {
                out.lines
                    .push("  (already planned by another tick: nothing created)".to_string());
            }
            (Recorded::Applied, false)
        }
    };
    if finished && recorded == Recorded::Applied {
        out.tasks_done += 1;
    }
    if let Recorded::Stray { holder } = recorded {
        out.stray += 1;
        out.lines.push(format!(
            "outcome not applied, the lease is now {}",
            holder.as_deref().unwrap_or("gone")
        ));
    }
    Ok(())
}

/// A run that ended without a result of its own (not started, or stopped by an interrupt):
/// cancelled, and its task queued again with no attempt counted and no wait.
pub(super) fn requeued(why: &str) -> crate::engine::outcome::OutcomeDecision {
    crate::engine::outcome::OutcomeDecision {
        run_status: crate::model::RunStatus::Cancelled,
        failure_code: None,
        to: crate::model::TaskState::QUEUED,
        attempts: None,
        next_attempt_at: Some(None),
        reason: why.to_string(),
        executor: None,
    }
}

/// One line about a plan for the tick's report.
pub fn plan_line(plan: &PlanResult) -> String {
    let r = &plan.record;
    match r.status {
        PlanStatus::Created => {
            let titles: Vec<String> = plan
                .tasks
                .iter()
                .map(|t| format!("{} {:?}", t.id, truncate(&t.title)))
                .collect();
            format!(
                "planner ({}): {} task(s) created{}{}",
                r.source,
                r.task_count,
                if titles.is_empty() { "" } else { ": " },
                titles.join(", ")
            )
        }
        PlanStatus::Rejected => format!(
            "planner ({}): plan rejected, nothing created: {}",
            r.source,
            r.errors.join("; ")
        ),
        PlanStatus::Failed => format!(
            "planner ({}): failed, nothing created: {}",
            r.source,
            r.errors.join("; ")
        ),
    }
}

fn truncate(text: &str) -> String {
    report::truncate(text, 50)
}

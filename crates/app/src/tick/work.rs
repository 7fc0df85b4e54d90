//! `opentiger work --run ID`: the work half of a fan-out (DESIGN §3 "Scaling out"). A
//! `tick --fan-out N` claims runs under a `fanout:<tick>` lease and prints them as a job matrix;
//! each matrix job takes one run's lease over (so its own end, not the claim job's, is what
//! recovery watches), runs the task like a tick would, and records the outcome.
//!
//! A job retried after its run was recorded does nothing; a run whose lease expired or was
//! taken by someone else is refused: only one process ever works on a run.
//!
//! Not for: the split job without a token and the one with it (`super::output`,
//! `super::apply`), which use this file's lease take-over and record.

use super::{act::publish_run, Context, Failure};
use crate::engine::outcome::{decide_outcome, RunExecutors};
use crate::forge::github::GithubClient;
use crate::model::{Mode, RunId, TaskId, TickId};
use crate::prompt::Templates;
use crate::runner::work::{run_task, WorkResult};
use crate::store::{Handover, Recorded, Writer, FAN_OUT_PREFIX};

/// The lease holder of a fan-out's claims.
pub fn fan_out_holder(tick: &TickId) -> crate::model::AgentId {
    crate::model::AgentId::from(format!("{FAN_OUT_PREFIX}{tick}").as_str())
}

/// What `work --run` did with its run.
pub enum WorkDone {
    /// A retried job: the run was recorded already, with this status.
    AlreadyRecorded(String),
    /// The run was worked and its outcome recorded.
    Recorded {
        /// `<task> "<title>": <from> → <to>`.
        line: String,
        /// The run's failure message (redacted), when it failed.
        failure: Option<String>,
        /// The lease moved on meanwhile: the outcome was not applied (its holder, if any).
        stray: Option<Option<String>>,
    },
}

/// Takes over one fan-out run's lease, works on it like a tick would, and records it.
pub fn work_run(ctx: &Context, run_id: &RunId) -> Result<WorkDone, Failure> {
    let run_id = run_id.clone();
    crate::sandbox::groups::kill_orphaned_agents(&ctx.repo);
    let forge = match ctx.config.mode {
        Mode::Github => Some(
            GithubClient::from_env(None, crate::credentials::lookup)
                .map_err(|e| Failure::usage(e.to_string()))?,
        ),
        Mode::LocalGit | Mode::Direct => None,
    };
    if let Some(why) = crate::credentials::missing_push_token(&ctx.config) {
        return Err(Failure::usage(format!("{}: {why}", ctx.config_source)));
    }
    let task_id = match take_over(ctx, &run_id)? {
        Waiting::Ready(task) => task,
        Waiting::Recorded(status) => return Ok(WorkDone::AlreadyRecorded(status)),
    };
    let store = ctx.read_store()?;
    let task = store.task(&task_id)?;
    let brief = crate::runner::Brief::read(&store, &task, &run_id)?;
    let executor_waits = store.executor_waits()?;
    let learned = store.learned()?;
    drop(store);

    let templates = Templates::load(&ctx.repo).map_err(|e| Failure::usage(e.to_string()))?;
    let redactor = ctx.redactor();
    let probed = super::learned::refresh(ctx, &learned);
    let learned = super::learned::with_host(learned, probed.as_ref());
    // Issue 51: a person may stop this run while its agent runs, from wherever they are.
    let watch = super::stop_watch::watch(ctx, &run_id);
    let act = crate::runner::Act {
        stop: watch
            .clone()
            .map(|w| w as std::sync::Arc<dyn crate::process::Sentinel>),
        ..ctx.act(&templates, &redactor, &executor_waits, &learned)
    };
    let fold = crate::live::fold(&redactor.redact(&format!(
        "run {run_id}: {} task {} {:?}",
        task.role,
        task.id,
        crate::report::truncate(&task.title, 60)
    )));
    let mut result = run_task(&act, &task, &run_id, &brief);
    drop(fold);
    let stopped = watch
        .and_then(|w| w.fired())
        .filter(|_| !result.outcome.success);
    if let Some(request) = stopped {
        return record_work(
            ctx,
            &task_id,
            &run_id,
            &result,
            probed.as_ref(),
            Some(&request),
        );
    }
    if let (Some(client), true) = (
        &forge,
        result.outcome.success && result.record.head_sha.is_some(),
    ) {
        publish_run(ctx, client, &task, &run_id, &mut result);
    }
    let done = record_work(ctx, &task_id, &run_id, &result, probed.as_ref(), None)?;
    super::people::post_after_work(ctx, forge.as_ref(), &task);
    Ok(done)
}

/// Whether a fan-out run waits for a job.
pub(super) enum Waiting {
    /// It does: its task.
    Ready(TaskId),
    /// It was recorded already (a retried job), with this status: nothing to do.
    Recorded(String),
}

/// Takes a fan-out run's lease over for this process; a run nobody may take is an error.
pub(super) fn take_over(ctx: &Context, run_id: &RunId) -> Result<Waiting, Failure> {
    let writer = Writer {
        tick_id: Some(&ctx.tick_id),
        actor: ctx.agent_id.as_str(),
        now: ctx.now,
    };
    let handover = ctx.write_state("take over the run", |store| {
        Ok(store.take_over_lease(run_id, ctx.agent_id.as_str(), writer)?)
    })?;
    waiting(run_id, handover)
}

/// What a run's [`Handover`] means for a job that came to work on it.
pub(super) fn waiting(run_id: &RunId, handover: Handover) -> Result<Waiting, Failure> {
    match handover {
        Handover::Taken(task) => Ok(Waiting::Ready(task)),
        Handover::Finished(status) => Ok(Waiting::Recorded(status)),
        Handover::Held(holder) => Err(Failure {
            code: 3,
            message: format!(
                "run {run_id} is not waiting for a work job: its lease is {}. Nothing was done; the next tick recovers it if it is stuck",
                holder.map_or("gone (expired and reclaimed)".to_string(), |h| format!("held by {h}"))
            ),
        }),
        Handover::Unknown => Err(Failure::usage(format!(
            "no run {run_id} in the state: pass an id from the matrix `opentiger tick --fan-out N` printed"
        ))),
    }
}

/// Records a worked run on the latest state, as a tick's record phase would, with the host
/// snapshot its job took (`probed`), if it took one; `stopped`: a person asked it to stop and
/// it did (issue 51).
pub(super) fn record_work(
    ctx: &Context,
    task_id: &TaskId,
    run_id: &RunId,
    result: &WorkResult,
    probed: Option<&crate::model::learned::HostSnapshot>,
    stopped: Option<&crate::store::StopRequest>,
) -> Result<WorkDone, Failure> {
    let now = ctx.later();
    let writer = Writer {
        tick_id: Some(&ctx.tick_id),
        actor: ctx.agent_id.as_str(),
        now,
    };
    let (line, recorded) = ctx.record_state("record the run", |store| {
        let task = store.task(task_id)?;
        let waits = store.executor_waits()?;
        let executors = RunExecutors {
            used: result.record.executor_use.as_ref(),
            waits: &waits,
        };
        // A run an interrupt stopped is cancelled and queued again, as in a tick (issue 29).
        let decision = match (
            stopped,
            crate::process::interrupt::requested(),
            result.outcome.success,
        ) {
            (Some(request), _, _) => crate::engine::stop::stopped(&task, &request.by, request.at),
            (None, Some(signal), false) => super::record::requeued(&format!(
                "cancelled: interrupted by {} (stopped, queued again)",
                signal.name()
            )),
            (None, Some(_) | None, true) | (None, None, false) => {
                decide_outcome(&task, &result.outcome, &executors, &ctx.config, now)
            }
        };
        let line = format!(
            "{} {:?}: {} → {}",
            task.id,
            crate::report::truncate(&task.title, 50),
            task.state(),
            decision.to
        );
        let recorded = store.record_run(task_id, run_id, &result.record, &decision, writer)?;
        if let Some(snapshot) = probed {
            store.save_host_snapshot(snapshot)?;
        }
        if stopped.is_some() {
            // A person's stop teaches nothing about the host.
            store.forget_stop(run_id)?;
        } else {
            super::learned::learn_from_run(
                store,
                ctx,
                (&task, run_id),
                &result.record,
                result.outcome.success,
                now,
            )?;
        }
        Ok((line, recorded))
    })?;
    Ok(WorkDone::Recorded {
        line,
        failure: (!result.outcome.success).then(|| result.outcome.message.clone()),
        stray: match recorded {
            Recorded::Stray { holder } => Some(holder),
            Recorded::Applied => None,
        },
    })
}

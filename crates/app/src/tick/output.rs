//! `opentiger work --run ID --output DIR`: the work half of a fan-out for a job that holds no
//! forge token (the "safe outputs" split, DESIGN §10). It reads the state as the checkout
//! fetched it, checks the run is a fan-out claim still waiting for a work job, runs the task
//! exactly like `work --run` (the same `run_task`: path policy, secret scan, verification), and
//! writes the result to DIR ([`crate::safe_output`]) for `opentiger apply DIR` in a job that
//! holds the token.
//!
//! Not for: writing the state, talking to the forge or the remote, or asking `credentials` for
//! a token — nothing here does: the redactor reads the environment alone, and the run keeps its
//! commit on the local task branch ([`Delivery::Keep`]).

use std::path::Path;

use super::work::{waiting, Waiting};
use super::{Context, Failure};
use crate::git::Git;
use crate::model::{Mode, RunId};
use crate::prompt::Templates;
use crate::runner::work::run_task;
use crate::runner::Delivery;
use crate::safe_output::{self, ResultRecord};

/// What `work --output` wrote.
pub enum Written {
    /// The run was recorded already (a retried job): nothing written.
    AlreadyRecorded(String),
    /// The run's result is in the folder.
    Result {
        /// `<task> "<title>": succeeded | failed (<code>)`.
        line: String,
        /// The run's failure message (redacted), when it failed.
        failure: Option<String>,
        /// A bundle was written (the run committed something new).
        bundle: bool,
    },
}

/// Works on a fan-out run without a token and writes its result to `dir`.
pub fn work_output(ctx: &Context, run_id: &RunId, dir: &Path) -> Result<Written, Failure> {
    if ctx.config.mode == Mode::Direct {
        return Err(Failure::usage(
            "`work --output` needs a task branch to bundle: it works in `mode: github` or `mode: local-git`, not `mode: direct`",
        ));
    }
    crate::sandbox::groups::kill_orphaned_agents(&ctx.repo);
    let store = ctx.read_fetched_store()?;
    let task_id = match waiting(run_id, store.fan_out_claim(run_id, ctx.now)?) {
        Ok(Waiting::Ready(task)) => task,
        Ok(Waiting::Recorded(status)) => return Ok(Written::AlreadyRecorded(status)),
        Err(failure) if failure.code == 2 => {
            return Err(Failure::usage(format!(
            "{}\n  (read from {}: the checkout must fetch the state branch, e.g. `fetch-depth: 0`)",
            failure.message,
            ctx.state_ref().fetched_ref()
        )))
        }
        Err(failure) => return Err(failure),
    };
    safe_output::prepare(dir).map_err(|e| Failure::usage(e.to_string()))?;
    let task = store.task(&task_id)?;
    let brief = crate::runner::Brief::read(&store, &task, run_id)?;
    let executor_waits = store.executor_waits()?;
    let learned = store.learned()?;
    drop(store);

    let templates = Templates::load(&ctx.repo).map_err(|e| Failure::usage(e.to_string()))?;
    // No token here, and none is asked for: the values to redact are the environment's.
    let redactor = ctx.redactor_with(|name| std::env::var(name).ok());
    // A job that cannot write the state probes for its own prompt when the snapshot is due.
    let probed = super::learned::refresh(ctx, &learned);
    let learned = super::learned::with_host(learned, probed.as_ref());
    let act = crate::runner::Act {
        delivery: Delivery::Keep,
        ..ctx.act(&templates, &redactor, &executor_waits, &learned)
    };
    let fold = crate::live::fold(&redactor.redact(&format!(
        "run {run_id}: {} task {} {:?}",
        task.role,
        task.id,
        crate::report::truncate(&task.title, 60)
    )));
    let result = run_task(&act, &task, run_id, &brief);
    drop(fold);
    let record = ResultRecord::of(run_id.as_str(), task_id.as_str(), &result, &redactor);
    let branch = crate::workspace::task_branch(&task);
    safe_output::write(dir, &record, &Git::new(&ctx.repo), &branch)
        .map_err(|e| Failure::tick(e.to_string()))?;
    let line = format!(
        "{} {:?}: {}",
        task.id,
        crate::report::truncate(&task.title, 50),
        match result.outcome.failure_code {
            None => "succeeded".to_string(),
            Some(code) => format!("failed ({})", code.as_str()),
        }
    );
    Ok(Written::Result {
        line,
        failure: (!result.outcome.success).then(|| record.outcome.message.clone()),
        bundle: dir.join(safe_output::BUNDLE_FILE).exists(),
    })
}

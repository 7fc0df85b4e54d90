//! The tick's side of what the loop learned (issue 52): before a round's agents run, the host
//! snapshot is taken again when it is due (missing, past `context.host_ttl_hours`, or its
//! fingerprint changed: `engine::learned::host::freshness`); when a run is recorded, what it
//! teaches updates the lessons (`engine::learned::book`) and its prompt size is kept. Once per
//! time to live, not per run: a tick whose snapshot holds probes nothing, and with
//! `context.host_chars: 0` nothing is probed.
//!
//! Not for: probing (`runner::probe`), the rules (`engine::learned`), storing
//! (`store::learned`).

use super::Context;
use crate::engine::learned::{book, host};
use crate::model::learned::{HostSnapshot, Learned};
use crate::model::{RunId, Task};
use crate::store::{RunRecord, Store, StoreError};
use crate::time::Timestamp;

/// A new snapshot when the one in `learned` is due, else `None` (a probe that could not run
/// is logged, and the runs go on with what is known).
pub fn refresh(ctx: &Context, learned: &Learned) -> Option<HostSnapshot> {
    if !host::wanted(&ctx.config.context) {
        return None;
    }
    let fingerprint = crate::runner::probe::fingerprint(&ctx.config);
    let due = host::freshness(
        learned.host.as_ref(),
        &fingerprint,
        ctx.now,
        ctx.config.context.host_ttl_hours,
    );
    if !due.due() {
        return None;
    }
    let _fold = crate::live::fold("host probe: what the agents' sandbox offers");
    match crate::runner::probe::take(&ctx.config, &ctx.repo, ctx.now) {
        Ok(snapshot) => Some(snapshot),
        Err(e) => {
            tracing::warn!("the host probe could not run ({}): {e}", due.word());
            None
        }
    }
}

/// `learned` with `fresh` in place of its snapshot, when there is one.
pub fn with_host(mut learned: Learned, fresh: Option<&HostSnapshot>) -> Learned {
    if let Some(snapshot) = fresh {
        learned.host = Some(snapshot.clone());
    }
    learned
}

/// A line for the tick's report about a snapshot just taken.
pub(crate) fn probed_line(snapshot: &HostSnapshot) -> String {
    let found = snapshot.tools.iter().filter(|t| t.present).count();
    format!(
        "host probe ({} ms): {}, {}, {}; {found} of {} tools found in the agents' sandbox",
        snapshot.probe_ms,
        snapshot.os,
        snapshot.kernel,
        snapshot.arch,
        snapshot.tools.len()
    )
}

/// Records what run `run_id` of `task` teaches (its `record`; `success`: how it ended) and its
/// prompt size; one line per lesson it added, for the tick's report.
pub(crate) fn learn_from_run(
    store: &mut Store,
    ctx: &Context,
    (task, run_id): (&Task, &RunId),
    record: &RunRecord,
    success: bool,
    now: Timestamp,
) -> Result<Vec<String>, StoreError> {
    if let Some(size) = &record.prompt {
        store.record_prompt_size(run_id, size)?;
    }
    let planned = book::planned_texts(task, &ctx.config);
    let tools = host::configured_programs(&ctx.config);
    let seen = book::observe(
        success,
        &record.verification,
        &record.refused,
        &planned,
        &tools,
    );
    let learned = store.learned()?;
    let change = book::learn(
        &learned.lessons,
        &seen,
        learned.host.as_ref(),
        now,
        &ctx.config.context,
    );
    store.apply_lessons(&change)?;
    Ok(change
        .upsert
        .iter()
        .map(|l| {
            format!(
                "    lesson {}: {} (seen {}×)",
                l.id,
                crate::engine::learned::inject::fact(&l.signature, learned.host.as_ref()),
                l.count
            )
        })
        .collect())
}

//! One tick of the loop (DESIGN §3), the application layer between the command line and the
//! edges: the [`Context`] a tick runs in (configuration, the time read once, who we are, the
//! state and its compare-and-swap write loop), the observe step of github mode ([`observe`]),
//! what people say on GitHub, read and acted on ([`people`]: read in observe, applied in the
//! claim, answered after it), the three phases — [`claim`], [`act`], [`record`] — what a tick
//! reports ([`report`]; [`progress`]: each issue task's progress comment; [`dashboard`]), and
//! the work half of a fan-out ([`work`]).
//!
//! Every decision is the engine's; every effect goes through an edge (`store`, `statebranch`,
//! `forge`, `runner`). Not for: argument parsing or printing (that is `cli`), or any rule.
//!
//! With `--dry-run` the command line stops after planning (`Context::plan` on a read-only
//! copy of the state): nothing is written.

mod act;
pub mod apply;
mod checkout;
mod checks;
mod ci_gate;
mod claim;
mod context;
mod dashboard;
mod done;
mod escalate;
pub mod learned;
mod lock;
pub mod observe;
pub mod output;
mod people;
mod plan_thread;
mod progress;
mod publish;
mod record;
mod report;
mod rounds;
pub mod status;
mod stop_watch;
mod unsaved;
pub mod work;

use crate::forge::github::GithubClient;
use crate::model::Mode;
use crate::store::Writer;

pub use crate::failure::Failure;
pub use claim::PlanWork;
pub use context::{Context, ContextOptions, PlanInputs};
pub use lock::{process_alive, FileLock};
pub use progress::phase_facts;
use progress::Reports;
pub use record::plan_line;
pub use report::{report_tick, RunFailure, TickSummary};

/// What a dry run sees of GitHub (github mode; nothing elsewhere): the tick's observe step
/// (GETs only, conditional with the stored ETags) applied to `store`, which must be a copy in
/// memory, so the plan made from it shows what a real tick would import. Returns the lines a
/// tick would print for it.
pub fn observe_into(
    ctx: &Context,
    store: &mut crate::store::Store,
) -> Result<Vec<String>, Failure> {
    match ctx.config.mode {
        Mode::Github => {
            let client = GithubClient::from_env(None, crate::credentials::lookup).map_err(|e| {
                Failure::usage(format!(
                    "{e}\n  or: `opentiger tick --dry-run --offline` plans from the state alone"
                ))
            })?;
            let seen = observe::observe(ctx, &client, store)?;
            let writer = Writer {
                tick_id: Some(&ctx.tick_id),
                actor: ctx.agent_id.as_str(),
                now: ctx.now,
            };
            seen.apply(ctx, store, writer)
        }
        Mode::LocalGit | Mode::Direct => Ok(Vec::new()),
    }
}

pub fn tick(ctx: &Context) -> Result<TickSummary, Failure> {
    tick_with(ctx, false)
}

/// One tick; with `fan_out` the claimed runs are listed in the summary's matrix, not run (and
/// the tick has one round). Otherwise, after each round the tick plans again and goes on while
/// the next step needs nothing from outside and fits before its deadline ([`rounds`]).
pub fn tick_with(ctx: &Context, fan_out: bool) -> Result<TickSummary, Failure> {
    let ctx = &rounds::first(ctx, fan_out);
    claim::preflight_checks(ctx)?;
    let span = tracing::info_span!("tick", id = %ctx.tick_id);
    let _enter = span.enter();
    // Agents a killed tick left running on this host die before their work is claimed again.
    let orphans = crate::sandbox::groups::kill_orphaned_agents(&ctx.repo);
    if !orphans.is_empty() {
        tracing::info!(
            "killed {} agent group(s) left by killed ticks",
            orphans.len()
        );
    }
    let mut summary = TickSummary {
        tick_id: ctx.tick_id.to_string(),
        matrix: fan_out.then(Vec::new),
        ..TickSummary::default()
    };

    // github mode: observe GitHub first (conditional requests; nothing locked meanwhile).
    let forge = match ctx.config.mode {
        Mode::Github => Some(
            GithubClient::from_env(None, crate::credentials::lookup)
                .map_err(|e| Failure::usage(e.to_string()))?,
        ),
        Mode::LocalGit | Mode::Direct => None,
    };
    let observed = match &forge {
        Some(client) => Some(observe::observe(ctx, client, &ctx.read_store()?)?),
        None => None,
    };
    if let Some(until) = observed.as_ref().and_then(|o| o.wait_until) {
        // A rate limit is a wait, not an error: remember it and stop here (exit 0).
        let writer = Writer {
            tick_id: Some(&ctx.tick_id),
            actor: ctx.agent_id.as_str(),
            now: ctx.now,
        };
        let lines = ctx.write_state("rate limit", |store| {
            observed
                .as_ref()
                .map_or(Ok(Vec::new()), |o| o.apply(ctx, store, writer))
        })?;
        summary.lines = lines;
        summary.lines.push(format!(
            "waiting for GitHub's rate limit until {until}: nothing else done this tick"
        ));
        return Ok(summary);
    }

    // Phase 1: claim. On a state branch this may run again on fresher state if another tick
    // saved first; it only changes state.
    let owed_replies = std::cell::RefCell::new(Vec::new());
    let owed_questions = std::cell::RefCell::new(Vec::new());
    let replayed = std::cell::RefCell::new(None);
    // Issue 49: what the tick claims, starts and finishes is kept on disk until it is saved.
    let mut unsaved = unsaved::Unsaved::open(ctx);
    let preview = std::cell::RefCell::new(None);
    let mut claimed = ctx.write_state("claim", |store| {
        // Issue 49: what ticks that died here finished but never saved, recorded first, so
        // it is neither run again nor counted as lost.
        let left = unsaved::replay(ctx, store)?;
        let mut lines = left.lines.clone();
        replayed.replace(Some(left));
        lines.extend(match &observed {
            Some(o) => o.apply(
                ctx,
                store,
                Writer {
                    tick_id: Some(&ctx.tick_id),
                    actor: ctx.agent_id.as_str(),
                    now: ctx.now,
                },
            )?,
            None => Vec::new(),
        });
        if observed.is_some() {
            owed_replies.replace(store.unreplied_commands()?);
            let writer = Writer {
                tick_id: Some(&ctx.tick_id),
                actor: ctx.agent_id.as_str(),
                now: ctx.now,
            };
            lines.extend(escalate::decide(ctx, store, writer)?);
            owed_questions.replace(escalate::unpublished(ctx, store)?);
        }
        // Issue 51: the first tick on a repository in github mode says what it will do.
        if observed.is_some() && store.last_tick()?.is_none() {
            preview.replace(Some(first_preview(ctx, store)?));
        }
        let mut claimed = claim::claim(ctx, store)?;
        unsaved.begin(&claimed, fan_out);
        lines.append(&mut claimed.lines);
        claimed.lines = lines;
        Ok(claimed)
    })?;
    if let Some(saved) = replayed.into_inner() {
        saved.forget();
    }
    // Replies to the commands just recorded (and any a failed post left owed).
    if let (Some(client), Some(o)) = (&forge, &observed) {
        let replied =
            people::post_replies(ctx, client, o.commands.complete, &owed_replies.borrow());
        let asked = escalate::publish(ctx, client, o.commands.complete, &owed_questions.borrow());
        if let Some(login) = replied.or(asked) {
            people::remember_self(ctx, &login)?;
        }
        // A plan held for approval is shown on the requirement's issue (no request when the
        // comment already says it).
        claimed.lines.extend(plan_thread::publish(ctx, client));
    }
    summary.requests = forge.as_ref().map_or(0, |c| c.requests.get());
    summary.dashboard_ticked = observed.as_ref().is_some_and(|o| {
        o.dashboard
            .as_ref()
            .is_some_and(|d| !crate::engine::checkboxes::ticked(&d.body).is_empty())
    });
    summary.decisions = claimed.decisions;
    summary.lines = std::mem::take(&mut claimed.lines);
    summary.preview = preview.into_inner();
    if let Some(text) = &summary.preview {
        // In the job's log as it starts, before any agent does.
        crate::live::line("first tick on this repository:");
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            crate::live::line(line);
        }
    }
    let heartbeat_due = claimed.heartbeat_due;
    summary.claimed = claimed
        .work
        .iter()
        .filter(|w| matches!(w, claim::Work::Run { .. }))
        .count();
    summary.judged = claimed
        .work
        .iter()
        .filter(|w| matches!(w, claim::Work::Review { .. }))
        .count();

    // A quiet tick (nothing decided, nothing to run) stops here: nothing to record, nothing to
    // push, unless the hourly heartbeat is due.
    if summary.decisions == 0 && claimed.work.is_empty() && !heartbeat_due {
        // A task decided between ticks (`task cancel`, a command) still owes its issue the
        // outcome: it is `reporting` until the comment says so. Nothing owed costs nothing.
        // A task whose merge people just held (a label, a review, `/opentiger hold`) says so
        // too (issue 26; its report is stable, so an unchanged one costs nothing).
        report_progress(ctx, forge.as_ref(), Reports::FinalAndHeld, &mut summary);
        return Ok(summary);
    }

    let ended = rounds::run(
        ctx,
        forge.as_ref(),
        claimed,
        fan_out,
        &mut summary,
        &mut unsaved,
    )?;
    if forge.as_ref().is_some_and(|c| c.checks_refused.get()) {
        summary.lines.push(checks::STATUSES_NOTE.to_string());
    }
    summary.requests = forge.as_ref().map_or(0, |c| c.requests.get());
    match ended {
        rounds::Ended::Done => {}
        // What is owed to GitHub waits for the next tick: the person asked to stop.
        rounds::Ended::Interrupted => return Ok(summary),
    }
    // A plan the planner just held for approval is shown on the requirement's issue.
    if let Some(client) = &forge {
        summary.lines.extend(plan_thread::publish(ctx, client));
    }
    report_progress(ctx, forge.as_ref(), Reports::All, &mut summary);
    Ok(summary)
}

/// What opentiger will do here, with the tasks the first tick's observe imported.
fn first_preview(ctx: &Context, store: &crate::store::Store) -> Result<String, Failure> {
    let tasks: Vec<(String, String, Option<u64>)> = store
        .list_tasks(&crate::store::TaskFilter::default())?
        .into_iter()
        .map(|t| (t.id.to_string(), t.title, t.issue_number))
        .collect();
    Ok(crate::preview::text(
        &ctx.config,
        crate::preview::Issues::Tasks(&tasks),
    ))
}

/// Issue 14: each issue task's progress comment follows its phase (visibility only: a failure
/// is a warning, and the report stays owed for the next tick).
fn report_progress(
    ctx: &Context,
    forge: Option<&GithubClient>,
    which: Reports,
    summary: &mut TickSummary,
) {
    let Some(client) = forge else {
        return;
    };
    // One read of the state for both (on a state branch a read is a fetch and an assembly).
    let store = match ctx.read_store() {
        Ok(store) => store,
        Err(e) => return tracing::warn!("could not report progress: {}", e.message),
    };
    match progress::report_progress(ctx, client, &store, which) {
        Ok(lines) => summary.lines.extend(lines),
        Err(e) => tracing::warn!("could not report progress: {}", e.message),
    }
    // Issue 28: research reports kept and not yet posted as they are (none: no call).
    match people::post_reports(ctx, client, &store) {
        Ok(lines) => summary.lines.extend(lines),
        Err(e) => tracing::warn!("could not post research reports: {}", e.message),
    }
}

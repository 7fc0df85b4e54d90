//! Phase 2 of a tick, **act** (DESIGN §3 step 5), without the lock: each claimed run, review,
//! planner run, issue to open, PR to close or retarget and stalled PR to diagnose, in order; in github mode a finished run's PR is
//! opened or updated and a verdict commented. What happened is collected as [`Done`] for
//! [`super::record`].
//!
//! Not for: changing the state (everything learned here is recorded in phase 3, lease-checked).

use super::claim::{Claimed, Work};
use super::done::Done;
use super::unsaved::Unsaved;
use super::{checks, ci_gate, publish};
use super::{Context, Failure, TickSummary};
use crate::engine::tick_budget_spent;
use crate::engine::verdict::JudgeConclusion;
use crate::forge::github::GithubClient;
use crate::model::{RunId, Task};
use crate::prompt::Templates;
use crate::runner::judge::judge_run;
use crate::runner::work::{run_task, WorkResult};

/// Runs the claimed work; with `fan_out` the claimed runs are listed in the summary's matrix
/// instead of run here. `first`: the tick's first round, which clears what killed ticks left
/// and says once what confines the agents. Each run's start and whatever finishes is kept in
/// `unsaved` as it happens, so a tick that dies before its record is saved loses none of it.
pub(super) fn act(
    ctx: &Context,
    forge: Option<&GithubClient>,
    claimed: Claimed,
    fan_out: bool,
    first: bool,
    summary: &mut TickSummary,
    unsaved: &mut Unsaved,
) -> Result<Vec<Done>, Failure> {
    let Claimed {
        work,
        executor_waits,
        ci_note,
        learned,
        ..
    } = claimed;
    let stale = if first {
        crate::scratch::remove_leftovers()
    } else {
        Vec::new()
    };
    if !stale.is_empty() {
        summary.lines.push(format!(
            "[scratch] removed {} folder(s) of killed ticks' runs",
            stale.len()
        ));
    }
    if first && !work.is_empty() {
        // Issue 35: where nothing confines an agent, it may write the runner's repository.
        let unconfined = crate::sandbox::in_force(&ctx.config.sandbox)
            .into_iter()
            .find(|p| p.name == "landlock" && !p.in_force);
        if let Some(p) = unconfined {
            summary
                .lines
                .push(format!("warning: agents run unconfined: {}", p.detail));
        }
        // Issue 47: where no view of their own holds the agents' files, what that leaves open.
        // (Under `sandbox.filesystem: none` the warning above says it already.)
        if let Ok(walls) = crate::sandbox::file_walls(&ctx.config.sandbox) {
            if matches!(walls, crate::sandbox::FileWalls::SocketFilter { .. }) {
                summary
                    .lines
                    .push(format!("warning: agents' files: {}", walls.describe()));
            }
        }
        // Issue 37: where no namespace holds the agents' network, what that leaves open.
        if let Ok(isolation) = crate::sandbox::network_isolation(&ctx.config.sandbox) {
            if isolation != crate::sandbox::NetIsolation::Namespace {
                summary.lines.push(format!(
                    "warning: agents' network: {}",
                    isolation.describe()
                ));
            }
        }
    }
    let templates = if work.is_empty() {
        Templates::builtin()
    } else {
        Templates::load(&ctx.repo)
    }
    .map_err(|e| Failure::usage(e.to_string()))?;
    let redactor = ctx.redactor();
    let mut done = Vec::new();
    // Issue 52: before any agent of this round runs, the host snapshot when it is due.
    let runs_agents = work.iter().any(|w| match w {
        Work::Run { .. } => !fan_out,
        Work::Review { .. } | Work::Plan(_) => true,
        Work::OpenIssue(_) | Work::ClosePull(..) | Work::RetargetPull(..) | Work::HealCi(_) => {
            false
        }
    });
    let fresh = runs_agents
        .then(|| super::learned::refresh(ctx, &learned))
        .flatten();
    let learned = super::learned::with_host(learned, fresh.as_ref());
    if let Some(snapshot) = fresh {
        summary.lines.push(super::learned::probed_line(&snapshot));
        done.push(Done::HostProbed(snapshot));
    }
    let mut act = ctx.act(&templates, &redactor, &executor_waits, &learned);
    // What the runs of this tick spent so far (its earlier rounds too), for budget.per_tick_usd.
    let mut tick_spend = ctx.so_far.spent_usd;
    for item in work {
        // An interrupt: nothing new starts. A claimed run goes back to the queue; the rest
        // (reviews, planning, issues) is claimed again by the next tick as a killed tick's is.
        if let Some(signal) = crate::process::interrupt::requested() {
            if let Work::Run { task, run_id, .. } = item {
                done.push(Done::Unstarted(
                    task.id.clone(),
                    run_id,
                    format!("not started: interrupted by {}", signal.name()),
                ));
            }
            continue;
        }
        match item {
            Work::Run { task, run_id, .. } if fan_out => {
                if let Some(m) = summary.matrix.as_mut() {
                    m.push(serde_json::json!({ "task": task.id, "run": run_id }));
                }
            }
            Work::Run {
                task,
                run_id,
                brief,
            } => {
                // budget.per_tick_usd: once this tick's runs spent it, the rest go back to the
                // queue unstarted.
                if let Some(why) = tick_budget_spent(&ctx.config.budget, tick_spend) {
                    done.push(Done::Unstarted(task.id.clone(), run_id, why));
                    continue;
                }
                let _span = tracing::info_span!("run", task = %task.id, run = %run_id).entered();
                let _fold = crate::live::fold(&redactor.redact(&format!(
                    "run {run_id}: {} task {} {:?}",
                    task.role,
                    task.id,
                    crate::report::truncate(&task.title, 60)
                )));
                summary.started += 1;
                unsaved.started(&run_id);
                // Issue 51: a person may stop this run while its agent runs.
                let watch = super::stop_watch::watch(ctx, &run_id);
                act.stop = watch
                    .clone()
                    .map(|w| w as std::sync::Arc<dyn crate::process::Sentinel>);
                let mut result = run_task(&act, &task, &run_id, &brief);
                act.stop = None;
                if let (Some(request), false) =
                    (watch.and_then(|w| w.fired()), result.outcome.success)
                {
                    done.push(Done::Stopped(task.id.clone(), run_id, result, request));
                    continue;
                }
                // A run that failed once an interrupt came was stopped by it (its agent, a
                // check or git): cancelled, not a failure the task pays for.
                if let (Some(signal), false) = (
                    crate::process::interrupt::requested(),
                    result.outcome.success,
                ) {
                    let why = format!(
                        "cancelled: interrupted by {} (stopped, queued again)",
                        signal.name()
                    );
                    keep(
                        &mut done,
                        unsaved,
                        Done::Interrupted(task.id.clone(), run_id, result, why),
                    );
                    continue;
                }
                if let (Some(client), true) = (
                    forge,
                    result.outcome.success && result.record.head_sha.is_some(),
                ) {
                    publish_run(ctx, client, &task, &run_id, &mut result);
                    match (result.record.pr_number, task.source_pr) {
                        (Some(_), None) => summary.prs_opened += 1,
                        (Some(_), Some(_)) => summary.prs_updated += 1,
                        (None, _) => {}
                    }
                }
                tick_spend += result.record.cost_usd;
                keep(
                    &mut done,
                    unsaved,
                    Done::Work(task.id.clone(), run_id, result),
                );
            }
            Work::Review {
                task,
                run,
                reviews,
                issue,
                approved_by,
                last_word,
                before_ci,
                approved_before,
                merge_after,
            } => {
                let _span = tracing::info_span!("review", task = %task.id, run = %run.id).entered();
                let _fold = crate::live::fold(&redactor.redact(&format!(
                    "review of run {}: task {} {:?}",
                    run.id,
                    task.id,
                    crate::report::truncate(&task.title, 60)
                )));
                if let Some(client) = forge {
                    checks::review_started(client, ctx, &task, &run);
                }
                let merger = forge.map(|client| publish::ApiMerger {
                    client,
                    ctx,
                    method: ctx.config.merge.method,
                    now: ctx.later(),
                    last_word: last_word.as_ref(),
                    task: &task,
                    run: run.id.as_str(),
                });
                let result = judge_run(
                    &act,
                    &task,
                    &run,
                    crate::runner::judge::ReviewBrief {
                        reviews_so_far: reviews,
                        issue: issue.as_deref(),
                        approved_by: &approved_by,
                        before_ci,
                        approved_before: approved_before.as_deref(),
                        merge_after,
                    },
                    merger
                        .as_ref()
                        .map(|m| m as &dyn crate::runner::judge::PullMerger),
                );
                // A review an interrupt cut short concluded nothing: not recorded (no judge
                // retry spent), its lease is reclaimed as a killed tick's is.
                if let (Some(_), JudgeConclusion::Failed { .. }) =
                    (crate::process::interrupt::requested(), &result.conclusion)
                {
                    continue;
                }
                // Kept before the comments about it: a merge is never lost to a cut record.
                unsaved.finished(&Done::Review(
                    task.id.clone(),
                    run.id.clone(),
                    result.clone(),
                ));
                if let Some(client) = forge {
                    checks::review_done(
                        client,
                        ctx,
                        &task,
                        &run,
                        &result.conclusion,
                        result.judgement.as_ref(),
                        &result.verification,
                    );
                }
                if let (Some(client), Some(pr)) = (forge, run.pr_number) {
                    // Visibility only: a comment that could not be posted loses no state.
                    if let Err(e) = publish::post_verdict(
                        client,
                        ctx,
                        pr,
                        &task,
                        run.id.as_str(),
                        &result.conclusion,
                        ci_note,
                    ) {
                        tracing::warn!("could not comment the verdict on PR #{pr}: {e}");
                    }
                }
                done.push(Done::Review(task.id.clone(), run.id.clone(), result));
            }
            Work::Plan(plan) => {
                let _span = tracing::info_span!("plan").entered();
                let _fold = crate::live::fold("planner: the requirement into tasks");
                keep(&mut done, unsaved, Done::Plan(plan.run(&act, ctx.now)));
            }
            Work::OpenIssue(task) => {
                if let Some(client) = forge {
                    let opened = publish::open_issue(client, ctx, &task).map_err(|e| e.to_string());
                    done.push(Done::Issue(task.id.clone(), opened));
                }
            }
            Work::ClosePull(task, pr, by) => {
                if let Some(client) = forge {
                    let closed = publish::close_superseded_pull(client, ctx, pr, &task, &by)
                        .map_err(|e| e.to_string());
                    done.push(Done::PullClosed(task, pr, closed));
                }
            }
            Work::RetargetPull(task, pr, base) => {
                if let Some(client) = forge {
                    let moved = client
                        .set_pull_base(pr, &base, ctx.later())
                        .map_err(|e| e.to_string());
                    done.push(Done::Retargeted(task, pr, base, moved));
                }
            }
            Work::HealCi(heal) => {
                if let Some(client) = forge {
                    let sent = ci_gate::heal_ci(client, ctx, &heal);
                    done.push(Done::CiHealed(heal, sent));
                }
            }
        }
    }
    Ok(done)
}

/// Adds `finished` to `done`, kept in `unsaved` first (until the round's record is saved).
fn keep(done: &mut Vec<Done>, unsaved: &mut Unsaved, finished: Done) {
    unsaved.finished(&finished);
    done.push(finished);
}

/// Opens or updates the task's PR (github mode); a failure fails the run, whose retry adopts
/// the pushed commit and tries the PR again.
pub(crate) fn publish_run(
    ctx: &Context,
    client: &GithubClient,
    task: &Task,
    run_id: &RunId,
    result: &mut WorkResult,
) {
    let branch = result.record.branch.clone().unwrap_or_default();
    let summary = result.record.summary.clone().unwrap_or_default();
    match publish::publish_pull(client, ctx, task, run_id.as_str(), &branch, &summary) {
        Ok(pr) => {
            result.record.pr_number = Some(pr);
            if let Some(head) = &result.record.head_sha {
                checks::after_push(
                    client,
                    ctx,
                    task,
                    run_id.as_str(),
                    head,
                    &result.record.verification,
                );
            }
        }
        Err(e) => {
            let message =
                format!("the change is pushed, but its pull request could not be opened: {e}");
            result.outcome = crate::engine::outcome::RunOutcome {
                success: false,
                failure_code: Some(crate::model::FailureCode::TransientOrFlakyFailure),
                message: message.clone(),
                no_changes: false,
            };
            result.record.error = Some(message);
        }
    }
}

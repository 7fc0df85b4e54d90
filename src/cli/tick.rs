//! `opentiger tick`: one step of the loop, in three phases (DESIGN §3):
//!
//! 1. **claim** — under the state lock: load, plan, apply (leases, transitions); lock released
//!    before anything slow, so other commands are not held up by agents;
//! 2. **act** — run the claimed work and reviews (`runner`);
//! 3. **record** — under the lock again: re-read each task and apply its outcome, only where this
//!    tick still holds the lease.
//!
//! With `--dry-run`: load, plan and print every decision with its reason; nothing is written (the
//! state file stays byte-identical).

use std::collections::BTreeMap;

use clap::Args;

use super::context::PlanInputs;
use super::forge_sync;
use super::tick_report::report_tick;
pub use super::tick_report::{RunFailure, TickSummary};
use super::{CmdResult, Context, Failure};
use crate::config::AgentRole;
use crate::engine::outcome::{decide_outcome, RunExecutors};
use crate::engine::verdict::{decide_verdict, tick_budget_spent, JudgeConclusion};
use crate::executor;
use crate::forge::github::GithubClient;
use crate::git::Git;
use crate::model::{excerpt, Mode, PlanStatus, Run, RunId, Task, TaskId, TaskKind, TaskState};
use crate::prompt::{JudgeFeedback, Templates};
use crate::report;
use crate::runner::judge::{judge_run, JudgeResult};
use crate::runner::planner::{run_planner, PlanRequest, PlanResult};
use crate::runner::work::{run_task, WorkResult};
use crate::runner::Act;
use crate::store::{Recorded, Store, TickRecord, Writer};
use crate::workspace::{remove_leftovers, task_branch, worktree_root};

#[derive(Args, Debug)]
pub struct TickArgs {
    /// Print what the tick would do and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the plan (with --dry-run) or the tick's summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Start at most this many runs, 0 to 100 (overrides limits.max_runs_per_tick).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub max_runs: Option<u32>,
    /// With --dry-run: plan from the state alone, without reading GitHub (github mode).
    #[arg(long, requires = "dry_run")]
    pub offline: bool,
    /// Claim up to N runs without running them and print them as a job matrix, for N
    /// `opentiger work --run ID` jobs (reviews, planning and issues are still done here).
    #[arg(long, value_name = "N", conflicts_with = "max_runs",
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub fan_out: Option<u32>,
}

pub fn run(ctx: &Context, args: &TickArgs) -> CmdResult {
    let mut config = ctx.config.clone();
    if let Some(n) = args.max_runs.or(args.fan_out) {
        config.limits.max_runs_per_tick = n;
    }
    let mut ctx = Context {
        config,
        ..ctx.clone()
    };
    if args.dry_run {
        return dry_run(&ctx, args.json, args.offline);
    }
    if args.fan_out.is_some() {
        // The runs are leased to the fan-out until a work job takes them over: not to this
        // process, whose end must not look like a dead holder.
        ctx.agent_id = super::work::fan_out_holder(&ctx.tick_id);
    }
    let summary = tick_with(&ctx, args.fan_out.is_some())?;
    report_tick(&ctx, &summary);
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&summary.to_json())
                .map_err(|e| Failure::tick(e.to_string()))?
        );
    } else {
        out!("{}", summary.text());
    }
    Ok(())
}

/// The plan the next tick would make, changing nothing. In github mode (unless `offline`) it
/// reads GitHub first, as a tick does (GETs only, conditional with the stored ETags), and
/// applies what it saw to the state in memory, so the plan shows the imports a tick would make.
fn dry_run(ctx: &Context, json: bool, offline: bool) -> CmdResult {
    let mut store = ctx.read_store()?;
    let observed = match ctx.config.mode {
        Mode::Github if !offline => {
            let client = GithubClient::from_env(None, |k| std::env::var(k).ok()).map_err(|e| {
                Failure::usage(format!(
                    "{e}\n  or: `opentiger tick --dry-run --offline` plans from the state alone"
                ))
            })?;
            let seen = forge_sync::observe(ctx, &client, &store)?;
            let writer = Writer {
                tick_id: Some(&ctx.tick_id),
                actor: ctx.agent_id.as_str(),
                now: ctx.now,
            };
            seen.apply(ctx, &mut store, writer)?
        }
        Mode::Github | Mode::LocalGit | Mode::Direct => Vec::new(),
    };
    let (snapshot, plan) = ctx.plan(&store)?;
    if json {
        let mut value = serde_json::to_value(&plan).map_err(|e| Failure::tick(e.to_string()))?;
        value["observed"] = serde_json::json!(observed);
        let text =
            serde_json::to_string_pretty(&value).map_err(|e| Failure::tick(e.to_string()))?;
        outln!("{text}");
    } else {
        if !observed.is_empty() {
            outln!("From GitHub (read-only, nothing saved), a real tick would first apply:");
            for line in &observed {
                outln!("  {line}");
            }
        }
        let tasks: BTreeMap<_, _> = snapshot
            .tasks
            .iter()
            .map(|t| (t.id.clone(), t.clone()))
            .collect();
        out!("{}", report::plan_text(&plan, &tasks));
    }
    Ok(())
}

/// Checks that must hold before anything is claimed: a claim that cannot run only burns the
/// task's retry budget.
fn preflight_checks(ctx: &Context) -> Result<(), Failure> {
    let config = &ctx.config;
    match config.mode {
        Mode::Github => {
            let branches = crate::workspace::Branches::new(&Git::new(&ctx.repo), &config.remote);
            if branches.remote.is_none() {
                return Err(Failure::usage(format!(
                    "{}: `mode: github` pushes task branches to the remote `{}`, which {} does not have\n  fix: run in a clone of the repository (actions/checkout), or set `remote:`",
                    ctx.config_source,
                    config.remote,
                    ctx.repo.display()
                )));
            }
        }
        Mode::LocalGit | Mode::Direct => {}
    }
    if !Git::is_repository(&ctx.repo) {
        return Err(Failure::usage(format!(
            "{} is not a git repository\n  fix: run `git init` and commit, or point --repo at a repository",
            ctx.repo.display()
        )));
    }
    let git = Git::new(&ctx.repo);
    if git
        .resolve(&format!("refs/heads/{}", config.base_branch))
        .map_err(|e| Failure::tick(e.to_string()))?
        .is_none()
    {
        return Err(Failure::usage(format!(
            "{}: base branch `{}` does not exist in {}\n  fix: set `base_branch` to an existing branch (and make sure it has a commit)",
            ctx.config_source,
            config.base_branch,
            ctx.repo.display()
        )));
    }
    Ok(())
}

/// The agents this plan would start must be runnable: a claim that cannot run only burns the
/// task's retry budget. Checked before anything is applied.
fn check_agents(
    ctx: &Context,
    snapshot: &crate::engine::Snapshot,
    plan: &crate::engine::Plan,
) -> Result<(), Failure> {
    let mut roles = Vec::new();
    for d in &plan.decisions {
        let role = match &d.action {
            crate::engine::Action::Claim { .. } => d
                .task_id
                .as_ref()
                .and_then(|id| snapshot.tasks.iter().find(|t| &t.id == id))
                .map(|t| AgentRole::Task(t.role)),
            crate::engine::Action::Judge { .. }
                if ctx.config.agents.effective(AgentRole::Judge).review =>
            {
                Some(AgentRole::Judge)
            }
            _ => None,
        };
        if let Some(role) = role.filter(|r| !roles.contains(r)) {
            roles.push(role);
        }
    }
    // A role may run when any executor of its chain can (issue 9 fallbacks).
    for role in roles {
        let chain = ctx.config.agents.chain(role);
        let mut errors = Vec::new();
        for agent in &chain {
            match executor::build(agent, role, &ctx.repo) {
                Ok(_) => break,
                Err(e) => errors.push(e.to_string()),
            }
        }
        if errors.len() == chain.len() {
            let why = executor::none_usable(role, &chain, &errors);
            return Err(Failure::usage(format!("{}: {why}", ctx.config_source)));
        }
    }
    Ok(())
}

/// A claimed piece of work, with what the act phase needs to know about it.
enum Work {
    Run {
        task: Task,
        run_id: RunId,
        history: Vec<Run>,
    },
    Review {
        task: Task,
        run: Box<Run>,
        reviews: u32,
    },
    Plan(Box<PlanWork>),
    /// Open the GitHub issue mirroring a planned task.
    OpenIssue(Task),
    /// Close a PR whose goal is recreated: (task, PR, the recreating task).
    ClosePull(TaskId, u64, TaskId),
}

/// What a planner run needs, read under the lock in the claim phase.
pub struct PlanWork {
    pub requirement: String,
    pub inputs: PlanInputs,
    pub existing: Vec<Task>,
    pub feedback: Vec<JudgeFeedback>,
}

impl PlanWork {
    /// Gathers the planner's inputs from the state and the repository.
    pub fn gather(ctx: &Context, store: &Store) -> Result<Option<PlanWork>, Failure> {
        let Some(requirement) = ctx.requirement_text().filter(|t| !t.trim().is_empty()) else {
            return Ok(None);
        };
        let inputs = ctx.plan_inputs(&requirement);
        let existing = store.list_tasks(&crate::store::TaskFilter::default())?;
        let feedback = store
            .recent_feedback(5)?
            .into_iter()
            .map(|f| JudgeFeedback {
                task_title: f.task_title,
                verdict: f.verdict,
                summary: f.summary,
                findings: f.findings,
            })
            .collect();
        Ok(Some(PlanWork {
            requirement,
            inputs,
            existing,
            feedback,
        }))
    }

    pub fn run(&self, act: &Act<'_>, now: crate::time::Timestamp) -> PlanResult {
        run_planner(
            act,
            &PlanRequest {
                requirement: &self.requirement,
                requirement_hash: &self.inputs.requirement_hash,
                base_head: &self.inputs.base_head,
                signature: &self.inputs.signature,
                agent: self.inputs.agent,
                existing: &self.existing,
                feedback: self.feedback.clone(),
                now,
            },
        )
    }
}

pub fn tick(ctx: &Context) -> Result<TickSummary, Failure> {
    tick_with(ctx, false)
}

/// One tick; with `fan_out` the claimed runs are listed in the summary's matrix, not run.
pub fn tick_with(ctx: &Context, fan_out: bool) -> Result<TickSummary, Failure> {
    preflight_checks(ctx)?;
    let span = tracing::info_span!("tick", id = %ctx.tick_id);
    let _enter = span.enter();
    let mut summary = TickSummary {
        tick_id: ctx.tick_id.to_string(),
        matrix: fan_out.then(Vec::new),
        ..TickSummary::default()
    };

    // github mode: observe GitHub first (conditional requests; nothing locked meanwhile).
    let forge = match ctx.config.mode {
        Mode::Github => Some(
            GithubClient::from_env(None, |k| std::env::var(k).ok())
                .map_err(|e| Failure::usage(e.to_string()))?,
        ),
        Mode::LocalGit | Mode::Direct => None,
    };
    let observed = match &forge {
        Some(client) => Some(forge_sync::observe(ctx, client, &ctx.read_store()?)?),
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
    let claimed = ctx.write_state("claim", |store| {
        let mut lines = match &observed {
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
        };
        let mut claimed = claim(ctx, store)?;
        lines.append(&mut claimed.lines);
        claimed.lines = lines;
        Ok(claimed)
    })?;
    summary.requests = forge.as_ref().map_or(0, |c| c.requests.get());
    summary.decisions = claimed.decisions;
    summary.lines = claimed.lines;
    let work = claimed.work;
    let heartbeat_due = claimed.heartbeat_due;
    summary.claimed = work
        .iter()
        .filter(|w| matches!(w, Work::Run { .. }))
        .count();
    summary.judged = work
        .iter()
        .filter(|w| matches!(w, Work::Review { .. }))
        .count();

    // A quiet tick (nothing decided, nothing to run) stops here: nothing to record, nothing to
    // push, unless the hourly heartbeat is due.
    if summary.decisions == 0 && work.is_empty() && !heartbeat_due {
        return Ok(summary);
    }

    // Phase 2: act.
    let git = Git::new(&ctx.repo);
    if ctx.config.mode == Mode::LocalGit {
        match remove_leftovers(&git, &claimed.in_use) {
            Ok(removed) if !removed.is_empty() => summary.lines.push(format!(
                "removed {} leftover worktree(s) of killed ticks",
                removed.len()
            )),
            Ok(_) => {}
            Err(e) => tracing::warn!("could not clean up worktrees: {e}"),
        }
    }
    let templates = if work.is_empty() {
        Templates::builtin()
    } else {
        Templates::load(&ctx.repo)
    }
    .map_err(|e| Failure::usage(e.to_string()))?;
    let redactor = ctx.redactor();
    let act = ctx.act(&templates, &redactor, &claimed.executor_waits);
    let mut done = Vec::new();
    // What the runs of this tick spent so far, for budget.per_tick_usd.
    let mut tick_spend = 0.0;
    for item in work {
        match item {
            Work::Run { task, run_id, .. } if fan_out => {
                if let Some(m) = summary.matrix.as_mut() {
                    m.push(serde_json::json!({ "task": task.id, "run": run_id }));
                }
            }
            Work::Run {
                task,
                run_id,
                history,
            } => {
                // budget.per_tick_usd: once this tick's runs spent it, the rest go back to the
                // queue unstarted.
                if let Some(why) = tick_budget_spent(&ctx.config.budget, tick_spend) {
                    done.push(Done::Unstarted(task.id.clone(), run_id, why));
                    continue;
                }
                let _span = tracing::info_span!("run", task = %task.id, run = %run_id).entered();
                let mut result = run_task(&act, &task, &run_id, &history);
                if let (Some(client), true) = (
                    &forge,
                    result.outcome.success && result.record.head_sha.is_some(),
                ) {
                    publish(ctx, client, &task, &run_id, &mut result);
                    match (result.record.pr_number, task.source_pr) {
                        (Some(_), None) => summary.prs_opened += 1,
                        (Some(_), Some(_)) => summary.prs_updated += 1,
                        (None, _) => {}
                    }
                }
                tick_spend += result.record.cost_usd;
                done.push(Done::Work(task.id.clone(), run_id, result));
            }
            Work::Review { task, run, reviews } => {
                let _span = tracing::info_span!("review", task = %task.id, run = %run.id).entered();
                let merger = forge.as_ref().map(|client| forge_sync::ApiMerger {
                    client,
                    method: ctx.config.merge.method,
                    now: ctx.later(),
                });
                let result = judge_run(
                    &act,
                    &task,
                    &run,
                    reviews,
                    merger
                        .as_ref()
                        .map(|m| m as &dyn crate::runner::judge::PullMerger),
                );
                if let (Some(client), Some(pr)) = (&forge, run.pr_number) {
                    // Visibility only: a comment that could not be posted loses no state.
                    if let Err(e) = forge_sync::post_verdict(
                        client,
                        ctx,
                        pr,
                        &task,
                        run.id.as_str(),
                        &result.conclusion,
                    ) {
                        tracing::warn!("could not comment the verdict on PR #{pr}: {e}");
                    }
                }
                done.push(Done::Review(task.id.clone(), run.id.clone(), result));
            }
            Work::Plan(plan) => {
                let _span = tracing::info_span!("plan").entered();
                done.push(Done::Plan(plan.run(&act, ctx.now)));
            }
            Work::OpenIssue(task) => {
                if let Some(client) = &forge {
                    let opened =
                        forge_sync::open_issue(client, ctx, &task).map_err(|e| e.to_string());
                    done.push(Done::Issue(task.id.clone(), opened));
                }
            }
            Work::ClosePull(task, pr, by) => {
                if let Some(client) = &forge {
                    let closed = forge_sync::close_superseded_pull(client, ctx, pr, &task, &by)
                        .map_err(|e| e.to_string());
                    done.push(Done::PullClosed(task, pr, closed));
                }
            }
        }
    }

    // Phase 3: record, on the latest state, only where our leases still hold.
    let now = ctx.later();
    let recorded = ctx.record_state("record", |store| record(ctx, store, &done, now, &summary))?;
    summary.lines.extend(recorded.lines);
    summary.stray = recorded.stray;
    if summary.claimed > 0 {
        summary.spend_today = Some((recorded.spent_today, ctx.config.budget.per_day_usd));
    }
    summary.tasks_done = recorded.tasks_done;
    summary.merged = recorded.merged;
    summary.spend_usd = recorded.spend_usd;
    summary.failures = recorded.failures;
    Ok(summary)
}

/// Opens or updates the task's PR (github mode); a failure fails the run, whose retry adopts
/// the pushed commit and tries the PR again.
pub(crate) fn publish(
    ctx: &Context,
    client: &GithubClient,
    task: &Task,
    run_id: &RunId,
    result: &mut WorkResult,
) {
    let branch = result.record.branch.clone().unwrap_or_default();
    let summary = result.record.summary.clone().unwrap_or_default();
    match forge_sync::publish_pull(client, ctx, task, run_id.as_str(), &branch, &summary) {
        Ok(pr) => result.record.pr_number = Some(pr),
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

/// What the claim phase hands to the act phase.
struct Claimed {
    /// The last heartbeat is an hour old (or missing): record one even if the tick is quiet.
    heartbeat_due: bool,
    decisions: usize,
    lines: Vec<String>,
    work: Vec<Work>,
    in_use: Vec<std::path::PathBuf>,
    /// Executors parked on a quota, as the plan saw them: runs choose their executor with them.
    executor_waits: crate::engine::fallback::ExecutorWaits,
}

fn claim(ctx: &Context, store: &mut Store) -> Result<Claimed, Failure> {
    let writer = Writer {
        tick_id: Some(&ctx.tick_id),
        actor: ctx.agent_id.as_str(),
        now: ctx.now,
    };
    let (snapshot, plan) = ctx.plan(store)?;
    check_agents(ctx, &snapshot, &plan)?;
    let mut lines = plan
        .decisions
        .iter()
        .filter(|d| d.writes())
        .map(|d| format!("[{}] {}", d.rule, report::describe_action(d)))
        .collect::<Vec<_>>();
    let decisions = lines.len();
    lines.extend(report::why_idle(&plan, &snapshot.tasks));
    let applied = store.apply_plan(&plan, writer)?;
    let mut work = Vec::new();
    for (task_id, run_id) in &applied.claims {
        let task = store.task(task_id)?;
        let history = store
            .runs_of(task_id, 10)?
            .into_iter()
            .filter(|r| &r.id != run_id)
            .collect();
        work.push(Work::Run {
            task,
            run_id: run_id.clone(),
            history,
        });
    }
    for (task_id, run_id) in &applied.judge {
        let task = store.task(task_id)?;
        let Some(run) = store.run(run_id)? else {
            continue;
        };
        let root = match (task.kind, &task.parent_task_id) {
            (TaskKind::Autofix | TaskKind::AutofixConflict, Some(parent)) => parent.clone(),
            _ => task.id.clone(),
        };
        let reviews = store.reviews_of_lineage(&root)?;
        work.push(Work::Review {
            task,
            run: Box::new(run),
            reviews,
        });
    }
    if applied.start_planner {
        if let Some(plan) = PlanWork::gather(ctx, store)? {
            work.push(Work::Plan(Box::new(plan)));
        }
    }
    for task_id in &applied.open_issues {
        work.push(Work::OpenIssue(store.task(task_id)?));
    }
    for (task_id, pr, by) in &applied.close_pulls {
        work.push(Work::ClosePull(task_id.clone(), *pr, by.clone()));
    }
    let heartbeat_due = store
        .last_tick()?
        .is_none_or(|t| ctx.now.minus(t.started_at) >= crate::time::HOUR);
    Ok(Claimed {
        heartbeat_due,
        decisions,
        lines,
        work,
        in_use: worktrees_in_use(ctx, store)?,
        executor_waits: snapshot.observations.executor_waits.clone(),
    })
}

#[derive(Default)]
struct RecordedLines {
    lines: Vec<String>,
    stray: usize,
    spent_today: f64,
    tasks_done: usize,
    merged: usize,
    spend_usd: f64,
    failures: Vec<RunFailure>,
}

fn record(
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
                out.lines.push(format!(
                    "{} {:?}: {} → {}",
                    task.id,
                    truncate(&task.title),
                    task.state(),
                    decision.to
                ));
                out.spend_usd += record.cost_usd;
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
                (
                    store.record_run(task_id, run_id, record, &decision, writer)?,
                    decision.to == TaskState::DONE,
                )
            }
            Done::Review(
                task_id,
                run_id,
                JudgeResult {
                    conclusion,
                    judgement,
                },
            ) => {
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
                    store.record_judgement(
                        task_id,
                        run_id,
                        judgement.as_ref(),
                        &decision,
                        writer,
                    )?,
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
                let decision = crate::engine::outcome::OutcomeDecision {
                    run_status: crate::model::RunStatus::Cancelled,
                    failure_code: None,
                    to: crate::model::TaskState::QUEUED,
                    attempts: None,
                    next_attempt_at: Some(None),
                    reason: why.clone(),
                    executor: None,
                };
                let record = crate::store::RunRecord {
                    error: Some(why.clone()),
                    ..Default::default()
                };
                (
                    store.record_run(task_id, run_id, &record, &decision, writer)?,
                    false,
                )
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
            Done::Plan(plan) => {
                out.lines.push(plan_line(plan));
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
    }
    out.spent_today = store.spend_on(&now.day())?;
    let pruned = store.prune(now, ctx.config.state.retention_days)?;
    if pruned > 0 {
        out.lines
            .push(format!("pruned {pruned} old run(s) of finished tasks"));
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
            outcome: Some("ok".to_string()),
            summary: serde_json::json!({ "decisions": summary.decisions, "runs": summary.claimed, "reviews": summary.judged }),
        })?;
    }
    Ok(out)
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

enum Done {
    Issue(TaskId, Result<u64, String>),
    Work(TaskId, RunId, WorkResult),
    Review(TaskId, RunId, JudgeResult),
    Plan(PlanResult),
    PullClosed(TaskId, u64, Result<(), String>),
    /// A claimed run not started (the tick's budget was spent): back to the queue.
    Unstarted(TaskId, RunId, String),
}

/// Worktrees that leased tasks (of any tick) may be using right now.
fn worktrees_in_use(ctx: &Context, store: &Store) -> Result<Vec<std::path::PathBuf>, Failure> {
    let Ok(root) = worktree_root(&Git::new(&ctx.repo)) else {
        return Ok(Vec::new());
    };
    let mut paths = Vec::new();
    for (task_id, _) in store.leased_tasks()? {
        let task = store.task(&task_id)?;
        let name = task_branch(&task).replace('/', "__");
        paths.push(root.join(&name));
        paths.push(root.join(format!("review__{name}")));
    }
    Ok(paths)
}

fn truncate(text: &str) -> String {
    report::truncate(text, 50)
}

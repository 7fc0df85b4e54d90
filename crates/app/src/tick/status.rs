//! The status view and the dashboard of this moment, built from the state and the plan the
//! engine makes of it: what `status` prints, and what a tick's job summary and dashboard issue
//! show. Not for: rendering to text and markdown (`report`, `report::board`) or writing the
//! dashboard issue (`tick::dashboard`).

use super::progress::phase_facts;
use super::{Context, Failure};
use crate::prompt::Templates;
use crate::report::board::{render, BoardView, TickLines};
use crate::report::{self, RunView, StatusView};
use crate::store::{Store, TaskFilter};

/// The dashboard's markdown: active tasks and the last few finished ones.
pub fn board_markdown(ctx: &Context, store: &Store) -> Result<String, Failure> {
    let (board, _) = board(ctx, store, None)?;
    Ok(board)
}

/// The dashboard and, given what a tick did, the job summary around it.
pub fn board(
    ctx: &Context,
    store: &Store,
    tick: Option<TickLines>,
) -> Result<(String, Option<String>), Failure> {
    let mut view = view(ctx, store, false)?;
    let (_, plan) = ctx.plan(store)?;
    for task in store.recently_finished(10)? {
        let phase = task.phase(phase_facts(ctx, store, &plan, &task)?);
        view.tasks.push(report::task_view(&task, &plan, phase));
    }
    let templates = Templates::load(&ctx.repo).map_err(|e| Failure::usage(e.to_string()))?;
    let mut board = BoardView::of(&view, ctx.config.mode.as_str());
    board.graph = crate::report::graph::fenced(&graph_tasks(store)?);
    let redactor = ctx.redactor();
    let (dashboard, summary) =
        render(&templates, &board, tick).map_err(|e| Failure::usage(e.to_string()))?;
    Ok((
        redactor.redact(&dashboard),
        summary.map(|s| redactor.redact(&s)),
    ))
}

/// The tasks the task graph draws: the active ones and every task they name as a dependency
/// or a parent (a finished one included), so each edge has both its ends.
pub fn graph_tasks(store: &Store) -> Result<Vec<crate::model::Task>, Failure> {
    let mut tasks = store.list_tasks(&TaskFilter::default())?;
    let mut known: std::collections::BTreeSet<crate::model::TaskId> =
        tasks.iter().map(|t| t.id.clone()).collect();
    let mut i = 0;
    while i < tasks.len() {
        let named: Vec<crate::model::TaskId> = tasks[i]
            .dependencies
            .iter()
            .chain(&tasks[i].parent_task_id)
            .filter(|id| !known.contains(*id))
            .cloned()
            .collect();
        for id in named {
            known.insert(id.clone());
            // A task no longer in the state is drawn as not shown, by the graph itself.
            if let Ok(task) = store.task(&id) {
                tasks.push(task);
            }
        }
        i += 1;
    }
    Ok(tasks)
}

/// What `status` shows.
pub fn view(ctx: &Context, store: &Store, all: bool) -> Result<StatusView, Failure> {
    let (_, plan) = ctx.plan(store)?;
    let tasks = store.list_tasks(&TaskFilter {
        status: None,
        include_terminal: all,
    })?;
    let learned = store.learned()?;
    Ok(StatusView {
        now: ctx.now,
        counts: store.status_counts()?,
        preflight: format!(
            "{} [{}]: {}",
            plan.preflight.class,
            plan.preflight.inputs.flags(),
            plan.preflight.summary
        ),
        next: plan.preflight.summary.clone(),
        tasks: tasks
            .iter()
            .map(|t| {
                let phase = t.phase(phase_facts(ctx, store, &plan, t)?);
                let mut view = report::task_view(t, &plan, phase);
                view.checks = t
                    .source_pr
                    .and_then(|pr| store.pull_checks(pr).ok().flatten())
                    .map(|(_, c)| c.state);
                view.family = Some(store.family_runs(&t.id)?);
                view.findings = crate::tick::progress::held_findings(store, t)?;
                Ok(view)
            })
            .collect::<Result<_, Failure>>()?,
        runs: store.recent_runs(10)?.iter().map(RunView::of).collect(),
        last_tick: store.last_tick()?,
        ignored_issues: store
            .cursor("import:skipped")?
            .body
            .and_then(|b| serde_json::from_str(&b).ok())
            .unwrap_or_default(),
        spend: report::SpendView {
            today_usd: store.spend_on(&ctx.now.day())?,
            per_day_usd: ctx.config.budget.per_day_usd,
            per_task_usd: ctx.config.budget.per_task_usd,
            per_tick_usd: ctx.config.budget.per_tick_usd,
            by_role: store.spend_by_role()?,
        },
        parked_executors: report::parked_executors(&plan),
        paused: store.repo_pause()?.map(|p| {
            let resume = match ctx.config.mode {
                crate::model::Mode::Github => {
                    "`opentiger resume`, or comment `/opentiger resume` on the dashboard issue"
                }
                crate::model::Mode::LocalGit | crate::model::Mode::Direct => "`opentiger resume`",
            };
            format!(
                "by @{} since {}: nothing new is claimed, what runs finishes. Resume: {resume}",
                p.by, p.at
            )
        }),
        ci: ci_line(ctx, store)?,
        heartbeat: heartbeat_line(ctx, store)?,
        held_back: plan.held_back().map(str::to_string),
        refused: store
            .recent_refusals(50)?
            .iter()
            .map(|(task, r)| format!("task {task}: {}", r.line()))
            .collect(),
        host: Some(report::learned::host_line(
            learned.host.as_ref(),
            host_freshness(ctx, learned.host.as_ref()),
        )),
        lessons: report::learned::lesson_lines(&report::learned::lesson_views(
            &learned.lessons,
            learned.host.as_ref(),
            ctx.now,
            &ctx.config.context,
        )),
    })
}

/// Whether `host` would be taken again by a tick now (issue 52).
pub fn host_freshness(
    ctx: &Context,
    host: Option<&crate::model::learned::HostSnapshot>,
) -> crate::engine::learned::host::Freshness {
    crate::engine::learned::host::freshness(
        host,
        &crate::runner::probe::fingerprint(&ctx.config),
        ctx.now,
        ctx.config.context.host_ttl_hours,
    )
}

/// github mode: which checks PRs must pass and where that was learned, or that there is none.
fn ci_line(ctx: &Context, store: &Store) -> Result<Option<String>, Failure> {
    use crate::engine::gate::{ExpectedSource, NO_CI_NOTE};
    if ctx.config.mode != crate::model::Mode::Github {
        return Ok(None);
    }
    if !ctx.config.merge.require_checks {
        return Ok(Some(
            "not required (merge.require_checks: false)".to_string(),
        ));
    }
    let pr_workflows =
        crate::workflows::ci_setup(&crate::workflows::read(&ctx.repo), false).push_workflows;
    let expected = store
        .expected_checks(
            ctx.config.merge.required_checks.as_deref(),
            &ctx.config.base_branch,
        )?
        .or_workflows(&pr_workflows);
    Ok(Some(match expected.source {
        ExpectedSource::Nothing => NO_CI_NOTE.to_string(),
        ExpectedSource::Unknown => "not known yet: the base branch's checks are read when a PR \
            first waits on CI, and no PR merges before"
            .to_string(),
        ExpectedSource::Learned | ExpectedSource::Workflows => format!(
            "the repository has CI ({}: {}): a PR merges once its checks report and pass",
            expected.origin(),
            expected.names.join(", ")
        ),
        ExpectedSource::Config | ExpectedSource::BranchRules => format!(
            "a PR merges once {} pass on its head ({})",
            expected.names.join(", "),
            expected.origin()
        ),
    }))
}

/// The last tick against the schedule of the workflow that runs opentiger (github mode).
fn heartbeat_line(ctx: &Context, store: &Store) -> Result<Option<String>, Failure> {
    use crate::report::heartbeat::{heartbeat, Heartbeat};
    if ctx.config.mode != crate::model::Mode::Github {
        return Ok(None);
    }
    let schedule = crate::workflows::schedule(&crate::workflows::read(&ctx.repo));
    // A running tick compares the one before it (it may have recorded itself already).
    let last = store.last_tick_start_except(ctx.tick_id.as_str())?;
    Ok(
        heartbeat(last, schedule.as_ref(), ctx.now).map(|beat| match beat {
            Heartbeat::OnTime(line) => line,
            Heartbeat::Missed(line) => format!("⚠ {line}"),
        }),
    )
}

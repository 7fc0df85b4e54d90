//! `opentiger status [--json] [--all]`: every task with why it is where it is and what happens
//! next, recent runs, the last tick. Reads the state in memory; writes nothing.

use clap::Args;

use super::{CmdResult, Context, Failure};
use crate::report::{self, RunView, StatusView};
use crate::store::TaskFilter;

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// Include done and cancelled tasks.
    #[arg(long)]
    pub all: bool,
}

pub fn run(ctx: &Context, args: &StatusArgs) -> CmdResult {
    let store = ctx.read_store()?;
    let (_, plan) = ctx.plan(&store)?;
    let tasks = store.list_tasks(&TaskFilter {
        status: None,
        include_terminal: args.all,
    })?;
    let view = StatusView {
        now: ctx.now,
        counts: store.status_counts()?,
        preflight: format!(
            "{} [{}]: {}",
            plan.preflight.class,
            plan.preflight.inputs.flags(),
            plan.preflight.summary
        ),
        tasks: tasks
            .iter()
            .map(|t| {
                let mut view = report::task_view(t, &plan);
                view.checks = t
                    .source_pr
                    .and_then(|pr| store.pull_checks(pr).ok().flatten())
                    .map(|(_, c)| c.state);
                view
            })
            .collect(),
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
        },
    };
    if args.json {
        let text = serde_json::to_string_pretty(&view).map_err(|e| Failure::tick(e.to_string()))?;
        println!("{text}");
    } else {
        print!("{}", report::status_text(&view));
    }
    Ok(())
}

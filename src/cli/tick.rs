//! `opentiger tick`: one step of the loop. With `--dry-run`, load, plan and print every decision
//! with its reason, writing nothing (the state file stays byte-identical).

use std::collections::BTreeMap;

use clap::Args;

use super::{CmdResult, Context, Failure};
use crate::report;

#[derive(Args, Debug)]
pub struct TickArgs {
    /// Print what the tick would do and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the plan as JSON.
    #[arg(long)]
    pub json: bool,
    /// Start at most this many runs (overrides limits.max_runs_per_tick).
    #[arg(long)]
    pub max_runs: Option<u32>,
}

pub fn run(ctx: &Context, args: &TickArgs) -> CmdResult {
    if !args.dry_run {
        return Err(Failure::usage(
            "`opentiger tick` without --dry-run needs an executor loop this build does not have yet\n  fix: use `opentiger tick --dry-run` to see the decisions",
        ));
    }
    let mut ctx_config = ctx.config.clone();
    if let Some(n) = args.max_runs {
        ctx_config.limits.max_runs_per_tick = n;
    }
    let store = ctx.read_store()?;
    let ctx = Context {
        repo: ctx.repo.clone(),
        config: ctx_config,
        config_source: ctx.config_source.clone(),
        now: ctx.now,
        agent_id: ctx.agent_id.clone(),
        tick_id: ctx.tick_id.clone(),
    };
    let (snapshot, plan) = ctx.plan(&store)?;
    if args.json {
        let text = serde_json::to_string_pretty(&plan).map_err(|e| Failure::tick(e.to_string()))?;
        println!("{text}");
    } else {
        let tasks: BTreeMap<_, _> = snapshot
            .tasks
            .iter()
            .map(|t| (t.id.clone(), t.clone()))
            .collect();
        print!("{}", report::plan_text(&plan, &tasks));
    }
    Ok(())
}

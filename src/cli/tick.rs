//! `opentiger tick`: the arguments, and printing what the tick did (text, or `--json` for the
//! GitHub Action). The tick itself is [`crate::tick`].
//!
//! With `--dry-run`: load, plan and print every decision with its reason; nothing is written (the
//! state file stays byte-identical).

use std::collections::BTreeMap;

use clap::Args;

use super::{CmdResult, Context, Failure};
use crate::report;
use crate::tick::{report_tick, tick_with, work::fan_out_holder};

#[derive(Args, Debug)]
pub struct TickArgs {
    /// Print what the tick would do and change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the plan (with --dry-run) or the tick's summary as JSON.
    #[arg(long)]
    pub json: bool,
    /// Start at most this many runs (overrides limits.max_runs_per_tick).
    #[arg(long)]
    pub max_runs: Option<u32>,
    /// Claim up to N runs without running them and print them as a job matrix, for N
    /// `opentiger work --run ID` jobs (reviews, planning and issues are still done here).
    #[arg(long, value_name = "N", conflicts_with = "max_runs")]
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
        return dry_run(&ctx, args.json);
    }
    if args.fan_out.is_some() {
        // The runs are leased to the fan-out until a work job takes them over: not to this
        // process, whose end must not look like a dead holder.
        ctx.agent_id = fan_out_holder(&ctx.tick_id);
    }
    let summary = tick_with(&ctx, args.fan_out.is_some())?;
    report_tick(&ctx, &summary);
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&summary.to_json())
                .map_err(|e| Failure::tick(e.to_string()))?
        );
    } else {
        print!("{}", summary.text());
    }
    Ok(())
}

fn dry_run(ctx: &Context, json: bool) -> CmdResult {
    let store = ctx.read_store()?;
    let (snapshot, plan) = ctx.plan(&store)?;
    if json {
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

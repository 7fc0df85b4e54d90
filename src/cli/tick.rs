//! `opentiger tick`: the arguments, and printing what the tick did (text, or `--json` for the
//! GitHub Action). With `--dry-run`: load, plan and print every decision with its reason — the
//! tick's first round, saying when more may follow (issue 38); nothing is written (the state
//! file stays byte-identical). Not for: the tick itself ([`crate::tick`]), its summary's text
//! and JSON (`tick::report`), or the text of a dry run's plan (`report`).

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
    /// Start at most this many runs, 0 to 100 (overrides limits.max_runs_per_tick).
    #[arg(long, value_parser = clap::value_parser!(u32).range(0..=100))]
    pub max_runs: Option<u32>,
    /// With --dry-run: no network at all: plan from the state as this clone last fetched it,
    /// without reading GitHub.
    #[arg(long, requires = "dry_run")]
    pub offline: bool,
    /// Claim up to N runs without running them and print them as a job matrix, for N
    /// `opentiger work --run ID` jobs (reviews, planning and issues are still done here).
    #[arg(long, value_name = "N", conflicts_with = "max_runs",
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub fan_out: Option<u32>,
}

/// `verbose` (`-v`) adds the engine's own figures to a dry run (the preflight gates and each
/// claim's score) and to a tick's summary (its rules, claims and leases, rounds, metering).
pub fn run(ctx: &Context, args: &TickArgs, verbose: bool) -> CmdResult {
    let mut config = ctx.config.clone();
    if let Some(n) = args.max_runs.or(args.fan_out) {
        config.limits.max_runs_per_tick = n;
    }
    let mut ctx = Context {
        config,
        ..ctx.clone()
    };
    if args.dry_run {
        // A fan-out's claims run in jobs of their own, side by side: no tick time to fit.
        if args.fan_out.is_some() {
            ctx.so_far.deadline = None;
        }
        return dry_run(&ctx, args.json, args.offline, verbose);
    }
    if args.fan_out.is_some() {
        // The runs are leased to the fan-out until a work job takes them over: not to this
        // process, whose end must not look like a dead holder.
        ctx.agent_id = fan_out_holder(&ctx.tick_id);
    }
    // Ctrl-C, or Actions cancelling the job: stop the agents, record, save, then exit 130/143.
    crate::process::interrupt::install();
    let summary = tick_with(&ctx, args.fan_out.is_some())?;
    report_tick(&ctx, &summary);
    if args.json {
        outln!(
            "{}",
            serde_json::to_string_pretty(&summary.to_json())
                .map_err(|e| Failure::tick(e.to_string()))?
        );
    } else {
        out!("{}", summary.text(verbose));
    }
    match crate::process::interrupt::requested() {
        Some(signal) => Err(Failure {
            code: signal.exit_code(),
            message: format!(
                "interrupted by {}: the tick stopped cleanly (see above); the next tick goes on",
                signal.name()
            ),
        }),
        None => Ok(()),
    }
}

/// The plan the next tick would make, changing nothing. In github mode (unless `offline`) it
/// reads GitHub first, as a tick does (GETs only, conditional with the stored ETags), and
/// applies what it saw to the state in memory, so the plan shows the imports a tick would make.
fn dry_run(ctx: &Context, json: bool, offline: bool, verbose: bool) -> CmdResult {
    // What GitHub says is applied to a private copy; offline, or with nothing to read from
    // GitHub, the state is only read.
    // Offline means no network (issue 51): a state branch as this clone last fetched it.
    let mut store = if offline {
        ctx.read_fetched_store()?
    } else if ctx.config.mode != crate::model::Mode::Github {
        ctx.read_store()?
    } else {
        ctx.scratch_store()?
    };
    let fetched = (offline && ctx.config.store_kind() == crate::config::StoreKind::Branch)
        .then(|| ctx.state_ref().fetched_ref());
    let observed = if offline {
        Vec::new()
    } else {
        crate::tick::observe_into(ctx, &mut store)?
    };
    let (snapshot, plan) = ctx.plan(&store)?;
    // Issue 38: this is the tick's first round; a real tick plans again after recording it.
    let more = crate::engine::rounds::starts_work(&plan) && ctx.so_far.deadline.is_some();
    if json {
        let mut value = serde_json::to_value(&plan).map_err(|e| Failure::tick(e.to_string()))?;
        value["observed"] = serde_json::json!(observed);
        value["more_rounds_may_follow"] = serde_json::json!(more);
        let text =
            serde_json::to_string_pretty(&value).map_err(|e| Failure::tick(e.to_string()))?;
        outln!("{text}");
    } else {
        if let Some(reference) = &fetched {
            outln!(
                "Offline: the state as this clone last fetched it ({reference}); `git fetch` brings the latest."
            );
        }
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
        out!("{}", report::plan_text(&plan, &tasks, verbose));
        if more {
            outln!(
                "This is the tick's first round (its work may take {}): after recording it, the tick plans again and more rounds may follow — a review of a run that succeeded, an approved merge, the next task of a chain — while the next step needs nothing from outside and fits in limits.tick_minutes ({} min).",
                crate::engine::rounds::minutes(plan.bound_ms),
                ctx.config.limits.tick_minutes
            );
        }
    }
    Ok(())
}

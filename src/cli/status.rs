//! `opentiger status [--json] [--all]`: every task with why it is where it is and what happens
//! next, recent runs, the last tick. Reads the state in memory; writes nothing.

use clap::Args;

use super::{CmdResult, Context, Failure};
use crate::report;
use crate::tick::status::{board_markdown, view};

#[derive(Args, Debug)]
pub struct StatusArgs {
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
    /// Include done and cancelled tasks.
    #[arg(long)]
    pub all: bool,
    /// The dashboard as markdown (what the dashboard issue shows).
    #[arg(long, conflicts_with_all = ["json", "all"])]
    pub markdown: bool,
}

/// `verbose` (`-v`/`--verbose`) adds the preflight formula.
pub fn run(ctx: &Context, args: &StatusArgs, verbose: bool) -> CmdResult {
    let store = ctx.read_store()?;
    if args.markdown {
        out!("{}", board_markdown(ctx, &store)?);
        return Ok(());
    }
    let view = view(ctx, &store, args.all)?;
    if args.json {
        let text = serde_json::to_string_pretty(&view).map_err(|e| Failure::tick(e.to_string()))?;
        outln!("{text}");
    } else {
        out!("{}", report::status_text(&view, verbose));
    }
    Ok(())
}

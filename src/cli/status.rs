//! `opentiger status [--json] [--all] [--markdown] [--graph]`: every task with why it is where
//! it is and what happens next, recent runs, the last tick; the dashboard as markdown; the task
//! graph as Mermaid text. Reads the state in memory; writes nothing. Not for: building the view
//! and the board (`tick::status`), or their text (`report`, `report::board`, `report::graph`).

use clap::Args;

use super::{CmdResult, Context, Failure};
use crate::report;
use crate::tick::status::{board_markdown, graph_tasks, view};

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
    /// The task graph as Mermaid text (`flowchart`: states as colours, dependencies as edges),
    /// as the dashboard draws it; paste it into a ```mermaid block or a Mermaid renderer.
    #[arg(long, conflicts_with_all = ["json", "all", "markdown"])]
    pub graph: bool,
}

/// `verbose` (`-v`/`--verbose`) adds the preflight formula.
pub fn run(ctx: &Context, args: &StatusArgs, verbose: bool) -> CmdResult {
    let store = ctx.read_store()?;
    if args.graph {
        match crate::report::graph::mermaid(&graph_tasks(&store)?) {
            Some(text) => out!("{text}"),
            None => outln!("No active tasks: the graph is empty."),
        }
        return Ok(());
    }
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

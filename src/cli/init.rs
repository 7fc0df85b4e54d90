//! `opentiger init [--force] [--agent-command PROGRAM]`: prints what [`crate::init::init`]
//! wrote and the next steps. Not for: choosing and writing `.opentiger.yml` and the workflow
//! (`init`), or checking the result (`doctor`).

use clap::Args;

use super::{Cli, CmdResult};

#[derive(Args, Debug)]
pub struct InitArgs {
    /// Replace files that already exist.
    #[arg(long)]
    pub force: bool,
    /// Your own agent program (`executor: command`), e.g. ./scripts/agent.sh: run without a
    /// shell from the repository root's path, the prompt on stdin. Default: claude-code.
    #[arg(long, value_name = "PROGRAM")]
    pub agent_command: Option<String>,
}

pub fn run(cli: &Cli, args: &InitArgs) -> CmdResult {
    let report = crate::init::init(
        &cli.context_options(),
        args.force,
        args.agent_command.as_deref(),
    )?;
    out!("{report}");
    Ok(())
}

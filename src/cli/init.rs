//! `opentiger init [--force] [--agent-command PROGRAM] [--preview]`: prints what
//! [`crate::init::init`] wrote and the next steps, or with `--preview` what the first tick would
//! do (`crate::init::preview`), writing nothing. Not for: choosing and writing `.opentiger.yml` and the workflow
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
    /// Write nothing: say what opentiger would do here — which issues it takes, which agents,
    /// the budget, the paths a change may touch — from the existing .opentiger.yml, or the one
    /// init would write. Lists the labelled issues when GITHUB_TOKEN is set.
    #[arg(long)]
    pub preview: bool,
}

pub fn run(cli: &Cli, args: &InitArgs) -> CmdResult {
    if args.preview {
        let text = crate::init::preview(&cli.context_options(), args.agent_command.as_deref())?;
        out!("{text}");
        return Ok(());
    }
    let report = crate::init::init(
        &cli.context_options(),
        args.force,
        args.agent_command.as_deref(),
    )?;
    out!("{report}");
    Ok(())
}

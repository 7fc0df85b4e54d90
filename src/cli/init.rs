//! `opentiger init [--force]`: prints what [`crate::init::init`] wrote and the next steps.

use clap::Args;

use super::{Cli, CmdResult};

#[derive(Args, Debug)]
pub struct InitArgs {
    /// Replace files that already exist.
    #[arg(long)]
    pub force: bool,
}

pub fn run(cli: &Cli, args: &InitArgs) -> CmdResult {
    print!("{}", crate::init::init(&cli.context_options(), args.force)?);
    Ok(())
}

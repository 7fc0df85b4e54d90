//! `opentiger doctor [--online]`: prints [`crate::doctor::checks`], each problem with its fix.
//! Exit code: 0 when no check failed (warnings allowed), 1 otherwise.

use clap::Args;

use super::{Cli, CmdResult, Failure};
use crate::doctor::{checks, render, Level};

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// Also ask GitHub about the token and the remote about the state ref (network calls).
    #[arg(long)]
    pub online: bool,
}

pub fn run(cli: &Cli, args: &DoctorArgs) -> CmdResult {
    let lookup = crate::credentials::lookup;
    let checks = checks(&cli.context_options(), args.online, &lookup);
    out!("{}", render(&checks));
    let failed = checks.iter().filter(|c| c.level == Level::Fail).count();
    if failed > 0 {
        return Err(Failure::tick(format!(
            "{failed} check(s) failed: see the fixes above"
        )));
    }
    Ok(())
}

//! `opentiger doctor [--online]`: prints [`crate::doctor::checks`], each problem with its fix.
//! Exit code: 0 when no check failed (warnings allowed), 2 when the configuration does not
//! load, 1 otherwise; outside GitHub Actions in github mode, what Actions provides is listed
//! apart and fails nothing. Not for: the checks,
//! their text and which of them fail where (`doctor`).

use clap::Args;

use super::{Cli, CmdResult, Failure};
use crate::doctor::{checks, configuration_failed, failures, render, Where};

#[derive(Args, Debug)]
pub struct DoctorArgs {
    /// Also ask GitHub about the token and the remote about the state ref (network calls).
    #[arg(long)]
    pub online: bool,
}

pub fn run(cli: &Cli, args: &DoctorArgs) -> CmdResult {
    let lookup = crate::credentials::lookup;
    let options = cli.context_options();
    let checks = checks(&options, args.online, &lookup);
    let at = Where::of(crate::doctor::mode_of(&options), &lookup);
    out!("{}", render(&checks, at));
    let failed = failures(&checks, at);
    if configuration_failed(&checks) {
        return Err(Failure::usage(
            "the configuration does not load: see the fix above",
        ));
    }
    if failed > 0 {
        return Err(Failure::tick(format!(
            "{failed} check(s) failed: see the fixes above"
        )));
    }
    Ok(())
}

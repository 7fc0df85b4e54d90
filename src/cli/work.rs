//! `opentiger work --run ID`: the work half of a fan-out; prints what
//! [`crate::tick::work::work_run`] did.

use clap::Args;

use super::{CmdResult, Context};
use crate::model::RunId;
use crate::tick::work::{work_run, WorkDone};

#[derive(Args, Debug)]
pub struct WorkArgs {
    /// The run to work on, from the matrix `tick --fan-out` printed.
    #[arg(long = "run", value_name = "ID")]
    pub run: String,
}

pub fn run(ctx: &Context, args: &WorkArgs) -> CmdResult {
    let run_id = RunId(args.run.trim().to_string());
    match work_run(ctx, &run_id)? {
        WorkDone::AlreadyRecorded(status) => {
            outln!("run {run_id} is already recorded ({status}): nothing to do");
        }
        WorkDone::Recorded {
            line,
            failure,
            stray,
        } => {
            outln!("work {run_id}: {line}");
            if let Some(failure) = failure {
                outln!("    {}", crate::model::excerpt::headline(&failure));
                for line in crate::model::excerpt::tail(&failure) {
                    outln!("      | {line}");
                }
            }
            if let Some(holder) = stray {
                outln!(
                    "outcome not applied, the lease is now {}",
                    holder.as_deref().unwrap_or("gone")
                );
            }
        }
    }
    Ok(())
}

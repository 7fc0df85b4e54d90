//! `opentiger work --run ID [--output DIR]` and `opentiger apply DIR`: the work half of a
//! fan-out, in one job ([`crate::tick::work::work_run`]) or split between a job without a token
//! ([`crate::tick::output::work_output`]) and one with it ([`crate::tick::apply::apply_output`]);
//! prints what they did. Not for: the work and its record themselves (`tick::work`,
//! `tick::output`, `tick::apply`), or claiming the runs a `tick --fan-out` lists as its job
//! matrix (`tick::act`, printed by `cli::tick`).

use std::path::PathBuf;

use clap::Args;

use super::{CmdResult, Context};
use crate::failure::Failure;
use crate::model::RunId;
use crate::tick::output::{work_output, Written};
use crate::tick::work::{work_run, WorkDone};

#[derive(Args, Debug)]
pub struct WorkArgs {
    /// The run to work on, from the matrix `tick --fan-out` printed.
    #[arg(long = "run", value_name = "ID")]
    pub run: String,
    /// Work without a forge token and write the result (a git bundle and a result record) to
    /// this new or empty folder, for `opentiger apply DIR` in a job that holds the token.
    #[arg(long = "output", value_name = "DIR")]
    pub output: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct ApplyArgs {
    /// The folder `opentiger work --run ID --output DIR` wrote.
    #[arg(value_name = "DIR")]
    pub dir: PathBuf,
}

pub fn run(ctx: &Context, args: &WorkArgs) -> CmdResult {
    let run_id = RunId(args.run.trim().to_string());
    let Some(dir) = &args.output else {
        // A cancelled matrix job: the run is stopped, recorded as cancelled, the task queued.
        crate::process::interrupt::install();
        print_done(&run_id, "work", work_run(ctx, &run_id)?)?;
        return match crate::process::interrupt::requested() {
            Some(signal) => Err(super::Failure {
                code: signal.exit_code(),
                message: format!(
                    "interrupted by {}: the run was stopped and queued again",
                    signal.name()
                ),
            }),
            None => Ok(()),
        };
    };
    let dir = &absolute(dir)?;
    match work_output(ctx, &run_id, dir)? {
        Written::AlreadyRecorded(status) => {
            outln!("run {run_id} is already recorded ({status}): nothing to do, nothing written");
        }
        Written::Result {
            line,
            failure,
            bundle,
        } => {
            outln!("work {run_id}: {line}");
            print_failure(failure.as_deref())?;
            outln!(
                "result written to {}{}: apply it with `opentiger apply {}` in a job that holds the token",
                dir.display(),
                if bundle { " (with the change's bundle)" } else { "" },
                dir.display()
            );
        }
    }
    Ok(())
}

pub fn apply(ctx: &Context, args: &ApplyArgs) -> CmdResult {
    let (run_id, done) = crate::tick::apply::apply_output(ctx, &absolute(&args.dir)?)?;
    print_done(&run_id, "apply", done)
}

/// DIR as given, from the folder the command was started in: git, which writes and reads the
/// bundle, runs in the repository, so a relative path must not reach it.
fn absolute(dir: &std::path::Path) -> Result<PathBuf, Failure> {
    std::path::absolute(dir)
        .map_err(|e| Failure::usage(format!("the folder {}: {e}", dir.display())))
}

fn print_done(run_id: &RunId, what: &str, done: WorkDone) -> CmdResult {
    match done {
        WorkDone::AlreadyRecorded(status) => {
            outln!("run {run_id} is already recorded ({status}): nothing to do");
        }
        WorkDone::Recorded {
            line,
            failure,
            stray,
        } => {
            outln!("{what} {run_id}: {line}");
            print_failure(failure.as_deref())?;
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

fn print_failure(failure: Option<&str>) -> CmdResult {
    if let Some(failure) = failure {
        outln!("    {}", crate::model::excerpt::headline(failure));
        for line in crate::model::excerpt::tail(failure) {
            outln!("      | {line}");
        }
    }
    Ok(())
}

//! opentiger: an autonomous coding loop for one repository, advanced one CI tick at a time.
//! See ARCHITECTURE.md for the map. The shape is a functional core ([`engine`]: plain data in,
//! a [`engine::Plan`] out) inside an imperative shell: [`tick`] runs one step of the loop through
//! the edges ([`store`], [`forge`], [`runner`]); [`cli`] parses arguments and prints. The command
//! line lives here, beside the binary, and every other module in a crate below
//! (`opentiger-app` and the layers it stands on), re-exported under its usual path.
//! Not for: anything but the command line and the module list; the process's start (askpass,
//! tokens out of the environment, the subreaper) is `main.rs`.

pub use opentiger_app::{
    bounded, config, credentials, demo, doctor, egress, engine, eval, executor, failure, forge,
    git, init, live, model, planner, policy, preview, process, programs, prompt, reaper, redact,
    release, report, runner, safe_output, sandbox, scan, scratch, statebranch, store, tick, time,
    verify, workflows, workspace,
};

pub mod cli;

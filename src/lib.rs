//! opentiger: an autonomous coding loop for one repository, advanced one CI tick at a time.
//! See ARCHITECTURE.md for the map. The shape is a functional core ([`engine`]: plain data in,
//! a [`engine::Plan`] out) inside an imperative shell: [`tick`] runs one step of the loop through
//! the edges ([`store`], [`forge`], [`runner`]); [`cli`] parses arguments and prints.
//! Not for: anything but the module list; the process's start (askpass, tokens out of the
//! environment, the subreaper) is `main.rs`.

pub use opentiger_engine::engine;
pub use opentiger_forge::forge;
pub use opentiger_model::{config, model, policy, time};
pub use opentiger_store::{statebranch, store};
pub use opentiger_system::{
    bounded, credentials, egress, git, process, programs, reaper, redact, sandbox, scan, scratch,
    workspace,
};

pub mod cli;
pub mod demo;
pub mod doctor;
pub mod eval;
pub mod executor;
pub mod failure;
pub mod init;
pub mod live;
pub mod planner;
pub mod preview;
pub mod prompt;
pub mod release;
pub mod report;
pub mod runner;
pub mod safe_output;
pub mod tick;
pub mod verify;
pub mod workflows;

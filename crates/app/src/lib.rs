//! opentiger's application: one tick of the loop ([`tick`]) through the edges ([`store`],
//! [`forge`], [`runner`]) around the pure [`engine`], and the commands' work (`doctor`, `init`,
//! `demo`, `eval`, reports). Each crate below is re-exported here under its usual paths.
//! Not for: arguments, printing and exit codes (`cli`, in the `opentiger` package with the
//! binary, which nothing here can reach: this crate does not depend on it).

pub use opentiger_engine::engine;
pub use opentiger_forge::forge;
pub use opentiger_model::{config, model, policy, time};
pub use opentiger_store::{statebranch, store};
pub use opentiger_system::{
    bounded, credentials, egress, git, process, programs, reaper, redact, sandbox, scan, scratch,
    workspace,
};

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

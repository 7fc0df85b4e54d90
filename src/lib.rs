//! opentiger: an autonomous coding loop for one repository, advanced one CI tick at a time.
//! See ARCHITECTURE.md for the map. The shape is a functional core ([`engine`]: plain data in,
//! a [`engine::Plan`] out) inside an imperative shell: [`tick`] runs one step of the loop through
//! the edges ([`store`], [`forge`], [`runner`]); [`cli`] parses arguments and prints.
//! Not for: anything but the module list; the process's start (askpass, tokens out of the
//! environment, the subreaper) is `main.rs`.

pub mod bounded;
pub mod cli;
pub mod config;
pub mod credentials;
pub mod demo;
pub mod doctor;
pub mod egress;
pub mod engine;
pub mod eval;
pub mod executor;
pub mod failure;
pub mod forge;
pub mod git;
pub mod init;
pub mod live;
pub mod model;
pub mod planner;
pub mod policy;
pub mod preview;
pub mod process;
pub mod programs;
pub mod prompt;
pub mod reaper;
pub mod redact;
pub mod release;
pub mod report;
pub mod runner;
pub mod safe_output;
pub mod sandbox;
pub mod scan;
pub mod scratch;
pub mod statebranch;
pub mod store;
pub mod tick;
pub mod time;
pub mod verify;
pub mod workflows;
pub mod workspace;

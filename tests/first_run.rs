//! The first hour, measured (issue 51): the GitHub Actions set-up without traps, messages that
//! name the cause and a fix that can be pasted, `--offline` without network, one run stopped on
//! request, and the first-run preview. Each test drives the real binary as a person would.

#[path = "first_run/docs.rs"]
mod docs;
#[path = "first_run/plain.rs"]
mod plain;
#[path = "first_run/preview.rs"]
mod preview;
#[path = "first_run/setup.rs"]
mod setup;
#[path = "first_run/stop.rs"]
mod stop;
#[path = "first_run/stop_comment.rs"]
mod stop_comment;

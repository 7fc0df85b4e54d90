//! `opentiger eval`: the repository's own history replayed through the whole loop, to measure
//! what it would have delivered — with which agent, model and budget — before trusting it with
//! live work. Each past change C becomes a task made from C's message, run by real ticks on C's
//! parent in a throw-away clone (`eval::task`); the tests C added or changed, kept from the
//! agent, are then put on top of what the loop merged and the test command decides whether the
//! task was resolved (`eval::accept`). Several configurations run on the same changes and are
//! reported side by side (`eval::report`), within a budget, several tasks at once, and an
//! interrupted eval resumes where it stopped (`eval::results`).
//!
//! Nothing is written to the user's repository, branches or state: the clones are made from it
//! and read from it only; the eval's own files live in `<git dir>/opentiger/eval` (or `--out`).
//! Not for: the loop itself (each step is an `opentiger tick` in the clone) or its rules.

mod accept;
mod change;
mod clone;
mod linked;
pub mod report;
mod results;
mod rules;
mod run;
mod svg;
mod task;

pub use accept::TestCommand;
pub use change::{Selection, Skipped, DEFAULT_TEST_GLOBS};
pub use results::{ConfigReport, Evaluated, TaskResult};
pub use rules::{HiddenTests, Summary};
pub use run::{run, Options};

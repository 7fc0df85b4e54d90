//! What may stop a running program early (issue 18): an [`OutputWatch`] fed each complete line of
//! stdout and stderr (from the reader threads) and polled, and a [`Sentinel`] asked each poll with
//! what was [`Seen`] (issue 37). The first `Some(reason)` kills its group and is reported as
//! [`super::ProcessOutput::stopped`]. Time comes in as the time since the start, so a watch is a
//! pure state machine that tests drive by hand. Not for: what means stop (each CLI's watcher in
//! `executor::adapter`, `runner::network`'s watchdog) or the wait loop itself (`process`).

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

/// What decides, from a program's output, that it should be stopped.
pub trait OutputWatch: Send {
    /// A complete line of stdout or stderr (without its newline), `at` this long after the
    /// start.
    fn line(&mut self, line: &str, at: Duration) -> Option<String>;
    /// Called about every poll interval while the program runs.
    fn poll(&mut self, _at: Duration) -> Option<String> {
        None
    }
}

/// What may stop a program early besides its output (issue 37: its network door saw a quota
/// answer or refused a call past its budget, it has been idle too long), and what hears how it
/// is doing while it runs (issue 40: the live view's heartbeat).
pub trait Sentinel: Send + Sync + fmt::Debug {
    /// Called about every poll interval with what was seen of the program so far.
    /// `Some(reason)` stops it (its whole group is killed).
    fn check(&self, seen: &Seen) -> Option<String>;
    /// Whether the stop it asked for ends the program gently — SIGTERM to its group, SIGKILL
    /// after [`super::interrupt::GRACE`], as an interrupt does (issue 51: a person's stop) —
    /// rather than with SIGKILL at once.
    fn gently(&self) -> bool {
        false
    }
}

/// What the wait loop has seen of a running program, for a [`Sentinel`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Seen {
    /// How long since it last printed anything (since the start if it never did).
    pub quiet: Duration,
    /// How long it has run.
    pub elapsed: Duration,
    /// Lines it printed so far, stdout and stderr together.
    pub lines: u64,
}

/// A shared [`OutputWatch`], as a [`super::ProcessSpec`] carries it.
#[derive(Clone)]
pub struct Watch(Arc<Mutex<dyn OutputWatch>>);

impl Watch {
    pub fn new(watch: impl OutputWatch + 'static) -> Watch {
        Watch(Arc::new(Mutex::new(watch)))
    }

    fn with<T>(&self, f: impl FnOnce(&mut dyn OutputWatch) -> T) -> T {
        let mut guard = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut *guard)
    }

    pub(super) fn poll(&self, at: Duration) -> Option<String> {
        self.with(|w| w.poll(at))
    }
}

impl fmt::Debug for Watch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Watch")
    }
}

/// Splits a stream into lines for a [`Watch`]; the first stop reason is kept in `stop`.
pub(super) struct LineFeed {
    watch: Watch,
    partial: Vec<u8>,
    pub stop: Arc<Mutex<Option<String>>>,
}

/// A line longer than this is cut (its start is kept): no event a watch reads is near it.
const MAX_LINE: usize = 1 << 20;

impl LineFeed {
    pub fn new(watch: Watch, stop: Arc<Mutex<Option<String>>>) -> LineFeed {
        LineFeed {
            watch,
            partial: Vec::new(),
            stop,
        }
    }

    pub fn push(&mut self, bytes: &[u8], at: Duration) {
        for chunk in bytes.split_inclusive(|b| *b == b'\n') {
            let room = MAX_LINE.saturating_sub(self.partial.len());
            self.partial.extend(&chunk[..chunk.len().min(room)]);
            if chunk.ends_with(b"\n") {
                let line = String::from_utf8_lossy(&self.partial).into_owned();
                self.partial.clear();
                let line = line.trim_end_matches(['\n', '\r']);
                if let Some(reason) = self.watch.with(|w| w.line(line, at)) {
                    let mut stop = self.stop.lock().unwrap_or_else(PoisonError::into_inner);
                    stop.get_or_insert(reason);
                }
            }
        }
    }
}

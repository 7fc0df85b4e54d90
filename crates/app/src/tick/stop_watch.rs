//! Watching a running run for a person's stop (issue 51): while a task run's agent runs, a
//! thread reads the state again — the state file opened read-only, or the state branch fetched
//! into a private ref (only the chunks that changed, and assembled only when its commit moved)
//! — every [`FILE_EVERY`] or [`BRANCH_EVERY`], and once `opentiger task stop` (from another
//! terminal or job) or a `/opentiger stop` comment (through another tick's people feed) asked
//! that run to stop, the agent's sentinel says so: the process runner then ends its group
//! gently (SIGTERM, SIGKILL after the grace). A stop thus lands within the interval plus the
//! grace, under 30 s. Nothing else in the tick is touched.
//!
//! Not for: what a stop may name (`engine::stop`), writing the request (`store::stops`), or what
//! the record makes of the run (`engine::stop::stopped`).

use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::Context;
use crate::config::StoreKind;
use crate::model::RunId;
use crate::process::{Seen, Sentinel};
use crate::statebranch::StateRef;
use crate::store::{StopRequest, Store};

/// How often a state file is read again while an agent runs (a local read).
const FILE_EVERY: Duration = Duration::from_secs(5);
/// How often a state branch is fetched again (a round trip to the remote).
const BRANCH_EVERY: Duration = Duration::from_secs(15);
/// The private ref the state branch is fetched into for the watch.
const WATCH_REF: &str = "refs/opentiger/stop-watch";

/// A run's watch for a person's stop; its thread ends when the watch is dropped.
#[derive(Debug)]
pub(super) struct StopWatch {
    fired: Arc<Mutex<Option<StopRequest>>>,
    /// Dropped with the watch: its thread sees the channel close and ends.
    _alive: Sender<()>,
}

impl StopWatch {
    /// Who asked the run to stop, once someone did.
    pub(super) fn fired(&self) -> Option<StopRequest> {
        self.fired
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

impl Sentinel for StopWatch {
    fn check(&self, _: &Seen) -> Option<String> {
        self.fired()
            .map(|r| format!("stopped on request by {}", r.by))
    }

    fn gently(&self) -> bool {
        true
    }
}

/// Where the watch reads the state.
enum Source {
    File(PathBuf),
    Branch {
        state: StateRef,
        /// The private file the branch's state is assembled into, and the commit it holds.
        scratch: tempfile::TempDir,
        known: Option<String>,
    },
}

impl Source {
    fn every(&self) -> Duration {
        match self {
            Source::File(_) => FILE_EVERY,
            Source::Branch { .. } => BRANCH_EVERY,
        }
    }

    /// The stop request of `run`, as the state says now. A state that cannot be read now is
    /// read again at the next poll (the run goes on meanwhile).
    fn read(&mut self, run: &RunId) -> Option<StopRequest> {
        let path = match self {
            Source::File(path) => path.clone(),
            Source::Branch {
                state,
                scratch,
                known,
            } => {
                let file = scratch.path().join("state.sqlite");
                match state.peek_into(&file, WATCH_REF, known.as_deref()) {
                    Ok(commit) => *known = commit,
                    Err(e) => {
                        tracing::debug!("stop watch: could not read the state branch: {e}");
                        return None;
                    }
                }
                file
            }
        };
        if !path.exists() {
            return None;
        }
        match Store::open_read_only(&path).and_then(|store| store.stop_request(run)) {
            Ok(request) => request,
            Err(e) => {
                tracing::debug!("stop watch: could not read the state: {e}");
                None
            }
        }
    }
}

/// Starts watching run `run` for a person's stop. `None` when the state cannot be watched
/// from here (a state file whose path does not resolve).
pub(super) fn watch(ctx: &Context, run: &RunId) -> Option<Arc<StopWatch>> {
    let source = match ctx.config.store_kind() {
        StoreKind::File => Source::File(ctx.state_path().ok()?),
        StoreKind::Branch => Source::Branch {
            state: ctx.state_ref(),
            scratch: tempfile::tempdir().ok()?,
            known: None,
        },
    };
    let fired = Arc::new(Mutex::new(None));
    let (alive, gone) = mpsc::channel::<()>();
    let (seen, watched) = (fired.clone(), run.clone());
    let started = std::thread::Builder::new()
        .name("stop-watch".into())
        .spawn(move || {
            let mut source = source;
            let every = source.every();
            loop {
                if let Some(request) = source.read(&watched) {
                    *seen.lock().unwrap_or_else(PoisonError::into_inner) = Some(request);
                    return;
                }
                match gone.recv_timeout(every) {
                    Err(RecvTimeoutError::Timeout) => {}
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                }
            }
        });
    if let Err(e) = started {
        tracing::warn!("could not watch run {run} for a stop request: {e}");
        return None;
    }
    Some(Arc::new(StopWatch {
        fired,
        _alive: alive,
    }))
}

//! What the live view (`crate::live`, issue 40) hears of an agent or a check while it runs:
//! a line when it starts, a heartbeat at most every [`live::HEARTBEAT`] while it runs (how
//! long, its output lines, the files changed in its workspace), a line when it ends. The
//! heartbeat rides on the process's [`Sentinel`]: [`Pulse`] passes every check on to the
//! sentinel it wraps (an agent's watchdog) and never stops anything itself.
//!
//! Not for: deciding anything about the run, or printing its output (agents' text stays out of
//! the log; the tick's summary says how each run ended).

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use crate::config::AgentRole;
use crate::executor::{AgentExit, AgentFailureKind, AgentResult, ExecutorError};
use crate::live;
use crate::process::{Seen, Sentinel};
use crate::redact::Redactor;

/// The most entries one count of a workspace looks at.
const COUNT_LIMIT: usize = 100_000;

/// The heartbeat of one running program.
#[derive(Debug)]
pub(super) struct Pulse {
    what: String,
    /// Where the changed files are counted (an agent's workspace).
    workspace: Option<PathBuf>,
    since: SystemTime,
    /// When the last heartbeat was, after the start.
    last: Mutex<Duration>,
    inner: Option<Arc<dyn Sentinel>>,
}

impl Sentinel for Pulse {
    fn check(&self, seen: &Seen) -> Option<String> {
        if let Some(reason) = self.inner.as_ref().and_then(|s| s.check(seen)) {
            return Some(reason);
        }
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if live::due(seen.elapsed, *last, live::HEARTBEAT) {
            *last = seen.elapsed;
            let files = self
                .workspace
                .as_deref()
                .map(|w| changed_files(w, self.since));
            live::line(&live::heartbeat_line(
                &self.what,
                seen.elapsed,
                seen.lines,
                files,
            ));
        }
        None
    }

    fn gently(&self) -> bool {
        self.inner.as_ref().is_some_and(|s| s.gently())
    }
}

/// A program the live view follows: said started when made, said ended by [`Watched::ended`].
pub(super) struct Watched {
    what: String,
    started: Instant,
}

impl Watched {
    /// Says `what` (redacted by the caller) started; the sentinel to run it with carries its
    /// heartbeat (and `inner`'s checks). With the live view off, `inner` as it is.
    pub fn start(
        what: String,
        workspace: Option<&Path>,
        inner: Option<Arc<dyn Sentinel>>,
    ) -> (Watched, Option<Arc<dyn Sentinel>>) {
        if !live::on() {
            return (
                Watched {
                    what,
                    started: Instant::now(),
                },
                inner,
            );
        }
        live::line(&format!("{what}: started"));
        let pulse = Pulse {
            what: what.clone(),
            workspace: workspace.map(Path::to_path_buf),
            since: SystemTime::now(),
            last: Mutex::new(Duration::ZERO),
            inner,
        };
        let watched = Watched {
            what,
            started: Instant::now(),
        };
        (watched, Some(Arc::new(pulse)))
    }

    /// Says how it ended (`how`: `finished`, `failed (exit 1)`, ...) and after how long.
    pub fn ended(self, how: &str) {
        live::line(&format!(
            "{}: {how} after {}",
            self.what,
            live::span(self.started.elapsed())
        ));
    }
}

/// The live view of an agent run of `role` by `executor` (its label) in `workspace`.
pub(super) fn agent(
    role: AgentRole,
    executor: &str,
    workspace: &Path,
    inner: Option<Arc<dyn Sentinel>>,
    redactor: &Redactor,
) -> (Watched, Option<Arc<dyn Sentinel>>) {
    let what = redactor.redact(&format!("{} agent {executor}", role.name()));
    Watched::start(what, Some(workspace), inner)
}

/// How an agent run ended, in a few words.
pub(super) fn agent_end(ran: &Result<AgentResult, ExecutorError>, redactor: &Redactor) -> String {
    match ran {
        Ok(result) => match (&result.exit, &result.failure) {
            (_, Some(failure)) => match failure.kind {
                AgentFailureKind::Quota { .. } => "stopped on a quota or rate limit",
                AgentFailureKind::MaxTurns => "stopped at its turn cap",
                AgentFailureKind::Budget => "stopped at its own spending cap",
                AgentFailureKind::Config => "could not reach its model",
                AgentFailureKind::Error => "reported an error",
            }
            .to_string(),
            (AgentExit::Finished, None) => "finished".to_string(),
            (AgentExit::TimedOut, None) => "timed out".to_string(),
            (AgentExit::Failed(Some(code)), None) => format!("exited with code {code}"),
            (AgentExit::Failed(None), None) => "was killed by a signal".to_string(),
        },
        Err(e) => redactor.excerpt(&format!("could not run: {e}"), 200),
    }
}

/// Files under `dir` written since `since` (its own `.git` left out), counted up to a bound.
fn changed_files(dir: &Path, since: SystemTime) -> usize {
    let mut stack = vec![dir.to_path_buf()];
    let (mut seen, mut changed) = (0usize, 0usize);
    while let Some(folder) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&folder) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > COUNT_LIMIT {
                return changed;
            }
            // Never through a link: `file_type` and `metadata` of a dir entry do not follow.
            let (Ok(kind), Ok(meta)) = (entry.file_type(), entry.metadata()) else {
                continue;
            };
            if kind.is_dir() {
                if !(folder == dir && entry.file_name() == ".git") {
                    stack.push(entry.path());
                }
            } else if meta.modified().is_ok_and(|m| m >= since) {
                changed += 1;
            }
        }
    }
    changed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn changed_files_are_counted_without_the_agents_git() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("src")).unwrap();
        std::fs::create_dir_all(dir.path().join(".git/objects")).unwrap();
        for file in ["old.txt", "src/new.rs", "top.txt", ".git/objects/blob"] {
            std::fs::write(dir.path().join(file), "x").unwrap();
        }
        let since = SystemTime::now() - Duration::from_secs(60);
        // Written before the run started: not counted.
        std::fs::File::options()
            .write(true)
            .open(dir.path().join("old.txt"))
            .unwrap()
            .set_modified(since - Duration::from_secs(3600))
            .unwrap();
        assert_eq!(changed_files(dir.path(), since), 2);
    }
}

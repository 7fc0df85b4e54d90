//! The live view of a tick (issue 40): a line on stderr when each agent or check starts and
//! ends, a heartbeat while one runs (at most every [`HEARTBEAT`]: how long, how many output
//! lines, how many files changed), and in GitHub Actions each run folded into a
//! `::group::`/`::endgroup::` block of the log. stdout stays the tick's summary (and JSON).
//!
//! Off unless the command turns it on ([`init`]: `tick`, `work`, `plan`; never with `-q`), so
//! tests and library callers print nothing. The caller redacts what it passes in; this module
//! only frames and writes lines.
//!
//! In Actions the action's script runs the tick with workflow commands stopped (the log quotes
//! agents and issues, which must not set outputs or annotations). It hands the tick its stop
//! token in [`STOP_TOKEN_VAR`], read once and removed from the environment: a fold resumes
//! commands for its own `::group::` line only, then stops them again with the same token.
//!
//! Not for: what a tick prints when it ends (`tick::report`), or logging (`tracing`).

use std::io::Write as _;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How often a running agent or check gets a heartbeat line, at most.
pub const HEARTBEAT: Duration = Duration::from_secs(30);

/// The variable the action's tick script passes its `::stop-commands::` token in.
pub const STOP_TOKEN_VAR: &str = "OPENTIGER_ACTIONS_STOP_TOKEN";

/// Where lines go, once turned on.
#[derive(Debug)]
struct Sink {
    /// GitHub Actions: runs are folded.
    actions: bool,
    /// The token workflow commands were stopped with, to resume them for a fold's own lines.
    stop_token: Option<String>,
}

static SINK: OnceLock<Sink> = OnceLock::new();

/// The stop token the action's script passed, taken out of the environment (every command
/// calls it first thing, so no program started later inherits it).
pub fn take_stop_token() -> Option<String> {
    let token = std::env::var(STOP_TOKEN_VAR)
        .ok()
        .filter(|t| !t.is_empty() && t.chars().all(|c| c.is_ascii_alphanumeric()));
    std::env::remove_var(STOP_TOKEN_VAR);
    token
}

/// Turns the live view on for this process (once; later calls change nothing). `actions`:
/// running in GitHub Actions (`GITHUB_ACTIONS=true`); `stop_token`: [`take_stop_token`]'s.
pub fn init(actions: bool, stop_token: Option<String>) {
    let _ = SINK.set(Sink {
        actions,
        stop_token: stop_token.filter(|_| actions),
    });
}

/// Whether lines are printed at all.
pub fn on() -> bool {
    SINK.get().is_some()
}

/// One line of the live view, when it is on.
pub fn line(text: &str) {
    if let Some(sink) = SINK.get() {
        sink.write(&[format!("opentiger: {}", one_line(text))]);
    }
}

impl Sink {
    fn write(&self, lines: &[String]) {
        let mut err = std::io::stderr().lock();
        for l in lines {
            // Nothing to do about a closed stderr: the tick's own result does not depend on it.
            let _ = writeln!(err, "{l}");
        }
        let _ = err.flush();
    }

    /// Workflow command `command` framed so it takes effect while commands are stopped.
    fn command(&self, command: String) -> Vec<String> {
        match &self.stop_token {
            Some(token) => vec![
                format!("::{token}::"),
                command,
                format!("::stop-commands::{token}"),
            ],
            None => vec![command],
        }
    }
}

/// A run's block of the log: opened with its title, closed (with how long it took) when
/// dropped. In Actions the block is a fold.
#[must_use = "the fold closes when this is dropped"]
pub struct Fold {
    started: Instant,
    title: String,
}

/// Opens a fold titled `title` (one line; redacted by the caller).
pub fn fold(title: &str) -> Fold {
    let title = one_line(title);
    if let Some(sink) = SINK.get() {
        let lines = if sink.actions {
            sink.command(format!("::group::{}", escape_data(&title)))
        } else {
            vec![format!("opentiger: {title}")]
        };
        sink.write(&lines);
    }
    Fold {
        started: Instant::now(),
        title,
    }
}

impl Drop for Fold {
    fn drop(&mut self) {
        if let Some(sink) = SINK.get() {
            let mut lines = vec![format!(
                "opentiger: {}: ended after {}",
                self.title,
                span(self.started.elapsed())
            )];
            if sink.actions {
                lines.extend(sink.command("::endgroup::".to_string()));
            }
            sink.write(&lines);
        }
    }
}

/// Whether a heartbeat is due `elapsed` after the start, the last one `last` after it.
pub fn due(elapsed: Duration, last: Duration, every: Duration) -> bool {
    elapsed >= last + every
}

/// The heartbeat of `what` (e.g. `worker agent claude-code`): how long it has run, its output
/// so far and, for an agent, the files changed in its workspace.
pub fn heartbeat_line(what: &str, elapsed: Duration, lines: u64, files: Option<usize>) -> String {
    let files = match files {
        Some(n) => format!(", {n} file(s) changed in its workspace"),
        None => String::new(),
    };
    format!(
        "{what}: running for {}, {lines} output line(s){files}",
        span(elapsed)
    )
}

/// `1m05s`, `42s`, `1h02m`.
pub fn span(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m{:02}s", s / 60, s % 60),
        _ => format!("{}h{:02}m", s / 3600, (s % 3600) / 60),
    }
}

/// Workflow-command data escaping (the runner's rules: `%`, CR, LF).
fn escape_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// One line: a title or reason from an issue may hold newlines.
fn one_line(text: &str) -> String {
    text.split(['\n', '\r']).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heartbeats_are_due_every_interval_and_say_what_runs() {
        let s = Duration::from_secs;
        #[rustfmt::skip]
        let cases = [
            (s(29), s(0), false),
            (s(30), s(0), true),
            (s(45), s(30), false),
            (s(61), s(30), true),
        ];
        for (elapsed, last, expected) in cases {
            assert_eq!(
                due(elapsed, last, HEARTBEAT),
                expected,
                "{elapsed:?} {last:?}"
            );
        }
        assert_eq!(
            heartbeat_line("worker agent claude-code", s(95), 120, Some(3)),
            "worker agent claude-code: running for 1m35s, 120 output line(s), 3 file(s) changed in its workspace"
        );
        assert_eq!(
            heartbeat_line("check `cargo test`", s(3725), 7, None),
            "check `cargo test`: running for 1h02m, 7 output line(s)"
        );
    }

    #[test]
    fn fold_titles_cannot_start_a_workflow_command() {
        assert_eq!(escape_data("a%b\r\n::error::x"), "a%25b%0D%0A::error::x");
        assert_eq!(one_line("a\nb\r\nc"), "a b  c");
        let sink = Sink {
            actions: true,
            stop_token: Some("abc123".into()),
        };
        assert_eq!(
            sink.command("::group::run".into()),
            ["::abc123::", "::group::run", "::stop-commands::abc123"]
        );
        let plain = Sink {
            actions: true,
            stop_token: None,
        };
        assert_eq!(plain.command("::endgroup::".into()), ["::endgroup::"]);
    }
}

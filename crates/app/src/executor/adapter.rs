//! A CLI adapter's run: the [`Adapter`] trait (the pure parts that differ per CLI: arguments,
//! stdin, environment, parsing of its output, a [`Watcher`] that stops it early) and
//! [`run_adapter`], which puts them around the shared process edge. Not for: starting the
//! program (`executor::cli`), combining the CLI's report with the exit and the result file
//! (`executor::report`), or one CLI's flags and output (`executor::codex` and its siblings).

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use super::cli::{entries, execute, AdapterConfig, Cli, Invocation, RunFiles, PARSE_BYTES};
use super::report::{self, Report};
use super::{AgentFailure, AgentRequest, AgentResult, ExecutorError};
use crate::process::{OutputWatch, ProcessOutput, Watch};

/// One CLI adapter: the pure parts that differ per CLI. [`run_adapter`] does the rest.
pub(super) trait Adapter {
    fn cli(&self) -> &'static Cli;
    fn config(&self) -> &AdapterConfig;
    /// The arguments after the program (and after `command[1..]`); `given` is the environment
    /// the agent is given (an adapter may turn a variable its CLI ignores into a flag).
    fn args(&self, files: &RunFiles, scratch: &Path, given: &[(String, String)]) -> Vec<String>;
    /// What goes to stdin (`None`: the prompt goes by file only).
    fn stdin(&self, prompt: &str) -> Option<Vec<u8>>;
    /// Variables the CLI needs or should have in CI: fixed, non-secret ones, or a variable of
    /// `given` under the name the CLI reads (codex's key).
    fn env(&self, scratch: &Path, given: &[(String, String)]) -> Vec<(String, String)>;
    /// Reads the CLI's output.
    fn parse(&self, out: &ProcessOutput, scratch: &Path) -> Report;
    /// The prompt as the CLI gets it (by default with the read-only note of
    /// [`report::prompt_for`]).
    fn prompt(&self, role: crate::config::AgentRole, prompt: &str) -> String {
        report::prompt_for(role, prompt)
    }
    /// Arguments handing the CLI the files the task names (aider's `--file`, issue 39).
    fn file_args(&self, _req: &AgentRequest<'_>) -> Vec<String> {
        Vec::new()
    }
    /// Reads the CLI's output while it runs, to stop it early (issue 18).
    fn watcher(&self) -> Option<Box<dyn Watcher>> {
        None
    }
    /// Called after the program exits, with the names in the workspace's top folder before it
    /// ran, e.g. to remove what the CLI leaves there.
    fn clean_up(&self, _workspace: &Path, _before: &[String]) {}
}

/// Reads a CLI's stdout and stderr lines while it runs: the failure to stop it for, if any (a turn cap it
/// does not keep, a dead network or a rate limit it retries by itself). `at` is the time since
/// the start. Pure state machines, table-tested with times given by hand.
pub(super) trait Watcher: Send {
    fn line(&mut self, line: &str, at: Duration) -> Option<AgentFailure>;
    fn poll(&mut self, _at: Duration) -> Option<AgentFailure> {
        None
    }
}

/// Two watchers over the same lines (each sees every one): the first failure either finds.
pub(super) struct Both<A, B>(pub A, pub B);

impl<A: Watcher, B: Watcher> Watcher for Both<A, B> {
    fn line(&mut self, line: &str, at: Duration) -> Option<AgentFailure> {
        let first = self.0.line(line, at);
        let second = self.1.line(line, at);
        first.or(second)
    }
    fn poll(&mut self, at: Duration) -> Option<AgentFailure> {
        let first = self.0.poll(at);
        let second = self.1.poll(at);
        first.or(second)
    }
}

/// A [`Watcher`] as the process runner takes it; the failure it stopped for is kept.
struct Keep {
    watcher: Box<dyn Watcher>,
    failure: Arc<Mutex<Option<AgentFailure>>>,
}

impl Keep {
    fn keep(&mut self, failure: Option<AgentFailure>) -> Option<String> {
        let failure = failure?;
        let message = failure.message.clone();
        self.failure
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get_or_insert(failure);
        Some(message)
    }
}

impl OutputWatch for Keep {
    fn line(&mut self, line: &str, at: Duration) -> Option<String> {
        let failure = self.watcher.line(line, at);
        self.keep(failure)
    }

    fn poll(&mut self, at: Duration) -> Option<String> {
        let failure = self.watcher.poll(at);
        self.keep(failure)
    }
}

/// Every CLI adapter is an executor: its CLI's word names it, [`run_adapter`] runs it.
impl<T: Adapter> super::Executor for T {
    fn name(&self) -> &str {
        self.cli().kind
    }

    fn run(
        &self,
        req: &super::AgentRequest<'_>,
    ) -> Result<super::AgentResult, super::ExecutorError> {
        run_adapter(self, req)
    }
}

/// Runs a CLI adapter end to end: prompt (with the read-only note for the judge and planner),
/// the process, then the CLI's report and the result file combined into one [`AgentResult`].
pub(super) fn run_adapter(
    adapter: &impl Adapter,
    req: &AgentRequest<'_>,
) -> Result<AgentResult, ExecutorError> {
    let config = adapter.config();
    let prompt = adapter.prompt(req.role, &req.prompt);
    let files = RunFiles::prepare(req, &prompt)?;
    let mut args = config.extra_args.clone();
    args.extend(adapter.args(&files, req.scratch, &req.env));
    args.extend(adapter.file_args(req));
    let stopped_for = Arc::new(Mutex::new(None));
    let watch = adapter.watcher().map(|watcher| {
        Watch::new(Keep {
            watcher,
            failure: stopped_for.clone(),
        })
    });
    let inv = Invocation {
        program: config.program.clone(),
        args,
        stdin: adapter.stdin(&prompt),
        env: adapter.env(req.scratch, &req.env),
        tail_bytes: PARSE_BYTES,
        watch,
    };
    let cli = adapter.cli();
    let before = entries(req.workspace);
    let out = execute(req, &files, inv, |e| {
        format!(
            "{e}\n  fix: install it (`{}`), or set `agents.{}.command` to the program's full path",
            cli.install,
            req.role.name()
        )
    });
    adapter.clean_up(req.workspace, &before);
    let out = out?;
    let mut parsed = adapter.parse(&out, req.scratch);
    if out.stopped.is_some() {
        // Stopped on what its output showed: that is why it did not finish.
        let failure = stopped_for
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(failure) = failure {
            parsed.completed = false;
            parsed.failure = Some(failure);
        }
    }
    Ok(report::assemble(parsed, &out, &files, req.role, config))
}

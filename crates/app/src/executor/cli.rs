//! Running an agent program: what the `command` executor and the CLI adapters share. Not for:
//! a CLI's own arguments and output (`executor::adapter` and each adapter), or the process
//! itself, its group and its timeout (`process`).
//!
//! The prompt goes to `prompt.md` in the run's scratch folder (and on stdin, or by file, as the
//! program wants it), a stale `result.json` is removed first, and the program runs through
//! [`crate::process::run`]: no shell, cwd = the workspace, exactly the given environment plus
//! `OPENTIGER_PROMPT_FILE`/`OPENTIGER_RESULT_FILE`, its whole process group killed on timeout.
//!
//! For the CLI adapters, [`AdapterConfig::for_role`] looks the program up on the agent's `PATH`
//! (or takes `agents.<role>.command`); a missing one is an [`ExecutorError::Unavailable`] that
//! names the install command. The rest of an adapter's run is `adapter.rs`.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::{AgentExit, AgentRequest, ExecutorError};
use crate::config::{AgentRole, EffectiveAgent, Pricing};
use crate::process::{self, ExitStatusKind, ProcessError, ProcessOutput, ProcessSpec, Watch};

/// How much of an agent's output is kept in [`AgentResult::output_tail`] (the end of it).
pub(super) const TAIL_BYTES: usize = 16 * 1024;

/// How much of a CLI adapter's stdout is kept for parsing. Event streams put what matters at the
/// end (the result event, the last turn's usage), so a longer run only loses early events.
pub(super) const PARSE_BYTES: usize = 8 * 1024 * 1024;

/// One agent CLI: its program name and how to install it.
#[derive(Debug)]
pub struct Cli {
    /// The `executor:` word.
    pub kind: &'static str,
    /// The program looked up on PATH.
    pub program: &'static str,
    /// The command that installs it.
    pub install: &'static str,
    /// Variables that give it a model (any one will do); `doctor` checks one is set and passed,
    /// and a tick does not start it without one (issue 18) unless it has a login.
    pub keys: &'static [&'static str],
    /// Files under `$HOME` where the CLI keeps a login made by hand (`claude /login`, `codex
    /// login`): with one, it may run without a key in its environment.
    pub logins: &'static [&'static str],
    /// Hosts it reaches on its own, whatever the task — update checks, telemetry, plugin
    /// installs — that its flags cannot all turn off (issue 50): refused without advice to
    /// allow them, and recorded as its own traffic (docs/agents.md lists them).
    pub background: &'static [&'static str],
    /// The models it asks for with no `model:` (issue 50, measured with the pinned version):
    /// each has a built-in price, so no run is metered as free by accident.
    pub default_models: &'static [&'static str],
}

/// What a CLI adapter needs from `agents.<role>`, resolved.
#[derive(Clone, Debug, PartialEq)]
pub struct AdapterConfig {
    pub role: AgentRole,
    /// A bare name (looked up on the agent's PATH when it runs) or a path.
    pub program: String,
    /// Passed to the program before the adapter's own arguments (`command[1..]`).
    pub extra_args: Vec<String>,
    pub model: Option<String>,
    pub max_turns: u32,
    pub pricing: Option<Pricing>,
}

impl AdapterConfig {
    /// The adapter settings of a role; the program must be found, so that a missing CLI is
    /// reported before anything is claimed.
    pub fn for_role(
        agent: &EffectiveAgent,
        role: AgentRole,
        repo: &Path,
        cli: &Cli,
    ) -> Result<AdapterConfig, ExecutorError> {
        let (program, extra_args) = match agent.command.as_deref() {
            Some([first, rest @ ..]) => (first.clone(), rest.to_vec()),
            _ => (cli.program.to_string(), Vec::new()),
        };
        let path_var = std::env::var("PATH").ok();
        let Some(found) = locate(&program, path_var.as_deref(), repo) else {
            return Err(ExecutorError::Unavailable(missing_program(
                cli,
                &agent.config_key,
                &program,
                path_var.as_deref(),
            )));
        };
        // A relative path is taken from the repository, not from each run's workspace.
        let program = if program.contains('/') {
            found.display().to_string()
        } else {
            program
        };
        Ok(AdapterConfig {
            role,
            program,
            extra_args,
            model: agent.model.clone(),
            max_turns: agent.max_turns,
            pricing: agent.pricing.clone(),
        })
    }

    /// Settings for tests and callers that build an adapter by hand: the CLI's own program name,
    /// the default turn cap, no model and no pricing.
    pub fn new(cli: &Cli, role: AgentRole) -> AdapterConfig {
        AdapterConfig {
            role,
            program: cli.program.to_string(),
            extra_args: Vec::new(),
            model: None,
            max_turns: crate::config::DEFAULT_MAX_TURNS,
            pricing: None,
        }
    }
}

/// Where `program` is: a path with a `/` (relative to `repo`), or a bare name looked up on
/// `path_var`. Only an executable file counts.
pub fn locate(program: &str, path_var: Option<&str>, repo: &Path) -> Option<PathBuf> {
    let executable = |p: &Path| {
        fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let p = Path::new(program);
        let p = if p.is_absolute() {
            p.to_path_buf()
        } else {
            repo.join(p)
        };
        return executable(&p).then_some(p);
    }
    path_var?
        .split(':')
        .filter(|dir| !dir.is_empty())
        .map(|dir| Path::new(dir).join(program))
        .find(|p| executable(p))
}

/// `key` is where the agent is configured: `agents.worker`, `agents.worker.fallbacks[0]`.
fn missing_program(cli: &Cli, key: &str, program: &str, path_var: Option<&str>) -> String {
    let where_ = if program.contains('/') {
        "does not exist or is not executable".to_string()
    } else {
        format!(
            "was not found on PATH ({})",
            path_var.unwrap_or("PATH is not set")
        )
    };
    format!(
        "{key}.executor is `{kind}`, but its program `{program}` {where_}\n  fix: install it (`{install}`), or set `{key}.command` to the program's full path, e.g. [\"/opt/{name}/bin/{name}\"]",
        kind = cli.kind,
        install = cli.install,
        name = cli.program,
    )
}

/// The prompt and result files of one run, in its scratch folder.
pub(super) struct RunFiles {
    pub prompt: PathBuf,
    pub result: PathBuf,
    /// When the agent's time budget ends: the result file is read before it (or within
    /// [`RESULT_READ_GRACE`] of the agent's end, when that is later).
    pub deadline: Instant,
}

/// The least time the result file is given to be read, even when the agent used its whole
/// budget (a timed-out agent may still have left a result worth reading).
pub const RESULT_READ_GRACE: Duration = Duration::from_secs(5);

impl RunFiles {
    /// Writes the prompt file (mode 0600) and removes a result file left from before.
    pub fn prepare(req: &AgentRequest<'_>, prompt: &str) -> Result<RunFiles, ExecutorError> {
        let files = RunFiles {
            prompt: req.scratch.join("prompt.md"),
            result: req.scratch.join("result.json"),
            deadline: Instant::now() + req.timeout,
        };
        crate::scratch::write_private(&files.prompt, prompt.as_bytes()).map_err(|e| {
            ExecutorError::Io(format!("could not write {}: {e}", files.prompt.display()))
        })?;
        let _ = fs::remove_file(&files.result);
        Ok(files)
    }

    /// The result file, read with bounds: only a regular file (a link, FIFO or device is
    /// refused without being opened for reading: `O_NOFOLLOW | O_NONBLOCK`, then `fstat`), at
    /// most [`RESULT_MAX_BYTES`], within the agent's time budget. Empty or absent: no result.
    pub fn read_result(&self) -> ResultRead {
        let left = self
            .deadline
            .saturating_duration_since(Instant::now())
            .max(RESULT_READ_GRACE);
        let path = self.result.clone();
        crate::bounded::within(left, move || read_bounded(&path)).unwrap_or_else(|| ResultRead {
            refused: Some(format!(
                "the result file could not be read within the agent's time budget ({} s left); it was not read",
                left.as_secs()
            )),
            ..ResultRead::default()
        })
    }
}

/// The most a result file may hold.
pub const RESULT_MAX_BYTES: u64 = 1024 * 1024;

/// What reading a result file gave.
#[derive(Debug, Default, PartialEq)]
pub struct ResultRead {
    pub json: Option<serde_json::Value>,
    /// It is a file but not JSON.
    pub error: Option<String>,
    /// It was refused unread: not a regular file, or too large (a policy violation).
    pub refused: Option<String>,
}

fn read_bounded(path: &Path) -> ResultRead {
    let bytes = match crate::bounded::read_regular(path, RESULT_MAX_BYTES, "1 MiB") {
        Ok(Some(bytes)) => bytes,
        Ok(None) => return ResultRead::default(),
        Err(why) => {
            return ResultRead {
                refused: Some(format!("the result file {why}; it was not read")),
                ..ResultRead::default()
            }
        }
    };
    let text = String::from_utf8_lossy(&bytes);
    if text.trim().is_empty() {
        return ResultRead::default();
    }
    match serde_json::from_str(&text) {
        Ok(v) => ResultRead {
            json: Some(v),
            ..ResultRead::default()
        },
        Err(e) => ResultRead {
            error: Some(format!("the result file is not JSON: {e}")),
            ..ResultRead::default()
        },
    }
}

/// What to run for one agent invocation.
pub(super) struct Invocation {
    pub program: String,
    pub args: Vec<String>,
    pub stdin: Option<Vec<u8>>,
    /// Variables added to the request's environment (never secrets).
    pub env: Vec<(String, String)>,
    /// Bytes of stdout and stderr kept.
    pub tail_bytes: usize,
    pub watch: Option<Watch>,
}

/// Runs `inv` for `req`. `Err` only when the program could not be started: `on_missing` says
/// what a user should do about a missing or unusable program.
pub(super) fn execute(
    req: &AgentRequest<'_>,
    files: &RunFiles,
    inv: Invocation,
    on_missing: impl Fn(&ProcessError) -> String,
) -> Result<ProcessOutput, ExecutorError> {
    let mut env = req.env.clone();
    // An adapter's value replaces the given one (codex's own `TMPDIR`).
    env.retain(|(k, _)| !inv.env.iter().any(|(name, _)| name == k));
    env.extend(inv.env);
    env.push((
        "OPENTIGER_PROMPT_FILE".into(),
        files.prompt.display().to_string(),
    ));
    env.push((
        "OPENTIGER_RESULT_FILE".into(),
        files.result.display().to_string(),
    ));
    let spec = ProcessSpec {
        program: inv.program,
        args: inv.args,
        cwd: req.workspace.to_path_buf(),
        env,
        stdin: inv.stdin,
        timeout: req.timeout,
        tail_bytes: inv.tail_bytes,
        watch: inv.watch,
        group_record: req.group_record.clone(),
        confine: req.confine.clone(),
        network: req.network.clone(),
        sentinel: req.sentinel.clone(),
    };
    process::run(&spec).map_err(|e| match e {
        ProcessError::NotFound { .. } | ProcessError::NotExecutable { .. } => {
            ExecutorError::Unavailable(on_missing(&e))
        }
        ProcessError::Spawn { .. } => ExecutorError::Io(e.to_string()),
    })
}

/// How a process ended, as an agent exit (before any report of the program is considered).
pub(super) fn exit_of(status: ExitStatusKind) -> AgentExit {
    match status {
        ExitStatusKind::Code(0) => AgentExit::Finished,
        ExitStatusKind::Code(c) => AgentExit::Failed(Some(c)),
        ExitStatusKind::Signal(_) => AgentExit::Failed(None),
        ExitStatusKind::TimedOut => AgentExit::TimedOut,
    }
}

/// The names in a folder (none when it cannot be read).
pub(super) fn entries(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod result_file_tests {
    use super::*;

    #[test]
    fn only_a_small_regular_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("result.json");
        assert_eq!(read_bounded(&path), ResultRead::default());
        fs::write(&path, "{\"summary\": \"ok\"}").unwrap();
        assert_eq!(read_bounded(&path).json.unwrap()["summary"], "ok");
        fs::write(&path, "not json").unwrap();
        assert!(read_bounded(&path).error.unwrap().contains("not JSON"));
        fs::write(&path, vec![b' '; 1024 * 1024 + 1]).unwrap();
        assert!(read_bounded(&path).refused.unwrap().contains("1 MiB"));
        fs::remove_file(&path).unwrap();
        std::os::unix::fs::symlink("/dev/zero", &path).unwrap();
        assert!(read_bounded(&path)
            .refused
            .unwrap()
            .contains("symbolic link"));
        fs::remove_file(&path).unwrap();
        let fifo = std::ffi::CString::new(path.display().to_string()).unwrap();
        // SAFETY: a valid NUL-terminated path; mkfifo touches no memory of ours.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        assert!(read_bounded(&path).refused.unwrap().contains("FIFO"));
        fs::remove_file(&path).unwrap();
        fs::create_dir(&path).unwrap();
        assert!(read_bounded(&path).refused.unwrap().contains("folder"));
    }
}

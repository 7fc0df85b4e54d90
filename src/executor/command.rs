//! The `command` executor: any program, argv without a shell (DESIGN §6).
//!
//! cwd = the task workspace; the prompt on stdin and in `OPENTIGER_PROMPT_FILE`; the result file
//! path in `OPENTIGER_RESULT_FILE`; the environment is exactly what the runner passes (see
//! [`super::agent_env`]); a timeout kills the whole process group.

use std::path::{Path, PathBuf};

use super::{AgentExit, AgentRequest, AgentResult, Executor, ExecutorError};
use crate::process::{self, ExitStatusKind, ProcessError, ProcessSpec};

/// How much of the agent's output is kept (the end of it).
const TAIL_BYTES: usize = 16 * 1024;

pub struct CommandExecutor {
    argv: Vec<String>,
    repo: PathBuf,
}

impl CommandExecutor {
    /// `argv[0]` relative to the repository when it contains a `/` (e.g. `./scripts/agent.sh`).
    pub fn new(argv: Vec<String>, repo: &Path) -> CommandExecutor {
        CommandExecutor {
            argv,
            repo: repo.to_path_buf(),
        }
    }
}

impl Executor for CommandExecutor {
    fn name(&self) -> &str {
        "command"
    }

    fn run(&self, req: &AgentRequest<'_>) -> Result<AgentResult, ExecutorError> {
        let prompt_file = req.scratch.join("prompt.md");
        let result_file = req.scratch.join("result.json");
        std::fs::write(&prompt_file, &req.prompt).map_err(|e| {
            ExecutorError::Io(format!("could not write {}: {e}", prompt_file.display()))
        })?;
        let _ = std::fs::remove_file(&result_file);
        let mut env = req.env.clone();
        env.push((
            "OPENTIGER_PROMPT_FILE".into(),
            prompt_file.display().to_string(),
        ));
        env.push((
            "OPENTIGER_RESULT_FILE".into(),
            result_file.display().to_string(),
        ));
        let program = {
            let p = Path::new(&self.argv[0]);
            if !p.is_absolute() && self.argv[0].contains('/') {
                self.repo.join(p).display().to_string()
            } else {
                self.argv[0].clone()
            }
        };
        let spec = ProcessSpec {
            program,
            args: self.argv[1..].to_vec(),
            cwd: req.workspace.to_path_buf(),
            env,
            stdin: Some(req.prompt.clone().into_bytes()),
            timeout: req.timeout,
            tail_bytes: TAIL_BYTES,
        };
        let out = process::run(&spec).map_err(|e| match e {
            ProcessError::NotFound { .. } | ProcessError::NotExecutable { .. } => {
                ExecutorError::Unavailable(format!("agents.{}.command: {e}", req.role.name()))
            }
            ProcessError::Spawn { .. } => ExecutorError::Io(e.to_string()),
        })?;
        let (result, result_error) = match std::fs::read_to_string(&result_file) {
            Ok(text) if text.trim().is_empty() => (None, None),
            Ok(text) => match serde_json::from_str(&text) {
                Ok(v) => (Some(v), None),
                Err(e) => (None, Some(format!("the result file is not JSON: {e}"))),
            },
            Err(_) => (None, None),
        };
        let mut r = AgentResult::finished(result);
        r.result_error = result_error;
        r.output_tail = out.output_tail;
        r.exit = match out.status {
            ExitStatusKind::Code(0) => AgentExit::Finished,
            ExitStatusKind::Code(c) => AgentExit::Failed(Some(c)),
            ExitStatusKind::Signal(_) => AgentExit::Failed(None),
            ExitStatusKind::TimedOut => AgentExit::TimedOut,
        };
        Ok(r)
    }
}

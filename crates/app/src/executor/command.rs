//! The `command` executor: any program, argv without a shell (DESIGN §6).
//!
//! cwd = the task workspace; the prompt on stdin and in `OPENTIGER_PROMPT_FILE`; the result file
//! path in `OPENTIGER_RESULT_FILE`; the environment is exactly what the runner passes (see
//! [`super::agent_env`]); a timeout kills the whole process group. Not for: the process handling
//! it shares with the CLI adapters (`executor::cli`), or its confinement (`runner::agent`).

use std::path::{Path, PathBuf};

use super::cli::{self, Invocation, RunFiles, TAIL_BYTES};
use super::{AgentRequest, AgentResult, Executor, ExecutorError};

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
        let files = RunFiles::prepare(req, &req.prompt)?;
        let program = {
            let p = Path::new(&self.argv[0]);
            if !p.is_absolute() && self.argv[0].contains('/') {
                self.repo.join(p).display().to_string()
            } else {
                self.argv[0].clone()
            }
        };
        let inv = Invocation {
            program,
            args: self.argv[1..].to_vec(),
            stdin: Some(req.prompt.clone().into_bytes()),
            env: Vec::new(),
            tail_bytes: TAIL_BYTES,
            watch: None,
        };
        let out = cli::execute(req, &files, inv, |e| {
            format!("agents.{}.command: {e}", req.role.name())
        })?;
        let read = files.read_result();
        let mut r = AgentResult::finished(read.json);
        r.result_error = read.error;
        r.result_refused = read.refused;
        r.output_tail = out.output_tail;
        r.exit = cli::exit_of(out.status);
        Ok(r)
    }
}

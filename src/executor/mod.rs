//! Executors: the programs that play an agent (DESIGN §6). One contract for all of them: a
//! prompt in, a result out — finished or not, the output tail, and the result file's JSON.
//!
//! - `command`: any program, run without a shell in the task's workspace;
//! - `scripted`: the built-in deterministic agent of `opentiger demo` and the tests;
//! - `claude-code`, `opencode`, `codex`, `aider`: CLI adapters (not in this build yet: choosing
//!   one is reported as a configuration error naming the fix).

mod command;
mod scripted;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::config::{AgentRole, EffectiveAgent, ExecutorKind};
use crate::model::{RunId, Task};

pub use command::CommandExecutor;
pub use scripted::{Script, ScriptedExecutor};

/// One agent invocation.
pub struct AgentRequest<'a> {
    pub role: AgentRole,
    pub task: &'a Task,
    pub run_id: &'a RunId,
    /// Where the agent works (its current directory).
    pub workspace: &'a Path,
    pub prompt: String,
    /// The variables the agent may see, already filtered (DESIGN §6).
    pub env: Vec<(String, String)>,
    pub timeout: Duration,
    /// How many times this task (or, for the judge, this change) was tried before.
    pub attempt: u32,
    /// A folder outside the workspace for the prompt and result files.
    pub scratch: &'a Path,
}

/// How the agent ended.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentExit {
    /// Exit code 0.
    Finished,
    /// A non-zero exit code, or killed by a signal (`None`).
    Failed(Option<i32>),
    TimedOut,
}

/// What an agent run produced.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentResult {
    pub exit: AgentExit,
    /// The end of its output (stdout and stderr), redacted by the caller before storing.
    pub output_tail: String,
    /// The result file's JSON, if the agent wrote one.
    pub result: Option<serde_json::Value>,
    /// The result file exists but is not JSON.
    pub result_error: Option<String>,
    pub cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub session_id: Option<String>,
    pub summary: Option<String>,
}

impl AgentResult {
    pub fn finished(result: Option<serde_json::Value>) -> AgentResult {
        let mut r = AgentResult {
            exit: AgentExit::Finished,
            output_tail: String::new(),
            result: None,
            result_error: None,
            cost_usd: 0.0,
            input_tokens: 0,
            output_tokens: 0,
            session_id: None,
            summary: None,
        };
        r.take_result(result);
        r
    }

    /// Reads the worker result fields of DESIGN §6 out of the result JSON.
    fn take_result(&mut self, result: Option<serde_json::Value>) {
        #[derive(Deserialize, Default)]
        #[serde(default)]
        struct Fields {
            summary: Option<String>,
            cost_usd: Option<f64>,
            input_tokens: Option<i64>,
            output_tokens: Option<i64>,
            session_id: Option<String>,
        }
        if let Some(value) = &result {
            let f: Fields = serde_json::from_value(value.clone()).unwrap_or_default();
            self.summary = f.summary;
            self.cost_usd = f
                .cost_usd
                .filter(|c| c.is_finite() && *c >= 0.0)
                .unwrap_or(0.0);
            self.input_tokens = f.input_tokens.unwrap_or(0).max(0);
            self.output_tokens = f.output_tokens.unwrap_or(0).max(0);
            self.session_id = f.session_id;
        }
        self.result = result;
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ExecutorError {
    /// The agent program is missing or unusable: a user can fix it.
    #[error("{0}")]
    Unavailable(String),
    #[error("{0}")]
    Io(String),
}

pub trait Executor {
    fn name(&self) -> &str;
    fn run(&self, request: &AgentRequest<'_>) -> Result<AgentResult, ExecutorError>;
}

/// The executor configured for a role.
pub fn for_role(
    agent: &EffectiveAgent,
    role: AgentRole,
    repo: &Path,
) -> Result<Box<dyn Executor>, ExecutorError> {
    match agent.executor {
        ExecutorKind::Command => {
            let argv = agent.command.clone().unwrap_or_default();
            if argv.is_empty() {
                return Err(ExecutorError::Unavailable(format!(
                    "agents.{}.command is empty: set it to the program to run, e.g. [\"./agent.sh\"]",
                    role.name()
                )));
            }
            Ok(Box::new(CommandExecutor::new(argv, repo)))
        }
        ExecutorKind::Scripted => {
            let script = match &agent.script {
                Some(path) => Script::load(&resolve(repo, path))?,
                None => Script::default(),
            };
            Ok(Box::new(ScriptedExecutor::new(script)))
        }
        ExecutorKind::ClaudeCode | ExecutorKind::Opencode | ExecutorKind::Codex | ExecutorKind::Aider => {
            Err(ExecutorError::Unavailable(format!(
                "agents.{}: the `{}` adapter is not in this build yet\n  fix: use `executor: command` with `command: [...]` running the CLI yourself, or `executor: scripted` to try the loop",
                role.name(),
                kind_word(agent.executor)
            )))
        }
    }
}

pub fn kind_word(kind: ExecutorKind) -> &'static str {
    match kind {
        ExecutorKind::ClaudeCode => "claude-code",
        ExecutorKind::Opencode => "opencode",
        ExecutorKind::Codex => "codex",
        ExecutorKind::Aider => "aider",
        ExecutorKind::Command => "command",
        ExecutorKind::Scripted => "scripted",
    }
}

fn resolve(repo: &Path, path: &str) -> PathBuf {
    let p = Path::new(path);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        repo.join(p)
    }
}

/// The environment an agent sees: the runner's variables, `PATH` and `HOME` (needed to find and
/// run anything), and exactly the `env_passthrough` variables that are set. Forge tokens are
/// never passed, even when listed (DESIGN §6, §10).
pub fn agent_env(
    passthrough: &[String],
    lookup: impl Fn(&str) -> Option<String>,
    runner: &[(&str, String)],
) -> Vec<(String, String)> {
    let mut env: Vec<(String, String)> = runner
        .iter()
        .map(|(k, v)| (k.to_string(), v.clone()))
        .collect();
    for base in ["PATH", "HOME"] {
        if let Some(v) = lookup(base) {
            env.push((base.to_string(), v));
        }
    }
    for name in passthrough {
        if FORGE_TOKENS.contains(&name.as_str()) || env.iter().any(|(k, _)| k == name) {
            continue;
        }
        if let Some(v) = lookup(name) {
            env.push((name.clone(), v));
        }
    }
    env
}

/// Variables that carry a write-capable forge token.
pub const FORGE_TOKENS: &[&str] = &[
    "GITHUB_TOKEN",
    "OPENTIGER_GITHUB_TOKEN",
    "GH_TOKEN",
    "GITHUB_PAT",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agents_see_only_what_is_passed() {
        let lookup = |k: &str| match k {
            "PATH" => Some("/usr/bin".to_string()),
            "HOME" => Some("/home/x".to_string()),
            "ANTHROPIC_API_KEY" => Some("sk-ant-secret".to_string()),
            "GITHUB_TOKEN" => Some("ghp_secret".to_string()),
            "AWS_SECRET" => Some("nope".to_string()),
            _ => None,
        };
        let env = agent_env(
            &[
                "ANTHROPIC_API_KEY".to_string(),
                "GITHUB_TOKEN".to_string(),
                "UNSET".to_string(),
            ],
            lookup,
            &[("OPENTIGER_ROLE", "worker".to_string())],
        );
        let names: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            names,
            ["OPENTIGER_ROLE", "PATH", "HOME", "ANTHROPIC_API_KEY"]
        );
    }
}

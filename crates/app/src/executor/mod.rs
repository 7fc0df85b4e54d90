//! Executors: the programs that play an agent (DESIGN §6). One contract for all of them: a
//! prompt in, a result out — finished or not, the output tail, and the result file's JSON.
//!
//! - `command`: any program, run without a shell in the task's workspace;
//! - `scripted`: the built-in deterministic agent of `opentiger demo` and the tests;
//! - `claude-code`, `opencode`, `codex`, `aider`: adapters for the coding-agent CLIs. Each builds
//!   the CLI's non-interactive command line ([`claude_code::args`], ...) and reads its
//!   machine-readable output into one [`AgentResult`] ([`claude_code::parse`], ...): what the CLI
//!   says about itself wins over its exit code, so an `is_error` result, a turn cap or a quota hit
//!   is a failure even when the CLI exits 0. Both are pure functions; `cli` runs the process.
//!
//! Not here: deciding what a failure means for the task (`engine::outcome`), redaction (the
//! caller's), budgets.

mod adapter;
pub mod aider;
pub mod aider_files;
mod chain;
pub mod claude_code;
mod cli;
pub mod codex;
mod codex_turns;
mod command;
pub mod door;
mod json_answer;
mod keys;
pub mod opencode;
mod report;
mod scripted;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::config::{AgentRole, EffectiveAgent, ExecutorKind};
use crate::model::{RunId, Task};

pub use chain::{build, none_usable};
pub use cli::{locate, AdapterConfig, Cli};
pub use keys::{config_fingerprint, config_fix, missing_key, wanted_key};

/// The agent CLI an executor kind drives, if it is one of the adapters.
pub fn known_cli(kind: ExecutorKind) -> Option<&'static Cli> {
    match kind {
        ExecutorKind::ClaudeCode => Some(&claude_code::CLI),
        ExecutorKind::Opencode => Some(&opencode::CLI),
        ExecutorKind::Codex => Some(&codex::CLI),
        ExecutorKind::Aider => Some(&aider::CLI),
        ExecutorKind::Command | ExecutorKind::Scripted => None,
    }
}
/// What an executor's program can do besides answering, for its prompt (issue 39): an agent
/// is asked only for what its CLI can do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Abilities {
    /// It runs commands (the checks, before it finishes).
    pub runs_commands: bool,
    /// It writes a file of its own choosing (`$OPENTIGER_RESULT_FILE`); without, its JSON is
    /// read from its reply.
    pub writes_result_file: bool,
}

/// The abilities of an executor kind: aider only edits the files in its chat and answers.
pub fn abilities(kind: ExecutorKind) -> Abilities {
    match kind {
        ExecutorKind::Aider => Abilities {
            runs_commands: false,
            writes_result_file: false,
        },
        ExecutorKind::ClaudeCode
        | ExecutorKind::Opencode
        | ExecutorKind::Codex
        | ExecutorKind::Command
        | ExecutorKind::Scripted => Abilities {
            runs_commands: true,
            writes_result_file: true,
        },
    }
}

pub use command::CommandExecutor;
pub use json_answer::{extract_answer, extract_json_object};
pub use report::Report;
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
    /// Where the agent's process group is recorded while it runs (`sandbox::groups`).
    pub group_record: Option<PathBuf>,
    /// What confines it (`sandbox::Confinement`): its view, Landlock domain, socket filter and
    /// limits.
    pub confine: Option<std::sync::Arc<crate::sandbox::Confinement>>,
    /// Its network namespace, whose proxy listener goes to the runner (`egress::Door::netns`).
    pub network: Option<crate::sandbox::netns::Door>,
    /// What may stop it early besides its output (its network door, its idleness).
    pub sentinel: Option<std::sync::Arc<dyn crate::process::Sentinel>>,
}

/// How the agent ended.
#[derive(Clone, Debug, PartialEq)]
pub enum AgentExit {
    /// Exit code 0, and (for a CLI adapter) the CLI reported that it finished.
    Finished,
    /// A non-zero exit code, killed by a signal (`None`), or — for a CLI adapter — exit code 0
    /// with a report of failure (`Some(0)`: see [`AgentResult::failure`]).
    Failed(Option<i32>),
    TimedOut,
}

/// Why an agent run did not succeed, as a CLI adapter read it from the CLI's own report.
#[derive(Clone, Debug, PartialEq)]
pub struct AgentFailure {
    pub kind: AgentFailureKind,
    /// What the CLI said, unredacted: the caller redacts it before storing or showing it.
    pub message: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AgentFailureKind {
    /// A quota, a rate limit or an overloaded provider (HTTP 429/529, "usage limit reached"):
    /// wait, then try again. `retry_hint` is a phrase the quota backoff reads ("retry in 90s",
    /// "resets at 14:00 UTC") when the CLI said when; the message may carry one too.
    Quota { retry_hint: Option<String> },
    /// The run used all its turns (`agents.<role>.max_turns`, or the CLI's own fix-up cap).
    MaxTurns,
    /// The CLI stopped at its own spending cap.
    Budget,
    /// The CLI cannot reach its model as configured: no key or an invalid one, not logged in,
    /// an unknown model or provider, a CLI configuration it refuses (issue 18). Another run
    /// fails the same way: a person fixes it, or a fallback executor takes over.
    Config,
    /// Anything else the CLI reported as an error, including output that could not be read.
    Error,
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
    /// The result file was refused unread (a link, FIFO or device, or over 1 MiB): the run is a
    /// policy violation.
    pub result_refused: Option<String>,
    pub cost_usd: f64,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub session_id: Option<String>,
    pub summary: Option<String>,
    /// Set by the CLI adapters when the CLI reported a failure; `exit` is then never `Finished`.
    pub failure: Option<AgentFailure>,
}

impl AgentResult {
    pub fn finished(result: Option<serde_json::Value>) -> AgentResult {
        let mut r = AgentResult {
            exit: AgentExit::Finished,
            output_tail: String::new(),
            result: None,
            result_error: None,
            result_refused: None,
            cost_usd: 0.0,
            input_tokens: 0,
            output_tokens: 0,
            session_id: None,
            summary: None,
            failure: None,
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
    /// The agent would only fail as configured: it is given no key, or no model where the CLI
    /// would fall back to a default of its own (issue 18). A user can fix it.
    #[error("{0}")]
    Misconfigured(String),
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
                    "{}.command is empty: set it to the program to run, e.g. [\"./agent.sh\"]",
                    agent.config_key
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
        ExecutorKind::ClaudeCode => {
            let config = AdapterConfig::for_role(agent, role, repo, &claude_code::CLI)?;
            Ok(Box::new(claude_code::ClaudeCode::new(config)))
        }
        ExecutorKind::Opencode => {
            let config = AdapterConfig::for_role(agent, role, repo, &opencode::CLI)?;
            Ok(Box::new(opencode::Opencode::new(config)))
        }
        ExecutorKind::Codex => {
            let config = AdapterConfig::for_role(agent, role, repo, &codex::CLI)?;
            Ok(Box::new(codex::Codex::new(config)))
        }
        ExecutorKind::Aider => {
            let config = AdapterConfig::for_role(agent, role, repo, &aider::CLI)?;
            Ok(Box::new(aider::Aider::new(config)))
        }
    }
}

pub fn kind_word(kind: ExecutorKind) -> &'static str {
    kind.as_str()
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
/// never passed, even when listed (DESIGN §6, §10); nor are model keys (issue 37): the agent's
/// door on opentiger's proxy gives it a placeholder for each instead (`egress`).
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
        if FORGE_TOKENS.contains(&name.as_str())
            || crate::egress::is_model_key(name)
            || env.iter().any(|(k, _)| k == name)
        {
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
    "OPENTIGER_PUSH_TOKEN",
    "GH_TOKEN",
    "GITHUB_PAT",
];

/// A CLI's recorded output, `tests/fixtures/agents/<cli>/<name>` of the repository, for the
/// adapters' tests.
#[cfg(test)]
fn recorded(cli: &str, name: &str) -> String {
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    let path = format!("{root}/tests/fixtures/agents/{cli}/{name}");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    /// Issue 50: what each CLI asks for with no `model:` has a built-in price (claude-code
    /// 2.1.197 asks for `claude-opus-4-8`, which was once metered at $0).
    #[test]
    fn each_cli_s_default_model_has_a_built_in_price() {
        let prices = crate::egress::pricing::Prices::new(&std::collections::BTreeMap::new());
        let kinds = [
            ExecutorKind::ClaudeCode,
            ExecutorKind::Codex,
            ExecutorKind::Opencode,
            ExecutorKind::Aider,
        ];
        let mut priced = 0;
        for cli in kinds.into_iter().filter_map(known_cli) {
            for model in cli.default_models {
                assert!(prices.of(model).is_some(), "{}: {model}", cli.kind);
                priced += 1;
            }
        }
        assert_eq!(priced, 4);
    }

    #[test]
    fn a_missing_cli_is_reported_with_its_fix() {
        let repo = tempfile::tempdir().unwrap();
        let kinds = [
            (
                "claude-code",
                "claude",
                "npm install -g @anthropic-ai/claude-code",
            ),
            ("opencode", "opencode", "npm install -g opencode-ai"),
            ("codex", "codex", "npm install -g @openai/codex"),
            ("aider", "aider", "pip install aider-chat"),
        ];
        for (word, program, install) in kinds {
            let yaml = format!(
                "agents:\n  worker:\n    executor: {word}\n    command: [\"./bin/{program}\"]\n"
            );
            let config: Config = crate::config::load_str(&yaml, ".opentiger.yml").unwrap();
            let role = AgentRole::Task(crate::model::Role::Worker);
            let agent = config.agents.effective(role);
            let err = for_role(&agent, role, repo.path()).err().expect("missing");
            let text = err.to_string();
            assert!(matches!(err, ExecutorError::Unavailable(_)), "{text}");
            for part in [
                format!("agents.worker.executor is `{word}`"),
                format!("`./bin/{program}` does not exist"),
                install.to_string(),
                "agents.worker.command".to_string(),
            ] {
                assert!(text.contains(&part), "{part:?} not in {text}");
            }
        }
    }

    #[test]
    fn programs_are_located_on_the_given_path() {
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::os::unix::fs::symlink("/bin/sh", bin.join("claude")).unwrap();
        std::fs::write(bin.join("codex"), "not executable").unwrap();
        let path = format!("/nonexistent:{}", bin.display());
        assert_eq!(
            locate("claude", Some(&path), dir.path()),
            Some(bin.join("claude"))
        );
        assert_eq!(
            locate("codex", Some(&path), dir.path()),
            None,
            "not executable"
        );
        assert_eq!(locate("claude", None, dir.path()), None, "no PATH");
        assert_eq!(
            locate("./bin/claude", None, dir.path()),
            Some(dir.path().join("./bin/claude"))
        );
        assert_eq!(
            locate("/bin/sh", None, dir.path()),
            Some(PathBuf::from("/bin/sh"))
        );
    }

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
        // Issue 37: a model key is never passed, listed or not (the agent gets a placeholder
        // from its door on the proxy).
        assert_eq!(names, ["OPENTIGER_ROLE", "PATH", "HOME"]);
    }
}

//! A fake agent CLI for adapter tests: `tests/fixtures/agents/fake-cli.sh` linked under a CLI's
//! name into a folder first on the agent's PATH, printing a recorded output, and what it saw.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use opentiger::config::AgentRole;
use opentiger::executor::{
    agent_env, AdapterConfig, AgentRequest, AgentResult, Cli, Executor, ExecutorError,
};
use opentiger::model::{RunId, Task, TaskId};
use opentiger::time::Timestamp;

pub const PROMPT: &str = "# Task\nAdd subtraction.\n";

/// One run of an adapter against the fake CLI, and what the fake recorded.
pub struct FakeRun {
    _dir: tempfile::TempDir,
    pub record: PathBuf,
    pub scratch: PathBuf,
    pub workspace: PathBuf,
    pub bin: PathBuf,
}

impl FakeRun {
    /// A fake `program` that prints `fixture` (from tests/fixtures/agents/) and exits `exit`.
    pub fn new(program: &str, fixture: &str, exit: i32) -> FakeRun {
        let dir = tempfile::tempdir().unwrap();
        let run = FakeRun {
            record: dir.path().join("record"),
            scratch: dir.path().join("scratch"),
            workspace: dir.path().join("workspace"),
            bin: dir.path().join("bin"),
            _dir: dir,
        };
        for d in [&run.record, &run.scratch, &run.workspace, &run.bin] {
            fs::create_dir(d).unwrap();
        }
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents");
        // A link, not a copy: exec of a just-written file can fail with ETXTBSY while other test
        // threads fork.
        std::os::unix::fs::symlink(fixtures.join("fake-cli.sh"), run.bin.join(program)).unwrap();
        fs::copy(fixtures.join(fixture), run.record.join("stdout")).unwrap();
        fs::write(run.record.join("exit"), exit.to_string()).unwrap();
        run
    }

    pub fn run(
        &self,
        executor: &dyn Executor,
        role: AgentRole,
    ) -> Result<AgentResult, ExecutorError> {
        self.run_with(executor, role, &[])
    }

    /// `run`, with these variables also set and passed through.
    pub fn run_with(
        &self,
        executor: &dyn Executor,
        role: AgentRole,
        passed: &[(&str, &str)],
    ) -> Result<AgentResult, ExecutorError> {
        self.run_full(executor, role, passed, Duration::from_secs(20))
    }

    /// `run` with this timeout.
    pub fn run_timeout(
        &self,
        executor: &dyn Executor,
        role: AgentRole,
        timeout: Duration,
    ) -> Result<AgentResult, ExecutorError> {
        self.run_full(executor, role, &[], timeout)
    }

    fn run_full(
        &self,
        executor: &dyn Executor,
        role: AgentRole,
        passed: &[(&str, &str)],
        timeout: Duration,
    ) -> Result<AgentResult, ExecutorError> {
        let path = format!("{}:/usr/bin:/bin", self.bin.display());
        let mut outside: BTreeMap<&str, String> = [
            ("PATH", path),
            ("HOME", self.workspace.display().to_string()),
            ("ANTHROPIC_API_KEY", "sk-ant-test-key".to_string()),
            ("GITHUB_TOKEN", "ghp_forge_token".to_string()),
            ("UNLISTED_SECRET", "nope".to_string()),
            ("FAKE_CLI_DIR", self.record.display().to_string()),
        ]
        .into_iter()
        .collect();
        let mut listed = vec![
            "ANTHROPIC_API_KEY".to_string(),
            "GITHUB_TOKEN".to_string(),
            "FAKE_CLI_DIR".to_string(),
        ];
        for (k, v) in passed {
            outside.insert(k, v.to_string());
            listed.push(k.to_string());
        }
        // What the runner does (runner/agent.rs): the listed variables only, never a forge
        // token nor a model key; each model key the runner holds becomes a placeholder, with
        // its API's base URL on the agent's door (`egress`).
        let mut env = agent_env(
            &listed,
            |k| outside.get(k).cloned(),
            &[("OPENTIGER_ROLE", role.name().to_string())],
        );
        let keys: Vec<&str> = outside
            .keys()
            .copied()
            .filter(|k| opentiger::egress::is_model_key(k))
            .collect();
        let routes = opentiger::egress::routes(&keys, |k| outside.get(k).cloned());
        for (k, v) in opentiger::egress::door_env(opentiger::sandbox::netns::PORT, &routes, &[]) {
            env.retain(|(name, _)| *name != k);
            env.push((k, v));
        }
        let task = Task::new(TaskId::from("t1"), "Add subtraction", "sub()", Timestamp(0));
        let request = AgentRequest {
            role,
            task: &task,
            run_id: &RunId::from("r1"),
            workspace: &self.workspace,
            prompt: PROMPT.to_string(),
            env,
            timeout,
            attempt: 0,
            scratch: &self.scratch,
            group_record: None,
            confine: None,
            network: None,
            sentinel: None,
        };
        executor.run(&request)
    }

    pub fn argv(&self) -> Vec<String> {
        read(&self.record.join("argv"))
            .lines()
            .map(String::from)
            .collect()
    }

    pub fn stdin(&self) -> String {
        read(&self.record.join("stdin"))
    }

    pub fn env(&self) -> BTreeMap<String, String> {
        read(&self.record.join("env"))
            .lines()
            .filter_map(|l| l.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    pub fn scratch(&self, name: &str) -> String {
        self.scratch.join(name).display().to_string()
    }

    /// The fake writes this to `$OPENTIGER_RESULT_FILE`.
    pub fn with_result_file(self, json: &str) -> FakeRun {
        fs::write(self.record.join("result.json"), json).unwrap();
        self
    }
}

pub fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn config(cli: &Cli, role: AgentRole, model: Option<&str>) -> AdapterConfig {
    let mut c = AdapterConfig::new(cli, role);
    c.model = model.map(String::from);
    c
}

//! `agents:` — which program plays each role: the executor kinds, an entry's keys, what a
//! model's tokens cost, and each role's effective agent (its entry over the one it inherits,
//! over `agents.default`, over the built-in defaults).
//!
//! Not for: a role's chain of fallbacks and executor keys (`fallback.rs`); checking the
//! entries as written (`agent_values.rs`); running an agent (`executor`).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::Role;

use super::providers::{AgentProvider, ProviderConfig};

/// Which program plays an agent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ExecutorKind {
    /// Claude Code: `claude -p --output-format json` (npm `@anthropic-ai/claude-code`).
    ClaudeCode,
    /// OpenCode: `opencode run --format json` (npm `opencode-ai`).
    Opencode,
    /// Codex: `codex exec --json` (npm `@openai/codex`).
    Codex,
    /// aider: `aider --message-file` (PyPI `aider-chat`).
    Aider,
    /// Any program, given as `command:` (argv, run without a shell).
    Command,
    /// The built-in deterministic agent of the demo and the tests.
    Scripted,
}

impl ExecutorKind {
    /// What an agent of this kind is given when no `env_passthrough` is configured: nothing.
    /// Model keys are not passed: the runner holds the keys its CLI reads
    /// (`ANTHROPIC_API_KEY`, `OPENAI_API_KEY`, …) and the agent gets a placeholder and a base URL
    /// on opentiger's proxy, which puts the key back on requests to that model API only.
    pub fn default_passthrough(self) -> Vec<String> {
        match self {
            ExecutorKind::ClaudeCode
            | ExecutorKind::Opencode
            | ExecutorKind::Codex
            | ExecutorKind::Aider
            | ExecutorKind::Command
            | ExecutorKind::Scripted => Vec::new(),
        }
    }

    /// One of the agent-CLI adapters (not an arbitrary program).
    pub fn is_cli(self) -> bool {
        match self {
            ExecutorKind::ClaudeCode
            | ExecutorKind::Opencode
            | ExecutorKind::Codex
            | ExecutorKind::Aider => true,
            ExecutorKind::Command | ExecutorKind::Scripted => false,
        }
    }

    /// What an agent of this kind finds in its private home when no `home_files` is configured:
    /// where each CLI keeps a login made by hand and its own settings (`executor::cli` reads the
    /// same login files to tell whether a CLI without a key can run).
    pub fn default_home_files(self) -> Vec<String> {
        let files: &[&str] = match self {
            ExecutorKind::ClaudeCode => &[
                ".claude/.credentials.json",
                ".claude.json",
                ".claude/settings.json",
            ],
            ExecutorKind::Codex => &[".codex/auth.json", ".codex/config.toml"],
            ExecutorKind::Opencode => &[".local/share/opencode/auth.json", ".config/opencode/"],
            ExecutorKind::Aider => &[".env", ".aider.conf.yml"],
            ExecutorKind::Command | ExecutorKind::Scripted => &[],
        };
        files.iter().map(|f| f.to_string()).collect()
    }
}

/// Settings of one agent role. Unset keys are inherited from `agents.default`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AgentConfig {
    /// The program that plays this agent: a CLI adapter (`claude-code`, `opencode`, `codex`,
    /// `aider`; its program must be installed), `command` or `scripted`.
    pub executor: Option<ExecutorKind>,
    /// The model API the agent uses: a name under `providers:`, or a built-in one
    /// (`anthropic`, `openai`, `openrouter`, `gemini`). Unset: the built-in ones whose keys are
    /// set for the runner, as the CLI picks among them.
    pub provider: Option<String>,
    /// The model the agent CLI uses, passed as its `--model`; unset: the CLI's own default.
    /// With a provider from `providers:`, the model's name as that endpoint knows it (required;
    /// each adapter adds what its CLI needs: `openai/` for aider, `<provider>/` for opencode);
    /// else as the CLI names it (for `opencode`, `provider/model`).
    pub model: Option<String>,
    /// argv for `executor: command`, e.g. `["./my-agent.sh", "--fast"]`. For a CLI adapter
    /// (`claude-code`, `opencode`, `codex`, `aider`), optional: the first item replaces the program
    /// looked up on PATH (e.g. `["/opt/claude/bin/claude"]`) and the rest are passed to it before
    /// the adapter's own arguments.
    pub command: Option<Vec<String>>,
    /// Minutes an agent run may take before its whole process group is killed (fractions allowed).
    pub timeout_minutes: Option<f64>,
    /// Environment variables passed to the agent (nothing else is, and never the forge token).
    pub env_passthrough: Option<Vec<String>>,
    /// Paths under the runner's `$HOME` copied into the agent's private home before each run
    /// (`sandbox.agent_home: private`), a trailing `/` for a folder, e.g. `[".claude.json",
    /// ".codex/"]`; nothing is copied back. Default: the CLI's login and settings files (none
    /// for `command` and `scripted`).
    pub home_files: Option<Vec<String>>,
    /// How many runs of this role may be in flight at once.
    pub count: Option<u32>,
    /// Judge only: ask the judge agent for a review (else checks and policy alone decide).
    pub review: Option<bool>,
    /// `executor: scripted` only: a JSON script of what the agent does (see `opentiger demo`).
    pub script: Option<String>,
    /// CLI adapters: the most turns one run may take (claude `--max-turns`, opencode agent
    /// `steps`, codex's tool calls counted by opentiger); a run that uses them all fails as
    /// unfinished instead of counting as done. aider makes no tool calls (the timeout bounds
    /// it). Default 100.
    pub max_turns: Option<u32>,
    /// CLI adapters: token prices for a CLI that reports tokens but no cost (codex; others only
    /// when their own cost is missing or zero). Unset: such runs are recorded at $0. (What the
    /// proxy meters is priced by the top-level `pricing:` table.)
    pub pricing: Option<Pricing>,
    /// Minutes an agent may go without printing anything, changing a file in its workspace or
    /// talking to its model (a request waiting for its answer counts as talking) before it is
    /// ended and its run recorded as stalled (`agent_stalled`). 0: never. Default 10.
    pub idle_minutes: Option<f64>,
    /// What one run of this agent may use of the machine, over `limits.run`: `memory_mb`,
    /// `processes`, `file_mb`, `tmp_mb` (unset keys inherit), e.g. `{memory_mb: 8192}` for a
    /// worker whose checks build a large project.
    pub limits: Option<super::AgentLimits>,
    /// Executors tried, in order, when this one waits on a quota or cannot run here (its
    /// program is missing), e.g. `[{executor: codex, model: o4-mini}]`. Each entry takes the
    /// keys above; unset ones come from this role's agent, except `provider`, `model`,
    /// `command`, `script` and `pricing`, which belong to one executor and are inherited only by
    /// an entry with the same `executor`. `count` and `review` stay the role's. Unset: `agents.default.fallbacks`.
    pub fallbacks: Option<Vec<AgentConfig>>,
}

/// What a model's tokens cost, in USD per million tokens.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Pricing {
    /// USD per million input (prompt) tokens.
    pub input_per_mtok: f64,
    /// USD per million output (completion) tokens, reasoning included.
    pub output_per_mtok: f64,
    /// USD per million input tokens served from the provider's cache; unset: priced as input.
    #[serde(default)]
    pub cached_input_per_mtok: Option<f64>,
}

impl Pricing {
    /// The cost of a run's tokens; `cached_input` is the part of `input` served from a cache.
    pub fn cost(&self, input: i64, cached_input: i64, output: i64) -> f64 {
        let per_token = |price: f64, tokens: i64| price * tokens.max(0) as f64 / 1_000_000.0;
        let cached = cached_input.clamp(0, input.max(0));
        let cached_price = self.cached_input_per_mtok.unwrap_or(self.input_per_mtok);
        per_token(self.input_per_mtok, input.max(0) - cached)
            + per_token(cached_price, cached)
            + per_token(self.output_per_mtok, output)
    }
}

/// An agent's idle limit when `idle_minutes` is set nowhere.
pub const DEFAULT_IDLE_MINUTES: f64 = 10.0;

/// A CLI adapter's turn cap when `max_turns` is set nowhere: high enough for real tasks, low
/// enough that a looping agent stops long before its timeout.
pub const DEFAULT_MAX_TURNS: u32 = 100;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct AgentsConfig {
    pub default: AgentConfig,
    pub planner: AgentConfig,
    pub worker: AgentConfig,
    pub tester: AgentConfig,
    pub docser: AgentConfig,
    pub judge: AgentConfig,
    /// Research tasks (label `opentiger:research` or `role: research`): a read-only
    /// run that answers the issue with a report. Unset keys, fallbacks included, come from
    /// `agents.worker`, then `agents.default`.
    pub research: AgentConfig,
    /// The threat scan's detection agent (`scan.agent: true`): asked about each
    /// change before it leaves the job, with its own prompt, no repository and no tools of
    /// its CLI's that write. Unset keys come from `agents.default`.
    pub detector: AgentConfig,
    /// A copy of the top-level `providers:`, made when the file is loaded, so each role's
    /// effective agent names its provider resolved (not a key of this section).
    #[serde(skip)]
    #[schemars(skip)]
    pub(super) providers: BTreeMap<String, ProviderConfig>,
}

impl Default for AgentsConfig {
    fn default() -> Self {
        AgentsConfig {
            default: AgentConfig {
                executor: Some(ExecutorKind::ClaudeCode),
                provider: None,
                model: None,
                command: None,
                timeout_minutes: Some(30.0),
                // Unset: each executor's own default (`ExecutorKind::default_passthrough`).
                env_passthrough: None,
                // Unset: each executor's own (`ExecutorKind::default_home_files`).
                home_files: None,
                count: Some(1),
                review: Some(true),
                script: None,
                max_turns: Some(DEFAULT_MAX_TURNS),
                pricing: None,
                idle_minutes: Some(DEFAULT_IDLE_MINUTES),
                limits: None,
                fallbacks: None,
            },
            planner: AgentConfig::default(),
            worker: AgentConfig::default(),
            tester: AgentConfig::default(),
            docser: AgentConfig::default(),
            judge: AgentConfig::default(),
            research: AgentConfig::default(),
            detector: AgentConfig::default(),
            providers: BTreeMap::new(),
        }
    }
}

/// The agent roles that can be configured.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum AgentRole {
    Planner,
    Task(Role),
    Judge,
    /// The threat scan's detection agent.
    Detector,
}

impl AgentRole {
    /// Every role, in the order of the configuration file.
    pub const ALL: [AgentRole; 7] = [
        AgentRole::Planner,
        AgentRole::Task(Role::Worker),
        AgentRole::Task(Role::Tester),
        AgentRole::Task(Role::Docser),
        AgentRole::Judge,
        AgentRole::Task(Role::Research),
        AgentRole::Detector,
    ];

    pub fn name(self) -> &'static str {
        match self {
            AgentRole::Planner => "planner",
            AgentRole::Task(role) => role.as_str(),
            AgentRole::Judge => "judge",
            AgentRole::Detector => "detector",
        }
    }
}

/// An agent role's settings with inheritance applied: every field has a value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct EffectiveAgent {
    pub executor: ExecutorKind,
    /// Its provider, resolved (`None`: the built-in ones whose keys are set).
    pub provider: Option<AgentProvider>,
    pub model: Option<String>,
    pub command: Option<Vec<String>>,
    pub timeout_minutes: f64,
    pub env_passthrough: Vec<String>,
    pub home_files: Vec<String>,
    pub count: u32,
    pub review: bool,
    pub script: Option<String>,
    pub max_turns: u32,
    pub pricing: Option<Pricing>,
    /// 0: never ended for being idle.
    pub idle_minutes: f64,
    /// Its own limits, each key from the nearest layer that sets it (over `limits.run`).
    pub limits: super::AgentLimits,
    /// Where this agent is configured, for messages: `agents.worker`, or
    /// `agents.worker.fallbacks[0]` for a fallback.
    #[serde(skip)]
    pub config_key: String,
    /// The entry its program was written in, for messages about it (issue 51: a worker that
    /// inherits `agents.default.command` is told about `agents.default.command`).
    #[serde(skip)]
    pub command_at: String,
}

impl EffectiveAgent {
    /// How long the agent may be idle before it is ended (`None`: never).
    pub fn idle(&self) -> Option<std::time::Duration> {
        (self.idle_minutes > 0.0).then(|| {
            std::time::Duration::from_secs_f64(
                (self.idle_minutes * 60.0).clamp(1.0, 7.0 * 24.0 * 3600.0),
            )
        })
    }

    /// The run's time limit.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs_f64(
            (self.timeout_minutes * 60.0).clamp(1.0, 7.0 * 24.0 * 3600.0),
        )
    }
}

impl AgentsConfig {
    pub(super) fn entry(&self, role: AgentRole) -> &AgentConfig {
        match role {
            AgentRole::Planner => &self.planner,
            AgentRole::Task(Role::Worker) => &self.worker,
            AgentRole::Task(Role::Tester) => &self.tester,
            AgentRole::Task(Role::Docser) => &self.docser,
            AgentRole::Judge => &self.judge,
            AgentRole::Task(Role::Research) => &self.research,
            AgentRole::Detector => &self.detector,
        }
    }

    /// The entry a role inherits from before `default`: research runs like a worker unless
    /// told otherwise; the other roles inherit from `default` alone.
    pub(super) fn parent(&self, role: AgentRole) -> Option<&AgentConfig> {
        match role {
            AgentRole::Task(Role::Research) => Some(&self.worker),
            AgentRole::Planner
            | AgentRole::Judge
            | AgentRole::Detector
            | AgentRole::Task(Role::Worker | Role::Tester | Role::Docser) => None,
        }
    }

    /// The role's entry over `default` over the built-in defaults.
    pub fn effective(&self, role: AgentRole) -> EffectiveAgent {
        let builtin = AgentsConfig::default().default;
        let layers: Vec<&AgentConfig> = std::iter::once(self.entry(role))
            .chain(self.parent(role))
            .chain([&self.default, &builtin])
            .collect();
        macro_rules! pick {
            ($field:ident) => {
                layers.iter().find_map(|l| l.$field.clone())
            };
        }
        let executor = pick!(executor).unwrap_or(ExecutorKind::ClaudeCode);
        EffectiveAgent {
            executor,
            provider: pick!(provider)
                .and_then(|name| AgentProvider::resolve(&name, &self.providers)),
            model: pick!(model),
            command: pick!(command),
            timeout_minutes: pick!(timeout_minutes).unwrap_or(30.0),
            env_passthrough: pick!(env_passthrough)
                .unwrap_or_else(|| executor.default_passthrough()),
            home_files: pick!(home_files).unwrap_or_else(|| executor.default_home_files()),
            count: pick!(count).unwrap_or(1),
            review: pick!(review).unwrap_or(true),
            script: pick!(script),
            max_turns: pick!(max_turns).unwrap_or(DEFAULT_MAX_TURNS),
            pricing: pick!(pricing),
            idle_minutes: pick!(idle_minutes).unwrap_or(DEFAULT_IDLE_MINUTES),
            limits: layers
                .iter()
                .fold(super::AgentLimits::default(), |got, layer| {
                    got.over(
                        layer
                            .limits
                            .as_ref()
                            .unwrap_or(&super::AgentLimits::default()),
                    )
                }),
            config_key: format!("agents.{}", role.name()),
            command_at: self.written_at(role, |l| l.command.is_some()),
        }
    }

    /// The entry a role's setting comes from, as the user wrote it: the role's own, the one it
    /// inherits from, else `agents.default` (which also stands for a built-in default).
    pub fn written_at(&self, role: AgentRole, set: impl Fn(&AgentConfig) -> bool) -> String {
        if set(self.entry(role)) {
            return format!("agents.{}", role.name());
        }
        if self.parent(role).is_some_and(&set) {
            return "agents.worker".to_string();
        }
        "agents.default".to_string()
    }
}

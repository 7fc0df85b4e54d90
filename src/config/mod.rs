//! `.opentiger.yml`: the typed configuration, its defaults and its effective values.
//!
//! Every key has a default (DESIGN §13), so an almost empty file works. Unknown keys are errors.
//! Loading and error reporting live in [`load`]; this file only says what the keys are.

mod entry;
mod fallback;
mod limits;
mod load;
mod merge;
mod network;
mod people;
mod reference;
mod sandbox;
mod scan;
mod words;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{ExecutionMode, FailureCategory, Mode, Role};

pub use limits::LimitsConfig;
pub use load::{load, load_checked, load_str, schema_json, ConfigError, ConfigSource, ExtraCheck};
pub use merge::{HumanApproval, MergeConfig, MergeMethod};
pub use network::{HostRule, NetworkAllow, NetworkConfig, NetworkIsolation, NetworkUser};
pub use people::{
    CommandsConfig, EscalationConfig, EscalationDefault, EscalationReasons, EscalationRule,
};
pub use reference::reference_markdown;
pub use sandbox::{AgentHome, FilesystemSandbox, SandboxConfig};
pub use scan::{CiStart, ScanConfig};

/// The whole configuration file.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct Config {
    /// `github` (issues and PRs), `local-git` (branches and local merges) or `direct` (edit in place).
    pub mode: Mode,
    /// The branch work is merged into.
    pub base_branch: String,
    /// In local-git mode, the remote task branches are pushed to and the base branch is merged
    /// into, when the repository has it (ticks in different clones then cooperate).
    pub remote: String,
    /// Requirement document the planner turns into tasks (relative to the repository root).
    pub requirement: String,
    /// Where the state (tasks, runs, leases, spend: one SQLite file) lives.
    pub state: StateConfig,
    /// github mode: which issues (and PRs) become tasks.
    pub backlog: BacklogConfig,
    /// `always-execute`, `ask` (plans and risky tasks wait for approval) or `decide`.
    pub execution_mode: ExecutionMode,
    /// The program playing each role: `default`, inherited by the roles left out.
    pub agents: AgentsConfig,
    /// The checks the runner runs on every change after its agent (besides each task's own).
    pub verify: VerifyConfig,
    /// What a change may touch and how big it may be.
    pub policy: PolicyConfig,
    /// Bounds on runs, reworks, AutoFixes, merges and conflict recovery.
    pub limits: LimitsConfig,
    /// How failed runs and reviews are retried.
    pub retry: RetryConfig,
    /// Spend limits, in USD.
    pub budget: BudgetConfig,
    /// How and when an approved change is merged.
    pub merge: MergeConfig,
    /// The planner, which turns the requirement into tasks when there is no backlog.
    pub planner: PlannerConfig,
    /// What people see besides `status`: the job summary and the dashboard issue.
    pub report: ReportConfig,
    /// How agents are confined (`filesystem: landlock | none`, `require`, `network`).
    pub sandbox: SandboxConfig,
    /// The threat scan of what would leave the job (a change before its push, an agent's text
    /// before it is posted).
    pub scan: ScanConfig,
    /// What model tokens cost, in USD per million tokens, by model name (an entry also prices
    /// its dated snapshots: `claude-sonnet-4-5` prices `claude-sonnet-4-5-20250929`), over the built-in prices of
    /// the models the adapters name. Metered tokens of a model with no price are recorded and
    /// said to have no price known.
    pub pricing: BTreeMap<String, Pricing>,
    /// `/opentiger` comment commands (github mode).
    pub commands: CommandsConfig,
    /// Questions to people when a task waits on one.
    pub escalation: EscalationConfig,
}

/// What people see besides `status`: the job summary and the dashboard issue.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ReportConfig {
    /// github mode: keep one dashboard issue (labelled `opentiger:dashboard`) up to date after
    /// each tick that changed something.
    pub dashboard_issue: bool,
    pub dashboard_title: String,
    /// Append the tick's summary to `$GITHUB_STEP_SUMMARY` when it is set (GitHub Actions).
    pub job_summary: bool,
}

impl Default for ReportConfig {
    fn default() -> Self {
        ReportConfig {
            dashboard_issue: true,
            dashboard_title: "opentiger dashboard".to_string(),
            job_summary: true,
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mode: Mode::Github,
            base_branch: "main".to_string(),
            remote: "origin".to_string(),
            requirement: "docs/requirement.md".to_string(),
            state: StateConfig::default(),
            backlog: BacklogConfig::default(),
            execution_mode: ExecutionMode::AlwaysExecute,
            agents: AgentsConfig::default(),
            verify: VerifyConfig::default(),
            policy: PolicyConfig::default(),
            limits: LimitsConfig::default(),
            retry: RetryConfig::default(),
            budget: BudgetConfig::default(),
            merge: MergeConfig::default(),
            planner: PlannerConfig::default(),
            report: ReportConfig::default(),
            sandbox: SandboxConfig::default(),
            scan: ScanConfig::default(),
            pricing: BTreeMap::new(),
            commands: CommandsConfig::default(),
            escalation: EscalationConfig::default(),
        }
    }
}

/// Where the state lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum StoreKind {
    /// A commit on a git ref of the repository (default in github mode).
    Branch,
    /// A SQLite file on disk (default in local modes).
    File,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct StateConfig {
    /// `branch` or `file`; unset means `branch` in github mode and `file` otherwise.
    pub store: Option<StoreKind>,
    /// Ref holding the state for `store: branch` (a branch name, or a full ref such as
    /// `refs/opentiger/state`).
    pub branch: String,
    /// SQLite file for `store: file`, relative to the repository root.
    pub path: String,
    /// History kept on the state ref before it is squashed.
    pub keep_commits: u32,
    /// The remote holding the state ref (when the repository has it; else the ref is local).
    pub remote: String,
    /// Runs of finished tasks older than this many days are pruned from the state (counts kept).
    pub retention_days: u32,
}

impl Default for StateConfig {
    fn default() -> Self {
        StateConfig {
            store: None,
            branch: "opentiger/state".to_string(),
            path: ".opentiger/state.sqlite".to_string(),
            keep_commits: 100,
            remote: "origin".to_string(),
            retention_days: 30,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct BacklogConfig {
    /// Issues with any of these labels are tasks.
    pub labels: Vec<String>,
    /// Author associations whose labelled issues are trusted.
    pub trusted_associations: Vec<String>,
    /// Review open PRs people opened (from trusted authors, on branches of this repository):
    /// each head gets a `pr_review` task, judged like the bot's own PRs, with the verdict as a
    /// PR comment. Nothing is pushed to their branches.
    pub import_open_prs: bool,
    /// Merge the imported PRs the judge approves (off: approving comments only).
    pub merge_imported_prs: bool,
}

impl Default for BacklogConfig {
    fn default() -> Self {
        BacklogConfig {
            labels: vec!["opentiger".to_string()],
            trusted_associations: vec![
                "OWNER".to_string(),
                "MEMBER".to_string(),
                "COLLABORATOR".to_string(),
            ],
            import_open_prs: false,
            merge_imported_prs: false,
        }
    }
}

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
    /// The model the agent CLI uses, passed as its `--model` (for `opencode`, as
    /// `provider/model`); unset: the CLI's own default.
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
    /// `steps`); a run that uses them all fails as unfinished instead of counting as done. codex
    /// and aider have no such limit (the timeout bounds them). Default 100.
    pub max_turns: Option<u32>,
    /// CLI adapters: token prices for a CLI that reports tokens but no cost (codex; others only
    /// when their own cost is missing or zero). Unset: such runs are recorded at $0. (What the
    /// proxy meters is priced by the top-level `pricing:` table.)
    pub pricing: Option<Pricing>,
    /// Minutes an agent may go without printing anything, changing a file in its workspace or
    /// talking to its model (a request waiting for its answer counts as talking) before it is
    /// ended and its run recorded as stalled (`agent_stalled`). 0: never. Default 10.
    pub idle_minutes: Option<f64>,
    /// Executors tried, in order, when this one waits on a quota or cannot run here (its
    /// program is missing), e.g. `[{executor: codex, model: o4-mini}]`. Each entry takes the
    /// keys above; unset ones come from this role's agent, except `model`, `command`, `script`
    /// and `pricing`, which belong to one executor and are inherited only by an entry with the
    /// same `executor`. `count` and `review` stay the role's. Unset: `agents.default.fallbacks`.
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
}

impl Default for AgentsConfig {
    fn default() -> Self {
        AgentsConfig {
            default: AgentConfig {
                executor: Some(ExecutorKind::ClaudeCode),
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
                fallbacks: None,
            },
            planner: AgentConfig::default(),
            worker: AgentConfig::default(),
            tester: AgentConfig::default(),
            docser: AgentConfig::default(),
            judge: AgentConfig::default(),
            research: AgentConfig::default(),
            detector: AgentConfig::default(),
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
    /// Where this agent is configured, for messages: `agents.worker`, or
    /// `agents.worker.fallbacks[0]` for a fallback.
    #[serde(skip)]
    pub config_key: String,
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
    fn entry(&self, role: AgentRole) -> &AgentConfig {
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
    fn parent(&self, role: AgentRole) -> Option<&AgentConfig> {
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
            config_key: format!("agents.{}", role.name()),
        }
    }
}

/// A verification rule that applies when some changed file matches.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct WhenChanged {
    /// Globs; the rule applies when any changed file matches one.
    pub paths: Vec<String>,
    pub commands: Vec<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct VerifyConfig {
    /// Commands (argv strings, no shell) run after the task's own commands.
    pub commands: Vec<String>,
    /// Extra commands per role.
    pub by_role: BTreeMap<Role, Vec<String>>,
    pub when_changed: Vec<WhenChanged>,
    /// Commands never run, by program name or prefix (e.g. `sudo`, `rm -rf /`).
    pub denied_commands: Vec<String>,
    /// Seconds one verification command may take.
    pub timeout_seconds: u32,
}

impl Default for VerifyConfig {
    fn default() -> Self {
        VerifyConfig {
            commands: Vec::new(),
            by_role: BTreeMap::new(),
            when_changed: Vec::new(),
            denied_commands: Vec::new(),
            timeout_seconds: 600,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PolicyConfig {
    pub allowed_paths: Vec<String>,
    pub denied_paths: Vec<String>,
    pub max_changed_files: u32,
    pub max_changed_lines: u32,
    /// The largest file a change may add or change, in bytes, checked from its size before
    /// anything reads it (a sparse file counts by its apparent size); 0: no limit. The default,
    /// 5 MiB, is above any hand-written source file and the lock files tools generate, and far
    /// below what a review can read (GitHub refuses files over 100 MB).
    pub max_file_bytes: u64,
    /// The most bytes a change may add or change in all, checked the same way; 0: no limit.
    /// Default 20 MiB.
    pub max_change_bytes: u64,
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            allowed_paths: vec!["**".to_string()],
            denied_paths: [
                ".github/workflows/**",
                ".opentiger.yml",
                ".opentiger/**",
                ".env*",
                "**/.env*",
                "**/*.pem",
                "**/*.key",
            ]
            .map(String::from)
            .to_vec(),
            max_changed_files: 50,
            max_changed_lines: 2000,
            max_file_bytes: 5 * 1024 * 1024,
            max_change_bytes: 20 * 1024 * 1024,
        }
    }
}

/// Retry budgets and cooldowns.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RetryConfig {
    /// Wait after a failed run before the task is tried again.
    pub cooldown_seconds: u32,
    /// Retries allowed per failure category; categories left out keep the spec's budget.
    pub budgets: BTreeMap<FailureCategory, u32>,
    /// This many identical failed or cancelled runs in a row stop retries early. Two identical
    /// failed runs of one task family, or one policy violation, already stop a plain retry: one
    /// rework names the failure, then a person decides.
    pub repeated_signature_threshold: u32,
    /// Re-reviews after a judge failure (agent down, CI never reported) before a person decides.
    pub max_judge_retries: u32,
    /// Requeues after a lost lease before a person decides.
    pub max_lease_reclaims: u32,
    pub quota: QuotaConfig,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            cooldown_seconds: 300,
            budgets: BTreeMap::new(),
            repeated_signature_threshold: 4,
            max_judge_retries: 3,
            max_lease_reclaims: 3,
            quota: QuotaConfig::default(),
        }
    }
}

/// Quota backoff: how long a run that hit its provider's quota or rate limit waits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct QuotaConfig {
    pub base_seconds: u32,
    pub factor: f64,
    pub max_seconds: u32,
    pub jitter_ratio: f64,
    /// Quota waits per task before a person decides.
    pub max_waits: u32,
}

impl Default for QuotaConfig {
    fn default() -> Self {
        QuotaConfig {
            base_seconds: 120,
            factor: 2.0,
            max_seconds: 1800,
            jitter_ratio: 0.2,
            max_waits: 12,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct BudgetConfig {
    /// Spend allowed on one task over all its attempts, in USD.
    pub per_task_usd: f64,
    /// Spend allowed per UTC day, in USD.
    pub per_day_usd: f64,
    /// Spend allowed in one tick, in USD (unset: no per-tick limit).
    pub per_tick_usd: Option<f64>,
}

impl Default for BudgetConfig {
    fn default() -> Self {
        BudgetConfig {
            per_task_usd: 5.0,
            per_day_usd: 50.0,
            per_tick_usd: None,
        }
    }
}

/// The planner: a requirement document → tasks.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct PlannerConfig {
    /// Ask the planner agent (`agents.planner`); false, or no usable agent: the deterministic
    /// fallback, one task per acceptance criterion.
    pub agent: bool,
    /// Most tasks one plan may create.
    pub max_tasks: u32,
    /// Minutes between two planner runs.
    pub replan_interval_minutes: u32,
    /// Failed or rejected attempts on the same requirement before a person decides.
    pub max_failed_attempts: u32,
    /// Most files of the repository listed in the planner's prompt.
    pub repo_map_files: u32,
}

impl Default for PlannerConfig {
    fn default() -> Self {
        PlannerConfig {
            agent: true,
            max_tasks: 20,
            replan_interval_minutes: 60,
            max_failed_attempts: 2,
            repo_map_files: 400,
        }
    }
}

impl Config {
    /// `state.store` with the mode's default applied.
    pub fn store_kind(&self) -> StoreKind {
        self.state.store.unwrap_or(match self.mode {
            Mode::Github => StoreKind::Branch,
            Mode::LocalGit | Mode::Direct => StoreKind::File,
        })
    }

    /// The retry budget of a failure category: config override, else the spec's default.
    pub fn category_budget(&self, category: FailureCategory) -> u32 {
        self.retry
            .budgets
            .get(&category)
            .copied()
            .unwrap_or_else(|| default_category_budget(category))
    }

    /// How many runs of a role may be in flight at once (direct mode: one).
    pub fn role_slots(&self, role: Role) -> u32 {
        match self.mode {
            Mode::Direct => 1,
            Mode::Github | Mode::LocalGit => self.agents.effective(AgentRole::Task(role)).count,
        }
    }
}

/// spec §3.4: default retry budget per failure category.
pub fn default_category_budget(category: FailureCategory) -> u32 {
    match category {
        FailureCategory::Env => 5,
        FailureCategory::Setup => 3,
        FailureCategory::Permission => 0,
        FailureCategory::Noop => 0,
        FailureCategory::Policy => 3,
        FailureCategory::Test => 3,
        FailureCategory::Flaky => 6,
        FailureCategory::Model => 3,
        FailureCategory::ModelLoop => 1,
        // Issue 18: never retried; the task waits for a person (or a fallback runs it).
        FailureCategory::AgentConfig => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use FailureCategory as C;

    #[test]
    fn budgets_match_the_spec_defaults() {
        #[rustfmt::skip]
        let cases: &[(C, u32)] = &[
            (C::Env, 5), (C::Setup, 3), (C::Permission, 0), (C::Noop, 0), (C::Policy, 3),
            (C::Test, 3), (C::Flaky, 6), (C::Model, 3), (C::ModelLoop, 1), (C::AgentConfig, 0),
        ];
        for (category, budget) in cases {
            assert_eq!(default_category_budget(*category), *budget, "{category}");
        }
        assert_eq!(cases.len(), C::ALL.len());
    }
}

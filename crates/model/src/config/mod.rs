//! `.opentiger.yml`: the typed configuration, its defaults and its effective values.
//!
//! Every key has a default (DESIGN §13), so an almost empty file works. Unknown keys are errors.
//! This file says what the keys are; the larger sections have a module each (`agents`,
//! `limits`, `merge`, `network`, `people`, `sandbox`, `scan`).
//!
//! Not for: loading and error reporting ([`load`]); the rules that read these values (the
//! engine, the runner).

mod agents;
mod base_url;
mod context;
mod entry;
mod fallback;
mod keys;
mod limits;
mod load;
mod merge;
mod network;
mod people;
mod providers;
mod reference;
mod sandbox;
mod scan;
mod words;

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::model::{ExecutionMode, FailureCategory, Mode, Role};

pub use agents::{
    AgentConfig, AgentRole, AgentsConfig, EffectiveAgent, ExecutorKind, Pricing,
    DEFAULT_IDLE_MINUTES, DEFAULT_MAX_TURNS,
};
pub use base_url::BaseUrl;
pub use context::ContextConfig;
pub use limits::{AgentLimits, LimitsConfig, RunLimits};
pub use load::{load, load_checked, load_str, schema_json, ConfigError, ConfigSource, ExtraCheck};
pub use merge::{HumanApproval, MergeConfig, MergeMethod};
pub use network::{
    HostRule, NetworkAllow, NetworkConfig, NetworkIsolation, NetworkUser, ProviderTool,
};
pub use people::{
    CommandsConfig, EscalationConfig, EscalationDefault, EscalationReasons, EscalationRule,
};
pub use providers::{
    built_in, speaks, AgentProvider, BuiltIn, ProviderApi, ProviderConfig, Speech, BUILT_IN,
};
pub use reference::reference_markdown;
pub use sandbox::{AgentHome, FilesystemSandbox, SandboxConfig, ViewSandbox};
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
    /// The model APIs agents may use besides the built-in ones (`anthropic`, `openai`,
    /// `openrouter`, `gemini`), by name: a local server, a gateway, a company endpoint. An
    /// agent picks one with `agents.<role>.provider`.
    pub providers: BTreeMap<String, ProviderConfig>,
    /// The program playing each role: `default`, inherited by the roles left out.
    pub agents: AgentsConfig,
    /// The checks the runner runs on every change after its agent (besides each task's own).
    pub verify: VerifyConfig,
    /// What the loop learned about where agents run (the host snapshot, the failure lessons)
    /// and what of it a prompt carries.
    pub context: ContextConfig,
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
    /// its dated snapshots: `claude-sonnet-4-5` prices `claude-sonnet-4-5-20250929`), over the
    /// built-in prices of the models the adapters name (each CLI's default among them). A
    /// model with no price anywhere (here, its provider's `prices:`, built in) is metered at
    /// the highest built-in price ($15 per million input tokens, $75 output), and said to be;
    /// `0` is a price (a free model).
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
            providers: BTreeMap::new(),
            agents: AgentsConfig::default(),
            verify: VerifyConfig::default(),
            context: ContextConfig::default(),
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
    /// Paths held for a person besides the built-in list (CI configurations, CODEOWNERS, git
    /// hooks, package-manager settings: `opentiger doctor` shows it, docs/security.md says why
    /// each is there): a change to one is pushed nowhere until a person approves that commit.
    pub held_paths: Vec<String>,
    /// Paths taken out of the held ones (the built-in list and `held_paths`).
    pub held_paths_except: Vec<String>,
    /// Names a change adds must check out on Windows and macOS too: no two names differing
    /// only by case, no reserved device name (`CON`, `aux.c`), no trailing dot or space, none of
    /// `<>:"|?*\`. `false` allows them; a control character in a name is refused either way.
    pub portable_names: bool,
}

impl Config {
    /// The paths that wait for a person: the built-in list with `policy.held_paths` added and
    /// `policy.held_paths_except` taken out (issue 48).
    pub fn held_paths(
        &self,
    ) -> Result<crate::policy::sensitive::HeldPaths, crate::policy::GlobError> {
        crate::policy::sensitive::HeldPaths::new(
            &self.policy.held_paths,
            &self.policy.held_paths_except,
        )
    }
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
            held_paths: Vec::new(),
            held_paths_except: Vec::new(),
            portable_names: true,
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
    /// Lost runs (their tick or job died) requeued before a person decides. A runner that died
    /// holding several runs counts one, against the task it has cost least.
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

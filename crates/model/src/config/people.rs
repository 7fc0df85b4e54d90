//! How people steer from GitHub (issue 17): who may give comment commands, how much of the
//! comment feed a tick reads, and what happens when nobody answers an escalation. Types and
//! defaults only. Not for: reading the comments and posting (`tick::people`, `tick::escalate`),
//! or what a command or an unanswered escalation does (`engine::commands`, `engine::escalation`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct CommandsConfig {
    /// Read `/opentiger …` comment commands (github mode).
    pub enabled: bool,
    /// Author associations that may command without a permission check (`OWNER`, `MEMBER`,
    /// `COLLABORATOR`); anyone else needs write access, asked from GitHub once per tick.
    pub trusted_associations: Vec<String>,
    /// Pages of 100 comments read per tick at most; the rest waits for the next tick.
    pub max_pages: u32,
}

impl Default for CommandsConfig {
    fn default() -> Self {
        CommandsConfig {
            enabled: true,
            trusted_associations: vec!["OWNER".to_string()],
            max_pages: 5,
        }
    }
}

/// What a tick does when nobody answers an escalation in time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum EscalationDefault {
    /// Cancel the task.
    Cancel,
    /// Queue it once more (attempt budgets afresh); if it comes back, wait.
    RetryOnce,
    /// Keep waiting for a person.
    Wait,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EscalationConfig {
    /// Post one question comment on the task's issue (or PR) when it waits on a person.
    pub comment: bool,
    /// Hours without an answer before `default` is applied (0: never).
    pub timeout_hours: u32,
    /// `cancel`, `retry_once` or `wait`.
    pub default: EscalationDefault,
    /// Per question asked (the key an escalation is kept by): `timeout_hours` and `default`
    /// for it, each falling back to the ones above.
    pub reasons: EscalationReasons,
}

/// The questions an escalation asks, each with its own settings: `approval` (a task
/// of `execution_mode: ask` waits to start) and `stuck` (retries, reviews or recoveries ran
/// out). Another key is refused with the known ones.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EscalationReasons {
    pub approval: EscalationRule,
    pub stuck: EscalationRule,
}

/// One question's settings; a field left out is the escalation's own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct EscalationRule {
    /// Hours without an answer before `default` is applied (0: never).
    pub timeout_hours: Option<u32>,
    /// `cancel`, `retry_once` or `wait`.
    pub default: Option<EscalationDefault>,
}

impl EscalationConfig {
    /// The timeout and default of one question's rule, the global ones where it says nothing.
    pub fn resolved(&self, rule: &EscalationRule) -> (u32, EscalationDefault) {
        (
            rule.timeout_hours.unwrap_or(self.timeout_hours),
            rule.default.unwrap_or(self.default),
        )
    }
}

impl Default for EscalationConfig {
    fn default() -> Self {
        EscalationConfig {
            comment: true,
            timeout_hours: 72,
            default: EscalationDefault::Wait,
            reasons: EscalationReasons::default(),
        }
    }
}

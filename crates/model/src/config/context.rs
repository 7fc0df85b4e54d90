//! `context:` — what the loop learned reaching the next agent: how long the host snapshot and a
//! failure lesson live, how many lessons are kept, and the characters a prompt gives each (spec
//! §2.3: host context ≤ 550, failure hints ≤ 350, together ≤ 900). Types and defaults only.
//!
//! Not for: the rules that read them (`engine::learned`), the probe (`runner::probe`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The host snapshot and the failure lessons, and what of them a prompt carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ContextConfig {
    /// Hours a host snapshot (the system, shell and tools found inside the agents' sandbox) is
    /// used before a tick that runs an agent takes it again. It is taken again sooner when what
    /// it depends on changes: the programs the checks name, the `sandbox:` settings, `PATH`,
    /// the runner's system or kernel.
    pub host_ttl_hours: u32,
    /// Hours a failure lesson lives after the last failed run that showed it. A later run that
    /// contradicts it (its command passed, its tool was found) ends it sooner.
    pub lesson_ttl_hours: u32,
    /// The most lessons kept; past it, the one seen longest ago goes.
    pub max_lessons: u32,
    /// The most characters of a prompt's host section. Entries are cut whole. 0: none, and no
    /// probe (the planner's commands are then checked against the lessons alone).
    pub host_chars: u32,
    /// The most characters of a prompt's failure hints (0: none). Entries are cut whole.
    pub hints_chars: u32,
    /// The most characters of both together; the hints are kept first.
    pub total_chars: u32,
}

impl Default for ContextConfig {
    fn default() -> Self {
        ContextConfig {
            host_ttl_hours: 24,
            lesson_ttl_hours: 24,
            max_lessons: 12,
            host_chars: 550,
            hints_chars: 350,
            total_chars: 900,
        }
    }
}

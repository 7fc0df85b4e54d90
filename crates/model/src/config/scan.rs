//! `scan:` — the threat scan of what would leave the job (issue 36). Types and defaults only.
//! Not for: the rules (`scan`), what a finding does (`engine::outcome`), what an approval covers
//! (`engine::scan`), or when CI starts (`engine::ci_start`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What looks at a change and the agent's texts before anything leaves the job.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ScanConfig {
    /// `true` (default): the rules run on every change before it is pushed and on every text
    /// of an agent's before it is posted — a build, install or CI script gaining a download or
    /// a pipe into a shell, obfuscated or minified code, binary content, hidden characters and
    /// text aimed at reviewers or agents. A finding holds the change for a person, whose
    /// approval covers that exact commit. (A secret, plain or encoded, is refused whatever
    /// this says.)
    pub rules: bool,
    /// `true`: a detection agent (`agents.detector`, inheriting `agents.default`) is also
    /// asked, with its own prompt and no repository, whether the change and texts hold
    /// anything of the kind; a `flagged` answer holds the change like a rule's finding.
    pub agent: bool,
    /// When CI may run an agent's head with the repository's secrets. `on-push` (default):
    /// whatever starts CI when opentiger pushes (with an App token, the pushes start
    /// workflows). `after-scan`: heads are pushed with the workflow's own `GITHUB_TOKEN`, which
    /// starts no workflow, and CI is started (`workflow_dispatch`) once the head passed the
    /// scan; `after-review`: only once the judge or a person approved it as well.
    pub ci: CiStart,
}

impl Default for ScanConfig {
    fn default() -> Self {
        ScanConfig {
            rules: true,
            agent: false,
            ci: CiStart::OnPush,
        }
    }
}

/// When CI may run an agent's head (see [`ScanConfig::ci`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum CiStart {
    OnPush,
    AfterScan,
    AfterReview,
}

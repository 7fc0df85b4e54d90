//! `merge:` — how an approved change lands: the method, the CI gate before the judge, what
//! people's reviews and labels do, and the review window that keeps a PR open for people
//! before it is merged. Types and defaults only. Not for: the rules that read them — the CI gate
//! (`engine::gate`), people's last word (`engine::objection`), the window (`engine::rounds`) —
//! or the merge itself (`runner::judge_merge`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum MergeMethod {
    Merge,
    Squash,
    Rebase,
}

/// What a trusted person's approving review of a task PR does.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum HumanApproval {
    /// A PR is merged only once a trusted person approved its head; that approval replaces the
    /// judge agent's review (CI and the runner's checks still apply).
    Required,
    /// The judge decides; approvals are shown as evidence in the PR body.
    #[default]
    Counts,
    /// Approvals are neither waited for nor shown.
    Ignored,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct MergeConfig {
    pub method: MergeMethod,
    /// Wait for CI checks on the PR head before merging.
    pub require_checks: bool,
    pub delete_branch: bool,
    /// Minutes to wait for pending checks before a person decides.
    pub checks_timeout_minutes: u32,
    /// The checks a PR must pass, by name (a check run's name or a status's context). Unset:
    /// the required status checks of the base branch's rules, else the checks learned from the
    /// base branch (the repository has CI: some check must report, and all must pass).
    pub required_checks: Option<Vec<String>>,
    /// Minutes after a push to wait for expected checks to appear on the head before asking
    /// why they did not (the `GITHUB_TOKEN` trap, a CI that did not start).
    pub checks_grace_minutes: u32,
    /// Seconds before a merge that lost a race with another merge is tried again.
    pub retry_seconds: u32,
    /// github mode: an approved PR that is behind the base gets the base merged into its branch
    /// (checked again locally, then CI runs on the new head) before it is merged, so what lands
    /// passed CI as it lands.
    pub update_when_behind: bool,
    /// github mode: what a trusted person's approving review does: `required` (merge only with
    /// one; it replaces the judge agent), `counts` (evidence in the PR body; the judge decides)
    /// or `ignored`. A trusted person's request for changes is never merged over, in every
    /// mode: it gets an AutoFix, and blocks the merge until that person approves or the review
    /// is dismissed.
    pub human_approval: HumanApproval,
    /// github mode: labels on a task's PR that hold its merge until removed. A
    /// trusted `/opentiger hold` comment on the PR holds it too, until `/opentiger release`.
    pub hold_labels: Vec<String>,
    /// Minutes a task's PR stays open after its head was pushed before opentiger merges it:
    /// the judge reviews at once, the merge waits, and the first tick after the window merges,
    /// having read people's reviews and holds again. Unset: in github mode 10 for a repository
    /// without CI (time for people notified of the PR and the judge's verdict to hold it) and
    /// none where CI gates the merge (the PR stays open while CI runs, and the tick CI's
    /// completion starts merges it); none in local-git mode, where the person running the tick
    /// is the one who would object. 0 gives people no time to object before the merge.
    pub review_window_minutes: Option<u32>,
}

impl Default for MergeConfig {
    fn default() -> Self {
        MergeConfig {
            method: MergeMethod::Squash,
            require_checks: true,
            delete_branch: true,
            checks_timeout_minutes: 120,
            required_checks: None,
            checks_grace_minutes: 10,
            retry_seconds: 30,
            update_when_behind: true,
            human_approval: HumanApproval::Counts,
            hold_labels: vec!["do-not-merge".to_string(), "opentiger:hold".to_string()],
            review_window_minutes: None,
        }
    }
}

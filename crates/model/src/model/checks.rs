//! opentiger's own checks on a PR head (issue 28): what its verification ran, and the check
//! runs (or commit statuses) that show it and the judge's verdict where people and branch
//! protection look. Plain data. Not for: deciding each write (`engine::checks`), the text
//! (`report::check_run`), writing them (`forge::checks`, `tick::checks`) or CI's own checks
//! (`Checks` in `forge.rs`).

use serde::{Deserialize, Serialize};

/// The check run of opentiger's verification commands on a head it pushed.
pub const VERIFY_CHECK: &str = "opentiger / verify";
/// The check run of the judge's review of that head.
pub const JUDGE_CHECK: &str = "opentiger / judge";

/// Whether a check (run or status context) is one opentiger publishes itself: never the
/// repository's CI, whatever the CI gate learns or the branch's rules require.
pub fn is_own_check(name: &str) -> bool {
    name == VERIFY_CHECK || name == JUDGE_CHECK
}

/// One verification command as it ran: its text, where it came from, how it ended, how long it
/// took and the end of its output (redacted, bounded).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CommandReport {
    pub command: String,
    /// `task`, `config`, `auto`: which list named it.
    pub source: String,
    /// The exit code; `None` when it was killed or could not start.
    pub exit: Option<i32>,
    #[serde(default)]
    pub timed_out: bool,
    pub duration_ms: u64,
    /// The last of its output, redacted.
    pub tail: String,
    /// Why it never started, when it did not (issue 52: a program missing from the sandbox is
    /// a fact of the host, learned from this, not from the output).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unstarted: Option<Unstarted>,
}

/// Why a command never started.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unstarted {
    /// Its program is not on its `PATH`, or not in its sandbox's view.
    NotFound,
    /// Its program is there but not executable.
    NotExecutable,
    /// Anything else (its working folder, a limit of the system).
    Other,
}

impl CommandReport {
    pub fn passed(&self) -> bool {
        self.exit == Some(0) && !self.timed_out
    }
}

/// Where a check run stands. A completed run has a conclusion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckStatus {
    Queued,
    InProgress,
    Completed(CheckConclusion),
}

/// The conclusions opentiger uses (GitHub has more).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckConclusion {
    Success,
    /// Nothing to check (no verification command): passes, as GitHub counts `neutral`.
    Neutral,
    Failure,
    /// Superseded: the head is no longer the one under review. Never a pass.
    Cancelled,
}

impl CheckConclusion {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckConclusion::Success => "success",
            CheckConclusion::Neutral => "neutral",
            CheckConclusion::Failure => "failure",
            CheckConclusion::Cancelled => "cancelled",
        }
    }

    /// Whether GitHub counts it as passing a required check.
    pub fn passes(self) -> bool {
        matches!(self, CheckConclusion::Success | CheckConclusion::Neutral)
    }

    pub fn parse(word: &str) -> Option<CheckConclusion> {
        [
            CheckConclusion::Success,
            CheckConclusion::Neutral,
            CheckConclusion::Failure,
            CheckConclusion::Cancelled,
        ]
        .into_iter()
        .find(|c| c.as_str() == word)
    }
}

impl CheckStatus {
    /// GitHub's `status` word.
    pub fn word(self) -> &'static str {
        match self {
            CheckStatus::Queued => "queued",
            CheckStatus::InProgress => "in_progress",
            CheckStatus::Completed(_) => "completed",
        }
    }

    pub fn conclusion(self) -> Option<CheckConclusion> {
        match self {
            CheckStatus::Completed(c) => Some(c),
            CheckStatus::Queued | CheckStatus::InProgress => None,
        }
    }

    /// The commit status standing for it where check runs cannot be written: `pending`,
    /// `success`, `failure` or `error`.
    pub fn status_state(self) -> &'static str {
        match self {
            CheckStatus::Queued | CheckStatus::InProgress => "pending",
            CheckStatus::Completed(c) if c.passes() => "success",
            CheckStatus::Completed(CheckConclusion::Failure) => "failure",
            CheckStatus::Completed(_) => "error",
        }
    }
}

/// A line of a file a check run points at.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Annotation {
    pub path: String,
    pub line: u32,
    pub title: String,
    /// Untrusted text (a command's output, a review's finding), redacted.
    pub message: String,
}

/// One check run as opentiger wants it on a head.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CheckReport {
    pub name: &'static str,
    pub head_sha: String,
    /// `task=<id> run=<id>`: which run of which task it reports.
    pub external_id: String,
    pub status: CheckStatus,
    pub title: String,
    pub summary: String,
    pub text: Option<String>,
    pub annotations: Vec<Annotation>,
}

/// A check run GitHub already has on the head, by the name opentiger looked it up with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PublishedCheck {
    pub id: u64,
    pub status: String,
    pub conclusion: Option<String>,
    pub title: Option<String>,
    pub summary: Option<String>,
}

//! The issue a task comes from and what people said on its threads, as the state keeps them:
//! the task's spec (the issue's title and body), the judge's answer per acceptance criterion,
//! trusted people's comments and PR reviews. Plain data; its text is untrusted, shown to agents
//! only fenced. Not for: capping and choosing the text (`engine::import::spec`,
//! `engine::import::thread`), reading it from GitHub (`tick::observe`, `tick::people::threads`)
//! or putting it in a prompt (`runner::prompts`).

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// An issue's title and body as stored in the state (redacted, size-capped), so a run builds its
/// prompt without asking GitHub. Written by other people: shown to agents only inside the
/// untrusted-data fence, never as a trusted field (title, goal, notes).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueSpec {
    pub number: u64,
    pub title: String,
    /// Redacted, and cut to size with a visible note where text was left out.
    pub body: String,
    /// Who opened the issue (forge metadata).
    pub author: String,
    pub url: String,
    /// A hash of title and body: a different one means the issue was edited.
    pub hash: String,
    /// The issue's own `updated_at` when this version was read.
    pub updated_at: Timestamp,
}

/// The judge's answer for one acceptance criterion of the issue (issue 14 item 2).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CriterionCheck {
    /// The criterion, as the issue states it (untrusted text).
    pub item: String,
    /// Met or not; `None` when the judge did not answer for it.
    pub met: Option<bool>,
    /// The judge's one-line reason (agent output, redacted).
    pub reason: String,
}

/// A comment on a task's issue or PR by a trusted person, kept as context for the task's next
/// attempt (issue 14 item 4). Redacted and capped when read; untrusted text, shown fenced.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ThreadComment {
    /// GitHub's comment id: an edited comment replaces its earlier text.
    pub id: u64,
    /// The issue or PR it was written on.
    pub thread: u64,
    pub author: String,
    /// GitHub's `author_association` of the author (`OWNER`, `NONE`, ...).
    pub association: String,
    pub body: String,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// What a person's review of a pull request says (GitHub's review `state`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ReviewState {
    Approved,
    ChangesRequested,
    Commented,
    /// A review someone dismissed (GitHub's `DISMISSED`): it no longer asks for anything, and
    /// as its author's latest say it lifts their earlier request for changes (issue 26).
    Dismissed,
}

/// A trusted person's review of a task's pull request (issue 14 item 5): kept in the state; its
/// text reaches the AutoFix that answers it only inside the untrusted-data fence.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullReview {
    pub id: u64,
    pub pr: u64,
    pub author: String,
    pub state: ReviewState,
    /// Redacted.
    pub body: String,
    /// The PR head the review was written on.
    pub commit_id: String,
    pub submitted_at: Timestamp,
    /// Its comments on lines of the diff.
    pub lines: Vec<ReviewLine>,
}

/// A review comment on lines of a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReviewLine {
    pub path: String,
    pub start_line: Option<u64>,
    pub line: u64,
    /// Redacted.
    pub body: String,
}

impl ReviewLine {
    /// `src/a.rs:3-5`, or `src/a.rs:5` for one line.
    pub fn range(&self) -> String {
        match self.start_line.filter(|s| *s < self.line) {
            Some(start) => format!("{}:{start}-{}", self.path, self.line),
            None => format!("{}:{}", self.path, self.line),
        }
    }
}

//! What the forge tells about the repository, as plain data the engine reads: issues, pull
//! requests, who labelled what, and CI's checks on a commit. Nothing here knows about HTTP.
//! Not for: GitHub's wire objects and their conversion into these (`forge::calls`, CI's in
//! `forge::ci`), or opentiger's own checks on a head (`model::checks`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// How the author of an issue relates to the repository (GitHub's `author_association`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AuthorAssociation {
    Owner,
    Member,
    Collaborator,
    Contributor,
    FirstTimeContributor,
    FirstTimer,
    Mannequin,
    None,
}

impl AuthorAssociation {
    pub fn as_str(self) -> &'static str {
        match self {
            AuthorAssociation::Owner => "OWNER",
            AuthorAssociation::Member => "MEMBER",
            AuthorAssociation::Collaborator => "COLLABORATOR",
            AuthorAssociation::Contributor => "CONTRIBUTOR",
            AuthorAssociation::FirstTimeContributor => "FIRST_TIME_CONTRIBUTOR",
            AuthorAssociation::FirstTimer => "FIRST_TIMER",
            AuthorAssociation::Mannequin => "MANNEQUIN",
            AuthorAssociation::None => "NONE",
        }
    }
}

/// An issue (not a pull request) as the backlog sees it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub labels: Vec<String>,
    pub author: String,
    pub author_association: AuthorAssociation,
    /// `open` or `closed`.
    pub state: String,
    pub updated_at: Timestamp,
    pub html_url: String,
    /// Who applied each backlog label, with their association, when known (from the issue's
    /// `labeled` events): a trusted person labelling an outsider's issue makes it trusted.
    pub labelled_by: Vec<IssueEvent>,
}

/// A `labeled` event of an issue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueEvent {
    pub label: String,
    pub actor: String,
    /// Whether the actor can write to the repository (their permission, as the forge says).
    pub actor_can_write: bool,
    pub at: Timestamp,
}

/// A pull request as the judge and the backlog see it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PullRequest {
    pub number: u64,
    pub title: String,
    pub body: String,
    pub head_ref: String,
    pub head_sha: String,
    pub base_ref: String,
    /// `open` or `closed`.
    pub state: String,
    pub merged: bool,
    pub author: String,
    pub html_url: String,
    pub updated_at: Timestamp,
    /// The author's relation to the repository (`OWNER`, `MEMBER`, `COLLABORATOR`, `NONE`, ...).
    #[serde(default)]
    pub author_association: String,
    #[serde(default)]
    pub draft: bool,
    /// The head branch lives in another repository (a fork, or one since deleted).
    #[serde(default)]
    pub from_fork: bool,
    /// Its labels' names (`merge.hold_labels` hold its merge, issue 26).
    #[serde(default)]
    pub labels: Vec<String>,
}

/// What CI says about a commit: check runs and commit statuses together.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checks {
    /// `none` (no checks reported), `pending`, `success` or `failure`.
    pub state: String,
    pub failing: Vec<String>,
    pub pending: Vec<String>,
    /// Checks that passed, GitHub's way: success, and for check runs also `neutral` and
    /// `skipped` (a required check skipped by its workflow's conditions does not block a merge).
    #[serde(default)]
    pub passed: Vec<String>,
    /// What failing checks reported (their output's title and summary, or a status description),
    /// by check name, cut short. CI text: untrusted, shown to agents as data.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub excerpts: BTreeMap<String, String>,
    /// GitHub's `mergeable_state` of the PR (`clean`, `dirty`, `behind`, `blocked`, `unknown`...).
    #[serde(default)]
    pub mergeable: Option<String>,
}

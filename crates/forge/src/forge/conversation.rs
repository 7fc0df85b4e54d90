//! The calls that read the conversation around a task (issue 14): the comments on an issue or
//! PR, and a PR's reviews with their comments on lines. Conditional on the list's ETag, so a
//! quiet thread costs a 304.
//!
//! Not for: which of these words are trusted and kept (`engine::import::thread`, stored by
//! `store::forge`); `/opentiger` commands, read from the repository-wide feed
//! (`forge::comments`).

use serde::Deserialize;

use super::calls::{time, RawUser};
use super::github::{Conditional, ForgeError, GithubClient};
use crate::model::{PullReview, ReviewLine, ReviewState, ThreadComment};
use crate::time::Timestamp;

#[derive(Deserialize)]
struct RawReview {
    id: u64,
    user: Option<RawUser>,
    #[serde(default)]
    body: Option<String>,
    state: String,
    #[serde(default)]
    commit_id: Option<String>,
    #[serde(default)]
    submitted_at: Option<String>,
    #[serde(default)]
    author_association: Option<String>,
}

#[derive(Deserialize)]
struct RawReviewComment {
    #[serde(default)]
    pull_request_review_id: Option<u64>,
    path: String,
    #[serde(default)]
    start_line: Option<u64>,
    #[serde(default)]
    line: Option<u64>,
    #[serde(default)]
    original_line: Option<u64>,
    #[serde(default)]
    body: String,
}

#[derive(Deserialize)]
struct RawComment {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    user: Option<RawUser>,
    #[serde(default)]
    author_association: Option<String>,
    created_at: String,
    updated_at: String,
}

impl GithubClient {
    /// The comments on issue or PR `thread`, oldest first, as a conditional request (the
    /// cursor's ETag answers 304 when none was added or edited).
    pub fn thread_comments(
        &self,
        thread: u64,
        etag: Option<&str>,
        now: Timestamp,
    ) -> Result<Conditional<Vec<ThreadComment>>, ForgeError> {
        let path = self.path(&format!("/issues/{thread}/comments?per_page=100"));
        Ok(self
            .get_all::<RawComment>(&path, etag, now)?
            .map(|comments| {
                comments
                    .into_iter()
                    .map(|c| ThreadComment {
                        id: c.id,
                        thread,
                        author: c.user.map(|u| u.login).unwrap_or_default(),
                        association: c.author_association.unwrap_or_else(|| "NONE".into()),
                        body: c.body.unwrap_or_default(),
                        created_at: time(&c.created_at),
                        updated_at: time(&c.updated_at),
                    })
                    .collect()
            }))
    }

    /// The reviews of PR `pr` with their line comments, and each author's association, as a
    /// conditional request on the review list. Pending reviews are left out; dismissed ones are
    /// kept, since a dismissal lifts its author's request for changes (issue 26).
    pub fn pull_reviews(
        &self,
        pr: u64,
        etag: Option<&str>,
        now: Timestamp,
    ) -> Result<Conditional<Vec<(PullReview, String)>>, ForgeError> {
        let path = self.path(&format!("/pulls/{pr}/reviews?per_page=100"));
        let (raw, etag) = match self.get_all::<RawReview>(&path, etag, now)? {
            Conditional::NotModified => return Ok(Conditional::NotModified),
            Conditional::Fresh { value, etag } => (value, etag),
        };
        let lines_path = self.path(&format!("/pulls/{pr}/comments?per_page=100"));
        let lines = match self.get_all::<RawReviewComment>(&lines_path, None, now)? {
            Conditional::NotModified => Vec::new(),
            Conditional::Fresh { value, .. } => value,
        };
        let value = raw
            .into_iter()
            .filter_map(|r| {
                let state = match r.state.as_str() {
                    "APPROVED" => ReviewState::Approved,
                    "CHANGES_REQUESTED" => ReviewState::ChangesRequested,
                    "COMMENTED" => ReviewState::Commented,
                    "DISMISSED" => ReviewState::Dismissed,
                    _ => return None,
                };
                let review = PullReview {
                    id: r.id,
                    pr,
                    author: r.user.map(|u| u.login).unwrap_or_default(),
                    state,
                    body: r.body.unwrap_or_default(),
                    commit_id: r.commit_id.unwrap_or_default(),
                    submitted_at: r.submitted_at.as_deref().map_or(now, time),
                    lines: lines
                        .iter()
                        .filter(|l| l.pull_request_review_id == Some(r.id))
                        .filter_map(|l| {
                            Some(ReviewLine {
                                path: l.path.clone(),
                                start_line: l.start_line,
                                line: l.line.or(l.original_line)?,
                                body: l.body.clone(),
                            })
                        })
                        .collect(),
                };
                Some((
                    review,
                    r.author_association.unwrap_or_else(|| "NONE".into()),
                ))
            })
            .collect();
        Ok(Conditional::Fresh { value, etag })
    }
}

//! The calls opentiger makes, on top of [`GithubClient`]: the backlog, pull requests keyed by
//! their head branch, one progress comment per task found by a marker, labels and who applied
//! them, issues opened, who may write.
//!
//! Every write looks before it creates (DESIGN "idempotent side effects"): a PR is found by its
//! head branch, a comment by its hidden marker, so a tick killed after a write and run again
//! converges on the same PR and the same comment.
//!
//! Not for: CI on a head and the base's rules ([`super::ci`]), opentiger's own checks
//! ([`super::checks`]), the comment feed ([`super::comments`]), a task's threads
//! (`conversation`); HTTP, paging and ETags ([`super::github`]).

use http::Method;
use serde::Deserialize;
use serde_json::{json, Value};

use super::github::{Conditional, ForgeError, GithubClient};
use crate::model::{AuthorAssociation, Issue, PullRequest};
use crate::time::Timestamp;

#[derive(Deserialize)]
pub(super) struct RawUser {
    pub(super) login: String,
}

#[derive(Deserialize)]
struct RawLabel {
    name: String,
}

#[derive(Deserialize)]
struct RawIssue {
    number: u64,
    title: String,
    #[serde(default)]
    body: Option<String>,
    #[serde(default)]
    labels: Vec<RawLabel>,
    user: Option<RawUser>,
    author_association: AuthorAssociation,
    state: String,
    updated_at: String,
    html_url: String,
    /// Present on pull requests listed as issues.
    #[serde(default)]
    pull_request: Option<Value>,
}

#[derive(Deserialize)]
struct RawRef {
    #[serde(rename = "ref")]
    name: String,
    sha: String,
    /// `null` when the head's repository was deleted.
    #[serde(default)]
    repo: Option<RawRepo>,
}

#[derive(Deserialize)]
struct RawRepo {
    full_name: String,
}

#[derive(Deserialize)]
pub(super) struct RawPull {
    number: u64,
    title: String,
    #[serde(default)]
    body: Option<String>,
    head: RawRef,
    base: RawRef,
    state: String,
    #[serde(default)]
    merged: Option<bool>,
    #[serde(default)]
    merged_at: Option<String>,
    user: Option<RawUser>,
    html_url: String,
    updated_at: String,
    /// Only on a single PR: GitHub computes it lazily (`null` until known).
    #[serde(default)]
    pub(super) mergeable_state: Option<String>,
    #[serde(default)]
    author_association: String,
    #[serde(default)]
    draft: Option<bool>,
    #[serde(default)]
    labels: Vec<RawLabel>,
}

#[derive(Deserialize)]
pub struct Comment {
    pub id: u64,
    #[serde(default)]
    pub body: Option<String>,
}

pub(super) fn time(text: &str) -> Timestamp {
    Timestamp::parse_rfc3339(text).unwrap_or(Timestamp(0))
}

impl From<RawIssue> for Issue {
    fn from(raw: RawIssue) -> Issue {
        Issue {
            number: raw.number,
            title: raw.title,
            body: raw.body.unwrap_or_default(),
            labels: raw.labels.into_iter().map(|l| l.name).collect(),
            author: raw.user.map(|u| u.login).unwrap_or_default(),
            author_association: raw.author_association,
            state: raw.state,
            updated_at: time(&raw.updated_at),
            html_url: raw.html_url,
            labelled_by: Vec::new(),
        }
    }
}

impl From<RawPull> for PullRequest {
    fn from(raw: RawPull) -> PullRequest {
        let repo = |r: &RawRef| r.repo.as_ref().map(|r| r.full_name.to_ascii_lowercase());
        let from_fork = repo(&raw.head).is_none() || repo(&raw.head) != repo(&raw.base);
        PullRequest {
            author_association: raw.author_association,
            draft: raw.draft.unwrap_or(false),
            from_fork,
            number: raw.number,
            title: raw.title,
            body: raw.body.unwrap_or_default(),
            head_ref: raw.head.name,
            head_sha: raw.head.sha,
            base_ref: raw.base.name,
            state: raw.state,
            merged: raw.merged.unwrap_or(false) || raw.merged_at.is_some(),
            author: raw.user.map(|u| u.login).unwrap_or_default(),
            html_url: raw.html_url,
            updated_at: time(&raw.updated_at),
            labels: raw.labels.into_iter().map(|l| l.name).collect(),
        }
    }
}

/// The hidden marker that ties a PR body or comment to a task (and a run).
pub fn marker(task: &str, run: Option<&str>) -> String {
    match run {
        Some(run) => format!("<!-- opentiger:task={task} run={run} -->"),
        None => format!("<!-- opentiger:task={task} -->"),
    }
}

/// What GitHub answered to a merge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MergeAnswer {
    Merged {
        commit: String,
    },
    /// 405: conflicts, failing required checks, or a closed PR.
    NotMergeable {
        message: String,
    },
    /// 409: the head is no longer the commit that was reviewed.
    HeadMoved,
}

impl GithubClient {
    /// Open issues with `label` (pull requests removed), conditional on `etag`.
    pub fn backlog_issues(
        &self,
        label: &str,
        etag: Option<&str>,
        now: Timestamp,
    ) -> Result<Conditional<Vec<Issue>>, ForgeError> {
        let path = self.path(&format!(
            "/issues?state=open&labels={}&per_page=100",
            encode(label)
        ));
        Ok(self.get_all::<RawIssue>(&path, etag, now)?.map(|issues| {
            issues
                .into_iter()
                .filter(|i| i.pull_request.is_none())
                .map(Issue::from)
                .collect()
        }))
    }

    /// Open pull requests, conditional on `etag`.
    pub fn open_pulls(
        &self,
        etag: Option<&str>,
        now: Timestamp,
    ) -> Result<Conditional<Vec<PullRequest>>, ForgeError> {
        let path = self.path("/pulls?state=open&per_page=100");
        Ok(self
            .get_all::<RawPull>(&path, etag, now)?
            .map(|pulls| pulls.into_iter().map(PullRequest::from).collect()))
    }

    pub fn pull(&self, number: u64, now: Timestamp) -> Result<PullRequest, ForgeError> {
        let raw: RawPull = self.call(
            Method::GET,
            &self.path(&format!("/pulls/{number}")),
            None,
            now,
        )?;
        Ok(raw.into())
    }

    /// The open PR whose head is `branch` in this repository, if any.
    pub fn pull_for_branch(
        &self,
        branch: &str,
        now: Timestamp,
    ) -> Result<Option<PullRequest>, ForgeError> {
        let owner = self.repo.split('/').next().unwrap_or_default();
        let path = self.path(&format!(
            "/pulls?state=open&head={}:{}&per_page=100",
            encode(owner),
            encode(branch)
        ));
        Ok(match self.get_all::<RawPull>(&path, None, now)? {
            Conditional::NotModified => None,
            Conditional::Fresh { value, .. } => value
                .into_iter()
                .map(PullRequest::from)
                .find(|p| p.head_ref == branch),
        })
    }

    /// Opens the PR for `branch` as `opener` (issue 36), or updates the one already open.
    pub fn upsert_pull(
        &self,
        (opener, branch): (&GithubClient, &str),
        base: &str,
        title: &str,
        body: &str,
        now: Timestamp,
    ) -> Result<PullRequest, ForgeError> {
        let existing = match self.pull_for_branch(branch, now)? {
            Some(pr) => pr,
            None => {
                let created: Result<RawPull, ForgeError> = opener.call(
                    Method::POST,
                    &self.path("/pulls"),
                    Some(&json!({ "title": title, "body": body, "head": branch, "base": base })),
                    now,
                );
                match created {
                    Ok(raw) => return Ok(raw.into()),
                    // Opened meanwhile (by a tick of ours that was killed after opening it).
                    Err(ForgeError::Http {
                        status: 422,
                        message,
                        ..
                    }) => self
                        .pull_for_branch(branch, now)?
                        .ok_or_else(|| ForgeError::Http {
                            method: "POST".into(),
                            path: self.path("/pulls"),
                            status: 422,
                            message: format!("no PR could be opened for {branch}: {message}"),
                        })?,
                    Err(e) => return Err(e),
                }
            }
        };
        if existing.title == title && existing.body == body {
            return Ok(existing);
        }
        let raw: RawPull = self.call(
            Method::PATCH,
            &self.path(&format!("/pulls/{}", existing.number)),
            Some(&json!({ "title": title, "body": body })),
            now,
        )?;
        Ok(raw.into())
    }

    /// Replaces PR `number`'s body, unless it already says exactly that.
    pub fn set_pull_body(&self, number: u64, body: &str, now: Timestamp) -> Result<(), ForgeError> {
        let pr = self.pull(number, now)?;
        if pr.body == body {
            return Ok(());
        }
        let _: RawPull = self.call(
            Method::PATCH,
            &self.path(&format!("/pulls/{number}")),
            Some(&json!({ "body": body })),
            now,
        )?;
        Ok(())
    }

    /// Closes PR `number` without merging it; closing a closed PR changes nothing.
    pub fn close_pull(&self, number: u64, now: Timestamp) -> Result<PullRequest, ForgeError> {
        let raw: RawPull = self.call(
            Method::PATCH,
            &self.path(&format!("/pulls/{number}")),
            Some(&json!({ "state": "closed" })),
            now,
        )?;
        Ok(raw.into())
    }

    /// `PUT /pulls/{n}/merge`, only if the head is still `head` (GitHub checks the `sha`).
    pub fn merge_pull(
        &self,
        number: u64,
        head: &str,
        method: &str,
        title: &str,
        message: &str,
        now: Timestamp,
    ) -> Result<MergeAnswer, ForgeError> {
        #[derive(Deserialize)]
        struct Merged {
            sha: String,
        }
        let answer: Result<Merged, ForgeError> = self.call(
            Method::PUT,
            &self.path(&format!("/pulls/{number}/merge")),
            Some(&json!({
                "sha": head,
                "merge_method": method,
                "commit_title": title,
                "commit_message": message,
            })),
            now,
        );
        match answer {
            Ok(m) => Ok(MergeAnswer::Merged { commit: m.sha }),
            Err(ForgeError::Http {
                status: 405,
                message,
                ..
            }) => Ok(MergeAnswer::NotMergeable { message }),
            Err(ForgeError::Http { status: 409, .. }) => Ok(MergeAnswer::HeadMoved),
            Err(e) => Err(e),
        }
    }

    pub fn upsert_comment(
        &self,
        issue: u64,
        marker: &str,
        body: &str,
        now: Timestamp,
    ) -> Result<u64, ForgeError> {
        let text = format!("{body}\n\n{marker}");
        let path = self.path(&format!("/issues/{issue}/comments?per_page=100"));
        let comments = match self.get_all::<Comment>(&path, None, now)? {
            Conditional::NotModified => Vec::new(),
            Conditional::Fresh { value, .. } => value,
        };
        if let Some(existing) = comments
            .iter()
            .find(|c| c.body.as_deref().is_some_and(|b| b.contains(marker)))
        {
            if existing.body.as_deref() != Some(text.as_str()) {
                let _: Comment = self.call(
                    Method::PATCH,
                    &self.path(&format!("/issues/comments/{}", existing.id)),
                    Some(&json!({ "body": text })),
                    now,
                )?;
            }
            return Ok(existing.id);
        }
        let created: Comment = self.call(
            Method::POST,
            &self.path(&format!("/issues/{issue}/comments")),
            Some(&json!({ "body": text })),
            now,
        )?;
        Ok(created.id)
    }

    /// Sets the issue's labels that start with `prefix` to exactly `wanted` (others untouched).
    pub fn set_status_label(
        &self,
        issue: u64,
        prefix: &str,
        wanted: &str,
        current: &[String],
        now: Timestamp,
    ) -> Result<(), ForgeError> {
        for stale in current
            .iter()
            .filter(|l| l.starts_with(prefix) && l.as_str() != wanted)
        {
            self.send(
                Method::DELETE,
                &self.path(&format!("/issues/{issue}/labels/{}", encode(stale))),
                None,
                None,
                now,
            )?;
        }
        if !current.iter().any(|l| l == wanted) {
            self.add_labels(issue, &[wanted.to_string()], now)?;
        }
        Ok(())
    }

    /// Opens an issue (the mirror of a planned task); returns its number.
    /// Replaces an issue's body.
    pub fn set_issue_body(&self, issue: u64, body: &str, now: Timestamp) -> Result<(), ForgeError> {
        let _: serde_json::Value = self.call(
            Method::PATCH,
            &self.path(&format!("/issues/{issue}")),
            Some(&json!({ "body": body })),
            now,
        )?;
        Ok(())
    }

    pub fn create_issue(
        &self,
        title: &str,
        body: &str,
        labels: &[String],
        now: Timestamp,
    ) -> Result<u64, ForgeError> {
        self.create_issue_as(title, body, labels, now)
            .map(|(number, _)| number)
    }

    /// Opens an issue; returns its number and who opened it (the token's login).
    pub fn create_issue_as(
        &self,
        title: &str,
        body: &str,
        labels: &[String],
        now: Timestamp,
    ) -> Result<(u64, String), ForgeError> {
        #[derive(Deserialize)]
        struct Created {
            number: u64,
            user: Option<RawUser>,
        }
        let created: Created = self.call(
            Method::POST,
            &self.path("/issues"),
            Some(&json!({ "title": title, "body": body, "labels": labels })),
            now,
        )?;
        let login = created.user.map(|u| u.login).unwrap_or_default();
        Ok((created.number, login))
    }

    /// Adds labels to an issue (those it has stay).
    pub fn add_labels(
        &self,
        issue: u64,
        labels: &[String],
        now: Timestamp,
    ) -> Result<(), ForgeError> {
        self.send(
            Method::POST,
            &self.path(&format!("/issues/{issue}/labels")),
            Some(&json!({ "labels": labels })),
            None,
            now,
        )?;
        Ok(())
    }
}

#[derive(Deserialize)]
struct RawEvent {
    event: String,
    actor: Option<RawUser>,
    #[serde(default)]
    label: Option<RawLabel>,
    created_at: String,
}

#[derive(Deserialize)]
struct RawPermission {
    permission: String,
}

impl GithubClient {
    /// Who applied which labels to an issue (`labeled` events).
    pub fn label_events(
        &self,
        issue: u64,
        now: Timestamp,
    ) -> Result<Vec<(String, String, Timestamp)>, ForgeError> {
        let path = self.path(&format!("/issues/{issue}/events?per_page=100"));
        Ok(match self.get_all::<RawEvent>(&path, None, now)? {
            Conditional::NotModified => Vec::new(),
            Conditional::Fresh { value, .. } => value
                .into_iter()
                .filter(|e| e.event == "labeled")
                .filter_map(|e| Some((e.label?.name, e.actor?.login, time(&e.created_at))))
                .collect(),
        })
    }

    /// Whether `user` can write to the repository (`admin`, `maintain` or `write`).
    pub fn can_write(&self, user: &str, now: Timestamp) -> Result<bool, ForgeError> {
        let answer: Result<RawPermission, ForgeError> = self.call(
            Method::GET,
            &self.path(&format!("/collaborators/{}/permission", encode(user))),
            None,
            now,
        );
        match answer {
            Ok(p) => Ok(matches!(
                p.permission.as_str(),
                "admin" | "maintain" | "write"
            )),
            // Not a collaborator at all.
            Err(ForgeError::Http { status: 404, .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }
}

/// Percent-encodes a query or path value.
pub(crate) fn encode(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_encoded_for_urls() {
        assert_eq!(encode("opentiger"), "opentiger");
        assert_eq!(encode("role:docs"), "role%3Adocs");
        assert_eq!(encode("good first issue"), "good%20first%20issue");
        assert_eq!(encode("opentiger/task-ab12"), "opentiger/task-ab12");
    }

    #[test]
    fn markers_tie_text_to_a_task() {
        assert_eq!(
            marker("t1", Some("r1")),
            "<!-- opentiger:task=t1 run=r1 -->"
        );
        assert_eq!(marker("t1", None), "<!-- opentiger:task=t1 -->");
    }
}

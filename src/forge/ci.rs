//! What the CI gate asks GitHub besides a PR head's checks: which checks the base branch's
//! rules require, which checks ran on the base branch (to learn that the repository has CI),
//! and starting a CI workflow for a branch (`workflow_dispatch`, the one event a workflow's
//! own `GITHUB_TOKEN` may still start workflows with).
//!
//! The reads are conditional (an ETag from the state), so while nothing changes they cost a 304.

use http::Method;
use serde::Deserialize;
use serde_json::json;

use super::github::{Conditional, ForgeError, GithubClient};
use crate::time::Timestamp;

/// One rule of `GET /repos/{owner}/{repo}/rules/branches/{branch}`.
#[derive(Deserialize)]
struct RawRule {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    parameters: Option<RawRuleParameters>,
}

#[derive(Deserialize)]
struct RawRuleParameters {
    #[serde(default)]
    required_status_checks: Vec<RawRequiredCheck>,
}

#[derive(Deserialize)]
struct RawRequiredCheck {
    context: String,
}

#[derive(Deserialize)]
struct RawNamedRun {
    name: String,
}

#[derive(Deserialize)]
struct RawNamedRuns {
    #[serde(default)]
    check_runs: Vec<RawNamedRun>,
}

#[derive(Deserialize)]
struct RawContext {
    context: String,
}

#[derive(Deserialize)]
struct RawContexts {
    #[serde(default)]
    statuses: Vec<RawContext>,
}

impl GithubClient {
    /// The status checks the rules of `branch` require (every active ruleset that applies to
    /// it), sorted. Readable with read access; a repository without rules answers `[]`.
    pub fn required_checks(
        &self,
        branch: &str,
        etag: Option<&str>,
        now: Timestamp,
    ) -> Result<Conditional<Vec<String>>, ForgeError> {
        let path = self.path(&format!(
            "/rules/branches/{}?per_page=100",
            super::calls::encode(branch)
        ));
        Ok(self.get_all::<RawRule>(&path, etag, now)?.map(|rules| {
            let mut names: Vec<String> = rules
                .into_iter()
                .filter(|r| r.kind == "required_status_checks")
                .filter_map(|r| r.parameters)
                .flat_map(|p| p.required_status_checks)
                .map(|c| c.context)
                .collect();
            names.sort();
            names.dedup();
            names
        }))
    }

    /// The names of the check runs on the tip of `branch`, or `NotModified`.
    pub fn branch_check_runs(
        &self,
        branch: &str,
        etag: Option<&str>,
        now: Timestamp,
    ) -> Result<Conditional<Vec<String>>, ForgeError> {
        let path = self.path(&format!(
            "/commits/{}/check-runs?per_page=100",
            super::calls::encode(branch)
        ));
        let answer = self.send(Method::GET, &path, None, etag, now)?;
        if answer.status == 304 {
            return Ok(Conditional::NotModified);
        }
        let runs: RawNamedRuns = parse(&path, answer.body)?;
        Ok(Conditional::Fresh {
            value: runs.check_runs.into_iter().map(|r| r.name).collect(),
            etag: answer.etag,
        })
    }

    /// The contexts of the commit statuses on the tip of `branch`, or `NotModified`.
    pub fn branch_statuses(
        &self,
        branch: &str,
        etag: Option<&str>,
        now: Timestamp,
    ) -> Result<Conditional<Vec<String>>, ForgeError> {
        let path = self.path(&format!("/commits/{}/status", super::calls::encode(branch)));
        let answer = self.send(Method::GET, &path, None, etag, now)?;
        if answer.status == 304 {
            return Ok(Conditional::NotModified);
        }
        let status: RawContexts = parse(&path, answer.body)?;
        Ok(Conditional::Fresh {
            value: status.statuses.into_iter().map(|s| s.context).collect(),
            etag: answer.etag,
        })
    }

    /// Points PR `number` at `base` (its base branch was renamed or deleted).
    pub fn set_pull_base(&self, number: u64, base: &str, now: Timestamp) -> Result<(), ForgeError> {
        self.send(
            Method::PATCH,
            &self.path(&format!("/pulls/{number}")),
            Some(&json!({ "base": base })),
            None,
            now,
        )?;
        Ok(())
    }

    /// Starts `workflow` (its file name) on `branch` by `workflow_dispatch`.
    pub fn dispatch_workflow(
        &self,
        workflow: &str,
        branch: &str,
        now: Timestamp,
    ) -> Result<(), ForgeError> {
        self.send(
            Method::POST,
            &self.path(&format!(
                "/actions/workflows/{}/dispatches",
                super::calls::encode(workflow)
            )),
            Some(&json!({ "ref": branch })),
            None,
            now,
        )?;
        Ok(())
    }
}

fn parse<T: serde::de::DeserializeOwned>(
    path: &str,
    body: Option<serde_json::Value>,
) -> Result<T, ForgeError> {
    serde_json::from_value(body.unwrap_or(serde_json::Value::Null)).map_err(|e| ForgeError::Http {
        method: "GET".to_string(),
        path: path.to_string(),
        status: 200,
        message: format!("unexpected answer: {e}"),
    })
}

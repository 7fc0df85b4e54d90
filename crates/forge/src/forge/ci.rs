//! What the CI gate asks GitHub: CI's verdict on a PR head (its check runs and statuses
//! combined, with a short excerpt of each failure, and whether it merges cleanly), which checks
//! the base branch's rules require, which checks ran on the base branch (to learn that the
//! repository has CI), and starting a CI workflow for a branch (`workflow_dispatch`, the one
//! event a workflow's own `GITHUB_TOKEN` may still start workflows with).
//!
//! The base's reads are conditional (an ETag from the state), so while nothing changes they
//! cost a 304.
//!
//! Not for: writing opentiger's own checks ([`super::checks`]); what the gate decides on these
//! answers (`engine::gate`, `engine::ci_start`).

use http::Method;
use serde::Deserialize;
use serde_json::json;

use super::calls::RawPull;
use super::github::{Conditional, ForgeError, GithubClient};
use crate::model::Checks;
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

#[derive(Deserialize)]
struct RawCheckRuns {
    #[serde(default)]
    check_runs: Vec<RawCheckRun>,
}

#[derive(Deserialize)]
struct RawCheckRun {
    name: String,
    status: String,
    #[serde(default)]
    conclusion: Option<String>,
    #[serde(default)]
    output: Option<RawCheckOutput>,
}

#[derive(Deserialize)]
struct RawCheckOutput {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    summary: Option<String>,
}

/// Longest excerpt kept of what a failing check reported.
const EXCERPT_CHARS: usize = 400;

/// `title: summary` of a check's output, cut to [`EXCERPT_CHARS`]; `None` when it says nothing.
fn excerpt(parts: &[Option<&str>]) -> Option<String> {
    let text = parts
        .iter()
        .flatten()
        .map(|p| p.trim())
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join(": ");
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match text.char_indices().nth(EXCERPT_CHARS) {
        _ if text.is_empty() => None,
        Some((cut, _)) => Some(format!("{}…", &text[..cut])),
        None => Some(text),
    }
}

#[derive(Deserialize)]
struct RawStatus {
    state: String,
    #[serde(default)]
    statuses: Vec<RawStatusItem>,
}

#[derive(Deserialize)]
struct RawStatusItem {
    context: String,
    state: String,
    #[serde(default)]
    description: Option<String>,
}

/// Combines check runs and statuses: any failure fails, else anything unfinished is pending.
fn combine_checks(runs: &[RawCheckRun], statuses: &[RawStatusItem]) -> Checks {
    let mut failing = Vec::new();
    let mut pending = Vec::new();
    let mut passed = Vec::new();
    let mut excerpts = std::collections::BTreeMap::new();
    // opentiger's own checks (issue 28) are never the repository's CI.
    let own = |name: &str| crate::model::checks::is_own_check(name);
    let runs: Vec<&RawCheckRun> = runs.iter().filter(|r| !own(&r.name)).collect();
    let statuses: Vec<&RawStatusItem> = statuses.iter().filter(|s| !own(&s.context)).collect();
    for run in &runs {
        match (run.status.as_str(), run.conclusion.as_deref()) {
            ("completed", Some("success" | "neutral" | "skipped")) => {
                passed.push(run.name.clone());
            }
            ("completed", _) => {
                failing.push(run.name.clone());
                let output = run.output.as_ref();
                let said = excerpt(&[
                    output.and_then(|o| o.title.as_deref()),
                    output.and_then(|o| o.summary.as_deref()),
                ]);
                if let Some(said) = said {
                    excerpts.insert(run.name.clone(), said);
                }
            }
            _ => pending.push(run.name.clone()),
        }
    }
    for status in &statuses {
        match status.state.as_str() {
            "success" => passed.push(status.context.clone()),
            "pending" => pending.push(status.context.clone()),
            _ => {
                failing.push(status.context.clone());
                if let Some(said) = excerpt(&[status.description.as_deref()]) {
                    excerpts.insert(status.context.clone(), said);
                }
            }
        }
    }
    let state = if !failing.is_empty() {
        "failure"
    } else if !pending.is_empty() {
        "pending"
    } else if runs.is_empty() && statuses.is_empty() {
        "none"
    } else {
        "success"
    };
    Checks {
        state: state.to_string(),
        failing,
        pending,
        passed,
        excerpts,
        mergeable: None,
    }
}

impl GithubClient {
    /// CI's verdict on a PR's head (check runs and the combined status) and whether it merges
    /// cleanly, for the judge.
    pub fn checks(&self, pr: u64, sha: &str, now: Timestamp) -> Result<Checks, ForgeError> {
        let runs: RawCheckRuns = self.call(
            Method::GET,
            &self.path(&format!("/commits/{sha}/check-runs?per_page=100")),
            None,
            now,
        )?;
        let status: RawStatus = self.call(
            Method::GET,
            &self.path(&format!("/commits/{sha}/status")),
            None,
            now,
        )?;
        let _ = status.state;
        let mut checks = combine_checks(&runs.check_runs, &status.statuses);
        let raw: RawPull =
            self.call(Method::GET, &self.path(&format!("/pulls/{pr}")), None, now)?;
        checks.mergeable = raw.mergeable_state;
        Ok(checks)
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failing_checks_keep_a_short_excerpt_of_what_they_reported() {
        let failed = RawCheckRun {
            name: "test".into(),
            status: "completed".into(),
            conclusion: Some("failure".into()),
            output: Some(RawCheckOutput {
                title: Some("2 tests failed".into()),
                summary: Some("  test_sub:\n   expected 1, got 2  ".into()),
            }),
        };
        let passed = RawCheckRun {
            name: "lint".into(),
            status: "completed".into(),
            conclusion: Some("success".into()),
            output: Some(RawCheckOutput {
                title: Some("all good".into()),
                summary: None,
            }),
        };
        let status = RawStatusItem {
            context: "deploy".into(),
            state: "error".into(),
            description: Some("x".repeat(1000)),
        };
        let checks = combine_checks(&[failed, passed], &[status]);
        assert_eq!(
            checks.excerpts.get("test").map(String::as_str),
            Some("2 tests failed: test_sub: expected 1, got 2")
        );
        assert!(!checks.excerpts.contains_key("lint"), "only failures");
        let deploy = &checks.excerpts["deploy"];
        assert_eq!(
            deploy.chars().count(),
            EXCERPT_CHARS + 1,
            "cut, with an ellipsis"
        );
        assert!(deploy.ends_with('…'));
    }

    #[test]
    fn checks_combine_runs_and_statuses() {
        let run = |name: &str, status: &str, conclusion: Option<&str>| RawCheckRun {
            name: name.into(),
            status: status.into(),
            conclusion: conclusion.map(String::from),
            output: None,
        };
        let st = |context: &str, state: &str| RawStatusItem {
            context: context.into(),
            state: state.into(),
            description: None,
        };
        let cases = [
            (vec![], vec![], "none"),
            (
                vec![run("ci", "completed", Some("success"))],
                vec![st("lint", "success")],
                "success",
            ),
            (vec![run("ci", "in_progress", None)], vec![], "pending"),
            (
                vec![run("ci", "completed", Some("success"))],
                vec![st("deploy", "pending")],
                "pending",
            ),
            (
                vec![
                    run("ci", "completed", Some("failure")),
                    run("e2e", "queued", None),
                ],
                vec![],
                "failure",
            ),
            (
                vec![run("ci", "completed", Some("skipped"))],
                vec![st("x", "error")],
                "failure",
            ),
        ];
        for (runs, statuses, state) in cases {
            assert_eq!(combine_checks(&runs, &statuses).state, state);
        }
        let c = combine_checks(
            &[run("ci", "completed", Some("timed_out"))],
            &[st("lint", "pending")],
        );
        assert_eq!(
            (c.failing, c.pending),
            (vec!["ci".to_string()], vec!["lint".to_string()])
        );
    }
}

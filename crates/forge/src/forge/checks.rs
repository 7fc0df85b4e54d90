//! Writing opentiger's own checks on a head (issue 28): check runs (`checks: write`), and
//! commit statuses where the token may not write check runs (`statuses: write`). Each write
//! looks first: the newest check run of that name on the head, the statuses of the head.
//!
//! Not for: what the checks say (`report::check_run`) or when they are written (`tick/checks`);
//! reading the repository's CI (`ci`).

use http::Method;
use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::github::{ForgeError, GithubClient};
use crate::model::checks::{Annotation, CheckReport, CheckStatus, PublishedCheck};
use crate::time::Timestamp;

/// GitHub takes at most 50 annotations per request; more are sent by later updates.
const ANNOTATIONS_PER_REQUEST: usize = 50;
/// A commit status's description is at most 140 characters.
const DESCRIPTION_MAX: usize = 140;

#[derive(Deserialize)]
struct RawRuns {
    #[serde(default)]
    check_runs: Vec<RawRun>,
}

#[derive(Deserialize)]
struct RawRun {
    id: u64,
    status: String,
    #[serde(default)]
    conclusion: Option<String>,
    #[serde(default)]
    output: Option<RawOutput>,
}

#[derive(Deserialize)]
struct RawOutput {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    summary: Option<String>,
}

#[derive(Deserialize)]
struct RawCombined {
    #[serde(default)]
    statuses: Vec<RawStatus>,
}

#[derive(Deserialize)]
struct RawStatus {
    context: String,
    state: String,
    #[serde(default)]
    description: Option<String>,
}

#[derive(Deserialize)]
struct Created {
    id: u64,
}

/// Whether GitHub refused a check-run write for the token's permissions: a fork's or a
/// `checks: read` token ("Resource not accessible by integration"), or a personal access token
/// (only GitHub Apps write check runs).
pub fn refused_for_permission(e: &ForgeError) -> bool {
    matches!(
        e,
        ForgeError::Unauthorized { status: 403, .. } | ForgeError::Http { status: 403, .. }
    )
}

impl GithubClient {
    /// The newest check run named `name` on `sha`, as GitHub lists it (`filter=latest`).
    pub fn latest_check(
        &self,
        sha: &str,
        name: &str,
        now: Timestamp,
    ) -> Result<Option<PublishedCheck>, ForgeError> {
        let path = self.path(&format!(
            "/commits/{sha}/check-runs?check_name={}&filter=latest&per_page=1",
            super::calls::encode(name)
        ));
        let runs: RawRuns = self.call(Method::GET, &path, None, now)?;
        Ok(runs.check_runs.into_iter().next().map(|r| PublishedCheck {
            id: r.id,
            status: r.status,
            conclusion: r.conclusion,
            title: r.output.as_ref().and_then(|o| o.title.clone()),
            summary: r.output.and_then(|o| o.summary),
        }))
    }

    /// Creates the check run; annotations past the first 50 follow in updates of 50.
    pub fn create_check(&self, report: &CheckReport, now: Timestamp) -> Result<u64, ForgeError> {
        let mut body = run_body(report, &report.annotations, now);
        body.insert("name".into(), json!(report.name));
        body.insert("head_sha".into(), json!(report.head_sha));
        body.insert("external_id".into(), json!(report.external_id));
        if report.status != CheckStatus::Queued {
            body.insert("started_at".into(), json!(now.to_string()));
        }
        let created: Created = self.call(
            Method::POST,
            &self.path("/check-runs"),
            Some(&Value::Object(body)),
            now,
        )?;
        self.more_annotations(created.id, report, now)?;
        Ok(created.id)
    }

    /// Updates check run `id` to what `report` says.
    pub fn update_check(
        &self,
        id: u64,
        report: &CheckReport,
        now: Timestamp,
    ) -> Result<(), ForgeError> {
        self.patch_check(id, run_body(report, &report.annotations, now), now)?;
        self.more_annotations(id, report, now)
    }

    fn patch_check(
        &self,
        id: u64,
        body: Map<String, Value>,
        now: Timestamp,
    ) -> Result<(), ForgeError> {
        let _: Created = self.call(
            Method::PATCH,
            &self.path(&format!("/check-runs/{id}")),
            Some(&Value::Object(body)),
            now,
        )?;
        Ok(())
    }

    fn more_annotations(
        &self,
        id: u64,
        report: &CheckReport,
        now: Timestamp,
    ) -> Result<(), ForgeError> {
        for batch in report.annotations.chunks(ANNOTATIONS_PER_REQUEST).skip(1) {
            // An update's annotations are added to the run's; title and summary go with them.
            let mut body = Map::new();
            body.insert("output".into(), output(report, batch));
            self.patch_check(id, body, now)?;
        }
        Ok(())
    }

    /// The state and description of each status context on `sha`, newest first as GitHub's
    /// combined status gives them.
    pub fn statuses(
        &self,
        sha: &str,
        now: Timestamp,
    ) -> Result<Vec<(String, String, String)>, ForgeError> {
        let combined: RawCombined = self.call(
            Method::GET,
            &self.path(&format!("/commits/{sha}/status")),
            None,
            now,
        )?;
        Ok(combined
            .statuses
            .into_iter()
            .map(|s| (s.context, s.state, s.description.unwrap_or_default()))
            .collect())
    }

    /// A commit status for `report` (the fallback where check runs cannot be written), unless
    /// the head already has exactly that one.
    pub fn set_status(&self, report: &CheckReport, now: Timestamp) -> Result<bool, ForgeError> {
        let state = report.status.status_state();
        let description = description(&report.title);
        let known = self.statuses(&report.head_sha, now)?;
        if known
            .iter()
            .any(|(c, s, d)| c == report.name && s == state && *d == description)
        {
            return Ok(false);
        }
        let _: Value = self.call(
            Method::POST,
            &self.path(&format!("/statuses/{}", report.head_sha)),
            Some(&json!({
                "state": state,
                "context": report.name,
                "description": description,
            })),
            now,
        )?;
        Ok(true)
    }
}

/// A status description: the title, on one line, within 140 characters.
fn description(title: &str) -> String {
    let line = title.split_whitespace().collect::<Vec<_>>().join(" ");
    match line.char_indices().nth(DESCRIPTION_MAX - 1) {
        Some((at, _)) => format!("{}…", &line[..at]),
        None => line,
    }
}

fn run_body(
    report: &CheckReport,
    annotations: &[Annotation],
    now: Timestamp,
) -> Map<String, Value> {
    let mut body = Map::new();
    body.insert("status".into(), json!(report.status.word()));
    if let Some(conclusion) = report.status.conclusion() {
        body.insert("conclusion".into(), json!(conclusion.as_str()));
        body.insert("completed_at".into(), json!(now.to_string()));
    }
    let first = &annotations[..annotations.len().min(ANNOTATIONS_PER_REQUEST)];
    body.insert("output".into(), output(report, first));
    body
}

fn output(report: &CheckReport, annotations: &[Annotation]) -> Value {
    let level = match report.status.conclusion() {
        Some(c) if !c.passes() => "failure",
        _ => "warning",
    };
    let mut out = Map::new();
    out.insert("title".into(), json!(report.title));
    out.insert("summary".into(), json!(report.summary));
    if let Some(text) = &report.text {
        out.insert("text".into(), json!(text));
    }
    if !annotations.is_empty() {
        let list: Vec<Value> = annotations
            .iter()
            .map(|a| {
                json!({
                    "path": a.path,
                    "start_line": a.line,
                    "end_line": a.line,
                    "annotation_level": level,
                    "title": a.title,
                    "message": a.message,
                })
            })
            .collect();
        out.insert("annotations".into(), Value::Array(list));
    }
    Value::Object(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_description_is_one_line_within_140_characters() {
        assert_eq!(description("2 commands\npassed"), "2 commands passed");
        let long = description(&"x".repeat(300));
        assert_eq!(long.chars().count(), DESCRIPTION_MAX);
        assert!(long.ends_with('…'));
    }
}

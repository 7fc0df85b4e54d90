//! github mode: the dashboard issue (DESIGN §3 step 7), opentiger's one issue that shows the
//! loop's state, found again by its label and marker, opened the first time and written in
//! place. It also carries the first backlog label, so the backlog listing the observe step reads
//! anyway brings it back when a person ticks one of its boxes; only opentiger's own dashboard
//! (its login opened it) is believed.
//!
//! Not for: what it says (`report::board`, `super::status`) or acting on its ticked boxes
//! (`super::people`).

use super::Context;
use crate::forge::github::{Conditional, ForgeError, GithubClient};

/// The label of the dashboard issue, by which it is found again.
pub const DASHBOARD_LABEL: &str = "opentiger:dashboard";

/// What writing the dashboard did.
pub enum DashboardWrite {
    Unchanged,
    Updated(u64),
    /// Opened, by this login (the token's: opentiger's own issue).
    Opened(u64, String),
}

/// Writes the dashboard into its one issue (found by label and marker; opened the first time),
/// unless it already says exactly that. A tick killed after opening it finds it next time.
///
/// The dashboard also carries the first backlog label, so the backlog listing the tick reads
/// conditionally anyway brings back its body when a person ticks a checkbox (issue 17): the
/// boxes cost a quiet tick no request.
pub fn update_dashboard(
    client: &GithubClient,
    ctx: &Context,
    markdown: &str,
) -> Result<DashboardWrite, ForgeError> {
    use crate::report::board::DASHBOARD_MARKER;
    let now = ctx.later();
    let existing = match client.backlog_issues(DASHBOARD_LABEL, None, now)? {
        Conditional::Fresh { value, .. } => value
            .into_iter()
            .filter(|i| i.body.contains(DASHBOARD_MARKER))
            .min_by_key(|i| i.number),
        Conditional::NotModified => None,
    };
    let listed = ctx.config.backlog.labels.first();
    if let (Some(issue), Some(label)) = (&existing, listed) {
        if !issue.labels.iter().any(|l| l.eq_ignore_ascii_case(label)) {
            // A dashboard opened before checkboxes: listed from now on.
            client.add_labels(issue.number, std::slice::from_ref(label), now)?;
        }
    }
    match existing {
        Some(issue) if issue.body.trim_end() == markdown.trim_end() => {
            Ok(DashboardWrite::Unchanged)
        }
        Some(issue) => {
            client.set_issue_body(issue.number, markdown, now)?;
            Ok(DashboardWrite::Updated(issue.number))
        }
        None => {
            let labels: Vec<String> = std::iter::once(DASHBOARD_LABEL.to_string())
                .chain(listed.cloned())
                .collect();
            let (number, login) = client.create_issue_as(
                &ctx.config.report.dashboard_title,
                markdown,
                &labels,
                now,
            )?;
            Ok(DashboardWrite::Opened(number, login))
        }
    }
}

/// The dashboard issue among the backlog issues, if one of them is opentiger's own (its
/// label, its marker, and opened by `me`). Only people with write access (and opentiger) can
/// edit an issue opentiger opened, so its ticked boxes are theirs.
pub fn is_own_dashboard(issue: &crate::model::Issue, me: Option<&str>) -> bool {
    issue
        .labels
        .iter()
        .any(|l| l.eq_ignore_ascii_case(DASHBOARD_LABEL))
        && issue.body.contains(crate::report::board::DASHBOARD_MARKER)
        && me.is_some_and(|me| me == issue.author)
}

/// Whether an issue is a dashboard (ours or not): never a backlog issue.
pub fn is_dashboard(issue: &crate::model::Issue) -> bool {
    issue
        .labels
        .iter()
        .any(|l| l.eq_ignore_ascii_case(DASHBOARD_LABEL))
}

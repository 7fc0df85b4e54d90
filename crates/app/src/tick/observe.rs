//! github mode, the observe step (DESIGN §3 step 2): the backlog issues, the open pull requests
//! and the state of the PRs tasks wait on, fetched with conditional requests whose ETags (and
//! the bodies they stand for) live in the state, so a quiet tick costs a few 304s.
//!
//! Fetching happens before the state is locked or loaded for writing; [`Observed::apply`] then
//! writes what was seen (imports, cursors, PR states) as part of the claim phase.
//!
//! Not for: what people said (comments, commands, reviews, ticked boxes: read and acted on
//! through [`super::people`], which this step calls) or any rule (`engine::import` decides
//! the imports).

use serde::{Deserialize, Serialize};

use super::{ci_gate, dashboard, people, Context, Failure};
use crate::engine::import::{
    cap_body, cap_title, import_issues, kind_of, lane_of, spec_change, ImportDecision, ImportInput,
    SpecChange, BODY_CAP,
};
use crate::engine::PullState;
use crate::forge::github::{Conditional, ForgeError, GithubClient};
use crate::model::{Issue, PullRequest};
use crate::store::{Cursor, Store, Writer, OPEN_PULLS};
use crate::time::Timestamp;

const RATE_LIMIT: &str = "rate_limit";

/// What one sync saw.
#[derive(Default)]
pub struct Observed {
    /// Cursors to store: key → new cursor.
    cursors: Vec<(String, Cursor)>,
    issues: Vec<Issue>,
    pulls: Vec<PullRequest>,
    /// PRs of waiting tasks that are no longer open: number, state, head, base.
    finished: Vec<(u64, PullState, Option<String>, String)>,
    /// The trusted comments of issue-task threads that changed (issue 14 item 4).
    threads: Vec<(u64, Vec<crate::model::ThreadComment>)>,
    /// Trusted people's reviews of task PRs whose reviews changed (issue 14 item 5).
    reviews: Vec<(u64, Vec<crate::model::PullReview>)>,
    /// What CI says about the heads of open task PRs (for the judge).
    checks: Vec<(u64, String, crate::model::Checks)>,
    /// Check names seen on the base branch or PR heads: the repository has CI.
    learned: Vec<String>,
    /// Nothing changed on GitHub since the last sync: no import to decide.
    unchanged: bool,
    /// GitHub asked us to wait until then (rate limit): nothing was fetched.
    pub wait_until: Option<Timestamp>,
    pub requests: u32,
    /// New `/opentiger` commands, and replies seen posted.
    pub commands: people::CommandFeed,
    /// opentiger's own dashboard issue, when the backlog listing brought it back changed: its
    /// ticked checkboxes are acted on.
    pub dashboard: Option<Issue>,
}

#[derive(Serialize, Deserialize)]
struct RateLimitWait {
    until: Timestamp,
    kind: String,
}

/// Fetches what changed. A rate limit is not an error: it comes back as `wait_until`.
pub fn observe(ctx: &Context, client: &GithubClient, store: &Store) -> Result<Observed, Failure> {
    let now = ctx.now;
    let mut seen = Observed::default();
    if let Some(wait) = store
        .cursor(RATE_LIMIT)?
        .body
        .and_then(|b| serde_json::from_str::<RateLimitWait>(&b).ok())
    {
        if wait.until > now {
            seen.wait_until = Some(wait.until);
            return Ok(seen);
        }
    }
    match fetch(ctx, client, store, &mut seen) {
        Ok(()) => {}
        Err(ForgeError::RateLimited { until, kind }) => {
            seen = Observed {
                wait_until: Some(until),
                ..Observed::default()
            };
            let body = serde_json::to_string(&RateLimitWait {
                until,
                kind: kind.to_string(),
            })
            .unwrap_or_default();
            seen.cursors.push((
                RATE_LIMIT.to_string(),
                Cursor {
                    etag: None,
                    body: Some(body),
                },
            ));
        }
        Err(e) => return Err(Failure::tick(e.to_string())),
    }
    seen.requests = client.requests.get();
    Ok(seen)
}

fn fetch(
    ctx: &Context,
    client: &GithubClient,
    store: &Store,
    seen: &mut Observed,
) -> Result<(), ForgeError> {
    let now = ctx.now;
    let mut unchanged = true;
    for label in &ctx.config.backlog.labels {
        let key = format!("issues:{label}");
        let cursor = store
            .cursor(&key)
            .map_err(|e| ForgeError::Config(e.to_string()))?;
        match client.backlog_issues(label, cursor.etag.as_deref(), now)? {
            Conditional::NotModified => {
                let cached: Vec<Issue> = cursor
                    .body
                    .as_deref()
                    .and_then(|b| serde_json::from_str(b).ok())
                    .unwrap_or_default();
                seen.issues
                    .extend(cached.into_iter().filter(|i| !dashboard::is_dashboard(i)));
            }
            Conditional::Fresh { value, etag } => {
                unchanged = false;
                // The dashboard is listed too (it carries the backlog label so that a ticked
                // checkbox changes this listing): its boxes are read, it is never a task.
                let (dashboards, value): (Vec<Issue>, Vec<Issue>) =
                    value.into_iter().partition(dashboard::is_dashboard);
                let me =
                    people::self_login(store).map_err(|e| ForgeError::Config(e.to_string()))?;
                if let Some(own) = dashboards
                    .into_iter()
                    .filter(|d| dashboard::is_own_dashboard(d, me.as_deref()))
                    .min_by_key(|d| d.number)
                {
                    seen.dashboard = Some(own);
                }
                // Redacted and size-capped before anything keeps or reads them (issue 14): the
                // cached list, the import and the task's spec all see the same bounded text.
                let redactor = ctx.redactor();
                let value: Vec<Issue> = value.into_iter().map(|i| tidy(&redactor, i)).collect();
                let body = serde_json::to_string(&value).ok();
                seen.cursors.push((key, Cursor { etag, body }));
                seen.issues.extend(value);
            }
        }
    }
    seen.issues.sort_by_key(|i| i.number);
    seen.issues.dedup_by_key(|i| i.number);
    if !unchanged {
        add_label_actors(ctx, client, &mut seen.issues)?;
    }
    let cursor = store
        .cursor(OPEN_PULLS)
        .map_err(|e| ForgeError::Config(e.to_string()))?;
    match client.open_pulls(cursor.etag.as_deref(), now)? {
        Conditional::NotModified => {
            seen.pulls = cursor
                .body
                .as_deref()
                .and_then(|b| serde_json::from_str(b).ok())
                .unwrap_or_default();
        }
        Conditional::Fresh { value, etag } => {
            unchanged = false;
            seen.cursors.push((
                OPEN_PULLS.to_string(),
                Cursor {
                    etag,
                    body: serde_json::to_string(&value).ok(),
                },
            ));
            seen.pulls = value;
        }
    }
    seen.commands = people::read_feed(ctx, client, store, &seen.pulls)?;
    // CI on the heads of open task PRs: asked until it is final for that head.
    let known = store
        .pull_states()
        .map_err(|e| ForgeError::Config(e.to_string()))?;
    let expected = store
        .expected_checks(
            ctx.config.merge.required_checks.as_deref(),
            &ctx.config.base_branch,
        )
        .map_err(|e| ForgeError::Config(e.to_string()))?;
    for pr in seen
        .pulls
        .iter()
        .filter(|p| known.get(&p.number) == Some(&PullState::Open))
    {
        let stored = store
            .pull_checks(pr.number)
            .map_err(|e| ForgeError::Config(e.to_string()))?;
        let settled = stored.as_ref().is_some_and(|(sha, c)| {
            sha.as_deref() == Some(pr.head_sha.as_str()) && ci_gate::is_final(c, &expected)
        });
        if !settled {
            seen.checks.push((
                pr.number,
                pr.head_sha.clone(),
                client.checks(pr.number, &pr.head_sha, now)?,
            ));
        }
    }
    if !seen.checks.is_empty() && ctx.config.merge.require_checks {
        let learned = ci_gate::learn_expected_checks(ctx, client, store, &seen.checks)?;
        seen.learned = learned.names;
        seen.cursors.extend(learned.cursors);
    }
    // A comment moves its issue's or PR's `updated_at`, so the lists changed when one was added.
    if !unchanged {
        let (followed, prs) = people::followed(store, &seen.pulls)?;
        let threads = people::read_threads(ctx, client, store, &followed)?;
        seen.threads = threads.changed;
        seen.cursors.extend(threads.cursors);
        let reviews = people::read_reviews(ctx, client, store, &prs)?;
        seen.reviews = reviews.changed;
        seen.cursors.extend(reviews.cursors);
    }
    // The PRs tasks wait on that left the open list were merged or closed: ask which (only then).
    if !unchanged {
        let known = store
            .pull_states()
            .map_err(|e| ForgeError::Config(e.to_string()))?;
        for (number, state) in known {
            if state == PullState::Open && !seen.pulls.iter().any(|p| p.number == number) {
                let pr = client.pull(number, now)?;
                let state = if pr.merged {
                    PullState::Merged
                } else {
                    PullState::Closed
                };
                seen.finished
                    .push((number, state, Some(pr.head_sha), pr.base_ref));
            }
        }
    }
    seen.unchanged = unchanged;
    Ok(())
}

/// An issue's title and body as opentiger keeps them: secrets redacted, then cut to size.
fn tidy(redactor: &crate::redact::Redactor, issue: Issue) -> Issue {
    Issue {
        title: cap_title(&redactor.redact(&issue.title)),
        body: cap_body(&redactor.redact(&issue.body), BODY_CAP),
        ..issue
    }
}

/// DESIGN §10: an outsider's issue is trusted when a person with write access applied the backlog
/// label. Only asked for issues whose author is not trusted, and only when the list changed.
fn add_label_actors(
    ctx: &Context,
    client: &GithubClient,
    issues: &mut [Issue],
) -> Result<(), ForgeError> {
    let trusted = &ctx.config.backlog.trusted_associations;
    let mut writers: std::collections::BTreeMap<String, bool> = std::collections::BTreeMap::new();
    for issue in issues.iter_mut() {
        let author_trusted = trusted
            .iter()
            .any(|t| t.eq_ignore_ascii_case(issue.author_association.as_str()));
        if author_trusted || !issue.labelled_by.is_empty() {
            continue;
        }
        for (label, actor, at) in client.label_events(issue.number, ctx.now)? {
            if !ctx
                .config
                .backlog
                .labels
                .iter()
                .any(|l| l.eq_ignore_ascii_case(&label))
            {
                continue;
            }
            let can_write = match writers.get(&actor) {
                Some(w) => *w,
                None => {
                    let w = client.can_write(&actor, ctx.now)?;
                    writers.insert(actor.clone(), w);
                    w
                }
            };
            issue.labelled_by.push(crate::model::IssueEvent {
                label,
                actor,
                actor_can_write: can_write,
                at,
            });
        }
    }
    Ok(())
}

impl Observed {
    /// Writes what was seen: cursors, PR states, and the import decisions (inside the claim
    /// phase, so it re-runs on fresh state if a save loses a race). Returns report lines.
    pub fn apply(
        &self,
        ctx: &Context,
        store: &mut Store,
        writer: Writer<'_>,
    ) -> Result<Vec<String>, Failure> {
        let now = writer.now;
        let mut lines = Vec::new();
        for (key, cursor) in &self.cursors {
            store.set_cursor(key, cursor, now)?;
        }
        if let Some(until) = self.wait_until {
            lines.push(format!("GitHub rate limit: no GitHub calls until {until}"));
            return Ok(lines);
        }
        for pr in &self.pulls {
            if store.pull_states()?.contains_key(&pr.number) {
                store.set_pull_state(pr.number, PullState::Open, Some(&pr.head_sha), now)?;
                store.set_pull_base(pr.number, &pr.base_ref, now)?;
            }
        }
        lines.extend(people::apply(
            ctx,
            store,
            &self.commands,
            self.dashboard.as_ref(),
            &self.issues,
            writer,
        )?);
        for (number, state, sha, base) in &self.finished {
            store.set_pull_state(*number, *state, sha.as_deref(), now)?;
            store.set_pull_base(*number, base, now)?;
        }
        store.learn_checks(&self.learned, now)?;
        for (thread, comments) in &self.threads {
            store.set_thread_comments(*thread, comments)?;
        }
        for (pr, reviews) in &self.reviews {
            store.set_pull_reviews(*pr, reviews)?;
        }
        for (number, sha, checks) in &self.checks {
            store.set_pull_checks(*number, sha, checks)?;
            let unknown = checks.mergeable.as_deref() == Some("unknown");
            store.note_mergeable(*number, sha, unknown, now)?;
            if checks.state != "none" {
                lines.push(format!("PR #{number}: checks {}", checks.state));
            }
        }
        if self.unchanged {
            return Ok(lines);
        }
        // Issues that mirror a planned task (they carry its marker) are linked, never imported.
        let mut own = Vec::new();
        for issue in &self.issues {
            if let Some(task) = marked_task(&issue.body) {
                own.push(issue.number);
                if store.task(&task).is_ok() && store.link_issue(&task, issue.number)? {
                    lines.push(format!(
                        "task {task}: linked to its issue #{}",
                        issue.number
                    ));
                }
            }
        }
        let foreign: Vec<Issue> = self
            .issues
            .iter()
            .filter(|i| !own.contains(&i.number))
            .cloned()
            .collect();
        let linked = store.tasks_with_issues()?;
        let requirement = ctx
            .requirement_text()
            .map(|t| crate::planner::parse_requirement(&t).allowed_paths)
            .unwrap_or_default();
        let default_allowed: Vec<String> = requirement.into_iter().filter(|p| p != "**").collect();
        // A PR holds an issue back only when a person opened it: our own PRs (they carry the
        // marker) belong to the issue's task and are adopted, not treated as competition.
        let human_prs: Vec<PullRequest> = self
            .pulls
            .iter()
            .filter(|p| !p.body.contains("<!-- opentiger:task="))
            .cloned()
            .collect();
        let mut specs = std::collections::BTreeMap::new();
        for issue in &foreign {
            if let Some(kept) = store.issue_spec(issue.number)? {
                specs.insert(issue.number, kept.hash);
            }
        }
        let decisions = import_issues(&ImportInput {
            issues: &foreign,
            open_prs: &human_prs,
            tasks: &linked,
            config: &ctx.config.backlog,
            default_allowed: &default_allowed,
            pattern_problem: &|p| {
                crate::policy::Glob::new(p)
                    .err()
                    .map(|e| e.problem.to_string())
            },
            execution_mode: ctx.config.execution_mode,
            specs: &specs,
            now,
        });
        let mut skipped = Vec::new();
        for decision in decisions {
            match decision {
                ImportDecision::Create { task, reason } => {
                    if store.task(&task.id).is_err() {
                        lines.push(format!(
                            "imported issue #{} as task {}: {reason}",
                            task.issue_number.unwrap_or(0),
                            task.id
                        ));
                        store.insert_tasks(std::slice::from_ref(&task), writer)?;
                    }
                }
                ImportDecision::Retarget {
                    task_id,
                    role,
                    reason,
                } => {
                    let kind = kind_of(role, store.task(&task_id)?.kind);
                    store.retarget(&task_id, (role, kind), lane_of(role), &reason, writer)?;
                    lines.push(format!("task {task_id}: {reason}"));
                }
                ImportDecision::Skip { issue, reason } => skipped
                    .push(serde_json::json!({ "issue": issue, "reason": reason.to_string() })),
            }
        }
        lines.extend(keep_specs(ctx, store, &foreign)?);
        lines.extend(self.import_pulls(ctx, store, writer)?);
        // The dashboard lists what was not imported, and why.
        store.set_cursor(
            "import:skipped",
            &Cursor {
                etag: None,
                body: serde_json::to_string(&skipped).ok(),
            },
            now,
        )?;
        Ok(lines)
    }
}

/// Issue 14 items 1 and 3: the text of each issue that has tasks is kept in the state as their
/// spec; a trusted edit replaces it (the next attempt works from it), an untrusted one does not.
fn keep_specs(ctx: &Context, store: &mut Store, issues: &[Issue]) -> Result<Vec<String>, Failure> {
    let linked = store.tasks_with_issues()?;
    let mut lines = Vec::new();
    for issue in issues {
        let tasks: Vec<&crate::model::Task> = linked
            .iter()
            .filter(|t| t.issue_number == Some(issue.number))
            .collect();
        if tasks.is_empty() {
            continue;
        }
        let kept = store.issue_spec(issue.number)?;
        match spec_change(issue, kept.as_ref(), &ctx.config.backlog) {
            SpecChange::New(spec) => store.set_issue_spec(&spec)?,
            SpecChange::Edited(spec) => {
                store.set_issue_spec(&spec)?;
                lines.push(format!(
                    "issue #{} was edited: its tasks' next attempts work from the new text",
                    issue.number
                ));
            }
            SpecChange::Unchanged => {}
            SpecChange::UntrustedEdit { author } => lines.push(format!(
                "issue #{} was edited, but its author @{author} is not trusted: its tasks keep \
                 the text they were imported with",
                issue.number
            )),
        }
    }
    Ok(lines)
}

impl Observed {
    /// `backlog.import_open_prs`: a review task for each new head of a trusted person's PR.
    fn import_pulls(
        &self,
        ctx: &Context,
        store: &mut Store,
        writer: Writer<'_>,
    ) -> Result<Vec<String>, Failure> {
        use crate::engine::import::{import_pulls, PullImport};
        let mut lines = Vec::new();
        let reviews = store.pull_review_tasks()?;
        let decisions = import_pulls(
            &self.pulls,
            &reviews,
            &ctx.config.backlog,
            &ctx.config.base_branch,
            writer.now,
        );
        for decision in decisions {
            match decision {
                PullImport::Review { task, run, reason } => {
                    if store.task(&task.id).is_ok() {
                        continue;
                    }
                    let pr = run.pr_number.unwrap_or(0);
                    store.insert_tasks(std::slice::from_ref(&task), writer)?;
                    let run = crate::model::Run {
                        tick_id: ctx.tick_id.clone(),
                        ..*run
                    };
                    store.insert_run(&run)?;
                    store.set_pull_state(
                        pr,
                        PullState::Open,
                        run.head_sha.as_deref(),
                        writer.now,
                    )?;
                    lines.push(reason);
                }
                PullImport::Supersede { task_id, reason } => {
                    store.transition_task(
                        &task_id,
                        crate::model::TaskState::CANCELLED,
                        &reason,
                        crate::store::TaskChanges::default(),
                        writer,
                    )?;
                    lines.push(format!("task {task_id}: {reason}"));
                }
                PullImport::Skip { pr, reason } => {
                    lines.push(format!("PR #{pr} not reviewed: {reason}"));
                }
            }
        }
        Ok(lines)
    }
}

/// The task id in an opentiger marker (`<!-- opentiger:task=ID ... -->`), if the text has one.
fn marked_task(text: &str) -> Option<crate::model::TaskId> {
    let rest = text.split("<!-- opentiger:task=").nth(1)?;
    let id: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
        .collect();
    (!id.is_empty()).then_some(crate::model::TaskId(id))
}

//! github mode, the CI gate's shell side (the rules are `engine::gate`, `engine::stall` and
//! `engine::ci_start`): which checks a PR must pass, read while a PR waits on CI (the base
//! branch's rules, the checks learned from the base), and acting on a PR head's CI (the engine
//! decided it, and the claim recorded it so a dispatch is sent at most once per head): for a
//! head whose expected CI never started, one comment on the PR, keyed by the head; for a stall
//! or a head that passed the scan (`scan.ci`), the CI workflows dispatched for the PR's branch
//! once its tip is still that head; then what the dispatch did, recorded.
//!
//! Not for: deciding whether to wait, heal or escalate (the engine does).

use super::Context;
use crate::engine::gate::{ExpectedChecks, ExpectedSource};
use crate::engine::stall::Dispatch;
use crate::forge::github::{Conditional, ForgeError, GithubClient};
use crate::forge::Checks;
use crate::store::{
    rules_key, Cursor, HealCi, Store, StoreError, BASE_CHECK_RUNS, BASE_STATUSES, LEARNED_CHECKS,
};
use crate::time::Timestamp;

/// What a read of the expected checks found: names seen (to learn) and cursors to store.
#[derive(Default)]
pub(super) struct Learned {
    pub names: Vec<String>,
    pub cursors: Vec<(String, Cursor)>,
}

/// CI read for a head is final when it failed, or passed with every check known to be required
/// and GitHub knows whether the PR merges.
pub(super) fn is_final(checks: &Checks, expected: &ExpectedChecks) -> bool {
    // GitHub computes mergeability lazily: reading the PR again is what makes it.
    if checks.mergeable.as_deref() == Some("unknown") {
        return false;
    }
    match checks.state.as_str() {
        "failure" => true,
        "success" => match expected.source {
            ExpectedSource::Config | ExpectedSource::BranchRules => {
                expected.names.iter().all(|n| checks.passed.contains(n))
            }
            ExpectedSource::Learned
            | ExpectedSource::Workflows
            | ExpectedSource::Nothing
            | ExpectedSource::Unknown => true,
        },
        _ => false,
    }
}

/// Which checks a PR must pass, read while a PR waits on CI: the base branch's rules (unless
/// `merge.required_checks` names them), and while nothing names any, the checks on the base
/// branch's tip (once some are seen the repository is known to have CI). All conditional.
pub(super) fn learn_expected_checks(
    ctx: &Context,
    client: &GithubClient,
    store: &Store,
    read: &[(u64, String, Checks)],
) -> Result<Learned, ForgeError> {
    let mut seen = Learned::default();
    let now = ctx.now;
    let base = &ctx.config.base_branch;
    let stored = |e: crate::store::StoreError| ForgeError::Config(e.to_string());
    // What PR heads reported is learned too: a repository whose PRs ran CI has CI.
    for (_, _, checks) in read {
        seen.names.extend(checks.passed.iter().cloned());
        seen.names.extend(checks.failing.iter().cloned());
        seen.names.extend(checks.pending.iter().cloned());
    }
    if ctx.config.merge.required_checks.is_some() {
        return Ok(seen);
    }
    let key = rules_key(base);
    let cursor = store.cursor(&key).map_err(stored)?;
    let rules = match client.required_checks(base, cursor.etag.as_deref(), now) {
        Ok(Conditional::NotModified) => store.cursor_names(&key).map_err(stored)?,
        Ok(Conditional::Fresh { value, etag }) => {
            let body = serde_json::to_string(&value).ok();
            seen.cursors.push((key, Cursor { etag, body }));
            value
        }
        Err(e @ ForgeError::RateLimited { .. }) => return Err(e),
        // Rules unreadable (an old GitHub Enterprise, a token without access): the other
        // sources still apply.
        Err(e) => {
            tracing::warn!("could not read the rules of branch {base}: {e}");
            Vec::new()
        }
    };
    let learned = store.cursor_names(LEARNED_CHECKS).map_err(stored)?;
    // opentiger's own checks (a rule may require the judge's) are no sign of the repository's
    // CI: with only those, the base is read as if nothing named any.
    let ci = |names: &[String]| names.iter().any(|n| !crate::model::checks::is_own_check(n));
    if ci(&rules) || ci(&learned) || ci(&seen.names) {
        return Ok(seen);
    }
    // Issue 49: stored with a body, so that the base having been read is known even when an
    // answer carries no ETag: until then the gate does not know whether the repository has CI.
    for (key, read) in [
        (
            BASE_CHECK_RUNS,
            GithubClient::branch_check_runs as BranchRead,
        ),
        (BASE_STATUSES, GithubClient::branch_statuses as BranchRead),
    ] {
        let cursor = store.cursor(key).map_err(stored)?;
        if let Conditional::Fresh { value, etag } = read(client, base, cursor.etag.as_deref(), now)?
        {
            let body = serde_json::to_string(&value).ok();
            seen.cursors.push((key.to_string(), Cursor { etag, body }));
            seen.names.extend(value);
        }
    }
    Ok(seen)
}

type BranchRead = fn(
    &GithubClient,
    &str,
    Option<&str>,
    Timestamp,
) -> Result<Conditional<Vec<String>>, ForgeError>;

/// What the act phase did about one PR head's CI.
pub struct Healed {
    /// The comment could not be posted (visibility only: nothing is lost).
    pub comment_error: Option<String>,
    /// The dispatch, when one was due: `Ok` the workflows started, `Err` why not.
    pub dispatch: Option<Result<Vec<String>, String>>,
}

/// Comments once per head (a tick killed after posting edits the same comment next time), then
/// dispatches the CI workflows when the decision says so — only while the PR's head is still
/// the head decided on: a dispatch runs the branch's tip, whatever was pushed since.
pub fn heal_ci(client: &GithubClient, ctx: &Context, heal: &HealCi) -> Healed {
    let now = ctx.later();
    let comment_error = heal.comment.as_ref().and_then(|comment| {
        let marker = format!(
            "<!-- opentiger:ci-diagnosis pr={} head={} -->",
            heal.pr, heal.head_sha
        );
        let text = ctx.redactor().redact(comment);
        client
            .upsert_comment(heal.pr, &marker, &text, now)
            .err()
            .map(|e| e.to_string())
    });
    let dispatch = (!heal.dispatch.is_empty()).then(|| dispatch_on_head(client, heal, now));
    Healed {
        comment_error,
        dispatch,
    }
}

/// Re-reads the PR's head, refuses if it moved, then dispatches every workflow.
fn dispatch_on_head(
    client: &GithubClient,
    heal: &HealCi,
    now: Timestamp,
) -> Result<Vec<String>, String> {
    let tip = client
        .pull(heal.pr, now)
        .map_err(|e| e.to_string())?
        .head_sha;
    if tip != heal.head_sha {
        return Err(format!(
            "`{}` moved to {} since {} was decided on: nothing started for the new head",
            heal.branch,
            crate::engine::verdict::short_sha(&tip),
            crate::engine::verdict::short_sha(&heal.head_sha)
        ));
    }
    for workflow in &heal.dispatch {
        client
            .dispatch_workflow(workflow, &heal.branch, now)
            .map_err(|e| format!("`{workflow}`: {e}"))?;
    }
    Ok(heal.dispatch.clone())
}

/// Records how the dispatch went (the engine waits for a sent one, escalates a failed one).
pub fn record_heal(
    store: &mut Store,
    heal: &HealCi,
    healed: &Healed,
    now: Timestamp,
) -> Result<Vec<String>, StoreError> {
    let mut lines = Vec::new();
    let pr = heal.pr;
    match (&heal.comment, &healed.comment_error) {
        (_, Some(e)) => lines.push(format!(
            "{}: could not comment on PR #{pr} about its CI: {e}",
            heal.task
        )),
        (Some(_), None) => lines.push(format!(
            "{}: PR #{pr}: expected CI never started; said so on the PR",
            heal.task
        )),
        (None, None) => {}
    }
    let Some(result) = &healed.dispatch else {
        return Ok(lines);
    };
    let Some(mut stored) = store.ci_heals()?.remove(&pr) else {
        return Ok(lines);
    };
    if stored.head_sha != heal.head_sha {
        return Ok(lines);
    }
    let workflows = crate::engine::stall::quoted(&heal.dispatch);
    stored.dispatch = match result {
        Ok(sent) => {
            lines.push(format!(
                "{}: dispatched {workflows} on {} for PR #{pr} ({})",
                heal.task,
                heal.branch,
                crate::engine::verdict::short_sha(&heal.head_sha)
            ));
            Dispatch::Sent {
                workflows: sent.clone(),
            }
        }
        Err(error) => {
            lines.push(format!(
                "{}: could not dispatch {workflows} for PR #{pr}: {error}",
                heal.task
            ));
            Dispatch::Failed {
                workflows: heal.dispatch.clone(),
                error: error.clone(),
            }
        }
    };
    store.set_ci_heal(pr, &stored, now)?;
    Ok(lines)
}

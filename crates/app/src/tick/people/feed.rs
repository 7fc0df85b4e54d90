//! github mode, the observe step's read of the repository's comment feed (issue 17 item 1):
//! incremental (one conditional request when nothing changed, at most `commands.max_pages`
//! pages otherwise, going on next tick from the page left), each comment sorted into what it
//! is — a command (parsed by `engine::commands::parse`, its author's right to command checked:
//! association, else GitHub's permission, cached for an hour), or one of opentiger's own
//! comments seen back (a reply, a question, a research report), believed only from
//! opentiger's login.
//!
//! Not for: acting on what was read (`commands.rs`, `boxes.rs`, in the claim phase) or
//! answering it (`replies.rs`).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::replies::{replied_to, SELF};
use crate::engine::commands::{self, Parsed};
use crate::forge::comments::{Feed, FeedComment};
use crate::forge::github::{ForgeError, GithubClient};
use crate::model::{PullRequest, TaskId};
use crate::store::{Cursor, Store};
use crate::tick::{dashboard, escalate, plan_thread, Context};
use crate::time::{Timestamp, DAY, HOUR};

const FEED: &str = "comments:feed";
/// The state key of the dashboard issue's number, once a command was seen on it.
const DASHBOARD: &str = "dashboard:issue";

/// Where the feed stopped: comments updated at or after `since` are read next time.
#[derive(Serialize, Deserialize)]
struct FeedCursor {
    since: Timestamp,
    /// A read cut short by `commands.max_pages` goes on from this page.
    #[serde(default)]
    rest: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct Permission {
    can_write: bool,
    at: Timestamp,
}

/// One command comment seen in the feed.
#[derive(Clone, Debug)]
pub struct SeenCommand {
    pub comment: FeedComment,
    pub parsed: Parsed,
    pub allowed: bool,
    pub on_dashboard: bool,
}

/// What the feed gave this tick.
#[derive(Default)]
pub struct CommandFeed {
    pub commands: Vec<SeenCommand>,
    /// Command comments whose reply is already on GitHub (their markers were seen).
    pub replied: Vec<u64>,
    /// Our question comments seen: (task, question, comment id, text).
    pub questions: Vec<(TaskId, String, u64, String)>,
    /// The feed was read to its end: every reply posted so far was seen.
    pub complete: bool,
    /// Our research report comments seen (their boxes approve proposals, issue 28).
    pub reports: Vec<crate::engine::research::ReportComment>,
    pub cursors: Vec<(String, Cursor)>,
}

/// Reads what changed in the comment feed (issue 17 item 1).
pub fn read(
    ctx: &Context,
    client: &GithubClient,
    store: &Store,
    pulls: &[PullRequest],
) -> Result<CommandFeed, ForgeError> {
    let mut feed = CommandFeed {
        complete: true,
        ..CommandFeed::default()
    };
    // The feed also brings back our question comments (their ids), so it is read when either
    // feature is on.
    let commands_on = ctx.config.commands.enabled;
    if !commands_on && !ctx.config.escalation.comment {
        return Ok(feed);
    }
    let config_error = |e: crate::store::StoreError| ForgeError::Config(e.to_string());
    let cursor = store.cursor(FEED).map_err(config_error)?;
    let stored = cursor
        .body
        .as_deref()
        .and_then(|b| serde_json::from_str::<FeedCursor>(b).ok());
    // The first read looks back one day, not over the repository's whole history: an old
    // command must not act on the day opentiger is installed.
    let since = Some(stored.as_ref().map_or(ctx.now.plus(-DAY), |c| c.since));
    let resume = stored.as_ref().and_then(|c| c.rest.clone());
    let max_pages = ctx.config.commands.max_pages;
    let (comments, etag, rest) = match client.comment_feed(
        since,
        resume.as_deref(),
        cursor.etag.as_deref(),
        max_pages,
        ctx.now,
    )? {
        Feed::NotModified => return Ok(feed),
        Feed::Fresh {
            comments,
            etag,
            rest,
        } => (comments, etag, rest),
    };
    feed.complete = rest.is_none();
    // `since` is inclusive: the newest comments are read again next time and found recorded.
    // While pages are left, `since` stays and the read goes on from the page left.
    let next_since = match &rest {
        Some(_) => since,
        None => comments.iter().map(|c| c.updated_at).max().or(since),
    };
    feed.cursors.push((
        FEED.to_string(),
        Cursor {
            // The ETag stands for the first page of a complete read from `since`.
            etag: if rest.is_none() && resume.is_none() {
                etag
            } else {
                None
            },
            body: next_since
                .and_then(|since| serde_json::to_string(&FeedCursor { since, rest }).ok()),
        },
    ));
    let mut permissions: BTreeMap<String, bool> = BTreeMap::new();
    let mut dashboard: Option<u64> = store
        .cursor(DASHBOARD)
        .map_err(config_error)?
        .body
        .and_then(|b| b.parse().ok());
    let me = store.cursor(SELF).map_err(config_error)?.body;
    let plan_thread = plan_thread::thread(store).map_err(config_error)?;
    for comment in comments {
        let ours = me.as_deref() == Some(comment.author.as_str());
        if let Some(id) = replied_to(&comment.body).filter(|_| ours) {
            feed.replied.push(id);
            continue;
        }
        if let Some((task, question)) = escalate::marked(&comment.body).filter(|_| ours) {
            feed.questions
                .push((task, question, comment.id, comment.body.clone()));
            continue;
        }
        if let Some(task) = crate::engine::research::marked(&comment.body).filter(|_| ours) {
            feed.reports.push(crate::engine::research::ReportComment {
                task,
                thread: comment.thread,
                url: comment.html_url.clone(),
                body: comment.body.clone(),
            });
            continue;
        }
        if !commands_on || comment.body.contains("<!-- opentiger:") {
            continue; // our own comments (progress, escalations, verdicts) command nothing
        }
        let Some(parsed) = commands::parse(&comment.body) else {
            continue;
        };
        if store.command_seen(comment.id).map_err(config_error)? {
            continue; // acted on already; an edit does not make it new
        }
        let allowed = may_command(ctx, client, store, &comment, &mut permissions, &mut feed)?;
        let own_thread = !store
            .tasks_of_thread(comment.thread)
            .map_err(config_error)?
            .is_empty()
            || pulls.iter().any(|p| p.number == comment.thread)
            || plan_thread == Some(comment.thread);
        let on_dashboard = match dashboard {
            Some(n) => n == comment.thread,
            None if own_thread || !allowed => false,
            None => {
                let is =
                    client.issue_has_label(comment.thread, dashboard::DASHBOARD_LABEL, ctx.now)?;
                if is {
                    dashboard = Some(comment.thread);
                    feed.cursors.push((
                        DASHBOARD.to_string(),
                        Cursor {
                            etag: None,
                            body: Some(comment.thread.to_string()),
                        },
                    ));
                }
                is
            }
        };
        feed.commands.push(SeenCommand {
            comment,
            parsed,
            allowed,
            on_dashboard,
        });
    }
    Ok(feed)
}

/// A trusted association (`commands.trusted_associations`), else write permission as GitHub
/// says (cached in the state for an hour: a flood of comments costs one call per person).
fn may_command(
    ctx: &Context,
    client: &GithubClient,
    store: &Store,
    comment: &FeedComment,
    asked: &mut BTreeMap<String, bool>,
    feed: &mut CommandFeed,
) -> Result<bool, ForgeError> {
    let trusted = &ctx.config.commands.trusted_associations;
    if trusted
        .iter()
        .any(|t| t.eq_ignore_ascii_case(comment.association.as_str()))
    {
        return Ok(true);
    }
    if comment.author.is_empty() {
        return Ok(false);
    }
    if let Some(known) = asked.get(&comment.author) {
        return Ok(*known);
    }
    let key = format!("permission:{}", comment.author);
    let cached = store
        .cursor(&key)
        .map_err(|e| ForgeError::Config(e.to_string()))?
        .body
        .and_then(|b| serde_json::from_str::<Permission>(&b).ok())
        .filter(|p| ctx.now.minus(p.at) < HOUR && p.at <= ctx.now);
    let can_write = match cached {
        Some(p) => p.can_write,
        None => {
            let can_write = client.can_write(&comment.author, ctx.now)?;
            feed.cursors.push((
                key,
                Cursor {
                    etag: None,
                    body: serde_json::to_string(&Permission {
                        can_write,
                        at: ctx.now,
                    })
                    .ok(),
                },
            ));
            can_write
        }
    };
    asked.insert(comment.author.clone(), can_write);
    Ok(can_write)
}

//! github mode, part of the observe step (issue 14 item 4): the comments on the issue and PR of
//! each active issue task, read with conditional requests (a 304 says none was added or
//! edited), kept only when a trusted person wrote them after the import.
//!
//! Only the trusted comments reach the state (redacted); the ETag is the cursor, no copy of the
//! thread is cached, so nobody else's text is ever stored.
//!
//! Not for: the comment commands (the repository-wide feed, `feed.rs`) or what a prompt shows
//! of the kept comments (`runner::Brief`).

use std::collections::BTreeMap;

use crate::engine::import::{cap_body, comment_trusted, kept_comments, COMMENT_CAP};
use crate::forge::github::{Conditional, ForgeError, GithubClient};
use crate::forge::PullRequest;
use crate::model::{PullReview, ReviewLine, TaskKind, ThreadComment};
use crate::store::{Cursor, Store};
use crate::tick::Context;
use crate::time::Timestamp;

/// What a read of the threads found: (thread, what is kept of it) for each thread that changed,
/// and the cursors to store.
pub struct Fetched<T> {
    pub changed: Vec<(u64, Vec<T>)>,
    pub cursors: Vec<(String, Cursor)>,
}

/// The threads followed: issue or PR number → when the first task of its issue was imported;
/// and which of them are PRs (whose reviews are read too).
pub fn followed(
    store: &Store,
    pulls: &[PullRequest],
) -> Result<(BTreeMap<u64, Timestamp>, Vec<u64>), ForgeError> {
    let tasks = store
        .tasks_with_issues()
        .map_err(|e| ForgeError::Config(e.to_string()))?;
    let mut since: BTreeMap<u64, Timestamp> = BTreeMap::new();
    let mut prs_followed = Vec::new();
    let mut first_import: BTreeMap<u64, Timestamp> = BTreeMap::new();
    for t in &tasks {
        if let Some(n) = t.issue_number {
            let at = first_import.entry(n).or_insert(t.created_at);
            *at = (*at).min(t.created_at);
        }
    }
    for t in tasks
        .iter()
        .filter(|t| !t.status.is_terminal() && t.kind != TaskKind::PrReview)
    {
        let Some(n) = t.issue_number else { continue };
        let at = first_import.get(&n).copied().unwrap_or(t.created_at);
        since.insert(n, at);
        let mark = format!("<!-- opentiger:task={}", t.id);
        let prs = pulls
            .iter()
            .filter(|p| p.body.contains(&mark))
            .map(|p| p.number)
            .chain(t.source_pr);
        for pr in prs {
            since.insert(pr, at);
            if !prs_followed.contains(&pr) {
                prs_followed.push(pr);
            }
        }
    }
    Ok((since, prs_followed))
}

/// Reads the reviews of each followed PR; returns (PR, its trusted reviews, redacted) for the
/// PRs whose reviews changed, and the cursors to store.
pub fn fetch_reviews(
    ctx: &Context,
    client: &GithubClient,
    store: &Store,
    prs: &[u64],
) -> Result<Fetched<PullReview>, ForgeError> {
    let mut changed = Vec::new();
    let mut cursors = Vec::new();
    let mut writers: BTreeMap<String, bool> = BTreeMap::new();
    for &pr in prs {
        let key = format!("reviews:{pr}");
        let cursor = store
            .cursor(&key)
            .map_err(|e| ForgeError::Config(e.to_string()))?;
        let reviews = match gone_is_quiet(client.pull_reviews(pr, cursor.etag.as_deref(), ctx.now))?
        {
            Conditional::NotModified => continue,
            Conditional::Fresh { value, etag } => {
                cursors.push((key, Cursor { etag, body: None }));
                value
            }
        };
        let kept = trusted_reviews(ctx, client, reviews, &mut writers)?;
        changed.push((pr, kept));
    }
    Ok(Fetched { changed, cursors })
}

/// The most line comments of one review kept (the prompt shows fewer, `COMMENTS_CAP`).
const LINES_KEPT: usize = 50;

/// Trusted people's reviews among `reviews` (their association, else their write permission,
/// asked once per author and kept in `writers`), redacted and bounded: a body cut to a
/// comment's cap, at most [`LINES_KEPT`] line comments each cut the same way. Everyone
/// else's are dropped: they never reach the state or a prompt.
pub fn trusted_reviews(
    ctx: &Context,
    client: &GithubClient,
    reviews: Vec<(PullReview, String)>,
    writers: &mut BTreeMap<String, bool>,
) -> Result<Vec<PullReview>, ForgeError> {
    let redactor = ctx.redactor();
    let cap = |text: &str| cap_body(&redactor.redact(text), COMMENT_CAP);
    let mut kept = Vec::new();
    for (review, association) in reviews {
        let listed = ctx
            .config
            .backlog
            .trusted_associations
            .iter()
            .any(|a| a.trim().eq_ignore_ascii_case(association.trim()));
        let trusted = listed || {
            if let Some(w) = writers.get(&review.author) {
                *w
            } else {
                let w = !review.author.is_empty() && client.can_write(&review.author, ctx.now)?;
                writers.insert(review.author.clone(), w);
                w
            }
        };
        if trusted {
            kept.push(PullReview {
                body: cap(&review.body),
                lines: review
                    .lines
                    .into_iter()
                    .take(LINES_KEPT)
                    .map(|l| ReviewLine {
                        body: cap(&l.body),
                        ..l
                    })
                    .collect(),
                ..review
            });
        }
    }
    Ok(kept)
}

/// Reads each followed thread; returns (thread, its trusted comments) for the threads that
/// changed, and the cursors to store.
pub fn fetch(
    ctx: &Context,
    client: &GithubClient,
    store: &Store,
    threads: &BTreeMap<u64, Timestamp>,
) -> Result<Fetched<ThreadComment>, ForgeError> {
    let redactor = ctx.redactor();
    let mut changed = Vec::new();
    let mut cursors = Vec::new();
    let mut writers: BTreeMap<String, bool> = BTreeMap::new();
    for (&thread, &since) in threads {
        let key = format!("comments:{thread}");
        let cursor = store
            .cursor(&key)
            .map_err(|e| ForgeError::Config(e.to_string()))?;
        let comments =
            match gone_is_quiet(client.thread_comments(thread, cursor.etag.as_deref(), ctx.now))? {
                Conditional::NotModified => continue,
                Conditional::Fresh { value, etag } => {
                    cursors.push((key, Cursor { etag, body: None }));
                    value
                }
            };
        // Who can write, asked only for authors whose association does not already say so.
        for c in &comments {
            let listed = comment_trusted(c, &ctx.config.backlog, false);
            if !listed && c.created_at.at_or_after_second(since) && !writers.contains_key(&c.author)
            {
                let can = !c.author.is_empty() && client.can_write(&c.author, ctx.now)?;
                writers.insert(c.author.clone(), can);
            }
        }
        let kept = kept_comments(&comments, since, |c| {
            comment_trusted(
                c,
                &ctx.config.backlog,
                writers.get(&c.author).copied().unwrap_or(false),
            )
        });
        let kept = kept
            .into_iter()
            .map(|c| ThreadComment {
                body: redactor.redact(&c.body),
                ..c
            })
            .collect();
        changed.push((thread, kept));
    }
    Ok(Fetched { changed, cursors })
}

/// An issue deleted, or transferred to another repository (GitHub answers 404, 410 or a 301
/// to elsewhere), says nothing new: what was kept stays, and the task finishes from its spec.
fn gone_is_quiet<T>(
    answer: Result<Conditional<T>, ForgeError>,
) -> Result<Conditional<T>, ForgeError> {
    match answer {
        Err(ForgeError::Http {
            status: 301 | 404 | 410,
            ..
        }) => Ok(Conditional::NotModified),
        other => other,
    }
}

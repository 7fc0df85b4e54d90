//! The repository's comment feed and the replies opentiger posts (issue 17): people's
//! `/opentiger` commands are read from one incremental, conditional, page-bounded listing of
//! every issue and PR comment (`GET /repos/{o}/{r}/issues/comments?sort=updated&since=…`), so a
//! quiet tick spends one 304 on it, whatever the number of threads.
//!
//! Replies and escalation comments carry a hidden marker; the feed shows them back, which is
//! how a tick killed after posting learns that it posted (look before create, without listing
//! each thread). Not for: deciding anything about a command (`engine::commands`).

use http::Method;
use serde::Deserialize;
use serde_json::json;

use super::calls::{encode, RawUser};
use super::github::{ForgeError, GithubClient};
use crate::model::AuthorAssociation;
use crate::time::Timestamp;

#[derive(Deserialize)]
struct RawComment {
    id: u64,
    #[serde(default)]
    body: Option<String>,
    user: Option<RawUser>,
    author_association: AuthorAssociation,
    issue_url: String,
    html_url: String,
    updated_at: String,
}

/// One comment of the feed.
#[derive(Clone, Debug, PartialEq)]
pub struct FeedComment {
    pub id: u64,
    /// The issue or PR it was posted on.
    pub thread: u64,
    pub body: String,
    pub author: String,
    pub association: AuthorAssociation,
    pub html_url: String,
    pub updated_at: Timestamp,
}

/// What one read of the feed gave.
#[derive(Clone, Debug, PartialEq)]
pub enum Feed {
    /// 304: nothing new since the ETag.
    NotModified,
    Fresh {
        comments: Vec<FeedComment>,
        /// The first page's ETag (sent next time while `since` stays).
        etag: Option<String>,
        /// The page to read next time when pages were left for the next tick (the page bound
        /// was hit); `None` when the feed was read to its end.
        rest: Option<String>,
    },
}

impl GithubClient {
    /// Comments updated at or after `since` (all when `None`), oldest update first, at most
    /// `max_pages` pages of 100; conditional on `etag`. `resume` (a page left by the last read)
    /// continues a read cut short instead: many comments may share one second, so `since`
    /// alone could not move past them.
    pub fn comment_feed(
        &self,
        since: Option<Timestamp>,
        resume: Option<&str>,
        etag: Option<&str>,
        max_pages: u32,
        now: Timestamp,
    ) -> Result<Feed, ForgeError> {
        let path = match resume {
            Some(page) => page.to_string(),
            None => {
                let since = since
                    .map(|t| format!("&since={}", encode(&t.to_string())))
                    .unwrap_or_default();
                self.path(&format!(
                    "/issues/comments?sort=updated&direction=asc&per_page=100{since}"
                ))
            }
        };
        let etag = if resume.is_some() { None } else { etag };
        let first = self.send(Method::GET, &path, None, etag, now)?;
        if first.status == 304 {
            return Ok(Feed::NotModified);
        }
        let etag = first.etag.clone();
        let mut comments = parse(&path, first.body)?;
        let mut next = first.next;
        let mut pages = 1;
        while let Some(page) = next.take() {
            if pages >= max_pages.max(1) {
                next = Some(page);
                break;
            }
            let answer = self.send(Method::GET, &page, None, None, now)?;
            comments.extend(parse(&page, answer.body)?);
            next = answer.next;
            pages += 1;
        }
        Ok(Feed::Fresh {
            comments,
            etag,
            rest: next,
        })
    }

    /// Posts a new comment on an issue or PR; returns who posted it (the token's login).
    pub fn post_comment(
        &self,
        thread: u64,
        body: &str,
        now: Timestamp,
    ) -> Result<String, ForgeError> {
        #[derive(Deserialize)]
        struct Created {
            user: Option<RawUser>,
        }
        let created: Created = self.call(
            Method::POST,
            &self.path(&format!("/issues/{thread}/comments")),
            Some(&json!({ "body": body })),
            now,
        )?;
        Ok(created.user.map(|u| u.login).unwrap_or_default())
    }

    /// Replaces a comment's text. `Ok(false)`: the comment is gone (deleted by a person).
    pub fn edit_comment(&self, id: u64, body: &str, now: Timestamp) -> Result<bool, ForgeError> {
        match self.send(
            Method::PATCH,
            &self.path(&format!("/issues/comments/{id}")),
            Some(&json!({ "body": body })),
            None,
            now,
        ) {
            Ok(_) => Ok(true),
            Err(ForgeError::Http { status: 404, .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Whether issue `number` carries `label` (the dashboard issue is found this way).
    pub fn issue_has_label(
        &self,
        number: u64,
        label: &str,
        now: Timestamp,
    ) -> Result<bool, ForgeError> {
        #[derive(Deserialize)]
        struct Label {
            name: String,
        }
        #[derive(Deserialize)]
        struct Raw {
            #[serde(default)]
            labels: Vec<Label>,
        }
        let raw: Raw = self.call(
            Method::GET,
            &self.path(&format!("/issues/{number}")),
            None,
            now,
        )?;
        Ok(raw.labels.iter().any(|l| l.name == label))
    }
}

fn parse(path: &str, body: Option<serde_json::Value>) -> Result<Vec<FeedComment>, ForgeError> {
    let raw: Vec<RawComment> = serde_json::from_value(
        body.unwrap_or(serde_json::Value::Array(Vec::new())),
    )
    .map_err(|e| ForgeError::Http {
        method: "GET".to_string(),
        path: path.to_string(),
        status: 200,
        message: format!("unexpected answer: {e}"),
    })?;
    Ok(raw
        .into_iter()
        .filter_map(|c| {
            let thread = c.issue_url.rsplit('/').next()?.parse().ok()?;
            Some(FeedComment {
                id: c.id,
                thread,
                body: c.body.unwrap_or_default(),
                author: c.user.map(|u| u.login).unwrap_or_default(),
                association: c.author_association,
                html_url: c.html_url,
                updated_at: Timestamp::parse_rfc3339(&c.updated_at).unwrap_or(Timestamp(0)),
            })
        })
        .collect())
}

//! github mode, what opentiger says back to people, after the claim: one reply per command
//! (issue 17), posted once — it carries a marker naming the command's comment, which the feed
//! brings back, so a tick killed after posting does not post again — and who opentiger posts
//! as (the token's login), the only author whose markers are believed.
//!
//! Not for: deciding the reply (`engine::commands`, recorded in the claim phase by
//! `commands.rs`), questions (`tick::escalate`) or research reports (`research.rs`).

use crate::forge::github::GithubClient;
use crate::store::{CommandRecord, Cursor, Store};
use crate::tick::{Context, Failure};

/// The login opentiger's own comments are posted as.
pub(super) const SELF: &str = "self:login";

/// The hidden marker of a reply to command comment `id`.
fn reply_marker(id: u64) -> String {
    format!("<!-- opentiger:reply={id} -->")
}

/// The command comment a reply of ours answers, from its marker.
pub(super) fn replied_to(body: &str) -> Option<u64> {
    let rest = body.split("<!-- opentiger:reply=").nth(1)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Posts each owed reply once. Only after a complete read of the feed (`complete`): then every
/// reply already posted (by a tick killed before it could record it) has been seen and marked.
/// A failure is a warning: the reply stays owed for the next tick.
pub fn post_replies(
    ctx: &Context,
    client: &GithubClient,
    complete: bool,
    owed: &[CommandRecord],
) -> Option<String> {
    let mut poster = None;
    if !complete {
        return poster;
    }
    for command in owed {
        let Some(reply) = &command.reply else {
            continue;
        };
        let body = format!("{reply}\n\n{}", reply_marker(command.comment_id));
        let body = ctx.redactor().redact(&body);
        match client.post_comment(command.thread, &body, ctx.later()) {
            Ok(login) => poster = Some(login),
            Err(e) => tracing::warn!(
                "could not reply to the command of comment {} on #{}: {e}",
                command.comment_id,
                command.thread
            ),
        }
    }
    poster
}

/// Who opentiger posts as, once known (from a comment or the dashboard it posted).
pub fn self_login(store: &Store) -> Result<Option<String>, crate::store::StoreError> {
    Ok(store.cursor(SELF)?.body.filter(|l| !l.is_empty()))
}

/// Remembers who opentiger posts as (the token's login, from a comment it posted): only
/// markers in that login's comments are believed, so nobody can silence a reply or take over
/// a question by pasting a marker. Written only when it changed.
pub fn remember_self(ctx: &Context, login: &str) -> Result<(), Failure> {
    if login.is_empty() {
        return Ok(());
    }
    let known = ctx.read_store()?.cursor(SELF)?.body;
    if known.as_deref() == Some(login) {
        return Ok(());
    }
    ctx.write_state("who opentiger posts as", |store| {
        store.set_cursor(
            SELF,
            &Cursor {
                etag: None,
                body: Some(login.to_string()),
            },
            ctx.now,
        )?;
        Ok(())
    })
}

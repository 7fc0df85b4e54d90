//! github mode: what people say on GitHub, read and acted on — one concern, one door for the
//! tick's phases. Their `/opentiger` comments, the boxes they tick, their comments and reviews
//! on a task's threads and their last word on a merge are read here, acted on by the engine's
//! rules, and answered here.
//!
//! The door, by phase:
//! - **Observe** (GETs only, nothing locked): [`read_feed`], the repository's comment feed —
//!   new commands with their author's right to command, and opentiger's own replies,
//!   questions and research reports seen back; [`followed`], [`read_threads`] and
//!   [`read_reviews`], the trusted comments and reviews of the threads tasks follow (a later
//!   round reads the reviews again, `super::rounds`).
//! - **Claim** (under the lock, in the claim phase's state write): [`apply`], everything the
//!   feed and the dashboard brought — each new command decided and applied once, the ticked
//!   boxes of the dashboard and of research reports. [`LastWordCheck::read`] takes what people
//!   said about a PR under review into the claim.
//! - **After the claim**: [`post_replies`], each owed reply once; [`remember_self`], who
//!   opentiger posts as (only that login's markers are believed); before a merge,
//!   [`LastWordCheck::look`], the last look at the PR's reviews and labels.
//! - **After the record**: [`post_reports`] (and [`post_after_work`] for `work` and `apply`),
//!   each issue's research report as one comment whose boxes people tick.
//!
//! Inside, bottom up: `threads` and `replies` need nothing here; `effects` (a decided command
//! made real, all or nothing) serves `commands` and `boxes` alike, so a box and a comment follow
//! one rule; `feed` reads what `commands` then acts on; `last_word` and `research` stand apart.
//!
//! Not for: the rules (`engine::commands`, `engine::checkboxes`, `engine::objection`,
//! `engine::research`), the state's keys (`store`: holds, the replan request, the open-PR list),
//! the questions opentiger asks (`super::escalate`) or the plan comment (`super::plan_thread`),
//! whose markers the feed reads.

mod boxes;
mod commands;
mod effects;
mod feed;
mod last_word;
mod replies;
mod research;
mod threads;

pub use feed::{read as read_feed, CommandFeed};
pub use last_word::LastWordCheck;
pub use replies::{post_replies, remember_self, self_login};
pub use research::{post_after_work, post_reports};
pub use threads::{fetch as read_threads, fetch_reviews as read_reviews, followed, Fetched};

use crate::model::Issue;
use crate::store::{Store, Writer};
use crate::tick::{Context, Failure};

/// Acts on what people said that the observe step brought, inside the claim phase's state
/// write (re-run on fresh state if the save loses a race: what the winner recorded is skipped):
/// the feed (its cursors, replies and questions seen, each new command), the ticked boxes of
/// research reports (when commands are on) and of opentiger's own `dashboard`. `issues` are the
/// backlog issues as this tick read them. Returns report lines.
pub fn apply(
    ctx: &Context,
    store: &mut Store,
    feed: &CommandFeed,
    dashboard: Option<&Issue>,
    issues: &[Issue],
    writer: Writer<'_>,
) -> Result<Vec<String>, Failure> {
    let mut lines = commands::apply(feed, ctx, store, issues, writer)?;
    if ctx.config.commands.enabled {
        lines.extend(boxes::report_boxes(
            ctx,
            store,
            &feed.reports,
            issues,
            writer,
        )?);
    }
    if let Some(dashboard) = dashboard {
        lines.extend(boxes::dashboard_boxes(
            ctx, store, dashboard, issues, writer,
        )?);
    }
    Ok(lines)
}

//! github mode, issue 26: people have the last word on a merge. The shell side of
//! `engine::objection`: what the state says people said about a PR — the `/opentiger hold`s in
//! force (`Store::holds`, set by the command), its labels (from the cached open-PR list), the
//! trusted reviews — read in the claim phase, and the last look at its reviews and labels just
//! before the judge merges it: the reviews conditionally, on the ETag the observe step stored,
//! so an unchanged list costs a 304.
//!
//! Not for: deciding (the engine does), or storing what the last look read (the next observe
//! step reads the same changed list and stores it, inside the claim phase).

use std::collections::BTreeMap;

use crate::engine::objection::{last_word, LastWord, PeopleSay};
use crate::forge::github::{Conditional, ForgeError, GithubClient};
use crate::model::{PullReview, Task, TaskKind};
use crate::store::Store;
use crate::tick::{Context, Failure};
use crate::time::Timestamp;

/// What the judge looks at again just before merging a task's PR, read from the state in the
/// claim phase.
#[derive(Clone, Debug)]
pub struct LastWordCheck {
    pr: u64,
    /// The reviews cursor's ETag, and the trusted reviews it stands for.
    etag: Option<String>,
    reviews: Vec<PullReview>,
    labels: Vec<String>,
    held_by: Option<String>,
    /// When the change's newest AutoFix was made.
    fixed_at: Option<Timestamp>,
}

impl LastWordCheck {
    pub fn read(store: &Store, task: &Task, pr: u64) -> Result<LastWordCheck, Failure> {
        let holds = store.holds()?;
        let held_by = holds
            .get(&pr)
            .or_else(|| task.issue_number.and_then(|n| holds.get(&n)))
            .cloned();
        let root = match (task.kind, &task.parent_task_id) {
            (TaskKind::Autofix, Some(parent)) => parent.clone(),
            _ => task.id.clone(),
        };
        let fixed_at = store
            .list_tasks(&crate::store::TaskFilter::default())?
            .iter()
            .filter(|t| t.kind == TaskKind::Autofix)
            .filter(|t| t.id == task.id || t.parent_task_id.as_ref() == Some(&root))
            .map(|t| t.created_at)
            .max();
        Ok(LastWordCheck {
            pr,
            etag: store.cursor(&format!("reviews:{pr}"))?.etag,
            reviews: store.pull_reviews(&[pr])?,
            labels: store.open_pull_labels()?.remove(&pr).unwrap_or_default(),
            held_by,
            fixed_at,
        })
    }

    fn decide(
        &self,
        ctx: &Context,
        head: &str,
        reviews: &[PullReview],
        labels: &[String],
    ) -> LastWord {
        last_word(
            &PeopleSay {
                head,
                reviews,
                labels,
                held_by: self.held_by.as_deref(),
                fixed_at: self.fixed_at,
            },
            &ctx.config.merge,
        )
    }

    /// Trusted people who approved `head`, as the state knows it.
    pub fn approved_by(&self, ctx: &Context, head: &str) -> Vec<String> {
        match self.decide(ctx, head, &self.reviews, &self.labels) {
            LastWord::Clear { approved_by } => approved_by,
            LastWord::Fix { .. } | LastWord::Held(_) => Vec::new(),
        }
    }

    /// The last look, just before `head` is merged: the reviews again (conditionally) and the
    /// PR's labels (one GET of the PR).
    pub fn look(
        &self,
        ctx: &Context,
        client: &GithubClient,
        head: &str,
    ) -> Result<LastWord, ForgeError> {
        let now = ctx.later();
        let reviews = match client.pull_reviews(self.pr, self.etag.as_deref(), now)? {
            Conditional::NotModified => self.reviews.clone(),
            Conditional::Fresh { value, .. } => {
                super::threads::trusted_reviews(ctx, client, value, &mut BTreeMap::new())?
            }
        };
        let labels = client.pull(self.pr, now)?.labels;
        Ok(self.decide(ctx, head, &reviews, &labels))
    }
}

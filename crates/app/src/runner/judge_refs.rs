//! The refs a review reads and keeps in the runner's repository: whether the task's change is
//! on the base already (an earlier review's merge whose outcome was never recorded), whether
//! the run's head was never published, and the trial merge kept under a ref of ours while it
//! is reviewed.
//!
//! Not here: the review itself and the merge (`judge.rs`, `judge_merge.rs`).

use crate::git::{Git, GitError};
use crate::model::{Run, RunId, Task};
use crate::workspace::Branches;

/// Whether the run's head is on the local task branch and the remote lacks the branch.
pub(super) fn unpublished(
    repo: &Git,
    branches: &Branches,
    branch: &str,
    run: &Run,
) -> Result<bool, GitError> {
    let local = repo.resolve(&format!("refs/heads/{branch}"))?;
    Ok(branches.remote.is_some() && local.is_some() && local == run.head_sha)
}

/// The commit that put this task's change on the base, if there is one.
pub(super) fn merged_before(
    repo: &Git,
    base_ref: &str,
    task: &Task,
) -> Result<Option<String>, GitError> {
    let marker = format!("Task: {}", task.id);
    let found = repo.run(&[
        "log",
        "-F",
        "--grep",
        &marker,
        "--format=%H",
        "-1",
        base_ref,
    ])?;
    Ok(Some(found.trim().to_string()).filter(|c| !c.is_empty()))
}

/// The trial merge of a review, kept under `refs/opentiger/review/<run>` while it is reviewed:
/// a commit no branch holds, which a person's `git gc --prune=now` would otherwise take (with
/// its trees) from under the review and the merge after it. The ref goes when this drops; one
/// a killed tick left is set again by the run's next review, keyed by its id.
pub(super) struct KeptMerge<'a> {
    repo: &'a Git,
    reference: String,
}

impl<'a> KeptMerge<'a> {
    pub(super) fn keep(repo: &'a Git, run: &RunId, commit: &str) -> Result<Self, GitError> {
        let reference = format!("refs/opentiger/review/{run}");
        repo.run(&["update-ref", &reference, commit])?;
        Ok(KeptMerge { repo, reference })
    }
}

impl Drop for KeptMerge<'_> {
    fn drop(&mut self) {
        if let Err(e) = self.repo.run(&["update-ref", "-d", &self.reference]) {
            tracing::warn!("could not remove {}: {e}", self.reference);
        }
    }
}

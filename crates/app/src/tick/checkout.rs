//! local-git mode, a person's checkout (issue 49): which tasks awaiting the judge would, merged
//! now, overwrite a person's uncommitted files in the checked-out base branch. Observed before
//! planning, read-only (git `status` without optional locks, and diffs): the plan holds such a
//! review without spending it, and `status` names the files and the step.
//!
//! Not for: the merge's own last look, which stays (`runner::judge`, right before the base
//! moves), or the rule (`engine::recovery::review`, `engine::waits`).

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::Config;
use crate::engine::Snapshot;
use crate::git::Git;
use crate::model::{BlockReason, Mode, RunStatus, TaskId, TaskState};
use crate::workspace::Branches;

/// The tasks of `snapshot` awaiting the judge whose change touches files a person has changed
/// (or left untracked) in the base checked out in `repo`, with those files. Empty elsewhere,
/// and when git cannot tell (the judge looks again before it merges).
pub fn holds(repo: &Path, config: &Config, snapshot: &Snapshot) -> BTreeMap<TaskId, Vec<String>> {
    if config.mode != Mode::LocalGit {
        return BTreeMap::new();
    }
    // Each waiting task's newest head that succeeded.
    let heads: Vec<(TaskId, String)> = snapshot
        .tasks
        .iter()
        .filter(|t| t.state() == TaskState::blocked(BlockReason::AwaitingJudge))
        .filter_map(|t| {
            let run = snapshot
                .runs
                .iter()
                .filter(|r| r.task_id == t.id && r.status == RunStatus::Success)
                .max_by_key(|r| r.started_at)?;
            Some((t.id.clone(), run.head_sha.clone()?))
        })
        .collect();
    if heads.is_empty() {
        return BTreeMap::new();
    }
    let git = Git::new(repo);
    let Ok(Some(base)) = git.resolve(&format!("refs/heads/{}", config.base_branch)) else {
        return BTreeMap::new();
    };
    let branches = Branches::new(&git, &config.remote);
    heads
        .into_iter()
        .filter_map(|(task, head)| {
            // What moving the base to the head would overwrite, of what the task's side changed
            // since the two parted: what the merge would write.
            let mut files = branches
                .in_the_way(&config.base_branch, &base, &head)
                .ok()?;
            if files.is_empty() {
                return None;
            }
            let theirs = git
                .run_bytes(&[
                    "diff",
                    "--name-only",
                    "-z",
                    "--no-renames",
                    &format!("{base}...{head}"),
                ])
                .ok()?;
            let theirs: Vec<&[u8]> = theirs.split(|b| *b == 0).collect();
            files.retain(|f| theirs.contains(&f.as_bytes()));
            (!files.is_empty()).then_some((task, files))
        })
        .collect()
}

//! local-git mode, a person's checkout (issue 49): which tasks awaiting the judge would, merged
//! now, overwrite a person's uncommitted files in the checked-out base branch. Observed before
//! planning, read-only (git `status` without optional locks, and diffs): the plan holds such a
//! review without spending it, and `status` names the files and the step.
//!
//! Not for: the merge's own last look, which stays (`runner::judge`, right before the base
//! moves), or the rule (`engine::recovery::review`, `engine::waits`).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::config::Config;
use crate::engine::Snapshot;
use crate::git::Git;
use crate::model::{BlockReason, Mode, RunStatus, TaskId, TaskState};

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
    let Some(dirty) = dirty_base(&git, config) else {
        return BTreeMap::new();
    };
    let Ok(Some(base)) = git.resolve(&format!("refs/heads/{}", config.base_branch)) else {
        return BTreeMap::new();
    };
    heads
        .into_iter()
        .filter_map(|(task, head)| {
            let files = in_the_way(&git, &base, &head, &dirty)?;
            (!files.is_empty()).then_some((task, files))
        })
        .collect()
}

/// The files changed or untracked in the work tree, when it has the base checked out and no
/// remote takes the merges instead; `None` otherwise or when nothing is changed.
fn dirty_base(git: &Git, config: &Config) -> Option<BTreeSet<String>> {
    let branches = crate::workspace::Branches::new(git, &config.remote);
    if branches.remote.is_some() {
        return None;
    }
    let head = git.try_run(&["symbolic-ref", "-q", "HEAD"]).ok()??;
    if head != format!("refs/heads/{}", config.base_branch) {
        return None;
    }
    if git
        .try_run(&["rev-parse", "--is-bare-repository"])
        .ok()?
        .as_deref()
        == Some("true")
    {
        return None;
    }
    let out = git
        .run_bytes(&[
            "--no-optional-locks",
            "status",
            "--porcelain",
            "-z",
            "--no-renames",
            "--untracked-files=all",
        ])
        .ok()?;
    let dirty: BTreeSet<String> = names(&out)
        .into_iter()
        .filter_map(|entry| entry.get(3..).map(str::to_string))
        .collect();
    (!dirty.is_empty()).then_some(dirty)
}

/// Of the `dirty` files, those merging `head` into `base` would change: changed on the task's
/// side since the two parted, and different from the base's.
fn in_the_way(git: &Git, base: &str, head: &str, dirty: &BTreeSet<String>) -> Option<Vec<String>> {
    let theirs = format!("{base}...{head}");
    let changed = names(
        &git.run_bytes(&["diff", "--name-only", "-z", "--no-renames", &theirs])
            .ok()?,
    );
    let touched: Vec<&str> = changed
        .iter()
        .map(String::as_str)
        .filter(|p| dirty.contains(*p))
        .collect();
    if touched.is_empty() {
        return Some(Vec::new());
    }
    let mut args = vec![
        "--literal-pathspecs",
        "diff",
        "--name-only",
        "-z",
        "--no-renames",
        base,
        head,
        "--",
    ];
    args.extend(touched);
    Some(names(&git.run_bytes(&args).ok()?))
}

fn names(out: &[u8]) -> Vec<String> {
    out.split(|b| *b == 0)
        .filter(|p| !p.is_empty())
        .map(|p| String::from_utf8_lossy(p).into_owned())
        .collect()
}

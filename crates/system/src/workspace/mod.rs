//! A run's workspace: a folder of its own under the run's private folder, never a path of the
//! runner's repository (issue 35).
//!
//! The runner writes the files of a commit (or a tree) into `<run>/work` itself, from its own
//! repository's objects (`fill.rs`), and gives the agent a git repository there that it owns
//! wholly: a `.git` folder holding its branch, an index, and the runner's objects borrowed
//! read-only through `objects/info/alternates`. Agent CLIs find the repository they expect
//! (aider commits, codex looks for one); whatever the agent does to that `.git` — its config,
//! hooks, attributes, a `gitdir:` or `commondir` pointing elsewhere — no git of the runner's
//! ever reads it.
//!
//! The agent's result is taken as data (`import.rs`): the files are compared with what was
//! written (their `lstat`, never following a link), what changed is read by the runner itself
//! and written as blobs by the runner's git (names never pass through a line protocol), new
//! files are found with a private index of the runner's (in a folder no agent can write), and
//! the trees on the changed paths are written again. No git command of the runner's runs with
//! the workspace's git dir, config, attributes, hooks or index; nothing of the runner's
//! repository is snapshotted and put back, so a person's commits, branches, tags, stashes and
//! fetches during a run are never touched. The runner commits the tree itself
//! (`commit-tree`, then `update-ref` of the task branch from its start: a compare-and-swap).
//!
//! The run's folder (`scratch::PrivateDir`) goes when the workspace is dropped, with
//! `scratch::remove_tree`, which no tree an agent made can defeat.
//!
//! Not here: where a run's commit goes (`branches.rs`), what a change may hold
//! (`runner::checks`), the agent's sandbox (`runner`, `sandbox`).

mod blobs;
mod branches;
mod fill;
mod import;
mod look;
mod read;
mod trees;

use std::path::{Path, PathBuf};

use crate::git::{parse_numstat_z, Git, GitError, NumstatEntry};
pub use crate::model::task_branch;
use crate::scratch::PrivateDir;
pub use branches::Branches;
use fill::Tracked;
pub use import::{ImportError, Imported, LinkEntry, SizeLimits};

/// Where the next run of a task starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextStart {
    /// From the base as it is then: the task's branch does not exist, or holds no commit that
    /// the base does not have.
    Base,
    /// From the task's branch, which holds this many commits of earlier work (WIP kept).
    Branch { commits: u32 },
}

/// Where the next run on `branch` starts, given `base` (a branch or ref).
pub fn next_start(repo: &Git, branch: &str, base: &str) -> Result<NextStart, GitError> {
    if !repo.branch_exists(branch)? || repo.resolve(base)?.is_none() {
        return Ok(NextStart::Base);
    }
    let count = repo.run(&[
        "rev-list",
        "--count",
        &format!("{base}..refs/heads/{branch}"),
    ])?;
    match count.trim().parse::<u32>() {
        Ok(0) | Err(_) => Ok(NextStart::Base),
        Ok(commits) => Ok(NextStart::Branch { commits }),
    }
}

/// Sets the runner's task branch where the next run starts — at `tip` when given (the branch
/// as published), else where it is, else created from `base` — and returns that commit.
pub fn start_branch(
    repo: &Git,
    branch: &str,
    base: &str,
    tip: Option<&str>,
) -> Result<String, GitError> {
    if let Some(tip) = tip {
        repo.run(&["branch", "-f", branch, tip])?;
    } else if next_start(repo, branch, base)? == NextStart::Base {
        // No commit of its own (a run that failed before committing, e.g. on setup): start
        // again from the base, so what was merged meanwhile (the fix) is there.
        let at = repo
            .resolve(base)?
            .ok_or_else(|| repo.failure(&["rev-parse", base], format!("{base} does not exist")))?;
        repo.run(&["update-ref", &format!("refs/heads/{branch}"), &at])?;
    }
    repo.resolve(&format!("refs/heads/{branch}"))?
        .ok_or_else(|| repo.failure(&["rev-parse", branch], "the task branch is missing"))
}

/// A file the change adds, changes or deletes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub path: String,
    /// The mode and blob after the change; `None`: deleted.
    pub after: Option<(String, String)>,
    /// Its size in bytes as `lstat` gave it (0 when deleted).
    pub size: u64,
}

/// What a workspace starts from.
#[derive(Clone, Copy, Debug)]
pub struct Start<'a> {
    /// The commit the agent's repository has checked out (its `HEAD`).
    pub commit: &'a str,
    /// The tree whose files are written, when not the commit's own (a merge with conflicts
    /// marked, a direct run's working state).
    pub files: Option<&'a str>,
    /// The branch the agent's `HEAD` names (the task branch), or detached.
    pub branch: Option<&'a str>,
}

/// A run's workspace (see the module doc).
pub struct Workspace {
    /// The agent's work tree.
    pub path: PathBuf,
    /// The task branch the runner commits to (empty when detached).
    pub branch: String,
    /// The commit the workspace started from.
    pub start: String,
    /// The tree the files were written from: what [`Workspace::import`] compares against.
    pub base_tree: String,
    tracked: Vec<Tracked>,
    /// `(path, tree id)` of every folder of the base tree.
    folders: Vec<(String, String)>,
    repo: Git,
    /// The run's folder, the agent's to write: `work/` (the work tree) and `tmp/`.
    run: PrivateDir,
    /// The runner's own folder for this workspace (the indexes of the import): no agent
    /// writes it.
    own: PrivateDir,
}

impl Workspace {
    /// Checks out `branch` in a new workspace: at `tip` when given (the branch as published),
    /// else where it is, else created from `base`.
    pub fn open(
        repo: &Git,
        branch: &str,
        base: &str,
        tip: Option<&str>,
    ) -> Result<Workspace, GitError> {
        let start = start_branch(repo, branch, base, tip)?;
        Workspace::create(
            repo,
            "run",
            Start {
                commit: &start,
                files: None,
                branch: Some(branch),
            },
        )
    }

    /// A workspace at `commit` without a branch: nothing done in it moves a ref.
    pub fn open_detached(repo: &Git, purpose: &str, commit: &str) -> Result<Workspace, GitError> {
        Workspace::create(
            repo,
            purpose,
            Start {
                commit,
                files: None,
                branch: None,
            },
        )
    }

    /// A new workspace of the repository `repo` in a private folder named after `purpose`.
    pub fn create(repo: &Git, purpose: &str, start: Start<'_>) -> Result<Workspace, GitError> {
        let io =
            |what: &str, e: std::io::Error| repo.failure(&[], format!("could not {what}: {e}"));
        let run = crate::scratch::private_dir(purpose).map_err(|e| io("make the run folder", e))?;
        let own = crate::scratch::private_dir(&format!("{purpose}-own"))
            .map_err(|e| io("make the runner's folder", e))?;
        let path = run.path().join("work");
        let tmp = run.path().join("tmp");
        for dir in [&path, &tmp] {
            std::os::unix::fs::DirBuilderExt::mode(&mut std::fs::DirBuilder::new(), 0o700)
                .create(dir)
                .map_err(|e| io("make the workspace", e))?;
        }
        let tree_of = |rev: &str| repo.run(&["rev-parse", "--verify", &format!("{rev}^{{tree}}")]);
        let base_tree = tree_of(start.files.unwrap_or(start.commit))?;
        let filled = fill::write_tree(repo, &base_tree, &path)?;
        let index = own.path().join("index");
        repo.with_env("GIT_INDEX_FILE", &index.display().to_string())
            .run(&["read-tree", &base_tree])?;
        fill::agent_repository(repo, &path, &index, start)?;
        crate::reaper::sweep();
        Ok(Workspace {
            path,
            branch: start.branch.unwrap_or_default().to_string(),
            start: start.commit.to_string(),
            base_tree,
            tracked: filled.files,
            folders: filled.folders,
            repo: repo.clone(),
            run,
            own,
        })
    }

    /// The run's scratch folder (the agent's `TMPDIR`, its result file and home): beside the
    /// work tree, in the run's folder.
    pub fn scratch(&self) -> PathBuf {
        self.run.path().join("tmp")
    }

    /// The run's folder: the work tree and the scratch folder, all an agent that works in the
    /// workspace may write.
    pub fn run_folder(&self) -> &Path {
        self.run.path()
    }

    /// The runner's repository (where commits, trees and blobs of this workspace go).
    pub fn repo(&self) -> &Git {
        &self.repo
    }

    /// What the agent left in the work tree, as a tree of the runner's repository (see the
    /// module doc). Empty when nothing changed.
    pub fn import(&self, limits: SizeLimits) -> Result<Imported, ImportError> {
        let imported = import::import(self, &self.tracked, self.own.path(), limits);
        crate::reaper::sweep();
        imported
    }

    /// Commits `tree` on the task branch with the workspace's start as parent (and `also`, for
    /// a merge), moving the branch only from the start (a compare-and-swap); the new head.
    pub fn commit(
        &self,
        tree: &str,
        also: Option<&str>,
        subject: &str,
        body: &str,
    ) -> Result<String, GitError> {
        let message = format!("{subject}\n\n{body}");
        let mut args = vec!["commit-tree", tree, "-p", self.start.as_str()];
        if let Some(other) = also {
            args.extend(["-p", other]);
        }
        args.extend(["-m", &message]);
        let head = self.repo.run(&args)?;
        if !self.branch.is_empty() {
            self.repo.run(&[
                "update-ref",
                &format!("refs/heads/{}", self.branch),
                &head,
                &self.start,
            ])?;
        }
        Ok(head)
    }
}

/// The unified diff between two commits, cut to `max_bytes` (for the judge's prompt).
pub fn diff_text(git: &Git, from: &str, to: &str, max_bytes: usize) -> Result<String, GitError> {
    let mut text = git.run(&[
        "diff",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--stat",
        "--patch",
        from,
        to,
    ])?;
    if text.len() > max_bytes {
        let mut cut = max_bytes;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n… (diff cut here)");
    }
    Ok(text)
}

/// Files changed between two commits (or trees) with line counts.
pub fn changed_files(git: &Git, from: &str, to: &str) -> Result<Vec<NumstatEntry>, GitError> {
    let out = git.run(&[
        "diff-tree",
        "-r",
        "--numstat",
        "-z",
        "--no-renames",
        "--no-textconv",
        from,
        to,
    ])?;
    Ok(parse_numstat_z(&out))
}

/// The size of each file the commits between `from` and `to` write (every blob `to` brings
/// that `from` lacks, named by the first path it is at), as git stores it: from the object
/// headers, no content is read.
pub fn sizes_between(git: &Git, from: &str, to: &str) -> Result<Vec<(String, u64)>, GitError> {
    import::sizes_between(git, from, to)
}

/// The submodules (gitlinks) a change between `from` and `to` adds or points elsewhere, read
/// from the trees: a run never changes one (its workspace's import cannot make one).
pub fn gitlinks_between(git: &Git, from: &str, to: &str) -> Result<Vec<String>, GitError> {
    import::gitlinks_between(git, from, to)
}

/// The symbolic links a change between `from` and `to` adds or changes, each with its target
/// and where it leads in `to` (`None`: out of the tree), read from the objects, never from a
/// work tree.
pub fn links_between(git: &Git, from: &str, to: &str) -> Result<Vec<LinkEntry>, GitError> {
    import::links_between(git, from, to)
}

/// The commit (or a new merge commit, with `message`) holding `head` merged with `base`, made
/// in the runner's repository without a work tree (`git merge-tree`), or the files that
/// conflict.
pub fn merge_with(git: &Git, head: &str, base: &str, message: &str) -> Result<Merge, GitError> {
    if git
        .try_run(&["merge-base", "--is-ancestor", base, head])?
        .is_some()
    {
        return Ok(Merge::Clean {
            commit: head.to_string(),
        });
    }
    let out = git.try_run_output(&[
        "merge-tree",
        "--write-tree",
        "-z",
        "--name-only",
        head,
        base,
    ])?;
    let mut fields = out.stdout.split('\0');
    let tree = fields.next().unwrap_or_default().trim().to_string();
    match out.code {
        Some(0) => {
            let commit = git.run(&["commit-tree", &tree, "-p", head, "-p", base, "-m", message])?;
            Ok(Merge::Clean { commit })
        }
        Some(1) => {
            // Conflicted file names follow the tree, then an empty field, then messages.
            let mut files: Vec<String> = fields
                .take_while(|f| !f.is_empty())
                .map(str::to_string)
                .collect();
            files.dedup();
            Ok(Merge::Conflict { tree, files })
        }
        _ => Err(git.failure(
            &["merge-tree", "--write-tree", head, base],
            out.stderr.trim().to_string(),
        )),
    }
}

/// How a branch merges with its base.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Merge {
    /// The branch already holds the base, or a merge commit holding both.
    Clean { commit: String },
    /// The files that conflict, and the tree with their conflicts marked in them.
    Conflict { tree: String, files: Vec<String> },
}

#[cfg(test)]
mod tests;

//! Worktrees: one isolated checkout per run, on the task's branch, under the repository's
//! `.git/opentiger/worktrees/` (outside the working tree, so nothing shows up in `git status`).
//!
//! A killed tick leaves its worktree behind; the next `open` of the same branch, or
//! [`remove_leftovers`], removes it. Changes are staged and committed here by the runner, never by
//! the agent.

use std::path::{Path, PathBuf};

use crate::git::{parse_numstat_z, Git, GitError, NumstatEntry};
use crate::model::{Task, TaskKind};

/// The branch a task's work lives on. AutoFix children work on their source's branch and PR
/// (DESIGN §8: the PR is updated in place, not replaced).
pub fn task_branch(task: &Task) -> String {
    let owner = match (task.kind, &task.parent_task_id) {
        (TaskKind::Autofix | TaskKind::AutofixConflict, Some(parent)) => parent.short().to_string(),
        (
            TaskKind::Feature
            | TaskKind::Autofix
            | TaskKind::AutofixConflict
            | TaskKind::Recreate
            | TaskKind::Rework
            | TaskKind::PrReview
            | TaskKind::Docs,
            _,
        ) => task.id.short().to_string(),
    };
    format!("opentiger/task-{owner}")
}

/// Where worktrees of this repository live.
pub fn worktree_root(repo: &Git) -> Result<PathBuf, GitError> {
    Ok(repo.common_dir()?.join("opentiger").join("worktrees"))
}

/// An open worktree.
pub struct Workspace {
    pub path: PathBuf,
    pub branch: String,
    /// The commit the worktree started from.
    pub start: String,
    git: Git,
    repo: Git,
}

impl Workspace {
    /// Checks out `branch` in a fresh worktree, creating the branch from `base` when it does not
    /// exist yet. A leftover worktree of the same branch is removed first.
    pub fn open(repo: &Git, branch: &str, base: &str) -> Result<Workspace, GitError> {
        let root = worktree_root(repo)?;
        std::fs::create_dir_all(&root)
            .map_err(|e| io_error(repo, "create the worktree folder", e))?;
        let path = root.join(branch.replace('/', "__"));
        remove_worktree(repo, &path)?;
        let path_text = path.display().to_string();
        if repo.branch_exists(branch)? {
            repo.run(&["worktree", "add", "--force", &path_text, branch])?;
        } else {
            repo.run(&["worktree", "add", "--force", "-b", branch, &path_text, base])?;
        }
        let git = Git::new(&path);
        let start = git.run(&["rev-parse", "HEAD"])?;
        Ok(Workspace {
            path,
            branch: branch.to_string(),
            start,
            git,
            repo: repo.clone(),
        })
    }

    /// A worktree at `commit` without a branch: what happens in it moves no ref (the judge's
    /// trial merge with the base).
    pub fn open_detached(repo: &Git, name: &str, commit: &str) -> Result<Workspace, GitError> {
        let root = worktree_root(repo)?;
        std::fs::create_dir_all(&root)
            .map_err(|e| io_error(repo, "create the worktree folder", e))?;
        let path = root.join(format!("review__{}", name.replace('/', "__")));
        remove_worktree(repo, &path)?;
        repo.run(&[
            "worktree",
            "add",
            "--force",
            "--detach",
            &path.display().to_string(),
            commit,
        ])?;
        Ok(Workspace {
            git: Git::new(&path),
            path,
            branch: String::new(),
            start: commit.to_string(),
            repo: repo.clone(),
        })
    }

    pub fn git(&self) -> &Git {
        &self.git
    }

    /// Stages everything the agent changed (ignored files stay out) and lists it against the
    /// commit the worktree started from.
    pub fn stage_changes(&self) -> Result<Vec<NumstatEntry>, GitError> {
        self.git.run(&["add", "-A"])?;
        let out = self.git.run(&[
            "diff",
            "--cached",
            "--numstat",
            "-z",
            "--no-renames",
            "HEAD",
        ])?;
        Ok(parse_numstat_z(&out))
    }

    /// Commits what is staged; returns the new head.
    pub fn commit(&self, subject: &str, body: &str) -> Result<String, GitError> {
        self.git
            .run(&["commit", "--no-verify", "-q", "-m", subject, "-m", body])?;
        self.git.run(&["rev-parse", "HEAD"])
    }

    pub fn head(&self) -> Result<String, GitError> {
        self.git.run(&["rev-parse", "HEAD"])
    }

    /// Removes the worktree (the branch stays).
    pub fn close(self) -> Result<(), GitError> {
        remove_worktree(&self.repo, &self.path)
    }
}

fn io_error(repo: &Git, what: &str, e: std::io::Error) -> GitError {
    GitError {
        dir: repo.dir().display().to_string(),
        args: String::new(),
        code: None,
        detail: format!("could not {what}: {e}"),
    }
}

fn remove_worktree(repo: &Git, path: &Path) -> Result<(), GitError> {
    if path.exists() {
        let text = path.display().to_string();
        if repo
            .try_run(&["worktree", "remove", "--force", "--force", &text])?
            .is_none()
        {
            std::fs::remove_dir_all(path)
                .map_err(|e| io_error(repo, "remove a leftover worktree", e))?;
        }
    }
    repo.run(&["worktree", "prune"])?;
    Ok(())
}

/// Removes every worktree under our folder that no current run uses (left by killed ticks).
pub fn remove_leftovers(repo: &Git, in_use: &[PathBuf]) -> Result<Vec<PathBuf>, GitError> {
    let root = worktree_root(repo)?;
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Ok(removed);
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() && !in_use.contains(&path) {
            remove_worktree(repo, &path)?;
            removed.push(path);
        }
    }
    Ok(removed)
}

/// The unified diff between two commits, cut to `max_bytes` (for the judge's prompt).
pub fn diff_text(git: &Git, from: &str, to: &str, max_bytes: usize) -> Result<String, GitError> {
    let mut text = git.run(&["diff", "--no-color", "--stat", "--patch", from, to])?;
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

/// Files changed between two commits with line counts.
pub fn changed_files(git: &Git, from: &str, to: &str) -> Result<Vec<NumstatEntry>, GitError> {
    let out = git.run(&["diff", "--numstat", "-z", "--no-renames", from, to])?;
    Ok(parse_numstat_z(&out))
}

//! Worktrees: one isolated checkout per run, on the task's branch, in a private folder of the
//! temp folder named after the repository (outside the working tree, so nothing shows up in
//! `git status`).
//!
//! Not under `.git/`: claude (2.1.197) refuses every write to a path with a `.git` folder in it,
//! whatever `--permission-mode` and `--allowedTools` say, and reports the refusal only in its
//! result's `permission_denials` — a worker could never change a file (issue 18, seen with the
//! real CLI against the stand-in model server of `tests/real_agent_sessions.rs`).
//!
//! A killed tick leaves its worktree behind; the next `open` of the same branch, or
//! [`remove_leftovers`], removes it. Changes are staged and committed here by the runner, never by
//! the agent.

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::git::{parse_numstat_z, Git, GitError, NumstatEntry};
pub use crate::model::task_branch;

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

/// Where worktrees of this repository live: `<temp>/opentiger.worktrees.<hash of its git
/// folder>`.
pub fn worktree_root(repo: &Git) -> Result<PathBuf, GitError> {
    let common = repo.common_dir()?;
    let common = common.canonicalize().unwrap_or(common);
    Ok(std::env::temp_dir().join(root_name(&common)))
}

fn root_name(common_dir: &Path) -> String {
    let digest = Sha256::digest(common_dir.as_os_str().as_encoded_bytes());
    let hash: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
    format!("opentiger.worktrees.{hash}")
}

/// [`worktree_root`], created with mode 0700 when missing; refused unless it is a folder (not a
/// link) of this user, made private again when it is not (a concurrent tick's `close` may remove
/// it just before `git worktree add` recreates it with the umask's mode). The temp folder is
/// shared: another user's folder, or a link, is never used.
fn private_root(repo: &Git) -> Result<PathBuf, GitError> {
    let root = worktree_root(repo)?;
    match std::fs::DirBuilder::new().mode(0o700).create(&root) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => {
            return Err(io_error(repo, "create the worktree folder", e));
        }
        _ => {}
    }
    let meta = std::fs::symlink_metadata(&root)
        .map_err(|e| io_error(repo, "read the worktree folder", e))?;
    if !meta.is_dir() || meta.uid() != crate::scratch::uid() {
        let why = std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!("{} is not a folder of this user; remove it", root.display()),
        );
        return Err(io_error(repo, "use the worktree folder", why));
    }
    if meta.permissions().mode() & 0o077 != 0 {
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o700))
            .map_err(|e| io_error(repo, "make the worktree folder private", e))?;
    }
    Ok(root)
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
    /// Checks out `branch` in a fresh worktree: at `tip` when given (the branch as published),
    /// else where it is, else created from `base`. A leftover worktree of it is removed first.
    pub fn open(
        repo: &Git,
        branch: &str,
        base: &str,
        tip: Option<&str>,
    ) -> Result<Workspace, GitError> {
        let root = private_root(repo)?;
        let path = root.join(branch.replace('/', "__"));
        remove_worktree(repo, &path)?;
        let path_text = path.display().to_string();
        if let Some(tip) = tip {
            repo.run(&["branch", "-f", branch, tip])?;
        } else if next_start(repo, branch, base)? == NextStart::Base {
            // No commit of its own (a run that failed before committing, e.g. on setup): start
            // again from the base, so what was merged meanwhile (the fix) is there.
            repo.run(&["branch", "-f", branch, base])?;
        }
        if repo.branch_exists(branch)? {
            repo.run(&["worktree", "add", "--force", &path_text, branch])?;
        } else {
            // No upstream: the runner writes nothing into the repository's configuration, which
            // is compared around every agent run (`sandbox::gitconfig`).
            repo.run(&[
                "worktree",
                "add",
                "--force",
                "--no-track",
                "-b",
                branch,
                &path_text,
                base,
            ])?;
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
        let root = private_root(repo)?;
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

    /// Removes the worktree (the branch stays), and the root folder when nothing else is in it.
    pub fn close(self) -> Result<(), GitError> {
        remove_worktree(&self.repo, &self.path)?;
        remove_if_empty(self.path.parent());
        Ok(())
    }
}

/// Removes a folder if it is empty (a temp folder left behind by nothing).
fn remove_if_empty(dir: Option<&Path>) {
    if let Some(dir) = dir {
        // Fails, as it should, when another run's worktree is in it.
        let _ = std::fs::remove_dir(dir);
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
    remove_if_empty(Some(&root));
    Ok(removed)
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

/// Files changed between two commits with line counts.
pub fn changed_files(git: &Git, from: &str, to: &str) -> Result<Vec<NumstatEntry>, GitError> {
    let out = git.run(&["diff", "--numstat", "-z", "--no-renames", from, to])?;
    Ok(parse_numstat_z(&out))
}

/// Where code branches live: the local repository only, or also a remote (DESIGN §3 "Scaling
/// out": ticks in different clones cooperate through it). With a remote, task branches are
/// pushed there and the base branch is read from and merged into there.
#[derive(Clone, Debug)]
pub struct Branches {
    git: Git,
    pub remote: Option<String>,
}

impl Branches {
    /// Uses `remote` when the repository has it.
    pub fn new(repo: &Git, remote: &str) -> Branches {
        let remote = repo
            .try_run(&["remote", "get-url", remote])
            .ok()
            .flatten()
            .map(|_| remote.to_string());
        Branches {
            git: repo.clone(),
            remote,
        }
    }

    /// The ref a branch is read from: the remote-tracking one with a remote.
    pub fn tracking(&self, branch: &str) -> String {
        match &self.remote {
            Some(r) => format!("refs/remotes/{r}/{branch}"),
            None => format!("refs/heads/{branch}"),
        }
    }

    /// Fetches these branches from the remote (a branch missing there is fine).
    pub fn refresh(&self, branches: &[&str]) -> Result<(), GitError> {
        let Some(remote) = &self.remote else {
            return Ok(());
        };
        for b in branches {
            let spec = format!("+refs/heads/{b}:refs/remotes/{remote}/{b}");
            if self
                .git
                .try_run(&[
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    "--no-write-fetch-head",
                    remote,
                    &spec,
                ])?
                .is_none()
            {
                // Gone on the remote: forget the stale tracking ref too.
                let _ =
                    self.git
                        .try_run(&["update-ref", "-d", &format!("refs/remotes/{remote}/{b}")]);
            }
        }
        Ok(())
    }

    /// The head of a branch, as last refreshed.
    pub fn head(&self, branch: &str) -> Result<Option<String>, GitError> {
        self.git.resolve(&self.tracking(branch))
    }

    /// Publishes a task branch (no force: a rejection means someone else pushed to it).
    pub fn publish(&self, branch: &str) -> Result<(), GitError> {
        match &self.remote {
            Some(r) => self
                .git
                .run(&[
                    "push",
                    "--quiet",
                    r,
                    &format!("refs/heads/{branch}:refs/heads/{branch}"),
                ])
                .map(|_| ()),
            None => Ok(()),
        }
    }

    /// Moves `base` from `old` to `new`; `Ok(false)` when it moved meanwhile (a race to retry).
    pub fn advance(&self, base: &str, old: &str, new: &str) -> Result<bool, GitError> {
        match &self.remote {
            Some(r) => match self.git.run(&[
                "push",
                "--quiet",
                "--porcelain",
                r,
                &format!("{new}:refs/heads/{base}"),
            ]) {
                Ok(_) => {
                    let _ = self.git.run(&["update-ref", &self.tracking(base), new]);
                    Ok(true)
                }
                Err(e)
                    if e.detail.contains("rejected")
                        || e.detail.contains("fetch first")
                        || e.detail.contains("non-fast-forward") =>
                {
                    Ok(false)
                }
                Err(e) => Err(e),
            },
            None => {
                // The base may be checked out in the main worktree: move it there so its files follow.
                let checked_out = self
                    .git
                    .try_run(&["symbolic-ref", "-q", "HEAD"])?
                    .as_deref()
                    == Some(&format!("refs/heads/{base}"));
                let bare = self
                    .git
                    .try_run(&["rev-parse", "--is-bare-repository"])?
                    .as_deref()
                    == Some("true");
                if checked_out && !bare {
                    if self.git.resolve(&format!("refs/heads/{base}"))?.as_deref() != Some(old) {
                        return Ok(false);
                    }
                    self.git.run(&["merge", "--ff-only", "-q", new])?;
                    Ok(true)
                } else {
                    Ok(self
                        .git
                        .try_run(&["update-ref", &format!("refs/heads/{base}"), new, old])?
                        .is_some())
                }
            }
        }
    }

    /// Deletes a merged task branch here and on the remote.
    pub fn delete(&self, branch: &str) {
        if let Some(r) = &self.remote {
            let _ = self.git.try_run(&[
                "push",
                "--quiet",
                r,
                "--delete",
                &format!("refs/heads/{branch}"),
            ]);
            let _ = self
                .git
                .try_run(&["update-ref", "-d", &self.tracking(branch)]);
        }
        let _ = self.git.try_run(&["branch", "-D", branch]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::git::temp_repo as repo;

    /// Issue 18: claude refuses to write anywhere under a `.git` folder.
    #[test]
    fn worktrees_live_outside_the_git_folder_one_root_per_repository() {
        let (_a, one) = repo();
        let (_b, two) = repo();
        let root = worktree_root(&one).unwrap();
        assert!(
            !root.components().any(|c| c.as_os_str() == ".git"),
            "{}",
            root.display()
        );
        assert_eq!(root, worktree_root(&one).unwrap(), "stable");
        assert_ne!(root, worktree_root(&two).unwrap(), "per repository");
        assert_eq!(
            root_name(Path::new("/r/.git")),
            root_name(Path::new("/r/.git"))
        );
        let created = private_root(&one).unwrap();
        let mode = std::fs::metadata(&created).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::remove_dir(&created).unwrap();
    }

    #[test]
    fn a_root_others_may_enter_is_made_private_and_a_link_is_refused() {
        let (_a, one) = repo();
        let root = worktree_root(&one).unwrap();
        std::fs::create_dir(&root).unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(private_root(&one).unwrap(), root);
        let mode = std::fs::metadata(&root).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        std::fs::remove_dir(&root).unwrap();
        // A link someone put there, even to a folder of ours.
        let (target, _) = repo();
        std::os::unix::fs::symlink(target.path(), &root).unwrap();
        let refused = private_root(&one).expect_err("refused").to_string();
        std::fs::remove_file(&root).unwrap();
        assert!(
            refused.contains("is not a folder of this user; remove it"),
            "{refused}"
        );
        // Closed worktrees leave no empty root behind.
        let dir = tempfile::tempdir().unwrap();
        let inner = dir.path().join("root");
        std::fs::create_dir_all(inner.join("wt")).unwrap();
        remove_if_empty(Some(&inner));
        assert!(inner.exists(), "not empty: kept");
        std::fs::remove_dir(inner.join("wt")).unwrap();
        remove_if_empty(Some(&inner));
        assert!(!inner.exists());
    }
}

//! Where code branches live and how they move: the local repository only, or also a remote.
//! Task branches are pushed without force; the base advances by compare-and-swap (checked out
//! here, its files follow, and `in_the_way` names a person's changes that would be overwritten).
//! Not for: the state's ref (`statebranch`), the pull requests (`tick::publish`), or which token
//! pushes (`credentials`).

use crate::git::{Git, GitError};

/// Where code branches live: the local repository only, or also a remote (DESIGN §3 "Scaling
/// out": ticks in different clones cooperate through it). With a remote, task branches are
/// pushed there and the base branch is read from and merged into there.
#[derive(Clone, Debug)]
pub struct Branches {
    git: Git,
    /// What pushes task branches' heads: `git`, or (issue 36, `scan.ci`) the same repository
    /// talking with the push token, so no workflow starts on them.
    heads: Git,
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
            heads: repo.clone(),
            remote,
        }
    }

    /// Pushes task branches' heads with the token `which` (issue 36: the push token under
    /// `scan.ci` other than `on-push`); everything else keeps the repository's.
    pub fn pushing_heads_with(mut self, which: crate::credentials::Token) -> Branches {
        self.heads = self.git.talking_with(which);
        self
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
                .heads
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

    /// Whether `base` is checked out in this repository's work tree (no remote, not bare): moving
    /// it moves a person's files.
    fn checked_out_here(&self, base: &str) -> Result<bool, GitError> {
        if self.remote.is_some() {
            return Ok(false);
        }
        let head = self.git.try_run(&["symbolic-ref", "-q", "HEAD"])?;
        if head.as_deref() != Some(&format!("refs/heads/{base}")) {
            return Ok(false);
        }
        let bare = self.git.try_run(&["rev-parse", "--is-bare-repository"])?;
        Ok(bare.as_deref() != Some("true"))
    }

    /// The files a person has changed (or left untracked) in the checked-out `base` that moving
    /// it from `old` to `new` would have to overwrite; empty when nothing is in the way (or the
    /// base is not checked out here).
    pub fn in_the_way(&self, base: &str, old: &str, new: &str) -> Result<Vec<String>, GitError> {
        if !self.checked_out_here(base)? {
            return Ok(Vec::new());
        }
        let split = |out: Vec<u8>| -> Vec<String> {
            out.split(|b| *b == 0)
                .filter(|p| !p.is_empty())
                .map(|p| String::from_utf8_lossy(p).into_owned())
                .collect()
        };
        let touched = split(self.git.run_bytes(&[
            "diff-tree",
            "-r",
            "-z",
            "--name-only",
            "--no-renames",
            old,
            new,
        ])?);
        if touched.is_empty() {
            return Ok(Vec::new());
        }
        // `status` (not plumbing): a file whose stat alone changed is not in the way. Without
        // optional locks it never takes (nor fails on) the person's index lock to refresh it.
        let mut args = vec![
            "--no-optional-locks",
            "status",
            "--porcelain",
            "-z",
            "--no-renames",
            "--untracked-files=all",
            "--",
        ];
        args.extend(touched.iter().map(|p| p.as_str()));
        let busy: Vec<String> = split(self.git.run_bytes(&args)?)
            .into_iter()
            .filter_map(|entry| entry.get(3..).map(str::to_string))
            .collect();
        let mut in_the_way: Vec<String> =
            touched.into_iter().filter(|p| busy.contains(p)).collect();
        in_the_way.dedup();
        Ok(in_the_way)
    }

    /// Moves `base` from `old` to `new`; `Ok(false)` when it moved meanwhile (a race to retry).
    /// With a remote this is a push of a head (a task branch brought up to date, or the base
    /// in local-git mode), with the heads' token.
    pub fn advance(&self, base: &str, old: &str, new: &str) -> Result<bool, GitError> {
        match &self.remote {
            Some(r) => match self.heads.run(&[
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

//! The state on a git ref (DESIGN §5): `state.sqlite` and a generated `STATE.md` in one commit
//! per save, on `refs/heads/opentiger/state` (or any configured ref), with no checkout.
//!
//! Load fetches the ref and reads the blob. Save writes a commit whose parent is the loaded one
//! and pushes it without force: the server's fast-forward check is the compare-and-swap, and a
//! rejected push is a [`SaveError::Conflict`]. Past `keep_commits` the history is replaced by one
//! squashed commit pushed with `--force-with-lease=<ref>:<expected>` — the only forced push.
//! Without a remote the ref is local and `git update-ref <ref> <new> <old>` is the CAS.

use std::path::Path;

use crate::git::{Git, GitError};

/// Where the state lives.
#[derive(Clone, Debug)]
pub struct StateRef {
    git: Git,
    /// A full ref name, e.g. `refs/heads/opentiger/state`.
    pub reference: String,
    /// The remote to fetch from and push to; `None`: the ref is local.
    pub remote: Option<String>,
    pub keep_commits: u32,
}

/// A loaded version of the state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loaded {
    /// The commit the state was read from; `None` when the ref does not exist yet.
    pub commit: Option<String>,
    pub bytes: Vec<u8>,
}

#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// Someone saved first: load again, decide again, save again.
    #[error("the state ref {0} moved since it was loaded")]
    Conflict(String),
    #[error(transparent)]
    Git(#[from] GitError),
}

/// What a save pushed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Saved {
    pub commit: String,
    pub squashed: bool,
}

/// The file names inside the state commit.
pub const STATE_FILE: &str = "state.sqlite";
pub const SUMMARY_FILE: &str = "STATE.md";

/// Private ref the fetched state is kept under in the local repository.
const FETCHED: &str = "refs/opentiger/fetched-state";

impl StateRef {
    /// `branch` may be a branch name (`opentiger/state`) or a full ref (`refs/opentiger/state`).
    /// The remote is used when it exists in the repository.
    pub fn new(repo: &Path, branch: &str, remote: &str, keep_commits: u32) -> StateRef {
        let git = Git::new(repo);
        let reference = if branch.starts_with("refs/") {
            branch.to_string()
        } else {
            format!("refs/heads/{branch}")
        };
        let remote = git
            .try_run(&["remote", "get-url", remote])
            .ok()
            .flatten()
            .map(|_| remote.to_string());
        StateRef {
            git,
            reference,
            remote,
            keep_commits: keep_commits.max(1),
        }
    }

    pub fn describe(&self) -> String {
        match &self.remote {
            Some(r) => format!("{} on {r}", self.reference),
            None => format!("{} (local)", self.reference),
        }
    }

    /// The latest saved state (empty bytes when the ref does not exist yet).
    pub fn load(&self) -> Result<Loaded, GitError> {
        let commit = self.fetch()?;
        let bytes = match &commit {
            Some(c) => self
                .git
                .run_bytes(&["cat-file", "blob", &format!("{c}:{STATE_FILE}")])?,
            None => Vec::new(),
        };
        Ok(Loaded { commit, bytes })
    }

    /// The commit the state ref points at now (fetched from the remote), if it exists.
    fn fetch(&self) -> Result<Option<String>, GitError> {
        Ok(match &self.remote {
            Some(remote) => {
                let refspec = format!("+{}:{FETCHED}", self.reference);
                let fetch = [
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    "--no-write-fetch-head",
                    remote,
                    &refspec,
                ];
                match self.git.try_run(&fetch)? {
                    Some(_) => self.git.resolve(FETCHED)?,
                    None => {
                        // Missing on the remote (first run), or the fetch really failed: ask.
                        let listed = self.git.run(&["ls-remote", remote, &self.reference])?;
                        if listed.trim().is_empty() {
                            None
                        } else {
                            self.git.run(&fetch)?;
                            self.git.resolve(FETCHED)?
                        }
                    }
                }
            }
            None => self.git.resolve(&self.reference)?,
        })
    }

    /// Saves `bytes` (and `summary`) as the successor of `loaded`.
    pub fn save(
        &self,
        loaded: &Loaded,
        bytes: &[u8],
        summary: &str,
        message: &str,
    ) -> Result<Saved, SaveError> {
        let db = self.git.run_with_input(
            &[
                "-c",
                "core.looseCompression=1",
                "hash-object",
                "-w",
                "--stdin",
            ],
            bytes,
        )?;
        self.save_blob(loaded.commit.as_deref(), &db, summary, message)
    }

    /// Loads the latest state into `file` (missing ref: the file is removed), without holding
    /// it in memory: a large state stays on disk, where SQLite reads only the pages it needs.
    pub fn load_into(&self, file: &Path) -> Result<Option<String>, GitError> {
        let commit = self.fetch()?;
        match &commit {
            Some(c) => self
                .git
                .run_to_file(&["cat-file", "blob", &format!("{c}:{STATE_FILE}")], file)?,
            None => {
                let _ = std::fs::remove_file(file);
            }
        }
        Ok(commit)
    }

    /// Saves the state file at `file` as the successor of `parent`.
    pub fn save_file(
        &self,
        parent: Option<&str>,
        file: &Path,
        summary: &str,
        message: &str,
    ) -> Result<Saved, SaveError> {
        // Fast compression: the blob is rewritten every save and packs well on the server.
        let db = self.git.run(&[
            "-c",
            "core.looseCompression=1",
            "hash-object",
            "-w",
            "--",
            &file.display().to_string(),
        ])?;
        self.save_blob(parent, &db, summary, message)
    }

    fn save_blob(
        &self,
        parent: Option<&str>,
        db: &str,
        summary: &str,
        message: &str,
    ) -> Result<Saved, SaveError> {
        let loaded = Loaded {
            commit: parent.map(String::from),
            bytes: Vec::new(),
        };
        let md = self
            .git
            .run_with_input(&["hash-object", "-w", "--stdin"], summary.as_bytes())?;
        let listing = format!("100644 blob {db}\t{STATE_FILE}\n100644 blob {md}\t{SUMMARY_FILE}\n");
        let tree = self.git.run_with_input(&["mktree"], listing.as_bytes())?;
        let depth = match &loaded.commit {
            Some(c) => self
                .git
                .run(&["rev-list", "--count", c])?
                .trim()
                .parse::<u32>()
                .unwrap_or(0),
            None => 0,
        };
        let squash = depth >= self.keep_commits;
        let mut args = vec!["commit-tree", tree.as_str(), "-m", message];
        if let (Some(parent), false) = (&loaded.commit, squash) {
            args.extend(["-p", parent.as_str()]);
        }
        let commit = self.git.run(&args)?;
        match &self.remote {
            Some(remote) => {
                let target = format!("{commit}:{}", self.reference);
                let lease;
                let mut push = vec!["push", "--quiet", "--porcelain"];
                if squash {
                    // The one forced push: replaces history, but only if nobody saved meanwhile.
                    lease = format!(
                        "--force-with-lease={}:{}",
                        self.reference,
                        loaded.commit.as_deref().unwrap_or("")
                    );
                    push.push(&lease);
                }
                push.extend([remote.as_str(), target.as_str()]);
                match self.git.run(&push) {
                    Ok(_) => {}
                    Err(e) if is_rejection(&e) => return Err(SaveError::Conflict(self.describe())),
                    Err(e) => return Err(e.into()),
                }
                // Keep the private copy current, so the next load fetches little.
                let _ = self.git.run(&["update-ref", FETCHED, &commit]);
            }
            None => {
                let old = loaded.commit.clone().unwrap_or_else(|| "0".repeat(40));
                if self
                    .git
                    .try_run(&["update-ref", &self.reference, &commit, &old])?
                    .is_none()
                {
                    return Err(SaveError::Conflict(self.describe()));
                }
            }
        }
        Ok(Saved {
            commit,
            squashed: squash,
        })
    }

    /// How many commits the state ref holds (for tests and `doctor`).
    pub fn history_len(&self) -> Result<u32, GitError> {
        let loaded = self.load()?;
        match loaded.commit {
            Some(c) => Ok(self
                .git
                .run(&["rev-list", "--count", &c])?
                .trim()
                .parse()
                .unwrap_or(0)),
            None => Ok(0),
        }
    }
}

/// A push refused because the remote ref is not what we based our commit on.
fn is_rejection(e: &GitError) -> bool {
    let d = &e.detail;
    d.contains("[rejected]")
        || d.contains("non-fast-forward")
        || d.contains("fetch first")
        || d.contains("stale info")
        || d.contains("failed to update ref")
        || d.contains("cannot lock ref")
}

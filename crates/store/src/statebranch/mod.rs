//! The state on a git ref (DESIGN §5): the SQLite file cut into chunks, a manifest and a
//! generated `STATE.md` in one commit per save, on `refs/heads/opentiger/state` (or any
//! configured ref), with no checkout. The chunk layout and the git processes that read and write
//! it are in [`chunks`]; here: which commit, compare-and-swap, pushing and history.
//!
//! Load fetches the ref and assembles the file from its chunks. Save writes a commit whose
//! parent is the loaded one, holding new blobs only for the chunks that changed, and pushes it
//! without force: the server's fast-forward check is the compare-and-swap, and a rejected push
//! is a [`SaveError::Conflict`]. Past `keep_commits` the history is replaced by one squashed
//! commit pushed with `--force-with-lease=<ref>:<expected>` — the only forced push. Without a
//! remote the ref is local and `git update-ref <ref> <new> <old>` is the CAS.
//!
//! States saved before chunks (one `state.sqlite` blob) load as they are and are written as
//! chunks by their first save.
//!
//! Not for: what the file holds (`store`), when a tick loads and saves it (`tick::context`), or
//! the text of `STATE.md` (`report::state_summary`).

mod cat_file;
pub mod chunks;
pub mod manifest;

use std::path::Path;

use crate::git::{Git, GitError};
use chunks::{Base, ChunkError};

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

/// A loaded version of the state, without its content (which went to a file).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Version {
    /// The commit the state was read from; `None` when the ref does not exist yet.
    pub commit: Option<String>,
    /// Its chunks, so a save writes only the ones that changed.
    base: Base,
}

/// A loaded version of the state with its content in memory (tests, benchmarks, small states).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Loaded {
    /// The commit the state was read from; `None` when the ref does not exist yet.
    pub commit: Option<String>,
    pub bytes: Vec<u8>,
    base: Base,
}

/// Why the state could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The commit does not hold a whole state: never read as a wrong one.
    #[error("{reference}: the state saved in commit {commit} is damaged: {detail}\n  fix: nothing was changed. {fix}")]
    Damaged {
        reference: String,
        commit: String,
        detail: String,
        fix: String,
    },
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("the state's working copy {0}")]
    File(String),
}

#[derive(Debug, thiserror::Error)]
pub enum SaveError {
    /// Someone saved first: load again, decide again, save again.
    #[error("the state ref {0} moved since it was loaded")]
    Conflict(String),
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("the state's working copy {0}")]
    File(String),
}

impl From<ChunkError> for SaveError {
    fn from(e: ChunkError) -> SaveError {
        match e {
            ChunkError::Git(e) => SaveError::Git(e),
            ChunkError::File { .. } | ChunkError::Damaged(_) => SaveError::File(e.to_string()),
        }
    }
}

/// What a save pushed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Saved {
    pub commit: String,
    pub squashed: bool,
    /// Chunks written as new blobs, of all the chunks of the state.
    pub chunks_written: usize,
    pub chunks_total: usize,
}

/// The readable summary's file name inside the state commit.
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

    /// The latest saved state in memory (empty bytes when the ref does not exist yet).
    pub fn load(&self) -> Result<Loaded, LoadError> {
        let scratch = tempfile::tempdir().map_err(|e| LoadError::File(e.to_string()))?;
        let file = scratch.path().join("state.sqlite");
        let version = self.load_into(&file)?;
        let bytes = match &version.commit {
            Some(_) => std::fs::read(&file)
                .map_err(|e| LoadError::File(format!("{}: {e}", file.display())))?,
            None => Vec::new(),
        };
        Ok(Loaded {
            commit: version.commit,
            bytes,
            base: version.base,
        })
    }

    /// The commit the state ref points at now (fetched from the remote), if it exists.
    fn fetch(&self) -> Result<Option<String>, GitError> {
        self.fetch_to(FETCHED)
    }

    /// The state as it is now, read beside a running agent (issue 51: a person's stop
    /// request): with git that neither sweeps nor is swept (`Git::beside_a_run`), fetched into
    /// the private ref `into` — never the one loads and saves use, so it races none of them —
    /// and assembled into `file` unless its commit is `known` (then `file` is left as it is).
    /// Returns the commit.
    pub fn peek_into(
        &self,
        file: &Path,
        into: &str,
        known: Option<&str>,
    ) -> Result<Option<String>, LoadError> {
        let beside = StateRef {
            git: self.git.beside_a_run(),
            reference: self.reference.clone(),
            remote: self.remote.clone(),
            keep_commits: self.keep_commits,
        };
        let commit = beside.fetch_to(into)?;
        if commit.is_some() && commit.as_deref() == known {
            return Ok(commit);
        }
        beside.assemble_into(commit.clone(), file)?;
        Ok(commit)
    }

    /// [`Self::fetch`] into the ref `target`.
    fn fetch_to(&self, target: &str) -> Result<Option<String>, GitError> {
        Ok(match &self.remote {
            Some(remote) => {
                let refspec = format!("+{}:{target}", self.reference);
                let fetch = [
                    "fetch",
                    "--quiet",
                    "--no-tags",
                    "--no-write-fetch-head",
                    remote,
                    &refspec,
                ];
                match self.git.try_run(&fetch)? {
                    Some(_) => self.git.resolve(target)?,
                    None => {
                        // Missing on the remote (first run), or the fetch really failed: ask.
                        let listed = self.git.run(&["ls-remote", remote, &self.reference])?;
                        if listed.trim().is_empty() {
                            None
                        } else {
                            self.git.run(&fetch)?;
                            self.git.resolve(target)?
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
        let scratch = tempfile::tempdir().map_err(|e| SaveError::File(e.to_string()))?;
        let file = scratch.path().join("state.sqlite");
        std::fs::write(&file, bytes)
            .map_err(|e| SaveError::File(format!("{}: {e}", file.display())))?;
        let version = Version {
            commit: loaded.commit.clone(),
            base: loaded.base.clone(),
        };
        self.save_file(&version, &file, summary, message)
    }

    /// Loads the latest state into `file` (missing ref: the file is removed), without holding
    /// it in memory: a large state stays on disk, where SQLite reads only the pages it needs.
    pub fn load_into(&self, file: &Path) -> Result<Version, LoadError> {
        let commit = self.fetch()?;
        self.assemble_into(commit, file)
    }

    /// Loads the state as the checkout fetched it, with no network (a job without a token:
    /// `work --output`): a branch from its remote-tracking ref (`refs/remotes/<remote>/<name>`),
    /// any other ref (or no remote) from the local ref. Missing: an empty state.
    pub fn load_fetched_into(&self, file: &Path) -> Result<Version, LoadError> {
        let commit = self.git.resolve(&self.fetched_ref())?;
        self.assemble_into(commit, file)
    }

    /// Where [`Self::load_fetched_into`] reads: the ref a checkout's fetch left the state on.
    pub fn fetched_ref(&self) -> String {
        match (&self.remote, self.reference.strip_prefix("refs/heads/")) {
            (Some(remote), Some(name)) => format!("refs/remotes/{remote}/{name}"),
            _ => self.reference.clone(),
        }
    }

    fn assemble_into(&self, commit: Option<String>, file: &Path) -> Result<Version, LoadError> {
        let base = match &commit {
            Some(c) => chunks::assemble(&self.git, c, file).map_err(|e| match e {
                ChunkError::Damaged(detail) => LoadError::Damaged {
                    reference: self.describe(),
                    commit: c.clone(),
                    detail,
                    fix: self.repair_hint(),
                },
                ChunkError::Git(e) => LoadError::Git(e),
                ChunkError::File { .. } => LoadError::File(e.to_string()),
            })?,
            None => {
                let _ = std::fs::remove_file(file);
                Base::default()
            }
        };
        Ok(Version { commit, base })
    }

    /// How to put a damaged state ref back on a good commit.
    fn repair_hint(&self) -> String {
        let r = &self.reference;
        match &self.remote {
            Some(remote) => format!(
                "Find an earlier good commit (`git fetch {remote} {r} && git log FETCH_HEAD`) and put the ref back on it (`git push --force {remote} <commit>:{r}`), or delete the ref to start from an empty state (`git push {remote} :{r}`)"
            ),
            None => format!(
                "Find an earlier good commit (`git log {r}`) and put the ref back on it (`git update-ref {r} <commit>`), or delete the ref to start from an empty state (`git update-ref -d {r}`)"
            ),
        }
    }

    /// Saves the state file at `file` as the successor of `loaded`: new blobs only for the
    /// chunks that changed, written straight into a pack.
    pub fn save_file(
        &self,
        loaded: &Version,
        file: &Path,
        summary: &str,
        message: &str,
    ) -> Result<Saved, SaveError> {
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
        let parent = loaded.commit.as_deref().filter(|_| !squash);
        let written =
            chunks::write_commit(&self.git, &loaded.base, file, summary, message, parent)?;
        let commit = written.commit;
        self.publish(loaded.commit.as_deref(), &commit, squash)?;
        Ok(Saved {
            commit,
            squashed: squash,
            chunks_written: written.chunks_written,
            chunks_total: written.chunks_total,
        })
    }

    /// Moves the ref from `expected` to `commit`, if nobody moved it meanwhile.
    fn publish(&self, expected: Option<&str>, commit: &str, squash: bool) -> Result<(), SaveError> {
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
                        expected.unwrap_or("")
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
                let _ = self.git.run(&["update-ref", FETCHED, commit]);
            }
            None => {
                let old = expected.map_or_else(|| "0".repeat(40), str::to_string);
                if self
                    .git
                    .try_run(&["update-ref", &self.reference, commit, &old])?
                    .is_none()
                {
                    return Err(SaveError::Conflict(self.describe()));
                }
            }
        }
        Ok(())
    }

    /// How many commits the state ref holds (for tests and `doctor`).
    pub fn history_len(&self) -> Result<u32, GitError> {
        match self.fetch()? {
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

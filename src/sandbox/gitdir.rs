//! The repository's shared `.git` stays the runner's.
//!
//! An agent in a worktree must write the shared `.git` (objects, its branch's ref, logs), and so
//! it can write more of it than git in a worktree needs. Besides the configuration
//! (`gitconfig`), files there change what the runner's git does or publishes: `info/attributes`
//! (a filter or `ident` on every file), `info/exclude` (a file left out of the change),
//! `info/grafts` and `shallow` (rewritten history), `objects/info/alternates` (objects borrowed
//! from a folder the agent chose), `hooks/` (off for the runner's git, not for a person's), and
//! the refs of every other branch (the base a judge merges into, another task's branch, the
//! state branch). [`GitDirSnapshot::take`] keeps them before an agent starts;
//! [`GitDirSnapshot::restore_changes`], once every process of the agent is gone, puts back what
//! changed (an alternates file that appeared is removed: alternates are refused) and names it
//! for the policy violation. The task branch the worktree has checked out is the agent's to move.

use std::path::{Path, PathBuf};

use crate::git::{Git, GitError};

/// Files of the shared `.git`, relative to it, that no agent may change.
const GUARDED_FILES: [&str; 7] = [
    "info/attributes",
    "info/exclude",
    "info/grafts",
    "info/sparse-checkout",
    "shallow",
    "objects/info/alternates",
    "objects/info/http-alternates",
];

#[derive(Debug)]
pub struct GitDirSnapshot {
    common: PathBuf,
    files: Vec<(PathBuf, Option<Vec<u8>>)>,
    hooks: Vec<(PathBuf, Vec<u8>)>,
    refs: Vec<(String, String)>,
    /// The branch the worktree has checked out (`refs/heads/…`), the agent's to move.
    own_ref: Option<String>,
}

impl GitDirSnapshot {
    pub fn take(worktree: &Git) -> Result<GitDirSnapshot, GitError> {
        let common = worktree.common_dir()?;
        let files = GUARDED_FILES
            .iter()
            .map(|rel| {
                let path = common.join(rel);
                let bytes = std::fs::read(&path).ok();
                (path, bytes)
            })
            .collect();
        let own_ref = worktree
            .try_run(&["symbolic-ref", "-q", "HEAD"])?
            .filter(|r| !r.is_empty());
        Ok(GitDirSnapshot {
            hooks: hooks(&common),
            files,
            refs: refs(worktree)?,
            own_ref,
            common,
        })
    }

    /// Puts back what changed since [`GitDirSnapshot::take`]; the names of what changed
    /// (paths relative to the shared `.git`, and refs). Empty: nothing changed.
    pub fn restore_changes(&self, worktree: &Git) -> Result<Vec<String>, String> {
        let mut changed = Vec::new();
        let rel = |p: &Path| {
            p.strip_prefix(&self.common)
                .unwrap_or(p)
                .display()
                .to_string()
        };
        for (path, before) in &self.files {
            if std::fs::read(path).ok() == *before {
                continue;
            }
            put_back(path, before.as_deref()).map_err(|e| format!("{}: {e}", path.display()))?;
            changed.push(rel(path));
        }
        let now = hooks(&self.common);
        if now != self.hooks {
            let dir = self.common.join("hooks");
            for (path, _) in &now {
                if !self.hooks.iter().any(|(p, _)| p == path) {
                    let _ = std::fs::remove_file(path);
                }
            }
            for (path, bytes) in &self.hooks {
                if !now.iter().any(|(p, b)| p == path && b == bytes) {
                    put_back(path, Some(bytes)).map_err(|e| format!("{}: {e}", path.display()))?;
                }
            }
            changed.push(rel(&dir));
        }
        let refs_now = refs(worktree).map_err(|e| e.to_string())?;
        let own = |name: &str| self.own_ref.as_deref() == Some(name);
        for (name, old) in &self.refs {
            let kept = refs_now.iter().find(|(n, _)| n == name).map(|(_, v)| v);
            if kept != Some(old) && !own(name) {
                worktree
                    .run(&["update-ref", "--no-deref", name, old])
                    .map_err(|e| e.to_string())?;
                changed.push(name.clone());
            }
        }
        for (name, _) in &refs_now {
            if !self.refs.iter().any(|(n, _)| n == name) && !own(name) {
                worktree
                    .run(&["update-ref", "--no-deref", "-d", name])
                    .map_err(|e| e.to_string())?;
                changed.push(name.clone());
            }
        }
        Ok(changed)
    }
}

/// The policy violation's text.
pub fn describe(changed: &[String]) -> String {
    let listed: Vec<&str> = changed.iter().take(20).map(String::as_str).collect();
    format!(
        "policy_violation: the agent changed the repository's shared .git, which was put back: {}",
        listed.join(", ")
    )
}

/// Restores a file as it was (`None`: it did not exist): replaced, never written through (the
/// agent may have made it a link).
fn put_back(path: &Path, bytes: Option<&[u8]>) -> std::io::Result<()> {
    match bytes {
        Some(bytes) => {
            let _ = std::fs::remove_file(path);
            crate::scratch::write_private(path, bytes)
        }
        None => match std::fs::remove_file(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            other => other,
        },
    }
}

fn hooks(common: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(common.join("hooks")) else {
        return Vec::new();
    };
    let mut hooks: Vec<(PathBuf, Vec<u8>)> = entries
        .flatten()
        .filter_map(|e| {
            let meta = std::fs::symlink_metadata(e.path()).ok()?;
            let bytes = if meta.is_file() {
                std::fs::read(e.path()).ok()?
            } else {
                // A link or folder: its name is what a person's git would follow.
                std::fs::read_link(e.path())
                    .map(|t| t.display().to_string().into_bytes())
                    .unwrap_or_default()
            };
            Some((e.path(), bytes))
        })
        .collect();
    hooks.sort();
    hooks
}

/// Every ref (loose or packed) and what it points to, `HEAD`s aside.
fn refs(git: &Git) -> Result<Vec<(String, String)>, GitError> {
    let out = git.run(&["for-each-ref", "--format=%(refname) %(objectname)"])?;
    let mut refs: Vec<(String, String)> = out
        .lines()
        .filter_map(|l| l.split_once(' '))
        .map(|(n, v)| (n.to_string(), v.to_string()))
        .collect();
    refs.sort();
    Ok(refs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn other_refs_attributes_and_alternates_are_put_back_and_the_own_branch_is_not() {
        let (dir, repo) = crate::git::temp_repo();
        repo.run(&["symbolic-ref", "HEAD", "refs/heads/main"])
            .unwrap();
        std::fs::write(dir.path().join("a"), "a").unwrap();
        repo.run(&["add", "a"]).unwrap();
        repo.run(&["commit", "-q", "-m", "initial"]).unwrap();
        repo.run(&["branch", "other"]).unwrap();
        let wt = dir.path().join("wt");
        let wt_path = wt.display().to_string();
        repo.run(&["worktree", "add", "-q", "-b", "task", &wt_path])
            .unwrap();
        let worktree = Git::new(&wt);
        let snap = GitDirSnapshot::take(&worktree).unwrap();
        let main_before = repo.resolve("refs/heads/main").unwrap();
        // What an agent in the worktree could do to the shared .git.
        std::fs::write(wt.join("f"), "x").unwrap();
        worktree.run(&["add", "f"]).unwrap();
        worktree.run(&["commit", "-q", "-m", "own"]).unwrap();
        let own = worktree.resolve("HEAD").unwrap();
        let common = repo.common_dir().unwrap();
        worktree
            .run(&["update-ref", "refs/heads/main", own.as_deref().unwrap()])
            .unwrap();
        worktree
            .run(&["update-ref", "-d", "refs/heads/other"])
            .unwrap();
        worktree
            .run(&["update-ref", "refs/heads/planted", own.as_deref().unwrap()])
            .unwrap();
        std::fs::create_dir_all(common.join("info")).unwrap();
        std::fs::write(common.join("info/attributes"), "* filter=evil\n").unwrap();
        std::fs::write(common.join("objects/info/alternates"), "/tmp/elsewhere\n").unwrap();
        std::fs::write(common.join("hooks/pre-push"), "#!/bin/sh\n").unwrap();

        let changed = snap.restore_changes(&worktree).unwrap();
        for expected in [
            "info/attributes",
            "objects/info/alternates",
            "hooks",
            "refs/heads/main",
            "refs/heads/other",
            "refs/heads/planted",
        ] {
            assert!(
                changed.iter().any(|c| c == expected),
                "{expected}: {changed:?}"
            );
        }
        assert!(
            !changed.iter().any(|c| c == "refs/heads/task"),
            "{changed:?}"
        );
        assert_eq!(repo.resolve("refs/heads/main").unwrap(), main_before);
        assert!(repo.branch_exists("other").unwrap());
        assert!(!repo.branch_exists("planted").unwrap());
        assert_eq!(worktree.resolve("refs/heads/task").unwrap(), own);
        assert!(!common.join("info/attributes").exists());
        assert!(!common.join("objects/info/alternates").exists());
        assert!(!common.join("hooks/pre-push").exists());
        // Nothing changed: nothing to say.
        let snap = GitDirSnapshot::take(&worktree).unwrap();
        assert_eq!(
            snap.restore_changes(&worktree).unwrap(),
            Vec::<String>::new()
        );
        assert!(describe(&changed).contains("refs/heads/main"));
    }
}

//! A tree with some files changed, written without an index: the trees on the changed paths
//! are built from the listing the workspace was filled from (every file's and folder's id, so
//! nothing is read) and written again (`mktree --batch`); every other subtree keeps its id.
//! Costs what changed, not the size of the repository. Not for: finding what changed
//! (`workspace::import`) or committing the tree (`Workspace::commit`, in `workspace`).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};

use super::fill::Tracked;
use super::Change;
use crate::git::{Git, GitError};

/// One entry of a tree: mode (as git writes it) and object id, by name.
type Entries = BTreeMap<Vec<u8>, (String, String)>;

/// The tree whose files are `files` and whose folders are `folders` (`(path, tree id)`), with
/// `changes` applied (paths relative to its top), written by `writer`.
pub(super) fn apply(
    mut writer: TreeWriter<'_>,
    files: &[Tracked],
    folders: &[(String, String)],
    changes: &[Change],
) -> Result<String, GitError> {
    // Every folder on the way to a changed path, the top ("") included.
    let mut wanted: BTreeSet<String> = BTreeSet::from([String::new()]);
    for change in changes {
        let mut at = change.path.as_str();
        while let Some((parent, _)) = at.rsplit_once('/') {
            wanted.insert(parent.to_string());
            at = parent;
        }
    }
    let mut trees = base_entries(files, folders, &wanted);
    for change in changes {
        let (folder, name) = split(&change.path);
        let entries = trees.entry(folder.to_string()).or_default();
        match &change.after {
            Some((mode, oid)) => {
                entries.insert(name.as_bytes().to_vec(), (mode.clone(), oid.clone()))
            }
            None => entries.remove(name.as_bytes()),
        };
    }
    let repo = writer.repo;
    // Deepest first: a folder's new id goes into its parent before the parent is written.
    let mut order: Vec<String> = wanted.into_iter().collect();
    order.sort_by_key(|f| std::cmp::Reverse(depth(f)));
    let mut root = None;
    for folder in order {
        let entries = trees.remove(&folder).unwrap_or_default();
        let written = if entries.is_empty() && !folder.is_empty() {
            None
        } else {
            Some(writer.write(&entries)?)
        };
        if folder.is_empty() {
            root = written;
            continue;
        }
        let (parent, name) = split(&folder);
        let parent = trees.entry(parent.to_string()).or_default();
        match written {
            Some(oid) => {
                parent.insert(name.as_bytes().to_vec(), ("40000".to_string(), oid));
            }
            // An emptied folder goes; a file that took its name (a change) stays.
            None => {
                if parent
                    .get(name.as_bytes())
                    .is_some_and(|(mode, _)| is_tree(mode))
                {
                    parent.remove(name.as_bytes());
                }
            }
        }
    }
    writer.finish()?;
    root.ok_or_else(|| repo.failure(&["mktree"], "no top tree was written"))
}

/// The entries the base tree has in each of the `wanted` folders that it holds (a folder it
/// lacks is new: no entry).
fn base_entries(
    files: &[Tracked],
    folders: &[(String, String)],
    wanted: &BTreeSet<String>,
) -> BTreeMap<String, Entries> {
    let mut trees: BTreeMap<String, Entries> = BTreeMap::new();
    let entries = files
        .iter()
        .map(|t| (t.path.as_str(), t.mode.as_str(), t.oid.as_str()))
        .chain(
            folders
                .iter()
                .map(|(path, oid)| (path.as_str(), "40000", oid.as_str())),
        );
    for (path, mode, oid) in entries {
        let (folder, name) = split(path);
        if wanted.contains(folder) {
            trees.entry(folder.to_string()).or_default().insert(
                name.as_bytes().to_vec(),
                (mode.to_string(), oid.to_string()),
            );
        }
    }
    trees
}

fn is_tree(mode: &str) -> bool {
    matches!(mode, "40000" | "040000")
}

fn depth(folder: &str) -> usize {
    if folder.is_empty() {
        0
    } else {
        folder.matches('/').count() + 1
    }
}

/// `("a/b", "c")` for `a/b/c`, `("", "c")` for `c`.
fn split(path: &str) -> (&str, &str) {
    path.rsplit_once('/').unwrap_or(("", path))
}

/// One `git mktree --batch -z`, asked one tree at a time (it answers each at once).
pub(super) struct TreeWriter<'a> {
    repo: &'a Git,
    child: std::process::Child,
    input: Option<std::process::ChildStdin>,
    output: BufReader<std::process::ChildStdout>,
}

const MKTREE: [&str; 3] = ["mktree", "--batch", "-z"];

impl<'a> TreeWriter<'a> {
    pub(super) fn start(repo: &'a Git) -> Result<TreeWriter<'a>, GitError> {
        let mut child = repo.spawn(&MKTREE)?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = repo.finish(&MKTREE, child);
            return Err(repo.failure(&MKTREE, "no pipes to git"));
        };
        Ok(TreeWriter {
            repo,
            child,
            input: Some(input),
            output: BufReader::new(output),
        })
    }

    fn write(&mut self, entries: &Entries) -> Result<String, GitError> {
        let mut text = Vec::new();
        for (name, (mode, oid)) in entries {
            let kind = match mode.as_str() {
                m if is_tree(m) => "tree",
                "160000" => "commit",
                _ => "blob",
            };
            text.extend_from_slice(format!("{mode} {kind} {oid}\t").as_bytes());
            text.extend_from_slice(name);
            text.push(0);
        }
        text.push(0);
        let broken = |e: std::io::Error| self.repo.failure(&MKTREE, format!("talking to git: {e}"));
        let input = self
            .input
            .as_mut()
            .ok_or_else(|| broken(std::io::ErrorKind::BrokenPipe.into()))?;
        input
            .write_all(&text)
            .and_then(|()| input.flush())
            .map_err(broken)?;
        let mut line = String::new();
        self.output.read_line(&mut line).map_err(broken)?;
        let oid = line.trim().to_string();
        if oid.is_empty() {
            return Err(self.repo.failure(&MKTREE, "git wrote no tree"));
        }
        Ok(oid)
    }

    fn finish(mut self) -> Result<(), GitError> {
        drop(self.input.take());
        let mut rest = String::new();
        let _ = self.output.read_to_string(&mut rest);
        let status = self.child.wait().map_err(|e| {
            self.repo
                .failure(&MKTREE, format!("git did not finish: {e}"))
        })?;
        if status.success() {
            Ok(())
        } else {
            Err(self.repo.failure(&MKTREE, format!("exited with {status}")))
        }
    }
}

impl Drop for TreeWriter<'_> {
    fn drop(&mut self) {
        // After `finish` the process has ended and these do nothing; on an error, it ends here.
        drop(self.input.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
        crate::reaper::release(self.child.id());
    }
}

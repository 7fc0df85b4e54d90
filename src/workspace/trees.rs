//! A tree with some files changed, written without an index: only the trees on the changed
//! paths are read (`cat-file --batch`) and written again (`mktree --batch`); every other subtree
//! keeps its id. Costs what changed, not the size of the repository.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};

use super::Change;
use crate::git::{Git, GitError};

/// One entry of a tree: mode (as git writes it) and object id, by name.
type Entries = BTreeMap<Vec<u8>, (String, String)>;

/// The tree `base` with `changes` applied (paths relative to its top).
pub(super) fn apply(repo: &Git, base: &str, changes: &[Change]) -> Result<String, GitError> {
    // Every folder on the way to a changed path, the top ("") included.
    let mut folders: BTreeSet<String> = BTreeSet::from([String::new()]);
    for change in changes {
        let mut at = change.path.as_str();
        while let Some((parent, _)) = at.rsplit_once('/') {
            folders.insert(parent.to_string());
            at = parent;
        }
    }
    let mut trees = read_trees(repo, base, &folders)?;
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
    let mut writer = TreeWriter::start(repo)?;
    // Deepest first: a folder's new id goes into its parent before the parent is written.
    let mut order: Vec<String> = folders.into_iter().collect();
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

/// The entries of each folder in `base` that exists there as a tree (others are new).
fn read_trees(
    repo: &Git,
    base: &str,
    folders: &BTreeSet<String>,
) -> Result<BTreeMap<String, Entries>, GitError> {
    let args = ["cat-file", "--batch"];
    let mut child = repo.spawn(&args)?;
    let (Some(mut input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = repo.finish(&args, child);
        return Err(repo.failure(&args, "no pipes to git"));
    };
    let asked: Vec<String> = folders
        .iter()
        .map(|f| {
            if f.is_empty() {
                base.to_string()
            } else {
                format!("{base}:{f}")
            }
        })
        .collect();
    let asking = std::thread::spawn(move || -> std::io::Result<()> {
        for name in asked {
            writeln!(input, "{name}")?;
        }
        input.flush()
    });
    let mut reader = BufReader::new(output);
    let oid_bytes = base.len() / 2;
    let read = (|| -> Result<BTreeMap<String, Entries>, String> {
        let mut trees = BTreeMap::new();
        for folder in folders {
            let mut header = String::new();
            reader.read_line(&mut header).map_err(|e| e.to_string())?;
            let words: Vec<&str> = header.split_whitespace().collect();
            let (kind, size) = match words.as_slice() {
                [_, "missing"] => continue,
                [_, kind, size] => (*kind, size.parse::<u64>().map_err(|e| e.to_string())?),
                _ => return Err(format!("git answered `{}`", header.trim_end())),
            };
            let mut raw = Vec::new();
            (&mut reader)
                .take(size + 1)
                .read_to_end(&mut raw)
                .map_err(|e| e.to_string())?;
            raw.pop(); // the newline after the object
            if kind == "tree" {
                trees.insert(folder.clone(), parse_tree(&raw, oid_bytes)?);
            }
        }
        Ok(trees)
    })();
    drop(reader);
    let asked = asking.join();
    let finished = repo.finish(&args, child);
    let trees = read.map_err(|e| repo.failure(&args, e))?;
    if !matches!(asked, Ok(Ok(()))) {
        return Err(repo.failure(&args, "the thread asking git failed"));
    }
    finished?;
    Ok(trees)
}

/// A raw tree object: `<mode> <name>\0<id bytes>` entries.
fn parse_tree(raw: &[u8], oid_bytes: usize) -> Result<Entries, String> {
    let mut entries = Entries::new();
    let mut rest = raw;
    while !rest.is_empty() {
        let space = rest
            .iter()
            .position(|b| *b == b' ')
            .ok_or("a tree entry without a mode")?;
        let nul = rest
            .iter()
            .position(|b| *b == 0)
            .ok_or("a tree entry without a name")?;
        if nul < space || rest.len() < nul + 1 + oid_bytes {
            return Err("a tree entry cut short".to_string());
        }
        let mode = String::from_utf8_lossy(&rest[..space]).into_owned();
        let name = rest[space + 1..nul].to_vec();
        let oid: String = rest[nul + 1..nul + 1 + oid_bytes]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        entries.insert(name, (mode, oid));
        rest = &rest[nul + 1 + oid_bytes..];
    }
    Ok(entries)
}

/// One `git mktree --batch -z`, asked one tree at a time (it answers each at once).
struct TreeWriter<'a> {
    repo: &'a Git,
    child: std::process::Child,
    input: Option<std::process::ChildStdin>,
    output: BufReader<std::process::ChildStdout>,
}

const MKTREE: [&str; 3] = ["mktree", "--batch", "-z"];

impl<'a> TreeWriter<'a> {
    fn start(repo: &'a Git) -> Result<TreeWriter<'a>, GitError> {
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

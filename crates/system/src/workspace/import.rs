//! The change import: what an agent left in its work tree, read as data and made a tree of the
//! runner's repository.
//!
//! 1. Every file the workspace was filled with is `lstat`ed on every core (`look.rs`: its
//!    folders first, so a folder turned into a link means everything under it is gone, never
//!    followed) and compared with what was written, while
//! 2. new files come from `git ls-files --others --exclude-standard` run by the runner's git
//!    on the work tree with the runner's private index: it reads `.gitignore` files (which can
//!    only leave files out) and no attribute, filter or config of the workspace. A nested
//!    repository shows as `dir/`, and any other `.git` in a folder of the result is found by
//!    `lstat` (git lists none): both are refused by name.
//! 3. What changed is read by the runner itself (`read.rs`: from the top without following a
//!    link, never waiting on a FIFO, a regular file of the size `lstat` gave) and written as
//!    blobs by one `git fast-import` taking each by its length (`blobs.rs`): no name passes
//!    through a line-separated protocol (issue 48). The trees on the changed paths are written
//!    again from the listing the workspace was filled from (`trees.rs`): the rest keep their
//!    ids; `diff-tree --numstat` gives the line counts. Four git processes in all, each
//!    started at once and fed when its input is known, so their start-up overlaps the
//!    `lstat`s.
//!
//! Sizes are known from `lstat` before any content is read. While git lists the new files,
//! the work tree is walked for what would make git wait or miss files (`look::blocker`: a
//! FIFO such as a `.gitignore` git would wait on, a socket or device, a folder no one can
//! read); one ends the listing and is refused by name.
//!
//! Not for: judging what the change holds (`runner::checks`, `runner::content`) or committing its
//! tree (`Workspace::commit`, in `workspace`).

use std::collections::HashMap;
use std::path::Path;

use super::blobs::{AddError, BlobWriter};
use super::fill::{self, Tracked, EXECUTABLE, FILE, LINK, LINK_MAX};
use super::{look, read};
use super::{Change, Workspace};
use crate::git::{parse_numstat_z, Git, GitError, NumstatEntry};
use crate::policy::names::{shown, shown_bytes};

/// A symbolic link the change adds or changes: its path, target, and where the target leads
/// in the tree after the change (`None`: out of the tree, absolute, or a loop).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LinkEntry {
    pub path: String,
    pub target: String,
    pub resolved: Option<String>,
}

/// What an agent changed, as the runner's repository holds it.
#[derive(Clone, Debug, Default)]
pub struct Imported {
    /// The tree after the change (the workspace's base tree when nothing changed).
    pub tree: String,
    pub changes: Vec<Change>,
    /// Line counts per file, from the trees (for the path policy's limits).
    pub numstat: Vec<NumstatEntry>,
    pub links: Vec<LinkEntry>,
}

impl Imported {
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// The sizes a change may not pass (`policy.max_file_bytes`, `policy.max_change_bytes`; 0: no
/// limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SizeLimits {
    pub file: u64,
    pub change: u64,
}

impl SizeLimits {
    pub fn of(policy: &crate::config::PolicyConfig) -> SizeLimits {
        SizeLimits {
            file: policy.max_file_bytes,
            change: policy.max_change_bytes,
        }
    }
}

/// Why the change could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The work tree holds what no change may (a nested repository, a device): a policy
    /// violation naming the path.
    #[error("{0}")]
    Refused(String),
    #[error(transparent)]
    Git(#[from] GitError),
}

/// See the module doc.
pub(super) fn import(
    ws: &Workspace,
    tracked: &[Tracked],
    own: &Path,
    limits: SizeLimits,
) -> Result<Imported, ImportError> {
    let root = &ws.path;
    let repo = &ws.repo;
    let index = own.join("index");
    let lister = repo.with_env("GIT_INDEX_FILE", &index.display().to_string());
    let work_tree = format!("--work-tree={}", root.display());
    let args = [
        work_tree.as_str(),
        "ls-files",
        "-z",
        "--others",
        "--exclude-standard",
    ];
    // New files are asked of git while the written ones are looked at; the other git
    // processes of the import start now too, so that their start-up overlaps the looking, and
    // are fed once their input is known.
    let mut child = lister.spawn(&args)?;
    let blobs = BlobWriter::start(repo, &own.join("marks"));
    let writer = super::trees::TreeWriter::start(repo);
    let differ = Early::start(repo, &DIFF_TREE);
    drop(child.stdin.take());
    let listing = child.stdout.take();
    let (looked, blocker, others) = std::thread::scope(|scope| {
        let reading = scope.spawn(move || -> std::io::Result<Vec<u8>> {
            let mut out = Vec::new();
            if let Some(mut listing) = listing {
                std::io::Read::read_to_end(&mut listing, &mut out)?;
            }
            Ok(out)
        });
        // Issue 48: git opens every `.gitignore` it meets and waits on one that is a FIFO; the
        // walk finds such a one (or a folder no one can read) and ends git's listing.
        let walking = scope.spawn(|| look::blocker(root));
        let looked = look::changed(root, tracked);
        let blocker = walking
            .join()
            .unwrap_or_else(|_| Some("the walk of the work tree failed".to_string()));
        if blocker.is_some() {
            let _ = child.kill();
        }
        (looked, blocker, reading.join())
    });
    let finished = lister.finish(&args, child);
    if let Some(blocker) = blocker {
        return Err(ImportError::Refused(blocker));
    }
    let others = match others {
        Ok(Ok(out)) => out,
        Ok(Err(e)) => {
            return Err(lister
                .failure(&args, format!("reading its answer: {e}"))
                .into())
        }
        Err(_) => return Err(lister.failure(&args, "the reading thread failed").into()),
    };
    finished?;
    let look::Changed {
        mut candidates,
        deleted,
    } = looked;
    for raw in others.split(|b| *b == 0).filter(|p| !p.is_empty()) {
        let Ok(path) = String::from_utf8(raw.to_vec()) else {
            return Err(ImportError::Refused(format!(
                "the file name {} is not UTF-8 (shown escaped): rename it",
                shown_bytes(raw)
            )));
        };
        if let Some(dir) = path.strip_suffix('/') {
            return Err(ImportError::Refused(format!(
                "{} is a git repository inside the change (a nested repository or submodule): leave it out",
                shown(dir)
            )));
        }
        candidates.push(path);
    }
    if let Some(bad) = candidates.iter().find(|p| !fill::safe_path(p)) {
        return Err(ImportError::Refused(format!(
            "{} is a path git must not hold (a .git folder inside the change)",
            shown(bad)
        )));
    }
    // git lists no `.git` entry: one in a folder it walks into (`git init` in a tracked
    // folder, a `gitdir:` file naming no repository) would silently drop out while the files
    // beside it came in. Every folder the result has files in is looked at.
    let files = candidates.iter().map(String::as_str);
    if let Some(dot_git) = look::nested_git(root, files, tracked) {
        return Err(ImportError::Refused(format!(
            "{} is a git repository or a link to one inside the change (a nested repository, a `gitdir:` file or a link named .git): leave it out",
            shown(&dot_git)
        )));
    }
    // Sizes and kinds before contents, each path looked at from the top without following a
    // link (issue 48: names are data).
    let io = |path: &str, e: std::io::Error| {
        ImportError::Refused(format!(
            "{} could not be read ({e}): make it readable by the runner, or leave it out",
            shown(path)
        ))
    };
    let mut work = read::Tree::open(root).map_err(|e| io(".", e))?;
    let mut to_hash: Vec<(String, String, u64)> = Vec::new();
    let mut link_targets: HashMap<String, String> = HashMap::new();
    for path in candidates {
        match work.kind(&path).map_err(|e| io(&path, e))? {
            read::Kind::Link { size } => to_hash.push((path, LINK.to_string(), size)),
            read::Kind::File { size, executable } => {
                let mode = if executable { EXECUTABLE } else { FILE };
                to_hash.push((path, mode.to_string(), size));
            }
            read::Kind::Other(what) => {
                return Err(ImportError::Refused(format!(
                    "{} is {what}, neither a file nor a link: leave it out",
                    shown(&path)
                )));
            }
        }
    }
    // Issue 36: sizes before contents. Nothing over a limit is read, by us or by git.
    let sizes: Vec<(String, u64)> = to_hash
        .iter()
        .map(|(path, _, size)| (shown(path), *size))
        .collect();
    let too_large = crate::policy::size_violations(&sizes, limits.file, limits.change);
    if !too_large.is_empty() {
        return Err(ImportError::Refused(
            crate::policy::summary(&too_large).replace('\n', "; "),
        ));
    }
    let mut blobs = blobs?;
    for (path, mode, size) in &to_hash {
        let added = if mode == LINK {
            let target = work
                .link_target(path, LINK_MAX as usize)
                .map_err(|e| io(path, e))?;
            link_targets.insert(path.clone(), String::from_utf8_lossy(&target).into_owned());
            blobs.add(target.len() as u64, &mut target.as_slice())
        } else {
            let mut file = work.open_file(path, *size).map_err(|e| io(path, e))?;
            blobs.add(*size, &mut file)
        };
        match added {
            Ok(()) => {}
            Err(AddError::Read(e)) => return Err(io(path, e)),
            Err(AddError::Git(e)) => return Err(e.into()),
        }
    }
    let oids = blobs.finish()?;
    let before: HashMap<&str, &Tracked> = tracked.iter().map(|t| (t.path.as_str(), t)).collect();
    let mut changes: Vec<Change> = deleted
        .into_iter()
        .map(|path| Change {
            path,
            after: None,
            size: 0,
        })
        .collect();
    for ((path, mode, size), oid) in to_hash.into_iter().zip(oids) {
        let same = before
            .get(path.as_str())
            .is_some_and(|t| t.mode == mode && t.oid == oid);
        if !same {
            changes.push(Change {
                path,
                after: Some((mode, oid)),
                size,
            });
        }
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    if changes.is_empty() {
        return Ok(Imported {
            tree: ws.base_tree.clone(),
            ..Imported::default()
        });
    }
    let tree = super::trees::apply(writer?, tracked, &ws.folders, &changes)?;
    let compared = differ?.answer(format!("{} {tree}\n", ws.base_tree).as_bytes())?;
    // `--stdin` says the pair it compares on a line of its own first.
    let numstat = parse_numstat_z(compared.split_once('\n').map_or("", |(_, rest)| rest));
    // Where each new link leads, in the tree after the change.
    let mut tree_links: HashMap<String, String> = tracked
        .iter()
        .filter(|t| t.mode == LINK)
        .filter_map(|t| {
            let target = work.link_target(&t.path, LINK_MAX as usize).ok()?;
            Some((
                t.path.clone(),
                String::from_utf8_lossy(&target).into_owned(),
            ))
        })
        .collect();
    for change in &changes {
        tree_links.remove(&change.path);
    }
    tree_links.extend(link_targets.clone());
    let mut links: Vec<LinkEntry> = link_targets
        .into_iter()
        .map(|(path, target)| LinkEntry {
            resolved: crate::policy::resolve_in_tree(&path, &target, |p| {
                tree_links.get(p).cloned()
            }),
            path,
            target,
        })
        .collect();
    links.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(Imported {
        tree,
        changes,
        numstat,
        links,
    })
}

/// The line counts between two trees, asked on stdin (`<from> <to>`).
const DIFF_TREE: [&str; 7] = [
    "diff-tree",
    "--stdin",
    "-r",
    "--numstat",
    "-z",
    "--no-renames",
    "--no-textconv",
];

/// A git process of the import started before its input is known, then fed it whole
/// ([`Early::answer`]); killed and reaped if the import ends before that.
struct Early<'a> {
    repo: &'a Git,
    args: &'static [&'static str],
    child: Option<std::process::Child>,
}

impl<'a> Early<'a> {
    fn start(repo: &'a Git, args: &'static [&'static str]) -> Result<Early<'a>, GitError> {
        Ok(Early {
            repo,
            args,
            child: Some(repo.spawn(args)?),
        })
    }

    /// Writes `input` (from a thread: git answers while it reads) and closes it; what git
    /// printed, a failure with its stderr.
    fn answer(mut self, input: &[u8]) -> Result<String, GitError> {
        let Some(mut child) = self.child.take() else {
            return Err(self.repo.failure(self.args, "asked twice"));
        };
        let stdin = child.stdin.take();
        std::thread::scope(|scope| {
            let writing = scope.spawn(move || match stdin {
                Some(mut stdin) => std::io::Write::write_all(&mut stdin, input),
                None => Ok(()),
            });
            let finished = self.repo.finish(self.args, child);
            match writing.join() {
                Ok(Ok(())) => finished,
                // Git's own failure says more than the broken pipe it caused.
                Ok(Err(e)) => finished.and(Err(self
                    .repo
                    .failure(self.args, format!("could not write to git: {e}")))),
                Err(_) => Err(self.repo.failure(self.args, "the writing thread failed")),
            }
        })
    }
}

impl Drop for Early<'_> {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            drop(child.stdin.take());
            let _ = child.kill();
            let _ = child.wait();
            crate::reaper::release(child.id());
        }
    }
}

/// See [`super::sizes_between`].
pub(super) fn sizes_between(
    git: &Git,
    from: &str,
    to: &str,
) -> Result<Vec<(String, u64)>, GitError> {
    // Every object `to` brings that `from` lacks, with the path it was first seen at: the
    // blobs of every commit in between, not only of the last (a file added and removed again
    // would still be pushed). Only trees are read to list them.
    let listed = git.run(&["rev-list", "--objects", &format!("{from}..{to}")])?;
    let named: Vec<(&str, &str)> = listed
        .lines()
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, path)| !path.is_empty())
        .collect();
    if named.is_empty() {
        return Ok(Vec::new());
    }
    let mut ask = String::new();
    for (oid, _) in &named {
        ask.push_str(oid);
        ask.push('\n');
    }
    let answers = git.run_with_input(
        &["cat-file", "--batch-check=%(objecttype) %(objectsize)"],
        ask.as_bytes(),
    )?;
    Ok(named
        .into_iter()
        .zip(answers.lines())
        .filter(|(_, answer)| answer.starts_with("blob "))
        .map(|((_, path), answer)| {
            let size = answer
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .unwrap_or(u64::MAX);
            (path.to_string(), size)
        })
        .collect())
}

/// A path that a change between two trees adds or changes (`diff-tree -r`, deletions left
/// out), with its new mode and object id.
struct Entry {
    path: String,
    mode: String,
    oid: String,
}

/// What `from` → `to` adds or changes, read from the trees (no work tree, no content).
fn added_or_changed(git: &Git, from: &str, to: &str) -> Result<Vec<Entry>, GitError> {
    let raw = git.run_bytes(&["diff-tree", "-r", "-z", "--no-renames", from, to])?;
    let mut fields = raw.split(|b| *b == 0).filter(|f| !f.is_empty());
    let mut entries = Vec::new();
    while let Some(meta) = fields.next() {
        let Some(path) = fields.next() else { break };
        let meta = String::from_utf8_lossy(meta);
        let words: Vec<&str> = meta.trim_start_matches(':').split(' ').collect();
        if let [_, mode, _, oid, status] = words.as_slice() {
            if !status.starts_with('D') {
                entries.push(Entry {
                    path: String::from_utf8_lossy(path).into_owned(),
                    mode: mode.to_string(),
                    oid: oid.to_string(),
                });
            }
        }
    }
    Ok(entries)
}

/// See [`super::gitlinks_between`].
pub(super) fn gitlinks_between(git: &Git, from: &str, to: &str) -> Result<Vec<String>, GitError> {
    Ok(added_or_changed(git, from, to)?
        .into_iter()
        .filter(|e| e.mode == fill::GITLINK)
        .map(|e| e.path)
        .collect())
}

/// See [`super::links_between`].
pub(super) fn links_between(git: &Git, from: &str, to: &str) -> Result<Vec<LinkEntry>, GitError> {
    let wanted: Vec<(String, String)> = added_or_changed(git, from, to)?
        .into_iter()
        .filter(|e| e.mode == LINK)
        .map(|e| (e.path, e.oid))
        .collect();
    if wanted.is_empty() {
        return Ok(Vec::new());
    }
    let mut lookup = TreeLinks::new(git, to);
    let mut links = Vec::new();
    for (path, oid) in wanted {
        let target = lookup.target_of_blob(&oid)?;
        let resolved = crate::policy::resolve_in_tree(&path, &target, |p| lookup.link_at(p));
        links.push(LinkEntry {
            path,
            target,
            resolved,
        });
    }
    Ok(links)
}

/// Links of one tree, looked up path by path (with `ls-tree`), for following a chain.
struct TreeLinks<'a> {
    git: &'a Git,
    tree: &'a str,
    seen: HashMap<String, Option<String>>,
}

impl<'a> TreeLinks<'a> {
    fn new(git: &'a Git, tree: &'a str) -> TreeLinks<'a> {
        TreeLinks {
            git,
            tree,
            seen: HashMap::new(),
        }
    }

    /// A link blob's text, refusing one larger than a link can be.
    fn target_of_blob(&self, oid: &str) -> Result<String, GitError> {
        let size = self.git.run(&["cat-file", "-s", oid])?;
        if size.trim().parse::<u64>().map_or(true, |s| s > LINK_MAX) {
            return Ok(String::from("/"));
        }
        let bytes = self.git.run_bytes(&["cat-file", "blob", oid])?;
        Ok(String::from_utf8_lossy(&bytes).into_owned())
    }

    /// The target of the link at `path` in the tree, `None` when it is not a link.
    fn link_at(&mut self, path: &str) -> Option<String> {
        if let Some(known) = self.seen.get(path) {
            return known.clone();
        }
        let found = self
            .git
            .run_bytes(&["ls-tree", "-z", self.tree, "--", path])
            .ok()
            .and_then(|out| {
                let entry = fill::parse_ls_tree(&out).into_iter().next()?;
                (entry.mode == LINK && entry.path == path).then_some(entry.oid)
            })
            .and_then(|oid| self.target_of_blob(&oid).ok());
        self.seen.insert(path.to_string(), found.clone());
        found
    }
}

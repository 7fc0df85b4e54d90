//! Looking at a work tree without reading any file: which of the files written into it may
//! have changed (their `lstat` against what was written, never through a link, on every core
//! as `git add` does its own), where a `.git` hides among the folders of a change, and what in
//! it would make the runner's git wait or miss files ([`blocker`]).
//!
//! Not here: reading or hashing what changed (`import.rs`).

use std::collections::{BTreeSet, HashMap};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use super::fill::{Stat, Tracked, GITLINK};

/// The written files that may have changed, and those gone.
#[derive(Debug, Default)]
pub(super) struct Changed {
    /// Still a file or a link, with another `lstat` than when written (maybe the same bytes).
    pub candidates: Vec<String>,
    /// Gone, a folder now, or below a folder that is no longer one.
    pub deleted: Vec<String>,
}

/// Fewer files than this are looked at on one thread: a thread costs more than they do.
const PER_THREAD: usize = 1024;

/// Every written file of `tracked` (gitlinks aside) compared with what `lstat` says now: its
/// folders first (a folder turned into a link means everything under it is gone, never
/// followed), then itself. Split across the cores in runs of neighbouring paths.
pub(super) fn changed(root: &Path, tracked: &[Tracked]) -> Changed {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    let per_part = tracked.len().div_ceil(cores.clamp(1, 8)).max(PER_THREAD);
    if tracked.len() <= per_part {
        return changed_in(root, tracked);
    }
    std::thread::scope(|scope| {
        let parts: Vec<_> = tracked
            .chunks(per_part)
            .map(|part| scope.spawn(move || changed_in(root, part)))
            .collect();
        let mut all = Changed::default();
        for part in parts {
            let part = part
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            all.candidates.extend(part.candidates);
            all.deleted.extend(part.deleted);
        }
        all
    })
}

fn changed_in(root: &Path, tracked: &[Tracked]) -> Changed {
    let mut folders = FolderCheck::default();
    let mut found = Changed::default();
    for t in tracked {
        if t.mode == GITLINK {
            continue;
        }
        let full = root.join(std::ffi::OsStr::from_bytes(t.path.as_bytes()));
        if !folders.real(root, &full) {
            found.deleted.push(t.path.clone());
            continue;
        }
        match std::fs::symlink_metadata(&full) {
            Ok(meta) if meta.is_file() || meta.file_type().is_symlink() => {
                if t.stat != Some(Stat::of(&meta)) {
                    found.candidates.push(t.path.clone());
                }
            }
            // Gone, or a folder now (what it holds comes back as new files).
            _ => found.deleted.push(t.path.clone()),
        }
    }
    found
}

/// The first `.git` entry (a folder, a file or a link) in a folder of the work tree that holds
/// a file of the result — a changed or new file (`candidates`) or a tracked one — but the
/// top's own; its path, relative to the top. A folder that is not a real one of the work tree
/// (a link) holds nothing of the result and is not entered; nor is a submodule's (a gitlink's)
/// own folder, whose files git never lists, so a submodule checked out there changes nothing.
pub(super) fn nested_git<'a>(
    root: &Path,
    candidates: impl Iterator<Item = &'a str>,
    tracked: &'a [Tracked],
) -> Option<String> {
    let mut folders: BTreeSet<&str> = BTreeSet::new();
    let files = candidates.chain(tracked.iter().map(|t| t.path.as_str()));
    for path in files {
        let mut at = path;
        while let Some((parent, _)) = at.rsplit_once('/') {
            if !folders.insert(parent) {
                break;
            }
            at = parent;
        }
    }
    let mut real = FolderCheck::default();
    folders.into_iter().find_map(|folder| {
        let dir = root.join(std::ffi::OsStr::from_bytes(folder.as_bytes()));
        let dot_git = dir.join(".git");
        (real.folder(root, &dir) && std::fs::symlink_metadata(dot_git).is_ok())
            .then(|| format!("{folder}/.git"))
    })
}

/// Issue 48: the first thing in the work tree that would make the runner's `git ls-files`
/// wait or silently miss files, described: a FIFO, a socket or a device (git opens every
/// `.gitignore` it meets and waits on a FIFO with no writer; anywhere else git leaves one out
/// without a word, so it is refused by name), or a folder that cannot be read (its files
/// would silently go missing). Folders are read by their
/// entries' types (no `stat`, no file opened), never through a link; `.git` entries are left
/// out, as git leaves them.
pub(super) fn blocker(root: &Path) -> Option<String> {
    let shown = |p: &Path| {
        crate::policy::names::shown_bytes(
            p.strip_prefix(root)
                .unwrap_or(p)
                .as_os_str()
                .as_encoded_bytes(),
        )
    };
    let mut todo: Vec<PathBuf> = vec![root.to_path_buf()];
    while let Some(dir) = todo.pop() {
        let entries = match std::fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) => {
                let name = if dir == root {
                    ".".to_string()
                } else {
                    shown(&dir)
                };
                return Some(format!(
                    "the folder {name} could not be read ({e}): make it readable by the runner, or leave it out"
                ));
            }
        };
        for entry in entries.flatten() {
            let name = entry.file_name();
            if name == ".git" {
                continue;
            }
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                todo.push(entry.path());
            } else if !kind.is_file() && !kind.is_symlink() {
                return Some(format!(
                    "{} is a pipe (FIFO), a socket or a device, not a file: leave it out",
                    shown(&entry.path())
                ));
            }
        }
    }
    None
}

/// Whether every folder above a file is a real folder of the work tree (not a link, not a
/// file), checked once per folder.
#[derive(Default)]
struct FolderCheck {
    known: HashMap<PathBuf, bool>,
}

impl FolderCheck {
    fn real(&mut self, root: &Path, file: &Path) -> bool {
        match file.parent() {
            Some(parent) if parent != root && parent.starts_with(root) => self.folder(root, parent),
            _ => true,
        }
    }

    fn folder(&mut self, root: &Path, dir: &Path) -> bool {
        if let Some(known) = self.known.get(dir) {
            return *known;
        }
        let above = match dir.parent() {
            Some(parent) if parent != root && parent.starts_with(root) => self.folder(root, parent),
            _ => true,
        };
        let real = above && std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir());
        self.known.insert(dir.to_path_buf(), real);
        real
    }
}

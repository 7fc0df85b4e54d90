//! Filling a workspace: the files of a tree written by the runner from its own objects (no
//! attribute, filter or hook of anyone's runs: the bytes are the blobs), each file's `fstat`
//! kept to tell later what the agent changed; then the agent's own `.git`. Not for: reading back
//! what changed (`workspace::look`, `workspace::import`) or the run folder's removal (`scratch`).

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use crate::git::{Git, GitError};

/// Git's file modes.
pub(super) const FILE: &str = "100644";
pub(super) const EXECUTABLE: &str = "100755";
pub(super) const LINK: &str = "120000";
pub(super) const GITLINK: &str = "160000";

/// A link's target longer than this is not a link a file system makes.
pub(super) const LINK_MAX: u64 = 4096;

/// One path of the tree a workspace was filled from, as written.
#[derive(Clone, Debug)]
pub(super) struct Tracked {
    pub path: String,
    pub mode: String,
    pub oid: String,
    /// What `lstat` said right after it was written (`None` for a gitlink's empty folder).
    pub stat: Option<Stat>,
}

/// The parts of an `lstat` that change when a file is written, replaced or touched. The
/// change time cannot be set by a program, so a file rewritten with its old size and time
/// still differs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Stat {
    pub ino: u64,
    pub size: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
    pub mode: u32,
}

impl Stat {
    pub fn of(meta: &std::fs::Metadata) -> Stat {
        Stat {
            ino: meta.ino(),
            size: meta.size(),
            mtime: (meta.mtime(), meta.mtime_nsec()),
            ctime: (meta.ctime(), meta.ctime_nsec()),
            mode: meta.mode(),
        }
    }
}

/// One entry of `git ls-tree -r -z`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct TreeEntry {
    pub mode: String,
    pub kind: String,
    pub oid: String,
    pub path: String,
}

/// Parses `git ls-tree -r -z` (or `--full-tree`) output: `<mode> <type> <oid>\t<path>\0`.
pub(super) fn parse_ls_tree(out: &[u8]) -> Vec<TreeEntry> {
    out.split(|b| *b == 0)
        .filter(|r| !r.is_empty())
        .filter_map(|record| {
            let tab = record.iter().position(|b| *b == b'\t')?;
            let head = std::str::from_utf8(&record[..tab]).ok()?;
            let path = String::from_utf8_lossy(&record[tab + 1..]).into_owned();
            let mut words = head.split(' ');
            Some(TreeEntry {
                mode: words.next()?.to_string(),
                kind: words.next()?.to_string(),
                oid: words.next()?.to_string(),
                path,
            })
        })
        .collect()
}

/// A path git may hold that is safe to write under a folder: relative, no `.`/`..`/empty
/// component, no `.git` component in any case.
pub(super) fn safe_path(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && path
            .split('/')
            .all(|c| !c.is_empty() && c != "." && c != ".." && !c.eq_ignore_ascii_case(".git"))
}

/// What a workspace was filled with: every file (with its stat) and every folder of the tree
/// with its tree's id, so the import rewrites the trees on a changed path without reading any.
#[derive(Debug, Default)]
pub(super) struct Filled {
    pub files: Vec<Tracked>,
    /// `(path, tree id)` of every folder below the top.
    pub folders: Vec<(String, String)>,
}

/// Writes every file of `tree` into the empty folder `root`; what was written, with its stat.
pub(super) fn write_tree(repo: &Git, tree: &str, root: &Path) -> Result<Filled, GitError> {
    let listing = repo.run_bytes(&["ls-tree", "-r", "-t", "-z", "--full-tree", tree])?;
    let (subtrees, entries): (Vec<TreeEntry>, Vec<TreeEntry>) = parse_ls_tree(&listing)
        .into_iter()
        .partition(|e| e.kind == "tree");
    if let Some(bad) = entries
        .iter()
        .chain(&subtrees)
        .find(|e| !safe_path(&e.path))
    {
        return Err(repo.failure(
            &["ls-tree", tree],
            format!(
                "the tree holds a path no work tree may have: {:?}",
                bad.path
            ),
        ));
    }
    let blobs: Vec<&TreeEntry> = entries.iter().filter(|e| e.kind == "blob").collect();
    let mut tracked = Vec::with_capacity(entries.len());
    let mut folders = Folders::new(root);
    let args = ["cat-file", "--batch"];
    let mut child = repo.spawn(&args)?;
    let (Some(mut input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = repo.finish(&args, child);
        return Err(repo.failure(&args, "no pipes to git"));
    };
    // Asked from a thread: git answers while it reads, and a full pipe must not stop both.
    let asked: Vec<String> = blobs.iter().map(|e| e.oid.clone()).collect();
    let asking = std::thread::spawn(move || -> std::io::Result<()> {
        let mut input = std::io::BufWriter::new(&mut input);
        for oid in asked {
            writeln!(input, "{oid}")?;
        }
        input.flush()
    });
    let mut reader = BufReader::with_capacity(64 * 1024, output);
    let written = (|| -> Result<(), String> {
        let mut blobs = blobs.iter();
        for entry in &entries {
            let full = root.join(std::ffi::OsStr::from_bytes(entry.path.as_bytes()));
            folders.make_parent(&full)?;
            if entry.mode == GITLINK {
                // A submodule: an empty folder, as a checkout without it leaves.
                std::fs::create_dir(&full).map_err(|e| format!("{}: {e}", entry.path))?;
                tracked.push(Tracked {
                    path: entry.path.clone(),
                    mode: entry.mode.clone(),
                    oid: entry.oid.clone(),
                    stat: None,
                });
                continue;
            }
            if blobs.next().map(|b| &b.oid) != Some(&entry.oid) {
                return Err("the blob list went out of step".to_string());
            }
            let size = read_header(&mut reader, &entry.oid)?;
            let stat = if entry.mode == LINK {
                if size > LINK_MAX {
                    return Err(format!("{}: a link of {size} bytes", entry.path));
                }
                let mut target = Vec::new();
                (&mut reader)
                    .take(size)
                    .read_to_end(&mut target)
                    .map_err(|e| e.to_string())?;
                std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&target), &full)
                    .map_err(|e| format!("{}: {e}", entry.path))?;
                std::fs::symlink_metadata(&full).map_err(|e| format!("{}: {e}", entry.path))?
            } else {
                let mode = if entry.mode == EXECUTABLE {
                    0o755
                } else {
                    0o644
                };
                let mut file = std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .mode(mode)
                    .custom_flags(libc::O_NOFOLLOW)
                    .open(&full)
                    .map_err(|e| format!("{}: {e}", entry.path))?;
                let copied = std::io::copy(&mut (&mut reader).take(size), &mut file)
                    .map_err(|e| format!("{}: {e}", entry.path))?;
                if copied != size {
                    return Err(format!("{}: git ended early", entry.path));
                }
                file.metadata()
                    .map_err(|e| format!("{}: {e}", entry.path))?
            };
            let mut newline = [0u8; 1];
            reader.read_exact(&mut newline).map_err(|e| e.to_string())?;
            tracked.push(Tracked {
                path: entry.path.clone(),
                mode: entry.mode.clone(),
                oid: entry.oid.clone(),
                stat: Some(Stat::of(&stat)),
            });
        }
        Ok(())
    })();
    // The reading end goes first: a git stopped on a full pipe ends, so the asking thread does.
    drop(reader);
    let asked = asking.join();
    let finished = repo.finish(&args, child);
    written.map_err(|e| repo.failure(&args, format!("writing the workspace: {e}")))?;
    match asked {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(repo.failure(&args, format!("talking to git: {e}"))),
        Err(_) => return Err(repo.failure(&args, "the thread asking git failed")),
    }
    finished?;
    Ok(Filled {
        files: tracked,
        folders: subtrees.into_iter().map(|f| (f.path, f.oid)).collect(),
    })
}

/// The header `cat-file --batch` sends before a blob; its size.
fn read_header(reader: &mut impl BufRead, oid: &str) -> Result<u64, String> {
    let mut line = String::new();
    reader.read_line(&mut line).map_err(|e| e.to_string())?;
    let words: Vec<&str> = line.split_whitespace().collect();
    match words.as_slice() {
        [id, "blob", size] if *id == oid => size.parse().map_err(|_| format!("bad header {line}")),
        _ => Err(format!("object {oid}: git answered `{}`", line.trim_end())),
    }
}

/// The folders made so far under a root: each made once, none through a link.
struct Folders {
    made: HashSet<PathBuf>,
}

impl Folders {
    fn new(root: &Path) -> Folders {
        Folders {
            made: HashSet::from([root.to_path_buf()]),
        }
    }

    fn make_parent(&mut self, file: &Path) -> Result<(), String> {
        let Some(parent) = file.parent() else {
            return Ok(());
        };
        if self.made.contains(parent) {
            return Ok(());
        }
        self.make_parent(parent)?;
        match std::fs::create_dir(parent) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                let meta = std::fs::symlink_metadata(parent).map_err(|e| e.to_string())?;
                if !meta.is_dir() {
                    return Err(format!("{} is not a folder", parent.display()));
                }
            }
            Err(e) => return Err(format!("{}: {e}", parent.display())),
        }
        self.made.insert(parent.to_path_buf());
        Ok(())
    }
}

/// The agent's own repository in the work tree `root`: `HEAD` on its branch (or detached),
/// the index of the files written (`index`, made by the runner), the runner's objects
/// borrowed read-only, the runner's `shallow` list when it is a shallow clone. Nothing of it is
/// ever read by the runner again.
pub(super) fn agent_repository(
    repo: &Git,
    root: &Path,
    index: &Path,
    start: super::Start<'_>,
) -> Result<(), GitError> {
    let common = repo.common_dir()?;
    let common = common.canonicalize().unwrap_or(common);
    let dot_git = root.join(".git");
    let io = |e: std::io::Error| repo.failure(&["init"], format!("making the agent's .git: {e}"));
    for dir in ["objects/info", "objects/pack", "refs/heads", "refs/tags"] {
        std::fs::create_dir_all(dot_git.join(dir)).map_err(io)?;
    }
    let sha256 = start.commit.len() == 64;
    let config = if sha256 {
        "[core]\n\trepositoryformatversion = 1\n\tfilemode = true\n\tbare = false\n[extensions]\n\tobjectformat = sha256\n"
    } else {
        "[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = false\n"
    };
    std::fs::write(dot_git.join("config"), config).map_err(io)?;
    std::fs::write(
        dot_git.join("objects/info/alternates"),
        format!("{}\n", common.join("objects").display()),
    )
    .map_err(io)?;
    let head = match start.branch {
        Some(branch) => {
            let reference = dot_git.join("refs/heads").join(branch);
            if let Some(parent) = reference.parent() {
                std::fs::create_dir_all(parent).map_err(io)?;
            }
            std::fs::write(&reference, format!("{}\n", start.commit)).map_err(io)?;
            format!("ref: refs/heads/{branch}\n")
        }
        None => format!("{}\n", start.commit),
    };
    std::fs::write(dot_git.join("HEAD"), head).map_err(io)?;
    if let Ok(shallow) = std::fs::read(common.join("shallow")) {
        std::fs::write(dot_git.join("shallow"), shallow).map_err(io)?;
    }
    std::fs::copy(index, dot_git.join("index")).map_err(io)?;
    Ok(())
}

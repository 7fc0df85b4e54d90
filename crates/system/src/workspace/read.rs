//! Reading what an agent left in a work tree as data (issue 48): every folder on a file's way
//! is opened from the top with `O_NOFOLLOW | O_DIRECTORY`, the file itself with `O_NOFOLLOW |
//! O_NONBLOCK` and checked with `fstat` to be a regular file of the size `lstat` gave; a link
//! is read with `readlinkat`. Whatever a name holds — a newline, `..`, an absolute path after
//! a line break — nothing outside the work tree is opened, and no FIFO or device makes the
//! runner wait.
//!
//! Not here: which files changed (`look.rs`) or writing what was read into the repository
//! (`blobs.rs`).

use std::collections::HashMap;
use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// What a path of the work tree is, seen without following it.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Kind {
    File {
        size: u64,
        executable: bool,
    },
    Link {
        size: u64,
    },
    /// A folder, a FIFO, a socket or a device: no file of a change.
    Other(&'static str),
}

/// A work tree opened at its top, its folders opened once each.
pub(super) struct Tree {
    root: OwnedFd,
    folders: HashMap<String, OwnedFd>,
}

impl Tree {
    pub(super) fn open(root: &Path) -> io::Result<Tree> {
        let path = CString::new(root.as_os_str().as_encoded_bytes())
            .map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        // SAFETY: a valid C string; the descriptor returned is owned here.
        let fd = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        Ok(Tree {
            root: owned(fd)?,
            folders: HashMap::new(),
        })
    }

    /// What `path` (relative to the top) is, by `fstatat` without following it.
    pub(super) fn kind(&mut self, path: &str) -> io::Result<Kind> {
        let (dir, name) = self.parent(path)?;
        let meta = stat_at(dir, &name)?;
        Ok(match meta.st_mode & libc::S_IFMT {
            libc::S_IFREG => Kind::File {
                size: meta.st_size as u64,
                executable: meta.st_mode & 0o111 != 0,
            },
            libc::S_IFLNK => Kind::Link {
                size: meta.st_size as u64,
            },
            libc::S_IFDIR => Kind::Other("a folder"),
            libc::S_IFIFO => Kind::Other("a pipe (FIFO)"),
            libc::S_IFSOCK => Kind::Other("a socket"),
            _ => Kind::Other("a device"),
        })
    }

    /// The target of the link at `path`, at most `max` bytes (a longer one is an error).
    pub(super) fn link_target(&mut self, path: &str, max: usize) -> io::Result<Vec<u8>> {
        let (dir, name) = self.parent(path)?;
        let mut buf = vec![0u8; max + 1];
        // SAFETY: the buffer is `max + 1` bytes long and outlives the call.
        let n = unsafe { libc::readlinkat(dir, name.as_ptr(), buf.as_mut_ptr().cast(), buf.len()) };
        let n = usize::try_from(n).map_err(|_| io::Error::last_os_error())?;
        if n > max {
            return Err(io::Error::other(format!("a link of more than {max} bytes")));
        }
        buf.truncate(n);
        Ok(buf)
    }

    /// The regular file at `path`, opened without following a link and without waiting on a
    /// FIFO or a device, checked to be a regular file of `size` bytes (what `lstat` said).
    pub(super) fn open_file(&mut self, path: &str, size: u64) -> io::Result<File> {
        let (dir, name) = self.parent(path)?;
        // SAFETY: a valid descriptor and C string; the descriptor returned is owned here.
        let fd = unsafe {
            libc::openat(
                dir,
                name.as_ptr(),
                libc::O_RDONLY
                    | libc::O_NOFOLLOW
                    | libc::O_NONBLOCK
                    | libc::O_NOCTTY
                    | libc::O_CLOEXEC,
            )
        };
        let file = File::from(owned(fd)?);
        let meta = file.metadata()?;
        if !meta.file_type().is_file() {
            return Err(io::Error::other("not a regular file"));
        }
        if meta.len() != size {
            return Err(io::Error::other(format!(
                "it changed while it was read ({size} bytes, then {})",
                meta.len()
            )));
        }
        Ok(file)
    }

    /// The folder holding `path`, opened folder by folder from the top without following a
    /// link, and the last name as a C string.
    fn parent(&mut self, path: &str) -> io::Result<(RawFd, CString)> {
        let (folder, name) = path.rsplit_once('/').unwrap_or(("", path));
        let name = c_name(name)?;
        if folder.is_empty() {
            return Ok((self.root.as_raw_fd(), name));
        }
        if let Some(fd) = self.folders.get(folder) {
            return Ok((fd.as_raw_fd(), name));
        }
        let mut at = self.root.as_raw_fd();
        let mut walked = String::new();
        for part in folder.split('/') {
            if !walked.is_empty() {
                walked.push('/');
            }
            walked.push_str(part);
            if let Some(fd) = self.folders.get(&walked) {
                at = fd.as_raw_fd();
                continue;
            }
            let c = c_name(part)?;
            // SAFETY: a valid descriptor and C string; the descriptor returned is owned here.
            let fd = unsafe {
                libc::openat(
                    at,
                    c.as_ptr(),
                    libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC,
                )
            };
            let fd = owned(fd)?;
            at = fd.as_raw_fd();
            self.folders.insert(walked.clone(), fd);
        }
        Ok((at, name))
    }
}

/// A name of one path component: no `/`, no NUL, not `.` or `..` (the import never names
/// one, so one here is a bug, refused rather than followed).
fn c_name(name: &str) -> io::Result<CString> {
    if name.is_empty() || name == "." || name == ".." || name.contains('/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "not a name inside the work tree",
        ));
    }
    CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))
}

fn owned(fd: RawFd) -> io::Result<OwnedFd> {
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor just returned by the kernel, owned by no one else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

fn stat_at(dir: RawFd, name: &CString) -> io::Result<libc::stat> {
    // SAFETY: an all-zero `stat` is valid; fstatat fills it.
    let mut meta: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: a valid descriptor, C string and buffer that outlive the call.
    let r = unsafe { libc::fstatat(dir, name.as_ptr(), &mut meta, libc::AT_SYMLINK_NOFOLLOW) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(meta)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    /// Names with a newline and an absolute path after it, links on the way and FIFOs: the
    /// file is read where it is, a link is never followed, a FIFO never waited on.
    #[test]
    fn files_are_read_in_the_tree_only_without_following_or_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("work");
        let outside = dir.path().join("outside");
        std::fs::create_dir_all(root.join("x\n").join(outside.strip_prefix("/").unwrap())).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("secret"), "outside").unwrap();
        // As the agent of issue 48 named it: a folder `x⏎`, then the path of a file outside.
        let inner = format!("x\n{}/secret", outside.display());
        std::fs::write(root.join(&inner), "inside").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("up")).unwrap();
        let fifo = CString::new(root.join("pipe").as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid C string.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let mut tree = Tree::open(&root).unwrap();
        let size = match tree.kind(&inner).unwrap() {
            Kind::File { size, .. } => size,
            other => panic!("{other:?}"),
        };
        let mut text = String::new();
        tree.open_file(&inner, size)
            .unwrap()
            .read_to_string(&mut text)
            .unwrap();
        assert_eq!(text, "inside");
        assert!(tree.open_file("up/secret", 7).is_err(), "through a link");
        assert_eq!(
            tree.kind("up").unwrap(),
            Kind::Link {
                size: outside.as_os_str().len() as u64
            }
        );
        assert_eq!(tree.kind("pipe").unwrap(), Kind::Other("a pipe (FIFO)"));
        assert!(
            tree.open_file("pipe", 0).is_err(),
            "a FIFO is not waited on"
        );
        assert!(tree.open_file("../outside/secret", 7).is_err());
        assert_eq!(
            tree.link_target("up", 4096).unwrap(),
            outside.as_os_str().as_encoded_bytes()
        );
    }
}

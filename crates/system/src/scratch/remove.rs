//! Removing a folder whatever an agent made of it: trees thousands of levels deep (deeper than
//! `PATH_MAX` and than the open-file limit), folders without read, write or execute permission,
//! a million entries. `std::fs::remove_dir_all` holds one descriptor per level and needs every
//! folder readable, so an agent can make it fail (issue 35: "Too many open files" at 3,000
//! levels, one workspace left behind per run).
//!
//! [`remove_tree`] walks with two descriptors at most: it goes down by `openat` with
//! `O_NOFOLLOW` (a link is removed, never followed), and back up by `openat(.., "..")`,
//! checking that the folder it reached is the one it came from (device and inode), so a tree
//! changed under it is an error, not a walk elsewhere. Names on the way down are kept (one per
//! level, a few bytes each), descriptors are not. Each folder is made `0700` before it is read,
//! through a descriptor opened without following a link.
//!
//! Not for: anything a running process still writes in (the runner removes a workspace once
//! every process of its run is gone, `reaper`).

use std::ffi::{CStr, CString, OsStr};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// Removes `path` and everything under it. A path that does not exist is fine; a link at
/// `path` is removed itself.
pub fn remove_tree(path: &Path) -> io::Result<()> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(e),
    };
    if !meta.is_dir() {
        return std::fs::remove_file(path);
    }
    let root = open_opened_up(None, &c_path(path.as_os_str())?)?;
    empty(root)?;
    std::fs::remove_dir(path)
}

/// One level of the way down: the folder's name in its parent and the parent's identity.
struct Level {
    name: CString,
    parent: (u64, u64),
}

/// Empties the folder `root` (its descriptor) of everything, at any depth.
fn empty(root: OwnedFd) -> io::Result<()> {
    let mut here = root;
    let mut path: Vec<Level> = Vec::new();
    loop {
        match first_folder_after_clearing_files(&here)? {
            Some(name) => {
                let parent = identity(&here)?;
                let child = open_opened_up(Some(&here), &name)?;
                path.push(Level { name, parent });
                here = child;
            }
            None => {
                let Some(level) = path.pop() else {
                    return Ok(());
                };
                let up = open_dir(Some(&here), c"..")?;
                if identity(&up)? != level.parent {
                    return Err(io::Error::other(
                        "the folder changed while it was being removed",
                    ));
                }
                drop(here);
                // SAFETY: unlinkat reads the NUL-terminated name for the duration of the call.
                let rc = unsafe {
                    libc::unlinkat(up.as_raw_fd(), level.name.as_ptr(), libc::AT_REMOVEDIR)
                };
                if rc != 0 {
                    return Err(io::Error::last_os_error());
                }
                here = up;
            }
        }
    }
}

/// Removes every entry of the folder `dir` that is not a folder; returns the name of the first
/// folder found (to go down into), or `None` when the folder is empty.
fn first_folder_after_clearing_files(dir: &OwnedFd) -> io::Result<Option<CString>> {
    // A stream of its own: `closedir` closes the duplicate, never `dir`.
    // SAFETY: dup returns a new descriptor or -1; fdopendir takes ownership of it on success.
    let stream = unsafe {
        let copy = libc::dup(dir.as_raw_fd());
        if copy < 0 {
            return Err(io::Error::last_os_error());
        }
        let stream = libc::fdopendir(copy);
        if stream.is_null() {
            let e = io::Error::last_os_error();
            libc::close(copy);
            return Err(e);
        }
        // Start from the beginning whatever an earlier stream on the same description read.
        libc::rewinddir(stream);
        stream
    };
    let result = (|| {
        loop {
            // SAFETY: `stream` is a valid open directory stream until closedir below; the entry
            // it returns stays valid until the next readdir on it, and we copy the name first.
            let entry = unsafe { libc::readdir(stream) };
            if entry.is_null() {
                return Ok(None);
            }
            // SAFETY: d_name is NUL-terminated within the entry returned just above.
            let name = unsafe { CStr::from_ptr((*entry).d_name.as_ptr()) }.to_owned();
            if name.as_bytes() == b"." || name.as_bytes() == b".." {
                continue;
            }
            if is_folder(dir, &name)? {
                return Ok(Some(name));
            }
            // SAFETY: unlinkat reads the NUL-terminated name for the duration of the call.
            let rc = unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) };
            if rc != 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() != Some(libc::ENOENT) {
                    return Err(e);
                }
            }
        }
    })();
    // SAFETY: `stream` came from fdopendir above and is closed once.
    unsafe { libc::closedir(stream) };
    result
}

/// Whether `name` in `dir` is a folder (a link to one is not).
fn is_folder(dir: &OwnedFd, name: &CStr) -> io::Result<bool> {
    // SAFETY: an all-zero stat is a valid value to be overwritten by fstatat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstatat writes into `st`, which lives for the call, and reads the name.
    let rc = unsafe {
        libc::fstatat(
            dir.as_raw_fd(),
            name.as_ptr(),
            &mut st,
            libc::AT_SYMLINK_NOFOLLOW,
        )
    };
    if rc != 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOENT) => Ok(false),
            _ => Err(e),
        };
    }
    Ok(st.st_mode & libc::S_IFMT == libc::S_IFDIR)
}

/// Opens a folder (relative to `at`, or the current folder) without following a link.
fn open_dir(at: Option<&OwnedFd>, name: &CStr) -> io::Result<OwnedFd> {
    let base = at.map_or(libc::AT_FDCWD, AsRawFd::as_raw_fd);
    let flags = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: openat reads the NUL-terminated name; the descriptor it returns is ours alone.
    let fd = unsafe { libc::openat(base, name.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Opens a folder (as [`open_dir`]) after making it `0700`, never through a link: it is first
/// opened as a path only (`O_PATH | O_NOFOLLOW | O_DIRECTORY`, which a link or a file fails),
/// its mode changed through that descriptor (`/proc/self/fd`, else `fchmodat` without
/// following), then the folder itself is opened from that descriptor.
fn open_opened_up(at: Option<&OwnedFd>, name: &CStr) -> io::Result<OwnedFd> {
    let base = at.map_or(libc::AT_FDCWD, AsRawFd::as_raw_fd);
    let flags = libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC;
    // SAFETY: openat reads the NUL-terminated name; the descriptor it returns is ours alone.
    let fd = unsafe { libc::openat(base, name.as_ptr(), flags) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` was just opened and is owned by nothing else.
    let folder = unsafe { OwnedFd::from_raw_fd(fd) };
    let by_fd = c_path(OsStr::new(&format!("/proc/self/fd/{fd}")))?;
    // SAFETY: chmod and fchmodat read the NUL-terminated names for the duration of the call.
    unsafe {
        if libc::chmod(by_fd.as_ptr(), 0o700) != 0 {
            libc::fchmodat(base, name.as_ptr(), 0o700, libc::AT_SYMLINK_NOFOLLOW);
        }
    }
    open_dir(Some(&folder), c".")
}

/// The (device, inode) of an open folder.
fn identity(fd: &OwnedFd) -> io::Result<(u64, u64)> {
    // SAFETY: an all-zero stat is a valid value to be overwritten by fstat.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat writes into `st`, which lives for the call.
    if unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } != 0 {
        return Err(io::Error::last_os_error());
    }
    #[allow(clippy::useless_conversion)]
    Ok((u64::from(st.st_dev), u64::from(st.st_ino)))
}

fn c_path(path: &OsStr) -> io::Result<CString> {
    CString::new(path.as_bytes()).map_err(|_| io::Error::other("a path with a NUL byte"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    /// Issue 35: 3,000 levels is deeper than PATH_MAX allows a path and than the open-file
    /// limit allows descriptors; folders without permission are entered anyway.
    #[test]
    fn deep_closed_and_linked_trees_are_removed() {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("ws");
        std::fs::create_dir(&root).unwrap();
        // Deep: built level by level from the folder reached, never by a long path.
        let mut here = open_dir(None, &c_path(root.as_os_str()).unwrap()).unwrap();
        for _ in 0..3000 {
            // SAFETY: test-only calls with valid names and descriptors.
            unsafe { libc::mkdirat(here.as_raw_fd(), c"d".as_ptr(), 0o755) };
            here = open_dir(Some(&here), c"d").unwrap();
        }
        // SAFETY: as above.
        unsafe {
            let fd = libc::openat(
                here.as_raw_fd(),
                c"leaf".as_ptr(),
                libc::O_CREAT | libc::O_WRONLY,
                0o644,
            );
            libc::close(fd);
        }
        drop(here);
        // Closed folders, a file without permission, a link to a folder outside.
        let outside = top.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::write(outside.join("keep"), "kept").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        for (dir, mode) in [("closed", 0o000), ("readonly", 0o500), ("noexec", 0o600)] {
            let d = root.join(dir);
            std::fs::create_dir_all(d.join("inner")).unwrap();
            std::fs::write(d.join("inner/f"), "x").unwrap();
            std::fs::set_permissions(&d, std::fs::Permissions::from_mode(mode)).unwrap();
        }
        std::fs::write(root.join("nothing"), "x").unwrap();
        std::fs::set_permissions(root.join("nothing"), std::fs::Permissions::from_mode(0o000))
            .unwrap();
        remove_tree(&root).unwrap();
        assert!(!root.exists());
        assert_eq!(
            std::fs::read_to_string(outside.join("keep")).unwrap(),
            "kept"
        );
        // Missing and plain files.
        remove_tree(&root).unwrap();
        std::fs::write(&root, "f").unwrap();
        remove_tree(&root).unwrap();
        assert!(!root.exists());
    }

    /// The mode is changed on the folder found, never through a link to one.
    #[test]
    fn a_link_to_a_folder_is_never_opened_up() {
        let top = tempfile::tempdir().unwrap();
        let outside = top.path().join("outside");
        std::fs::create_dir(&outside).unwrap();
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o500)).unwrap();
        std::os::unix::fs::symlink(&outside, top.path().join("link")).unwrap();
        let at = open_dir(None, &c_path(top.path().as_os_str()).unwrap()).unwrap();
        assert!(open_opened_up(Some(&at), c"link").is_err());
        let mode = std::fs::metadata(&outside).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o500);
        std::fs::create_dir(top.path().join("closed")).unwrap();
        std::fs::set_permissions(
            top.path().join("closed"),
            std::fs::Permissions::from_mode(0o000),
        )
        .unwrap();
        assert!(open_opened_up(Some(&at), c"closed").is_ok());
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o700)).unwrap();
    }

    #[test]
    fn many_entries_in_one_folder_are_removed() {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("many");
        std::fs::create_dir(&root).unwrap();
        for i in 0..5000 {
            std::fs::write(root.join(format!("f{i}")), "").unwrap();
        }
        for i in 0..50 {
            std::fs::create_dir_all(root.join(format!("d{i}/e"))).unwrap();
        }
        remove_tree(&root).unwrap();
        assert!(!root.exists());
    }
}

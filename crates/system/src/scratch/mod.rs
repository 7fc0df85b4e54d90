//! Private temporary folders for one run's files (prompt, result, askpass token, its workspace):
//! mode 0700 under the temp folder, named `opentiger-<pid>-<purpose>-<random>`, each file written
//! with [`write_private`] mode 0600. [`remove_leftovers`] removes those of ticks killed before
//! they could (process gone; same host, same user); [`remove_tree`] removes any tree an agent made.
//! Not for: filling or reading the workspace (`workspace`) or ending the agents a killed tick left
//! running (`sandbox::groups`).

mod remove;

pub use remove::remove_tree;

use std::io::Write;
use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

const PREFIX: &str = "opentiger-";

/// A folder of mode 0700 in the temp folder, removed with everything in it when dropped.
#[derive(Debug)]
pub struct PrivateDir {
    path: PathBuf,
}

impl PrivateDir {
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        if let Err(e) = remove_tree(&self.path) {
            tracing::warn!("could not remove {}: {e}", self.path.display());
        }
    }
}

/// A new folder of mode 0700, removed when the returned value is dropped.
pub fn private_dir(purpose: &str) -> std::io::Result<PrivateDir> {
    let made = tempfile::Builder::new()
        .prefix(&format!("{PREFIX}{}-{purpose}-", std::process::id()))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()?;
    Ok(PrivateDir { path: made.keep() })
}

/// Writes `bytes` to a new file of mode 0600 (an existing file is replaced).
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(bytes)
}

/// Removes the folders of [`private_dir`] left in the temp folder by processes of this user that
/// are gone; returns what was removed.
pub fn remove_leftovers() -> Vec<PathBuf> {
    remove_leftovers_in(&std::env::temp_dir(), process_alive)
}

fn remove_leftovers_in(tmp: &Path, alive: impl Fn(u32) -> bool) -> Vec<PathBuf> {
    let me = uid();
    let mut removed = Vec::new();
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return removed;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = leftover_pid(&name.to_string_lossy()) else {
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(entry.path()) else {
            continue;
        };
        if !meta.is_dir() || meta.uid() != me || alive(pid) {
            continue;
        }
        if remove_tree(&entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}

/// The pid in `opentiger-<pid>-…`.
fn leftover_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(PREFIX)?;
    let (pid, _) = rest.split_once('-')?;
    pid.parse().ok()
}

/// Our user id.
pub(crate) fn uid() -> u32 {
    // SAFETY: getuid takes no arguments, cannot fail and touches no memory of ours.
    unsafe { libc::getuid() }
}

/// Whether a process with this id exists on this host.
pub fn process_alive(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
        || (!Path::new("/proc/self").exists() && pid == std::process::id())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folders_are_0700_files_0600_and_only_dead_owners_leftovers_go() {
        let dir = private_dir("t").unwrap();
        let mode = std::fs::metadata(dir.path()).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
        let file = dir.path().join("prompt.md");
        write_private(&file, b"x").unwrap();
        write_private(&file, b"y").unwrap();
        let mode = std::fs::metadata(&file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);

        let tmp = tempfile::tempdir().unwrap();
        for name in ["opentiger-10-run-a", "opentiger-20-run-b", "other-10-x"] {
            std::fs::create_dir(tmp.path().join(name)).unwrap();
        }
        std::fs::write(tmp.path().join("opentiger-30-file"), "").unwrap();
        let removed = remove_leftovers_in(tmp.path(), |pid| pid == 20);
        assert_eq!(removed, vec![tmp.path().join("opentiger-10-run-a")]);
        assert!(tmp.path().join("opentiger-20-run-b").exists());
        assert!(tmp.path().join("other-10-x").exists());
        assert_eq!(leftover_pid("opentiger-42-run-x"), Some(42));
        assert_eq!(leftover_pid("opentiger-x-run"), None);
    }
}

//! A lock file that keeps two local ticks (or a tick and `task add`) from writing one state file
//! at once. Created exclusively, holding the owner's pid; a lock whose owner is gone is stale and
//! taken over. Not for: ticks on other machines (the state ref's compare-and-swap, `statebranch`)
//! or a task's run lease (`store`, `engine::recovery::leases`).

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::Failure;

pub struct FileLock {
    path: PathBuf,
}

impl FileLock {
    pub fn acquire(state_path: &Path) -> Result<FileLock, Failure> {
        let path = PathBuf::from(format!("{}.lock", state_path.display()));
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        for _ in 0..2 {
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut file) => {
                    let _ = writeln!(file, "{}", std::process::id());
                    return Ok(FileLock { path });
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let owner = std::fs::read_to_string(&path).unwrap_or_default();
                    let pid: Option<u32> = owner.trim().parse().ok();
                    if pid.is_some_and(process_alive) {
                        return Err(Failure {
                            code: 3,
                            message: format!(
                                "{} is locked by process {}: another opentiger command is writing this state\n  fix: wait for it to finish (or remove the lock file if that process is gone)",
                                path.display(),
                                owner.trim()
                            ),
                        });
                    }
                    // Stale: its owner is gone.
                    let _ = std::fs::remove_file(&path);
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(Failure::tick(format!(
            "could not take the lock {}",
            path.display()
        )))
    }
}

impl Drop for FileLock {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Whether a local process id is alive (Linux and other systems with /proc; elsewhere assume so).
pub fn process_alive(pid: u32) -> bool {
    if Path::new("/proc/self").exists() {
        Path::new(&format!("/proc/{pid}")).exists()
    } else {
        true
    }
}

//! A cgroup of its own for each run (issue 47), where the runner's cgroup v2 is delegated to
//! it: the run's memory (`memory.max`, no swap, the whole group killed at the limit) and its
//! processes (`pids.max`) are held for the run as a whole, and the kernel counts what it hit
//! (`memory.events`, `pids.events`).
//!
//! Two set-ups give the runner a delegated cgroup ([`plan`], read without changing anything):
//! - **a cgroup of its own** (`systemd-run --user --scope -p Delegate=yes opentiger tick`): it
//!   holds the runner alone and its user may write it. The runner moves itself into a leaf
//!   (`opentiger`; cgroup v2 lets no cgroup with processes hand controllers to its children)
//!   and turns `memory` and `pids` on for the runs beside it;
//! - **a parent made for it** (a set-up with root rights): the parent of the runner's cgroup
//!   already hands `memory` and `pids` to its children and its user may write it; runs are
//!   made there, beside the runner's cgroup.
//!
//! The child joins its run's cgroup first thing between fork and exec ([`join`]: `0` written
//! to `cgroup.procs`, opened by the runner before the fork, whose opener's rights the kernel
//! checks). Not here: rlimits, where no cgroup is delegated (`limits`), the limits themselves.

use std::io;
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use super::limits::{Events, Limits};

/// Where cgroup v2 is mounted.
pub const ROOT: &str = "/sys/fs/cgroup";

/// The controllers a run's cgroup needs.
const NEEDED: [&str; 2] = ["memory", "pids"];

/// What the runner may do with its cgroup.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Plan {
    /// Its own cgroup `own` holds it alone and is its user's: it moves into `own/opentiger`
    /// and makes runs in `own`.
    Leaf { own: PathBuf },
    /// The parent of its cgroup hands out the controllers and is its user's: runs go there.
    Beside { parent: PathBuf },
}

/// Where runs' cgroups are made, once the runner took its delegation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Delegation {
    pub base: PathBuf,
}

/// What the runner may do with its cgroup v2 under `root`, read from `self_cgroup` (the text
/// of `/proc/self/cgroup`) and the files there; `pid`: the runner's. `Err`: why runs get
/// rlimits instead.
pub fn plan(root: &Path, self_cgroup: &str, pid: u32) -> Result<Plan, String> {
    let Some(rel) = self_cgroup.lines().find_map(|l| l.strip_prefix("0::")) else {
        return Err("the runner is in no cgroup v2 (a cgroup v1 system)".to_string());
    };
    if !root.join("cgroup.controllers").is_file() {
        return Err(format!(
            "cgroup v2 is not mounted at {} (a v1 or hybrid hierarchy, whose memory and pids controllers are v1's)",
            root.display()
        ));
    }
    let own = root.join(rel.trim().trim_start_matches('/'));
    let has_all = |file: &Path| {
        let words = std::fs::read_to_string(file).unwrap_or_default();
        NEEDED
            .iter()
            .all(|c| words.split_whitespace().any(|w| w == *c))
    };
    let alone = std::fs::read_to_string(own.join("cgroup.procs"))
        .is_ok_and(|procs| procs.split_whitespace().eq([pid.to_string().as_str()]));
    let own_writable = ["", "cgroup.procs", "cgroup.subtree_control"]
        .iter()
        .all(|f| writable(&own.join(f)));
    if own != root && has_all(&own.join("cgroup.controllers")) && own_writable && alone {
        return Ok(Plan::Leaf { own });
    }
    if let Some(parent) = own.parent().filter(|p| p.starts_with(root) && own != root) {
        let parent_writable = writable(parent) && writable(&parent.join("cgroup.procs"));
        if has_all(&parent.join("cgroup.subtree_control")) && parent_writable {
            return Ok(Plan::Beside {
                parent: parent.to_path_buf(),
            });
        }
    }
    let rel = rel.trim();
    Err(if !has_all(&own.join("cgroup.controllers")) {
        format!("the runner's cgroup {rel} has no memory and pids controllers")
    } else if !own_writable {
        format!("the runner's cgroup {rel} is not delegated to its user")
    } else {
        format!(
            "the runner's cgroup {rel} holds other processes too, and its parent is not delegated"
        )
    })
}

impl Plan {
    /// Takes the delegation: for a [`Plan::Leaf`], moves the process `pid` into the leaf and
    /// turns the controllers on for its siblings.
    pub fn take(&self, pid: u32) -> io::Result<Delegation> {
        match self {
            Plan::Leaf { own } => {
                let leaf = own.join("opentiger");
                match std::fs::create_dir(&leaf) {
                    Ok(()) => {}
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                    Err(e) => return Err(e),
                }
                write_file(&leaf.join("cgroup.procs"), &pid.to_string())?;
                write_file(&own.join("cgroup.subtree_control"), "+memory +pids")?;
                Ok(Delegation { base: own.clone() })
            }
            Plan::Beside { parent } => Ok(Delegation {
                base: parent.clone(),
            }),
        }
    }
}

/// This process's delegation, taken once (`Err`: why there is none).
pub fn delegation() -> Result<&'static Delegation, String> {
    static TAKEN: OnceLock<Result<Delegation, String>> = OnceLock::new();
    TAKEN
        .get_or_init(|| {
            let text = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
            let pid = std::process::id();
            let plan = plan(Path::new(ROOT), &text, pid)?;
            plan.take(pid)
                .map_err(|e| format!("the runner's cgroup could not be set up for runs: {e}"))
        })
        .as_ref()
        .map_err(String::clone)
}

/// What this machine offers, for `doctor`: read only, nothing moved.
pub fn offered() -> Result<Plan, String> {
    let text = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
    plan(Path::new(ROOT), &text, std::process::id())
}

/// One run's cgroup, removed by [`RunGroup::remove`].
#[derive(Debug)]
pub struct RunGroup {
    dir: PathBuf,
    procs: OwnedFd,
}

impl RunGroup {
    /// Makes `name` under the delegation with `limits`; `extra`: processes the sandbox adds.
    pub fn create(
        delegation: &Delegation,
        name: &str,
        limits: &Limits,
        extra: u64,
    ) -> io::Result<RunGroup> {
        let dir = delegation.base.join(name);
        std::fs::create_dir(&dir)?;
        RunGroup::configure(dir.clone(), limits, extra).inspect_err(|_| {
            let _ = std::fs::remove_dir(&dir);
        })
    }

    /// Writes `limits` into the cgroup `dir` (made with its files by the kernel) and opens its
    /// `cgroup.procs`.
    fn configure(dir: PathBuf, limits: &Limits, extra: u64) -> io::Result<RunGroup> {
        if let Some(memory) = &limits.memory {
            write_file(&dir.join("memory.max"), &(memory.amount << 20).to_string())?;
            // Not every kernel accounts swap; where it does, the limit is memory alone.
            let _ = write_file(&dir.join("memory.swap.max"), "0");
            let _ = write_file(&dir.join("memory.oom.group"), "1");
        }
        if let Some(processes) = &limits.processes {
            write_file(
                &dir.join("pids.max"),
                &processes.amount.saturating_add(extra).to_string(),
            )?;
        }
        let procs = OwnedFd::from(
            std::fs::OpenOptions::new()
                .write(true)
                .open(dir.join("cgroup.procs"))?,
        );
        Ok(RunGroup { dir, procs })
    }

    /// The descriptor the child writes to to join ([`join`]); it closes on exec.
    pub fn procs_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }

    /// What the kernel counted for the run.
    pub fn events(&self) -> Events {
        let count = |file: &str, key: &str| {
            std::fs::read_to_string(self.dir.join(file))
                .unwrap_or_default()
                .lines()
                .find_map(|l| l.strip_prefix(key)?.trim().parse::<u64>().ok())
                .unwrap_or(0)
        };
        Events {
            oom_kills: count("memory.events", "oom_kill "),
            fork_refusals: count("pids.events", "max "),
        }
    }

    /// Kills what is left in it (`cgroup.kill`, Linux 5.14) and removes it.
    pub fn remove(self) {
        let _ = write_file(&self.dir.join("cgroup.kill"), "1");
        for _ in 0..100 {
            match std::fs::remove_dir(&self.dir) {
                Ok(()) => return,
                Err(e) if e.kind() == io::ErrorKind::NotFound => return,
                Err(_) => std::thread::sleep(std::time::Duration::from_millis(2)),
            }
        }
        tracing::warn!(dir = %self.dir.display(), "a run's cgroup could not be removed");
    }
}

/// Moves the calling process into the cgroup whose `cgroup.procs` is open as `fd`.
///
/// # Safety
/// One `write`; meant for a child between fork and exec.
pub unsafe fn join(fd: RawFd) -> io::Result<()> {
    if libc::write(fd, b"0".as_ptr().cast(), 1) == 1 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

fn write_file(path: &Path, text: &str) -> io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::OpenOptions::new().write(true).open(path)?;
    file.write_all(text.as_bytes())
}

fn writable(path: &Path) -> bool {
    use std::os::unix::ffi::OsStrExt;
    let Ok(path) = std::ffi::CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: a valid NUL-terminated path; access reads nothing else of ours.
    unsafe { libc::access(path.as_ptr(), libc::W_OK) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::RunLimits;

    /// A fake cgroup v2 tree: `root` with `own` (holding `procs`) below it.
    fn tree(own: &str, controllers: &str, procs: &str, parent_subtree: &str) -> tempfile::TempDir {
        let root = tempfile::tempdir().unwrap();
        let own_dir = root.path().join(own);
        std::fs::create_dir_all(&own_dir).unwrap();
        std::fs::write(root.path().join("cgroup.controllers"), "cpu memory pids").unwrap();
        std::fs::write(own_dir.join("cgroup.controllers"), controllers).unwrap();
        std::fs::write(own_dir.join("cgroup.procs"), procs).unwrap();
        std::fs::write(own_dir.join("cgroup.subtree_control"), "").unwrap();
        let parent = own_dir.parent().unwrap();
        std::fs::write(parent.join("cgroup.subtree_control"), parent_subtree).unwrap();
        std::fs::write(parent.join("cgroup.procs"), "").unwrap();
        root
    }

    #[test]
    fn a_delegated_cgroup_is_found_where_it_is_and_refused_with_why() {
        let scope = "user.slice/run.scope";
        let root = tree(scope, "memory pids", "42\n", "");
        let text = format!("0::/{scope}\n");
        assert_eq!(
            plan(root.path(), &text, 42),
            Ok(Plan::Leaf {
                own: root.path().join(scope)
            })
        );
        // Another process shares it: not a leaf; its parent hands out nothing either.
        let shared = tree(scope, "memory pids", "42\n43\n", "cpu");
        let err = plan(shared.path(), &text, 42).unwrap_err();
        assert!(err.contains("holds other processes too"), "{err}");
        // The action's set-up: the parent hands out memory and pids.
        let beside = tree("opentiger/step", "memory pids", "7\n42\n", "memory pids");
        assert_eq!(
            plan(beside.path(), "0::/opentiger/step\n", 42),
            Ok(Plan::Beside {
                parent: beside.path().join("opentiger")
            })
        );
        let no_memory = tree(scope, "cpu pids", "42\n", "");
        let err = plan(no_memory.path(), &text, 42).unwrap_err();
        assert!(err.contains("no memory and pids controllers"), "{err}");
        // v1 and hybrid machines.
        let err = plan(root.path(), "4:memory:/x\n", 42).unwrap_err();
        assert!(err.contains("cgroup v1"), "{err}");
        let empty = tempfile::tempdir().unwrap();
        let err = plan(empty.path(), "0::/\n", 42).unwrap_err();
        assert!(err.contains("not mounted"), "{err}");
    }

    #[test]
    fn taking_a_leaf_moves_the_runner_and_hands_out_the_controllers() {
        let scope = "user.slice/run.scope";
        let root = tree(scope, "memory pids", "42\n", "");
        let own = root.path().join(scope);
        let plan = plan(root.path(), &format!("0::/{scope}\n"), 42).unwrap();
        // The kernel's files exist before a write; the fake leaf gets its own.
        std::fs::create_dir(own.join("opentiger")).unwrap();
        std::fs::write(own.join("opentiger/cgroup.procs"), "").unwrap();
        let delegation = plan.take(42).unwrap();
        assert_eq!(delegation.base, own);
        let read = |p: &str| std::fs::read_to_string(own.join(p)).unwrap();
        assert_eq!(read("opentiger/cgroup.procs"), "42");
        assert_eq!(read("cgroup.subtree_control"), "+memory +pids");
    }

    #[test]
    fn a_run_s_cgroup_gets_its_limits_and_reports_what_it_hit() {
        let base = tempfile::tempdir().unwrap();
        let delegation = Delegation {
            base: base.path().to_path_buf(),
        };
        let run = RunLimits {
            memory_mb: 512,
            processes: 100,
            file_mb: 0,
            tmp_mb: 0,
        };
        let limits = Limits::of(&run, None);
        // The kernel makes a cgroup's files with its folder; the fake makes them here.
        let dir = base.path().join("run-1");
        std::fs::create_dir(&dir).unwrap();
        let files = [
            "memory.max",
            "memory.swap.max",
            "memory.oom.group",
            "pids.max",
            "cgroup.procs",
        ];
        for f in files {
            std::fs::write(dir.join(f), "").unwrap();
        }
        let group = RunGroup::configure(dir.clone(), &limits, 2).unwrap();
        assert!(
            RunGroup::create(&delegation, "run-1", &limits, 2).is_err(),
            "it exists"
        );
        let read = |p: &str| std::fs::read_to_string(dir.join(p)).unwrap();
        assert_eq!(read("memory.max"), (512u64 << 20).to_string());
        assert_eq!(read("memory.swap.max"), "0");
        assert_eq!(read("pids.max"), "102");
        // SAFETY: the descriptor is the fake cgroup.procs, open for writing.
        unsafe { join(group.procs_fd()).unwrap() };
        assert_eq!(read("cgroup.procs"), "0");
        std::fs::write(
            dir.join("memory.events"),
            "low 0\nhigh 0\nmax 9\noom 1\noom_kill 1\n",
        )
        .unwrap();
        std::fs::write(dir.join("pids.events"), "max 0\n").unwrap();
        assert_eq!(
            group.events(),
            Events {
                oom_kills: 1,
                fork_refusals: 0
            }
        );
    }
}

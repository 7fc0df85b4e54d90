//! Agents outliving a killed runner: each agent's process group is recorded on disk while it
//! runs, so that the next tick on the same host can kill what a `SIGKILL`ed tick left running
//! before it claims the same work again (otherwise two agents edit one task at once).
//!
//! A record is a file `<runner pid>-<run id>` in the repository's `.git/opentiger/agents/`
//! holding `<process group id> <start time of its leader>`; the start time (from
//! `/proc/<pid>/stat`) tells a reused process id from ours. The record is removed when the
//! group was killed at the end of the run. [`kill_orphans`] kills the groups of records whose
//! runner is gone and removes the records; [`kill_orphaned_agents`] does it for a repository
//! before a tick claims anything (the runner records, the tick ends what was left). Linux only
//! (elsewhere nothing is recorded).
//!
//! Not for: processes of a run still going (the runner kills its group when the run ends) or
//! what a run left in its own session while the runner lives (`crate::reaper`).

use std::path::{Path, PathBuf};

/// Where the records of a repository live.
pub fn records_dir(common_git_dir: &Path) -> PathBuf {
    common_git_dir.join("opentiger").join("agents")
}

/// The folder of process-group records of the runner's repository `repo` (agents' and
/// checks'), read from the runner's own files: never from a workspace, whose `.git` (and so
/// its `commondir` or `gitdir:`) is the agent's. `None` when `repo` is no repository.
pub fn records_of(repo: &Path) -> Option<PathBuf> {
    let common = crate::git::Git::new(repo).common_dir().ok()?;
    Some(records_dir(&common))
}

/// Ends what killed ticks left running in the repository `repo` on this host — the agents' and
/// checks' process groups and the processes of their runs that left them — before anything is
/// claimed again; returns the group ids killed. Called first by a tick and by each half of a
/// fan-out's work (`work --run`, `work --output`).
pub fn kill_orphaned_agents(repo: &Path) -> Vec<u32> {
    records_of(repo).map_or_else(Vec::new, |dir| kill_orphans(&dir))
}

/// The record of one run by this process.
pub fn record_path(dir: &Path, run_id: &str) -> PathBuf {
    dir.join(format!("{}-{run_id}", std::process::id()))
}

/// Writes the record of a group just started (its leader is `pgid`).
pub fn write_record(path: &Path, pgid: u32) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let start = start_time(pgid).unwrap_or_default();
    crate::scratch::write_private(path, format!("{pgid} {start}\n").as_bytes())
}

/// The variable every check process gets (agents have `OPENTIGER_RUN_ID`): with the run id,
/// what names a process of a run after it left its group.
pub const CHECK_TAG_VAR: &str = "OPENTIGER_CHECK";

/// Kills the groups whose runner is gone, and the processes of those runs that left their group
/// (found by the run's variable in their environment); returns the group ids killed.
fn kill_orphans(dir: &Path) -> Vec<u32> {
    let mut gone_runs = Vec::new();
    let killed = kill_orphans_with(
        dir,
        crate::scratch::process_alive,
        start_time,
        |pgid| {
            // SAFETY: kill with a negative pid signals a process group; it touches no memory.
            unsafe { libc::kill(-(pgid as i32), libc::SIGKILL) == 0 }
        },
        |run| gone_runs.push(run.to_string()),
    );
    if !gone_runs.is_empty() {
        kill_tagged(&gone_runs);
    }
    killed
}

/// Kills every process whose environment names one of `runs` (`OPENTIGER_RUN_ID=<run>` or
/// `OPENTIGER_CHECK=<run>`): what a killed runner's agents moved out of their groups, unless
/// they also emptied their environment (README: not enforced).
fn kill_tagged(runs: &[String]) {
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return;
    };
    for pid in entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| pid != me)
    {
        let Ok(environ) = std::fs::read(format!("/proc/{pid}/environ")) else {
            continue;
        };
        if tagged(&environ, runs) {
            if let Ok(pid) = libc::pid_t::try_from(pid) {
                // SAFETY: kill has no memory effects.
                unsafe { libc::kill(pid, libc::SIGKILL) };
            }
        }
    }
}

/// Whether an environment block (`NAME=value\0…`) carries the tag of one of `runs`.
fn tagged(environ: &[u8], runs: &[String]) -> bool {
    environ.split(|&b| b == 0).any(|var| {
        let var = String::from_utf8_lossy(var);
        match var.split_once('=') {
            Some(("OPENTIGER_RUN_ID" | CHECK_TAG_VAR, value)) => runs.iter().any(|r| r == value),
            _ => false,
        }
    })
}

fn kill_orphans_with(
    dir: &Path,
    alive: impl Fn(u32) -> bool,
    started: impl Fn(u32) -> Option<u64>,
    kill: impl Fn(u32) -> bool,
    mut gone_run: impl FnMut(&str),
) -> Vec<u32> {
    let mut killed = Vec::new();
    let Ok(entries) = std::fs::read_dir(dir) else {
        return killed;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(runner) = name.split('-').next().and_then(|p| p.parse::<u32>().ok()) else {
            continue;
        };
        if alive(runner) {
            continue;
        }
        if let Some((_, run)) = name.split_once('-') {
            gone_run(run);
        }
        let text = std::fs::read_to_string(entry.path()).unwrap_or_default();
        let mut fields = text.split_whitespace();
        let pgid = fields.next().and_then(|p| p.parse::<u32>().ok());
        let recorded: Option<u64> = fields.next().and_then(|s| s.parse().ok());
        if let Some(pgid) = pgid.filter(|&p| p > 1) {
            // A leader that still exists must be the one recorded, not a reused id. A leader
            // that is gone leaves its group id reserved while any member lives.
            let same = match (started(pgid), recorded) {
                (Some(now), Some(then)) => now == then,
                (Some(_), None) => false,
                (None, _) => true,
            };
            if same && kill(pgid) {
                killed.push(pgid);
            }
        }
        let _ = std::fs::remove_file(entry.path());
    }
    killed
}

/// The start time of a process (clock ticks since boot), from `/proc/<pid>/stat`.
fn start_time(pid: u32) -> Option<u64> {
    crate::reaper::stat_field(pid, 22)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_groups_of_gone_runners_that_are_still_ours_are_killed() {
        let dir = tempfile::tempdir().unwrap();
        let write = |name: &str, text: &str| std::fs::write(dir.path().join(name), text).unwrap();
        write("10-run-a", "100 5000\n"); // runner gone, leader alive and the same: killed
        write("11-run-b", "200 5000\n"); // runner gone, id reused by another process: spared
        write("12-run-c", "300 7000\n"); // runner gone, leader gone: the group may live on
        write("20-run-d", "400 5000\n"); // runner alive: left alone
        let started = |pid: u32| match pid {
            100 | 400 => Some(5000),
            200 => Some(9999),
            _ => None,
        };
        let mut runs = Vec::new();
        let mut killed = kill_orphans_with(
            dir.path(),
            |pid| pid == 20,
            started,
            |_| true,
            |run| runs.push(run.to_string()),
        );
        killed.sort_unstable();
        assert_eq!(killed, [100, 300]);
        runs.sort();
        assert_eq!(runs, ["run-a", "run-b", "run-c"]);
        let left: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, ["20-run-d"]);
    }

    #[test]
    fn a_process_is_found_by_its_run_s_variable() {
        let runs = ["abc123".to_string(), "opentiger-7-check-x".to_string()];
        let cases: [(&[u8], bool); 5] = [
            (b"PATH=/bin\0OPENTIGER_RUN_ID=abc123\0", true),
            (b"OPENTIGER_CHECK=opentiger-7-check-x\0HOME=/h\0", true),
            (b"OPENTIGER_RUN_ID=abc1234\0", false),
            (b"X=OPENTIGER_RUN_ID=abc123\0", false),
            (b"", false),
        ];
        for (environ, expected) in cases {
            assert_eq!(
                tagged(environ, &runs),
                expected,
                "{}",
                String::from_utf8_lossy(environ)
            );
        }
    }

    /// The records of a repository are found in its common git folder, from a linked worktree
    /// as from the repository itself; a gone runner's record is removed, a live one's kept.
    #[test]
    fn a_repository_s_orphans_are_found_in_its_common_git_folder() {
        let root = tempfile::tempdir().unwrap();
        let repo = root.path().join("repo");
        let git = repo.join(".git");
        std::fs::create_dir_all(git.join("worktrees").join("wt")).unwrap();
        std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").unwrap();
        let linked_git = git.join("worktrees").join("wt");
        std::fs::write(linked_git.join("HEAD"), "ref: refs/heads/wt\n").unwrap();
        std::fs::write(linked_git.join("commondir"), "../..\n").unwrap();
        let linked = root.path().join("wt");
        std::fs::create_dir_all(&linked).unwrap();
        std::fs::write(
            linked.join(".git"),
            format!("gitdir: {}\n", linked_git.display()),
        )
        .unwrap();

        let dir = records_of(&repo).expect("a repository");
        assert_eq!(dir, records_dir(&git));
        assert_eq!(
            records_of(&linked).map(|d| d.canonicalize().ok()),
            Some(dir.canonicalize().ok())
        );

        // Group 1 is never killed, and the run ids match no process: nothing is signalled.
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("999999999-run-gone-41a"), "1 0\n").unwrap();
        let mine = format!("{}-run-live-41a", std::process::id());
        std::fs::write(dir.join(&mine), "1 0\n").unwrap();
        assert!(kill_orphaned_agents(&linked).is_empty());
        let left: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(left, [mine]);
    }

    #[test]
    fn our_own_start_time_is_read() {
        assert!(start_time(std::process::id()).is_some());
        let dir = tempfile::tempdir().unwrap();
        let path = record_path(dir.path(), "run1");
        write_record(&path, std::process::id()).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(
            text.starts_with(&format!("{} ", std::process::id())),
            "{text}"
        );
    }
}

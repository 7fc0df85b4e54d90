//! Nothing a program starts outlives its run, whatever it did to leave its process group.
//!
//! Killing a run's process group misses what the program moved out of it: a process in a new
//! session (`setsid`), a double fork, one that ignores `SIGTERM` and `SIGHUP`. Such a process
//! keeps the agent's Landlock domain (it cannot write outside the agent's paths) but can read
//! files and keep writing the agent's workspace while the runner runs git there.
//!
//! So the runner makes itself a *child subreaper* (`PR_SET_CHILD_SUBREAPER`, Linux 3.4): a
//! process orphaned anywhere below it is re-parented to the runner instead of to init. When a run
//! ends, [`sweep`] kills every child of the runner it does not know of, reaps it, and repeats
//! until none is left: killing one orphan re-parents its own children to the runner, and the next
//! round takes them. The runner runs one program at a time while it sweeps (the act phase is
//! sequential); the programs it started and still waits for (its own git, long-lived ones such
//! as `cat-file --batch` and `fast-import`, an agent) are registered — [`start`], [`keep`] —
//! and spared.
//!
//! Those registered programs each lead a process group of their own, which no signal to the
//! runner's group reaches (issue 49: a terminal's Ctrl-C must not cut the runner's own state
//! save). So when the runner must end at once (a second interrupt, `process::interrupt`),
//! [`end_all`] kills their groups and every child left: nothing it started outlives it.
//!
//! Not for: a run's own process group (`process`), or what a runner killed with `SIGKILL` left
//! (it can sweep nothing; the next tick ends the recorded groups and every process tagged with a
//! dead run, `sandbox::groups`).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard, PoisonError};

static ACTIVE: AtomicBool = AtomicBool::new(false);
/// The children the runner started and waits for, each leading a group of its own.
static KEPT: Mutex<Option<HashSet<u32>>> = Mutex::new(None);

fn kept() -> MutexGuard<'static, Option<HashSet<u32>>> {
    KEPT.lock().unwrap_or_else(PoisonError::into_inner)
}

/// At most this many rounds of kill-and-reap; each round takes one generation of orphans.
const MAX_ROUNDS: usize = 64;

/// Makes this process the subreaper of everything it starts. Returns whether that holds (Linux
/// only). Call once, early, in the binary's `main`.
pub fn become_subreaper() -> bool {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with PR_SET_CHILD_SUBREAPER takes plain integers and touches no memory.
        let rc = unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };
        ACTIVE.store(rc == 0, Ordering::Relaxed);
    }
    ACTIVE.load(Ordering::Relaxed)
}

/// Stops being a subreaper, for a command that runs several opentiger processes side by side
/// (`eval --jobs`): each of them is its own subreaper and sweeps after its own runs, and a
/// sweep here, after any one program ended, would kill the others still running.
pub fn stand_down() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: as in `become_subreaper`.
        unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) };
    }
    ACTIVE.store(false, Ordering::Relaxed);
}

/// Whether this process is a subreaper (and so sweeps after each run).
pub fn in_force() -> bool {
    ACTIVE.load(Ordering::Relaxed)
}

/// Starts `cmd` and keeps its child (as [`keep`]) in one step: [`end_all`] either runs before
/// it starts or sees it, so no child of the runner's escapes an exit at once. The caller
/// [`release`]s it once waited for.
pub fn start(cmd: &mut std::process::Command) -> std::io::Result<std::process::Child> {
    let mut kept = kept();
    let child = cmd.spawn()?;
    kept.get_or_insert_with(HashSet::new).insert(child.id());
    Ok(child)
}

/// Spares a child the runner keeps on purpose from [`sweep`], until [`release`]; [`end_all`]
/// ends its group.
pub fn keep(pid: u32) {
    kept().get_or_insert_with(HashSet::new).insert(pid);
}

/// A child kept (as [`keep`]) until this is dropped.
pub struct Kept(u32);

impl Kept {
    /// Starts `cmd` as [`start`] does, kept until the guard is dropped (after the child is
    /// waited for).
    pub fn start(cmd: &mut std::process::Command) -> std::io::Result<(std::process::Child, Kept)> {
        let child = start(cmd)?;
        let pid = child.id();
        Ok((child, Kept(pid)))
    }
}

impl Drop for Kept {
    fn drop(&mut self) {
        release(self.0);
    }
}

/// The child kept with [`keep`] has been waited for.
pub fn release(pid: u32) {
    if let Some(set) = kept().as_mut() {
        set.remove(&pid);
    }
}

/// For a process about to end at once: kills (`SIGKILL`) the group of every kept child and
/// every child of this process, reaping none. Holds the registry while it does, so a child
/// started meanwhile ([`start`]) waits for it. Returns how many kept groups it signalled.
pub fn end_all() -> usize {
    let kept = kept();
    let mut ended = 0;
    for &pid in kept.iter().flatten() {
        // Never signal "every process" (-1) or our own group (0).
        if let Ok(pid @ 2..) = libc::pid_t::try_from(pid) {
            // SAFETY: kill has no memory effects; a negative pid addresses the process group.
            // The pid is our unreaped child, so neither it nor its group id was reused.
            unsafe {
                libc::kill(-pid, libc::SIGKILL);
                libc::kill(pid, libc::SIGKILL);
            }
            ended += 1;
        }
    }
    for pid in children_of(std::process::id()) {
        if let Ok(pid @ 2..) = libc::pid_t::try_from(pid) {
            // SAFETY: as above; an unreaped child of ours.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }
    drop(kept);
    ended
}

/// Kills and reaps every child of this process that is not kept, until none is left. Returns
/// how many were killed. Does nothing unless this process is a subreaper.
pub fn sweep() -> usize {
    if !in_force() {
        return 0;
    }
    let me = std::process::id();
    let mut killed = 0;
    for _ in 0..MAX_ROUNDS {
        // Held for the round: a child another thread starts meanwhile ([`start`]) is kept
        // before it can be listed here.
        let kept = kept();
        let strays: Vec<u32> = children_of(me)
            .into_iter()
            .filter(|pid| !kept.as_ref().is_some_and(|set| set.contains(pid)))
            .collect();
        if strays.is_empty() {
            break;
        }
        for &pid in &strays {
            if let Ok(pid) = libc::pid_t::try_from(pid) {
                // SAFETY: kill and waitpid have no memory effects beyond `status`, which lives
                // for the call; `pid` is our own child, so it cannot be reused before we reap it.
                unsafe {
                    libc::kill(pid, libc::SIGKILL);
                    let mut status = 0;
                    libc::waitpid(pid, &mut status, 0);
                }
            }
        }
        killed += strays.len();
    }
    if killed > 0 {
        tracing::info!(killed, "ended processes a run left behind");
    }
    killed
}

/// The processes whose parent is `parent`, read from `/proc` (every thread's children included:
/// an orphan is re-parented to the process, whichever thread started its ancestor).
pub fn children_of(parent: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter(|&pid| parent_of(pid) == Some(parent))
        .collect()
}

/// The parent of `pid`, from `/proc/<pid>/stat`.
fn parent_of(pid: u32) -> Option<u32> {
    stat_field(pid, 4)
}

/// Field `n` (1-based, as `proc(5)` numbers them: 4 is the parent, 22 the start time) of
/// `/proc/<pid>/stat`.
pub fn stat_field<T: std::str::FromStr>(pid: u32, n: usize) -> Option<T> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    field(&stat, n)
}

/// Field `n` of a `/proc/<pid>/stat` line. The second (the name, in parentheses) may hold spaces
/// and parentheses itself, so the fields from the third on are counted from the last `)`.
fn field<T: std::str::FromStr>(stat: &str, n: usize) -> Option<T> {
    let rest = &stat[stat.rfind(')')? + 1..];
    rest.split_whitespace().nth(n.checked_sub(3)?)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parent_is_read_past_a_name_with_spaces_and_parentheses() {
        let cases = [
            ("42 (sh) S 7 42 42 0 -1", Some(7)),
            ("42 (a b) c) R 1234 42 42 0", Some(1234)),
            ("42 (x", None),
            ("", None),
        ];
        for (stat, expected) in cases {
            assert_eq!(field::<u32>(stat, 4), expected, "{stat}");
        }
    }

    #[test]
    fn our_own_children_are_listed() {
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .unwrap();
        let listed = children_of(std::process::id());
        let _ = child.kill();
        let _ = child.wait();
        assert!(listed.contains(&child.id()), "{listed:?}");
    }
}

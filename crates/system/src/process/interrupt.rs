//! An interrupt (SIGINT, SIGTERM) as a request to stop cleanly, not an abrupt end.
//!
//! [`install`] replaces the default action of both signals, for the commands that run agents
//! (`tick`, `work`): the first signal only sets a flag, which [`requested`] reads. The process
//! runner's wait loop polls it and stops its child as it stops one at a timeout, gently first
//! ([`super::run`]: SIGTERM to the group, SIGKILL after [`GRACE`]); the tick starts nothing new,
//! records what it stopped and saves the state. The runner's own git runs in a process group of
//! its own (`git`), so the signal — a terminal's Ctrl-C goes to the whole foreground process
//! group — never cuts a state save half-way: the save finishes and the tick exits 130 or 143
//! (issue 49).
//!
//! A child is in the runner's group from its fork until it leaves it, just before its exec: a
//! signal to the group in that moment reaches it too. Forked, it still runs this handler,
//! which does nothing outside the process that installed it; started by `posix_spawn`, it dies
//! before it ran anything, and `git` runs such a git again.
//!
//! The stop is bounded: a second signal, or [`STOP_GRACE`] after the first without the process
//! having ended, ends it at once (exit 128 + signal): a watcher thread writes the signal's name
//! to the file named by [`note_stop_in`] (what the next tick reads to tell an interrupted run
//! from a lost one, `tick::unsaved`), kills the process group of every program the runner
//! started and still waits for — its git, agents, checks (`reaper::end_all`) — and every child
//! left, then exits: after any signal or two, nothing the tick started outlives it. A third
//! signal exits from the handler itself, should the watcher be stuck.
//!
//! Not for: deciding what an interrupted run means (the tick records it), or any other signal.

use std::path::PathBuf;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};
use std::sync::{Mutex, Once, PoisonError};
use std::time::{Duration, Instant};

/// How long an interrupted program has between SIGTERM and SIGKILL to its process group.
pub const GRACE: Duration = Duration::from_secs(3);

/// How long an interrupted process has to stop its agents, record and save before it is ended
/// at once (the agents' [`GRACE`] and a save or two fit well within it).
pub const STOP_GRACE: Duration = Duration::from_secs(20);

/// The first interrupting signal received, 0 while none was.
static RECEIVED: AtomicI32 = AtomicI32::new(0);
/// The process that installed the handler: a child between its fork and its exec runs the
/// handler too (it is still in the runner's process group, so the signal reaches it), and
/// must leave the runner's stop to the runner.
static OWNER: AtomicI32 = AtomicI32::new(0);
/// How many interrupting signals arrived.
static COUNT: AtomicU32 = AtomicU32::new(0);
/// The write end of the watcher's pipe, -1 while there is no watcher.
static WAKE: AtomicI32 = AtomicI32::new(-1);
/// Where the watcher writes the signal's name before it ends the process at once.
static NOTE: Mutex<Option<PathBuf>> = Mutex::new(None);
static WATCHER: Once = Once::new();

/// What a second signal writes (async-signal-safe: a fixed buffer).
const AGAIN: &[u8] =
    b"\nopentiger: interrupted again: ending what it started and exiting now (the next tick recovers)\n";
/// What a third signal writes before the handler itself ends the process.
const THIRD: &[u8] = b"\nopentiger: interrupted a third time: exiting now\n";
/// What the first signal writes.
const FIRST: &[u8] =
    b"\nopentiger: interrupted: stopping the agents and saving the state (again to exit now)\n";

extern "C" fn on_signal(signal: libc::c_int) {
    // SAFETY: getpid(2) is async-signal-safe.
    if unsafe { libc::getpid() } != OWNER.load(Ordering::SeqCst) {
        // A child of ours not yet exec'd: the signal was the runner's; the child leaves the
        // group before it runs anything (`git`, `process`).
        return;
    }
    let count = COUNT.fetch_add(1, Ordering::SeqCst) + 1;
    let _ = RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
    let wake = WAKE.load(Ordering::SeqCst);
    let (message, exit_here) = match count {
        1 => (FIRST, false),
        2 => (AGAIN, wake < 0),
        _ => (THIRD, true),
    };
    // SAFETY: write(2) and _exit(2) are async-signal-safe; the buffers are statics.
    unsafe {
        libc::write(libc::STDERR_FILENO, message.as_ptr().cast(), message.len());
        if exit_here {
            libc::_exit(128 + signal);
        }
        if wake >= 0 {
            // The signal's number, for the watcher: a byte is enough (both are below 32).
            let byte = signal as u8;
            libc::write(wake, (&byte as *const u8).cast(), 1);
        }
    }
}

/// Makes SIGINT and SIGTERM requests to stop (see the module documentation) and starts the
/// watcher that bounds the stop. Calling it again changes nothing.
pub fn install() {
    // SAFETY: getpid(2) cannot fail.
    OWNER.store(unsafe { libc::getpid() }, Ordering::SeqCst);
    WATCHER.call_once(start_watcher);
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `action` is a plain C struct, zeroed is a valid value; the handler only
        // touches atomics and calls async-signal-safe functions. SA_RESTART: a system call
        // the signal lands in continues instead of failing with EINTR.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
                tracing::warn!(
                    signal,
                    "could not handle the signal: {}",
                    std::io::Error::last_os_error()
                );
            }
        }
    }
}

/// The file the watcher writes the signal's name to when it ends the process at once (`None`:
/// no file). A tick names its record of unsaved work (`tick::unsaved`).
pub fn note_stop_in(path: Option<PathBuf>) {
    *NOTE.lock().unwrap_or_else(PoisonError::into_inner) = path;
}

/// Starts the watcher thread and its pipe; without them a second signal exits from the handler.
fn start_watcher() {
    let mut fds = [0 as libc::c_int; 2];
    // SAFETY: pipe2 writes two descriptors into the array it is given.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        tracing::warn!(
            "no watcher for interrupts: {}",
            std::io::Error::last_os_error()
        );
        return;
    }
    let [read, write] = fds;
    let started = std::thread::Builder::new()
        .name("interrupt".into())
        .spawn(move || watch(read));
    if started.is_ok() {
        WAKE.store(write, Ordering::SeqCst);
    }
}

/// The watcher: waits for the first signal, then for a second one or the end of
/// [`STOP_GRACE`], and then ends the process at once.
fn watch(read: libc::c_int) {
    let mut deadline: Option<Instant> = None;
    loop {
        let timeout = deadline.map_or(-1, |d| {
            let left = d.saturating_duration_since(Instant::now()).as_millis();
            libc::c_int::try_from(left).unwrap_or(libc::c_int::MAX)
        });
        let mut poll = libc::pollfd {
            fd: read,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: poll reads and writes the one pollfd it is given.
        let ready = unsafe { libc::poll(&mut poll, 1, timeout) };
        if ready < 0 {
            if std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return;
        }
        if ready == 0 {
            // The grace ran out before the process ended by itself.
            let first = RECEIVED.load(Ordering::SeqCst);
            end_now(
                first,
                &format!(
                    "\nopentiger: still not stopped {} s after the interrupt: ending what it started and exiting now (the next tick recovers)\n",
                    STOP_GRACE.as_secs()
                ),
            );
        }
        let mut byte = 0u8;
        // SAFETY: read writes at most one byte into `byte`.
        if unsafe { libc::read(read, (&mut byte as *mut u8).cast(), 1) } != 1 {
            continue;
        }
        match deadline {
            None => deadline = Some(Instant::now() + STOP_GRACE),
            Some(_) => end_now(i32::from(byte), ""),
        }
    }
}

/// Writes the stop note, ends every program the runner started and exits with 128 + `signal`.
fn end_now(signal: i32, message: &str) -> ! {
    let note = NOTE.lock().unwrap_or_else(PoisonError::into_inner).clone();
    if let Some(path) = note {
        let name = match signal {
            libc::SIGTERM => "SIGTERM",
            _ => "SIGINT",
        };
        let _ = crate::scratch::write_private(&path, format!("{name}\n").as_bytes());
    }
    crate::reaper::end_all();
    if !message.is_empty() {
        // SAFETY: write(2) of a buffer that lives for the call.
        unsafe { libc::write(libc::STDERR_FILENO, message.as_ptr().cast(), message.len()) };
    }
    // SAFETY: _exit ends the process without running anything else of ours (the main thread
    // may be anywhere).
    unsafe { libc::_exit(128 + signal) }
}

/// The signal that asked this process to stop, if one did.
pub fn requested() -> Option<Signal> {
    match RECEIVED.load(Ordering::SeqCst) {
        libc::SIGINT => Some(Signal::Int),
        libc::SIGTERM => Some(Signal::Term),
        _ => None,
    }
}

/// The signals that interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Signal {
    Int,
    Term,
}

impl Signal {
    /// The name people know it by.
    pub fn name(self) -> &'static str {
        match self {
            Signal::Int => "SIGINT",
            Signal::Term => "SIGTERM",
        }
    }

    /// Its number (2, 15).
    pub fn number(self) -> i32 {
        match self {
            Signal::Int => libc::SIGINT,
            Signal::Term => libc::SIGTERM,
        }
    }

    /// The exit code of a process it ended: 128 + its number (130, 143).
    pub fn exit_code(self) -> i32 {
        128 + self.number()
    }
}

/// Ends the process group `pid` leads: SIGTERM, then SIGKILL once the leader exited (its
/// children may linger) or after [`GRACE`]. `exited` tells whether the leader has exited.
pub(super) fn end_group(pid: u32, exited: impl Fn(u32) -> bool) {
    // Never signal "every process" (-1) or our own group (0).
    let Ok(pgid @ 2..) = libc::pid_t::try_from(pid) else {
        return;
    };
    // SAFETY: kill has no memory effects; a negative pid addresses the process group.
    unsafe { libc::kill(-pgid, libc::SIGTERM) };
    let until = std::time::Instant::now() + GRACE;
    while !exited(pid) && std::time::Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    // SAFETY: as above.
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;

    /// A child forked but not yet exec'd runs the runner's handler when a signal to the
    /// runner's group reaches it: the handler does nothing there (no message, no wake-up of the
    /// runner's watcher), and the child goes on to run its program.
    #[test]
    fn a_signal_to_a_child_before_its_exec_is_left_to_the_runner() {
        install();
        let mut cmd = std::process::Command::new("true");
        // SAFETY: raise(2) is async-signal-safe; the child signals only itself.
        unsafe {
            cmd.pre_exec(|| {
                libc::raise(libc::SIGINT);
                Ok(())
            });
        }
        let out = cmd.output().expect("run true");
        assert!(out.status.success(), "{:?}", out.status);
        assert!(
            out.stderr.is_empty(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(requested(), None);
    }
}

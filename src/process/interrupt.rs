//! An interrupt (SIGINT, SIGTERM) as a request to stop cleanly, not an abrupt end.
//!
//! [`install`] replaces the default action of both signals, for the commands that run agents
//! (`tick`, `work`): the first signal only sets a flag, which [`requested`] reads. The process
//! runner's wait loop polls it and stops its child as it stops one at a timeout, gently first
//! ([`super::run`]: SIGTERM to the group, SIGKILL after [`GRACE`]); the tick starts nothing new
//! and records what it stopped. A second signal ends the process at once (exit 128 + signal),
//! as the default action would have: the person pressing Ctrl-C twice means it, and recovery
//! then does what it does for a killed tick.
//!
//! Not for: deciding what an interrupted run means (the tick records it), or any other signal.

use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

/// How long an interrupted program has between SIGTERM and SIGKILL to its process group.
pub const GRACE: Duration = Duration::from_secs(3);

/// The first interrupting signal received, 0 while none was.
static RECEIVED: AtomicI32 = AtomicI32::new(0);

/// What a second signal writes before the process ends (async-signal-safe: a fixed buffer).
const AGAIN: &[u8] = b"\nopentiger: interrupted again: exiting now (the next tick recovers)\n";
/// What the first signal writes.
const FIRST: &[u8] =
    b"\nopentiger: interrupted: stopping the agents and saving the state (again to exit now)\n";

extern "C" fn on_signal(signal: libc::c_int) {
    match RECEIVED.compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst) {
        Ok(_) => {
            // SAFETY: write(2) is async-signal-safe; the buffer is a static.
            unsafe { libc::write(libc::STDERR_FILENO, FIRST.as_ptr().cast(), FIRST.len()) };
        }
        Err(_) => {
            // SAFETY: write(2) and _exit(2) are async-signal-safe.
            unsafe {
                libc::write(libc::STDERR_FILENO, AGAIN.as_ptr().cast(), AGAIN.len());
                libc::_exit(128 + signal);
            }
        }
    }
}

/// Makes SIGINT and SIGTERM requests to stop (see the module documentation). Calling it again
/// changes nothing.
pub fn install() {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: `action` is a plain C struct, zeroed is a valid value; the handler only
        // touches an atomic and calls async-signal-safe functions. SA_RESTART: a system call
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

    /// The exit code of a process it ended: 128 + its number (130, 143).
    pub fn exit_code(self) -> i32 {
        128 + match self {
            Signal::Int => libc::SIGINT,
            Signal::Term => libc::SIGTERM,
        }
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

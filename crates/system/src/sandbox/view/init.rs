//! The processes of a view (`child.rs` makes its mounts). [`enter`] takes the child (the
//! *outer* process, in the runner's PID namespace, the one the runner waits for) into new
//! mount and PID namespaces and forks the namespace's first process, PID 1, which forks the
//! program; only the program returns, to be executed by `std`. PID 1 reaps whatever is
//! re-parented to it and exits with the program's status; when it exits the kernel kills
//! everything left in the namespace. The outer process closes every descriptor (std's
//! exec-error pipe among them, or `spawn` would wait until the run ends), blocks all signals
//! but `SIGKILL` (an interrupt's `SIGTERM` to the group reaches the program, not the walls
//! around it), waits for PID 1 and ends as the program ended (the same code, or the same
//! signal). Each link dies with its parent (`PR_SET_PDEATHSIG`). [`probe`] makes a view once to
//! tell whether this machine allows one.
//!
//! Not for: the view's mounts (`child.rs`), what it holds (`mod.rs`).

use std::io;
use std::path::Path;
use std::sync::atomic::Ordering;

use super::child::{build, failed, finish, ok, Prepared, Report, Stage};
use crate::sandbox::netns::ChildPart;

/// Makes the view and returns in the program's process only (the outer process and PID 1
/// never return): what is left is the program's own set-up and `exec`.
///
/// # Safety
/// Only in a child between fork and exec; `prep` was made before the fork. `user`: the map
/// lines of a user namespace to make first (`None`: the child is in a new one already).
pub unsafe fn enter(prep: &Prepared, user: Option<&ChildPart>) -> io::Result<()> {
    let r = prep.report();
    let namespaces = libc::CLONE_NEWNS | libc::CLONE_NEWPID;
    let entered = match user {
        Some(part) => crate::sandbox::netns::enter_user(part, namespaces),
        None => ok(r, Stage::Unshare, libc::unshare(namespaces) as libc::c_long),
    };
    if let Err(e) = entered {
        if r.stage.load(Ordering::SeqCst) == 0 {
            r.errno
                .store(e.raw_os_error().unwrap_or(0), Ordering::SeqCst);
            r.stage.store(Stage::Unshare as u32, Ordering::SeqCst);
        }
        return Err(e);
    }
    build(prep, r)?;
    let init = fork();
    if init < 0 {
        return Err(failed(r, Stage::ForkInit, 0));
    }
    if init > 0 {
        outer(r, init);
    }
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    finish(r)?;
    let program = fork();
    if program < 0 {
        return Err(failed(r, Stage::ForkProgram, 0));
    }
    if program > 0 {
        first_process(r, program);
    }
    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
    ok(
        r,
        Stage::Chdir,
        libc::chdir(prep.cwd.as_ptr()) as libc::c_long,
    )
}

/// `fork` without the C library's handlers (a child of a multi-threaded program runs none).
unsafe fn fork() -> libc::pid_t {
    libc::syscall(libc::SYS_clone, libc::SIGCHLD as libc::c_long, 0, 0, 0, 0) as libc::pid_t
}

/// Closes every descriptor of the calling process.
unsafe fn close_all() {
    if libc::syscall(libc::SYS_close_range, 0u32, u32::MAX, 0u32) != 0 {
        for fd in 0..1024 {
            libc::close(fd);
        }
    }
}

/// The outer process: waits for PID 1 and ends as the program did.
unsafe fn outer(r: &Report, init: libc::pid_t) -> ! {
    close_all();
    let mut all: libc::sigset_t = std::mem::zeroed();
    libc::sigfillset(&mut all);
    libc::sigprocmask(libc::SIG_BLOCK, &all, std::ptr::null_mut());
    let mut status = 0;
    loop {
        let rc = libc::waitpid(init, &mut status, 0);
        if rc == init {
            break;
        }
        if rc < 0 && *libc::__errno_location() != libc::EINTR {
            libc::_exit(1);
        }
    }
    if r.status_set.load(Ordering::SeqCst) == 1 {
        status = r.status.load(Ordering::SeqCst);
    }
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        libc::signal(signal, libc::SIG_DFL);
        let mut one: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut one);
        libc::sigaddset(&mut one, signal);
        libc::sigprocmask(libc::SIG_UNBLOCK, &one, std::ptr::null_mut());
        libc::kill(libc::getpid(), signal);
        libc::_exit(128 + signal);
    }
    libc::_exit(if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        1
    })
}

/// PID 1 of the namespace: reaps everything until the program ends, then ends with it (and
/// the kernel ends the rest).
unsafe fn first_process(r: &Report, program: libc::pid_t) -> ! {
    close_all();
    let mut status = 0;
    loop {
        let rc = libc::waitpid(-1, &mut status, 0);
        if rc == program {
            r.status.store(status, Ordering::SeqCst);
            r.status_set.store(1, Ordering::SeqCst);
            libc::_exit(if libc::WIFEXITED(status) {
                libc::WEXITSTATUS(status)
            } else {
                128 + libc::WTERMSIG(status)
            });
        }
        if rc < 0 && *libc::__errno_location() != libc::EINTR {
            libc::_exit(1);
        }
    }
}

/// A view of the system folders made in a child that then checks it sees a `/proc` of its own
/// and exits: `Err` with the step the kernel refused.
pub(super) fn probe() -> Result<(), String> {
    let ops = super::plan(&super::ViewSpec::default(), &super::RealHost);
    let prep = Prepared::new(&ops, Path::new("/")).map_err(|e| e.to_string())?;
    let part = ChildPart::current_user();
    // SAFETY: fork in a program that may have threads: the child only makes system calls on
    // memory made before the fork (`prep`, `part`), then `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error().to_string());
    }
    if pid == 0 {
        // SAFETY: in the child, before any exec; see `enter`.
        let code = match unsafe { enter(&prep, Some(&part)) } {
            // PID 1 of its own namespace is its parent, and /proc shows that namespace.
            Ok(()) if unsafe { libc::getppid() } == 1 => {
                match unsafe { libc::access(c"/proc/1/stat".as_ptr(), libc::R_OK) } {
                    0 => 0,
                    _ => 3,
                }
            }
            Ok(()) => 2,
            Err(_) => 1,
        };
        // SAFETY: ends this process (the outer one, PID 1 or the program's) at once.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked; `status` lives for the call.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return Err(io::Error::last_os_error().to_string());
        }
    }
    match (libc::WIFEXITED(status), libc::WEXITSTATUS(status)) {
        (true, 0) => Ok(()),
        (true, 2) => Err("the view's first process is not its program's parent".to_string()),
        (true, 3) => Err("the view's /proc does not show its own processes".to_string()),
        _ => Err(format!(
            "the kernel refused a view of its own ({})",
            prep.failure()
                .unwrap_or_else(|| format!("its process ended with status {status}"))
        )),
    }
}

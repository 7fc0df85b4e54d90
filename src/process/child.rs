//! What a program's child process does between fork and exec: enter its network namespace
//! (issue 37, `sandbox::netns`), then its Landlock domain (`sandbox::landlock`: after the
//! namespace, whose `/proc/self/*_map` writes Landlock would refuse), then die with the runner
//! (`PR_SET_PDEATHSIG`). Only system calls on memory made before the fork (async-signal-safe).
//!
//! Not here: starting and watching the program (`mod.rs`).

use std::io;
use std::os::unix::process::CommandExt;
use std::process::Command;

use super::ProcessSpec;
use crate::sandbox::netns;

/// Sets the child's steps on `command`. The namespace entry, when the spec asks for one, is
/// made here, before the fork, and returned: [`deliver`] takes its listener after the spawn.
pub(super) fn prepare(
    command: &mut Command,
    spec: &ProcessSpec,
) -> io::Result<Option<netns::Entry>> {
    let namespace = match &spec.network {
        Some(_) => Some(netns::Entry::new()?),
        None => None,
    };
    let namespace_part = namespace.as_ref().map(|n| n.child);
    #[cfg(target_os = "linux")]
    // SAFETY: between fork and exec only async-signal-safe calls are allowed; prctl and getppid
    // are system calls that allocate nothing and take no lock, and `netns::enter` and
    // `restrict_child` make only system calls on memory made before the fork.
    unsafe {
        let parent = libc::getpid();
        let confine = spec.confine.as_ref().map(|r| r.raw_fd());
        command.pre_exec(move || {
            if let Some(part) = &namespace_part {
                netns::enter(part)?;
            }
            if let Some(fd) = confine {
                crate::sandbox::landlock::Ruleset::restrict_child(fd)?;
            }
            // Dies with the runner: a runner killed with SIGKILL leaves no agent behind.
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            // The runner may have died between fork and prctl.
            if libc::getppid() != parent {
                return Err(io::Error::other(
                    "the runner exited before the program started",
                ));
            }
            Ok(())
        });
    }
    Ok(namespace)
}

/// After the spawn: the listener the child made in its namespace goes to the runner's door.
pub(super) fn deliver(namespace: Option<netns::Entry>, spec: &ProcessSpec) -> io::Result<()> {
    if let (Some(namespace), Some(door)) = (namespace, &spec.network) {
        (door.deliver)(namespace.receive()?);
    }
    Ok(())
}

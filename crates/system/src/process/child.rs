//! What a program's child process does between fork and exec, in this order: join its run's
//! cgroup (`sandbox::cgroup`, issue 47), die with the runner (`PR_SET_PDEATHSIG`), enter its
//! network namespace (issue 37, `sandbox::netns`), enter its view (`sandbox::view`: mount and
//! PID namespaces, from where only the program's process goes on), set its rlimits
//! (`sandbox::limits`), enter its Landlock domain (`sandbox::landlock`: after the namespaces,
//! whose `/proc/self/*_map` writes and mounts Landlock would refuse, and made in the view) and
//! install the socket filter (`sandbox::seccomp`, where there is no view). Only system calls on
//! memory made before the fork (async-signal-safe). After the run, what it reached of its
//! limits is noted on its confinement.
//!
//! Not here: starting and watching the program (`mod.rs`).

use std::io;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::{ExitStatusKind, ProcessSpec};
use crate::sandbox::{cgroup, limits, netns, view};

/// What one spawn made before the fork, kept until its program ended.
pub(super) struct Spawn {
    namespace: Option<netns::Entry>,
    view: Option<Arc<view::Prepared>>,
    group: Option<cgroup::RunGroup>,
}

/// Sets the child's steps on `command` for `executable` (resolved). The namespace entry, the
/// view and the cgroup the spec asks for are made here, before the fork.
pub(super) fn prepare(
    command: &mut Command,
    spec: &ProcessSpec,
    executable: &Path,
) -> io::Result<Spawn> {
    let namespace = match &spec.network {
        Some(_) => Some(netns::Entry::new()?),
        None => None,
    };
    let confine = spec.confine.clone();
    let path_var = spec.path_var();
    let view = match confine.as_ref().and_then(|c| c.view.as_ref()) {
        Some(wanted) => {
            let mut wanted = wanted.clone();
            // The program, and any program its command line names by its path (a wrapper's).
            let named = spec
                .args
                .iter()
                .map(Path::new)
                .filter(|a| a.is_absolute() && is_program(a));
            for program in std::iter::once(executable).chain(named) {
                for path in view::program_paths(program, path_var) {
                    wanted.paths.push((path, view::Access::Show));
                }
            }
            let ops = view::plan(&wanted, &view::RealHost);
            Some(Arc::new(view::Prepared::new(&ops, &spec.cwd)?))
        }
        None => None,
    };
    // The view's outer process and PID 1 count among the run's processes.
    let extra = if view.is_some() { 2 } else { 0 };
    let limits = confine.as_ref().map(|c| &c.limits);
    let group = limits
        .filter(|l| l.memory.is_some() || l.processes.is_some())
        .and_then(|l| run_group(l, extra));
    // RLIMIT_NPROC counts the user's every process unless the run has a user namespace.
    let own_user = namespace.is_some() || view.is_some();
    let rlimits = limits.map(|l| {
        let base = match (own_user, &l.processes) {
            (false, Some(_)) => {
                // SAFETY: getuid has no preconditions.
                limits::user_tasks(unsafe { libc::getuid() })
            }
            _ => 0,
        };
        l.rlimits(group.is_some(), base, extra)
    });
    let user = match (&view, &namespace) {
        (Some(_), None) => Some(netns::ChildPart::current_user()),
        _ => None,
    };
    let namespace_part = namespace.as_ref().map(|n| n.child);
    let group_fd = group.as_ref().map(cgroup::RunGroup::procs_fd);
    let prepared = view.clone();
    #[cfg(target_os = "linux")]
    // SAFETY: between fork and exec only async-signal-safe calls are allowed; every step is a
    // system call on memory made before the fork (see the module doc).
    unsafe {
        let parent = libc::getpid();
        command.pre_exec(move || {
            if let Some(fd) = group_fd {
                cgroup::join(fd)?;
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
            if let Some(part) = &namespace_part {
                netns::enter(part)?;
            }
            if let Some(prepared) = &prepared {
                view::enter(prepared, user.as_ref())?;
            }
            if let Some(rlimits) = &rlimits {
                rlimits.apply()?;
            }
            if let Some(confine) = &confine {
                if let Some(rules) = &confine.landlock {
                    rules.enter()?;
                }
                if confine.socket_filter {
                    crate::sandbox::seccomp::install()?;
                }
            }
            Ok(())
        });
    }
    Ok(Spawn {
        namespace,
        view,
        group,
    })
}

/// Whether `path` is an executable file.
fn is_program(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// A cgroup of its own for the run, where the runner's is delegated (else its rlimits hold).
fn run_group(limits: &limits::Limits, extra: u64) -> Option<cgroup::RunGroup> {
    static RUNS: AtomicU64 = AtomicU64::new(0);
    let delegation = cgroup::delegation().ok()?;
    let name = format!(
        "opentiger-{}-{}",
        std::process::id(),
        RUNS.fetch_add(1, Ordering::Relaxed)
    );
    match cgroup::RunGroup::create(delegation, &name, limits, extra) {
        Ok(group) => Some(group),
        Err(e) => {
            tracing::warn!("no cgroup for this run ({e}): its limits are rlimits");
            None
        }
    }
}

/// After the spawn: the listener the child made in its namespace goes to the runner's door.
pub(super) fn deliver(spawn: &mut Spawn, spec: &ProcessSpec) -> io::Result<()> {
    if let (Some(namespace), Some(door)) = (spawn.namespace.take(), &spec.network) {
        (door.deliver)(namespace.receive()?);
    }
    Ok(())
}

/// Why the spawn failed: what the child said of its view, else the error itself.
pub(super) fn failure(spawn: &Spawn, error: io::Error) -> io::Error {
    match spawn.view.as_ref().and_then(|v| v.failure()) {
        Some(why) => io::Error::new(
            error.kind(),
            format!("its view of the file system could not be made ({why})"),
        ),
        None => error,
    }
}

/// After the program ended (and everything it started): what it reached of its limits, noted
/// on its confinement; its cgroup removed.
pub(super) fn finish(spawn: Spawn, spec: &ProcessSpec, status: ExitStatusKind, output: &str) {
    let events = spawn.group.as_ref().map(cgroup::RunGroup::events);
    if let Some(group) = spawn.group {
        group.remove();
    }
    let Some(confine) = &spec.confine else {
        return;
    };
    let signal = match status {
        ExitStatusKind::Signal(signal) => Some(signal),
        ExitStatusKind::Code(_) | ExitStatusKind::TimedOut => None,
    };
    let failed = !matches!(status, ExitStatusKind::Code(0));
    let hit = events
        .and_then(|e| limits::from_events(&confine.limits, e))
        .or_else(|| {
            let tmpfs = spawn.view.is_some();
            failed
                .then(|| limits::read_end(&confine.limits, signal, output, tmpfs))
                .flatten()
        });
    confine.note_hit(hit);
}

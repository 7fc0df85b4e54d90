//! What confines one agent or check list (issue 47), decided before it starts
//! ([`Confinement`], made by `runner::launch`) and applied by each child between fork and exec
//! (`process`): its view of the file system (`view`) or, where the kernel refuses one, the
//! socket filter (`seccomp`); its Landlock rules (`landlock`); its limits (`limits`). And which
//! of the walls around files and sockets this machine gives ([`file_walls`]).
//!
//! Not here: the network namespace and its door (`netns`, `egress`), which paths a role gets
//! (`runner::launch`).

use std::sync::{Mutex, PoisonError};

use super::limits::{Hit, Limits};
use super::{landlock, seccomp, view};
use crate::config::{FilesystemSandbox, SandboxConfig, ViewSandbox};

/// The walls around files and sockets an agent gets here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FileWalls {
    /// A view of its own: mount and PID namespaces holding only what the run needs.
    View,
    /// No view (`why`): a seccomp filter refuses unix sockets; Landlock still limits writes.
    SocketFilter { why: String },
    /// Neither (`why`).
    Open { why: String },
}

impl FileWalls {
    /// What it leaves open, in one line for the tick's output, `doctor` and the job summary.
    pub fn describe(&self) -> String {
        match self {
            FileWalls::View => "agents and checks run in a view of their own (mount and PID namespaces): only their run's folders, the system and toolchain folders read-only, sandbox.readable and sandbox.writable, a /proc of their own processes and a minimal /dev exist there — not the runner's repository, home, $RUNNER_TEMP, /run or any socket file of the runner's user".to_string(),
            FileWalls::SocketFilter { why } => format!(
                "{why}: no view of their own, so agents and checks see every file the runner's user may read (its home, its repository), and Landlock alone keeps their writes in their folders; a socket filter refuses every unix socket (a per-user service's socket file, a docker or dbus socket, and their own), socketpair allowed"
            ),
            FileWalls::Open { why } => format!(
                "{why}: agents and checks see every file and process of the runner's user and may connect to any of its services' socket files"
            ),
        }
    }
}

/// How agents may reach files and sockets here, with these settings: `Err` when the settings
/// require more than this machine allows (nothing may start), with the fix.
pub fn file_walls(sandbox: &SandboxConfig) -> Result<FileWalls, String> {
    let filter = |why: String| {
        if seccomp::supported() {
            FileWalls::SocketFilter { why }
        } else {
            FileWalls::Open {
                why: format!("{why}, and this platform has no socket filter"),
            }
        }
    };
    if sandbox.filesystem == FilesystemSandbox::None {
        return Ok(FileWalls::Open {
            why: "sandbox.filesystem is none".to_string(),
        });
    }
    match sandbox.view {
        ViewSandbox::None => Ok(filter("sandbox.view is none".to_string())),
        ViewSandbox::Auto => Ok(match view::available() {
            Ok(()) => FileWalls::View,
            Err(why) => filter(why),
        }),
        ViewSandbox::Namespace => match view::available() {
            Ok(()) => Ok(FileWalls::View),
            Err(why) => Err(format!(
                "sandbox.view is namespace, but {why}\n  fix: {}, or set sandbox.view: auto",
                super::USERNS_FIX
            )),
        },
    }
}

/// Everything that confines the programs of one run (or one check list).
#[derive(Debug)]
pub struct Confinement {
    /// Its Landlock domain, made by the child (in its view, when it has one).
    pub landlock: Option<landlock::Rules>,
    /// Its view; its program's own files are added at each spawn.
    pub view: Option<view::ViewSpec>,
    /// The seccomp filter refusing unix sockets (where there is no view).
    pub socket_filter: bool,
    pub limits: Limits,
    /// The limit the last program run in it reached, if any.
    hit: Mutex<Option<Hit>>,
}

impl Confinement {
    pub fn new(
        landlock: Option<landlock::Rules>,
        view: Option<view::ViewSpec>,
        socket_filter: bool,
        limits: Limits,
    ) -> Confinement {
        Confinement {
            landlock,
            view,
            socket_filter,
            limits,
            hit: Mutex::new(None),
        }
    }

    /// Notes what the program that just ended reached (`process`).
    pub fn note_hit(&self, hit: Option<Hit>) {
        *self.hit.lock().unwrap_or_else(PoisonError::into_inner) = hit;
    }

    /// The limit the last program reached, taken.
    pub fn take_hit(&self) -> Option<Hit> {
        self.hit
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// The walls around files, sockets and processes, as `doctor` and the job summary list them.
pub(super) fn protections(sandbox: &SandboxConfig) -> Vec<super::Protection> {
    let walls = file_walls(sandbox);
    let fix = match (sandbox.filesystem, sandbox.view) {
        (FilesystemSandbox::None, _) => "set `sandbox.filesystem: landlock` (the default)",
        (_, ViewSandbox::None) => "set `sandbox.view: auto` (the default)",
        (_, ViewSandbox::Auto | ViewSandbox::Namespace) => super::USERNS_FIX,
    };
    let (view, sockets) = match &walls {
        Ok(FileWalls::View) => (
            (true, FileWalls::View.describe()),
            (true, "no socket file of the runner's user exists in an agent's view (its own folders' sockets work), and abstract sockets are its network namespace's own".to_string()),
        ),
        Ok(walls @ FileWalls::SocketFilter { .. }) => (
            (false, walls.describe()),
            (true, "a seccomp filter refuses every unix socket (socket(AF_UNIX) and io_uring fail with EACCES): no per-user service's socket file is reached, but programs that talk to a local daemon (docker, dbus, nscd) fail".to_string()),
        ),
        Ok(walls @ FileWalls::Open { .. }) => ((false, walls.describe()), (false, walls.describe())),
        Err(why) => {
            let line = why.lines().next().unwrap_or_default().to_string();
            ((false, line.clone()), (false, line))
        }
    };
    vec![
        super::Protection {
            name: "own view",
            in_force: view.0,
            detail: view.1,
            fix,
        },
        super::Protection {
            name: "unix sockets",
            in_force: sockets.0,
            detail: sockets.1,
            fix,
        },
    ]
}

/// The limits of each run and what holds them here, for `doctor` and the job summary.
pub(super) fn limits_protection(run: &crate::config::RunLimits) -> super::Protection {
    let limits = Limits::of(run, None);
    let set: Vec<String> = [&limits.memory, &limits.processes, &limits.file, &limits.tmp]
        .into_iter()
        .flatten()
        .map(super::limits::Limit::setting)
        .collect();
    let fix = "set limits.run (docs/configuration.md), and run the tick in a delegated cgroup (`systemd-run --user --scope -p Delegate=yes opentiger tick`) to hold memory and processes for a run as a whole";
    if set.is_empty() {
        return super::Protection {
            name: "resource limits",
            in_force: false,
            detail: "limits.run sets no limit: one agent may take the machine's memory, processes and disk".to_string(),
            fix,
        };
    }
    let held = match super::cgroup::offered() {
        Ok(_) => "memory and processes held by a cgroup of each run's own (the run as a whole)"
            .to_string(),
        Err(why) => format!("memory and processes held by rlimits, for each process ({why})"),
    };
    let walls = match super::view::available() {
        Ok(()) => "the temp folder a tmpfs of its size",
        Err(_) => "the temp folder on disk, bounded per file only (no view here)",
    };
    super::Protection {
        name: "resource limits",
        in_force: true,
        detail: format!(
            "each agent run and check: {}; {held}; any one file by RLIMIT_FSIZE; {walls}; a run that reaches one fails naming it",
            set.join(", ")
        ),
        fix,
    }
}

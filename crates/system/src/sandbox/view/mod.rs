//! A view of the file system of its own for each agent and check (issue 47): a mount and PID
//! namespace, made by the child between fork and exec, in which only what the run needs
//! exists, at the same absolute paths as on the host (so paths in prompts and configurations
//! keep working):
//!
//! - the system folders read-only (`/usr`, `/etc`, `/opt`, …, and the links many systems have,
//!   `/bin -> usr/bin`), the folders on its `PATH`, its program (`program.rs`), the runner's
//!   Rust toolchain (never cargo's `credentials.toml`), `sandbox.readable`;
//! - its run's folders (the workspace read-write, or read-only for the roles that only read),
//!   its scratch folder and home, `sandbox.writable`;
//! - `/tmp` a tmpfs of `limits.run.tmp_mb` (its `TMPDIR`), a `/dev` with `null`, `zero`, `full`,
//!   `random`, `urandom` and `tty`, and a `/proc` of its own processes.
//!
//! The runner's repository (but for its objects, which the workspace's `.git` borrows), its
//! home, `$RUNNER_TEMP`, `/run`, `/var/run` and every socket file of the runner's user are
//! simply not there. [`plan`] (pure, over a [`Host`] that answers what a path is) turns a
//! [`ViewSpec`] into the steps ([`Op`]); `child.rs` prepares them as C strings and runs them
//! in the child (async-signal-safe), with the PID namespace's init; `program.rs` says what a
//! program needs to run. Landlock stays as the second wall, its rules made in the view.
//!
//! Not here: which paths a role gets (`runner::launch`), the network namespace (`netns`), the
//! limits (`limits`, `cgroup`).

mod child;
mod init;
mod program;

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};
use std::sync::OnceLock;

pub use child::Prepared;
pub use init::enter;
pub use program::{program_paths, toolchain_paths};

/// How a path of the view is shown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// Read-only, even beneath a folder it may write (a read-only role's workspace).
    Read,
    Write,
    /// Visible, read-only unless a folder it may write holds it already (a toolchain, its
    /// program, `sandbox.readable`).
    Show,
}

/// What a run's view holds besides the system folders, its temp folder, `/dev` and `/proc`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ViewSpec {
    /// Absolute paths, as the run is told them (a link among them is kept as a link).
    pub paths: Vec<(PathBuf, Access)>,
    /// The size of its `/tmp`, in bytes (`None`: the kernel's default, half the memory).
    pub tmp_bytes: Option<u64>,
}

/// The folders of the system every run sees, read-only, when the host has them.
pub const SYSTEM: [&str; 11] = [
    "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt", "/nix", "/snap",
];

/// Devices bound from the host into the view's `/dev`.
const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/tty",
];

/// Links of the view's `/dev` (and `/var/tmp`): `(at, target)`.
const LINKS: [(&str, &str); 6] = [
    ("/dev/fd", "/proc/self/fd"),
    ("/dev/stdin", "/proc/self/fd/0"),
    ("/dev/stdout", "/proc/self/fd/1"),
    ("/dev/stderr", "/proc/self/fd/2"),
    ("/dev/shm", "/tmp"),
    ("/var/tmp", "/tmp"),
];

/// One step of making a view, on paths as the view shows them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Op {
    /// A folder made in a tmpfs of the view (a mount point, or on the way to one).
    Dir(PathBuf),
    /// An empty file made as the mount point of a file.
    File(PathBuf),
    /// A symbolic link, as the host has it.
    Link { at: PathBuf, target: PathBuf },
    /// The host's `from` shown at `at`.
    Bind {
        from: PathBuf,
        at: PathBuf,
        access: Access,
    },
    /// A new tmpfs (`bytes`: its size, `None`: the kernel's default), of this mode.
    Tmpfs {
        at: PathBuf,
        bytes: Option<u64>,
        mode: u32,
    },
    /// A folder made in the run's `/tmp` on the way to a mount, made read-only once what it
    /// holds is mounted: the run writes its `/tmp`, never a host path's stand-in there.
    Seal(PathBuf),
}

/// What a path is on the host, without following a final link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Dir,
    File,
    Link(PathBuf),
    Missing,
}

/// The host's answers, for [`plan`].
pub trait Host {
    fn kind(&self, path: &Path) -> Kind;
    /// The path with every link resolved (`None`: it does not exist).
    fn canonical(&self, path: &Path) -> Option<PathBuf>;
}

/// The file system of this machine.
pub struct RealHost;

impl Host for RealHost {
    fn kind(&self, path: &Path) -> Kind {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => {
                std::fs::read_link(path).map_or(Kind::Missing, Kind::Link)
            }
            Ok(m) if m.is_dir() => Kind::Dir,
            Ok(_) => Kind::File,
            Err(_) => Kind::Missing,
        }
    }

    fn canonical(&self, path: &Path) -> Option<PathBuf> {
        std::fs::canonicalize(path).ok()
    }
}

/// The steps that make the view of `spec` on `host`: tmpfs mounts and system folders first,
/// then the run's paths, shallowest first (a bind never hides one made before it), then the
/// links that lead to them.
pub fn plan(spec: &ViewSpec, host: &dyn Host) -> Vec<Op> {
    let mut p = Planner {
        host,
        ops: Vec::new(),
        made: BTreeSet::new(),
        binds: Vec::new(),
    };
    let mut wanted: Vec<(PathBuf, PathBuf, Access)> = Vec::new();
    for dir in SYSTEM {
        let dir = Path::new(dir);
        match host.kind(dir) {
            Kind::Dir => wanted.push((dir.to_path_buf(), dir.to_path_buf(), Access::Read)),
            Kind::Link(target) => p.link(dir, &target),
            Kind::File | Kind::Missing => {}
        }
    }
    for (given, access) in &spec.paths {
        let Some(real) = host.canonical(given) else {
            continue;
        };
        // The view's own `/`, `/proc` and `/dev` are not the host's.
        let own = real == Path::new("/") || real.starts_with("/proc") || real.starts_with("/dev");
        if !given.is_absolute() || own {
            continue;
        }
        wanted.push((given.clone(), real, *access));
    }
    let tmp_is_host = wanted.iter().any(|(_, real, _)| real == Path::new("/tmp"));
    if !tmp_is_host {
        p.tmpfs(Path::new("/tmp"), spec.tmp_bytes, 0o1777);
    }
    p.tmpfs(Path::new("/dev"), Some(64 << 10), 0o755);
    for device in DEVICES.map(Path::new) {
        if host.kind(device) != Kind::Missing {
            p.ops.push(Op::File(device.to_path_buf()));
            p.ops.push(Op::Bind {
                from: device.to_path_buf(),
                at: device.to_path_buf(),
                access: Access::Write,
            });
        }
    }
    p.dir(Path::new("/proc"));
    p.dir(Path::new("/var"));
    for (at, target) in LINKS {
        p.link(Path::new(at), Path::new(target));
    }
    // Shallowest first: a bind made later never hides one made before it.
    wanted.sort_by_key(|(_, real, _)| real.components().count());
    for (_, real, access) in &wanted {
        p.bind(real, *access);
    }
    for (given, real, _) in &wanted {
        if given != real {
            p.links_to(given);
        }
    }
    if !tmp_is_host {
        let made_in_tmp: Vec<PathBuf> = p
            .made
            .iter()
            .filter(|m| m.parent() == Some(Path::new("/tmp")))
            .filter(|m| p.ops.contains(&Op::Dir(m.to_path_buf())))
            .filter(|m| !p.binds.iter().any(|(at, _)| at == *m))
            .cloned()
            .collect();
        p.ops.extend(made_in_tmp.into_iter().map(Op::Seal));
    }
    p.ops
}

struct Planner<'h> {
    host: &'h dyn Host,
    ops: Vec<Op>,
    /// Paths made in a tmpfs of the view (folders, files, links, the tmpfs mounts).
    made: BTreeSet<PathBuf>,
    /// Folders bound so far and how.
    binds: Vec<(PathBuf, Access)>,
}

impl Planner<'_> {
    /// The bind that shows `path` (the deepest holding it), if any.
    fn bound(&self, path: &Path) -> Option<Access> {
        self.binds
            .iter()
            .filter(|(at, _)| path.starts_with(at))
            .max_by_key(|(at, _)| at.components().count())
            .map(|(_, access)| *access)
    }

    /// Whether `path` exists in the view already (in a bind, or made).
    fn exists(&self, path: &Path) -> bool {
        path == Path::new("/") || self.made.contains(path) || self.bound(path).is_some()
    }

    /// The folders on the way to `path`.
    fn parents(&mut self, path: &Path) {
        let mut ancestors: Vec<&Path> = path.ancestors().skip(1).collect();
        ancestors.reverse();
        for dir in ancestors {
            self.dir(dir);
        }
    }

    fn dir(&mut self, dir: &Path) {
        if !self.exists(dir) {
            self.made.insert(dir.to_path_buf());
            self.ops.push(Op::Dir(dir.to_path_buf()));
        }
    }

    fn tmpfs(&mut self, at: &Path, bytes: Option<u64>, mode: u32) {
        self.parents(at);
        self.dir(at);
        self.ops.push(Op::Tmpfs {
            at: at.to_path_buf(),
            bytes,
            mode,
        });
    }

    fn link(&mut self, at: &Path, target: &Path) {
        if self.exists(at) {
            return;
        }
        self.parents(at);
        self.made.insert(at.to_path_buf());
        self.ops.push(Op::Link {
            at: at.to_path_buf(),
            target: target.to_path_buf(),
        });
    }

    /// `real` (a path without links) shown as on the host, unless a bind shows it so already.
    fn bind(&mut self, real: &Path, access: Access) {
        let shown = match (access, self.bound(real)) {
            (Access::Show, Some(_)) => true,
            (_, bound) => bound == Some(access),
        };
        let access = match access {
            Access::Show => Access::Read,
            other => other,
        };
        let op = Op::Bind {
            from: real.to_path_buf(),
            at: real.to_path_buf(),
            access,
        };
        if shown || self.ops.contains(&op) {
            return;
        }
        let is_dir = match self.host.kind(real) {
            Kind::Dir => true,
            Kind::File => false,
            Kind::Link(_) | Kind::Missing => return,
        };
        if !self.exists(real) {
            self.parents(real);
            self.made.insert(real.to_path_buf());
            self.ops.push(match is_dir {
                true => Op::Dir(real.to_path_buf()),
                false => Op::File(real.to_path_buf()),
            });
        }
        self.ops.push(op);
        if is_dir {
            self.binds.push((real.to_path_buf(), access));
        }
    }

    /// The links on the way from `given` to its real path, each made where the view does
    /// not show the host's already.
    fn links_to(&mut self, given: &Path) {
        let mut path = given.to_path_buf();
        for _ in 0..40 {
            let Some((at, target)) = self.first_link(&path) else {
                return;
            };
            if !self.exists(&at) {
                self.link(&at, &target);
            }
            let rest = path
                .strip_prefix(&at)
                .map(Path::to_path_buf)
                .unwrap_or_default();
            let base = at.parent().unwrap_or(Path::new("/"));
            path = normalize(&base.join(&target)).join(rest);
        }
    }

    /// The first prefix of `path` that is a link on the host, and its target.
    fn first_link(&self, path: &Path) -> Option<(PathBuf, PathBuf)> {
        let mut prefix = PathBuf::from("/");
        for part in path.components().skip(1) {
            prefix.push(part);
            if let Kind::Link(target) = self.host.kind(&prefix) {
                return Some((prefix, target));
            }
        }
        None
    }
}

/// `path` with `.` and `..` taken out lexically (its prefixes hold no link here).
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::from("/");
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::Normal(name) => out.push(name),
            Component::RootDir | Component::CurDir | Component::Prefix(_) => {}
        }
    }
    out
}

/// Whether this process may give its children a view of their own: `Err` with why not
/// (probed once, in a child that makes a view of the system folders and exits).
pub fn available() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE.get_or_init(init::probe).clone()
}

#[cfg(test)]
mod tests;

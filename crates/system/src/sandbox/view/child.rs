//! The view's mounts, made in the child between fork and exec: every step a system call on
//! memory prepared before the fork ([`Prepared`]: C strings, flags, a shared page for what went
//! wrong and for the program's exit status), no allocation, no lock.
//!
//! [`build`] (in the outer process, once in its new mount namespace): a tmpfs on `/tmp` and a
//! pivot into it, so the host's tree is at `/oldroot`; the view under `/newroot` (a second
//! tmpfs, read-only at the end) from the plan's steps. [`finish`] (in PID 1 of the new PID
//! namespace): a `/proc` of the namespace, mounted while the host's `/proc` is still attached
//! (as the kernel requires in a user namespace), then the host's tree detached and a pivot
//! into the view.
//!
//! Not for: the processes that run these steps (`init.rs`), what the view holds (`mod.rs`).

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicI32, AtomicU32, Ordering};

use super::{Access, Op};

/// Where the first tmpfs goes: any folder every system has; the host's stays visible at
/// `/oldroot/tmp` once the pivot moved the tmpfs away from it.
const BASE: &std::ffi::CStr = c"/tmp";

/// What went wrong in the child, and how the program ended, shared across the forks.
#[repr(C)]
pub(super) struct Report {
    pub(super) stage: AtomicU32,
    step: AtomicU32,
    pub(super) errno: AtomicI32,
    pub(super) status_set: AtomicU32,
    pub(super) status: AtomicI32,
}

/// A page shared by the runner and every process of one spawn.
struct Shared(*mut Report);

// SAFETY: the page holds atomics only, and lives until the `Prepared` owning it is dropped.
unsafe impl Send for Shared {}
// SAFETY: as above; every access goes through the atomics.
unsafe impl Sync for Shared {}

impl Shared {
    fn new() -> io::Result<Shared> {
        // SAFETY: an anonymous shared mapping; the kernel chooses the address.
        let page = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                std::mem::size_of::<Report>(),
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED | libc::MAP_ANONYMOUS,
                -1,
                0,
            )
        };
        if page == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        // Zeroed by the kernel: every counter starts at 0.
        Ok(Shared(page.cast()))
    }

    fn get(&self) -> &Report {
        // SAFETY: the mapping is live and sized for a Report for as long as `self` is.
        unsafe { &*self.0 }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        // SAFETY: unmaps the page this value mapped.
        unsafe { libc::munmap(self.0.cast(), std::mem::size_of::<Report>()) };
    }
}

/// The stages of making a view, as the report names them.
#[derive(Clone, Copy)]
#[repr(u32)]
pub(super) enum Stage {
    Unshare = 1,
    Propagation,
    Base,
    Pivot,
    Root,
    Step,
    ReadOnly,
    ForkInit,
    Proc,
    Detach,
    PivotRoot,
    ForkProgram,
    Chdir,
}

const STAGES: [&str; 13] = [
    "entering new user, mount and PID namespaces",
    "keeping its mounts from the host's",
    "mounting its first tmpfs on /tmp",
    "pivoting into its first tmpfs",
    "mounting the view's root tmpfs",
    "",
    "making the view's root read-only",
    "starting the namespace's first process",
    "mounting its /proc",
    "detaching the host's tree",
    "pivoting into the view",
    "starting the program",
    "entering the working folder",
];

/// One step of the plan, as the child runs it.
enum Step {
    Dir(CString),
    File(CString),
    Link {
        target: CString,
        at: CString,
    },
    Bind {
        from: CString,
        at: CString,
        read_only: bool,
        /// The flags a read-only remount must keep (the source's locked ones), for kernels
        /// without `mount_setattr` (before 5.12).
        keep: libc::c_ulong,
    },
    Tmpfs {
        at: CString,
        options: CString,
    },
    Seal(CString),
}

/// A view ready to be made by one spawn's child.
pub struct Prepared {
    steps: Vec<Step>,
    /// What each step does, for a failure's message.
    said: Vec<String>,
    /// Tmpfs mounts made read-only once the steps are done.
    read_only: Vec<CString>,
    pub(super) cwd: CString,
    report: Shared,
}

impl std::fmt::Debug for Prepared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "view::Prepared({} steps)", self.steps.len())
    }
}

fn c(prefix: &str, path: &Path) -> io::Result<CString> {
    let mut bytes = prefix.as_bytes().to_vec();
    bytes.extend_from_slice(path.as_os_str().as_bytes());
    CString::new(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} holds a NUL byte", path.display()),
        )
    })
}

impl Prepared {
    /// The plan's `ops` as the child runs them; the program starts in `cwd`.
    pub fn new(ops: &[Op], cwd: &Path) -> io::Result<Prepared> {
        let mut steps = Vec::with_capacity(ops.len());
        let mut said = Vec::with_capacity(ops.len());
        let mut read_only = Vec::new();
        for op in ops {
            let (step, text) = match op {
                Op::Dir(p) => (
                    Step::Dir(c("/newroot", p)?),
                    format!("making {}", p.display()),
                ),
                Op::File(p) => (
                    Step::File(c("/newroot", p)?),
                    format!("making {}", p.display()),
                ),
                Op::Link { at, target } => (
                    Step::Link {
                        target: c("", target)?,
                        at: c("/newroot", at)?,
                    },
                    format!("linking {} to {}", at.display(), target.display()),
                ),
                Op::Bind { from, at, access } => (
                    Step::Bind {
                        from: c("/oldroot", from)?,
                        at: c("/newroot", at)?,
                        read_only: *access != Access::Write,
                        keep: match access {
                            Access::Write => 0,
                            Access::Read | Access::Show => locked_flags(from),
                        },
                    },
                    format!("showing {}", at.display()),
                ),
                Op::Seal(at) => (
                    Step::Seal(c("/newroot", at)?),
                    format!("making {} read-only", at.display()),
                ),
                Op::Tmpfs { at, bytes, mode } => {
                    let size = bytes.map_or(String::new(), |b| format!(",size={b}"));
                    if at == Path::new("/dev") {
                        read_only.push(c("/newroot", at)?);
                    }
                    (
                        Step::Tmpfs {
                            at: c("/newroot", at)?,
                            options: CString::new(format!("mode={mode:o}{size}"))
                                .map_err(io::Error::other)?,
                        },
                        format!("mounting a tmpfs on {}", at.display()),
                    )
                }
            };
            steps.push(step);
            said.push(text);
        }
        read_only.push(c"/newroot".to_owned());
        Ok(Prepared {
            steps,
            said,
            read_only,
            cwd: c("", cwd)?,
            report: Shared::new()?,
        })
    }

    /// The page the spawn's processes share.
    pub(super) fn report(&self) -> &Report {
        self.report.get()
    }

    /// What the child said went wrong, if it did: the stage (and step) and the error.
    pub fn failure(&self) -> Option<String> {
        let report = self.report.get();
        let stage = report.stage.load(Ordering::SeqCst);
        if stage == 0 {
            return None;
        }
        let errno = report.errno.load(Ordering::SeqCst);
        let what = match stage {
            s if s == Stage::Step as u32 => {
                let i = report.step.load(Ordering::SeqCst) as usize;
                self.said.get(i).cloned().unwrap_or_default()
            }
            s => STAGES
                .get(s as usize - 1)
                .copied()
                .unwrap_or_default()
                .to_string(),
        };
        let hint = if stage == Stage::Proc as u32 && errno == libc::EPERM {
            " (this machine's /proc has parts hidden, as in a container: a /proc of the run's own cannot be mounted)"
        } else {
            ""
        };
        Some(format!(
            "{what}: {}{hint}",
            io::Error::from_raw_os_error(errno)
        ))
    }
}

/// The mount flags of `path`'s mount that a read-only remount in a user namespace must keep.
fn locked_flags(path: &Path) -> libc::c_ulong {
    let Ok(p) = CString::new(path.as_os_str().as_bytes()) else {
        return 0;
    };
    // SAFETY: statvfs writes into `st`, a plain C struct that lives for the call.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    if unsafe { libc::statvfs(p.as_ptr(), &mut st) } != 0 {
        return 0;
    }
    let pairs = [
        (libc::ST_NOSUID, libc::MS_NOSUID),
        (libc::ST_NODEV, libc::MS_NODEV),
        (libc::ST_NOEXEC, libc::MS_NOEXEC),
        (libc::ST_NOATIME, libc::MS_NOATIME),
        (libc::ST_NODIRATIME, libc::MS_NODIRATIME),
        (libc::ST_RELATIME, libc::MS_RELATIME),
    ];
    pairs
        .iter()
        .filter(|(st_flag, _)| st.f_flag & *st_flag != 0)
        .fold(0, |flags, (_, ms)| flags | ms)
}

/// `Err` of the last system call, noted in the report as `stage` (and `step`).
pub(super) unsafe fn failed(report: &Report, stage: Stage, step: usize) -> io::Error {
    let e = io::Error::last_os_error();
    report
        .errno
        .store(e.raw_os_error().unwrap_or(0), Ordering::SeqCst);
    report.step.store(step as u32, Ordering::SeqCst);
    report.stage.store(stage as u32, Ordering::SeqCst);
    e
}

/// A system call's return code as a result: negative is a failure of `stage`.
pub(super) unsafe fn ok(report: &Report, stage: Stage, rc: libc::c_long) -> io::Result<()> {
    if rc < 0 {
        Err(failed(report, stage, 0))
    } else {
        Ok(())
    }
}

/// The outer process's part: the first tmpfs, the pivot into it, the view under `/newroot`.
pub(super) unsafe fn build(prep: &Prepared, r: &Report) -> io::Result<()> {
    let null = std::ptr::null::<libc::c_char>();
    let rc = libc::mount(
        null,
        c"/".as_ptr(),
        null,
        libc::MS_REC | libc::MS_SLAVE,
        null.cast(),
    );
    ok(r, Stage::Propagation, rc as libc::c_long)?;
    let tmpfs = c"tmpfs".as_ptr();
    let flags = libc::MS_NOSUID | libc::MS_NODEV;
    let rc = libc::mount(
        tmpfs,
        BASE.as_ptr(),
        tmpfs,
        flags,
        c"mode=0755,size=65536".as_ptr().cast(),
    );
    ok(r, Stage::Base, rc as libc::c_long)?;
    let pivoted = libc::chdir(BASE.as_ptr()) == 0
        && made_dir(c"newroot")
        && made_dir(c"oldroot")
        && libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c"oldroot".as_ptr()) == 0
        && libc::chdir(c"/".as_ptr()) == 0;
    if !pivoted {
        return Err(failed(r, Stage::Pivot, 0));
    }
    let rc = libc::mount(
        tmpfs,
        c"/newroot".as_ptr(),
        tmpfs,
        flags,
        c"mode=0755,size=1048576".as_ptr().cast(),
    );
    ok(r, Stage::Root, rc as libc::c_long)?;
    for (i, step) in prep.steps.iter().enumerate() {
        if !run(step) {
            return Err(failed(r, Stage::Step, i));
        }
    }
    for at in &prep.read_only {
        let flags = libc::MS_REMOUNT | libc::MS_RDONLY | libc::MS_NOSUID | libc::MS_NODEV;
        if libc::mount(null, at.as_ptr(), null, flags, null.cast()) != 0 {
            return Err(failed(r, Stage::ReadOnly, 0));
        }
    }
    Ok(())
}

/// `mkdir`, an existing folder being as good.
unsafe fn made_dir(path: &std::ffi::CStr) -> bool {
    libc::mkdir(path.as_ptr(), 0o755) == 0 || *libc::__errno_location() == libc::EEXIST
}

/// One step; `false` with `errno` set when it failed.
unsafe fn run(step: &Step) -> bool {
    let null = std::ptr::null::<libc::c_char>();
    match step {
        Step::Dir(path) => made_dir(path),
        Step::File(path) => {
            let fd = libc::open(
                path.as_ptr(),
                libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC | libc::O_NOFOLLOW,
                0o644,
            );
            fd >= 0 && libc::close(fd) == 0
        }
        Step::Link { target, at } => {
            libc::symlink(target.as_ptr(), at.as_ptr()) == 0
                || *libc::__errno_location() == libc::EEXIST
        }
        Step::Tmpfs { at, options } => {
            let tmpfs = c"tmpfs".as_ptr();
            let flags = libc::MS_NOSUID | libc::MS_NODEV;
            libc::mount(tmpfs, at.as_ptr(), tmpfs, flags, options.as_ptr().cast()) == 0
        }
        Step::Bind {
            from,
            at,
            read_only,
            keep,
        } => {
            let flags = libc::MS_BIND | libc::MS_REC;
            if libc::mount(from.as_ptr(), at.as_ptr(), null, flags, null.cast()) != 0 {
                return false;
            }
            !*read_only || made_read_only(at, *keep, true)
        }
        Step::Seal(at) => {
            // Bound onto itself with what is mounted beneath it, then read-only alone: the
            // mounts beneath keep their own access.
            let flags = libc::MS_BIND | libc::MS_REC;
            libc::mount(at.as_ptr(), at.as_ptr(), null, flags, null.cast()) == 0
                && made_read_only(at, libc::MS_NOSUID | libc::MS_NODEV, false)
        }
    }
}

/// `struct mount_attr` of `mount_setattr` (Linux 5.12).
#[repr(C)]
struct MountAttr {
    attr_set: u64,
    attr_clr: u64,
    propagation: u64,
    userns_fd: u64,
}

/// Makes the bind at `at` read-only, and every mount below it when `recursive`.
unsafe fn made_read_only(at: &CString, keep: libc::c_ulong, recursive: bool) -> bool {
    const MOUNT_ATTR_RDONLY: u64 = 0x1;
    const MOUNT_ATTR_NOSUID: u64 = 0x2;
    const AT_RECURSIVE: libc::c_uint = 0x8000;
    let attr = MountAttr {
        attr_set: MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID,
        attr_clr: 0,
        propagation: 0,
        userns_fd: 0,
    };
    let rc = libc::syscall(
        libc::SYS_mount_setattr,
        libc::AT_FDCWD,
        at.as_ptr(),
        if recursive { AT_RECURSIVE } else { 0 },
        &attr as *const MountAttr,
        std::mem::size_of::<MountAttr>(),
    );
    if rc == 0 {
        return true;
    }
    if *libc::__errno_location() != libc::ENOSYS {
        return false;
    }
    let null = std::ptr::null::<libc::c_char>();
    let flags = libc::MS_REMOUNT | libc::MS_BIND | libc::MS_RDONLY | libc::MS_NOSUID | keep;
    libc::mount(null, at.as_ptr(), null, flags, null.cast()) == 0
}

/// PID 1's part before it starts the program: `/proc`, then into the view for good.
pub(super) unsafe fn finish(r: &Report) -> io::Result<()> {
    let proc_ = c"proc".as_ptr();
    let flags = libc::MS_NOSUID | libc::MS_NODEV | libc::MS_NOEXEC;
    let rc = libc::mount(
        proc_,
        c"/newroot/proc".as_ptr(),
        proc_,
        flags,
        std::ptr::null(),
    );
    ok(r, Stage::Proc, rc as libc::c_long)?;
    let rc = libc::umount2(c"/oldroot".as_ptr(), libc::MNT_DETACH);
    ok(r, Stage::Detach, rc as libc::c_long)?;
    let pivoted = libc::chdir(c"/newroot".as_ptr()) == 0
        && libc::syscall(libc::SYS_pivot_root, c".".as_ptr(), c".".as_ptr()) == 0
        && libc::umount2(c".".as_ptr(), libc::MNT_DETACH) == 0
        && libc::chdir(c"/".as_ptr()) == 0;
    if !pivoted {
        return Err(failed(r, Stage::PivotRoot, 0));
    }
    Ok(())
}

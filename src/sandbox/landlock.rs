//! Landlock (Linux 5.13 and newer), through its three system calls: an agent runs in a domain
//! where it may read and execute anything but write only beneath the paths it is given; it may
//! not ptrace processes outside its domain and (ABI 6) not signal them. Reading another
//! process's `/proc/<pid>/environ` is not reliably closed by this (on the kernel the tests run
//! on, a confined root process still read its parent's), so the runner does not rely on it: the
//! token is scrubbed from its own environment memory (`credentials`).
//!
//! The ruleset is built in the runner before the agent starts ([`Ruleset::for_agent`]); the
//! child applies it between fork and exec ([`Ruleset::restrict_child`], two system calls, no
//! allocation). Not here: which paths an agent may write (the runner's choice).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};

const CREATE_RULESET_VERSION: u32 = 1;
const RULE_PATH_BENEATH: libc::c_int = 1;
const RULE_NET_PORT: libc::c_int = 2;
/// ABI 4: connecting a TCP socket (binding is left alone: tests bind their own ports).
const NET_CONNECT_TCP: u64 = 1 << 1;

const EXECUTE: u64 = 1 << 0;
const WRITE_FILE: u64 = 1 << 1;
const READ_FILE: u64 = 1 << 2;
const READ_DIR: u64 = 1 << 3;
/// Every right of ABI 1: the above plus removing and making files, folders, links, devices.
const ABI1_ALL: u64 = (1 << 13) - 1;
const REFER: u64 = 1 << 13; // ABI 2
const TRUNCATE: u64 = 1 << 14; // ABI 3
const IOCTL_DEV: u64 = 1 << 15; // ABI 5
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0; // ABI 6
const SCOPE_SIGNAL: u64 = 1 << 1; // ABI 6

/// Devices any program may write (the rights are cut to those of a file).
const DEVICES: [&str; 6] = [
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/tty",
    "/dev/random",
    "/dev/urandom",
];

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C)]
struct NetPortAttr {
    allowed_access: u64,
    port: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The Landlock ABI version of the running kernel, `None` when it has no Landlock (or it is
/// switched off).
pub fn abi_version() -> Option<u32> {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: with the VERSION flag, a NULL attribute and size 0 the call reads no memory.
        let v = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<RulesetAttr>(),
                0usize,
                CREATE_RULESET_VERSION,
            )
        };
        u32::try_from(v).ok().filter(|&v| v >= 1)
    }
    #[cfg(not(target_os = "linux"))]
    {
        None
    }
}

/// A ready ruleset (its file descriptor closes on exec, so the agent never holds it).
#[derive(Debug)]
pub struct Ruleset {
    fd: OwnedFd,
    pub abi: u32,
}

impl Ruleset {
    /// Read and execute everywhere; write only beneath `writable` (paths that do not exist are
    /// skipped); no ptrace of, and (ABI 6) no signal to, anything outside the domain.
    pub fn for_agent(writable: &[PathBuf]) -> std::io::Result<Ruleset> {
        Ruleset::build(Some(writable), None)
    }

    /// A domain of file rules (`writable`, as [`Ruleset::for_agent`]; `None`: no file rules)
    /// and, with `connect_port`, TCP rules letting it connect to that port only (ABI 4: the
    /// fallback of `sandbox::netns` where the kernel refuses a namespace; UDP, raw sockets and
    /// DNS are not covered).
    pub fn build(
        writable: Option<&[PathBuf]>,
        connect_port: Option<u16>,
    ) -> std::io::Result<Ruleset> {
        let abi = abi_version().ok_or_else(|| {
            std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                "this kernel has no Landlock (Linux 5.13 or newer, with landlock in the lsm= list)",
            )
        })?;
        if connect_port.is_some() && abi < 4 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::Unsupported,
                format!("this kernel's Landlock (ABI {abi}) has no TCP rules (ABI 4, Linux 6.7)"),
            ));
        }
        let mut handled = ABI1_ALL;
        if abi >= 2 {
            handled |= REFER;
        }
        if abi >= 3 {
            handled |= TRUNCATE;
        }
        if abi >= 5 {
            handled |= IOCTL_DEV;
        }
        if writable.is_none() {
            handled = 0;
        }
        let attr = RulesetAttr {
            handled_access_fs: handled,
            handled_access_net: if connect_port.is_some() {
                NET_CONNECT_TCP
            } else {
                0
            },
            scoped: if abi >= 6 {
                SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET
            } else {
                0
            },
        };
        let size = match abi {
            6.. => std::mem::size_of::<RulesetAttr>(),
            4 | 5 => 2 * std::mem::size_of::<u64>(),
            _ => std::mem::size_of::<u64>(),
        };
        // SAFETY: `attr` is a valid RulesetAttr and `size` does not exceed it.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &attr as *const RulesetAttr,
                size,
                0u32,
            )
        };
        let fd = i32::try_from(fd)
            .ok()
            .filter(|&fd| fd >= 0)
            .ok_or_else(std::io::Error::last_os_error)?;
        // SAFETY: the kernel just returned this descriptor to us; nothing else owns it.
        let ruleset = Ruleset {
            fd: unsafe { OwnedFd::from_raw_fd(fd) },
            abi,
        };
        if let Some(writable) = writable {
            ruleset.allow(Path::new("/"), (READ_FILE | READ_DIR | EXECUTE) & handled)?;
            for path in writable {
                if path.exists() {
                    ruleset.allow(path, handled)?;
                }
            }
            for device in DEVICES {
                let path = Path::new(device);
                if path.exists() {
                    ruleset.allow(path, handled)?;
                }
            }
        }
        if let Some(port) = connect_port {
            ruleset.allow_connect(port)?;
        }
        Ok(ruleset)
    }

    fn allow_connect(&self, port: u16) -> std::io::Result<()> {
        let rule = NetPortAttr {
            allowed_access: NET_CONNECT_TCP,
            port: u64::from(port),
        };
        // SAFETY: `rule` is a valid NetPortAttr for the rule type given; the descriptor is open.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                self.fd.as_raw_fd(),
                RULE_NET_PORT,
                &rule as *const NetPortAttr,
                0u32,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    fn allow(&self, path: &Path, access: u64) -> std::io::Result<()> {
        use std::os::unix::fs::OpenOptionsExt;
        // O_PATH: the file is named, not opened (a terminal or FIFO is never touched).
        let dir = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_CLOEXEC)
            .open(path)?;
        let access = if dir.metadata()?.is_dir() {
            access
        } else {
            // Rights on folders are refused on a file.
            access & (EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV)
        };
        let rule = PathBeneathAttr {
            allowed_access: access,
            parent_fd: dir.as_raw_fd(),
        };
        // SAFETY: `rule` is a valid PathBeneathAttr for the rule type given; both descriptors
        // are open for the duration of the call.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                self.fd.as_raw_fd(),
                RULE_PATH_BENEATH,
                &rule as *const PathBeneathAttr,
                0u32,
            )
        };
        if rc == 0 {
            Ok(())
        } else {
            Err(std::io::Error::last_os_error())
        }
    }

    pub fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Puts the calling process in the domain. Meant for the child between fork and exec: only
    /// two system calls, no allocation.
    ///
    /// # Safety
    /// `fd` must be the descriptor of a live [`Ruleset`] (inherited across fork).
    pub unsafe fn restrict_child(fd: RawFd) -> std::io::Result<()> {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `sh -c script` confined to writing `writable`; its exit code.
    fn confined(writable: &Path, script: &str) -> i32 {
        use std::os::unix::process::CommandExt;
        let ruleset = Ruleset::for_agent(&[writable.to_path_buf()]).unwrap();
        let fd = ruleset.raw_fd();
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", script]);
        // SAFETY: restrict_child makes only system calls; `ruleset` outlives the spawn.
        unsafe {
            cmd.pre_exec(move || Ruleset::restrict_child(fd));
        }
        cmd.status().unwrap().code().unwrap_or(-1)
    }

    #[test]
    fn a_child_with_tcp_rules_connects_only_to_its_port() {
        if abi_version().is_none_or(|abi| abi < 4) {
            eprintln!("no Landlock TCP rules on this kernel: nothing to check");
            return;
        }
        let allowed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let other = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = |l: &std::net::TcpListener| l.local_addr().unwrap().port();
        let ruleset = Ruleset::build(None, Some(port(&allowed))).unwrap();
        let fd = ruleset.raw_fd();
        let script = format!(
            "exec 3<>/dev/tcp/127.0.0.1/{} || exit 11; exec 4<>/dev/tcp/127.0.0.1/{} 2>/dev/null && exit 10; exit 0",
            port(&allowed),
            port(&other)
        );
        let mut cmd = std::process::Command::new("bash");
        cmd.args(["-c", &script]);
        use std::os::unix::process::CommandExt;
        // SAFETY: restrict_child makes only system calls; `ruleset` outlives the spawn.
        unsafe {
            cmd.pre_exec(move || Ruleset::restrict_child(fd));
        }
        assert_eq!(cmd.status().unwrap().code(), Some(0));
    }

    #[test]
    fn a_confined_child_writes_only_where_allowed() {
        if abi_version().is_none() {
            eprintln!("no Landlock on this kernel: nothing to check");
            return;
        }
        let inside = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        let ok = format!("echo x > {}/a", inside.path().display());
        assert_eq!(confined(inside.path(), &ok), 0);
        let refused = format!("echo x > {}/a", outside.path().display());
        assert_ne!(confined(inside.path(), &refused), 0);
        assert!(!outside.path().join("a").exists());
        assert_eq!(
            confined(inside.path(), "ls / > /dev/null && echo > /dev/null"),
            0
        );
    }
}

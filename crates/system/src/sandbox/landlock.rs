//! Landlock (Linux 5.13 and newer), through its three system calls: an agent runs in a domain
//! where it may read and execute anything but write only beneath the paths it is given; it may
//! not ptrace processes outside its domain and (ABI 6) not signal them. Reading another
//! process's `/proc/<pid>/environ` is not reliably closed by this (on the kernel the tests run
//! on, a confined root process still read its parent's), so the runner does not rely on it: the
//! token is scrubbed from its own environment memory (`credentials`).
//!
//! The rules are prepared in the runner before the agent starts ([`Rules::for_agent`]); the
//! child makes the ruleset and enters it between fork and exec ([`Rules::enter`], system calls
//! on memory made before the fork), after its view of the file system (`view`) is in place:
//! Landlock's rules hold on the files the child sees. Not here: which paths an agent may write
//! (the runner's choice).

use std::ffi::CString;
use std::os::fd::RawFd;
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

/// A Landlock domain prepared before the fork: the rights handled and the paths allowed, as C
/// strings. The child makes the ruleset itself ([`Rules::enter`]): in a view of its own
/// (`view`) the paths must be opened where it will run, and a rule on the host's `/` would
/// cover nothing there.
#[derive(Debug)]
pub struct Rules {
    pub abi: u32,
    handled: u64,
    scoped: u64,
    /// `(path, rights)`: read and execute beneath `/`, then the writable paths and devices.
    paths: Vec<(CString, u64)>,
    connect_port: Option<u16>,
}

impl Rules {
    /// Read and execute everywhere; write only beneath `writable` (paths that do not exist
    /// when the child starts are skipped); no ptrace of, and (ABI 6) no signal to, anything
    /// outside the domain.
    pub fn for_agent(writable: &[PathBuf]) -> std::io::Result<Rules> {
        Rules::build(Some(writable), None)
    }

    /// A domain of file rules (`writable`, as [`Rules::for_agent`]; `None`: no file rules)
    /// and, with `connect_port`, TCP rules letting it connect to that port only (ABI 4: the
    /// fallback of `sandbox::netns` where the kernel refuses a namespace; UDP, raw sockets and
    /// DNS are not covered).
    pub fn build(
        writable: Option<&[PathBuf]>,
        connect_port: Option<u16>,
    ) -> std::io::Result<Rules> {
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
        let mut paths = Vec::new();
        match writable {
            None => handled = 0,
            Some(writable) => {
                paths.push((
                    c_path(Path::new("/"))?,
                    (READ_FILE | READ_DIR | EXECUTE) & handled,
                ));
                for path in writable
                    .iter()
                    .map(PathBuf::as_path)
                    .chain(DEVICES.map(Path::new))
                {
                    paths.push((c_path(path)?, handled));
                }
            }
        }
        Ok(Rules {
            abi,
            handled,
            scoped: if abi >= 6 {
                SCOPE_SIGNAL | SCOPE_ABSTRACT_UNIX_SOCKET
            } else {
                0
            },
            paths,
            connect_port,
        })
    }

    /// Makes the ruleset and puts the calling process in the domain. Meant for the child
    /// between fork and exec: only system calls on memory made before the fork.
    ///
    /// # Safety
    /// Only in a child between fork and exec (it sets `PR_SET_NO_NEW_PRIVS`).
    pub unsafe fn enter(&self) -> std::io::Result<()> {
        let attr = RulesetAttr {
            handled_access_fs: self.handled,
            handled_access_net: if self.connect_port.is_some() {
                NET_CONNECT_TCP
            } else {
                0
            },
            scoped: self.scoped,
        };
        let size = match self.abi {
            6.. => std::mem::size_of::<RulesetAttr>(),
            4 | 5 => 2 * std::mem::size_of::<u64>(),
            _ => std::mem::size_of::<u64>(),
        };
        let fd = libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            size,
            0u32,
        );
        let Ok(fd) = i32::try_from(fd) else {
            return Err(std::io::Error::last_os_error());
        };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let result = self.fill(fd).and_then(|()| restrict_self(fd));
        libc::close(fd);
        result
    }

    unsafe fn fill(&self, ruleset: RawFd) -> std::io::Result<()> {
        for (path, access) in &self.paths {
            // O_PATH: the file is named, not opened (a terminal or FIFO is never touched).
            let fd = libc::open(path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC);
            if fd < 0 {
                let e = std::io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::ENOENT) {
                    continue;
                }
                return Err(e);
            }
            let mut stat: libc::stat = std::mem::zeroed();
            let mut access = *access;
            if libc::fstat(fd, &mut stat) == 0 && stat.st_mode & libc::S_IFMT != libc::S_IFDIR {
                // Rights on folders are refused on a file.
                access &= EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;
            }
            let rule = PathBeneathAttr {
                allowed_access: access,
                parent_fd: fd,
            };
            let rc = libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset,
                RULE_PATH_BENEATH,
                &rule as *const PathBeneathAttr,
                0u32,
            );
            let e = std::io::Error::last_os_error();
            libc::close(fd);
            if rc != 0 {
                return Err(e);
            }
        }
        if let Some(port) = self.connect_port {
            let rule = NetPortAttr {
                allowed_access: NET_CONNECT_TCP,
                port: u64::from(port),
            };
            let rc = libc::syscall(
                libc::SYS_landlock_add_rule,
                ruleset,
                RULE_NET_PORT,
                &rule as *const NetPortAttr,
                0u32,
            );
            if rc != 0 {
                return Err(std::io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// Puts the calling process in the ruleset's domain: two system calls.
unsafe fn restrict_self(ruleset: RawFd) -> std::io::Result<()> {
    if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
        return Err(std::io::Error::last_os_error());
    }
    if libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

fn c_path(path: &Path) -> std::io::Result<CString> {
    use std::os::unix::ffi::OsStrExt;
    CString::new(path.as_os_str().as_bytes()).map_err(|_| {
        std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{} holds a NUL byte", path.display()),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `sh -c script` confined to writing `writable`; its exit code.
    fn confined(writable: &Path, script: &str) -> i32 {
        use std::os::unix::process::CommandExt;
        let rules = std::sync::Arc::new(Rules::for_agent(&[writable.to_path_buf()]).unwrap());
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", script]);
        // SAFETY: `enter` makes only system calls on memory made before the fork.
        unsafe {
            cmd.pre_exec(move || rules.enter());
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
        let rules = std::sync::Arc::new(Rules::build(None, Some(port(&allowed))).unwrap());
        let script = format!(
            "exec 3<>/dev/tcp/127.0.0.1/{} || exit 11; exec 4<>/dev/tcp/127.0.0.1/{} 2>/dev/null && exit 10; exit 0",
            port(&allowed),
            port(&other)
        );
        let mut cmd = std::process::Command::new("bash");
        cmd.args(["-c", &script]);
        use std::os::unix::process::CommandExt;
        // SAFETY: `enter` makes only system calls on memory made before the fork.
        unsafe {
            cmd.pre_exec(move || rules.enter());
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

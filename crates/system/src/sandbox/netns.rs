//! A network of its own for an agent or a check (issue 37): the child enters a new user and
//! network namespace between fork and exec, where the only interface is loopback and the only
//! listener on it is opentiger's proxy. The listener is made inside the namespace by the child
//! and handed to the runner over a socket pair (`SCM_RIGHTS`), so the runner's proxy accepts
//! connections from inside a network the runner itself is not in; the agent reaches nothing else
//! (no route out, no DNS, no other host's port), and everything it starts inherits the namespace.
//!
//! Everything the child does is a system call on memory prepared before the fork ([`Entry`]): no
//! allocation, no lock (async-signal-safe). The user namespace maps the runner's own uid and gid
//! to themselves, so files keep their owners and, once the program is executed, it has no
//! capability left in the namespace (unless it runs as root).
//!
//! Not here: the proxy that serves the listener (`egress`), the fallback where the kernel refuses
//! the namespace (Landlock's TCP rules, `landlock.rs`), deciding which applies (`egress`).

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::{Arc, OnceLock};

/// The proxy's port on the namespace's loopback (a namespace is private, so one port for all).
pub const PORT: u16 = 3128;

/// Where an agent's listener goes once its namespace made it: the runner's proxy.
pub type Deliver = Arc<dyn Fn(OwnedFd) + Send + Sync>;

/// A network namespace to put each spawned program in, and where its listener goes.
#[derive(Clone)]
pub struct Door {
    pub deliver: Deliver,
}

impl std::fmt::Debug for Door {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("netns::Door")
    }
}

/// A `uid_map` / `gid_map` line, made before the fork.
#[derive(Clone, Copy)]
pub struct MapLine {
    bytes: [u8; 48],
    len: usize,
}

impl MapLine {
    /// `id id 1\n`: the id maps to itself.
    fn identity(id: u32) -> MapLine {
        let text = format!("{id} {id} 1\n");
        let mut bytes = [0u8; 48];
        bytes[..text.len()].copy_from_slice(text.as_bytes());
        MapLine {
            bytes,
            len: text.len(),
        }
    }

    fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }
}

/// What one spawn needs: the socket pair (the child's end closes on exec) and the map lines.
pub struct Entry {
    runner_end: OwnedFd,
    child_end: OwnedFd,
    pub child: ChildPart,
}

/// The plain values the child uses between fork and exec (copied into the `pre_exec` closure).
#[derive(Clone, Copy)]
pub struct ChildPart {
    fd: RawFd,
    uid: MapLine,
    gid: MapLine,
}

impl ChildPart {
    /// The map lines of `uid` and `gid`, no socket: for a user namespace without a network
    /// namespace of its own ([`enter_user`]).
    pub fn user(uid: u32, gid: u32) -> ChildPart {
        ChildPart {
            fd: -1,
            uid: MapLine::identity(uid),
            gid: MapLine::identity(gid),
        }
    }

    /// [`ChildPart::user`] of this process's own user.
    pub fn current_user() -> ChildPart {
        // SAFETY: getuid and getgid have no preconditions.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        ChildPart::user(uid, gid)
    }
}

impl Entry {
    pub fn new() -> io::Result<Entry> {
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: socketpair writes two descriptors into `fds`, which lives for the call.
        let rc = unsafe {
            libc::socketpair(
                libc::AF_UNIX,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                0,
                fds.as_mut_ptr(),
            )
        };
        if rc != 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the kernel just returned these descriptors to us; nothing else owns them.
        let (runner_end, child_end) =
            unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
        // SAFETY: getuid and getgid have no preconditions.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        let child = ChildPart {
            fd: child_end.as_raw_fd(),
            uid: MapLine::identity(uid),
            gid: MapLine::identity(gid),
        };
        Ok(Entry {
            runner_end,
            child_end,
            child,
        })
    }

    /// After the spawn: the listener the child made (it sent it before exec, so this never
    /// waits; a child that failed before sending made the spawn fail).
    pub fn receive(self) -> io::Result<OwnedFd> {
        drop(self.child_end);
        receive_fd(self.runner_end.as_raw_fd())
    }
}

/// In the child, between fork and exec: a new user and network namespace, loopback up, the
/// proxy's listener made on it and sent to the runner.
///
/// # Safety
/// Only in a child between fork and exec; `part` comes from an [`Entry`] made before the fork.
pub unsafe fn enter(part: &ChildPart) -> io::Result<()> {
    enter_user(part, libc::CLONE_NEWNET)?;
    loopback_up()?;
    let listener = listen_loopback(PORT)?;
    let sent = send_fd(part.fd, listener);
    libc::close(listener);
    sent
}

/// In the child, between fork and exec: a new user namespace (with the namespaces `also`
/// names, `CLONE_NEW*` flags), where the runner's uid and gid map to themselves.
///
/// # Safety
/// Only in a child between fork and exec; `part` was made before the fork.
pub unsafe fn enter_user(part: &ChildPart, also: libc::c_int) -> io::Result<()> {
    if libc::unshare(libc::CLONE_NEWUSER | also) != 0 {
        return Err(io::Error::last_os_error());
    }
    // The runner is non-dumpable (`sandbox::protect_runner`) and so is this copy of it, which
    // makes its /proc files root's: for the three opens only, it is dumpable (exec sets it
    // anew from the program anyway). Writes are checked against the opener, not the flag.
    libc::prctl(libc::PR_SET_DUMPABLE, 1, 0, 0, 0);
    let files = [
        open_write(c"/proc/self/setgroups"),
        open_write(c"/proc/self/uid_map"),
        open_write(c"/proc/self/gid_map"),
    ];
    libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0);
    let mut result = Ok(());
    for (fd, bytes) in files
        .iter()
        .zip([&b"deny"[..], part.uid.as_bytes(), part.gid.as_bytes()])
    {
        if result.is_ok() {
            result = match *fd {
                Ok(fd) => write_all(fd, bytes),
                Err(e) => Err(io::Error::from_raw_os_error(e)),
            };
        }
        if let Ok(fd) = *fd {
            libc::close(fd);
        }
    }
    result
}

/// The descriptor, or the errno (no allocation: an `io::Error` from a raw code is plain data).
unsafe fn open_write(path: &std::ffi::CStr) -> Result<RawFd, i32> {
    let fd = libc::open(path.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
    if fd < 0 {
        Err(*libc::__errno_location())
    } else {
        Ok(fd)
    }
}

unsafe fn write_all(fd: RawFd, bytes: &[u8]) -> io::Result<()> {
    let n = libc::write(fd, bytes.as_ptr().cast(), bytes.len());
    if n == bytes.len() as isize {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

unsafe fn loopback_up() -> io::Result<()> {
    let sock = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
    if sock < 0 {
        return Err(io::Error::last_os_error());
    }
    let mut req: libc::ifreq = std::mem::zeroed();
    req.ifr_name[0] = b'l' as libc::c_char;
    req.ifr_name[1] = b'o' as libc::c_char;
    let mut rc = libc::ioctl(sock, libc::SIOCGIFFLAGS, &mut req);
    if rc == 0 {
        req.ifr_ifru.ifru_flags |= (libc::IFF_UP | libc::IFF_RUNNING) as libc::c_short;
        rc = libc::ioctl(sock, libc::SIOCSIFFLAGS, &req);
    }
    let result = if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    };
    libc::close(sock);
    result
}

unsafe fn listen_loopback(port: u16) -> io::Result<RawFd> {
    let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    let one: libc::c_int = 1;
    libc::setsockopt(
        fd,
        libc::SOL_SOCKET,
        libc::SO_REUSEADDR,
        (&one as *const libc::c_int).cast(),
        std::mem::size_of::<libc::c_int>() as libc::socklen_t,
    );
    let mut addr: libc::sockaddr_in = std::mem::zeroed();
    addr.sin_family = libc::AF_INET as libc::sa_family_t;
    addr.sin_port = port.to_be();
    addr.sin_addr.s_addr = u32::from(std::net::Ipv4Addr::LOCALHOST).to_be();
    let bound = libc::bind(
        fd,
        (&addr as *const libc::sockaddr_in).cast(),
        std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
    );
    if bound != 0 || libc::listen(fd, 128) != 0 {
        let e = io::Error::last_os_error();
        libc::close(fd);
        return Err(e);
    }
    Ok(fd)
}

/// Room for one descriptor's control message, aligned for `cmsghdr`.
#[repr(C)]
union ControlBuffer {
    bytes: [u8; 64],
    _align: libc::cmsghdr,
}

unsafe fn send_fd(socket: RawFd, fd: RawFd) -> io::Result<()> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    let mut control: ControlBuffer = std::mem::zeroed();
    let space = libc::CMSG_SPACE(std::mem::size_of::<RawFd>() as u32) as usize;
    let mut msg: libc::msghdr = std::mem::zeroed();
    msg.msg_iov = &mut iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.bytes.as_mut_ptr().cast();
    msg.msg_controllen = space as _;
    let cmsg = libc::CMSG_FIRSTHDR(&msg);
    (*cmsg).cmsg_level = libc::SOL_SOCKET;
    (*cmsg).cmsg_type = libc::SCM_RIGHTS;
    (*cmsg).cmsg_len = libc::CMSG_LEN(std::mem::size_of::<RawFd>() as u32) as _;
    std::ptr::copy_nonoverlapping(
        (&fd as *const RawFd).cast::<u8>(),
        libc::CMSG_DATA(cmsg),
        std::mem::size_of::<RawFd>(),
    );
    if libc::sendmsg(socket, &msg, 0) < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

fn receive_fd(socket: RawFd) -> io::Result<OwnedFd> {
    let mut byte = [0u8; 1];
    let mut iov = libc::iovec {
        iov_base: byte.as_mut_ptr().cast(),
        iov_len: 1,
    };
    // SAFETY: plain C structs, zeroed is a valid value for each; the pointers set below point at
    // locals that live for the whole call.
    unsafe {
        let mut control: ControlBuffer = std::mem::zeroed();
        let mut msg: libc::msghdr = std::mem::zeroed();
        msg.msg_iov = &mut iov;
        msg.msg_iovlen = 1;
        msg.msg_control = control.bytes.as_mut_ptr().cast();
        msg.msg_controllen = std::mem::size_of::<ControlBuffer>() as _;
        let n = libc::recvmsg(
            socket,
            &mut msg,
            libc::MSG_DONTWAIT | libc::MSG_CMSG_CLOEXEC,
        );
        if n < 0 {
            return Err(io::Error::last_os_error());
        }
        let cmsg = libc::CMSG_FIRSTHDR(&msg);
        if cmsg.is_null()
            || (*cmsg).cmsg_level != libc::SOL_SOCKET
            || (*cmsg).cmsg_type != libc::SCM_RIGHTS
        {
            return Err(io::Error::other("the program's namespace sent no listener"));
        }
        let mut fd: RawFd = -1;
        std::ptr::copy_nonoverlapping(
            libc::CMSG_DATA(cmsg),
            (&mut fd as *mut RawFd).cast::<u8>(),
            std::mem::size_of::<RawFd>(),
        );
        if fd < 0 {
            return Err(io::Error::other("the program's namespace sent no listener"));
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

/// Whether this process may make a user and network namespace here: `Err` with the kernel's
/// answer when it may not (probed once, in a child that enters one and exits).
pub fn available() -> Result<(), String> {
    static PROBE: OnceLock<Result<(), String>> = OnceLock::new();
    PROBE.get_or_init(probe).clone()
}

fn probe() -> Result<(), String> {
    let entry = Entry::new().map_err(|e| e.to_string())?;
    let part = entry.child;
    // SAFETY: fork in a program that may have threads: the child only makes system calls on
    // memory made before the fork (`part`), then `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(io::Error::last_os_error().to_string());
    }
    if pid == 0 {
        // SAFETY: in the child, before any exec; see `enter`.
        let code = match unsafe { enter(&part) } {
            Ok(()) => 0,
            Err(e) => e.raw_os_error().unwrap_or(1).clamp(1, 255),
        };
        // SAFETY: ends the child without running the parent's exit handlers.
        unsafe { libc::_exit(code) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked; `status` lives for the call.
    while unsafe { libc::waitpid(pid, &mut status, 0) } < 0 {
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            return Err(io::Error::last_os_error().to_string());
        }
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        -1
    };
    if code != 0 {
        let why = io::Error::from_raw_os_error(code);
        return Err(format!(
            "the kernel refused an unprivileged user and network namespace ({why})"
        ));
    }
    entry
        .receive()
        .map(drop)
        .map_err(|e| format!("the namespace's listener did not arrive: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::process::CommandExt;

    /// Runs `sh -c script` in a namespace of its own; its exit code and the listener it made.
    fn in_namespace(script: &str) -> (i32, OwnedFd) {
        let entry = Entry::new().unwrap();
        let part = entry.child;
        let mut cmd = std::process::Command::new("sh");
        cmd.args(["-c", script]);
        // SAFETY: `enter` makes only system calls on memory made before the fork.
        unsafe {
            cmd.pre_exec(move || enter(&part));
        }
        let mut child = cmd.spawn().unwrap();
        let listener = entry.receive().unwrap();
        let code = child.wait().unwrap().code().unwrap_or(-1);
        (code, listener)
    }

    #[test]
    fn a_program_reaches_only_the_listener_it_handed_over() {
        if let Err(why) = available() {
            eprintln!("no namespaces here ({why}): nothing to check");
            return;
        }
        // A listener outside: the program cannot reach it, however it tries.
        let outside = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = outside.local_addr().unwrap().port();
        let script = format!(
            "exec 3<>/dev/tcp/127.0.0.1/{port} 2>/dev/null && exit 10; \
             exec 3<>/dev/tcp/127.0.0.1/{PORT} || exit 11; echo hello >&3; exit 0"
        );
        // The program's connection waits in the listener's backlog, with what it wrote.
        let (code, listener) = in_namespace(&format!("bash -c '{script}'"));
        assert_eq!(code, 0, "10: reached the outside, 11: not the proxy's port");
        let listener = std::net::TcpListener::from(listener);
        listener.set_nonblocking(true).unwrap();
        let (mut conn, _) = listener.accept().expect("the program connected");
        conn.set_nonblocking(false).unwrap();
        let mut text = String::new();
        conn.read_to_string(&mut text).unwrap();
        assert_eq!(text, "hello\n");
        outside.set_nonblocking(true).unwrap();
        assert!(outside.accept().is_err(), "nothing reached the outside");
    }
}

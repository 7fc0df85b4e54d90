//! The socket filter (issue 47): where no view of its own hides the runner's socket files
//! (`view`), a seccomp filter makes `socket(AF_UNIX, …)` fail with `EACCES`, so an agent or a
//! check cannot connect to a per-user service listening on a socket file (a `systemd --user`
//! bus, a rootless docker or podman API, an IDE's daemon) and have it run a command outside
//! the sandbox. Landlock does not govern `connect()` to a path-named socket, and a path in
//! `connect`'s argument is a pointer a filter cannot read: so the filter refuses the socket
//! itself, whatever it would connect to. `socketpair` stays (node and libuv make their pipes
//! with it; a pair reaches nothing outside). `io_uring_setup` is refused too, since io_uring
//! makes sockets without the `socket` system call. A system call of another architecture
//! (a 32-bit program on x86-64, x32) is refused whole: its numbers would slip past the filter.
//!
//! The program is a constant, installed by the child between fork and exec (one `prctl`, no
//! allocation), after `PR_SET_NO_NEW_PRIVS`. Not here: deciding when it applies
//! (`sandbox::confine`), the view that makes it unneeded (`view`).

/// `struct sock_filter`: one classic BPF instruction.
#[repr(C)]
#[derive(Clone, Copy)]
struct Instruction {
    code: u16,
    jt: u8,
    jf: u8,
    k: u32,
}

/// `struct sock_fprog`.
#[repr(C)]
struct Program {
    len: u16,
    filter: *const Instruction,
}

const LD_W_ABS: u16 = 0x20; // BPF_LD (0) | BPF_W (0) | BPF_ABS
const JEQ_K: u16 = 0x05 | 0x10; // BPF_JMP | BPF_JEQ | BPF_K
const JGE_K: u16 = 0x05 | 0x30; // BPF_JMP | BPF_JGE | BPF_K
const RET_K: u16 = 0x06; // BPF_RET | BPF_K

/// `struct seccomp_data`: the system call's number, its architecture, then its arguments.
const NR: u32 = 0;
const ARCH: u32 = 4;
/// The low 32 bits of the first argument (little-endian): `socket`'s domain is an `int`, so
/// the kernel reads exactly these bits whatever the upper ones hold.
const ARG0_LOW: u32 = 16;

#[cfg(target_arch = "x86_64")]
const NATIVE_ARCH: u32 = 0xC000_003E; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const NATIVE_ARCH: u32 = 0xC000_00B7; // AUDIT_ARCH_AARCH64
/// x32 system calls have this bit set in their number on x86-64.
const X32_BIT: u32 = 0x4000_0000;

const ALLOW: u32 = 0x7fff_0000; // SECCOMP_RET_ALLOW
const REFUSE: u32 = 0x0005_0000 | libc::EACCES as u32; // SECCOMP_RET_ERRNO | EACCES

const fn op(code: u16, k: u32, jt: u8, jf: u8) -> Instruction {
    Instruction { code, jt, jf, k }
}

/// The filter: foreign architectures and x32 refused, `socket(AF_UNIX)` and `io_uring_setup`
/// refused with `EACCES`, everything else allowed.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
const FILTER: [Instruction; 10] = [
    op(LD_W_ABS, ARCH, 0, 0),
    op(JEQ_K, NATIVE_ARCH, 1, 0),
    op(RET_K, REFUSE, 0, 0),
    op(LD_W_ABS, NR, 0, 0),
    op(JGE_K, X32_BIT, 4, 0),
    op(JEQ_K, libc::SYS_io_uring_setup as u32, 3, 0),
    op(JEQ_K, libc::SYS_socket as u32, 0, 3),
    op(LD_W_ABS, ARG0_LOW, 0, 0),
    op(JEQ_K, libc::AF_UNIX as u32, 0, 1),
    op(RET_K, REFUSE, 0, 0),
];
/// What the filter ends with when nothing above refused.
const LAST: Instruction = op(RET_K, ALLOW, 0, 0);

/// The whole program, in memory that lives as long as the binary.
#[cfg(any(target_arch = "x86_64", target_arch = "aarch64"))]
static PROGRAM: [Instruction; 11] = {
    let mut all = [LAST; 11];
    let mut i = 0;
    while i < FILTER.len() {
        all[i] = FILTER[i];
        i += 1;
    }
    all
};

/// Whether this build can filter sockets (x86-64 and aarch64 Linux).
pub fn supported() -> bool {
    cfg!(all(
        target_os = "linux",
        any(target_arch = "x86_64", target_arch = "aarch64")
    ))
}

/// Installs the filter on the calling process: only `prctl`s, for the child between fork and
/// exec (it sets `PR_SET_NO_NEW_PRIVS`, which a filter needs without `CAP_SYS_ADMIN`).
///
/// # Safety
/// Only in a child between fork and exec, or in a process that may lose unix sockets for good.
#[cfg(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
))]
pub unsafe fn install() -> std::io::Result<()> {
    if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
        return Err(std::io::Error::last_os_error());
    }
    let program = Program {
        len: PROGRAM.len() as u16,
        filter: PROGRAM.as_ptr(),
    };
    let rc = libc::prctl(
        libc::PR_SET_SECCOMP,
        libc::SECCOMP_MODE_FILTER as libc::c_ulong,
        &program as *const Program,
        0,
        0,
    );
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Elsewhere there is no filter to install.
///
/// # Safety
/// Nothing to uphold; unsafe to match the Linux signature.
#[cfg(not(all(
    target_os = "linux",
    any(target_arch = "x86_64", target_arch = "aarch64")
)))]
pub unsafe fn install() -> std::io::Result<()> {
    Err(std::io::Error::new(
        std::io::ErrorKind::Unsupported,
        "no socket filter on this platform",
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `f` in a forked child under the filter; the child's exit code.
    fn filtered(f: fn() -> i32) -> i32 {
        // SAFETY: the child makes only system calls before `_exit` (the test's closures do not
        // allocate), and the parent waits for it.
        unsafe {
            let pid = libc::fork();
            assert!(pid >= 0);
            if pid == 0 {
                let code = match install() {
                    Ok(()) => f(),
                    Err(_) => 99,
                };
                libc::_exit(code);
            }
            let mut status = 0;
            libc::waitpid(pid, &mut status, 0);
            libc::WEXITSTATUS(status)
        }
    }

    fn errno() -> i32 {
        std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
    }

    #[test]
    fn unix_sockets_and_io_uring_are_refused_and_the_rest_allowed() {
        if !supported() {
            return;
        }
        // A unix socket: refused, with EACCES, whatever the type and the upper bits.
        let unix = filtered(|| unsafe {
            let fd = libc::socket(libc::AF_UNIX, libc::SOCK_STREAM, 0);
            let wide = libc::syscall(libc::SYS_socket, 0x1_0000_0001i64, libc::SOCK_DGRAM, 0);
            match (fd, wide) {
                (-1, -1) if errno() == libc::EACCES => 0,
                _ => 1,
            }
        });
        assert_eq!(unix, 0, "a unix socket was made under the filter");
        // A pair, an inet socket, a file: allowed.
        let others = filtered(|| unsafe {
            let mut pair = [0; 2];
            let paired = libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, pair.as_mut_ptr());
            let inet = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
            let file = libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY);
            i32::from(paired != 0 || inet < 0 || file < 0)
        });
        assert_eq!(others, 0, "the filter refused what it must allow");
        let ring = filtered(|| unsafe {
            let mut params = [0u8; 120];
            let rc = libc::syscall(libc::SYS_io_uring_setup, 4, params.as_mut_ptr());
            i32::from(!(rc == -1 && errno() == libc::EACCES))
        });
        assert_eq!(ring, 0, "io_uring was set up under the filter");
    }
}

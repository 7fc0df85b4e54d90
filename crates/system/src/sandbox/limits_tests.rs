//! The limits' rules: where each is set, the rlimits a child sets, what a run reached, and
//! `RLIMIT_NPROC` in a fresh user namespace.

use super::*;

fn limits() -> Limits {
    let run = RunLimits {
        memory_mb: 1024,
        processes: 256,
        file_mb: 64,
        tmp_mb: 0,
    };
    let own = AgentLimits {
        processes: Some(100),
        tmp_mb: Some(128),
        ..AgentLimits::default()
    };
    Limits::of(&run, Some((&own, "agents.worker")))
}

#[test]
fn each_limit_is_named_where_it_is_set() {
    let l = limits();
    let settings: Vec<String> = [&l.memory, &l.processes, &l.file, &l.tmp]
        .iter()
        .map(|l| l.as_ref().map_or("none".to_string(), Limit::setting))
        .collect();
    assert_eq!(
        settings,
        [
            "limits.run.memory_mb = 1024 MiB",
            "agents.worker.limits.processes = 100",
            "limits.run.file_mb = 64 MiB",
            "agents.worker.limits.tmp_mb = 128 MiB",
        ]
    );
    let none = Limits::of(
        &RunLimits {
            memory_mb: 0,
            processes: 0,
            file_mb: 0,
            tmp_mb: 0,
        },
        None,
    );
    assert_eq!(none, Limits::default());
}

#[test]
fn rlimits_leave_memory_and_processes_to_a_cgroup() {
    let l = limits();
    let fsize = (libc::RLIMIT_FSIZE as i32, 64 << 20);
    assert_eq!(l.rlimits(true, 500, 2).values(), [fsize]);
    assert_eq!(
        l.rlimits(false, 500, 2).values(),
        [
            fsize,
            (libc::RLIMIT_DATA as i32, 1024 << 20),
            (libc::RLIMIT_NPROC as i32, 602),
        ]
    );
}

#[test]
fn what_a_run_reached_is_read_from_its_end() {
    let l = limits();
    #[rustfmt::skip]
    type Case<'a> = (Option<i32>, &'a str, bool, Option<(Resource, Held)>);
    let cases: &[Case] = &[
        (
            Some(libc::SIGXFSZ),
            "",
            false,
            Some((Resource::File, Held::Rlimit)),
        ),
        (
            None,
            "dd: error writing 'big': File too large",
            false,
            Some((Resource::File, Held::Rlimit)),
        ),
        (
            None,
            "head: write error: No space left on device",
            true,
            Some((Resource::Temp, Held::Tmpfs)),
        ),
        (
            None,
            "head: write error: No space left on device",
            false,
            None,
        ),
        (
            None,
            "bash: fork: retry: Resource temporarily unavailable",
            false,
            Some((Resource::Processes, Held::Rlimit)),
        ),
        (
            None,
            "Out of memory!",
            false,
            Some((Resource::Memory, Held::Rlimit)),
        ),
        (
            None,
            "memory allocation of 3221225472 bytes failed",
            false,
            Some((Resource::Memory, Held::Rlimit)),
        ),
        (
            None,
            "FATAL ERROR: Reached heap limit Allocation failed - JavaScript heap out of memory",
            false,
            Some((Resource::Memory, Held::Rlimit)),
        ),
        (None, "assertion failed: left == right", false, None),
        (Some(libc::SIGKILL), "", false, None),
    ];
    for (signal, output, tmpfs, expected) in cases {
        let got = read_end(&l, *signal, output, *tmpfs).map(|h| (h.limit.resource, h.held));
        assert_eq!(got, *expected, "{output:?}");
    }
    // A limit that is not set is never named.
    let no_file = Limits {
        file: None,
        ..limits()
    };
    assert_eq!(read_end(&no_file, Some(libc::SIGXFSZ), "", false), None);
}

#[test]
fn a_hit_names_the_limit_its_setting_and_the_fix() {
    let l = limits();
    let hit = from_events(
        &l,
        Events {
            oom_kills: 1,
            fork_refusals: 3,
        },
    )
    .unwrap();
    assert_eq!(
        hit.failure("the agent"),
        "the agent was stopped at its memory limit (limits.run.memory_mb = 1024 MiB, for the run as a whole)\n  fix: raise limits.run.memory_mb (0: no limit), or make the task need less"
    );
    let forks = from_events(
        &l,
        Events {
            oom_kills: 0,
            fork_refusals: 3,
        },
    )
    .unwrap();
    assert!(forks
        .describe()
        .contains("agents.worker.limits.processes = 100"));
    assert_eq!(from_events(&l, Events::default()), None);
}

/// `RLIMIT_NPROC` in a fresh user namespace counts only that namespace's processes
/// (Linux 5.14 and newer: per user namespace, through ucounts): a limit of 3 set after
/// `unshare(CLONE_NEWUSER)` lets the process start two children whatever its user runs
/// elsewhere, and refuses the third. Run as `nobody` when the tests run as root, whom the
/// limit does not hold.
#[test]
fn nproc_counts_only_a_fresh_user_namespace() {
    if crate::sandbox::netns::available().is_err() {
        eprintln!("no user namespaces here: nothing to check");
        return;
    }
    use crate::sandbox::netns::ChildPart;
    // SAFETY: geteuid has no preconditions.
    let part = match unsafe { libc::geteuid() } {
        0 => ChildPart::user(65534, 65534),
        _ => ChildPart::current_user(),
    };
    // SAFETY: the child makes only system calls before `_exit`.
    let code = unsafe {
        let pid = libc::fork();
        assert!(pid >= 0);
        if pid == 0 {
            let code = (|| {
                if libc::geteuid() == 0 && (libc::setgid(65534) != 0 || libc::setuid(65534) != 0) {
                    return 89;
                }
                if crate::sandbox::netns::enter_user(&part, 0).is_err() {
                    return 90;
                }
                let three = Rlimits {
                    set: [(libc::RLIMIT_NPROC as i32, 3), (0, 0), (0, 0)],
                    len: 1,
                };
                if three.apply().is_err() {
                    return 91;
                }
                let mut children = [0; 6];
                let mut started = 0;
                for slot in children.iter_mut() {
                    let child = libc::fork();
                    if child == 0 {
                        libc::pause();
                        libc::_exit(0);
                    }
                    if child > 0 {
                        *slot = child;
                        started += 1;
                    }
                }
                for child in children.into_iter().filter(|&c| c > 0) {
                    libc::kill(child, libc::SIGKILL);
                }
                started
            })();
            libc::_exit(code);
        }
        let mut status = 0;
        libc::waitpid(pid, &mut status, 0);
        if libc::WIFEXITED(status) {
            libc::WEXITSTATUS(status)
        } else {
            -libc::WTERMSIG(status)
        }
    };
    assert_eq!(code, 2, "children started under RLIMIT_NPROC = 3");
}

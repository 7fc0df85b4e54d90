//! What one agent run or verification command may use of the machine (issue 47): memory,
//! processes, the largest file and the temp folder, from `limits.run` and the agent's own
//! `limits`. Enforced by a cgroup of its own where the runner's cgroup is delegated to it
//! (`cgroup`: memory and processes for the run as a whole), otherwise by rlimits set in the
//! child before it starts ([`Rlimits`], per process: `RLIMIT_DATA`, `RLIMIT_NPROC`); the largest
//! file is always `RLIMIT_FSIZE`, and the temp folder a tmpfs of that size in the run's view
//! (`view`). `RLIMIT_AS` is not used: V8 and WebAssembly reserve tens of GiB of address space
//! they never touch, so an address-space cap stops node at start; `RLIMIT_DATA` counts what is
//! writable and private, which is what a process fills.
//!
//! After a run, what it hit ([`Hit`]) comes from the cgroup's event counters, or else from how
//! it ended and what it printed ([`read_end`], pure): the run then fails naming the limit and
//! its setting. Not here: making the cgroup (`cgroup`), applying anything in the child
//! (`process`), what a failure does to the task (`engine::outcome`).

use std::io;

use crate::config::{AgentLimits, RunLimits};

/// A kind of limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Resource {
    Memory,
    Processes,
    File,
    Temp,
}

impl Resource {
    pub fn word(self) -> &'static str {
        match self {
            Resource::Memory => "memory",
            Resource::Processes => "process",
            Resource::File => "file size",
            Resource::Temp => "temp folder",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Resource::Memory => "memory_mb",
            Resource::Processes => "processes",
            Resource::File => "file_mb",
            Resource::Temp => "tmp_mb",
        }
    }

    fn unit(self) -> &'static str {
        match self {
            Resource::Processes => "",
            Resource::Memory | Resource::File | Resource::Temp => " MiB",
        }
    }
}

/// One limit in force and where it is set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limit {
    pub resource: Resource,
    /// MiB, or processes.
    pub amount: u64,
    /// The configuration key that sets it, e.g. `limits.run.memory_mb`.
    pub key: String,
}

impl Limit {
    /// `limits.run.memory_mb = 1024 MiB`.
    pub fn setting(&self) -> String {
        format!("{} = {}{}", self.key, self.amount, self.resource.unit())
    }

    fn bytes(&self) -> u64 {
        self.amount.saturating_mul(1 << 20)
    }
}

/// The limits of one run; `None`: no limit of that kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub memory: Option<Limit>,
    pub processes: Option<Limit>,
    pub file: Option<Limit>,
    pub tmp: Option<Limit>,
}

impl Limits {
    /// `limits.run`, under an agent's own `limits` (`agent`: its limits and its configuration
    /// key, `agents.worker`). 0 anywhere: no limit.
    pub fn of(run: &RunLimits, agent: Option<(&AgentLimits, &str)>) -> Limits {
        let pick = |resource: Resource, run: u32, own: fn(&AgentLimits) -> Option<u32>| {
            let (amount, key) = match agent.and_then(|(limits, at)| Some((own(limits)?, at))) {
                Some((amount, at)) => (amount, format!("{at}.limits.{}", resource.key())),
                None => (run, format!("limits.run.{}", resource.key())),
            };
            (amount > 0).then(|| Limit {
                resource,
                amount: u64::from(amount),
                key,
            })
        };
        Limits {
            memory: pick(Resource::Memory, run.memory_mb, |l| l.memory_mb),
            processes: pick(Resource::Processes, run.processes, |l| l.processes),
            file: pick(Resource::File, run.file_mb, |l| l.file_mb),
            tmp: pick(Resource::Temp, run.tmp_mb, |l| l.tmp_mb),
        }
    }

    fn get(&self, resource: Resource) -> Option<&Limit> {
        match resource {
            Resource::Memory => self.memory.as_ref(),
            Resource::Processes => self.processes.as_ref(),
            Resource::File => self.file.as_ref(),
            Resource::Temp => self.tmp.as_ref(),
        }
    }

    /// The temp folder's size in bytes (for its tmpfs), if limited.
    pub fn tmp_bytes(&self) -> Option<u64> {
        self.tmp.as_ref().map(Limit::bytes)
    }

    /// The rlimits a child sets: the largest file always; memory and processes only when no
    /// cgroup holds them. `extra`: processes the sandbox itself adds to the run (the view's
    /// two), `base`: those of the user already counted where the run shares the runner's
    /// user namespace (`RLIMIT_NPROC` counts every process of the user there).
    pub fn rlimits(&self, cgroup: bool, base: u64, extra: u64) -> Rlimits {
        let mut set = Rlimits::default();
        if let Some(file) = &self.file {
            set.push(libc::RLIMIT_FSIZE as i32, file.bytes());
        }
        if !cgroup {
            if let Some(memory) = &self.memory {
                set.push(libc::RLIMIT_DATA as i32, memory.bytes());
            }
            if let Some(processes) = &self.processes {
                set.push(
                    libc::RLIMIT_NPROC as i32,
                    processes.amount.saturating_add(base).saturating_add(extra),
                );
            }
        }
        set
    }
}

/// Resource limits a child sets on itself between fork and exec (no allocation).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Rlimits {
    set: [(i32, u64); 3],
    len: usize,
}

impl Rlimits {
    fn push(&mut self, resource: i32, value: u64) {
        if self.len < self.set.len() {
            self.set[self.len] = (resource, value);
            self.len += 1;
        }
    }

    /// What is set: `(resource, value)`.
    pub fn values(&self) -> &[(i32, u64)] {
        &self.set[..self.len]
    }

    /// Lowers the soft and hard limits of the calling process (never above its hard limit:
    /// raising it needs a privilege the runner does not have).
    ///
    /// # Safety
    /// Only system calls; meant for a child between fork and exec.
    pub unsafe fn apply(&self) -> io::Result<()> {
        for &(resource, value) in self.values() {
            let mut now = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            if libc::getrlimit(resource as _, &mut now) != 0 {
                return Err(io::Error::last_os_error());
            }
            #[allow(clippy::unnecessary_cast)] // rlim_t is not u64 on every target
            let value = value.min(now.rlim_max as u64) as libc::rlim_t;
            let wanted = libc::rlimit {
                rlim_cur: value,
                rlim_max: value,
            };
            if libc::setrlimit(resource as _, &wanted) != 0 {
                return Err(io::Error::last_os_error());
            }
        }
        Ok(())
    }
}

/// How a limit was held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Held {
    /// By the run's cgroup: the run as a whole.
    Cgroup,
    /// By an rlimit: each process.
    Rlimit,
    /// By the size of the temp folder's tmpfs.
    Tmpfs,
}

/// A limit a run reached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hit {
    pub limit: Limit,
    pub held: Held,
}

impl Hit {
    /// `its memory limit (limits.run.memory_mb = 1024 MiB, for the run as a whole)`.
    pub fn describe(&self) -> String {
        let scope = match (self.limit.resource, self.held) {
            (Resource::File, _) => "for any one file",
            (Resource::Temp, Held::Tmpfs) => "its tmpfs",
            (Resource::Temp, _) => "its folder",
            (_, Held::Cgroup) => "for the run as a whole",
            (_, Held::Rlimit | Held::Tmpfs) => "for each process",
        };
        format!(
            "its {} limit ({}, {scope})",
            self.limit.resource.word(),
            self.limit.setting()
        )
    }

    /// What a run that stopped here fails with: who stopped, the limit and the fix.
    pub fn failure(&self, who: &str) -> String {
        format!(
            "{who} was stopped at {}\n  fix: raise {} (0: no limit), or make the task need less",
            self.describe(),
            self.limit.key
        )
    }
}

/// What a run's cgroup counted (`memory.events`, `pids.events`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Events {
    /// Processes the kernel killed at `memory.max`.
    pub oom_kills: u64,
    /// Forks refused at `pids.max`.
    pub fork_refusals: u64,
}

/// The limit a run's cgroup says it reached, if any.
pub fn from_events(limits: &Limits, events: Events) -> Option<Hit> {
    let hit = |resource| {
        limits.get(resource).map(|limit| Hit {
            limit: limit.clone(),
            held: Held::Cgroup,
        })
    };
    if events.oom_kills > 0 {
        return hit(Resource::Memory);
    }
    if events.fork_refusals > 0 {
        return hit(Resource::Processes);
    }
    None
}

/// What programs print when a limit refused them, by resource, lower case.
const SAID: &[(Resource, &[&str])] = &[
    (
        Resource::File,
        &["file size limit exceeded", "file too large", "efbig"],
    ),
    (Resource::Temp, &["no space left on device", "enospc"]),
    (
        Resource::Processes,
        &[
            "resource temporarily unavailable",
            "fork: retry",
            "cannot fork",
            "can't fork",
            "fork failed",
            "cannot create thread",
            "can't create thread",
            "failed to create thread",
            "pthread_create",
            "eagain",
        ],
    ),
    (
        Resource::Memory,
        &[
            "out of memory",
            "cannot allocate memory",
            "memory allocation of",
            "memoryerror",
            "bad_alloc",
            "failed to allocate",
            "allocation failed",
            "enomem",
            "xmalloc",
        ],
    ),
];

/// The limit a failed run most likely reached, from how it ended (`signal`: the signal that
/// killed it) and the end of its output, among the limits it had; `tmpfs`: its temp folder is
/// a tmpfs of the limit's size (else a full disk says nothing about the limit). Pure.
pub fn read_end(limits: &Limits, signal: Option<i32>, output: &str, tmpfs: bool) -> Option<Hit> {
    let held = |resource: Resource| match resource {
        Resource::Temp => Held::Tmpfs,
        Resource::File | Resource::Memory | Resource::Processes => Held::Rlimit,
    };
    if signal == Some(libc::SIGXFSZ) {
        if let Some(limit) = &limits.file {
            return Some(Hit {
                limit: limit.clone(),
                held: Held::Rlimit,
            });
        }
    }
    let text = output.to_lowercase();
    for (resource, phrases) in SAID {
        if *resource == Resource::Temp && !tmpfs {
            continue;
        }
        let Some(limit) = limits.get(*resource) else {
            continue;
        };
        if phrases.iter().any(|p| text.contains(p)) {
            return Some(Hit {
                limit: limit.clone(),
                held: held(*resource),
            });
        }
    }
    None
}

/// The limits of each run and what holds them here, for `doctor` and the job summary.
pub fn protection(run: &RunLimits) -> super::Protection {
    let limits = Limits::of(run, None);
    let set: Vec<String> = [&limits.memory, &limits.processes, &limits.file, &limits.tmp]
        .into_iter()
        .flatten()
        .map(Limit::setting)
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

/// How many processes and threads the user `uid` runs now (`RLIMIT_NPROC` counts them all
/// where a run shares the runner's user namespace), from `/proc`.
pub fn user_tasks(uid: u32) -> u64 {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return 0;
    };
    let mut count = 0u64;
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_str().and_then(|n| n.parse::<u32>().ok()).is_none() {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(entry.path().join("status")) else {
            continue;
        };
        let field = |name: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(name))
                .and_then(|rest| rest.split_whitespace().next())
                .and_then(|v| v.parse::<u64>().ok())
        };
        if field("Uid:") == Some(u64::from(uid)) {
            count += field("Threads:").unwrap_or(1);
        }
    }
    count
}

#[cfg(test)]
mod tests {
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
                    if libc::geteuid() == 0
                        && (libc::setgid(65534) != 0 || libc::setuid(65534) != 0)
                    {
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
}

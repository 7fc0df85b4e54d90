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
#[path = "limits_tests.rs"]
mod tests;

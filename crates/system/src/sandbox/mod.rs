//! What keeps an agent, which runs arbitrary code as the runner's user, away from the runner's
//! credentials (DESIGN §10).
//!
//! - [`protect_runner`]: the runner makes itself non-dumpable before any agent starts, so
//!   `/proc/<runner>/environ` and `/proc/<runner>/mem` are closed to processes of the same user.
//! - [`before_agent`]: the credentials git would use from the runner's repository, includes
//!   followed (`credentials`), are found before any agent or check starts: the ones this job
//!   left there (actions/checkout's token) are taken away until the command ends (`checkout`;
//!   the runner pushes with its own token), the person's are named, never touched.
//! - `groups`: each agent's process group is recorded while it runs, so the next tick kills what
//!   a killed tick left running before it claims that work again.
//! - `netns`: each agent and check in a network namespace of its own, loopback only, whose one
//!   listener is opentiger's proxy (`egress`); [`network_isolation`] says what this machine
//!   allows (the namespace, else Landlock's TCP rules, else nothing).
//! - `view`: each agent and check in a mount and PID namespace holding only what its run needs
//!   (issue 47); where the kernel refuses one, `seccomp` refuses unix sockets instead
//!   ([`file_walls`] says which); `limits` and `cgroup`: what one run may use of the machine;
//!   `confine`: all of it for one run, as the child applies it.
//! - [`in_force`]: which of these hold on this machine, for `doctor` and the job summary.
//!
//! Not here: the `-c` overrides and minimal environment of every runner git command
//! (`git::HARDENING`), the token held out of the environment (`crate::credentials`), the agent's
//! process group and environment (`process`, `executor`).

pub mod cgroup;
pub mod checkout;
pub mod confine;
pub mod credentials;
pub mod groups;
pub mod home;
pub mod landlock;
pub mod limits;
pub mod netns;
pub mod seccomp;
pub mod view;

pub use confine::{file_walls, Confinement, FileWalls};

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::{AgentHome, FilesystemSandbox, SandboxConfig};
use crate::git::{Git, GitError};

static NON_DUMPABLE: AtomicBool = AtomicBool::new(false);

/// What an unconfined agent can do to the runner, said wherever it holds (`{why}`: why).
pub const UNCONFINED_RISK: &str = "{why}: agents may write anywhere the runner's user may — the runner's repository and its .git (a config or attributes file there runs a program of theirs in the runner's next git command, with its token), the runner's home and the person's files; run untrusted agents only with sandbox.filesystem: landlock on Linux 5.13 or newer";

/// Makes this process non-dumpable (Linux): its `/proc` files become readable by root only.
/// Children get their own setting when they `exec`, so agents are unaffected.
pub fn protect_runner() {
    #[cfg(target_os = "linux")]
    {
        // SAFETY: prctl with PR_SET_DUMPABLE takes plain integers and touches no memory of ours.
        let rc = unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
        NON_DUMPABLE.store(rc == 0, Ordering::Relaxed);
    }
}

/// One protection and whether it holds here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Protection {
    pub name: &'static str,
    pub in_force: bool,
    pub detail: String,
    /// What makes it hold, for a person reading `doctor` when it does not.
    pub fix: &'static str,
}

/// How to give agents a network namespace where the kernel restricts unprivileged ones.
pub(crate) const USERNS_FIX: &str = "allow unprivileged user namespaces (Ubuntu 24.04: `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`, which the GitHub Action does before it drops sudo), or run on Linux 6.7 or newer for Landlock's TCP rules (docs/security.md: The agent's only door)";

/// How agents' and checks' network is confined here (issue 37).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NetIsolation {
    /// A network namespace of its own: loopback only, the proxy its only door.
    Namespace,
    /// The kernel refused the namespace (`why`): Landlock's TCP rules let it connect only to
    /// the proxy's port on the host's loopback; UDP, DNS and raw sockets stay open.
    Landlock { abi: u32, why: String },
    /// Nothing confines it (`why`); the proxy still holds the model keys for what uses it.
    Open { why: String },
}

impl NetIsolation {
    /// What it leaves open, in one line for the tick's output and the job summary.
    pub fn describe(&self) -> String {
        match self {
            NetIsolation::Namespace => "agents and checks run in a network namespace of their own (loopback only): opentiger's proxy is their only door, to their model API and `sandbox.network.allow`".to_string(),
            NetIsolation::Landlock { abi, why } => format!(
                "{why}; agents and checks may connect over TCP only to opentiger's proxy (Landlock ABI {abi}), but UDP, DNS and raw sockets are not blocked"
            ),
            NetIsolation::Open { why } => format!(
                "{why}: agents and checks reach the network directly; only what they send through opentiger's proxy (their model API, with the key it holds) is metered and allowed by list"
            ),
        }
    }
}

/// What confines the network here, with these settings: `Err` when the settings require more
/// than this machine allows (the run must not start), with the fix.
pub fn network_isolation(sandbox: &SandboxConfig) -> Result<NetIsolation, String> {
    use crate::config::NetworkIsolation as Want;
    let want = sandbox.network.isolation;
    match want {
        Want::None => {
            return Ok(NetIsolation::Open {
                why: "sandbox.network.isolation is none".to_string(),
            })
        }
        Want::Landlock => {
            return match landlock::abi_version() {
                Some(abi) if abi >= 4 => Ok(NetIsolation::Landlock {
                    abi,
                    why: "sandbox.network.isolation is landlock".to_string(),
                }),
                _ => Err("sandbox.network.isolation is landlock, but this kernel's Landlock has no TCP rules (ABI 4, Linux 6.7)\n  fix: set sandbox.network.isolation: auto".to_string()),
            };
        }
        Want::Auto | Want::Namespace => {}
    }
    let refused = match netns::available() {
        Ok(()) => return Ok(NetIsolation::Namespace),
        Err(why) => why,
    };
    if want == Want::Namespace {
        return Err(format!(
            "sandbox.network.isolation is namespace, but {refused}\n  fix: {USERNS_FIX}, or set sandbox.network.isolation: auto"
        ));
    }
    match landlock::abi_version() {
        Some(abi) if abi >= 4 => Ok(NetIsolation::Landlock { abi, why: refused }),
        abi => {
            let why = format!(
                "{refused}, and {}",
                match abi {
                    Some(abi) => format!("this kernel's Landlock (ABI {abi}) has no TCP rules"),
                    None => "this kernel has no Landlock".to_string(),
                }
            );
            if sandbox.require {
                return Err(format!(
                    "sandbox.require is true, but nothing can confine the agents' network here: {why}\n  fix: {USERNS_FIX}, or set sandbox.require: false"
                ));
            }
            Ok(NetIsolation::Open { why })
        }
    }
}

/// The protections of this module and of the runner's git, as they hold in this process with
/// these `sandbox` settings.
pub fn in_force(sandbox: &SandboxConfig) -> Vec<Protection> {
    let filesystem = sandbox.filesystem;
    let dumpable = NON_DUMPABLE.load(Ordering::Relaxed);
    let landlock = landlock::abi_version();
    let confined = filesystem == FilesystemSandbox::Landlock && landlock.is_some();
    let network_fix = match sandbox.network.isolation {
        crate::config::NetworkIsolation::None => {
            "set `sandbox.network.isolation: auto` (the default)"
        }
        _ => USERNS_FIX,
    };
    let network = match network_isolation(sandbox) {
        Ok(isolation) => Protection {
            name: "network",
            in_force: !matches!(isolation, NetIsolation::Open { .. }),
            detail: isolation.describe(),
            fix: network_fix,
        },
        Err(why) => Protection {
            name: "network",
            in_force: false,
            detail: why.lines().next().unwrap_or_default().to_string(),
            fix: network_fix,
        },
    };
    let mut all = vec![network];
    all.extend(confine::protections(sandbox));
    all.extend([
        Protection {
            name: "landlock",
            in_force: confined,
            detail: match (filesystem, landlock) {
                (FilesystemSandbox::Landlock, Some(abi)) => format!(
                    "agents write only their run's folder (its workspace, scratch folder and home), never the runner's repository or its .git, and verification commands only the workspace, their scratch folder and home (Landlock ABI {abi}{})",
                    if abi >= 6 {
                        "; they cannot signal processes outside their domain"
                    } else {
                        "; below ABI 6 they can still signal the runner's processes"
                    }
                ),
                (FilesystemSandbox::Landlock, None) => UNCONFINED_RISK.replace("{why}", "this kernel has no Landlock"),
                (FilesystemSandbox::None, _) => UNCONFINED_RISK.replace("{why}", "sandbox.filesystem is none"),
            },
            fix: "run ticks on Linux 5.13 or newer with `sandbox.filesystem: landlock` (docs/security.md)",
        },
        Protection {
            name: "runner non-dumpable",
            in_force: dumpable,
            detail: if dumpable {
                "agents cannot read the runner's /proc environ or memory".to_string()
            } else {
                "not on this platform: an agent of the same user may read the runner's /proc files"
                    .to_string()
            },
            fix: "run ticks on Linux, where the runner makes itself non-dumpable",
        },
        Protection {
            name: "credentials out of the environment",
            in_force: true,
            detail: "forge credentials are read once, then scrubbed from the environment; git \
                     gets them only to push or fetch over https, in its own environment for the \
                     askpass (never in a file or an argument)"
                .to_string(),
            fix: "",
        },
        Protection {
            name: "private agent home",
            in_force: sandbox.agent_home == AgentHome::Private,
            detail: match sandbox.agent_home {
                AgentHome::Private => "each run's agent and checks get a HOME of their own (0700, removed after the run) holding only the agent's home_files".to_string(),
                AgentHome::Runner => "sandbox.agent_home is runner: agents may write the runner's HOME, where programs and settings they leave (~/.local/bin, ~/.ssh/config, ~/.bashrc) are picked up later by the runner's user".to_string(),
            },
            fix: "set `sandbox.agent_home: private` (the default)",
        },
        Protection {
            name: "agent processes end with their run",
            in_force: crate::reaper::in_force(),
            detail: if crate::reaper::in_force() {
                "the runner is a child subreaper: every process an agent or a check starts, in whatever session or group, is killed when its run ends (a runner killed with SIGKILL leaves them to the next tick, which finds them by their run)".to_string()
            } else {
                "this process is not a child subreaper (Linux only): processes an agent moves out of its group may outlive its run".to_string()
            },
            fix: "run ticks on Linux, where the runner is a child subreaper",
        },
        runner_git(),
        Protection {
            name: "git of the runner",
            in_force: true,
            detail: "agents work in a repository of their own; the runner reads their files as \
                     data (no filter, attribute, hook or index of theirs) and its own git ignores \
                     hooks, fsmonitor, pagers, editors, credential helpers and ext:: remotes"
                .to_string(),
            fix: "",
        },
    ]);
    all
}

/// [`in_force`] and the limits of one run (`limits.run`): everything `doctor` and the job
/// summary list.
pub fn protections(config: &crate::config::Config) -> Vec<Protection> {
    let mut all = in_force(&config.sandbox);
    all.push(confine::limits_protection(&config.limits.run));
    all
}

/// Where the runner's own git comes from (`programs`).
fn runner_git() -> Protection {
    let name = "runner's git";
    match crate::programs::get() {
        Ok(p) => Protection {
            name,
            in_force: true,
            detail: match p.git_source {
                crate::programs::GitSource::Path => format!(
                    "{} (from PATH, skipping folders an agent could write{})",
                    p.git.display(),
                    if p.skipped.is_empty() {
                        String::new()
                    } else {
                        let mut skipped: Vec<&str> = Vec::new();
                        for (dir, _) in &p.skipped {
                            if !skipped.contains(&dir.as_str()) {
                                skipped.push(dir);
                            }
                        }
                        format!(": {}", skipped.join(", "))
                    }
                ),
                crate::programs::GitSource::Variable => format!(
                    "{} (named by {}; keep it where no agent can write)",
                    p.git.display(),
                    crate::programs::GIT_VAR
                ),
            },
            fix: "",
        },
        Err(message) => Protection {
            name,
            in_force: false,
            detail: message.lines().next().unwrap_or_default().to_string(),
            fix: "install git in a system folder (/usr/bin), or name one with OPENTIGER_GIT",
        },
    }
}

/// The protections as a short Markdown list, for the job summary.
pub fn summary_markdown(config: &crate::config::Config) -> String {
    let mut out = String::from("\n### Agent isolation on this runner\n\n");
    for p in protections(config) {
        let mark = if p.in_force {
            "in force"
        } else {
            "**not in force**"
        };
        out.push_str(&format!("- {}: {mark} — {}\n", p.name, p.detail));
    }
    out
}

/// The first path a failed program's output says it could not write (`Permission denied`,
/// `Read-only file system`, `Operation not permitted`; in a `view` of its own, also a missing
/// folder) that lies outside `writable`: a write the sandbox refused, most likely. Pure, for
/// the check's failure message.
pub fn denied_write(output: &str, writable: &[std::path::PathBuf], view: bool) -> Option<String> {
    const REFUSALS: [&str; 4] = [
        "permission denied",
        "read-only file system",
        "operation not permitted",
        "eacces",
    ];
    // In a view of its own, a path outside it is simply not there.
    const MISSING: [&str; 2] = ["no such file or directory", "nonexistent"];
    for line in output.lines() {
        let lower = line.to_ascii_lowercase();
        let missing = view && MISSING.iter().any(|r| lower.contains(r));
        if !REFUSALS.iter().any(|r| lower.contains(r)) && !missing {
            continue;
        }
        let paths = line
            .split(|c: char| c.is_whitespace() || matches!(c, '\'' | '"' | '`' | ',' | '(' | ')'))
            .map(|w| w.trim_end_matches([':', '.', ';']))
            .filter(|w| w.starts_with('/') && w.len() > 1);
        for path in paths {
            if !writable.iter().any(|w| Path::new(path).starts_with(w)) {
                return Some(path.to_string());
            }
        }
    }
    None
}

/// Before any agent or check starts (idempotent, so before each): the credentials this job
/// left in the runner's repository are taken away until the command ends, since an agent may
/// read that repository and what its configuration includes; the person's own are left where
/// they are, named once in the log (`doctor` names them with the fix).
pub fn before_agent(repo: &Path) -> Result<(), GitError> {
    let places = credentials::Places::of(repo, &|name| std::env::var(name).ok());
    let found = credentials::find(&Git::new(repo), &places)?;
    let taken = checkout::take(&found, &places)?;
    if !taken.is_empty() {
        tracing::info!(
            "taken away while agents run, put back when this command ends: {}",
            taken.join(", ")
        );
    }
    static SAID: std::sync::Once = std::sync::Once::new();
    let persons: Vec<String> = found
        .iter()
        .filter(|f| f.owner == credentials::Owner::Person)
        .map(|f| f.describe(&places))
        .collect();
    if !persons.is_empty() {
        SAID.call_once(|| {
            tracing::warn!(
                "credentials of yours an agent may read where the runner's home and repository are not hidden from it (opentiger leaves them where they are; `opentiger doctor` says what each means): {}",
                persons.join("; ")
            )
        });
    }
    Ok(())
}

/// Every credential an agent could read in `git`'s repository's configuration, what it
/// includes, and the runner's user's git configuration and credential files; after
/// [`before_agent`], only the person's.
pub fn checkout_left_credentials(
    git: &Git,
    places: &credentials::Places,
) -> Result<Vec<credentials::Finding>, GitError> {
    credentials::find(git, places)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_write_outside_the_writable_folders_is_named() {
        let writable = [
            std::path::PathBuf::from("/tmp/ws"),
            std::path::PathBuf::from("/tmp/scratch"),
        ];
        let cases = [
            ("error: failed to open `/home/runner/.cargo/.package-cache`: Permission denied (os error 13)", Some("/home/runner/.cargo/.package-cache")),
            ("npm ERR! EACCES: permission denied, mkdir '/home/runner/.npm/_cacache'", Some("/home/runner/.npm/_cacache")),
            ("sh: 1: cannot create /etc/x: Permission denied", Some("/etc/x")),
            ("touch: cannot touch '/tmp/ws/a': Permission denied", None),
            ("assertion failed: /home/runner/x is wrong", None),
            ("", None),
        ];
        // In a view, a folder outside it is missing: that is a refused write too.
        let missing = "sh: 1: cannot create /home/runner/x/out.txt: Directory nonexistent";
        assert_eq!(denied_write(missing, &writable, false), None);
        assert_eq!(
            denied_write(missing, &writable, true).as_deref(),
            Some("/home/runner/x/out.txt")
        );
        for (output, expected) in cases {
            assert_eq!(
                denied_write(output, &writable, false).as_deref(),
                expected,
                "{output}"
            );
        }
    }

    #[test]
    fn the_summary_lists_every_protection() {
        let config = crate::config::Config::default();
        let text = summary_markdown(&config);
        for p in protections(&config) {
            assert!(text.contains(p.name), "{text}");
        }
    }
}

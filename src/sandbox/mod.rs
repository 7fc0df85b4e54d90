//! What keeps an agent, which runs arbitrary code as the runner's user, away from the runner's
//! credentials (DESIGN §10).
//!
//! - [`protect_runner`]: the runner makes itself non-dumpable before any agent starts, so
//!   `/proc/<runner>/environ` and `/proc/<runner>/mem` are closed to processes of the same user.
//! - [`AgentGuard`]: around each agent run, credentials a checkout left in the repository's
//!   configuration are taken out of it (the runner pushes with its own token), and every git
//!   configuration file is checked afterwards (`gitconfig`): a change is put back before the
//!   runner runs git again, and fails the run as a policy violation.
//! - `groups`: each agent's process group is recorded while it runs, so the next tick kills what
//!   a killed tick left running before it claims that work again.
//! - `netns`: each agent and check in a network namespace of its own, loopback only, whose one
//!   listener is opentiger's proxy (`egress`); [`network_isolation`] says what this machine
//!   allows (the namespace, else Landlock's TCP rules, else nothing).
//! - [`in_force`]: which of these hold on this machine, for `doctor` and the job summary.
//!
//! Not here: the `-c` overrides and minimal environment of every runner git command
//! (`git::HARDENING`), the token held out of the environment (`credentials`), the agent's
//! process group and environment (`process`, `executor`).

pub mod gitconfig;
pub mod gitdir;
pub mod groups;
pub mod home;
pub mod landlock;
pub mod netns;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::{AgentHome, FilesystemSandbox, SandboxConfig};
use crate::git::{Git, GitError};
use gitconfig::ConfigSnapshot;

static NON_DUMPABLE: AtomicBool = AtomicBool::new(false);

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
}

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
    const FIX: &str = "fix: allow unprivileged user namespaces (Ubuntu 24.04: `sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0`, which the GitHub Action does before it drops sudo)";
    if want == Want::Namespace {
        return Err(format!(
            "sandbox.network.isolation is namespace, but {refused}\n  {FIX}, or set sandbox.network.isolation: auto"
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
                    "sandbox.require is true, but nothing can confine the agents' network here: {why}\n  {FIX}, or set sandbox.require: false"
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
    let network = match network_isolation(sandbox) {
        Ok(isolation) => Protection {
            name: "network",
            in_force: !matches!(isolation, NetIsolation::Open { .. }),
            detail: isolation.describe(),
        },
        Err(why) => Protection {
            name: "network",
            in_force: false,
            detail: why.lines().next().unwrap_or_default().to_string(),
        },
    };
    vec![
        network,
        Protection {
            name: "landlock",
            in_force: confined,
            detail: match (filesystem, landlock) {
                (FilesystemSandbox::Landlock, Some(abi)) => format!(
                    "agents write only their workspace, scratch folder, the repository's .git and their home folder, and verification commands only their workspace, scratch folder and home (Landlock ABI {abi}{})",
                    if abi >= 6 {
                        "; they cannot signal processes outside their domain"
                    } else {
                        "; below ABI 6 they can still signal the runner's processes"
                    }
                ),
                (FilesystemSandbox::Landlock, None) => {
                    "this kernel has no Landlock: agents may write anywhere the runner's user may".to_string()
                }
                (FilesystemSandbox::None, _) => {
                    "sandbox.filesystem is none: agents may write anywhere the runner's user may".to_string()
                }
            },
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
        },
        Protection {
            name: "credentials out of the environment",
            in_force: true,
            detail: "forge credentials are read once, then scrubbed from the environment; git \
                     gets them only to push or fetch over https, in its own environment for the \
                     askpass (never in a file or an argument)"
                .to_string(),
        },
        Protection {
            name: "private agent home",
            in_force: sandbox.agent_home == AgentHome::Private,
            detail: match sandbox.agent_home {
                AgentHome::Private => "each run's agent and checks get a HOME of their own (0700, removed after the run) holding only the agent's home_files".to_string(),
                AgentHome::Runner => "sandbox.agent_home is runner: agents may write the runner's HOME, where programs and settings they leave (~/.local/bin, ~/.ssh/config, ~/.bashrc) are picked up later by the runner's user".to_string(),
            },
        },
        Protection {
            name: "agent processes end with their run",
            in_force: crate::reaper::in_force(),
            detail: if crate::reaper::in_force() {
                "the runner is a child subreaper: every process an agent or a check starts, in whatever session or group, is killed when its run ends (a runner killed with SIGKILL leaves them to the next tick, which finds them by their run)".to_string()
            } else {
                "this process is not a child subreaper (Linux only): processes an agent moves out of its group may outlive its run".to_string()
            },
        },
        runner_git(),
        Protection {
            name: "git configuration",
            in_force: true,
            detail: "the runner's git ignores hooks, fsmonitor, pagers, editors, credential \
                     helpers and ext:: remotes; configuration an agent changes is put back and \
                     fails its run"
                .to_string(),
        },
    ]
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
        },
        Err(message) => Protection {
            name,
            in_force: false,
            detail: message.lines().next().unwrap_or_default().to_string(),
        },
    }
}

/// The protections as a short Markdown list, for the job summary.
pub fn summary_markdown(sandbox: &SandboxConfig) -> String {
    let mut out = String::from("\n### Agent isolation on this runner\n\n");
    for p in in_force(sandbox) {
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
/// `Read-only file system`, `Operation not permitted`) that lies outside `writable`: a write
/// the sandbox refused, most likely. Pure, for the check's failure message.
pub fn denied_write(output: &str, writable: &[std::path::PathBuf]) -> Option<String> {
    const REFUSALS: [&str; 4] = [
        "permission denied",
        "read-only file system",
        "operation not permitted",
        "eacces",
    ];
    for line in output.lines() {
        let lower = line.to_ascii_lowercase();
        if !REFUSALS.iter().any(|r| lower.contains(r)) {
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

/// Watches the git configuration and the shared `.git` around one agent run in `workspace`.
pub struct AgentGuard {
    git: Git,
    snapshot: ConfigSnapshot,
    git_dir: gitdir::GitDirSnapshot,
}

impl AgentGuard {
    /// Before the agent starts: a checkout's stored credentials leave the repository's
    /// configuration (when the runner holds a token of its own to push with), then every
    /// configuration file git would read is kept.
    fn before(workspace: &Path) -> Result<AgentGuard, GitError> {
        let git = Git::new(workspace);
        if crate::credentials::forge_token().is_some() {
            strip_checkout_credentials(&git)?;
        }
        let snapshot = ConfigSnapshot::take(&git)?;
        let git_dir = gitdir::GitDirSnapshot::take(&git)?;
        Ok(AgentGuard {
            git,
            snapshot,
            git_dir,
        })
    }

    /// Runs `agent` between [`Self::before`] and [`Self::after`], so nothing of the runner's
    /// can run git in between: `Err` when the guard could not be set up, else the guard's
    /// verdict (a policy violation's text), else what the agent run gave.
    pub fn around<T>(
        workspace: &Path,
        agent: impl FnOnce() -> T,
    ) -> Result<Result<T, String>, GitError> {
        let guard = AgentGuard::before(workspace)?;
        let ran = agent();
        Ok(guard.after().map(|()| ran))
    }

    /// After the agent exited and every process it started is gone (`reaper`), before
    /// any other git command: `Err` with the policy violation's text when it changed a
    /// configuration file or the shared `.git` (each change is put back first; the
    /// configuration first, since the runner's git reads it to put back the rest).
    fn after(self) -> Result<(), String> {
        let config = match self.snapshot.restore_changes(&self.git) {
            Ok(tampered) if tampered.is_empty() => None,
            Ok(tampered) => Some(gitconfig::describe(&tampered)),
            Err(e) => return Err(format!(
                "policy_violation: the agent changed the git configuration and it could not be put back: {e}"
            )),
        };
        let git_dir = match self.git_dir.restore_changes(&self.git) {
            Ok(changed) if changed.is_empty() => None,
            Ok(changed) => Some(gitdir::describe(&changed)),
            Err(e) => Some(format!(
                "policy_violation: the agent changed the repository's shared .git and it could not all be put back: {e}"
            )),
        };
        match (config, git_dir) {
            (None, None) => Ok(()),
            (Some(one), None) | (None, Some(one)) => Err(one),
            (Some(config), Some(git_dir)) => Err(format!("{config}; {git_dir}")),
        }
    }
}

/// Removes `http.<url>.extraheader` entries (what `actions/checkout` leaves unless
/// `persist-credentials: false`) from the repository's own configuration. Returns the keys
/// removed.
pub fn strip_checkout_credentials(git: &Git) -> Result<Vec<String>, GitError> {
    let found = git
        .try_run(&[
            "config",
            "--local",
            "--name-only",
            "--get-regexp",
            r"^http\..*\.extraheader$",
        ])?
        .unwrap_or_default();
    let mut keys: Vec<String> = found.lines().map(str::to_string).collect();
    keys.dedup();
    for key in &keys {
        git.run(&["config", "--local", "--unset-all", key])?;
    }
    Ok(keys)
}

/// Whether the repository's own configuration holds credentials a checkout left there.
pub fn checkout_left_credentials(git: &Git) -> bool {
    git.try_run(&[
        "config",
        "--local",
        "--name-only",
        "--get-regexp",
        r"^http\..*\.extraheader$",
    ])
    .ok()
    .flatten()
    .is_some_and(|s| !s.trim().is_empty())
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
        for (output, expected) in cases {
            assert_eq!(
                denied_write(output, &writable).as_deref(),
                expected,
                "{output}"
            );
        }
    }

    #[test]
    fn the_summary_lists_every_protection() {
        let sandbox = SandboxConfig::default();
        let text = summary_markdown(&sandbox);
        for p in in_force(&sandbox) {
            assert!(text.contains(p.name), "{text}");
        }
    }

    #[test]
    fn checkout_credentials_are_found_and_removed() {
        let dir = tempfile::tempdir().unwrap();
        let git = Git::new(dir.path());
        git.run(&["init", "-q"]).unwrap();
        assert!(!checkout_left_credentials(&git));
        git.run(&[
            "config",
            "http.https://github.com/.extraheader",
            "AUTHORIZATION: basic eDp5",
        ])
        .unwrap();
        assert!(checkout_left_credentials(&git));
        let removed = strip_checkout_credentials(&git).unwrap();
        assert_eq!(removed, ["http.https://github.com/.extraheader"]);
        assert!(!checkout_left_credentials(&git));
    }

    #[test]
    fn a_guard_reports_and_reverts_a_changed_configuration() {
        let dir = tempfile::tempdir().unwrap();
        let git = Git::new(dir.path());
        git.run(&["init", "-q"]).unwrap();
        let guard = AgentGuard::before(dir.path()).unwrap();
        git.run(&["config", "core.fsmonitor", "/tmp/evil.sh"])
            .unwrap();
        let err = guard.after().unwrap_err();
        assert!(
            err.contains("core.fsmonitor") && !err.contains("evil"),
            "{err}"
        );
        let stored = git.try_run(&["config", "--file", ".git/config", "core.fsmonitor"]);
        assert!(stored.unwrap().is_none(), "put back");
        let guard = AgentGuard::before(dir.path()).unwrap();
        assert_eq!(guard.after(), Ok(()));
    }
}

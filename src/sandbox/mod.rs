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
//! - [`in_force`]: which of these hold on this machine, for `doctor` and the job summary.
//!
//! Not here: the `-c` overrides and minimal environment of every runner git command
//! (`git::HARDENING`), the token held out of the environment (`credentials`), the agent's
//! process group and environment (`process`, `executor`).

pub mod gitconfig;
pub mod groups;
pub mod landlock;

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::config::FilesystemSandbox;
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

/// The protections of this module and of the runner's git, as they hold in this process with
/// this `sandbox.filesystem` setting.
pub fn in_force(filesystem: FilesystemSandbox) -> Vec<Protection> {
    let dumpable = NON_DUMPABLE.load(Ordering::Relaxed);
    let landlock = landlock::abi_version();
    let confined = filesystem == FilesystemSandbox::Landlock && landlock.is_some();
    vec![
        Protection {
            name: "landlock",
            in_force: confined,
            detail: match (filesystem, landlock) {
                (FilesystemSandbox::Landlock, Some(abi)) => format!(
                    "agents write only their workspace, scratch folder, the repository's .git and their home folder (Landlock ABI {abi})"
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
                     gets them only to push or fetch over https, through a 0600 askpass file"
                .to_string(),
        },
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

/// The protections as a short Markdown list, for the job summary.
pub fn summary_markdown(filesystem: FilesystemSandbox) -> String {
    let mut out = String::from("\n### Agent isolation on this runner\n\n");
    for p in in_force(filesystem) {
        let mark = if p.in_force {
            "in force"
        } else {
            "**not in force**"
        };
        out.push_str(&format!("- {}: {mark} — {}\n", p.name, p.detail));
    }
    out
}

/// Watches the git configuration around one agent run in `workspace`.
pub struct AgentGuard {
    git: Git,
    snapshot: ConfigSnapshot,
}

impl AgentGuard {
    /// Before the agent starts: a checkout's stored credentials leave the repository's
    /// configuration (when the runner holds a token of its own to push with), then every
    /// configuration file git would read is kept.
    pub fn before(workspace: &Path) -> Result<AgentGuard, GitError> {
        let git = Git::new(workspace);
        if crate::credentials::forge_token().is_some() {
            strip_checkout_credentials(&git)?;
        }
        let snapshot = ConfigSnapshot::take(&git)?;
        Ok(AgentGuard { git, snapshot })
    }

    /// After the agent exited, before any other git command: `Err` with the policy violation's
    /// text when it changed a configuration file (each one is put back first).
    pub fn after(self) -> Result<(), String> {
        match self.snapshot.restore_changes(&self.git) {
            Ok(tampered) if tampered.is_empty() => Ok(()),
            Ok(tampered) => Err(gitconfig::describe(&tampered)),
            Err(e) => Err(format!(
                "policy_violation: the agent changed the git configuration and it could not be put back: {e}"
            )),
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
    fn the_summary_lists_every_protection() {
        let text = summary_markdown(FilesystemSandbox::Landlock);
        for p in in_force(FilesystemSandbox::Landlock) {
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

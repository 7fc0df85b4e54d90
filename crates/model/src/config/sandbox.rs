//! `sandbox:` — how agents are confined (DESIGN §10). Types and defaults only. Not for: the
//! confinement itself (`sandbox::landlock`, the private home `sandbox::home`), or the types of
//! `sandbox.network` (`config::network`).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How an agent is confined on this machine.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SandboxConfig {
    /// `landlock` (default; Linux 5.13 and newer): the agent writes only its workspace, its
    /// scratch folder, the repository's `.git` and its home folder, and cannot reach the
    /// runner's process. `none`: no file system confinement.
    pub filesystem: FilesystemSandbox,
    /// `true`: refuse to run an agent when a protection is not in force here (Landlock missing
    /// from the kernel, no view of its own because user namespaces are refused, or the runner
    /// could not be made non-dumpable), instead of running it with a warning.
    pub require: bool,
    /// `private` (default): each run's agent and its verification commands get a `HOME` of
    /// their own, a 0700 folder in the run's scratch folder removed after it, holding only the
    /// agent's `home_files`. `runner`: they share the runner's `HOME` and may write it; an agent
    /// can then leave programs and settings there (`~/.local/bin`, `~/.ssh/config`, `~/.bashrc`,
    /// even an opentiger binary installed in `~/.cargo/bin`, which git runs as its askpass)
    /// for later runs and for other programs of the runner's user to pick up.
    pub agent_home: AgentHome,
    /// Absolute folders agents and verification commands may write besides their workspace,
    /// scratch folder and home, e.g. a shared build cache (`/home/runner/.cache/sccache`).
    /// Whatever an agent leaves there, later runs and the runner's user find.
    pub writable: Vec<String>,
    /// `auto` (default): each agent and check runs in a view of its own (a mount and PID
    /// namespace) where unprivileged user namespaces are allowed: only its run's folders, the
    /// system and toolchain folders read-only, `readable` and `writable`, a `/proc` of its own
    /// processes and a minimal `/dev` exist there — not the runner's repository, home,
    /// `/run` or any socket file of the runner's user. Elsewhere a socket filter refuses unix
    /// sockets instead. `namespace`: refuse to run where the view cannot be made. `none`: no
    /// view (Landlock and the socket filter only). Needs `filesystem: landlock`.
    pub view: ViewSandbox,
    /// Absolute folders or files agents and verification commands may also read in their
    /// view, e.g. a toolchain outside the system folders (`/home/runner/.sdkman`). Besides
    /// these they see the system folders (`/usr`, `/etc`, `/opt`, …), the folders on their
    /// `PATH`, their own program and the runner's Rust toolchain, read-only.
    pub readable: Vec<String>,
    /// What agents and verification commands may reach: a network of their own whose
    /// only door is opentiger's proxy, and the hosts it lets through.
    pub network: super::NetworkConfig,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            filesystem: FilesystemSandbox::Landlock,
            require: false,
            agent_home: AgentHome::Private,
            writable: Vec::new(),
            view: ViewSandbox::Auto,
            readable: Vec::new(),
            network: super::NetworkConfig::default(),
        }
    }
}

/// Whether agents and checks run in a view of the file system of their own.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum ViewSandbox {
    Auto,
    Namespace,
    None,
}

/// Whose `HOME` an agent runs with.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum AgentHome {
    Private,
    Runner,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FilesystemSandbox {
    Landlock,
    None,
}

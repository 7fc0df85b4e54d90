//! `sandbox:` — how agents are confined (DESIGN §10). Types and defaults only; the confinement
//! itself is `sandbox::landlock`.

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
    /// from the kernel, or the runner could not be made non-dumpable), instead of running it
    /// with a warning.
    pub require: bool,
}

impl Default for SandboxConfig {
    fn default() -> Self {
        SandboxConfig {
            filesystem: FilesystemSandbox::Landlock,
            require: false,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FilesystemSandbox {
    Landlock,
    None,
}

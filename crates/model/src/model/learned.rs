//! What the loop has learned about where its agents run (spec §2.3 "Host Context" and
//! "Failure Hints"; seeds/flow.md: the runtime snapshot and the failure delta), as plain data:
//! the host snapshot (what the agents' sandbox offers: system, kernel, shell, the tools present
//! and absent, probed inside that sandbox) and the repository's failure lessons (each failed
//! run's classified signature, counted, with the fact it implies). A lesson is made only from
//! opentiger's own classification and the command as the configuration names it: never from a
//! failing program's output, which is untrusted.
//!
//! Not for: classifying a failure (`engine::classify::lesson`), the rules that keep, expire and
//! rank lessons and cut the prompt's sections (`engine::learned`), probing (`runner::probe`) or
//! storing them (`store::learned`).

use serde::{Deserialize, Serialize};

use crate::time::Timestamp;

/// The toolchains every snapshot looks for besides the programs the checks name, in the order
/// a prompt lists them. (Not `npx`, which comes with npm, nor pip, whose `--version` alone
/// costs more than the rest: the checks' own programs are always looked for.)
pub const COMMON_TOOLS: &[&str] = &[
    "node", "npm", "pnpm", "yarn", "bun", "deno", "python3", "python", "uv", "cargo", "rustc",
    "go", "make", "cmake", "gcc", "git", "bash", "java", "ruby", "docker",
];

/// Tools a lesson may name besides [`COMMON_TOOLS`] and the checks' programs: the only names a
/// lesson takes from a failing check's output (a name of these tables, never the output's own
/// text).
pub const NAMED_TOOLS: &[&str] = &[
    "npx", "pip3", "pip", "pytest", "tox", "poetry", "podman", "tsc", "jest", "vitest",
];

/// Tools that stand in for one another, each group in the order one is suggested for another.
pub const ALTERNATIVES: &[&[&str]] = &[
    &["npm", "pnpm", "yarn", "bun"],
    &["python3", "python"],
    &["pip3", "pip", "uv"],
    &["docker", "podman"],
];

/// What the agents' sandbox offered when it was last probed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostSnapshot {
    /// When it was taken (the tick's time).
    pub taken_at: Timestamp,
    /// A hash of what it depends on (`engine::learned::fingerprint`): another value means it
    /// is out of date whatever its age.
    pub fingerprint: String,
    /// The system and its version, e.g. `Debian GNU/Linux 12 (bookworm)`.
    pub os: String,
    /// The kernel, e.g. `Linux 6.8.0-1017-azure`.
    pub kernel: String,
    /// The machine, e.g. `x86_64`.
    pub arch: String,
    /// What `/bin/sh` is (e.g. `dash`), when it could be told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shell: Option<String>,
    /// Every tool looked for, present or not, in the order they were looked for.
    pub tools: Vec<ToolFact>,
    /// How long the probe took, in milliseconds.
    #[serde(default)]
    pub probe_ms: u64,
}

impl Default for HostSnapshot {
    fn default() -> Self {
        HostSnapshot {
            taken_at: Timestamp(0),
            fingerprint: String::new(),
            os: String::new(),
            kernel: String::new(),
            arch: String::new(),
            shell: None,
            tools: Vec::new(),
            probe_ms: 0,
        }
    }
}

impl HostSnapshot {
    /// The fact about `program`, if it was looked for.
    pub fn tool(&self, program: &str) -> Option<&ToolFact> {
        self.tools.iter().find(|t| t.name == program)
    }

    /// Whether `program` was looked for and found.
    pub fn has(&self, program: &str) -> bool {
        self.tool(program).is_some_and(|t| t.present)
    }

    /// Whether `program` was looked for and not found.
    pub fn lacks(&self, program: &str) -> bool {
        self.tool(program).is_some_and(|t| !t.present)
    }

    /// `node 20.11.1`, or `node` when its version could not be read.
    pub fn named(&self, program: &str) -> Option<String> {
        self.tool(program)
            .filter(|t| t.present)
            .map(ToolFact::label)
    }
}

/// One tool looked for inside the sandbox.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolFact {
    /// Its program name, as run (`python3`).
    pub name: String,
    /// It started inside the sandbox.
    pub present: bool,
    /// Its version as it printed it (digits, letters and `.+-` only), when it could be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

impl ToolFact {
    /// `node 20.11.1`, or the name alone.
    pub fn label(&self) -> String {
        match &self.version {
            Some(v) => format!("{} {v}", self.name),
            None => self.name.clone(),
        }
    }
}

/// What kind of authentication or environment mismatch a check ran into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Mismatch {
    /// It was refused for want of credentials (a login, a key, a token).
    Auth,
    /// It needs another version of its runtime than the sandbox has.
    Runtime,
    /// It needs an environment variable the sandbox does not set.
    Variable,
}

/// A failure's classified signature: what went wrong, named only by opentiger's own words,
/// the command as the configuration (or the task) names it, and names from opentiger's own
/// tables (a tool, a service) or the proxy's parsed host name.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Signature {
    /// A program is not installed in the sandbox: the check's own (it could not start), or
    /// one the check ran, when it is a tool of opentiger's table (`None`: another).
    MissingCommand {
        program: Option<String>,
        command: String,
    },
    /// The script, make target or file the check names does not exist.
    MissingScript { command: String },
    /// The check's packages are not installed in the workspace.
    MissingDependencies { command: String },
    /// The check needs a service (a database, docker) the sandbox cannot reach.
    DaemonUnreachable {
        command: String,
        service: Option<String>,
    },
    /// The check was refused for credentials, or needs another runtime or a variable.
    AuthOrEnvironment { command: String, what: Mismatch },
    /// The sandbox's proxy refused a host (`by`: the allow list's key, `checks` or a role).
    NetworkRefused { host: String, by: String },
}

impl Signature {
    /// The command it is about, if any.
    pub fn command(&self) -> Option<&str> {
        match self {
            Signature::MissingCommand { command, .. }
            | Signature::MissingScript { command }
            | Signature::MissingDependencies { command }
            | Signature::DaemonUnreachable { command, .. }
            | Signature::AuthOrEnvironment { command, .. } => Some(command),
            Signature::NetworkRefused { .. } => None,
        }
    }

    /// The kind's word, as stored and shown (`missing_command`).
    pub fn kind(&self) -> &'static str {
        match self {
            Signature::MissingCommand { .. } => "missing_command",
            Signature::MissingScript { .. } => "missing_script",
            Signature::MissingDependencies { .. } => "missing_dependencies",
            Signature::DaemonUnreachable { .. } => "daemon_unreachable",
            Signature::AuthOrEnvironment { .. } => "auth_or_environment",
            Signature::NetworkRefused { .. } => "network_refused",
        }
    }

    /// The lesson's id: a short hash of the signature, the same whenever it recurs.
    pub fn id(&self) -> String {
        let key = serde_json::to_string(self).unwrap_or_default();
        super::short_hash(&["lesson", &key])
    }
}

/// One lesson of the repository: a signature, how often and when it was seen.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lesson {
    /// [`Signature::id`].
    pub id: String,
    pub signature: Signature,
    /// Failed runs that showed it.
    pub count: u32,
    pub first_seen: Timestamp,
    pub last_seen: Timestamp,
}

/// What the loop knows when a run starts: the host snapshot (if one was ever taken) and the
/// lessons in force.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Learned {
    pub host: Option<HostSnapshot>,
    pub lessons: Vec<Lesson>,
}

/// How big a run's prompt was, and what of it the host context and the failure hints took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PromptSize {
    /// Characters of the whole prompt.
    pub chars: u64,
    pub host_chars: u64,
    pub hints_chars: u64,
}

impl PromptSize {
    /// `12,345 characters (host context 480, failure hints 212)`.
    pub fn line(&self) -> String {
        format!(
            "{} characters (host context {}, failure hints {})",
            thousands(self.chars),
            self.host_chars,
            self.hints_chars
        )
    }
}

fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_keeps_its_id_and_sizes_read_for_people() {
        let a = Signature::MissingCommand {
            program: Some("pnpm".into()),
            command: "pnpm test".into(),
        };
        assert_eq!(a.id(), a.clone().id());
        assert_ne!(
            a.id(),
            Signature::MissingScript {
                command: "pnpm test".into()
            }
            .id()
        );
        assert_eq!(a.kind(), "missing_command");
        assert_eq!(a.command(), Some("pnpm test"));
        let size = PromptSize {
            chars: 1_234_567,
            host_chars: 480,
            hints_chars: 0,
        };
        assert_eq!(
            size.line(),
            "1,234,567 characters (host context 480, failure hints 0)"
        );
        assert_eq!(thousands(999), "999");
        assert_eq!(thousands(1000), "1,000");
    }
}

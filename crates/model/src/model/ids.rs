//! Identifiers of tasks, runs, ticks and lease holders (`AgentId`, named from the environment).
//!
//! Task and run ids are 12 lower-case hex digits (48 bits: no collision in practice for the state
//! sizes this tool handles). Ids the engine creates are hashes of what they stand for, so a
//! decision made twice yields the same id and replaying a tick creates nothing twice; a task a
//! person adds and a tick get fresh ones. Not for: whether a lease's holder is still alive
//! (`tick::context` asks this host's processes).

use std::fmt;
use std::hash::{BuildHasher, Hasher};

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

macro_rules! string_id {
    ($(#[$meta:meta])* $name:ident) => {
        $(#[$meta])*
        #[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(pub String);

        impl $name {
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl From<&str> for $name {
            fn from(text: &str) -> Self {
                $name(text.to_string())
            }
        }
    };
}

string_id!(
    /// A task id: 12 hex digits, or a slug given with `task add --id`.
    TaskId
);
string_id!(
    /// A run id: 12 hex digits derived from the tick and the task.
    RunId
);
string_id!(
    /// Who holds leases: `gha:<run_id>:<attempt>:<job>` in Actions, `local:<host>:<pid>` elsewhere.
    AgentId
);
string_id!(
    /// One invocation of `opentiger tick` (or of a local command that writes state).
    TickId
);

/// First 12 hex digits of the SHA-256 of the parts, joined by NUL.
pub fn short_hash(parts: &[&str]) -> String {
    let mut digest = Sha256::new();
    for (i, part) in parts.iter().enumerate() {
        if i > 0 {
            digest.update([0u8]);
        }
        digest.update(part.as_bytes());
    }
    let bytes = digest.finalize();
    bytes[..6].iter().map(|b| format!("{b:02x}")).collect()
}

impl TaskId {
    /// A fresh id for a task a person adds: unique per call.
    pub fn fresh(title: &str, now_millis: i64) -> TaskId {
        TaskId(short_hash(&[title, &now_millis.to_string(), &nonce()]))
    }

    /// The first 8 characters, for branch names and tables.
    pub fn short(&self) -> &str {
        let end = self
            .0
            .char_indices()
            .nth(8)
            .map_or(self.0.len(), |(i, _)| i);
        &self.0[..end]
    }
}

impl RunId {
    /// The run a tick starts for a task: the same tick and task always give the same run id.
    pub fn for_claim(tick: &TickId, task: &TaskId) -> RunId {
        RunId(short_hash(&["run", tick.as_str(), task.as_str()]))
    }

    /// The run a tick claims for `task` in its round `round` (0: the first, the same id as
    /// [`RunId::for_claim`]): a task run again in a later round of the same tick gets its own.
    pub fn for_round(tick: &TickId, round: u32, task: &TaskId) -> RunId {
        match round {
            0 => RunId::for_claim(tick, task),
            n => RunId(short_hash(&[
                "run",
                tick.as_str(),
                &n.to_string(),
                task.as_str(),
            ])),
        }
    }
}

impl TickId {
    pub fn fresh(now_millis: i64) -> TickId {
        TickId(short_hash(&["tick", &now_millis.to_string(), &nonce()]))
    }
}

impl AgentId {
    /// The id of this process: from GitHub Actions' variables when present, else host and pid.
    pub fn detect(env: impl Fn(&str) -> Option<String>) -> AgentId {
        if let (Some(run), Some(attempt)) = (env("GITHUB_RUN_ID"), env("GITHUB_RUN_ATTEMPT")) {
            let job = env("GITHUB_JOB").unwrap_or_else(|| "job".to_string());
            return AgentId(format!("gha:{run}:{attempt}:{job}"));
        }
        let host = env("HOSTNAME")
            .or_else(|| std::fs::read_to_string("/etc/hostname").ok())
            .map(|h| h.trim().to_string())
            .filter(|h| !h.is_empty())
            .unwrap_or_else(|| "localhost".to_string());
        AgentId(format!("local:{host}:{}", std::process::id()))
    }

    /// For `local:<host>:<pid>` holders, the host and pid.
    pub fn local_parts(&self) -> Option<(&str, u32)> {
        let rest = self.0.strip_prefix("local:")?;
        let (host, pid) = rest.rsplit_once(':')?;
        Some((host, pid.parse().ok()?))
    }
}

/// Process-unique randomness without a dependency: std's randomly keyed hasher.
fn nonce() -> String {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    format!("{:016x}", h.finish())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_stable_and_short() {
        assert_eq!(short_hash(&["a", "b"]), short_hash(&["a", "b"]));
        assert_ne!(short_hash(&["a", "b"]), short_hash(&["ab"]));
        assert_eq!(short_hash(&["x"]).len(), 12);
        let tick = TickId::from("t1");
        let task = TaskId::from("abc");
        assert_eq!(
            RunId::for_claim(&tick, &task),
            RunId::for_claim(&tick, &task)
        );
    }

    #[test]
    fn fresh_ids_differ() {
        assert_ne!(TaskId::fresh("same", 1), TaskId::fresh("same", 1));
    }

    #[test]
    fn agent_ids_follow_the_environment() {
        let gha = AgentId::detect(|k| match k {
            "GITHUB_RUN_ID" => Some("42".into()),
            "GITHUB_RUN_ATTEMPT" => Some("2".into()),
            "GITHUB_JOB" => Some("tick".into()),
            _ => None,
        });
        assert_eq!(gha.as_str(), "gha:42:2:tick");
        let local = AgentId::detect(|k| (k == "HOSTNAME").then(|| "box".to_string()));
        let (host, pid) = local.local_parts().unwrap();
        assert_eq!(host, "box");
        assert_eq!(pid, std::process::id());
    }
}

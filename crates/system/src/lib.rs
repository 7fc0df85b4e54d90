//! The system layer: what runs programs and keeps agents from the runner — the reaper, the
//! runner's own programs and git, the tokens held out of the environment, the sandbox, the
//! egress proxy, run folders and workspaces, the threat scan and redaction.
//! Not for: deciding anything (`opentiger-engine`), the state (`opentiger-store`) or the
//! forge; it reaches the model and configuration only (`opentiger-model`, re-exported
//! under the paths its code names).

pub use opentiger_model::{config, model, policy, time};

pub mod bounded;
pub mod credentials;
pub mod egress;
pub mod git;
pub mod process;
pub mod programs;
pub mod reaper;
pub mod redact;
pub mod sandbox;
pub mod scan;
pub mod scratch;
pub mod workspace;

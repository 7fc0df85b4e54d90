//! The state: the SQLite store ([`store`]) of tasks, runs and events, and the git branch it is
//! kept on between ticks ([`statebranch`]).
//! Not for: deciding anything (it stores the engine's types, it does not plan) or the forge;
//! it reaches the model, the engine's state types and the runner's git only.

pub use opentiger_engine::engine;
pub use opentiger_model::{config, model, policy, time};
pub use opentiger_system::git;

pub mod statebranch;
pub mod store;

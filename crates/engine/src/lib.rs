//! opentiger's pure decision engine ([`engine`]): plain values in, a plan out. Its only
//! dependency of ours is the model, so "the engine does no I/O" is a fact of this crate's
//! `Cargo.toml`: it cannot reach the store, the forge, the sandbox or a process.
//! Not for: applying a plan (the application's `tick`), or the model's types (re-exported here
//! from `opentiger-model` under the paths the engine's code names).

pub use opentiger_model::{config, model, policy, time};

pub mod engine;

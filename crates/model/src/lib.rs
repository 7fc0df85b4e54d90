//! opentiger's typed model, the layer every other crate stands on: the state's values
//! ([`model`]), time as a plain value ([`time`]), `.opentiger.yml`'s typed configuration
//! ([`config`]) and the path policy ([`policy`]).
//! Not for: deciding anything (`opentiger-engine`), storing anything (the store), or any I/O
//! but reading the configuration file and this host's name.

pub mod config;
pub mod model;
pub mod policy;
pub mod time;

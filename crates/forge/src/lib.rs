//! The forge ([`forge`]): GitHub's REST API as the typed calls the tick makes, each answer
//! turned into the model's types.
//! Not for: deciding what to call (the engine and the tick) or anything but HTTP to the forge;
//! it reaches the model only.

pub use opentiger_model::{model, time};

pub mod forge;

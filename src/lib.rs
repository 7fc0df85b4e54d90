//! opentiger: an autonomous coding loop for one repository, advanced one CI tick at a time.
//!
//! See ARCHITECTURE.md for the map. The shape is a functional core ([`engine`]: plain data in,
//! a [`engine::Plan`] out) inside an imperative shell ([`cli`], [`store`]).

pub mod cli;
pub mod config;
pub mod engine;
pub mod model;
pub mod report;
pub mod store;
pub mod time;

//! What the loop learned about where its agents run, and what of it reaches the next agent
//! (issue 52; spec §1.13, §2.3): the host snapshot's rules (`host.rs`: what is probed, its
//! fingerprint and time to live), the book of failure lessons (`book.rs`: what a run teaches,
//! counting, contradiction, expiry, the bound), the prompt's two sections within their budgets
//! (`inject.rs`) and the planner's proposed commands against the host (`vet.rs`). Pure: the
//! shell probes, reads the state and the clock, and passes values in.
//!
//! Not for: classifying one failed check (`engine::classify::lesson`), probing
//! (`runner::probe`), storing (`store::learned`) or showing them (`report`).

pub mod book;
pub mod host;
pub mod inject;
pub mod vet;

/// A lesson of `signature` seen `count` times, first at 0, last at `last_seen` (tests).
#[cfg(test)]
pub(crate) fn lesson(
    signature: crate::model::learned::Signature,
    count: u32,
    last_seen: i64,
) -> crate::model::learned::Lesson {
    crate::model::learned::Lesson {
        id: signature.id(),
        signature,
        count,
        first_seen: crate::time::Timestamp(0),
        last_seen: crate::time::Timestamp(last_seen),
    }
}

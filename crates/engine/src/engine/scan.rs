//! What the threat scan's outcome means for a task (issue 36): the change it held, a person's
//! approval of exactly that change, and whether a change a later run made is the one approved.
//!
//! A held change never leaves the job (no push, no ref on the remote): it is bound to the
//! commit it started from and the tree it wrote. A person approves that change by its commit;
//! the next run delivers the approved commit as it is where the runner still has it (the same
//! machine), and elsewhere (a fresh CI checkout) runs the agent again and lets its change out
//! only if it is exactly the approved one (same start, same tree) — anything else is scanned
//! as ever. An approval is used up by the delivery it allowed.
//!
//! Not for: the rules that find (`scan`), recording (`store`), the commit itself (`runner`).

use serde::{Deserialize, Serialize};

use crate::model::{BlockReason, Task, TaskState};

/// A change the threat scan held: its commit, that commit's tree and the commit it was made
/// on. Also what an approval names.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HeldChange {
    pub head: String,
    pub tree: String,
    pub start: String,
}

/// The change the task holds for a person: the task waits on a person and its latest run was
/// held with that change (`held`, the latest run's). `opentiger task approve` and `/opentiger
/// approve` approve exactly it.
pub fn held_change<'a>(task: &Task, held: Option<&'a HeldChange>) -> Option<&'a HeldChange> {
    (task.state() == TaskState::blocked(BlockReason::AwaitingHuman))
        .then_some(())
        .and(held)
}

/// The approval that covers a change made on `start` with `tree`: exactly the change a person
/// approved, nothing else.
pub fn approval_for<'a>(
    approved: &'a [HeldChange],
    start: &str,
    tree: &str,
) -> Option<&'a HeldChange> {
    approved.iter().find(|a| a.start == start && a.tree == tree)
}

/// Whether `word` could name a commit (`/opentiger approve <sha>`): 7 to 40 hex digits.
pub fn looks_like_commit(word: &str) -> bool {
    (7..=40).contains(&word.len()) && word.chars().all(|c| c.is_ascii_hexdigit())
}

/// Why `/opentiger approve <word>` does not approve `held`, if it does not: the word must be
/// the start of the held commit.
pub fn wrong_change(word: &str, held: &HeldChange) -> Option<String> {
    let named = held.head.starts_with(&word.to_ascii_lowercase());
    (!named).then(|| {
        format!(
            "`{word}` is not the change the threat scan holds ({}): approve that one by name after looking at it, or `retry` to have it redone",
            short(&held.head)
        )
    })
}

pub fn short(sha: &str) -> &str {
    sha.get(..10).unwrap_or(sha)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(head: &str, tree: &str, start: &str) -> HeldChange {
        HeldChange {
            head: head.into(),
            tree: tree.into(),
            start: start.into(),
        }
    }

    #[test]
    fn an_approval_covers_exactly_its_change() {
        let approved = [change("aaaa1111", "t1", "s1")];
        #[rustfmt::skip]
        let cases = [
            ("s1", "t1", true),
            ("s1", "t2", false), // another content
            ("s2", "t1", false), // the same files on another start: another change
        ];
        for (start, tree, covered) in cases {
            assert_eq!(
                approval_for(&approved, start, tree).is_some(),
                covered,
                "{start} {tree}"
            );
        }
    }

    #[test]
    fn approve_with_a_commit_names_the_held_one_only() {
        let held = change("0a1b2c3d4e5f60718293a4b5c6d7e8f901234567", "t", "s");
        assert!(looks_like_commit("0a1b2c3"));
        assert!(!looks_like_commit("0a1b2c")); // too short to name a commit
        assert!(!looks_like_commit("task-12"));
        assert_eq!(wrong_change("0a1b2c3", &held), None);
        assert_eq!(wrong_change("0A1B2C3D", &held), None);
        let other = wrong_change("deadbeef", &held).expect("another commit");
        assert!(other.contains("0a1b2c3d4e"), "{other}");
    }
}

//! People have the last word (issue 26, DESIGN §10): whether what trusted people said about a
//! task's pull request lets it be merged, whatever the judge concluded.
//!
//! - Each person's **standing** is their latest review that takes a side (`APPROVED`,
//!   `CHANGES_REQUESTED`, or one since dismissed); a `COMMENTED` review does not change it, as on
//!   GitHub. A standing `CHANGES_REQUESTED` is an **objection** on every head, not only the one
//!   it was written on: the push that answered it is not the person's agreement. It is lifted
//!   by that person's later approval or by the review's dismissal — never by the judge, and
//!   never ignored, whatever `merge.human_approval` says.
//! - An objection (or line comments of a review of this head) that no AutoFix has answered yet
//!   goes to one ([`LastWord::Fix`]): an AutoFix created in a later whole second than the
//!   review answered it; a review in the same second as the AutoFix counts as after it (GitHub
//!   times have one-second resolution), so it is answered again rather than lost.
//! - An objection already answered, a hold label (`merge.hold_labels`) or a trusted
//!   `/opentiger hold` comment holds the merge ([`LastWord::Held`]) until it is lifted.
//! - Otherwise the merge may go on; trusted people whose standing is an approval of this head
//!   are named (`merge.human_approval: required` waits for one).
//!
//! Pure. Not for: reading reviews, labels or comments (the tick does, trusted people's only),
//! or what an AutoFix does (`verdict`).

use super::verdict::{short_sha, JudgeConclusion};
use crate::config::MergeConfig;
use crate::model::{PullReview, ReviewState};
use crate::time::Timestamp;

/// The rule of the plan's wait while people hold a merge.
pub const HELD_RULE: &str = "judge.held";

/// The most commented ranges an AutoFix's findings name; the review itself (its lines cut to
/// the prompt's bounds) is in the AutoFix's prompt.
pub const MAX_RANGES: usize = 20;

/// What people said about a task's PR, as the shell observed it.
#[derive(Clone, Copy, Debug)]
pub struct PeopleSay<'a> {
    /// The head about to be merged (or judged).
    pub head: &'a str,
    /// Trusted people's reviews of the PR, any head, dismissed ones included.
    pub reviews: &'a [PullReview],
    /// The labels on the PR.
    pub labels: &'a [String],
    /// Who holds the PR with a `/opentiger hold` not yet released.
    pub held_by: Option<&'a str>,
    /// When the change's newest AutoFix was created: reviews submitted in an earlier whole
    /// second were in its prompt.
    pub fixed_at: Option<Timestamp>,
}

/// One thing that holds a merge.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Hold {
    /// A person's request for changes, answered by an AutoFix, still standing.
    Review { author: String, commit: String },
    /// A hold label on the PR.
    Label(String),
    /// A trusted `/opentiger hold` comment.
    Comment { by: String },
}

impl Hold {
    /// Who holds it, for people: "@maint's review (changes requested on 3f2a1c0)".
    pub fn who(&self) -> String {
        match self {
            Hold::Review { author, commit } => format!(
                "@{author}'s review (changes requested on {})",
                short_sha(commit)
            ),
            Hold::Label(name) => format!("the label `{name}`"),
            Hold::Comment { by } => format!("@{by}'s `/opentiger hold`"),
        }
    }

    /// How it is released.
    pub fn release(&self) -> String {
        match self {
            Hold::Review { author, .. } => {
                format!("@{author} approves the PR, or a maintainer dismisses the review")
            }
            Hold::Label(name) => format!("remove the label `{name}`"),
            Hold::Comment { .. } => "a maintainer comments `/opentiger release`".to_string(),
        }
    }
}

/// What people's say allows.
#[derive(Clone, Debug, PartialEq)]
pub enum LastWord {
    /// Nobody objects or holds. `approved_by`: trusted people whose standing is an approval
    /// of this head.
    Clear { approved_by: Vec<String> },
    /// Requests no AutoFix answered yet: one answers them (`conclusion`, a `RequestChanges`),
    /// as the judge's; `held_by` says whose, for people ("@maint's review (changes requested
    /// on 3f2a1c0)").
    Fix {
        conclusion: JudgeConclusion,
        held_by: String,
    },
    /// Held until each of these is lifted.
    Held(Vec<Hold>),
}

impl LastWord {
    /// "held by X (release: Y); held by Z (release: W)", or `None` when not held.
    pub fn held_text(&self) -> Option<String> {
        match self {
            LastWord::Held(holds) => Some(
                holds
                    .iter()
                    .map(|h| format!("held by {} (to release: {})", h.who(), h.release()))
                    .collect::<Vec<_>>()
                    .join("; "),
            ),
            LastWord::Clear { .. } | LastWord::Fix { .. } => None,
        }
    }
}

/// Each person's standing review: their latest `APPROVED`, `CHANGES_REQUESTED` or dismissed
/// review, newest first by (time, id).
pub fn standings(reviews: &[PullReview]) -> Vec<&PullReview> {
    let mut sorted: Vec<&PullReview> = reviews
        .iter()
        .filter(|r| match r.state {
            ReviewState::Approved | ReviewState::ChangesRequested | ReviewState::Dismissed => true,
            ReviewState::Commented => false,
        })
        .collect();
    sorted.sort_by_key(|r| std::cmp::Reverse((r.submitted_at, r.id)));
    let mut latest: Vec<&PullReview> = Vec::new();
    for r in sorted {
        if !latest.iter().any(|l| l.author == r.author) {
            latest.push(r);
        }
    }
    latest
}

/// Whether an AutoFix created at `fixed_at` answered a review submitted at `at`: only when it
/// was created in a later whole second (a review in the same second may have come after it).
fn answered(at: Timestamp, fixed_at: Option<Timestamp>) -> bool {
    fixed_at.is_some_and(|f| !at.at_or_after_second(f))
}

/// Decides what people's reviews, labels and holds allow for the merge of `say.head`.
pub fn last_word(say: &PeopleSay<'_>, merge: &MergeConfig) -> LastWord {
    let standing = standings(say.reviews);
    let objections: Vec<&PullReview> = standing
        .iter()
        .copied()
        .filter(|r| r.state == ReviewState::ChangesRequested)
        .collect();
    // Line comments of a review of this head ask for changes too (issue 14 item 5), once.
    let mut lined: Vec<&PullReview> = say
        .reviews
        .iter()
        .filter(|r| r.commit_id == say.head && r.state == ReviewState::Commented)
        .filter(|r| !r.lines.is_empty())
        .collect();
    lined.sort_by_key(|r| (r.submitted_at, r.id));
    let mut unanswered: Vec<&PullReview> = objections
        .iter()
        .copied()
        .chain(lined)
        .filter(|r| !answered(r.submitted_at, say.fixed_at))
        .collect();
    unanswered.sort_by_key(|r| (r.submitted_at, r.id));
    if !unanswered.is_empty() {
        let held_by = unanswered
            .iter()
            .map(|r| {
                let what = match r.state {
                    ReviewState::ChangesRequested => "changes requested",
                    ReviewState::Approved | ReviewState::Commented | ReviewState::Dismissed => {
                        "line comments"
                    }
                };
                format!(
                    "@{}'s review ({what} on {})",
                    r.author,
                    short_sha(&r.commit_id)
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        return LastWord::Fix {
            conclusion: fix_request(&unanswered),
            held_by,
        };
    }
    let mut holds: Vec<Hold> = objections
        .iter()
        .map(|r| Hold::Review {
            author: r.author.clone(),
            commit: r.commit_id.clone(),
        })
        .collect();
    for label in say.labels {
        if merge
            .hold_labels
            .iter()
            .any(|h| h.trim().eq_ignore_ascii_case(label.trim()))
        {
            holds.push(Hold::Label(label.clone()));
        }
    }
    if let Some(by) = say.held_by {
        holds.push(Hold::Comment { by: by.to_string() });
    }
    if !holds.is_empty() {
        return LastWord::Held(holds);
    }
    let mut approved_by: Vec<String> = standing
        .iter()
        .filter(|r| r.state == ReviewState::Approved && r.commit_id == say.head)
        .map(|r| r.author.clone())
        .collect();
    approved_by.sort();
    LastWord::Clear { approved_by }
}

/// The AutoFix's request: who asked on which head, and the commented ranges (bounded).
fn fix_request(asking: &[&PullReview]) -> JudgeConclusion {
    let mut who: Vec<String> = Vec::new();
    for r in asking {
        let name = format!("@{}", r.author);
        if !who.contains(&name) {
            who.push(name);
        }
    }
    let mut heads: Vec<&str> = Vec::new();
    for r in asking {
        let head = short_sha(&r.commit_id);
        if !heads.contains(&head) {
            heads.push(head);
        }
    }
    let mut findings: Vec<String> = Vec::new();
    let mut ranges = 0usize;
    let mut left_out = 0usize;
    for r in asking {
        for l in &r.lines {
            if ranges < MAX_RANGES {
                findings.push(format!(
                    "{}: see @{}'s review comment on these lines",
                    l.range(),
                    r.author
                ));
                ranges += 1;
            } else {
                left_out += 1;
            }
        }
        if r.lines.is_empty() {
            findings.push(format!(
                "answer @{}'s review (see their comments)",
                r.author
            ));
        }
    }
    if left_out > 0 {
        findings.push(format!(
            "{left_out} more commented ranges: see the reviews in the comments below"
        ));
    }
    JudgeConclusion::RequestChanges {
        summary: format!(
            "{} requested changes on {}",
            who.join(", "),
            heads.join(", ")
        ),
        findings,
    }
}

#[cfg(test)]
#[path = "objection_tests.rs"]
mod tests;

//! Which new tasks wait for a person's approval before they may run (DESIGN §9,
//! `execution_mode`), whatever made them (issue 40): an issue, the planner, or a person with
//! `opentiger task add`. `ask` holds every new task, `decide` the high-risk ones; an issue's
//! `opentiger:go` / `opentiger:ask` label wins over the mode, and a person who adds a task with
//! `--approve` approves it by adding it. Children the loop makes of an approved task (AutoFix,
//! rework, conflict fix) and research proposals a person approved are not new work: not held.
//!
//! Not for: applying the hold (the importer, the planner and `task add` set the state), nor
//! what an approval does (`commands::approved_state`).

use crate::model::{ExecutionMode, Risk};

/// The label that holds one issue's task for approval whatever `execution_mode` says.
pub const ASK_LABEL: &str = "opentiger:ask";
/// The label that lets one issue's task run without approval whatever `execution_mode` says.
pub const GO_LABEL: &str = "opentiger:go";

/// Where a new task comes from, as far as approval goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin<'a> {
    /// A backlog issue, with its labels.
    Issue { labels: &'a [String] },
    /// The planner, from the requirement document.
    Planner,
    /// A person's `opentiger task add`; `approved` with `--approve`.
    ByHand { approved: bool },
}

/// Why a new task of `origin` with `risk` waits for approval, or `None` when it may run.
pub fn held(mode: ExecutionMode, origin: Origin<'_>, risk: Risk) -> Option<String> {
    match origin {
        Origin::Issue { labels } => {
            if labels.iter().any(|l| same_word(l, GO_LABEL)) {
                return None;
            }
            if labels.iter().any(|l| same_word(l, ASK_LABEL)) {
                return Some(format!("label `{ASK_LABEL}`"));
            }
        }
        Origin::ByHand { approved: true } => return None,
        Origin::Planner | Origin::ByHand { approved: false } => {}
    }
    match (mode, risk) {
        (ExecutionMode::AlwaysExecute, _) => None,
        (ExecutionMode::Ask, _) => Some("execution_mode: ask".to_string()),
        (ExecutionMode::Decide, Risk::High) => {
            Some("execution_mode: decide, risk high".to_string())
        }
        (ExecutionMode::Decide, Risk::Low | Risk::Medium) => None,
    }
}

fn same_word(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

#[cfg(test)]
mod tests {
    use super::*;
    use ExecutionMode::{AlwaysExecute, Ask, Decide};
    use Risk::{High, Low, Medium};

    #[test]
    fn every_origin_is_held_by_the_same_rule() {
        let go = ["opentiger:go".to_string()];
        let ask = [" OpenTiger:Ask ".to_string()];
        let none: [String; 0] = [];
        let issue = |labels| Origin::Issue { labels };
        let by_hand = Origin::ByHand { approved: false };
        let approved = Origin::ByHand { approved: true };
        #[rustfmt::skip]
        let cases: &[(ExecutionMode, Origin<'_>, Risk, Option<&str>)] = &[
            (AlwaysExecute, issue(&none), High, None),
            (AlwaysExecute, Origin::Planner, High, None),
            (AlwaysExecute, by_hand, High, None),
            (AlwaysExecute, issue(&ask), Low, Some("label `opentiger:ask`")),
            (Ask, issue(&none), Low, Some("execution_mode: ask")),
            (Ask, issue(&go), Low, None),
            (Ask, Origin::Planner, Low, Some("execution_mode: ask")),
            // Issue 40: a task added by hand waits like any other, unless its author approves it.
            (Ask, by_hand, Low, Some("execution_mode: ask")),
            (Ask, approved, High, None),
            (Decide, by_hand, High, Some("execution_mode: decide, risk high")),
            (Decide, by_hand, Medium, None),
            (Decide, Origin::Planner, High, Some("execution_mode: decide, risk high")),
            (Decide, issue(&none), Low, None),
            (Decide, issue(&go), High, None),
            (Decide, approved, High, None),
        ];
        for (mode, origin, risk, expected) in cases {
            assert_eq!(
                held(*mode, *origin, *risk).as_deref(),
                *expected,
                "{mode:?} {origin:?} {risk:?}"
            );
        }
    }
}

//! The first step of judging a pull request: what CI says about the head the run pushed
//! (DESIGN §8; spec §2.4 step 5).
//!
//! - the PR head is not the run's commit → the run's verdict would be stale: judge the new head;
//! - checks not required, none reported, or all green → the review goes on;
//! - some check failed → changes are requested, naming the failing checks;
//! - checks still running → wait and look again next tick, at most `merge.checks_timeout_minutes`
//!   after the run finished; past that a person decides (a stuck CI never merges, never loops).

use super::verdict::{short_sha, JudgeConclusion};
use crate::config::MergeConfig;
use crate::model::{Checks, PullReview, ReviewState, Run};
use crate::time::{Timestamp, MINUTE};

/// CI's view of one commit, as the shell observed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CiObservation {
    /// The commit the PR head pointed at when CI was read.
    pub head_sha: String,
    pub checks: Checks,
}

/// What the judge does about CI before anything else.
#[derive(Clone, Debug, PartialEq)]
pub enum CheckGate {
    /// CI is green, absent, or not required: go on with policy, limits and review.
    Proceed { note: String },
    /// CI is still running: look again next tick.
    Wait {
        pending: Vec<String>,
        deadline: Timestamp,
    },
    /// CI failed: the judge requests changes with this conclusion.
    Failed(JudgeConclusion),
    /// CI stayed pending past the timeout: a person decides.
    TimedOut { reason: String },
    /// The PR head moved since the run pushed: this run's verdict would judge the wrong code.
    Stale { observed: String },
}

/// What people's reviews say about the head a run pushed (issue 14 item 5).
#[derive(Clone, Debug, PartialEq)]
pub enum ReviewGate {
    /// A trusted reviewer requested changes on this head, or commented on lines of it: an
    /// AutoFix answers, as for the judge's requests.
    ChangesRequested(JudgeConclusion),
    /// Trusted people approved this head (their logins), and nobody asks for changes.
    Approved(Vec<String>),
    /// No review of this head says anything yet.
    Silent,
}

/// Each reviewer's latest review of the run's head decides for them: changes requested (or
/// line comments) win over approvals. Reviews of older heads were answered by the push that
/// replaced them. `reviews` are trusted people's only (the shell drops the rest).
pub fn review_gate(run: &Run, reviews: &[PullReview]) -> ReviewGate {
    let Some(head) = run.head_sha.as_deref() else {
        return ReviewGate::Silent;
    };
    let mut latest: Vec<&PullReview> = Vec::new();
    let mut on_head: Vec<&PullReview> = reviews.iter().filter(|r| r.commit_id == head).collect();
    on_head.sort_by_key(|r| std::cmp::Reverse((r.submitted_at, r.id)));
    for r in on_head {
        if !latest.iter().any(|l| l.author == r.author) {
            latest.push(r);
        }
    }
    let asking: Vec<&&PullReview> = latest
        .iter()
        .filter(|r| r.state == ReviewState::ChangesRequested || !r.lines.is_empty())
        .collect();
    if !asking.is_empty() {
        let who: Vec<String> = asking.iter().map(|r| format!("@{}", r.author)).collect();
        let mut findings: Vec<String> = Vec::new();
        for r in &asking {
            for l in &r.lines {
                findings.push(format!(
                    "{}: see @{}'s review comment on these lines",
                    l.range(),
                    r.author
                ));
            }
            if r.lines.is_empty() {
                findings.push(format!(
                    "answer @{}'s review (see their comments)",
                    r.author
                ));
            }
        }
        return ReviewGate::ChangesRequested(JudgeConclusion::RequestChanges {
            summary: format!(
                "{} requested changes on {}",
                who.join(", "),
                short_sha(head)
            ),
            findings,
        });
    }
    let approved: Vec<String> = latest
        .iter()
        .filter(|r| r.state == ReviewState::Approved)
        .map(|r| r.author.clone())
        .collect();
    if approved.is_empty() {
        ReviewGate::Silent
    } else {
        ReviewGate::Approved(approved)
    }
}

/// `observed` is `None` when CI has not been read for this PR yet.
pub fn checks_gate(
    run: &Run,
    observed: Option<&CiObservation>,
    merge: &MergeConfig,
    now: Timestamp,
) -> CheckGate {
    if !merge.require_checks {
        return CheckGate::Proceed {
            note: "CI checks not required (merge.require_checks: false)".into(),
        };
    }
    let since = run.finished_at.unwrap_or(run.started_at);
    let deadline = since.plus(i64::from(merge.checks_timeout_minutes) * MINUTE);
    let Some(observed) = observed else {
        return wait_or_time_out(Vec::new(), deadline, merge, now);
    };
    if let Some(pushed) = run.head_sha.as_deref() {
        if pushed != observed.head_sha {
            return CheckGate::Stale {
                observed: observed.head_sha.clone(),
            };
        }
    }
    let checks = &observed.checks;
    match checks.state.as_str() {
        "success" => CheckGate::Proceed {
            note: format!("CI green on {}", short_sha(&observed.head_sha)),
        },
        "none" => CheckGate::Proceed {
            note: format!("no CI checks reported on {}", short_sha(&observed.head_sha)),
        },
        "failure" => CheckGate::Failed(JudgeConclusion::RequestChanges {
            summary: format!(
                "CI failed on {}: {}",
                short_sha(&observed.head_sha),
                names(&checks.failing)
            ),
            findings: checks
                .failing
                .iter()
                .map(|name| match checks.excerpts.get(name) {
                    Some(said) => {
                        format!("CI check `{name}` failed; make it pass. It reported: {said}")
                    }
                    None => format!("CI check `{name}` failed; make it pass"),
                })
                .collect(),
        }),
        _ => wait_or_time_out(checks.pending.clone(), deadline, merge, now),
    }
}

fn wait_or_time_out(
    pending: Vec<String>,
    deadline: Timestamp,
    merge: &MergeConfig,
    now: Timestamp,
) -> CheckGate {
    if now < deadline {
        return CheckGate::Wait { pending, deadline };
    }
    CheckGate::TimedOut {
        reason: format!(
            "CI still pending after {} minutes (merge.checks_timeout_minutes): {}. Decide: re-run CI and `opentiger task retry`, or merge by hand",
            merge.checks_timeout_minutes,
            names(&pending)
        ),
    }
}

fn names(checks: &[String]) -> String {
    if checks.is_empty() {
        "no check named".into()
    } else {
        checks.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testkit::{at, ci, run};
    use crate::model::RunStatus;

    fn pushed(sha: &str, finished: Timestamp) -> Run {
        let mut r = run("r1", "t1", RunStatus::Success, finished.plus(-MINUTE));
        r.head_sha = Some(sha.into());
        r.finished_at = Some(finished);
        r
    }

    fn merge(require: bool) -> MergeConfig {
        MergeConfig {
            require_checks: require,
            checks_timeout_minutes: 60,
            ..MergeConfig::default()
        }
    }

    #[test]
    fn gate_table() {
        let pushed = pushed("aaaa", at(0));
        let before_deadline = at(59);
        let at_deadline = at(60);

        #[rustfmt::skip]
        let cases: Vec<(&str, bool, Option<CiObservation>, Timestamp, &str)> = vec![
            ("not required, red",      false, Some(ci("aaaa", "failure", &["test"], &[])), before_deadline, "proceed"),
            ("green",                  true,  Some(ci("aaaa", "success", &[], &[])),       before_deadline, "proceed"),
            ("no CI at all",           true,  Some(ci("aaaa", "none", &[], &[])),          before_deadline, "proceed"),
            ("red",                    true,  Some(ci("aaaa", "failure", &["test"], &[])), before_deadline, "failed"),
            ("red after the deadline", true,  Some(ci("aaaa", "failure", &["test"], &[])), at_deadline,     "failed"),
            ("pending",                true,  Some(ci("aaaa", "pending", &[], &["lint"])), before_deadline, "wait"),
            ("pending too long",       true,  Some(ci("aaaa", "pending", &[], &["lint"])), at_deadline,     "timed_out"),
            ("not read yet",           true,  None,                                        before_deadline, "wait"),
            ("never read",             true,  None,                                        at_deadline,     "timed_out"),
            ("head moved, green",      true,  Some(ci("bbbb", "success", &[], &[])),       before_deadline, "stale"),
            ("head moved, pending",    true,  Some(ci("bbbb", "pending", &[], &["ci"])),   before_deadline, "stale"),
        ];
        for (name, require, observed, now, want) in cases {
            let got = match checks_gate(&pushed, observed.as_ref(), &merge(require), now) {
                CheckGate::Proceed { .. } => "proceed",
                CheckGate::Wait { .. } => "wait",
                CheckGate::Failed(_) => "failed",
                CheckGate::TimedOut { .. } => "timed_out",
                CheckGate::Stale { .. } => "stale",
            };
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn a_failure_names_the_failing_checks() {
        let pushed = pushed("aaaa", at(0));
        let mut observed = ci("aaaa", "failure", &["test (ubuntu)", "lint"], &[]);
        observed
            .checks
            .excerpts
            .insert("lint".into(), "3 warnings: unused import".into());
        let CheckGate::Failed(JudgeConclusion::RequestChanges { summary, findings }) =
            checks_gate(&pushed, Some(&observed), &merge(true), at(1))
        else {
            panic!("a red CI must request changes");
        };
        assert_eq!(summary, "CI failed on aaaa: test (ubuntu), lint");
        assert_eq!(
            findings,
            vec![
                "CI check `test (ubuntu)` failed; make it pass",
                "CI check `lint` failed; make it pass. It reported: 3 warnings: unused import"
            ]
        );
    }

    #[test]
    fn waiting_is_bounded_from_when_the_run_finished() {
        let mut pushed = pushed("aaaa", at(10));
        pushed.started_at = at(0);
        let observed = ci("aaaa", "pending", &[], &["build"]);
        assert_eq!(
            checks_gate(&pushed, Some(&observed), &merge(true), at(11)),
            CheckGate::Wait {
                pending: vec!["build".into()],
                deadline: at(70)
            }
        );
        let CheckGate::TimedOut { reason } =
            checks_gate(&pushed, Some(&observed), &merge(true), at(70))
        else {
            panic!("pending past the timeout must wait on a person");
        };
        assert!(reason.contains("60 minutes"), "{reason}");
        assert!(reason.contains("build"), "{reason}");
    }

    fn review(id: u64, author: &str, state: ReviewState, sha: &str, minute: i64) -> PullReview {
        PullReview {
            id,
            pr: 7,
            author: author.into(),
            state,
            body: "text".into(),
            commit_id: sha.into(),
            submitted_at: at(minute),
            lines: Vec::new(),
        }
    }

    #[test]
    fn review_gate_table() {
        use ReviewState::{Approved, ChangesRequested, Commented};
        let run = pushed("aaaa", at(0));
        let lined = PullReview {
            lines: vec![crate::model::ReviewLine {
                path: "src/a.rs".into(),
                start_line: Some(3),
                line: 5,
                body: "off by one".into(),
            }],
            ..review(9, "bob", Commented, "aaaa", 2)
        };
        let cases: Vec<(&str, Vec<PullReview>, &str)> = vec![
            ("no reviews", vec![], "silent"),
            (
                "a comment only",
                vec![review(1, "bob", Commented, "aaaa", 1)],
                "silent",
            ),
            (
                "approved",
                vec![review(1, "bob", Approved, "aaaa", 1)],
                "approved bob",
            ),
            (
                "changes requested",
                vec![review(1, "bob", ChangesRequested, "aaaa", 1)],
                "changes @bob",
            ),
            (
                "line comments ask for changes",
                vec![lined.clone()],
                "changes @bob src/a.rs:3-5",
            ),
            (
                "a later approval by the same person settles it",
                vec![
                    review(1, "bob", ChangesRequested, "aaaa", 1),
                    review(2, "bob", Approved, "aaaa", 2),
                ],
                "approved bob",
            ),
            (
                "one approval does not outvote another's request",
                vec![
                    review(1, "amy", Approved, "aaaa", 1),
                    review(2, "bob", ChangesRequested, "aaaa", 2),
                ],
                "changes @bob",
            ),
            (
                "a review of an older head was answered by the push",
                vec![review(1, "bob", ChangesRequested, "0000", 1)],
                "silent",
            ),
        ];
        for (name, reviews, expected) in cases {
            let got = match review_gate(&run, &reviews) {
                ReviewGate::Silent => "silent".to_string(),
                ReviewGate::Approved(who) => format!("approved {}", who.join(",")),
                ReviewGate::ChangesRequested(JudgeConclusion::RequestChanges {
                    summary,
                    findings,
                }) => {
                    let who = summary.split(" requested").next().unwrap_or("").to_string();
                    let ranges: Vec<String> = findings
                        .iter()
                        .filter(|f| f.contains(':') && !f.starts_with("answer"))
                        .map(|f| f.split(": ").next().unwrap_or("").to_string())
                        .collect();
                    if ranges.is_empty() {
                        format!("changes {who}")
                    } else {
                        format!("changes {who} {}", ranges.join(" "))
                    }
                }
                ReviewGate::ChangesRequested(other) => format!("{other:?}"),
            };
            assert_eq!(got, expected, "{name}");
        }
    }
}

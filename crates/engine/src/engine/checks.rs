//! opentiger's own checks on a PR head (issue 28): which state the judge's check run takes for
//! a review's conclusion, and whether a check run is created, updated or left as it is.
//!
//! Bound to the SHA: a new head gets new runs; a completed run keeps its conclusion (a new run
//! follows it, and GitHub counts the newest). A pass is only ever written on the head just
//! pushed or just approved; a head the review left behind is closed as superseded.
//!
//! Not for: writing them (`tick::checks`, `forge::checks`), their text (`report::check_run`),
//! or what CI's checks on the head mean (`engine::gate`).

use crate::engine::verdict::{short_sha, JudgeConclusion};
use crate::model::checks::{CheckConclusion, CheckReport, CheckStatus, PublishedCheck};

/// What to do with a wanted check run, given the one GitHub has on that head by that name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    Create,
    Update(u64),
    /// Already says exactly this.
    Keep,
}

/// Created, updated or kept, by what GitHub already has on that head under that name.
pub fn step(existing: Option<&PublishedCheck>, wanted: &CheckReport) -> Step {
    let Some(existing) = existing else {
        return Step::Create;
    };
    if existing.status != "completed" {
        return Step::Update(existing.id);
    }
    let concluded =
        existing.conclusion.as_deref() == wanted.status.conclusion().map(|c| c.as_str());
    let said = existing.title.as_deref() == Some(wanted.title.as_str())
        && existing.summary.as_deref() == Some(wanted.summary.as_str());
    match (concluded, said) {
        (true, true) => Step::Keep,
        // The same conclusion, said better (approved, then merged as …).
        (true, false) => Step::Update(existing.id),
        // A finished run is never turned into another conclusion, nor reopened by a later
        // start: a new run follows it (GitHub counts the newest).
        (false, _) => Step::Create,
    }
}

/// The judge's check run for a review's conclusion on the reviewed head: its state and title.
/// `moved_on`: the branch has moved past the reviewed head (observed only after a review that
/// failed). `None` leaves the check as it is.
pub fn judge_state(conclusion: &JudgeConclusion, moved_on: bool) -> Option<(CheckStatus, String)> {
    use CheckConclusion::{Cancelled, Failure, Success};
    let done = |c, title: String| Some((CheckStatus::Completed(c), title));
    match conclusion {
        // A review that failed on a head the branch has left will never conclude there: the
        // check is closed, never left open (nor passing).
        JudgeConclusion::Failed { .. } if moved_on => done(
            Cancelled,
            "superseded: the branch moved on to a newer push, reviewed there".to_string(),
        ),
        JudgeConclusion::Merged { commit } => done(
            Success,
            format!("approved, merged as {}", short_sha(commit)),
        ),
        JudgeConclusion::Approved { .. } => done(Success, "approved".to_string()),
        JudgeConclusion::ApprovedBeforeCi { .. } => done(
            Success,
            "approved before CI (scan.ci: after-review); merged once CI passes".to_string(),
        ),
        JudgeConclusion::RequestChanges { summary, .. } => done(
            Failure,
            format!("changes requested: {}", first_line(summary)),
        ),
        JudgeConclusion::Conflict { base, .. } => {
            done(Failure, format!("the branch conflicts with {base}"))
        }
        // The reviewed head was superseded by the base merged into it: reviewed again there.
        JudgeConclusion::Updated { head } => done(
            Cancelled,
            format!(
                "superseded: the base was merged in as {}, reviewed there",
                short_sha(head)
            ),
        ),
        // The judge approved; what stopped the merge is said in the title, never hidden
        // behind a pass the judge did not give.
        JudgeConclusion::Refused { reason } => done(
            Success,
            format!("approved; GitHub did not merge it: {}", first_line(reason)),
        ),
        JudgeConclusion::Held { reason } => done(
            Success,
            format!("approved; the merge is held: {}", first_line(reason)),
        ),
        JudgeConclusion::WindowOpen { until, .. } => done(
            Success,
            format!("approved; merges after the review window, at {until}"),
        ),
        // No verdict: the review is retried on this head; the check says so and stays open.
        JudgeConclusion::Failed { error } => Some((
            CheckStatus::InProgress,
            format!(
                "the review did not conclude, it is retried: {}",
                first_line(error)
            ),
        )),
        JudgeConclusion::BaseMoved { .. } => Some((
            CheckStatus::InProgress,
            "the base moved during the merge; the review is retried".to_string(),
        )),
    }
}

fn first_line(text: &str) -> String {
    let line = text.lines().next().unwrap_or_default().trim();
    match line.char_indices().nth(120) {
        Some((cut, _)) => format!("{}…", &line[..cut]),
        None => line.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted(head: &str, status: CheckStatus) -> CheckReport {
        CheckReport {
            name: crate::model::checks::VERIFY_CHECK,
            head_sha: head.to_string(),
            external_id: "task=t run=r".to_string(),
            status,
            title: "2 commands passed".to_string(),
            summary: "table".to_string(),
            text: None,
            annotations: Vec::new(),
        }
    }

    fn published(status: &str, conclusion: Option<&str>, title: &str) -> PublishedCheck {
        PublishedCheck {
            id: 7,
            status: status.to_string(),
            conclusion: conclusion.map(String::from),
            title: Some(title.to_string()),
            summary: Some("table".to_string()),
        }
    }

    #[test]
    fn a_check_run_is_created_once_updated_while_open_and_never_rewritten_once_done() {
        use CheckConclusion::{Failure, Success};
        use CheckStatus::{Completed, InProgress, Queued};
        let done = |c: &str, t: &str| Some(published("completed", Some(c), t));
        #[rustfmt::skip]
        let cases: &[(Option<PublishedCheck>, CheckStatus, Step)] = &[
            (None, Queued, Step::Create),
            (None, Completed(Success), Step::Create),
            (Some(published("queued", None, "waiting")), InProgress, Step::Update(7)),
            (Some(published("in_progress", None, "reviewing")), Completed(Failure), Step::Update(7)),
            // Killed after publishing: the same result again changes nothing.
            (done("success", "2 commands passed"), Completed(Success), Step::Keep),
            // A finished run's conclusion is never changed: a new run follows it...
            (done("success", "2 commands passed"), Completed(Failure), Step::Create),
            // ...though the same conclusion may be said better.
            (done("success", "approved"), Completed(Success), Step::Update(7)),
            (done("failure", "2 commands passed"), InProgress, Step::Create),
        ];
        for (existing, status, expected) in cases {
            let got = step(existing.as_ref(), &wanted("aaa", *status));
            assert_eq!(got, *expected, "{existing:?} {status:?}");
        }
    }

    #[test]
    fn every_review_conclusion_has_its_check_state() {
        use CheckConclusion::{Cancelled, Failure, Success};
        let text = |s: &str| s.to_string();
        #[rustfmt::skip]
        let cases: Vec<(JudgeConclusion, CheckStatus, &str)> = vec![
            (JudgeConclusion::Merged { commit: text("abcdef1234567") }, CheckStatus::Completed(Success), "merged as abcdef1"),
            (JudgeConclusion::RequestChanges { summary: text("missing test\nmore"), findings: vec![] }, CheckStatus::Completed(Failure), "changes requested: missing test"),
            (JudgeConclusion::Conflict { base: text("main"), files: vec![] }, CheckStatus::Completed(Failure), "conflicts with main"),
            (JudgeConclusion::Updated { head: text("1234567abc") }, CheckStatus::Completed(Cancelled), "superseded"),
            (JudgeConclusion::Held { reason: text("@ann holds it") }, CheckStatus::Completed(Success), "held: @ann holds it"),
            (JudgeConclusion::Refused { reason: text("protected") }, CheckStatus::Completed(Success), "did not merge it"),
            (JudgeConclusion::Failed { error: text("agent crashed") }, CheckStatus::InProgress, "retried: agent crashed"),
        ];
        for (conclusion, status, says) in cases {
            let (got, title) = judge_state(&conclusion, false).expect("a state");
            assert_eq!(got, status, "{conclusion:?}");
            assert!(title.contains(says), "{title}");
        }
        // Failed on a head the branch has left: closed as superseded, whatever the error.
        let failed = JudgeConclusion::Failed {
            error: text("branch moved"),
        };
        let (got, title) = judge_state(&failed, true).expect("a state");
        assert_eq!(got, CheckStatus::Completed(Cancelled));
        assert!(title.starts_with("superseded"), "{title}");
        // Moving on only matters to a review that failed.
        let merged = JudgeConclusion::Merged {
            commit: text("abcdef1234567"),
        };
        assert_eq!(judge_state(&merged, true), judge_state(&merged, false));
    }
}

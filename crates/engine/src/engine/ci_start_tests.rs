//! Issue 36 (`scan.ci`) at the level of a plan: a github task's PR whose head passed the scan
//! gets its CI started once (after the review, under `after-review`), its CI waited for from
//! the start, and an approved head merged once CI passed, without a second review.

use crate::config::{CiStart, Config};
use crate::engine::gate::{ExpectedChecks, ExpectedSource};
use crate::engine::stall::{CiHeal, CiSetup, Dispatch};
use crate::engine::testkit::*;
use crate::engine::Snapshot;
use crate::model::{BlockReason, RunStatus};

/// Task `a` waits on the judge with PR #7, whose head `aaa` its run pushed at -20 minutes;
/// CI says `observed` about it (`None`: no check yet).
fn pull(observed: Option<&[&str]>, judged: bool) -> Snapshot {
    let mut r1 = run("r1", "a", RunStatus::Success, at(-21));
    r1.pr_number = Some(7);
    r1.head_sha = Some("aaa".into());
    r1.branch = Some("opentiger/task-a".into());
    if judged {
        r1.judged_at = Some(at(-15));
    }
    let mut snap = snapshot(
        vec![task("a")
            .blocked(BlockReason::AwaitingJudge)
            .with(|t| t.source_pr = Some(7))],
        vec![r1],
        vec![],
    );
    let o = &mut snap.observations;
    o.pull_requests.insert(7, crate::engine::PullState::Open);
    o.pull_checks.insert(
        7,
        match observed {
            Some(passed) => checks_on("aaa", passed, &[], &[]),
            None => ci("aaa", "none", &[], &[]),
        },
    );
    o.expected_checks = ExpectedChecks {
        source: ExpectedSource::Config,
        names: vec!["test".into()],
    };
    o.ci_setup = CiSetup {
        workflow_token: true,
        push_workflows: vec!["ci.yml".into()],
        head_workflows: vec!["ci.yml".into(), "lint.yml".into()],
        lacks_dispatch: Vec::new(),
        may_dispatch: true,
    };
    snap
}

fn started(minutes: i64) -> CiHeal {
    CiHeal {
        head_sha: "aaa".into(),
        at: at(minutes),
        dispatch: Dispatch::Sent {
            workflows: vec!["ci.yml".into(), "lint.yml".into()],
        },
        after_scan: true,
    }
}

fn config(ci: CiStart) -> Config {
    let mut c = Config::default();
    c.scan.ci = ci;
    c
}

#[test]
fn ci_starts_once_on_a_head_that_passed_the_scan_and_counts_from_then() {
    use CiStart::{AfterReview, AfterScan, OnPush};
    let approved = |mut s: Snapshot| {
        s.observations.judge_approved.insert("aaa".into());
        s
    };
    let with_heal = |mut s: Snapshot, h: CiHeal| {
        s.observations.ci_heals.insert(7, h);
        s
    };
    // name, mode, snapshot, writes, a reason that must show.
    type Row<'a> = (&'a str, CiStart, Snapshot, &'a [&'a str], &'a str);
    #[rustfmt::skip]
    let cases: Vec<Row> = vec![
        ("on-push: the stall rules as ever", OnPush, pull(None, false),
            &["judge.ci_diagnosis a heal CI #7 dispatch ci.yml,lint.yml"], "never started"),
        ("after-scan: started at once, every CI workflow", AfterScan, pull(None, false),
            &["judge.start_ci a start CI #7 dispatch ci.yml,lint.yml"], "passed the threat scan"),
        ("after-scan: started, the grace counts from the start", AfterScan, with_heal(pull(None, false), started(-5)),
            &[], "still pending at 2026-11-21T12:05:00Z"),
        ("after-scan: started, nothing came", AfterScan, with_heal(pull(None, false), started(-11)),
            &["judge.ci_never_started a -> blocked(awaiting_human)"], "even after dispatching"),
        ("after-scan: green, reviewed", AfterScan, with_heal(pull(Some(&["test"]), false), started(-5)),
            &["judge.review a judge r1"], "not judged yet"),
        ("after-review: the judge first", AfterReview, pull(None, false),
            &["judge.review_before_ci a judge r1"], "before CI runs"),
        ("after-review: under review", AfterReview, pull(None, true),
            &[], "until the judge or a person approves"),
        ("after-review: approved, CI started", AfterReview, approved(pull(None, true)),
            &["judge.start_ci a start CI #7 dispatch ci.yml,lint.yml"], "was approved"),
        ("after-review: approved, green: merged", AfterReview, with_heal(approved(pull(Some(&["test"]), false)), started(-5)),
            &["judge.review a judge r1"], "merge it, with no second review"),
    ];
    for (name, mode, snap, expect, reason) in cases {
        let plan = plan_with(&snap, &config(mode));
        assert_eq!(writes(&plan), *expect, "{name}: {:?}", reasons(&plan, "a"));
        let said = reasons(&plan, "a").join(" | ");
        assert!(said.contains(reason), "{name}: {said}");
        assert!(
            !said.contains("GITHUB_TOKEN trap") || mode == OnPush,
            "{name}: {said}"
        );
    }
}

#[test]
fn the_review_before_ci_is_marked_so_its_approval_is_not_merged() {
    let plan = plan_with(&pull(None, false), &config(CiStart::AfterReview));
    let judge = plan
        .decisions
        .iter()
        .find_map(|d| match &d.action {
            crate::engine::Action::Judge { before_ci, .. } => Some(*before_ci),
            _ => None,
        })
        .expect("a review");
    assert!(judge);
    let plan = plan_with(&pull(Some(&["test"]), false), &config(CiStart::OnPush));
    assert!(plan.decisions.iter().any(|d| matches!(
        d.action,
        crate::engine::Action::Judge {
            before_ci: false,
            ..
        }
    )));
}

#[test]
fn without_dispatch_rights_a_person_decides() {
    let mut snap = pull(None, false);
    snap.observations.ci_setup.may_dispatch = false;
    let plan = plan_with(&snap, &config(CiStart::AfterScan));
    assert_eq!(
        writes(&plan),
        ["judge.ci_cannot_start a -> blocked(awaiting_human)"]
    );
    let said = reasons(&plan, "a").join(" | ");
    assert!(said.contains("actions: write"), "{said}");
}

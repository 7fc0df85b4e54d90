//! Table tests of the replan gate: when the planner runs.

use super::testkit::*;
use crate::config::Config;
use crate::model::{PlanHistory, PlanRecord, PlanStatus};
use crate::time::Timestamp;

fn record(signature: &str, status: PlanStatus, at: Timestamp) -> PlanRecord {
    PlanRecord {
        id: format!("p-{signature}"),
        signature: signature.to_string(),
        requirement_hash: "h".into(),
        base_head: "b".into(),
        status,
        source: "agent".into(),
        task_count: 2,
        errors: vec!["`a`: depends on itself".into()],
        created_at: at,
    }
}

#[test]
fn the_planner_runs_only_on_new_inputs_within_its_bounds() {
    let cases: Vec<(&str, Option<&str>, PlanHistory, &str)> = vec![
        ("no requirement", None, PlanHistory::default(), "-"),
        (
            "first plan",
            Some("s1"),
            PlanHistory::default(),
            "preflight.start_planner",
        ),
        (
            "same inputs as the last plan",
            Some("s1"),
            PlanHistory {
                last_attempt: Some(record("s1", PlanStatus::Created, at(-600))),
                last_created: Some(record("s1", PlanStatus::Created, at(-600))),
                failures_for: 0,
            },
            "planner.no_diff",
        ),
        (
            "changed inputs, interval passed",
            Some("s2"),
            PlanHistory {
                last_attempt: Some(record("s1", PlanStatus::Created, at(-600))),
                last_created: Some(record("s1", PlanStatus::Created, at(-600))),
                failures_for: 0,
            },
            "preflight.start_planner",
        ),
        (
            "changed inputs, too soon",
            Some("s2"),
            PlanHistory {
                last_attempt: Some(record("s1", PlanStatus::Created, at(-10))),
                last_created: Some(record("s1", PlanStatus::Created, at(-10))),
                failures_for: 0,
            },
            "planner.interval",
        ),
        (
            "failed twice on these inputs",
            Some("s2"),
            PlanHistory {
                last_attempt: Some(record("s2", PlanStatus::Rejected, at(-600))),
                last_created: None,
                failures_for: 2,
            },
            "planner.failed",
        ),
        (
            "failed once: try again after the interval",
            Some("s2"),
            PlanHistory {
                last_attempt: Some(record("s2", PlanStatus::Failed, at(-600))),
                last_created: None,
                failures_for: 1,
            },
            "preflight.start_planner",
        ),
    ];
    for (name, signature, plans, rule) in cases {
        let mut snap = snapshot(vec![], vec![], vec![]);
        snap.observations.requirement_present = signature.is_some();
        snap.observations.plan_signature = signature.map(String::from);
        snap.plans = plans;
        let plan = plan_with(&snap, &Config::default());
        let got = plan
            .decisions
            .iter()
            .find(|d| d.rule.starts_with("planner.") || d.rule == "preflight.start_planner")
            .map_or("-", |d| d.rule);
        assert_eq!(got, rule, "{name}: {:#?}", plan.decisions);
    }
}

#[test]
fn a_backlog_keeps_the_planner_off() {
    let mut snap = snapshot(vec![task("a")], vec![], vec![]);
    snap.observations.requirement_present = true;
    snap.observations.plan_signature = Some("s".into());
    let plan = plan_with(&snap, &Config::default());
    assert!(!plan.preflight.start_planner);
    assert!(plan
        .decisions
        .iter()
        .all(|d| !d.rule.starts_with("planner") && d.rule != "preflight.start_planner"));
}

//! Table tests of dispatch: which queued tasks a tick claims, and why the others wait.

use super::dispatch::score;
use super::testkit::*;
use crate::config::Config;
use crate::model::{BlockReason, Lane, Risk, Role, RunStatus, TaskKind, TaskStatus};

fn config(max_runs: u32, workers: u32) -> Config {
    let mut c = Config::default();
    c.limits.max_runs_per_tick = max_runs;
    c.agents.worker.count = Some(workers);
    c.agents.docser.count = Some(workers);
    c
}

fn claimed(plan: &super::Plan) -> Vec<String> {
    plan.claims()
        .filter_map(|d| d.task_id.as_ref().map(|t| t.to_string()))
        .collect()
}

/// name, tasks, ids of running (leased) tasks, config, claimed ids, (task, reason substring).
type DispatchCase = (
    &'static str,
    Vec<crate::model::Task>,
    Vec<&'static str>,
    Config,
    &'static [&'static str],
    &'static [(&'static str, &'static str)],
);

type ScoreCase<'a> = (&'a str, f64, &'a dyn Fn(&mut crate::model::Task));

#[test]
fn claims_follow_the_rules() {
    let running = |id: &str| task(id).status(TaskStatus::Running);
    let leased = |id: &str| {
        (
            run(&format!("r-{id}"), id, RunStatus::Running, at(-1)),
            lease(id, &format!("r-{id}"), "local:box:1", at(60)),
        )
    };
    #[rustfmt::skip]
    let cases: Vec<DispatchCase> = vec![
        // name, tasks, ids of running tasks (leased), config, claimed, (task, reason substring)
        ("done dependency resolves", vec![task("a").deps(&["d"]), task("d").status(TaskStatus::Done)], vec![], config(1, 1), &["a"], &[]),
        ("a dependency parked on a person holds its dependents", vec![task("a").deps(&["d"]), task("d").blocked(BlockReason::AwaitingHuman)], vec![], config(1, 1), &[], &[("a", "waits for d (blocked(awaiting_human))")]),
        ("a failed dependency is retried first, its dependents wait", vec![task("a").deps(&["d"]), task("d").status(TaskStatus::Failed)], vec![], config(1, 1), &[], &[("a", "waits for d (queued)")]),
        ("queued dependency waits", vec![task("a").deps(&["d"]), task("d").with(|t| t.priority = -1)], vec![], config(1, 1), &["d"], &[("a", "waits for d (queued)")]),
        // Issue 40: every unmet dependency is named, not only the first.
        ("every unmet dependency is listed", vec![task("a").deps(&["d", "e", "f"]), task("d").status(TaskStatus::Done), task("e").with(|t| t.priority = -1), task("f").blocked(BlockReason::AwaitingHuman)], vec![], config(1, 1), &["e"], &[("a", "waits for 2 dependencies: e (queued) and f (blocked(awaiting_human))")]),
        ("cooldown", vec![task("a").next_at(at(5))], vec![], config(1, 1), &[], &[("a", "waits on its cooldown until 12:05:00Z; `opentiger task retry a` skips the wait")]),
        ("priority order under the tick cap", vec![task("lo").with(|t| t.priority = 1), task("hi").with(|t| t.priority = 9)], vec![], config(1, 3), &["hi"], &[("lo", "limits.max_runs_per_tick = 1")]),
        ("risk lowers the score", vec![task("risky").with(|t| { t.priority = 5; t.risk = Risk::High }), task("safe").with(|t| { t.priority = 5; t.risk = Risk::Low })], vec![], config(1, 3), &["safe"], &[]),
        ("target areas exclude each other", vec![running("r").with(|t| t.target_area = Some("path:src".into())), task("a").with(|t| t.target_area = Some("path:src".into())), task("b").with(|t| t.target_area = Some("path:docs".into()))], vec!["r"], config(2, 3), &["b"], &[("a", "target area `path:src` is busy with r")]),
        ("two queued tasks of one area: one claimed", vec![task("a").with(|t| { t.target_area = Some("x".into()); t.priority = 2 }), task("b").with(|t| t.target_area = Some("x".into()))], vec![], config(2, 3), &["a"], &[("b", "busy with a")]),
        ("role slots are shared across ticks", vec![running("r"), task("a")], vec!["r"], config(2, 1), &[], &[("a", "all worker slots busy (1/1, agents.worker.count)")]),
        ("docs lane holds one", vec![running("d1").with(|t| { t.role = Role::Docser; t.lane = Lane::Docser }), task("d2").with(|t| { t.role = Role::Docser; t.lane = Lane::Docser }), task("f")], vec!["d1"], config(2, 3), &["f"], &[("d2", "lane docser is full (1/1)")]),
        ("feature lane goes first", vec![
            task("c1").with(|t| { t.lane = Lane::ConflictRecovery; t.priority = 90 }),
            task("c2").with(|t| { t.lane = Lane::ConflictRecovery; t.priority = 90 }),
            task("f").with(|t| t.priority = 1),
        ], vec![], config(2, 3), &["f", "c1"], &[("c2", "limits.max_runs_per_tick = 2")]),
        ("a full lane never idles the tick", vec![
            running("c1").with(|t| t.lane = Lane::ConflictRecovery),
            running("c2").with(|t| t.lane = Lane::ConflictRecovery),
            task("c3").with(|t| t.lane = Lane::ConflictRecovery),
        ], vec!["c1", "c2"], config(1, 3), &["c3"], &[]),
        ("quota throttle: one run at a time", vec![running("r"), task("q").blocked(BlockReason::QuotaWait).next_at(at(30)), task("a")], vec!["r"], config(3, 3), &[], &[("a", "wait on quota, so one run at a time")]),
        ("quota throttle lets one run when idle", vec![task("q").blocked(BlockReason::QuotaWait).next_at(at(30)), task("a"), task("b")], vec![], config(3, 3), &["a"], &[]),
        ("PR review tasks are judge-only", vec![task("p").with(|t| t.kind = TaskKind::PrReview)], vec![], config(1, 1), &[], &[]),
        ("tick cap zero claims nothing", vec![task("a")], vec![], config(0, 1), &[], &[("a", "max_runs_per_tick = 0")]),
    ];
    for (name, tasks, running_ids, config, expect, reason_checks) in cases {
        let (runs, leases): (Vec<_>, Vec<_>) = running_ids.iter().map(|id| leased(id)).unzip();
        let snap = snapshot(tasks, runs, leases);
        let plan = plan_with(&snap, &config);
        let mut got = claimed(&plan);
        got.sort();
        let mut want: Vec<String> = expect.iter().map(|s| s.to_string()).collect();
        want.sort();
        assert_eq!(got, want, "case `{name}`: {:#?}", plan.decisions);
        for (id, needle) in reason_checks {
            let all = reasons(&plan, id).join(" | ");
            assert!(
                all.contains(needle),
                "case `{name}`: `{needle}` not in `{all}`"
            );
        }
    }
}

#[test]
fn score_formula() {
    let base = |f: &dyn Fn(&mut crate::model::Task)| {
        let mut t = task("a");
        t.created_at = NOW;
        f(&mut t);
        score(&t, t.created_at, NOW)
    };
    #[rustfmt::skip]
    let cases: &[ScoreCase] = &[
        ("zero", 0.0, &|_| {}),
        ("priority x10 x low 1.5", 150.0, &|t| t.priority = 10),
        ("medium risk x1.0", 100.0, &|t| { t.priority = 10; t.risk = Risk::Medium }),
        ("high risk x0.5", 50.0, &|t| { t.priority = 10; t.risk = Risk::High }),
        ("age: 2 per hour", 6.0, &|t| t.created_at = NOW.plus(-3 * crate::time::HOUR)),
        ("age capped at 20", 20.0, &|t| t.created_at = NOW.plus(-30 * crate::time::HOUR)),
        ("short timebox +5", 5.0, &|t| t.timebox_minutes = 30),
    ];
    for (name, expected, f) in cases {
        assert_eq!(base(f), *expected, "{name}");
    }
}

#[test]
fn claims_carry_a_lease_until_the_configured_expiry() {
    let snap = snapshot(vec![task("a")], vec![], vec![]);
    let plan = plan_with(&snap, &Config::default());
    let claim = plan.claims().next().expect("one claim");
    match &claim.action {
        super::Action::Claim { run_id, expires_at } => {
            assert_eq!(*expires_at, at(90));
            assert_eq!(
                run_id,
                &crate::model::RunId::for_claim(&snap.tick_id, &crate::model::TaskId::from("a"))
            );
        }
        other => panic!("expected a claim, got {other:?}"),
    }
}

/// DESIGN §9 budgets: a day over `per_day_usd` starts nothing until midnight UTC; a task over
/// `per_task_usd` waits while others run; raising a budget lifts it; 0 turns a budget off.
#[test]
fn budgets_hold_runs_back_and_say_how_to_lift_them() {
    let with_spend = |today: f64, a: f64| {
        let mut snap = snapshot(
            vec![task("a"), task("b").with(|t| t.priority = -1)],
            vec![],
            vec![],
        );
        snap.observations.spend.today_usd = today;
        snap.observations
            .spend
            .by_family
            .insert(crate::model::TaskId("a".into()), a);
        snap
    };
    let with_budget = |mut snap: super::Snapshot, usd: f64| {
        snap.observations
            .spend
            .task_budgets
            .insert(crate::model::TaskId("a".into()), usd);
        snap
    };
    let budgets = |day: f64, task: f64| {
        let mut c = config(2, 2);
        c.budget.per_day_usd = day;
        c.budget.per_task_usd = task;
        c
    };
    #[rustfmt::skip]
    let cases: Vec<(&str, super::Snapshot, Config, &[&str], &str)> = vec![
        ("under both", with_spend(1.0, 1.0), budgets(50.0, 5.0), &["a", "b"], ""),
        ("the day is spent", with_spend(50.0, 1.0), budgets(50.0, 5.0), &[], "today's spend $50.00 reached budget.per_day_usd $50.00: runs start again at 2026-11-22T00:00:00Z"),
        ("the task is spent", with_spend(6.0, 5.5), budgets(50.0, 5.0), &["b"], "this task's family (it, its reworks and AutoFixes) spent $5.50 over its attempts and reviews, its budget.per_task_usd is $5.00: the budget holds it"),
        ("the task budget raised", with_spend(6.0, 5.5), budgets(50.0, 10.0), &["a", "b"], ""),
        ("budgets off", with_spend(500.0, 500.0), budgets(0.0, 0.0), &["a", "b"], ""),
        ("a budget set for the task replaces the default", with_budget(with_spend(6.0, 5.5), 8.0), budgets(50.0, 5.0), &["a", "b"], ""),
        ("a lower budget set for the task holds it", with_budget(with_spend(1.0, 2.5), 2.0), budgets(50.0, 5.0), &["b"], "the budget set for it is $2.00: the budget holds it; raise it (`/opentiger budget <usd>`"),
    ];
    for (name, snap, config, claims, reason) in cases {
        let plan = plan_with(&snap, &config);
        assert_eq!(claimed(&plan), *claims, "{name}");
        let all = reasons(&plan, "a").join(" | ");
        assert!(all.contains(reason), "{name}: {all}");
        // Held for a budget is what makes the task `paused` (issue 17 item 5).
        let a = crate::model::TaskId("a".into());
        let hold = plan.budget_hold(&a).map(|(_, why)| why);
        assert_eq!(hold.is_some(), !claims.contains(&"a"), "{name}: {hold:?}");
        assert!(hold.is_none_or(|h| h.contains(reason)), "{name}: {hold:?}");
    }
}

/// Issue 17: a paused repository claims nothing and runs no planner; every queued task says
/// who paused it and how to resume; recovery and reviews go on.
#[test]
fn a_paused_repository_claims_nothing_new() {
    let mut snap = snapshot(
        vec![task("a"), task("b"), task("f").status(TaskStatus::Failed)],
        vec![],
        vec![],
    );
    snap.observations.paused_by = Some("bob".into());
    let plan = plan_with(&snap, &config(3, 3));
    assert!(claimed(&plan).is_empty());
    assert!(!plan.decisions.iter().any(|d| d.rule.starts_with("planner")));
    for id in ["a", "b"] {
        let all = reasons(&plan, id).join(" | ");
        assert!(
            all.contains("paused by @bob") && all.contains("/opentiger resume"),
            "{id}: {all}"
        );
    }
    // Recovery still decides for the failed task (it is requeued, not claimed).
    assert!(!reasons(&plan, "f").is_empty());
    snap.observations.paused_by = None;
    assert_eq!(claimed(&plan_with(&snap, &config(3, 3))).len(), 2);
}

/// Issue 9: an executor parked on a quota is not a task waiting on one: the quota throttle
/// (one run at a time) stays off, and the plan says which executor is parked until when.
#[test]
fn a_parked_executor_alone_does_not_throttle() {
    use crate::engine::fallback::ExecutorWait;
    let mut snap = snapshot(vec![task("a"), task("b")], vec![], vec![]);
    for (key, minutes) in [("claude-code", 30), ("codex", -5)] {
        let wait = ExecutorWait {
            until: at(minutes),
            hits: 1,
            reason: "task q: 429".into(),
            config: None,
        };
        snap.observations.executor_waits.insert(key.into(), wait);
    }
    let plan = plan_with(&snap, &config(3, 3));
    let mut ids = claimed(&plan);
    ids.sort();
    assert_eq!(ids, ["a", "b"]);
    let parked: Vec<_> = plan
        .decisions
        .iter()
        .filter(|d| d.rule == "executor.quota_wait")
        .collect();
    assert_eq!(parked.len(), 1, "a park that ended is not shown");
    assert_eq!(
        parked[0].action,
        super::Action::Wait {
            until: Some(at(30))
        }
    );
    assert!(
        parked[0].reason.starts_with(
            "executor claude-code waits on quota until 2026-11-21T12:30:00Z (task q: 429)"
        ),
        "{}",
        parked[0].reason
    );
}

/// Issue 15: a queued task whose checks cannot run is never claimed; it waits for a person with
/// the reason and the commands that move it on, and the other tasks are dispatched as usual.
#[test]
fn a_task_whose_checks_cannot_run_waits_for_a_person() {
    let mut snap = snapshot(vec![task("bad"), task("good")], vec![], vec![]);
    snap.observations
        .unrunnable
        .insert("bad".into(), "commands entry `a | b`: found `|`".into());
    let plan = plan_with(&snap, &config(2, 2));
    assert_eq!(claimed(&plan), ["good"]);
    assert!(
        writes(&plan).contains(&"dispatch.unrunnable bad -> blocked(awaiting_human)".to_string()),
        "{:?}",
        writes(&plan)
    );
    let why = reasons(&plan, "bad").join(" | ");
    assert!(
        why.contains("found `|`") && why.contains("opentiger task retry bad"),
        "{why}"
    );
}

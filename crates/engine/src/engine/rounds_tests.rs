//! Table tests of the rounds' rules (issue 38): what fits before the deadline, the bounds of
//! each kind of work, which plans start work, the review window, and how a later round's plan
//! counts what the tick's earlier rounds did.

use super::*;
use crate::config::{AgentConfig, Config, WhenChanged};
use crate::engine::testkit::*;
use crate::engine::verdict::{decide_verdict, JudgeConclusion, Lineage};
use crate::engine::HoldKind;
use crate::model::{AttemptKey, BlockReason, Mode, Role, RunStatus, TaskState};

fn so_far(rounds: u32, deadline_in: Option<i64>) -> TickSoFar {
    TickSoFar {
        rounds,
        deadline: deadline_in.map(at),
        ..TickSoFar::default()
    }
}

/// A case of `fits`: name, what the tick did so far, minutes already planned this round, the
/// bound (minutes), and `Err((bound, left))` in minutes.
type FitCase = (&'static str, TickSoFar, i64, i64, Option<(i64, i64)>);

#[test]
fn work_fits_when_its_bound_ends_before_the_deadline() {
    #[rustfmt::skip]
    let cases: &[FitCase] = &[
        // name, so far, minutes already planned this round, bound (min), Err((bound, left))
        ("no deadline: anything fits", so_far(3, None), 0, 500, None),
        ("exactly the time left", so_far(1, Some(40)), 0, 40, None),
        ("a minute too long", so_far(1, Some(40)), 0, 41, Some((41, 40))),
        ("after work planned this round", so_far(1, Some(40)), 30, 11, Some((11, 10))),
        ("second piece of the first round", so_far(0, Some(40)), 30, 11, Some((11, 10))),
        ("the tick's first piece always starts", so_far(0, Some(40)), 0, 90, None),
        ("past the deadline", so_far(2, Some(-5)), 0, 1, Some((1, -5))),
    ];
    for (name, so_far, planned, bound, expected) in cases {
        let got = fits(so_far, planned * MINUTE, bound * MINUTE, NOW)
            .err()
            .map(|t| (t.bound / MINUTE, t.left / MINUTE));
        assert_eq!(got, *expected, "case `{name}`");
    }
}

fn config_with(f: impl FnOnce(&mut Config)) -> Config {
    let mut c = Config {
        mode: Mode::LocalGit,
        ..Config::default()
    };
    f(&mut c);
    c
}

fn timeout(minutes: f64) -> AgentConfig {
    AgentConfig {
        timeout_minutes: Some(minutes),
        ..AgentConfig::default()
    }
}

#[test]
fn a_bound_is_the_agents_timeout_plus_the_verification_allowance() {
    let plain = task("a");
    let with_commands = task("b").with(|t| t.commands = vec!["cargo build && cargo test".into()]);
    #[rustfmt::skip]
    let cases: Vec<(&str, Config, &crate::model::Task, Millis, Millis, Millis)> = vec![
        // name, config, task, run bound, review bound (agent asked), review bound (merge only)
        ("defaults, no commands", config_with(|_| {}), &plain, 30 * MINUTE, 30 * MINUTE, 0),
        ("two commands at 600 s", config_with(|_| {}), &with_commands,
            50 * MINUTE, 50 * MINUTE, 20 * MINUTE),
        ("verify.commands, role and when_changed rules count", config_with(|c| {
            c.verify.commands = vec!["make check".into()];
            c.verify.by_role.insert(Role::Worker, vec!["make lint".into()]);
            c.verify.when_changed = vec![WhenChanged { paths: vec!["docs/**".into()], commands: vec!["make docs".into()] }];
            c.verify.timeout_seconds = 60;
        }), &plain, 33 * MINUTE, 33 * MINUTE, 3 * MINUTE),
        ("the longest executor of the chain", config_with(|c| {
            c.agents.worker = AgentConfig {
                fallbacks: Some(vec![timeout(45.0)]),
                ..timeout(10.0)
            };
        }), &plain, 45 * MINUTE, 30 * MINUTE, 0),
        ("the judge's own timeout; no review agent: checks only", config_with(|c| {
            c.agents.judge = AgentConfig { review: Some(false), ..timeout(5.0) };
        }), &with_commands, 50 * MINUTE, 20 * MINUTE, 20 * MINUTE),
        ("the detection agent reads changes and texts too", config_with(|c| {
            c.scan.agent = true;
            c.agents.detector = timeout(2.0);
        }), &plain, 32 * MINUTE, 32 * MINUTE, 0),
    ];
    for (name, config, task, run, review, merge) in cases {
        assert_eq!(run_bound(task, &config), run, "case `{name}`: run");
        assert_eq!(
            review_bound(task, &config, true),
            review,
            "case `{name}`: review"
        );
        assert_eq!(
            review_bound(task, &config, false),
            merge,
            "case `{name}`: merge only"
        );
    }
    assert_eq!(planner_bound(&config_with(|_| {})), 30 * MINUTE);
    assert_eq!(planner_bound(&config_with(|c| c.planner.agent = false)), 0);
}

#[test]
fn the_review_window_counts_from_the_push_and_defaults_per_mode() {
    let pushed = run("r", "a", RunStatus::Success, at(-6)); // finished at -5
                                                            // name, mode, merge.review_window_minutes, CI gates the merge, open until
    type WindowCase = (&'static str, Mode, Option<u32>, bool, Option<i64>);
    #[rustfmt::skip]
    let cases: &[WindowCase] = &[
        ("github without CI: 10 minutes", Mode::Github, None, false, Some(5)),
        ("github with CI: CI's run is the window", Mode::Github, None, true, None),
        ("github with CI and a window set", Mode::Github, Some(15), true, Some(10)),
        ("local-git default: none", Mode::LocalGit, None, false, None),
        ("local-git with a window", Mode::LocalGit, Some(15), false, Some(10)),
        ("a window that has passed", Mode::Github, Some(5), false, None),
        ("a window of 0 in github mode", Mode::Github, Some(0), false, None),
    ];
    for (name, mode, minutes, ci_gates, until) in cases {
        let config = config_with(|c| {
            c.mode = *mode;
            c.merge.review_window_minutes = *minutes;
        });
        let window = review_window(&config, *ci_gates);
        assert_eq!(
            window_open_until(&pushed, window, NOW),
            until.map(at),
            "case `{name}`"
        );
    }
}

#[test]
fn in_github_mode_a_repository_with_ci_merges_when_ci_passes() {
    let (t, r) = awaiting("a", "r1");
    let config = Config {
        mode: Mode::Github,
        ..Config::default()
    };
    let t = t.with(|t| t.source_pr = Some(7));
    let mut r = r;
    r.pr_number = Some(7);
    r.started_at = at(-6);
    r.finished_at = Some(at(-5));
    let mut snap = snapshot(vec![t], vec![r], vec![]);
    snap.observations
        .pull_requests
        .insert(7, crate::engine::PullState::Open);
    snap.observations
        .pull_checks
        .insert(7, checks_on("r1head", &["test"], &[], &[]));
    let no_ci = plan_with(&snap, &config);
    let after = |p: &Plan| {
        p.decisions.iter().find_map(|d| match &d.action {
            Action::Judge { merge_after, .. } => Some(*merge_after),
            _ => None,
        })
    };
    // Checks seen on the head, but none expected: no CI gates the merge, the window holds it.
    assert_eq!(after(&no_ci), Some(Some(at(5))), "{:#?}", no_ci.decisions);
    snap.observations.expected_checks =
        crate::engine::gate::ExpectedChecks::choose(Some(&["test".to_string()]), &[], &[]);
    let with_ci = plan_with(&snap, &config);
    assert_eq!(after(&with_ci), Some(None), "{:#?}", with_ci.decisions);
}

fn awaiting(id: &str, run_id: &str) -> (crate::model::Task, crate::model::Run) {
    let t = task(id).blocked(BlockReason::AwaitingJudge);
    let mut r = run(run_id, id, RunStatus::Success, at(-11));
    r.head_sha = Some(format!("{run_id}head"));
    (t, r)
}

fn local(window: Option<u32>) -> Config {
    config_with(|c| c.merge.review_window_minutes = window)
}

#[test]
fn reviews_within_the_window_approve_and_the_merge_waits_for_it() {
    struct Case {
        name: &'static str,
        config: Config,
        approved: bool,
        tick: TickSoFar,
        expect: &'static [&'static str],
        rule: &'static str,
        reason_has: &'static str,
        merge_after: Option<Option<i64>>,
    }
    #[rustfmt::skip]
    let cases = vec![
        Case { name: "no window: review and merge at once", config: local(None), approved: false,
            tick: TickSoFar::default(), expect: &["judge.review a judge r1"], rule: "judge.review",
            reason_has: "not judged yet", merge_after: Some(None) },
        Case { name: "window open: review now, merge after it", config: local(Some(30)), approved: false,
            tick: TickSoFar::default(), expect: &["judge.review a judge r1"], rule: "judge.review",
            reason_has: "merges after the review window, at", merge_after: Some(Some(20)) },
        Case { name: "approved, window open: a named wait, nothing spent", config: local(Some(30)), approved: true,
            tick: TickSoFar::default(), expect: &[], rule: WINDOW_RULE,
            reason_has: "`opentiger task cancel a` or `opentiger task retry a` before then is heard", merge_after: None },
        Case { name: "approved, window passed: merge without a new review", config: local(Some(5)), approved: true,
            tick: TickSoFar::default(), expect: &["judge.review a judge r1"], rule: "judge.review",
            reason_has: "was approved on this head: merge it, with no second review", merge_after: Some(None) },
        Case { name: "the head was reviewed earlier in this tick", config: local(None), approved: false,
            tick: TickSoFar { rounds: 1, reviewed: [(RunId::from("r1"), "r1head".to_string())].into(), ..TickSoFar::default() },
            expect: &[], rule: REVIEWED_RULE, reason_has: "looked at again next tick", merge_after: None },
        Case { name: "the review does not fit in the tick's time", config: local(None), approved: false,
            tick: so_far(1, Some(20)), expect: &[], rule: TIME_RULE,
            reason_has: "its review may take 30 min", merge_after: None },
        Case { name: "a merge only needs the time of its checks", config: local(Some(5)), approved: true,
            tick: so_far(1, Some(1)), expect: &["judge.review a judge r1"], rule: "judge.review",
            reason_has: "merge it", merge_after: Some(None) },
    ];
    for c in cases {
        let (t, r) = awaiting("a", "r1");
        let mut snap = snapshot(vec![t], vec![r], vec![]);
        if c.approved {
            snap.observations
                .judge_approved
                .insert("r1head".to_string());
        }
        snap.observations.tick = c.tick;
        let plan = plan_with(&snap, &c.config);
        assert_eq!(
            writes(&plan),
            c.expect,
            "case `{}`: {:#?}",
            c.name,
            plan.decisions
        );
        let a = TaskId::from("a");
        let decision = plan
            .for_task(&a)
            .next()
            .unwrap_or_else(|| panic!("case `{}`: no decision", c.name));
        assert_eq!(decision.rule, c.rule, "case `{}`", c.name);
        assert!(
            decision.reason.contains(c.reason_has),
            "case `{}`: {}",
            c.name,
            decision.reason
        );
        let after = match &decision.action {
            Action::Judge { merge_after, .. } => Some(merge_after.map(|t| t.minus(NOW) / MINUTE)),
            _ => None,
        };
        assert_eq!(after, c.merge_after, "case `{}`", c.name);
    }
}

#[test]
fn an_approval_inside_the_window_spends_no_retry_and_waits_for_its_end() {
    let (t, _) = awaiting("a", "r1");
    let t = t
        .attempts(AttemptKey::Judge, 1)
        .attempts(AttemptKey::Merge, 1);
    let conclusion = JudgeConclusion::WindowOpen {
        until: at(20),
        summary: "fine".into(),
    };
    let d = decide_verdict(&t, &conclusion, &Lineage::fresh(&t), &local(Some(30)), NOW);
    assert_eq!(d.to, TaskState::blocked(BlockReason::AwaitingJudge));
    assert_eq!(d.attempts, None, "no judge retry or merge attempt spent");
    assert!(d.rejudge && d.create.is_none());
    assert_eq!(d.next_attempt_at, Some(at(20)));
    assert!(
        d.reason
            .contains("approved: fine; merges after the review window"),
        "{}",
        d.reason
    );
}

#[test]
fn a_later_round_counts_the_ticks_runs_families_and_planner() {
    let queued = |id: &str| task(id).with(|t| t.priority = 50);
    let config = config_with(|c| {
        c.limits.max_runs_per_tick = 3;
        c.agents.worker.count = Some(3);
    });
    #[rustfmt::skip]
    let cases: Vec<(&str, TickSoFar, &[&str], Option<HoldKind>)> = vec![
        ("first round: three slots", TickSoFar::default(),
            &["dispatch.claim a claim", "dispatch.claim b claim", "dispatch.claim c claim"], None),
        ("two runs earlier: one left", TickSoFar { rounds: 1, runs: 2, ..TickSoFar::default() },
            &["dispatch.claim a claim"], Some(HoldKind::TickCap)),
        ("the cap reached in earlier rounds", TickSoFar { rounds: 2, runs: 3, ..TickSoFar::default() },
            &[], Some(HoldKind::TickCap)),
        ("a's family had its turn: the others first", TickSoFar {
            rounds: 1, runs: 1, families: [TaskId::from("a")].into(), ..TickSoFar::default() },
            &["dispatch.claim b claim", "dispatch.claim c claim"], Some(HoldKind::FamilyTurn)),
        ("time for one more run only", so_far(1, Some(40)),
            &["dispatch.claim a claim"], Some(HoldKind::TickTime)),
        ("the tick's spend reached budget.per_tick_usd", TickSoFar {
            rounds: 1, spent_usd: 2.0, ..TickSoFar::default() }, &[], Some(HoldKind::Budget)),
    ];
    for (name, tick, expect, held) in cases {
        let mut snap = snapshot(vec![queued("a"), queued("b"), queued("c")], vec![], vec![]);
        snap.observations.tick = tick;
        let mut config = config.clone();
        config.budget.per_tick_usd = Some(1.5);
        let plan = plan_with(&snap, &config);
        assert_eq!(
            writes(&plan),
            expect,
            "case `{name}`: {:#?}",
            plan.decisions
        );
        let kinds: Vec<HoldKind> = plan.holds.values().map(|h| h.kind).collect();
        match held {
            Some(kind) => assert!(kinds.contains(&kind), "case `{name}`: {kinds:?}"),
            None => assert!(kinds.is_empty(), "case `{name}`: {kinds:?}"),
        }
        assert_eq!(starts_work(&plan), !expect.is_empty(), "case `{name}`");
    }
}

#[test]
fn a_run_claimed_again_in_a_later_round_gets_its_own_id() {
    let snap = snapshot(vec![task("a")], vec![], vec![]);
    let first = plan_with(&snap, &local(None));
    let mut later = snap.clone();
    later.observations.tick = TickSoFar {
        rounds: 2,
        ..TickSoFar::default()
    };
    let second = plan_with(&later, &local(None));
    let id = |p: &Plan| {
        p.claims()
            .find_map(|d| match &d.action {
                Action::Claim { run_id, .. } => Some(run_id.clone()),
                _ => None,
            })
            .expect("a claim")
    };
    assert_ne!(id(&first), id(&second));
    assert_eq!(
        second.bound_ms,
        30 * MINUTE,
        "the round's work may take its run's bound"
    );
}

#[test]
fn the_planner_runs_once_per_tick_and_a_plan_of_waits_starts_nothing() {
    let mut snap = snapshot(vec![], vec![], vec![]);
    snap.observations.requirement_present = true;
    snap.observations.plan_signature = Some("sig".into());
    let config = local(None);
    let plan = plan_with(&snap, &config);
    assert!(starts_work(&plan), "{:#?}", plan.decisions);
    snap.observations.tick = TickSoFar {
        rounds: 1,
        planned: true,
        ..TickSoFar::default()
    };
    let again = plan_with(&snap, &config);
    assert!(!starts_work(&again), "{:#?}", again.decisions);
    assert!(why_no_round(&again).contains("waits for something outside"));
    snap.observations.tick = so_far(1, Some(10));
    let late = plan_with(&snap, &config);
    assert!(!starts_work(&late) && stopped_by_time(&late));
    assert!(
        why_no_round(&late).contains("the planner may take 30 min"),
        "{}",
        why_no_round(&late)
    );
}

#[test]
fn effects_on_github_are_no_progress_but_may_take_a_round() {
    let config = Config {
        mode: Mode::Github,
        ..Config::default()
    };
    let planned = task("a").blocked(BlockReason::IssueLinking);
    let plan = plan_with(&snapshot(vec![planned], vec![], vec![]), &config);
    assert_eq!(writes(&plan), ["forge.open_issue a open issue"]);
    assert!(has_effects(&plan) && !starts_work(&plan));
    let queued = plan_with(&snapshot(vec![task("b")], vec![], vec![]), &config);
    assert!(!has_effects(&queued) && starts_work(&queued));
}

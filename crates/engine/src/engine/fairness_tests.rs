//! Table tests of the fair queue (issue 27): aging from the last run, families taking turns,
//! one run per family per tick while others wait, the documented bound, and the holds that say
//! what kept a queued task back.

use super::dispatch::score;
use super::fairness::{family_of, starts_within, waiting_since, Families};
use super::testkit::*;
use super::{HoldKind, Plan, Snapshot};
use crate::config::Config;
use crate::model::{BlockReason, Lane, Role, Run, RunStatus, Task, TaskId, TaskKind, TaskStatus};
use crate::time::{Timestamp, HOUR, MINUTE};

fn config(max_runs: u32, workers: u32) -> Config {
    let mut c = Config::default();
    c.limits.max_runs_per_tick = max_runs;
    c.agents.worker.count = Some(workers);
    c.agents.docser.count = Some(workers);
    c
}

fn claimed(plan: &Plan) -> Vec<String> {
    let mut ids: Vec<String> = plan
        .claims()
        .filter_map(|d| d.task_id.as_ref().map(|t| t.to_string()))
        .collect();
    ids.sort();
    ids
}

/// name, tasks, runs, config, claimed ids, (task, the kind of its hold).
type TurnCase = (
    &'static str,
    Vec<Task>,
    Vec<Run>,
    Config,
    &'static [&'static str],
    &'static [(&'static str, HoldKind)],
);

/// name, tasks, ids of running (leased) tasks, config, task, its hold's kind, a piece of its
/// fix, a piece of the plan's held-back line (or none).
type HoldCase = (
    &'static str,
    Vec<Task>,
    Vec<&'static str>,
    Config,
    &'static str,
    HoldKind,
    &'static str,
    Option<&'static str>,
);

fn child_of(id: &str, parent: &str, kind: TaskKind) -> Task {
    task(id).with(|t| {
        t.parent_task_id = Some(TaskId::from(parent));
        t.kind = kind;
        t.rework_depth = u32::from(kind == TaskKind::Rework);
    })
}

#[test]
fn age_counts_from_the_last_run_not_from_creation() {
    let old = task("a").with(|t| t.created_at = NOW.plus(-30 * HOUR));
    let ran = |minutes: i64| run("r", "a", RunStatus::Failed, at(minutes));
    #[rustfmt::skip]
    let cases: &[(&str, Vec<Run>, f64)] = &[
        ("never ran: age since creation, capped", vec![], 20.0),
        ("ran an hour ago: two points", vec![ran(-60)], 2.0),
        ("ran just now: no age", vec![ran(0)], 0.0),
        ("the newest run counts", vec![ran(-600), ran(-90)], 3.0),
    ];
    for (name, runs, expected) in cases {
        let refs: Vec<&Run> = runs.iter().collect();
        let since = waiting_since(&old, &refs);
        assert_eq!(score(&old, since, NOW), *expected, "{name}");
    }
}

#[test]
fn a_family_is_a_task_with_its_descendants() {
    let tasks: std::collections::BTreeMap<TaskId, Task> = [
        task("root"),
        child_of("fix", "root", TaskKind::Autofix),
        child_of("rework", "fix", TaskKind::Rework),
        child_of("orphan", "gone", TaskKind::Autofix),
        task("other"),
    ]
    .into_iter()
    .map(|t| (t.id.clone(), t))
    .collect();
    #[rustfmt::skip]
    let cases = [("root", "root"), ("fix", "root"), ("rework", "root"), ("orphan", "gone"), ("other", "other")];
    for (id, family) in cases {
        assert_eq!(
            family_of(&tasks, &TaskId::from(id)).as_str(),
            family,
            "{id}"
        );
    }
}

#[test]
fn families_take_turns() {
    let parent = |id: &str| task(id).blocked(BlockReason::NeedsRework);
    let failed = |id: &str, task: &str, minutes: i64| run(id, task, RunStatus::Failed, at(minutes));
    #[rustfmt::skip]
    let cases: Vec<TurnCase> = vec![
        ("a rework chain waits behind a family that never ran, whatever its priority",
            vec![parent("a"), child_of("w", "a", TaskKind::Rework).with(|t| t.priority = 50), task("p")],
            vec![failed("r1", "a", -30)], config(1, 1), &["p"], &[("w", HoldKind::TickCap)]),
        ("the family that ran longest ago goes first",
            vec![task("x"), task("y")],
            vec![failed("rx", "x", -5), failed("ry", "y", -20)], config(1, 1), &["y"], &[("x", HoldKind::TickCap)]),
        ("one run per family while another family waits",
            vec![parent("a"), child_of("c1", "a", TaskKind::AutofixConflict).with(|t| t.priority = 9), child_of("c2", "a", TaskKind::Autofix), task("b")],
            vec![], config(2, 3), &["b", "c1"], &[("c2", HoldKind::FamilyTurn)]),
        ("a family takes a second slot when no other family waits",
            vec![parent("a"), child_of("c1", "a", TaskKind::AutofixConflict), child_of("c2", "a", TaskKind::Autofix)],
            vec![], config(2, 3), &["c1", "c2"], &[]),
        ("the same turn: the score decides",
            vec![task("lo").with(|t| t.priority = 1), task("hi").with(|t| t.priority = 9)],
            vec![], config(1, 3), &["hi"], &[("lo", HoldKind::TickCap)]),
    ];
    for (name, tasks, runs, config, expect, holds) in cases {
        let plan = plan_with(&snapshot(tasks, runs, vec![]), &config);
        assert_eq!(
            claimed(&plan),
            *expect,
            "case `{name}`: {:#?}",
            plan.decisions
        );
        for (id, kind) in holds {
            let hold = plan.holds.get(&TaskId::from(*id));
            assert_eq!(
                hold.map(|h| h.kind),
                Some(*kind),
                "case `{name}`: {id}: {hold:?}"
            );
        }
    }
}

/// One adversarial tick loop: eight families whose every run fails and spawns a rework child of
/// higher priority at once (no cooldown), a new high-priority issue every tick, and one plain
/// task queued last. It starts within `starts_within(8, R)` ticks.
#[test]
fn a_never_run_task_starts_within_the_bound_whatever_others_do() {
    for runs_per_tick in [1u32, 2, 3] {
        let mut now = NOW;
        let mut tasks: Vec<Task> = (0..8)
            .map(|i| task(&format!("bad{i}")).with(|t| t.created_at = now.plus(-(10 - i) * MINUTE)))
            .collect();
        tasks.push(task("plain").with(|t| t.created_at = now));
        let mut runs: Vec<Run> = Vec::new();
        let bound = starts_within(8, runs_per_tick).expect("runs start");
        let mut started_at_tick = None;
        for tick in 1..=bound + 5 {
            now = now.plus(MINUTE);
            let snap = Snapshot {
                tasks: tasks.clone(),
                runs: runs.clone(),
                ..snapshot(vec![], vec![], vec![])
            };
            let plan = super::plan(&snap, &config(runs_per_tick, runs_per_tick), now);
            let ids = claimed(&plan);
            if ids.iter().any(|id| id == "plain") {
                started_at_tick = Some(tick);
                break;
            }
            for id in &ids {
                // The run fails; the task is reworked by a child with more priority.
                let mut r = run(&format!("r{tick}-{id}"), id, RunStatus::Failed, now);
                r.finished_at = Some(now);
                runs.push(r);
                let Some(t) = tasks.iter_mut().find(|t| t.id.as_str() == id) else {
                    continue;
                };
                t.status = TaskStatus::Blocked;
                t.block_reason = Some(BlockReason::NeedsRework);
                let priority = t.priority + 5;
                let child = child_of(&format!("{id}+"), id, TaskKind::Rework).with(|c| {
                    c.priority = priority;
                    c.created_at = now;
                });
                tasks.push(child);
            }
            // A stream of new, urgent issues.
            tasks.push(task(&format!("new{tick}")).with(|t| {
                t.priority = 100;
                t.created_at = now;
            }));
        }
        let tick = started_at_tick.expect("the plain task started");
        assert!(
            tick <= bound,
            "R={runs_per_tick}: started at tick {tick}, bound {bound}"
        );
    }
}

#[test]
fn the_bound_is_the_families_ahead_over_the_runs_per_tick() {
    #[rustfmt::skip]
    let cases = [((8, 1), Some(9)), ((8, 2), Some(5)), ((8, 10), Some(1)), ((0, 1), Some(1)), ((3, 0), None)];
    for ((ahead, per_tick), expected) in cases {
        assert_eq!(
            starts_within(ahead, per_tick),
            expected,
            "{ahead} ahead, {per_tick}/tick"
        );
    }
}

#[test]
fn families_count_the_runs_they_paid_for() {
    let tasks: std::collections::BTreeMap<TaskId, Task> =
        [task("a"), child_of("w", "a", TaskKind::Rework), task("b")]
            .into_iter()
            .map(|t| (t.id.clone(), t))
            .collect();
    let list = [
        run("1", "a", RunStatus::Failed, at(-30)),
        run("2", "w", RunStatus::Failed, at(-20)),
        run("3", "w", RunStatus::Running, at(-1)),
    ];
    let mut runs: std::collections::BTreeMap<TaskId, Vec<&Run>> = Default::default();
    for r in &list {
        runs.entry(r.task_id.clone()).or_default().push(r);
    }
    let families = Families::new(&tasks, &runs);
    assert_eq!(families.paid_runs.get(&TaskId::from("a")), Some(&3));
    assert_eq!(families.paid_runs.get(&TaskId::from("b")), Some(&0));
    assert_eq!(families.last_run.get(&TaskId::from("a")), Some(&at(-1)));
    let turn: Timestamp = families.turn(&tasks[&TaskId::from("b")]);
    assert_eq!(turn, at(-60), "never ran: its creation");
}

/// Issue 27 item 3: each queued task not claimed says what held it and what lets it run; when
/// fewer runs start than the tick allows, one line says what held the rest.
#[test]
fn holds_say_what_kept_a_task_back_and_what_lifts_it() {
    let running = |id: &str| task(id).status(TaskStatus::Running);
    let leased = |id: &str| {
        (
            run(&format!("r-{id}"), id, RunStatus::Running, at(-1)),
            lease(id, &format!("r-{id}"), "local:box:1", at(60)),
        )
    };
    #[rustfmt::skip]
    let cases: Vec<HoldCase> = vec![
        ("one worker for ten runs a tick", vec![task("a"), task("b"), task("c")], vec![], config(10, 1),
            "b", HoldKind::RoleSlots, "raise agents.worker.count",
            Some("started 1 of limits.max_runs_per_tick = 10: 2 queued task(s) held back: 2 by all worker slots busy (1/1, agents.worker.count) (raise agents.worker.count to run more worker tasks at once)")),
        ("same target area as a running task", vec![running("r").with(|t| t.target_area = Some("path:src".into())), task("a").with(|t| t.target_area = Some("path:src".into()))], vec!["r"], config(4, 4),
            "a", HoldKind::TargetArea, "`touches:`", Some("0 of limits.max_runs_per_tick = 4: 1 queued task(s) held back: 1 by target area `path:src` is busy with r")),
        ("the docs lane is full", vec![running("d1").with(|t| { t.role = Role::Docser; t.lane = Lane::Docser }), task("d2").with(|t| { t.role = Role::Docser; t.lane = Lane::Docser }), task("f")], vec!["d1"], config(3, 3),
            "d2", HoldKind::LaneFull, "raise limits.docser_lane_max", Some("1 by lane docser is full (1/1)")),
        ("quota throttle", vec![running("r"), task("q").blocked(BlockReason::QuotaWait).next_at(at(30)), task("a")], vec!["r"], config(3, 3),
            "a", HoldKind::QuotaThrottle, "fallbacks", Some("1 by 1 task(s) wait on quota")),
        ("the tick's cap alone says nothing more", vec![task("a"), task("b")], vec![], config(1, 3),
            "b", HoldKind::TickCap, "raise limits.max_runs_per_tick", None),
        ("a cooldown is the task's own wait", vec![task("a").next_at(at(5))], vec![], config(3, 3),
            "a", HoldKind::Cooldown, "opentiger task retry a", None),
        ("a dependency", vec![task("a").deps(&["d"]), task("d").blocked(BlockReason::AwaitingHuman)], vec![], config(3, 3),
            "a", HoldKind::Dependency, "dependencies are done", None),
    ];
    for (name, tasks, running_ids, config, id, kind, fix, line) in cases {
        let (runs, leases): (Vec<_>, Vec<_>) = running_ids.iter().map(|id| leased(id)).unzip();
        let plan = plan_with(&snapshot(tasks, runs, leases), &config);
        let hold = plan
            .holds
            .get(&TaskId::from(id))
            .unwrap_or_else(|| panic!("{name}: no hold for {id}"));
        assert_eq!(hold.kind, kind, "{name}");
        assert!(hold.fix.contains(fix), "{name}: {hold:?}");
        match line {
            Some(needle) => {
                let got = plan.held_back().unwrap_or_default();
                assert!(got.contains(needle), "{name}: `{needle}` not in `{got}`");
            }
            None => assert_eq!(plan.held_back(), None, "{name}"),
        }
    }
}

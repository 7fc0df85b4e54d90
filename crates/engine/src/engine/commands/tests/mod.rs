//! The comment commands' rules, table-tested by what they decide: one file per rule (parsing,
//! permissions, the verbs, each place and command with rules of its own), over the helpers
//! here that build a state and decide one command on it. Not for: reading the comment feed or
//! applying the effects (the tick's, tested end to end in `tests/`).

use std::collections::BTreeMap;

use super::*;
use crate::engine::testkit::{task, TaskExt};

mod dashboard;
mod held;
mod hold;
mod parse;
mod permissions;
mod plan;
mod replan;
mod research;
mod retry;
mod verbs;

struct World {
    tasks: BTreeMap<TaskId, Task>,
    spent: BTreeMap<TaskId, f64>,
    budgets: BTreeMap<TaskId, f64>,
    origins: BTreeMap<TaskId, Origin>,
    reports: BTreeMap<TaskId, ResearchReport>,
    last_runs: BTreeMap<TaskId, LastRun>,
}

fn world(tasks: Vec<Task>) -> World {
    World {
        tasks: tasks.into_iter().map(|t| (t.id.clone(), t)).collect(),
        spent: BTreeMap::new(),
        budgets: BTreeMap::new(),
        origins: BTreeMap::new(),
        reports: BTreeMap::new(),
        last_runs: BTreeMap::new(),
    }
}

fn with(id: &str, state: TaskState, issue: Option<u64>) -> Task {
    let mut t = task(id);
    t.status = state.status;
    t.block_reason = state.reason;
    t.issue_number = issue;
    t
}

fn on(number: u64, tasks: &[&str]) -> Place {
    Place::Thread {
        number,
        tasks: tasks.iter().map(|t| TaskId(t.to_string())).collect(),
    }
}

fn run(w: &World, body: &str, place: Place, allowed: bool, paused: Option<&str>) -> Decision {
    let parsed = parse(body).expect("a command");
    decide(
        &parsed,
        &Request {
            author: "alice",
            allowed,
            refused_before: false,
            place,
            tasks: &w.tasks,
            repo_paused_by: paused,
            spent: &w.spent,
            budgets: &w.budgets,
            default_budget: 5.0,
            origins: &w.origins,
            now: crate::engine::testkit::NOW,
            checkbox: false,
            reports: &w.reports,
            last_runs: &w.last_runs,
        },
    )
}

fn moved_to(d: &Decision) -> Vec<(String, TaskState)> {
    d.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Move { task, to, .. } => Some((task.0.clone(), *to)),
            _ => None,
        })
        .collect()
}

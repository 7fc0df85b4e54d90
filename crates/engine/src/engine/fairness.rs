//! The fair queue (issue 27): task families, whose turn it is, how long a task has waited, and
//! what a family has paid for.
//!
//! A **family** is a task with every AutoFix, rework, conflict-fix and recreate task descended
//! from it (`parent_task_id`, followed to the oldest ancestor the state holds). The rule:
//! families take turns, round-robin. A family's **turn** is when it last started a run, or, if it
//! never ran, when its oldest queued task was created; the family whose turn is oldest goes first,
//! and no family starts a second run in a tick while another family with a runnable task has not
//! started one. Within a family, and between families whose turn is the same instant, the score
//! (priority, risk, age, timebox) decides. So a family that just ran goes behind every family
//! waiting, whatever its priority: a rework chain cannot jump ahead of work that never ran.
//!
//! The bound: a queued task that can run (dependencies done, no cooldown, its target area free)
//! waits behind at most the families whose turn was older than its own when it was queued, each
//! once; with `R` runs starting per tick, it starts within ⌈(F + 1) / R⌉ ticks, `F` the number of
//! other families with queued work at that moment (`starts_within`).
//!
//! Not for: which of the picked tasks may run together (`dispatch`), or retry budgets
//! (`recovery`).

use std::collections::BTreeMap;

use crate::model::{Run, RunStatus, Task, TaskId};
use crate::time::Timestamp;

/// The family of `id`: its oldest ancestor the state holds (itself when it has none). A cycle
/// in `parent_task_id` (never made by the engine) stops at the first repeat.
pub fn family_of(tasks: &BTreeMap<TaskId, Task>, id: &TaskId) -> TaskId {
    let mut current = id.clone();
    let mut seen = vec![current.clone()];
    while let Some(parent) = tasks.get(&current).and_then(|t| t.parent_task_id.clone()) {
        if seen.contains(&parent) {
            break;
        }
        seen.push(parent.clone());
        if !tasks.contains_key(&parent) {
            // The ancestor is not in the state any more: it still names the family.
            return parent;
        }
        current = parent;
    }
    current
}

/// When a task last started a run, from its runs (any order).
pub fn last_started(runs: &[&Run]) -> Option<Timestamp> {
    runs.iter().map(|r| r.started_at).max()
}

/// Since when a task has waited without a run: its last run's start, else its creation. The age
/// term of the score counts from here (issue 27: waiting, not existing, earns the age).
pub fn waiting_since(task: &Task, runs: &[&Run]) -> Timestamp {
    last_started(runs).map_or(task.created_at, |t| t.max(task.created_at))
}

/// Runs that cost an agent: every run that started one (a run cancelled before its agent
/// started still counts: its claim was paid for in time and a slot).
pub fn paid(run: &Run) -> bool {
    match run.status {
        RunStatus::Running | RunStatus::Success | RunStatus::Failed | RunStatus::Cancelled => true,
    }
}

/// Each family's turn, and how many runs it has paid for, over the tasks and runs given.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Families {
    /// Each task's family.
    pub of: BTreeMap<TaskId, TaskId>,
    /// When each family last started a run (families that never ran are absent).
    pub last_run: BTreeMap<TaskId, Timestamp>,
    /// Runs each family paid for.
    pub paid_runs: BTreeMap<TaskId, u32>,
}

impl Families {
    pub fn new(tasks: &BTreeMap<TaskId, Task>, runs: &BTreeMap<TaskId, Vec<&Run>>) -> Families {
        let mut families = Families::default();
        for id in tasks.keys() {
            let family = family_of(tasks, id);
            let own = runs.get(id).map_or(&[][..], Vec::as_slice);
            if let Some(at) = last_started(own) {
                let slot = families.last_run.entry(family.clone()).or_insert(at);
                *slot = (*slot).max(at);
            }
            let count = own.iter().filter(|r| paid(r)).count() as u32;
            *families.paid_runs.entry(family.clone()).or_default() += count;
            families.of.insert(id.clone(), family);
        }
        families
    }

    pub fn family(&self, id: &TaskId) -> TaskId {
        self.of.get(id).cloned().unwrap_or_else(|| id.clone())
    }

    /// The family's turn for a queued task of it: when the family last started a run, else
    /// when the task was created.
    pub fn turn(&self, task: &Task) -> Timestamp {
        self.last_run
            .get(&self.family(&task.id))
            .copied()
            .unwrap_or(task.created_at)
    }
}

/// The documented bound: with `families_ahead` other families holding queued work when a task
/// was queued and `runs_per_tick` runs starting each tick, the task starts within this many
/// ticks (provided it can run: dependencies done, no cooldown, its target area free). A tick
/// that starts nothing has no bound.
pub fn starts_within(families_ahead: u32, runs_per_tick: u32) -> Option<u32> {
    (runs_per_tick > 0).then(|| (families_ahead + 1).div_ceil(runs_per_tick))
}

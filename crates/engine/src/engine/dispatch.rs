//! The dispatcher (spec §2.2 steps 2-5): which queued tasks this tick claims.
//!
//! Filters: checks that cannot run (a person's fix first), cooldown (`next_attempt_at`),
//! dependencies (**Better:** only `done` resolves one; a failed dependency makes its dependents
//! wait), budgets (the family's, the day's, the tick's), the tick's run cap and deadline, the
//! quota throttle, role slots and target-area exclusion. Order (issue 27, changing spec §2.2
//! step 3's plain score order): families take turns (`fairness`: the family that waited longest
//! since its last run first, one run per family per tick while other families wait), then the
//! score (priority × risk + age since the task's last run + short timebox). Lanes: feature first
//! up to its minimum, caps on conflict recovery and docs, and one forced pick when lane caps
//! alone would leave every slot idle. Every queued task not claimed gets a `Hold` (`hold.rs`)
//! saying what held it and what setting lifts it; a paused repository claims nothing.
//!
//! Not for: which executor a claimed run uses (`engine::fallback`), or writing the claim and its
//! lease (`Store::apply_plan`, from `tick::claim`).

use std::collections::{BTreeMap, BTreeSet};

use super::fairness::{waiting_since, Families};
use super::hold::{held_back_line, Hold, HoldKind};
use super::{Action, Working};
use crate::model::{
    BlockReason, Lane, Risk, Role, RunId, Task, TaskId, TaskKind, TaskState, TaskStatus,
};
use crate::time::{Timestamp, HOUR, MINUTE};

/// spec §2.2 step 3: priority×10 × risk multiplier + min(2×waiting hours, 20) + 5 if timebox ≤ 30.
/// The waiting hours count from `waiting_since` (issue 27: the task's last run, else its
/// creation), so a task that keeps running earns no age and one that waits does.
pub fn score(task: &Task, waiting_since: Timestamp, now: Timestamp) -> f64 {
    let risk = match task.risk {
        Risk::Low => 1.5,
        Risk::Medium => 1.0,
        Risk::High => 0.5,
    };
    let hours = now.minus(waiting_since).max(0) as f64 / HOUR as f64;
    let short = if task.timebox_minutes <= 30 { 5.0 } else { 0.0 };
    task.priority as f64 * 10.0 * risk + (2.0 * hours).min(20.0) + short
}

/// What is in flight and what this tick has already picked.
struct Load {
    per_role: BTreeMap<Role, u32>,
    per_lane: BTreeMap<Lane, u32>,
    areas: BTreeMap<String, TaskId>,
    in_flight: u32,
    picked: u32,
    /// Families that started a run this tick.
    families: BTreeSet<TaskId>,
}

impl Load {
    fn add(&mut self, task: &Task) {
        *self.per_role.entry(task.role).or_default() += 1;
        *self.per_lane.entry(task.lane).or_default() += 1;
        if let Some(area) = &task.target_area {
            self.areas.insert(area.clone(), task.id.clone());
        }
        self.in_flight += 1;
    }
}

pub(crate) fn dispatch(w: &mut Working<'_>) {
    let config = w.config;
    let mut load = Load {
        per_role: BTreeMap::new(),
        per_lane: BTreeMap::new(),
        areas: BTreeMap::new(),
        in_flight: 0,
        picked: 0,
        families: BTreeSet::new(),
    };
    for task in w.tasks.values().filter(|t| t.status == TaskStatus::Running) {
        load.add(task);
    }
    // Issue 38: the tick's earlier rounds count: their runs against the cap, their families
    // as having had their turn.
    let so_far = &w.snapshot.observations.tick;
    load.picked = so_far.runs;
    load.families.extend(so_far.families.iter().cloned());
    let tick_cap = config.limits.max_runs_per_tick;
    // spec §2.2 step 2: while any task waits on quota, run one thing at a time. An executor
    // parked on a quota alone does not count (issue 9): its roles' fallbacks run meanwhile, and
    // a role without a free one sends its task to quota_wait, which then counts.
    let quota_waiting = w
        .tasks
        .values()
        .filter(|t| t.state() == TaskState::blocked(BlockReason::QuotaWait))
        .count();

    let mut eligible = Vec::new();
    for id in w.ids_in(TaskState::QUEUED) {
        let task = &w.tasks[&id];
        if task.kind == TaskKind::PrReview {
            continue; // judge-only work (spec §2.2 step 3)
        }
        // Issue 15: a run whose checks cannot run fails after the agent was paid for, and its
        // rework fails the same way; a person fixes the task or the configuration instead.
        if let Some(why) = w.snapshot.observations.unrunnable.get(&id) {
            let reason = format!(
                "not started, its checks cannot run: {why}\n  then: `opentiger task retry {id}` \
                 after fixing the configuration, or `opentiger task cancel {id}` and add it again"
            );
            w.transition(
                &id,
                TaskState::blocked(BlockReason::AwaitingHuman),
                None,
                None,
                "dispatch.unrunnable",
                reason,
            );
            continue;
        }
        if let Some(at) = task.next_attempt_at.filter(|at| *at > w.now) {
            w.hold(
                &id,
                Hold::new(
                    HoldKind::Cooldown,
                    format!("cooldown until {at}"),
                    format!("`opentiger task retry {id}` skips the wait"),
                ),
            );
            w.wait(
                &id,
                Some(at),
                "dispatch.cooldown",
                format!(
                    "queued: waits on its cooldown until {}; `opentiger task retry {id}` skips \
                     the wait",
                    at.relative_to(w.now)
                ),
            );
            continue;
        }
        if let Some(why) = unresolved_dependency(w, task) {
            let hold = Hold::new(
                HoldKind::Dependency,
                why.trim_start_matches("queued: ").to_string(),
                "it starts once its dependencies are done",
            );
            w.hold(&id, hold);
            w.wait(&id, None, "dispatch.dependency", why);
            continue;
        }
        if let Some((until, why)) = over_budget(w, task) {
            let hold = Hold::new(
                HoldKind::Budget,
                why.trim_start_matches("queued: ").to_string(),
                "raise the budget",
            );
            w.hold(&id, hold);
            w.wait(&id, until, BUDGET_WAIT, why);
            continue;
        }
        eligible.push(id);
    }
    let families = Families::new(&w.tasks, &w.runs);
    let now = w.now;
    let key = |id: &TaskId| {
        let task = &w.tasks[id];
        let since = waiting_since(task, w.task_runs(id));
        (families.turn(task), score(task, since, now))
    };
    let keys: BTreeMap<TaskId, (Timestamp, f64)> =
        eligible.iter().map(|id| (id.clone(), key(id))).collect();
    // Issue 27: the family whose turn is oldest first; the score decides within a family and
    // between families whose turn is the same instant.
    eligible.sort_by(|a, b| {
        let (ta, tb) = (&w.tasks[a], &w.tasks[b]);
        let ((turn_a, score_a), (turn_b, score_b)) = (keys[a], keys[b]);
        turn_a
            .cmp(&turn_b)
            .then(score_b.total_cmp(&score_a))
            .then(ta.created_at.cmp(&tb.created_at))
            .then(ta.id.cmp(&tb.id))
    });

    let mut picked: BTreeSet<TaskId> = BTreeSet::new();
    let mut refusals: BTreeMap<TaskId, Hold> = BTreeMap::new();
    // Pass 1 fills the feature lane's minimum, pass 2 gives each family one run in turn order,
    // pass 3 fills what is left in the same order.
    for pass in [Pass::FeatureMinimum, Pass::OnePerFamily, Pass::Rest] {
        for id in &eligible {
            if picked.contains(id) {
                continue;
            }
            let task = &w.tasks[id];
            let family = families.family(id);
            if pass == Pass::FeatureMinimum
                && (task.lane != Lane::Feature
                    || load.per_lane.get(&Lane::Feature).copied().unwrap_or(0)
                        >= config.limits.feature_lane_min)
            {
                continue;
            }
            if pass != Pass::Rest && load.families.contains(&family) {
                refusals.insert(id.clone(), family_turn(&family));
                continue;
            }
            match refusal(w, task, &load, tick_cap, quota_waiting, true) {
                // The slot it missed went to another family's turn: that is what held it.
                Some(hold)
                    if matches!(hold.kind, HoldKind::TickCap | HoldKind::RoleSlots)
                        && refusals
                            .get(id)
                            .is_some_and(|h| h.kind == HoldKind::FamilyTurn) => {}
                Some(hold) => {
                    refusals.insert(id.clone(), hold);
                }
                None => {
                    refusals.remove(id);
                    let task = task.clone();
                    load.add(&task);
                    load.picked += 1;
                    load.families.insert(family);
                    picked.insert(id.clone());
                    let since = waiting_since(&task, w.task_runs(id));
                    claim(w, &task, since, "dispatch.claim");
                }
            }
        }
    }
    // spec §2.2 step 4: lane caps alone must not leave the tick idle.
    if picked.is_empty() {
        if let Some(id) = forced_pick(w, &eligible, &load, tick_cap, quota_waiting) {
            let task = w.tasks[&id].clone();
            refusals.remove(&id);
            load.picked += 1;
            let since = waiting_since(&task, w.task_runs(&id));
            claim(w, &task, since, "dispatch.claim_forced");
        }
    }
    if let Some(line) = held_back_line(load.picked, tick_cap, &refusals) {
        w.decide(None, HELD_BACK, Action::Wait { until: None }, line);
    }
    for (id, hold) in refusals {
        w.wait(
            &id,
            None,
            "dispatch.not_picked",
            format!("queued: {}", hold.text()),
        );
        w.hold(&id, hold);
    }
}

/// The rule of the plan's one line saying what held queued tasks back when fewer runs started
/// than the tick allows (issue 27 item 3).
pub const HELD_BACK: &str = "dispatch.held_back";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Pass {
    FeatureMinimum,
    OnePerFamily,
    Rest,
}

/// The fair queue's hold: the family already started a run this tick.
fn family_turn(family: &TaskId) -> Hold {
    Hold::new(
        HoldKind::FamilyTurn,
        format!("its family ({family}) started a run this tick and other families wait their turn"),
        "families take turns; it runs when a slot is left after every waiting family had one",
    )
}

fn forced_pick(
    w: &Working<'_>,
    eligible: &[TaskId],
    load: &Load,
    tick_cap: u32,
    quota_waiting: usize,
) -> Option<TaskId> {
    for lane in [Lane::Feature, Lane::Docser, Lane::ConflictRecovery] {
        for id in eligible {
            let task = &w.tasks[id];
            if task.lane == lane && refusal(w, task, load, tick_cap, quota_waiting, false).is_none()
            {
                return Some(id.clone());
            }
        }
    }
    None
}

/// Why this task cannot be picked now, or `None` if it can.
fn refusal(
    w: &Working<'_>,
    task: &Task,
    load: &Load,
    tick_cap: u32,
    quota_waiting: usize,
    lane_caps: bool,
) -> Option<Hold> {
    let config = w.config;
    if load.picked >= tick_cap {
        return Some(Hold::new(
            HoldKind::TickCap,
            format!("this tick's run limit is reached (limits.max_runs_per_tick = {tick_cap})"),
            "raise limits.max_runs_per_tick to start more runs per tick",
        ));
    }
    // budget.per_tick_usd over the tick's earlier rounds (issue 38): the next tick starts it.
    if let Some(why) = tick_budget_spent(&config.budget, w.snapshot.observations.tick.spent_usd) {
        let why = why.trim_start_matches("not started: ").to_string();
        return Some(Hold::new(
            HoldKind::Budget,
            why,
            "raise budget.per_tick_usd",
        ));
    }
    // Issue 38: a run starts only when it can end before the tick's deadline.
    let bound = super::rounds::run_bound(task, config);
    if let Err(too_long) =
        super::rounds::fits(&w.snapshot.observations.tick, w.round_ms, bound, w.now)
    {
        return Some(Hold::new(
            HoldKind::TickTime,
            too_long.text("its run"),
            super::rounds::TooLong::FIX,
        ));
    }
    if quota_waiting > 0 && load.in_flight >= 1 {
        return Some(Hold::new(
            HoldKind::QuotaThrottle,
            format!("{quota_waiting} task(s) wait on quota, so one run at a time (spec quota throttle)"),
            "lifts when no task waits on quota; `agents.<role>.fallbacks` give the role another executor",
        ));
    }
    let slots = config.role_slots(task.role);
    let busy = load.per_role.get(&task.role).copied().unwrap_or(0);
    if busy >= slots {
        let fix = match config.mode {
            crate::model::Mode::Direct => {
                "direct mode runs one task at a time; local-git or github mode runs more"
                    .to_string()
            }
            crate::model::Mode::Github | crate::model::Mode::LocalGit => format!(
                "raise agents.{}.count to run more {} tasks at once",
                task.role, task.role
            ),
        };
        return Some(Hold::new(
            HoldKind::RoleSlots,
            format!(
                "all {} slots busy ({busy}/{slots}, agents.{}.count)",
                task.role, task.role
            ),
            fix,
        ));
    }
    if let Some(area) = &task.target_area {
        if let Some(holder) = load.areas.get(area) {
            return Some(Hold::new(
                HoldKind::TargetArea,
                format!("target area `{area}` is busy with {holder}"),
                "tasks of one target area run one at a time; give tasks that do not overlap \
                 their own `touches:` (or `target_area:`) so they can run together",
            ));
        }
    }
    if lane_caps {
        let cap = match task.lane {
            Lane::Feature => None,
            Lane::ConflictRecovery => Some(config.limits.conflict_lane_max),
            Lane::Docser => Some(config.limits.docser_lane_max),
        };
        if let Some(cap) = cap.filter(|c| *c > 0) {
            let used = load.per_lane.get(&task.lane).copied().unwrap_or(0);
            if used >= cap {
                let setting = match task.lane {
                    Lane::Docser => "limits.docser_lane_max",
                    Lane::ConflictRecovery | Lane::Feature => "limits.conflict_lane_max",
                };
                return Some(Hold::new(
                    HoldKind::LaneFull,
                    format!("lane {} is full ({used}/{cap})", task.lane),
                    format!("raise {setting} to run more of this lane at once"),
                ));
            }
        }
    }
    None
}

/// The rule of the wait that holds a queued task because a budget is spent (its own, or the
/// day's): the task shows as `paused` (`Plan::budget_hold`).
pub const BUDGET_WAIT: &str = "dispatch.budget";

/// DESIGN §9: a task whose family spent its budget (issue 37: the task with its reworks and
/// AutoFixes), or a day that spent the daily one, starts no run.
/// Raising the budget in the config lifts it at the next tick; the daily one lifts at midnight
/// UTC. Budgets of 0 are off.
fn over_budget(w: &Working<'_>, task: &Task) -> Option<(Option<Timestamp>, String)> {
    let budget = &w.config.budget;
    let spend = &w.snapshot.observations.spend;
    if budget.per_day_usd > 0.0 && spend.today_usd >= budget.per_day_usd {
        let tomorrow = w.now.start_of_day().plus(crate::time::DAY);
        return Some((
            Some(tomorrow),
            format!(
                "queued: today's spend ${:.2} reached budget.per_day_usd ${:.2}: runs start again at {tomorrow}, or raise the budget",
                spend.today_usd, budget.per_day_usd
            ),
        ));
    }
    let family = super::fairness::family_of(&w.tasks, &task.id);
    let spent = spend.by_family.get(&family).copied().unwrap_or(0.0);
    // A budget a person set for this task (`/opentiger budget <usd>`) replaces the default.
    let (limit, source) = match spend.task_budgets.get(&task.id) {
        Some(usd) => (*usd, "the budget set for it"),
        None => (budget.per_task_usd, "its budget.per_task_usd"),
    };
    if limit > 0.0 && spent >= limit {
        return Some((
            None,
            format!(
                "queued: this task's family (it, its reworks and AutoFixes) spent ${spent:.2} over its attempts and reviews, {source} is ${limit:.2}: the budget holds it; raise it (`/opentiger budget <usd>` on its issue) to let it run again, or `opentiger task cancel {}`",
                task.id
            ),
        ));
    }
    None
}

/// Every dependency that is not `done`, said for people (`status` lists them all).
fn unresolved_dependency(w: &Working<'_>, task: &Task) -> Option<String> {
    let unmet: Vec<String> = task
        .dependencies
        .iter()
        .filter_map(|dep| match w.tasks.get(dep) {
            Some(d) if d.status == TaskStatus::Done => None,
            Some(d) if d.status == TaskStatus::Failed => Some(format!(
                "{dep}, which failed (a failed dependency is not resolved)"
            )),
            Some(d) => Some(format!("{dep} ({})", d.state())),
            None => Some(format!("unknown task {dep}")),
        })
        .collect();
    match unmet.as_slice() {
        [] => None,
        [one] => Some(format!("queued: waits for {one}")),
        [rest @ .., last] => Some(format!(
            "queued: waits for {} dependencies: {} and {last}",
            unmet.len(),
            rest.join(", ")
        )),
    }
}

fn claim(w: &mut Working<'_>, task: &Task, waiting_since: Timestamp, rule: &'static str) {
    let round = w.snapshot.observations.tick.rounds;
    let run_id = RunId::for_round(&w.snapshot.tick_id, round, &task.id);
    let expires_at = w
        .now
        .plus(i64::from(w.config.limits.lease_minutes) * MINUTE);
    let reason = format!("as {}; lease until {expires_at}", task.role);
    let detail = format!(
        "score {:.1} (priority {}, risk {}, lane {})",
        score(task, waiting_since, w.now),
        task.priority,
        task.risk,
        task.lane,
    );
    if let Some(t) = w.tasks.get_mut(&task.id) {
        t.status = TaskStatus::Running;
        t.block_reason = None;
    }
    // Issue 38: the round's runs go one after another; the next pick must fit after this one.
    w.round_ms += super::rounds::run_bound(task, w.config);
    w.decide(
        Some(&task.id),
        rule,
        Action::Claim { run_id, expires_at },
        reason,
    );
    if let Some(d) = w.decisions.last_mut() {
        d.detail = Some(detail);
    }
}

/// Issue 17: the repository is paused: no queued task is claimed, each says so and how to
/// resume it (issue 40: `opentiger resume` in every mode, the dashboard command in github mode).
pub(crate) fn hold_for_pause(w: &mut Working<'_>, by: &str) {
    let resume = match w.config.mode {
        crate::model::Mode::Github => {
            "`opentiger resume`, or `/opentiger resume` on the dashboard issue"
        }
        crate::model::Mode::LocalGit | crate::model::Mode::Direct => "`opentiger resume`",
    };
    for id in w.ids_in(TaskState::QUEUED) {
        let hold = Hold::new(
            HoldKind::Paused,
            format!("the repository is paused by @{by}"),
            resume,
        );
        w.hold(&id, hold);
        w.wait(
            &id,
            None,
            "dispatch.paused",
            format!("queued: the repository is paused by @{by}; {resume} lets work start again"),
        );
    }
}

/// `budget.per_tick_usd`: why a claimed run must not start once the tick's runs spent `spent`
/// (it goes back to the queue unstarted), or `None` while the tick may go on. 0 or unset: off.
pub fn tick_budget_spent(budget: &crate::config::BudgetConfig, spent: f64) -> Option<String> {
    let limit = budget.per_tick_usd.filter(|l| *l > 0.0)?;
    (spent >= limit).then(|| {
        format!(
            "not started: this tick's runs spent ${spent:.2}, budget.per_tick_usd is ${limit:.2}; queued for the next tick"
        )
    })
}

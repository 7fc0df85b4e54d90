//! `status` and the views behind it (DESIGN §13): each task with what happened, what it waits
//! for now and what the next tick expects (issue 49: kept apart, a forecast never said as a
//! fact), and who must act when a person must — from the plan the engine makes of the state.
//!
//! Not for: gathering the view (`tick::status`), the dashboard and job summary made of it
//! (`report::board`), or `task show` (`report::task_show`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use super::{truncate, RefusalView, SpendView};
use crate::engine::{Action, Decision, Plan};
use crate::model::{Phase, Run, Task};
use crate::store::TickRecord;
use crate::time::Timestamp;

/// One task as `status --json` shows it (DESIGN §13).
#[derive(Clone, Debug, Serialize)]
pub struct TaskStatusView {
    pub id: String,
    pub title: String,
    pub status: String,
    pub block_reason: Option<String>,
    /// The lifecycle phase (`model::Phase`): `intake`, `executing`, `verifying`, ...
    pub phase: String,
    pub kind: String,
    pub role: String,
    pub priority: i64,
    pub attempts: BTreeMap<String, u32>,
    pub pr: Option<u64>,
    /// What CI says about the PR's head (`none`, `pending`, `success`, `failure`), when known.
    pub checks: Option<String>,
    pub issue: Option<u64>,
    pub dependencies: Vec<String>,
    pub parent: Option<String>,
    /// Why the task is where it is: what happened.
    pub reason: Option<String>,
    /// What its reason advises a person to do, when it does (`engine::advice`, issue 40).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub advice: Option<String>,
    /// What held its latest change for a person, each finding whole (issue 48).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub findings: Vec<String>,
    /// What happens next: what the next tick does to it, else what it waits for (e.g.
    /// `quota_wait: retry after 12:40:00Z`); `now` and `next_tick` say which.
    pub next_action: String,
    /// What it waits for now, as it is (issue 49: a fact of the present, not a forecast).
    pub now: Option<String>,
    /// What the next tick is expected to do to it, or why it would not start it then.
    pub next_tick: Option<String>,
    /// The engine's figures behind the next action (a claim's score and lane), for `-v`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_detail: Option<String>,
    pub next_attempt_at: Option<Timestamp>,
    pub updated_at: Timestamp,
    /// A person must act before it moves (the dashboard lists it under "Waiting on a
    /// person"): `waiting_on_person` is set.
    pub waits_on_person: bool,
    /// Issue 49: what the person does, and the task that waits on them when this one waits
    /// through it (a dependency, a fix it follows): a question (`awaiting_human`), a pause, its
    /// own spent budget, people holding its merge, their uncommitted work in its merge's way.
    pub waiting_on_person: Option<PersonView>,
    /// The comment command that answers a task waiting on a person (github mode's dashboard).
    pub command: Option<String>,
    /// Its dashboard checkboxes (github mode), recommended first.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub boxes: Vec<crate::engine::checkboxes::Checkbox>,
    /// A queued task: what held it back this tick (`kind`, `reason`, and the `fix`: the setting
    /// or task field that would let it run), from the plan (issue 27).
    pub held_back: Option<crate::engine::Hold>,
    /// Its family (the task with its AutoFix, rework and conflict-fix descendants) and the runs
    /// the whole family paid for (issue 27); `status` fills it in.
    pub family: Option<crate::store::FamilyRuns>,
}

#[derive(Clone, Debug, Serialize)]
pub struct RunView {
    pub id: String,
    pub task_id: String,
    pub status: String,
    pub agent_id: String,
    /// The executor that ran, and why when it was a fallback, e.g. `codex (fallback 1:
    /// claude-code waits on quota until 2026-11-21T12:40:00Z)`.
    pub executor: Option<String>,
    pub started_at: Timestamp,
    pub finished_at: Option<Timestamp>,
    pub failure_code: Option<String>,
    pub error: Option<String>,
    /// The spend that counts: the larger of the metered and the reported one (issue 37).
    pub cost_usd: f64,
    /// What the agent CLI reported it spent.
    pub reported_cost_usd: f64,
    /// What opentiger's proxy metered of its model traffic.
    pub metered: Option<crate::model::network::Metering>,
    /// Hosts the proxy refused its agent and checks, with the line that would allow each.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<RefusalView>,
}

#[derive(Clone, Debug, Serialize)]
pub struct StatusView {
    pub now: Timestamp,
    pub counts: BTreeMap<String, i64>,
    /// The preflight class, its inputs and summary: `S4 [R=0 I=0 P=0 L=1]: …` (`--verbose`).
    pub preflight: String,
    /// What the loop does next, in words (the preflight summary alone).
    pub next: String,
    pub tasks: Vec<TaskStatusView>,
    pub runs: Vec<RunView>,
    pub last_tick: Option<TickRecord>,
    /// Backlog issues that were not imported, and why (github mode).
    pub ignored_issues: Vec<serde_json::Value>,
    pub spend: SpendView,
    /// Executors parked on a quota or for their configuration, one line each
    /// (`agents.<role>.fallbacks` run meanwhile).
    pub parked_executors: Vec<String>,
    /// The repository is paused (`/opentiger pause` on the dashboard): who, since when, how to
    /// resume.
    pub paused: Option<String>,
    /// github mode: which checks a PR must pass, or that there is no CI to wait for.
    pub ci: Option<String>,
    /// The last tick against the workflow's schedule (a warning when it was missed).
    pub heartbeat: Option<String>,
    /// When fewer runs would start than `limits.max_runs_per_tick` allows: what holds the rest
    /// back and what setting lets them run (issue 27).
    pub held_back: Option<String>,
    /// Hosts opentiger's proxy refused recently, by task, each with the configuration line that
    /// would allow it (issue 37).
    pub refused: Vec<String>,
    /// The host snapshot in one line (issue 52; `-v`).
    pub host: Option<String>,
    /// The failure lessons in force, one line each (issue 52; `-v`).
    pub lessons: Vec<String>,
}

/// The plan's lines about executors parked on a quota or for their configuration (issue 18).
pub fn parked_executors(plan: &Plan) -> Vec<String> {
    plan.decisions
        .iter()
        .filter(|d| d.rule == "executor.quota_wait" || d.rule == "executor.agent_config")
        .map(|d| d.reason.clone())
        .collect()
}

impl RunView {
    pub fn of(run: &Run) -> RunView {
        RunView {
            id: run.id.to_string(),
            task_id: run.task_id.to_string(),
            status: run.status.to_string(),
            agent_id: run.agent_id.to_string(),
            executor: run.executor.clone(),
            started_at: run.started_at,
            finished_at: run.finished_at,
            failure_code: run.failure_code.map(|c| c.to_string()),
            error: run.error.clone(),
            cost_usd: run.cost_usd,
            reported_cost_usd: run.reported_cost_usd,
            metered: run.metered.clone(),
            refused: run.refused.iter().map(RefusalView::of).collect(),
        }
    }
}

/// A person's step for a task that waits on them (`status --json`'s `waiting_on_person`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PersonView {
    /// What to do, with the command or the GitHub action.
    pub step: String,
    /// The task that waits on the person itself, when this one waits through it.
    pub via: Option<String>,
}

impl PersonView {
    /// `waits on a person: …`, or `waits on a person through <task>: …`, for people.
    pub fn line(&self) -> String {
        match &self.via {
            Some(via) => format!("waits on a person through {via}: {}", self.step),
            None => format!("waits on a person: {}", self.step),
        }
    }
}

/// What a task waits for now, and what the next tick is expected to do to it, read off the
/// plan (issue 49: the plan is a forecast; a wait it says is a fact of the present unless it
/// is the plan's own doing: a slot, a turn or the tick's cap that the plan's claims take).
pub fn now_and_next(plan: &Plan, task: &Task) -> (Option<String>, Option<String>) {
    let decisions: Vec<&Decision> = plan.for_task(&task.id).collect();
    if let Some(d) = decisions.iter().find(|d| d.writes()) {
        // A claim's run id and lease are made up at every call (they come from the tick that
        // would claim): said without them, so the answer does not change between calls.
        if let Action::Claim { .. } = d.action {
            let why = d.reason.split("; lease until").next().unwrap_or(&d.reason);
            return (None, Some(format!("next tick: claim and run {why}")));
        }
        return (
            None,
            Some(format!("next tick: {}", super::describe_action(d))),
        );
    }
    let forecast = plan
        .holds
        .get(&task.id)
        .is_some_and(|h| h.kind.is_concurrency());
    match decisions.first() {
        Some(d) if forecast => (
            None,
            Some(format!(
                "next tick: not started: {}",
                d.reason.trim_start_matches("queued: ")
            )),
        ),
        Some(d) => (Some(d.reason.clone()), None),
        None if task.status.is_terminal() => (Some(task.state().to_string()), None),
        None => (Some("no decision".to_string()), None),
    }
}

/// The next action of a task, read off the plan: what the next tick does to it, else what it
/// waits for.
pub fn next_action(plan: &Plan, task: &Task) -> String {
    let (now, next) = now_and_next(plan, task);
    next.or(now).unwrap_or_default()
}

/// A task for `status` and the dashboard; `phase` is its lifecycle phase, from the facts the
/// shell gathered (`tick::progress::phase_facts`).
pub fn task_view(task: &Task, plan: &Plan, phase: Phase) -> TaskStatusView {
    use crate::engine::commands::{recommended, PREFIX};
    // Held for its own budget (no time lifts it): only a person's `budget` command does.
    let budget_spent = matches!(plan.budget_hold(&task.id), Some((None, _)));
    let person = plan.waiting_on_person.get(&task.id).map(|p| PersonView {
        step: p.step.clone(),
        via: p.via.as_ref().map(ToString::to_string),
    });
    let (now, next) = now_and_next(plan, task);
    // A task waiting through another has no reason of its own to show: that one's is it.
    let through = person.as_ref().and_then(|p| p.via.as_ref()).map(|via| {
        let direct = task.dependencies.iter().any(|d| d.as_str() == via);
        if direct {
            format!("depends on {via}, which waits on a person")
        } else {
            format!("waits for {via} (through the tasks it depends on or follows), which waits on a person")
        }
    });
    TaskStatusView {
        id: task.id.to_string(),
        title: task.title.clone(),
        status: task.status.to_string(),
        block_reason: task.block_reason.map(|r| r.to_string()),
        phase: phase.to_string(),
        kind: task.kind.to_string(),
        role: task.role.to_string(),
        priority: task.priority,
        attempts: task
            .attempts
            .0
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        pr: task.source_pr,
        checks: None,
        issue: task.issue_number,
        dependencies: task.dependencies.iter().map(|d| d.to_string()).collect(),
        parent: task.parent_task_id.as_ref().map(|p| p.to_string()),
        // Issue 37: a task its family's budget holds says so, not what made it.
        advice: task
            .status_reason
            .as_deref()
            .and_then(|r| crate::engine::advice::split(r).1)
            .map(str::to_string),
        // Issue 40: what happened; the advice in the reason is the next action's words.
        reason: match plan.budget_hold(&task.id) {
            Some((_, why)) => Some(why.to_string()),
            None => task
                .status_reason
                .as_deref()
                .map(|r| crate::engine::advice::split(r).0.to_string())
                .filter(|r| !r.is_empty())
                .or(through),
        },
        findings: Vec::new(),
        next_action: next.clone().or_else(|| now.clone()).unwrap_or_default(),
        // A wait through another task says whose and what they do, unless the plan's own
        // words say it already (a family's rework that waits on a person).
        now: match (&person, now) {
            (Some(p), Some(n)) if p.via.is_some() && !n.contains("waits on a person") => {
                Some(p.line())
            }
            (Some(p), None) => Some(p.line()),
            (_, n) => n,
        },
        next_tick: next,
        next_detail: plan
            .for_task(&task.id)
            .find(|d| d.writes())
            .and_then(|d| d.detail.clone()),
        next_attempt_at: task.next_attempt_at,
        updated_at: task.updated_at,
        waits_on_person: person.is_some(),
        waiting_on_person: person,
        command: recommended(task)
            .or_else(|| budget_spent.then(|| format!("{PREFIX} budget <usd> {}", task.id))),
        boxes: crate::engine::checkboxes::boxes(task),
        held_back: plan.holds.get(&task.id).cloned(),
        family: None,
    }
}

/// `status` for people. The preflight formula (`S4 [R=0 I=0 P=0 L=1]`) only when `verbose`;
/// otherwise, with no active task, what happens next in words.
pub fn status_text(view: &StatusView, verbose: bool) -> String {
    let mut out = String::new();
    let counts: Vec<String> = view
        .counts
        .iter()
        .map(|(k, v)| format!("{k} {v}"))
        .collect();
    let _ = writeln!(out, "opentiger status at {}", view.now);
    let _ = writeln!(
        out,
        "Tasks: {}",
        if counts.is_empty() {
            "none".to_string()
        } else {
            counts.join(", ")
        }
    );
    if verbose {
        let _ = writeln!(out, "Preflight: {}", view.preflight);
    } else if view.tasks.is_empty() {
        let _ = writeln!(out, "Next: {}", view.next);
    }
    let _ = writeln!(out, "Spend: {}", view.spend.line());
    match &view.last_tick {
        Some(t) => {
            let _ = writeln!(
                out,
                "Last tick: {} by {} ({})",
                t.started_at,
                t.agent_id,
                t.outcome.as_deref().unwrap_or("unfinished")
            );
        }
        None => {
            let _ = writeln!(out, "Last tick: never");
        }
    }
    if let Some(paused) = &view.paused {
        let _ = writeln!(out, "Paused: {paused}");
    }
    if let Some(line) = &view.heartbeat {
        let _ = writeln!(out, "Schedule: {line}");
    }
    if let Some(line) = &view.ci {
        let _ = writeln!(out, "CI: {line}");
    }
    for line in &view.parked_executors {
        let _ = writeln!(out, "Parked: {line}");
    }
    if let Some(line) = &view.held_back {
        let _ = writeln!(out, "Concurrency (the next tick's forecast): {line}");
    }
    for line in &view.refused {
        let _ = writeln!(out, "Refused: {line}");
    }
    if verbose {
        if let Some(host) = &view.host {
            let _ = writeln!(out, "Host: {host}");
        }
        for line in &view.lessons {
            let _ = writeln!(out, "Lesson: {line}");
        }
    }
    if view.tasks.is_empty() {
        let _ = writeln!(out, "\nNo active tasks.");
    } else {
        let _ = writeln!(out);
        for t in &view.tasks {
            let state = match &t.block_reason {
                Some(r) => format!("{}({r})", t.status),
                None => t.status.clone(),
            };
            let _ = writeln!(
                out,
                "{:<12} {:<24} {:<17} {}",
                short(&t.id),
                state,
                t.phase,
                truncate(&t.title, 60)
            );
            if let Some(reason) = t.reason.as_deref().filter(|r| !r.is_empty()) {
                let _ = writeln!(out, "{:<12} why:  {}", "", reason);
            }
            for finding in &t.findings {
                let _ = writeln!(out, "{:<12}   - {finding}", "");
            }
            let detail = match (&t.next_detail, verbose) {
                (Some(detail), true) => format!(" ({detail})"),
                _ => String::new(),
            };
            // Issue 49: what is true now, then what the next tick expects, each said as such.
            if let Some(now) = &t.now {
                let _ = writeln!(out, "{:<12} now:  {now}", "");
            }
            if let Some(next) = &t.next_tick {
                let next = next.strip_prefix("next tick: ").unwrap_or(next);
                let _ = writeln!(out, "{:<12} next: {next}{detail}", "");
            }
            // Issue 51: the family's run count is the bound's arithmetic, not money: `-v`.
            if let Some(f) = t.family.as_ref().filter(|f| f.paid_runs > 0 && verbose) {
                let _ = writeln!(
                    out,
                    "{:<12} runs: {} counted against its family's bound ({}, {} task(s))",
                    "",
                    f.paid_runs,
                    short(&f.family),
                    f.tasks
                );
            }
        }
    }
    if !view.ignored_issues.is_empty() {
        let _ = writeln!(out, "\nIssues not imported:");
        for i in &view.ignored_issues {
            let _ = writeln!(
                out,
                "  #{} {}",
                i["issue"],
                i["reason"].as_str().unwrap_or("")
            );
        }
    }
    if !view.runs.is_empty() {
        let _ = writeln!(out, "\nRecent runs:");
        for r in &view.runs {
            let _ = writeln!(
                out,
                "  {} task {} {:<9} {}{}",
                r.id,
                short(&r.task_id),
                r.status,
                r.started_at,
                r.failure_code
                    .as_deref()
                    .map(|c| format!(" {c}"))
                    .unwrap_or_default()
            );
        }
    }
    out
}

fn short(id: &str) -> &str {
    let end = id.char_indices().nth(12).map_or(id.len(), |(i, _)| i);
    &id[..end]
}

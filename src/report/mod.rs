//! What people read: the dry-run plan, `status` and `task show` here; the dashboard, the check
//! runs, the task graph, spend and the comments opentiger posts in a module each. Rendering only:
//! the words come from the engine's plan and the facts the shell gathers.
//! Not for: deciding (`engine`), gathering the facts (`tick::status`, `cli::task`), or posting
//! and editing anything on GitHub (`tick`).

pub mod board;
pub mod check_run;
pub mod graph;
pub mod heartbeat;
pub mod plan;
pub mod progress;
pub mod research;
mod spend;
mod task_show;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde::Serialize;

use crate::engine::{Action, Decision, Plan};
use crate::model::{Phase, Run, Task, TaskId};
use crate::store::TickRecord;
use crate::time::{human_span, Timestamp};
pub use spend::{RefusalView, SpendView};
pub use task_show::{
    checks_of, spend_line, task_text, with_checks, with_family, with_reviews, CheckLine,
};

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
    /// What happens next, e.g. `quota_wait: retry after 12:40:00Z`.
    pub next_action: String,
    /// The engine's figures behind the next action (a claim's score and lane), for `-v`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_detail: Option<String>,
    pub next_attempt_at: Option<Timestamp>,
    pub updated_at: Timestamp,
    /// A person must act before it moves: a question (`awaiting_human`), a pause, or its own
    /// spent budget (the dashboard lists it under "Waiting on a person").
    pub waits_on_person: bool,
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

/// The next action of a task, read off the plan: the first decision that changes something,
/// else what it waits for.
pub fn next_action(plan: &Plan, task: &Task) -> String {
    let decisions: Vec<&Decision> = plan.for_task(&task.id).collect();
    if let Some(d) = decisions.iter().find(|d| d.writes()) {
        // A claim's run id and lease are made up at every call (they come from the tick that
        // would claim): said without them, so the answer does not change between calls.
        if let Action::Claim { .. } = d.action {
            let why = d.reason.split("; lease until").next().unwrap_or(&d.reason);
            return format!("next tick: claim and run {why}");
        }
        return format!("next tick: {}", describe_action(d));
    }
    match decisions.first() {
        Some(d) => d.reason.clone(),
        None if task.status.is_terminal() => task.state().to_string(),
        None => "no decision".to_string(),
    }
}

/// `claim (run abc, lease until …)`, `→ queued`, ... with the reason.
pub fn describe_action(d: &Decision) -> String {
    let what = match &d.action {
        Action::Transition { from, to, .. } => format!("{from} → {to}"),
        Action::ReleaseLease { run_id } => format!("release the lease of run {run_id}"),
        Action::CancelRun { run_id } => format!("cancel run {run_id}"),
        Action::CreateTask { task } => {
            format!("create {} task {} \"{}\"", task.kind, task.id, task.title)
        }
        Action::Claim { run_id, .. } => format!("claim and run (run {run_id})"),
        Action::Judge { run_id, .. } => format!("judge run {run_id}"),
        Action::ResetJudgeClaim { run_id } => format!("make run {run_id} reviewable again"),
        Action::StartPlanner => "run the planner".to_string(),
        Action::OpenIssue => "open its GitHub issue".to_string(),
        Action::ClosePull { pr, superseded_by } => {
            format!("close PR #{pr}, superseded by {superseded_by}")
        }
        Action::RetargetPull { pr, from, to } => {
            format!("retarget PR #{pr} from `{from}` to `{to}`")
        }
        Action::HealCi { pr, dispatch, .. } if dispatch.is_empty() => {
            format!("diagnose CI on PR #{pr}")
        }
        Action::HealCi { pr, dispatch, .. } => format!(
            "diagnose CI on PR #{pr}, dispatch {}",
            crate::engine::stall::quoted(dispatch)
        ),
        Action::StartCi { pr, workflows, .. } => format!(
            "start CI on PR #{pr}: dispatch {}",
            crate::engine::stall::quoted(workflows)
        ),
        Action::Wait { .. } => "wait".to_string(),
    };
    format!("{what}: {}", d.reason)
}

/// How many waiting tasks an idle tick names before it only counts the rest.
const IDLE_LINES: usize = 5;

/// Why a tick that changes nothing changes nothing, for people: each task's wait (a cooldown,
/// a budget, a dependency), or that no task is active. Empty when the plan writes something.
pub fn why_idle(plan: &Plan, tasks: &[Task]) -> Vec<String> {
    if plan.decisions.iter().any(Decision::writes) {
        return Vec::new();
    }
    let waits: Vec<&Decision> = plan
        .decisions
        .iter()
        .filter(|d| matches!(d.action, Action::Wait { .. }))
        .collect();
    if waits.is_empty() {
        return vec!["nothing to do: no active task (add one with `opentiger task add`)".into()];
    }
    let mut lines = vec!["nothing to do:".to_string()];
    for d in waits.iter().take(IDLE_LINES) {
        let who = match &d.task_id {
            Some(id) => match tasks.iter().find(|t| &t.id == id) {
                Some(t) => format!("{} \"{}\"", id.short(), truncate(&t.title, 40)),
                None => id.short().to_string(),
            },
            None => "-".to_string(),
        };
        lines.push(format!("  {who}: {}", d.reason));
    }
    if waits.len() > IDLE_LINES {
        lines.push(format!(
            "  and {} more (`opentiger status`)",
            waits.len() - IDLE_LINES
        ));
    }
    lines
}

/// A task for `status` and the dashboard; `phase` is its lifecycle phase, from the facts the
/// shell gathered (`tick::progress::phase_facts`).
pub fn task_view(task: &Task, plan: &Plan, phase: Phase) -> TaskStatusView {
    use crate::engine::commands::{recommended, PREFIX};
    // Held for its own budget (no time lifts it): only a person's `budget` command does.
    let budget_spent = matches!(plan.budget_hold(&task.id), Some((None, _)));
    let asked = matches!(
        task.block_reason,
        Some(crate::model::BlockReason::AwaitingHuman | crate::model::BlockReason::Paused)
    ) && task.status == crate::model::TaskStatus::Blocked;
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
                .map(|r| crate::engine::advice::split(r).0.to_string()),
        },
        findings: Vec::new(),
        next_action: next_action(plan, task),
        next_detail: plan
            .for_task(&task.id)
            .find(|d| d.writes())
            .and_then(|d| d.detail.clone()),
        next_attempt_at: task.next_attempt_at,
        updated_at: task.updated_at,
        // Issue 26: people hold its merge (a review, a label, a hold): they act.
        waits_on_person: asked || budget_spent || plan.people_hold(&task.id).is_some(),
        command: recommended(task)
            .or_else(|| budget_spent.then(|| format!("{PREFIX} budget <usd> {}", task.id))),
        boxes: crate::engine::checkboxes::boxes(task),
        held_back: plan.holds.get(&task.id).cloned(),
        family: None,
    }
}

/// The dry-run printout: what the loop does next, then every decision grouped by what it does.
/// The preflight gates and each claim's score are the engine's own figures: `verbose` only.
pub fn plan_text(plan: &Plan, tasks: &BTreeMap<TaskId, Task>, verbose: bool) -> String {
    let mut out = String::new();
    let p = &plan.preflight;
    let _ = writeln!(out, "Plan for {} (dry run: nothing is written)", plan.now);
    if verbose {
        let (class, flags) = (p.class, p.inputs.flags());
        let _ = writeln!(out, "Preflight {class} [{flags}]: {}", p.summary);
        let on = |b: bool| if b { "yes" } else { "no" };
        let _ = writeln!(
            out,
            "  planner: {}  dispatcher: {}  judge: {}  recovery: {}",
            on(p.start_planner),
            on(p.start_dispatcher),
            on(p.start_judge),
            on(p.start_cycle_manager)
        );
    } else {
        let _ = writeln!(out, "Next: {}", p.summary);
    }
    let title = |id: &Option<TaskId>| -> String {
        match id {
            Some(id) => match tasks.get(id) {
                Some(t) => format!(
                    "{} {:?} ({})",
                    id.short(),
                    truncate(&t.title, 40),
                    t.state()
                ),
                None => id.short().to_string(),
            },
            None => "-".to_string(),
        }
    };
    let (changes, waits): (Vec<&Decision>, Vec<&Decision>) =
        plan.decisions.iter().partition(|d| d.writes());
    let _ = writeln!(out, "\nDecisions ({}):", changes.len());
    if changes.is_empty() {
        let _ = writeln!(out, "  none: nothing changes this tick");
    }
    for d in &changes {
        let detail = match (&d.detail, verbose) {
            (Some(detail), true) => format!(" ({detail})"),
            _ => String::new(),
        };
        let (rule, who, what) = (d.rule, title(&d.task_id), describe_action(d));
        let _ = writeln!(out, "  [{rule}] {who}\n      {what}{detail}");
    }
    let _ = writeln!(out, "\nWaiting ({}):", waits.len());
    for d in &waits {
        let until = match &d.action {
            Action::Wait { until: Some(t) } => format!(" (in {})", human_span(t.minus(plan.now))),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "  [{}] {}\n      {}{until}",
            d.rule,
            title(&d.task_id),
            d.reason
        );
    }
    out
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
        let _ = writeln!(out, "Concurrency: {line}");
    }
    for line in &view.refused {
        let _ = writeln!(out, "Refused: {line}");
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
            let _ = writeln!(out, "{:<12} next: {}{detail}", "", t.next_action);
            if let Some(f) = t.family.as_ref().filter(|f| f.paid_runs > 0) {
                let _ = writeln!(
                    out,
                    "{:<12} runs: {} paid by its family ({}, {} task(s))",
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

/// At most `max` characters, with an ellipsis when cut.
pub fn truncate(text: &str, max: usize) -> String {
    let line = text.lines().next().unwrap_or("");
    if line.chars().count() <= max && !text.contains('\n') {
        return line.to_string();
    }
    let cut: String = line.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

/// `STATE.md`, committed next to the state's chunks on the state branch: the state for people who
/// browse the branch on GitHub.
pub fn state_summary(
    store: &crate::store::Store,
    now: Timestamp,
) -> Result<String, crate::store::StoreError> {
    let counts = store.status_counts()?;
    let tasks = store.list_tasks(&crate::store::TaskFilter::default())?;
    let mut out = String::from("# opentiger state\n\nGenerated; do not edit. `opentiger status` shows the same with next actions.\n\n");
    let _ = writeln!(out, "Saved at {now}.\n");
    let _ = writeln!(out, "| status | tasks |\n|---|---|");
    for (status, n) in &counts {
        let _ = writeln!(out, "| {status} | {n} |");
    }
    let _ = writeln!(out, "\n## Active tasks\n");
    if tasks.is_empty() {
        let _ = writeln!(out, "None.");
    } else {
        let _ = writeln!(out, "| id | state | title | why |\n|---|---|---|---|");
        for t in tasks.iter().take(200) {
            let why = t
                .status_reason
                .as_deref()
                .map(|r| truncate(r, 100))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} |",
                t.id,
                t.state(),
                cell(&truncate(&t.title, 60)),
                cell(&why)
            );
        }
        if tasks.len() > 200 {
            let _ = writeln!(out, "\n… and {} more.", tasks.len() - 200);
        }
    }
    let _ = writeln!(out, "\n## Last ticks\n");
    match store.last_tick()? {
        Some(t) => {
            let _ = writeln!(
                out,
                "- {} by {}: {}",
                t.started_at,
                t.agent_id,
                t.outcome.as_deref().unwrap_or("unfinished")
            );
        }
        None => {
            let _ = writeln!(out, "None yet.");
        }
    }
    Ok(out)
}

/// Text safe inside a markdown table cell.
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

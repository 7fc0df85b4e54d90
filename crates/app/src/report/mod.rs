//! What people read: the dry-run plan, `status` and `task show` here; the dashboard, the check
//! runs, the task graph, spend and the comments opentiger posts in a module each. Rendering only:
//! the words come from the engine's plan and the facts the shell gathers.
//! Not for: deciding (`engine`), gathering the facts (`tick::status`, `cli::task`), or posting
//! and editing anything on GitHub (`tick`).

pub mod board;
pub mod check_run;
pub mod graph;
pub mod heartbeat;
pub mod learned;
pub mod plan;
pub mod progress;
pub mod research;
mod spend;
mod status;
mod task_show;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::engine::{Action, Decision, Plan};
use crate::model::{Task, TaskId};
use crate::time::{human_span, Timestamp};
pub use spend::{RefusalView, SpendView};
pub use status::{
    next_action, now_and_next, parked_executors, status_text, task_view, PersonView, RunView,
    StatusView, TaskStatusView,
};
pub use task_show::{
    checks_of, spend_line, task_text, with_checks, with_family, with_reviews, CheckLine,
};

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
        // Issue 49: a task waiting through another says whose step it waits on.
        let through = d
            .task_id
            .as_ref()
            .and_then(|id| plan.waiting_on_person.get(id))
            .and_then(|p| {
                let via = p.via.as_ref()?;
                Some(format!("waits on a person through {via}: {}", p.step))
            });
        lines.push(format!(
            "  {who}: {}",
            through.unwrap_or_else(|| d.reason.clone())
        ));
    }
    if waits.len() > IDLE_LINES {
        lines.push(format!(
            "  and {} more (`opentiger status`)",
            waits.len() - IDLE_LINES
        ));
    }
    lines
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

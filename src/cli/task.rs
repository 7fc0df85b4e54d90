//! `opentiger task add|list|show|retry|stop|cancel|approve`: the local backlog. Adds tasks from flags
//! or a plan file (held for approval as `engine::approval` says), lists them, shows one.
//! Not for: retry, stop, cancel and approve (`cli::task_moves`), the checks of a task's commands and
//! paths (`runner::checks`), or the text of `task show` (`report::task_show`).

use std::collections::BTreeMap;
use std::path::PathBuf;

use clap::{Args, Subcommand};
use serde::Deserialize;

use super::task_moves::writer;
use super::{CmdResult, Context, Failure};
use crate::model::{Lane, Risk, Role, Task, TaskId, TaskStatus};
use crate::report;
use crate::runner::TaskField;
use crate::store::TaskFilter;

#[derive(Subcommand, Debug)]
pub enum TaskCommand {
    /// Add a task (prints its id), or several from a plan file with --from. With
    /// `execution_mode: ask` every new task waits for approval (`opentiger task approve ID`),
    /// with `decide` every high-risk one, whoever adds it; --approve approves it as you add it.
    Add(AddArgs),
    /// List tasks (active ones unless --all or --status).
    List {
        /// Only tasks with this status (queued, running, done, failed, blocked, cancelled).
        #[arg(long)]
        status: Option<TaskStatus>,
        /// Finished (done, cancelled) tasks too.
        #[arg(long)]
        all: bool,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show one task: state, why, next action, runs and events; with -v, how big each run's
    /// prompt was and what the host context and failure hints took of it.
    Show {
        /// The task's id, or a unique prefix of 4 or more characters.
        id: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Send a failed, blocked or cancelled task back to the queue (a person's decision).
    Retry {
        /// The task's id, or a unique prefix of 4 or more characters.
        id: String,
        /// Why, for the event log.
        #[arg(long, default_value = "retried by a person")]
        reason: String,
    },
    /// Approve tasks that wait for approval (`execution_mode: ask`): they are queued.
    Approve {
        /// The task to approve (or --all).
        #[arg(required_unless_present = "all")]
        id: Option<String>,
        /// Every task waiting for approval.
        #[arg(long, conflicts_with = "id")]
        all: bool,
        /// The commit a person looked at, when the threat scan holds the task's change: the
        /// approval is refused unless the held change is that commit (7 to 40 hex digits).
        #[arg(long, value_name = "SHA", requires = "id")]
        commit: Option<String>,
    },
    /// Stop a task's running run within 30 s, from any terminal or job: the tick running its
    /// agent reads the request from the state and ends it; the task then waits for you
    /// (`opentiger task retry ID` queues it again).
    Stop {
        /// The task's id, or a unique prefix of 4 or more characters.
        id: String,
    },
    /// Cancel a task that is not done.
    Cancel {
        /// The task's id, or a unique prefix of 4 or more characters.
        id: String,
        /// Why, for the event log.
        #[arg(long, default_value = "cancelled by a person")]
        reason: String,
    },
}

#[derive(Args, Debug)]
pub struct AddArgs {
    /// A short title, shown in lists and as the commit and PR subject.
    #[arg(long, required_unless_present = "from")]
    pub title: Option<String>,
    /// What must be true when the task is done (machine-verifiable).
    #[arg(long, required_unless_present = "from")]
    pub goal: Option<String>,
    /// Who works on it: worker, tester, docser or research (a read-only report that answers a question).
    #[arg(long, default_value = "worker")]
    pub role: Role,
    /// Globs the change may touch (repeatable; default: policy.allowed_paths).
    #[arg(long = "allowed-path")]
    pub allowed_paths: Vec<String>,
    /// Verification commands run after the agent (repeatable; argv, no shell).
    #[arg(long = "command")]
    pub commands: Vec<String>,
    /// Tasks that must be done first (repeatable; ids or unique prefixes).
    #[arg(long = "depends-on")]
    pub depends_on: Vec<String>,
    /// Higher runs first, from -1000 to 1000 (negative: after the default 0).
    #[arg(long, default_value_t = 0, allow_negative_numbers = true,
          value_parser = clap::value_parser!(i64).range(-1000..=1000))]
    pub priority: i64,
    /// low, medium or high: a riskier task is picked later; with `execution_mode: decide` a
    /// high-risk one waits for approval (`opentiger task approve`) unless --approve.
    #[arg(long, default_value = "low")]
    pub risk: Risk,
    /// You approve what you add: with `execution_mode: ask` (every task) or `decide` (high-risk
    /// tasks) it is queued at once instead of waiting for `opentiger task approve`.
    #[arg(long)]
    pub approve: bool,
    /// Use this id instead of a generated one (letters, digits, `-`, `_`).
    #[arg(long)]
    pub id: Option<String>,
    /// Extra context for the agent, put into its prompt.
    #[arg(long, default_value = "")]
    pub notes: String,
    /// Add every task of a plan file (the planner's JSON: {"tasks": [{"key", "title", "goal", ...}]}).
    #[arg(long, conflicts_with_all = ["title", "goal", "id", "depends_on"])]
    pub from: Option<PathBuf>,
}

/// `verbose` (`-v`): `task show` adds each run's prompt size.
pub fn run(ctx: &Context, cmd: &TaskCommand, verbose: bool) -> CmdResult {
    match cmd {
        TaskCommand::Add(args) => add(ctx, args),
        TaskCommand::List { status, all, json } => list(ctx, *status, *all, *json),
        TaskCommand::Show { id, json } => show(ctx, id, *json, verbose),
        TaskCommand::Retry { id, reason } => super::task_moves::retry(ctx, id, reason),
        TaskCommand::Cancel { id, reason } => super::task_moves::cancel(ctx, id, reason),
        TaskCommand::Stop { id } => super::task_moves::stop(ctx, id),
        TaskCommand::Approve { id, all, commit } => {
            super::task_moves::approve(ctx, id.as_deref(), *all, commit.as_deref())
        }
    }
}

fn add(ctx: &Context, args: &AddArgs) -> CmdResult {
    let tasks = ctx.write_state("task add", |store| {
        let mut tasks = build_new_tasks(ctx, args, store)?;
        for task in &mut tasks {
            hold_for_approval(ctx, task, args.approve);
        }
        store.insert_tasks(&tasks, writer(ctx))?;
        Ok(tasks)
    })?;
    for task in &tasks {
        outln!("{}", task.id);
    }
    // The ids alone on stdout (scripts read them); what waits, on stderr.
    for task in tasks.iter().filter(|t| t.needs_approval) {
        eprintln!(
            "{}: waits for approval ({}): `opentiger task approve {}`",
            task.id, ctx.config.execution_mode, task.id
        );
    }
    Ok(())
}

/// Issue 40: `execution_mode` holds a task added by hand like one from an issue or the planner
/// (`engine::approval`), unless its author approves it by adding it (`--approve`).
fn hold_for_approval(ctx: &Context, task: &mut Task, approved: bool) {
    let origin = crate::engine::approval::Origin::ByHand { approved };
    if let Some(why) = crate::engine::approval::held(ctx.config.execution_mode, origin, task.risk) {
        task.status = TaskStatus::Blocked;
        task.block_reason = Some(crate::model::BlockReason::AwaitingHuman);
        task.needs_approval = true;
        task.status_reason = Some(format!(
            "added by hand, waits for approval ({why}). Decide: `opentiger task approve {}`, or `opentiger task cancel {}`",
            task.id, task.id
        ));
    }
}

fn build_new_tasks(
    ctx: &Context,
    args: &AddArgs,
    store: &crate::store::Store,
) -> Result<Vec<Task>, Failure> {
    let tasks = match &args.from {
        Some(path) => tasks_from_plan_file(ctx, path, store)?,
        None => {
            let title = args.title.clone().unwrap_or_default();
            let goal = args.goal.clone().unwrap_or_default();
            if title.trim().is_empty() || goal.trim().is_empty() {
                return Err(Failure::usage("--title and --goal must not be empty"));
            }
            let id = match &args.id {
                Some(id) => valid_id(id)?,
                None => TaskId::fresh(&title, ctx.now.0),
            };
            let mut task = Task::new(id, &title, &goal, ctx.now);
            task.role = args.role;
            task.kind = crate::engine::import::kind_of(args.role, task.kind);
            task.lane = lane_of(args.role);
            task.priority = args.priority;
            task.risk = args.risk;
            task.allowed_paths = args.allowed_paths.clone();
            task.commands = args.commands.clone();
            task.notes = args.notes.clone();
            for dep in &args.depends_on {
                // A task may not depend on itself: its own id is not in the store yet.
                if Some(dep) == args.id.as_ref() {
                    return Err(Failure::usage(format!(
                        "dependency cycle: {dep} → {dep}\n  fix: a task cannot depend on itself"
                    )));
                }
                task.dependencies.push(store.resolve_task_id(dep)?);
            }
            let problems: Vec<String> = crate::runner::task_problems(&task, &ctx.config)
                .into_iter()
                .map(|p| {
                    let (flag, list) = match p.field {
                        TaskField::Commands => ("--command", &task.commands),
                        TaskField::AllowedPaths => ("--allowed-path", &task.allowed_paths),
                    };
                    format!("{flag} `{}`: {}", list[p.index], p.message)
                })
                .collect();
            if !problems.is_empty() {
                return Err(Failure::usage(problems.join("\n")));
            }
            vec![task]
        }
    };
    Ok(tasks)
}

fn field_name(field: TaskField) -> &'static str {
    match field {
        TaskField::Commands => "commands",
        TaskField::AllowedPaths => "allowed_paths",
    }
}

fn lane_of(role: Role) -> Lane {
    match role {
        Role::Docser => Lane::Docser,
        Role::Worker | Role::Tester | Role::Research => Lane::Feature,
    }
}

fn valid_id(id: &str) -> Result<TaskId, Failure> {
    let ok = !id.is_empty()
        && id.len() <= 40
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    if ok {
        Ok(TaskId(id.to_string()))
    } else {
        Err(Failure::usage(format!(
            "--id `{id}`: use 1 to 40 letters, digits, `-` or `_`"
        )))
    }
}

/// The planner's task list, as a file.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanFile {
    tasks: Vec<PlanTask>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlanTask {
    key: String,
    title: String,
    goal: String,
    #[serde(default = "default_role")]
    role: Role,
    #[serde(default)]
    allowed_paths: Vec<String>,
    #[serde(default)]
    commands: Vec<String>,
    #[serde(default)]
    depends_on: Vec<String>,
    #[serde(default)]
    priority: i64,
    #[serde(default = "default_risk")]
    risk: Risk,
    #[serde(default)]
    touches: Vec<String>,
}

fn default_role() -> Role {
    Role::Worker
}
fn default_risk() -> Risk {
    Risk::Low
}

fn tasks_from_plan_file(
    ctx: &Context,
    path: &PathBuf,
    store: &crate::store::Store,
) -> Result<Vec<Task>, Failure> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        Failure::usage(format!(
            "{}: cannot read the plan file: {e}",
            path.display()
        ))
    })?;
    let plan: PlanFile = serde_json::from_str(&text).map_err(|e| {
        Failure::usage(format!(
            "{}:{}: {e}\n  fix: the file must be {{\"tasks\": [{{\"key\", \"title\", \"goal\", ...}}]}}",
            path.display(),
            e.line()
        ))
    })?;
    let mut ids: BTreeMap<String, TaskId> = BTreeMap::new();
    for t in &plan.tasks {
        let id = TaskId(crate::model::short_hash(&[
            "plan-file",
            &t.key,
            &t.title,
            &ctx.now.0.to_string(),
        ]));
        if ids.insert(t.key.clone(), id).is_some() {
            return Err(Failure::usage(format!(
                "{}: key `{}` is used twice",
                path.display(),
                t.key
            )));
        }
    }
    let mut tasks = Vec::new();
    let mut problems = Vec::new();
    for t in plan.tasks {
        let mut task = Task::new(ids[&t.key].clone(), &t.title, &t.goal, ctx.now);
        task.role = t.role;
        task.kind = crate::engine::import::kind_of(t.role, task.kind);
        task.lane = lane_of(t.role);
        task.allowed_paths = t.allowed_paths;
        task.commands = t.commands;
        task.priority = t.priority;
        task.risk = t.risk;
        task.touches = t.touches;
        for dep in &t.depends_on {
            let id = match ids.get(dep) {
                Some(id) => id.clone(),
                None => store.resolve_task_id(dep).map_err(|_| {
                    Failure::usage(format!(
                        "{}: task `{}` depends on `{dep}`, which is neither a key in the file nor an existing task",
                        path.display(),
                        t.key
                    ))
                })?,
            };
            task.dependencies.push(id);
        }
        for p in crate::runner::task_problems(&task, &ctx.config) {
            problems.push(format!(
                "{}: task `{}`: `{}[{}]`: {}",
                path.display(),
                t.key,
                field_name(p.field),
                p.index,
                p.message
            ));
        }
        tasks.push(task);
    }
    if !problems.is_empty() {
        return Err(Failure::usage(problems.join("\n")));
    }
    // Check cycles on the keys, which are what the person wrote.
    let id_to_key: BTreeMap<&TaskId, &String> = ids.iter().map(|(k, v)| (v, k)).collect();
    let key_edges = tasks
        .iter()
        .map(|t| {
            let key = |id: &TaskId| {
                TaskId(
                    id_to_key
                        .get(id)
                        .map_or_else(|| id.to_string(), |k| k.to_string()),
                )
            };
            (key(&t.id), t.dependencies.iter().map(key).collect())
        })
        .collect();
    if let Some(cycle) = crate::model::graph::find_cycle(&key_edges) {
        return Err(Failure::usage(format!(
            "{}: dependency cycle: {}\n  fix: remove one of these dependencies",
            path.display(),
            crate::model::graph::describe_cycle(&cycle)
        )));
    }
    Ok(tasks)
}

fn list(ctx: &Context, status: Option<TaskStatus>, all: bool, json: bool) -> CmdResult {
    let store = ctx.read_store()?;
    let tasks = store.list_tasks(&TaskFilter {
        status,
        include_terminal: all,
    })?;
    if json {
        let text =
            serde_json::to_string_pretty(&tasks).map_err(|e| Failure::tick(e.to_string()))?;
        outln!("{text}");
        return Ok(());
    }
    if tasks.is_empty() {
        outln!(
            "No tasks{}.",
            if all || status.is_some() {
                ""
            } else {
                " (active); --all shows done and cancelled ones"
            }
        );
    }
    for t in &tasks {
        outln!(
            "{:<12} {:<24} {:>4}  {}",
            t.id.as_str(),
            t.state().to_string(),
            t.priority,
            report::truncate(&t.title, 70)
        );
        // Issue 40: what it waits for, every dependency not done yet.
        let unmet: Vec<String> = t
            .dependencies
            .iter()
            .filter_map(|dep| match store.task(dep) {
                Ok(d) if d.status == TaskStatus::Done => None,
                Ok(d) => Some(format!("{dep} ({})", d.state())),
                Err(_) => Some(format!("{dep} (unknown)")),
            })
            .collect();
        if !unmet.is_empty() {
            outln!("{:<12} after: {}", "", unmet.join(", "));
        }
    }
    Ok(())
}

fn show(ctx: &Context, id: &str, json: bool, verbose: bool) -> CmdResult {
    let store = ctx.read_store()?;
    let id = store.resolve_task_id(id)?;
    let task = store.task(&id)?;
    let (_, plan) = ctx.plan(&store)?;
    let next = report::next_action(&plan, &task);
    let phase = task.phase(crate::tick::phase_facts(ctx, &store, &plan, &task)?);
    let runs = store.runs_of(&id, 20)?;
    let events = store.events_of(&id, 50)?;
    let family = store.family_runs(&id)?;
    let reviews = store.agent_spend_of(&id, 10)?;
    let refused: Vec<report::RefusalView> = store
        .refusals_of(&id)?
        .iter()
        .map(report::RefusalView::of)
        .collect();
    let prompts: Vec<serde_json::Value> = store
        .prompt_sizes_of(&id)?
        .iter()
        .map(|(run, size)| serde_json::json!({ "run": run, "chars": size.chars, "host_chars": size.host_chars, "hints_chars": size.hints_chars }))
        .collect();
    let held_back = plan.holds.get(&id);
    let checks = report::checks_of(&task, &ctx.config.verify);
    let research = store.research_report(&id)?;
    let approved = match &research {
        Some(r) => store.approved_proposals(r)?,
        None => Vec::new(),
    };
    if json {
        let value = serde_json::json!({ "task": task, "checks": checks, "phase": phase, "next_action": next, "runs": runs, "events": events, "family": family, "held_back": held_back, "research": research, "approved_proposals": approved, "reviews": reviews, "refused": refused, "prompts": prompts });
        outln!(
            "{}",
            serde_json::to_string_pretty(&value).map_err(|e| Failure::tick(e.to_string()))?
        );
    } else {
        let text = report::task_text(&task, phase, &next, &runs, &events);
        let mut text = report::with_checks(&text, &checks);
        if let Some(r) = &research {
            text = report::research::with_report(&text, r, &approved, task.issue_number);
        }
        let text = report::with_reviews(&text, &reviews);
        let text = report::with_family(&text, &family);
        out!("{text}");
        if verbose {
            // Issue 52: how big each run's prompt was.
            outln!("Prompts (newest first):");
            for (run, size) in store.prompt_sizes_of(&id)? {
                outln!("  {run}: {}", size.line());
            }
        }
    }
    Ok(())
}

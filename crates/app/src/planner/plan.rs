//! The planner agent's task list (DESIGN §6): parsing, whole-plan validation, and the tasks a
//! valid plan becomes; plus the deterministic fallback plan (spec §2.1 step 5).
//!
//! A plan is accepted whole or rejected whole: every problem is collected and reported at once,
//! each as a sentence naming the task key and the field, so the agent (or a person) can fix all
//! of them in one retry. Task ids are hashes of the plan signature and the key, so replaying the
//! same plan creates the same ids and nothing twice.
//!
//! Not for: running the agent, the target areas and hot-file dependencies added after validation
//! (see [`super::area`]), nor storing the tasks. Pure: no I/O, the time is an input.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::area;
use super::requirement::Requirement;
use crate::model::graph::{describe_cycle, find_cycle};
use crate::model::{short_hash, Lane, Risk, Role, Task, TaskId};
use crate::policy::Glob;
use crate::time::Timestamp;
use crate::verify::parse_command;

/// One task as the planner agent writes it (DESIGN §6). Unknown fields are rejected: a typo such
/// as `depends` must not silently drop the dependencies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PlannedTask {
    /// Names the task within the plan; `depends_on` refers to it.
    pub key: String,
    pub title: String,
    pub goal: String,
    /// `worker`, `tester` or `docser`.
    #[serde(default = "default_role")]
    pub role: String,
    #[serde(default)]
    pub allowed_paths: Vec<String>,
    #[serde(default)]
    pub commands: Vec<String>,
    /// Keys of this plan or ids of active tasks.
    #[serde(default)]
    pub depends_on: Vec<String>,
    #[serde(default)]
    pub priority: Option<i64>,
    /// `low`, `medium` or `high`.
    #[serde(default)]
    pub risk: Option<String>,
    /// Files the task expects to change: they decide its target area.
    #[serde(default)]
    pub touches: Vec<String>,
    #[serde(default)]
    pub notes: String,
    #[serde(default)]
    pub target_area: Option<String>,
}

fn default_role() -> String {
    Role::Worker.as_str().to_string()
}

/// The result file's shape. Unknown top-level fields are rejected like unknown task fields, the
/// same as `task add --from` does for the same format.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PlannerResult {
    tasks: Vec<serde_json::Value>,
}

/// The planner's result (`{"tasks": [...]}`) as planned tasks, or every task that does not parse.
pub fn parse_plan(json: &serde_json::Value) -> Result<Vec<PlannedTask>, Vec<String>> {
    const SHAPE: &str = r#"the planner result must be {"tasks": [{"key": "...", "title": "...", "goal": "...", ...}]}"#;
    // serde would also take a struct from an array, by position: only objects are meant.
    if !json.is_object() {
        return Err(vec![format!("{SHAPE}; found {}", json_kind(json))]);
    }
    let file: PlannerResult = serde_path_to_error::deserialize(json.clone())
        .map_err(|e| vec![format!("{SHAPE}; {}", located(&e))])?;
    let mut tasks = Vec::new();
    let mut errors = Vec::new();
    for (index, value) in file.tasks.into_iter().enumerate() {
        let key = value
            .get("key")
            .and_then(serde_json::Value::as_str)
            .filter(|k| !k.trim().is_empty())
            .map(str::to_string);
        let label = match &key {
            Some(key) => format!("`{key}` (tasks[{index}])"),
            None => format!("tasks[{index}]"),
        };
        if !value.is_object() {
            errors.push(format!(
                "{label}: a task must be an object with `key`, `title` and `goal`; found {}",
                json_kind(&value)
            ));
            continue;
        }
        match serde_path_to_error::deserialize::<_, PlannedTask>(value) {
            Ok(task) => tasks.push(task),
            Err(e) => errors.push(format!("{label}: {}", located(&e))),
        }
    }
    if errors.is_empty() {
        Ok(tasks)
    } else {
        Err(errors)
    }
}

/// A deserialization error with the field it is about, unless the message names it already.
fn located(e: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let path = e.path().to_string();
    let message = e.inner().to_string();
    if path == "." || message.starts_with("unknown field") {
        message
    } else {
        format!("field `{path}`: {message}")
    }
}

fn json_kind(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

/// What a plan is checked against and built with.
#[derive(Clone, Copy, Debug)]
pub struct PlanContext<'a> {
    /// Active tasks (queued, running, blocked) already in the state.
    pub existing: &'a [Task],
    /// Most tasks one plan may create (`planner.max_tasks`).
    pub max_tasks: u32,
    /// The plan signature (requirement and base head): the seed of the task ids.
    pub signature: &'a str,
    pub now: Timestamp,
    /// The requirement's allowed paths, for tasks that name none.
    pub default_allowed: &'a [String],
}

/// A validated plan: the tasks to create, queued, with ids, target areas and dependencies.
#[derive(Clone, Debug, PartialEq)]
pub struct ValidPlan {
    pub tasks: Vec<Task>,
}

/// Checks the whole plan, and builds its tasks only if every check passes; else every problem.
pub fn validate_plan(
    planned: &[PlannedTask],
    ctx: &PlanContext<'_>,
) -> Result<ValidPlan, Vec<String>> {
    let mut errors = Vec::new();
    if planned.is_empty() {
        errors.push("the plan has no tasks; list at least one task under `tasks`".to_string());
    }
    let limit = usize::try_from(ctx.max_tasks).unwrap_or(usize::MAX);
    if planned.len() > limit {
        errors.push(format!(
            "the plan has {} tasks, more than the limit of {} (`planner.max_tasks`); \
             merge related work into fewer tasks",
            planned.len(),
            ctx.max_tasks
        ));
    }

    let mut positions: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, task) in planned.iter().enumerate() {
        if !task.key.trim().is_empty() {
            positions.entry(task.key.as_str()).or_default().push(index);
        }
    }
    for (key, at) in &positions {
        if at.len() > 1 {
            let list: Vec<String> = at.iter().map(|i| format!("tasks[{i}]")).collect();
            errors.push(format!(
                "`{key}`: the key is used by {}; give each task its own key",
                list.join(", ")
            ));
        }
    }
    let existing: BTreeSet<&str> = ctx.existing.iter().map(|t| t.id.as_str()).collect();

    let mut kinds = Vec::with_capacity(planned.len());
    let mut uses_default = false;
    for (index, task) in planned.iter().enumerate() {
        let label = if task.key.trim().is_empty() {
            errors.push(format!(
                "tasks[{index}]: `key` is empty; give every task a short unique key such as `api`"
            ));
            format!("tasks[{index}]")
        } else {
            format!("`{}`", task.key)
        };
        for (field, value) in [("title", &task.title), ("goal", &task.goal)] {
            if value.trim().is_empty() {
                errors.push(format!(
                    "{label}: `{field}` is empty; say what the task is for"
                ));
            }
        }
        let role = task
            .role
            .trim()
            .to_lowercase()
            .parse::<Role>()
            .unwrap_or_else(|_| {
                errors.push(format!(
                    "{label}: role `{}` is unknown; use worker, tester or docser",
                    task.role
                ));
                Role::Worker
            });
        let risk = match &task.risk {
            Some(word) => word
                .trim()
                .to_lowercase()
                .parse::<Risk>()
                .unwrap_or_else(|_| {
                    errors.push(format!(
                        "{label}: risk `{word}` is unknown; use low, medium or high"
                    ));
                    Risk::Low
                }),
            None => Risk::Low,
        };
        kinds.push((role, risk));

        for dep in &task.depends_on {
            if *dep == task.key {
                errors.push(format!(
                    "{label}: depends on itself; remove `{dep}` from its `depends_on`"
                ));
            } else if !positions.contains_key(dep.as_str()) && !existing.contains(dep.as_str()) {
                errors.push(format!(
                    "{label}: depends on `{dep}`, which is neither a key in this plan nor an \
                     existing task; use a key of this plan or the id of an active task"
                ));
            }
        }
        for (field, paths) in [
            ("allowed_paths", &task.allowed_paths),
            ("touches", &task.touches),
        ] {
            for path in paths {
                if let Some(problem) = path_problem(path) {
                    errors.push(format!("{label}: `{field}` entry `{path}` {problem}"));
                }
            }
        }
        uses_default |= task.allowed_paths.is_empty();
        for (i, command) in task.commands.iter().enumerate() {
            if let Err(e) = parse_command(command) {
                errors.push(format!("{label}: `commands[{i}]`: {e}"));
            }
        }
    }
    if uses_default && !is_everything(ctx.default_allowed) {
        for path in ctx.default_allowed {
            if let Some(problem) = path_problem(path) {
                errors.push(format!(
                    "the requirement's Allowed Paths entry `{path}` {problem}; tasks that name \
                     no `allowed_paths` would get it"
                ));
            }
        }
    }

    // Cycles among the plan's own tasks (existing tasks cannot depend on new ones). Self
    // dependencies are reported above, not again as a cycle.
    let key_edges: BTreeMap<TaskId, Vec<TaskId>> = planned
        .iter()
        .map(|t| {
            let deps = t
                .depends_on
                .iter()
                .filter(|d| **d != t.key && positions.contains_key(d.as_str()))
                .map(|d| TaskId(d.clone()))
                .collect();
            (TaskId(t.key.clone()), deps)
        })
        .collect();
    if let Some(cycle) = find_cycle(&key_edges) {
        let first = cycle.first().map(TaskId::as_str).unwrap_or_default();
        errors.push(format!(
            "`{first}`: the dependencies form a cycle ({}); remove one of these dependencies",
            describe_cycle(&cycle)
        ));
    }

    if !errors.is_empty() {
        return Err(errors);
    }
    Ok(ValidPlan {
        tasks: build(planned, &kinds, ctx),
    })
}

/// The tasks of a plan that passed every check.
fn build(planned: &[PlannedTask], kinds: &[(Role, Risk)], ctx: &PlanContext<'_>) -> Vec<Task> {
    let ids: BTreeMap<&str, TaskId> = planned
        .iter()
        .map(|t| (t.key.as_str(), task_id(ctx.signature, &t.key)))
        .collect();
    let n = planned.len();
    let mut tasks: Vec<Task> = planned
        .iter()
        .zip(kinds)
        .enumerate()
        .map(|(index, (p, (role, risk)))| {
            let id = task_id(ctx.signature, &p.key);
            let mut task = Task::new(id, p.title.trim(), p.goal.trim(), ctx.now);
            task.role = *role;
            task.lane = lane_of(*role);
            task.risk = *risk;
            task.priority = p.priority.unwrap_or_else(|| default_priority(n, index));
            task.allowed_paths = if !p.allowed_paths.is_empty() {
                dedup(&p.allowed_paths)
            } else if is_everything(ctx.default_allowed) {
                // The config's path policy applies instead of a blanket `**`.
                Vec::new()
            } else {
                dedup(ctx.default_allowed)
            };
            task.touches = dedup(&p.touches);
            task.commands = dedup(&p.commands);
            task.notes = p.notes.clone();
            task.dependencies = dedup(&p.depends_on)
                .iter()
                .map(|dep| {
                    ids.get(dep.as_str())
                        .cloned()
                        .unwrap_or_else(|| TaskId(dep.clone()))
                })
                .collect();
            task.target_area =
                area::target_area(p.target_area.as_deref(), &task.touches, &task.allowed_paths);
            task
        })
        .collect();
    area::add_hot_file_dependencies(&mut tasks, ctx.existing);
    tasks
}

/// The id of a planned task: the same plan and key always give the same id.
pub fn task_id(signature: &str, key: &str) -> TaskId {
    TaskId(short_hash(&["plan", signature, key]))
}

/// spec §2.1 step 5: earlier tasks first, `(n - index) * 10`.
fn default_priority(n: usize, index: usize) -> i64 {
    i64::try_from(n.saturating_sub(index))
        .unwrap_or(i64::MAX)
        .saturating_mul(10)
}

fn lane_of(role: Role) -> Lane {
    match role {
        Role::Docser => Lane::Docser,
        Role::Worker | Role::Tester | Role::Research => Lane::Feature,
    }
}

/// `["**"]`: the requirement named no paths.
fn is_everything(paths: &[String]) -> bool {
    matches!(paths, [only] if only == "**")
}

fn dedup(items: &[String]) -> Vec<String> {
    let mut seen = BTreeSet::new();
    items
        .iter()
        .filter(|item| seen.insert(item.as_str()))
        .cloned()
        .collect()
}

/// Why a path pattern cannot be used, as the end of a sentence; `None` when it can.
fn path_problem(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let drive = bytes.len() >= 3
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && (bytes[2] == b'/' || bytes[2] == b'\\');
    if path.starts_with('/') || path.starts_with('\\') || drive {
        return Some("is absolute; write it relative to the repository root".to_string());
    }
    if path.split(['/', '\\']).any(|segment| segment == "..") {
        return Some(
            "has a `..` segment, which would leave the repository; write it relative to the \
             repository root"
                .to_string(),
        );
    }
    Glob::new(path)
        .err()
        .map(|e| format!("is not a valid pattern: {}", e.problem))
}

/// spec §2.1 step 5 fallback: one task per acceptance criterion, in order, no dependencies.
///
/// When the requirement names no paths (`["**"]`) the tasks name none either, so the config's
/// path policy applies rather than a blanket `**`.
pub fn fallback_plan(req: &Requirement) -> Vec<PlannedTask> {
    let n = req.acceptance_criteria.len();
    let allowed_paths = if is_everything(&req.allowed_paths) {
        Vec::new()
    } else {
        req.allowed_paths.clone()
    };
    req.acceptance_criteria
        .iter()
        .enumerate()
        .map(|(index, criterion)| PlannedTask {
            key: format!("ac-{}", index + 1),
            title: format!("Implement: {}", shorten(criterion, 50)),
            goal: criterion.clone(),
            role: Role::Worker.as_str().to_string(),
            allowed_paths: allowed_paths.clone(),
            commands: Vec::new(),
            depends_on: Vec::new(),
            priority: Some(default_priority(n, index)),
            risk: Some(req.max_risk().as_str().to_string()),
            touches: Vec::new(),
            notes: String::new(),
            target_area: None,
        })
        .collect()
}

/// The first `max` characters, with `…` when something was cut (and no space before it).
fn shorten(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((cut, _)) => format!("{}…", text[..cut].trim_end()),
        None => text.to_string(),
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;

//! A planner run (spec §2.1): the requirement, a repo map, the active tasks and recent review
//! feedback go to the planner agent; its task list is validated whole (one retry with the errors
//! fed back), or, without a usable agent, the deterministic fallback plans one task per
//! acceptance criterion; tasks that need approval are held. Produces a plan record and its tasks.
//! Not for: parsing and validating the plan (`planner`), whether the planner runs
//! (`engine::planner_gate`), or recording what it produced (`tick::record`, `store::plans`).

use super::Act;
use crate::config::AgentRole;
use crate::engine::learned::book::in_force;
use crate::engine::learned::inject;
use crate::engine::learned::vet::{vet, Vetted};
use crate::executor;
use crate::git::Git;
use crate::model::{short_hash, BlockReason, PlanRecord, PlanStatus, RunId, Task, TaskStatus};
use crate::planner::{
    fallback_plan, parse_plan, parse_requirement, validate_plan, PlanContext, Requirement,
};
use crate::prompt::{ActiveTask, JudgeFeedback, PlannerPrompt, RequirementPrompt};
use crate::time::Timestamp;
use crate::workspace::Workspace;

/// What the planner is given besides the requirement.
pub struct PlanRequest<'a> {
    pub requirement: &'a str,
    pub requirement_hash: &'a str,
    pub base_head: &'a str,
    pub signature: &'a str,
    /// Ask the agent (else the fallback).
    pub agent: bool,
    pub existing: &'a [Task],
    pub feedback: Vec<JudgeFeedback>,
    pub now: Timestamp,
}

/// A planner run's attempt and tasks (kept until they are recorded: `tick::unsaved`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct PlanResult {
    pub record: PlanRecord,
    pub tasks: Vec<Task>,
    /// What the planner agent spent, what the proxy metered and refused for it (issue 37).
    pub spend: Option<crate::store::AgentSpend>,
}

pub fn run_planner(act: &Act<'_>, req: &PlanRequest<'_>) -> PlanResult {
    let mut spend = None;
    let mut result = plan(act, req, &mut spend);
    result.spend = spend;
    result
}

fn plan(
    act: &Act<'_>,
    req: &PlanRequest<'_>,
    spend: &mut Option<crate::store::AgentSpend>,
) -> PlanResult {
    let requirement = parse_requirement(req.requirement);
    let id = short_hash(&["plan", req.signature, &req.now.0.to_string()]);
    let record = |status: PlanStatus, source: &str, count: usize, errors: Vec<String>| PlanRecord {
        id: id.clone(),
        signature: req.signature.to_string(),
        requirement_hash: req.requirement_hash.to_string(),
        base_head: req.base_head.to_string(),
        status,
        source: source.to_string(),
        task_count: u32::try_from(count).unwrap_or(u32::MAX),
        errors,
        created_at: req.now,
    };
    let ctx = PlanContext {
        existing: req.existing,
        max_tasks: act.config.planner.max_tasks,
        signature: req.signature,
        now: req.now,
        default_allowed: &requirement.allowed_paths,
    };
    if !req.agent {
        let planned = fallback_plan(&requirement);
        return match validate_plan(&planned, &ctx) {
            Ok(plan) => {
                let tasks = gate(act, plan.tasks, &id);
                PlanResult {
                    spend: None,
                    record: record(PlanStatus::Created, "fallback", tasks.len(), Vec::new()),
                    tasks,
                }
            }
            Err(errors) => PlanResult {
                spend: None,
                record: record(PlanStatus::Rejected, "fallback", 0, errors),
                tasks: Vec::new(),
            },
        };
    }
    let mut feedback_errors: Vec<String> = Vec::new();
    for attempt in 0..2u32 {
        let value = match ask_agent(act, req, &requirement, &feedback_errors, attempt, spend) {
            Ok(v) => v,
            Err(e) => {
                return PlanResult {
                    spend: None,
                    record: record(PlanStatus::Failed, "agent", 0, vec![e]),
                    tasks: Vec::new(),
                }
            }
        };
        if value
            .get("tasks")
            .and_then(|t| t.as_array())
            .is_some_and(|a| a.is_empty())
        {
            // The planner found nothing left to do: a valid, empty plan.
            return PlanResult {
                spend: None,
                record: record(PlanStatus::Created, "agent", 0, Vec::new()),
                tasks: Vec::new(),
            };
        }
        let checked = parse_plan(&value).and_then(|planned| validate_plan(&planned, &ctx));
        match checked {
            Ok(plan) => {
                if let Some(leak) = secret_in(act, &plan.tasks) {
                    return PlanResult {
                        spend: None,
                        record: record(PlanStatus::Rejected, "agent", 0, vec![leak]),
                        tasks: Vec::new(),
                    };
                }
                let tasks = gate(act, vet_commands(act, plan.tasks), &id);
                return PlanResult {
                    spend: None,
                    record: record(PlanStatus::Created, "agent", tasks.len(), Vec::new()),
                    tasks,
                };
            }
            Err(errors) => feedback_errors = errors,
        }
    }
    PlanResult {
        spend: None,
        record: record(PlanStatus::Rejected, "agent", 0, feedback_errors),
        tasks: Vec::new(),
    }
}

/// Issue 48: a plan is text an agent hands back; a secret the runner holds, in any encoding,
/// in a task's title, goal or notes refuses the plan (named by task, never quoted).
fn secret_in(act: &Act<'_>, tasks: &[Task]) -> Option<String> {
    let mut scanner = crate::scan::Scanner::new(act.redactor.values());
    for task in tasks {
        let text = format!("{}\n{}\n{}", task.title, task.goal, task.notes);
        scanner.secrets_in_text(&format!("the plan's task {}", task.id), &text);
    }
    let found = scanner.findings();
    (!found.is_empty()).then(|| {
        format!(
            "the plan holds a secret the runner holds: {}",
            crate::scan::summary(&found)
        )
    })
}

/// The lessons in force now.
fn lessons(act: &Act<'_>) -> Vec<crate::model::learned::Lesson> {
    let learned = act.learned;
    in_force(
        &learned.lessons,
        learned.host.as_ref(),
        act.now,
        &act.config.context,
    )
}

/// Issue 52: no task keeps a verification command whose program the sandbox lacks: it is run
/// by a tool of its group the sandbox has, or left out; the task's notes say which.
fn vet_commands(act: &Act<'_>, mut tasks: Vec<Task>) -> Vec<Task> {
    let lessons = lessons(act);
    for task in &mut tasks {
        let vetted: Vec<Vetted> = task
            .commands
            .iter()
            .map(|c| vet(c, act.learned.host.as_ref(), &lessons))
            .collect();
        let mut commands: Vec<String> = Vec::new();
        for v in &vetted {
            if let Some(note) = v.note() {
                tracing::info!("plan: task {}: {note}", task.id);
                if !task.notes.is_empty() {
                    task.notes.push('\n');
                }
                task.notes.push_str(&note);
            }
            if let Some(c) = v.command().filter(|c| !commands.iter().any(|k| k == c)) {
                commands.push(c.to_string());
            }
        }
        task.commands = commands;
    }
    tasks
}

/// `execution_mode: ask` (every task) or `decide` (high-risk tasks) hold new tasks for approval.
fn gate(act: &Act<'_>, mut tasks: Vec<Task>, plan_id: &str) -> Vec<Task> {
    for task in &mut tasks {
        let origin = crate::engine::approval::Origin::Planner;
        let hold =
            crate::engine::approval::held(act.config.execution_mode, origin, task.risk).is_some();
        if !hold && act.config.mode == crate::model::Mode::Github {
            // Mirrored as an issue first (spec §2.1 step 10); queued once it is linked.
            task.status = TaskStatus::Blocked;
            task.block_reason = Some(BlockReason::IssueLinking);
            task.status_reason = Some(format!("plan {plan_id}: waits for its GitHub issue"));
        }
        if hold {
            task.status = TaskStatus::Blocked;
            task.block_reason = Some(BlockReason::AwaitingHuman);
            task.needs_approval = true;
            task.status_reason = Some(format!(
                "plan {plan_id}: waiting for approval. Decide: `opentiger task approve {}` (or `--all`), or `opentiger task cancel {}`",
                task.id, task.id
            ));
        }
    }
    tasks
}

/// Runs the planner agent in a scratch copy of the base branch; its JSON result.
fn ask_agent(
    act: &Act<'_>,
    req: &PlanRequest<'_>,
    requirement: &Requirement,
    errors: &[String],
    attempt: u32,
    spend: &mut Option<crate::store::AgentSpend>,
) -> Result<serde_json::Value, String> {
    let role = AgentRole::Planner;
    let chosen = super::executors::choose(act, role)?;
    let (agent, exec) = (&chosen.agent, &chosen.exec);
    let git = Git::new(act.repo);
    let ws = Workspace::open_detached(&git, "planner", req.base_head).map_err(|e| e.to_string())?;
    let scratch = ws.scratch();
    let result_file = scratch.join("result.json");
    let files = git
        .run(&["ls-files", "-z"])
        .map_err(|e| e.to_string())
        .unwrap_or_default();
    let all: Vec<String> = files
        .split('\0')
        .filter(|f| !f.is_empty())
        .map(String::from)
        .collect();
    let shown = act.config.planner.repo_map_files as usize;
    let mut notes = requirement.notes.clone();
    if !errors.is_empty() {
        notes.push_str("\n\nYour previous task list was rejected; fix these problems:\n");
        for e in errors {
            notes.push_str(&format!("- {e}\n"));
        }
    }
    let data = PlannerPrompt {
        requirement: RequirementPrompt {
            goal: requirement.goal.clone(),
            acceptance_criteria: requirement.acceptance_criteria.clone(),
            constraints: requirement.constraints.clone(),
            allowed_paths: requirement.allowed_paths.clone(),
            notes: Some(notes).filter(|n| !n.trim().is_empty()),
        },
        repo_files: all.iter().take(shown).cloned().collect(),
        repo_files_omitted: all.len().saturating_sub(shown),
        active_tasks: req
            .existing
            .iter()
            .map(|t| ActiveTask {
                id: t.id.to_string(),
                title: t.title.clone(),
                status: t.state().to_string(),
                role: t.role.to_string(),
            })
            .collect(),
        judge_feedback: req.feedback.clone(),
        max_tasks: Some(act.config.planner.max_tasks),
        result_file: Some(result_file.display().to_string())
            .filter(|_| executor::abilities(agent.executor).writes_result_file),
        host_context: Some(inject::host_only(
            act.learned.host.as_ref(),
            &inject::Scope {
                commands: act.config.verify.commands.clone(),
            },
            &act.config.context,
        ))
        .filter(|t| !t.is_empty()),
        missing_tools: inject::missing_tools(act.learned.host.as_ref(), &lessons(act)),
    };
    let prompt = act
        .templates
        .render_planner(&data)
        .map_err(|e| e.to_string())?;
    let run_id = RunId(short_hash(&[
        "planner",
        req.signature,
        &attempt.to_string(),
    ]));
    let pseudo = Task::new(
        crate::model::TaskId::from("planner"),
        "Plan the requirement",
        &requirement.goal,
        req.now,
    );
    // The planner reads the base; what it does there is never read back.
    let launch = super::launch::AgentLaunch::of(
        act,
        role,
        &chosen,
        super::launch::Folders {
            workspace: &ws.path,
            writes: false,
            run_folder: ws.run_folder(),
            scratch: &scratch,
        },
        vec![
            ("OPENTIGER_ROLE", "planner".to_string()),
            ("OPENTIGER_RUN_ID", run_id.to_string()),
            ("OPENTIGER_WORKSPACE", ws.path.display().to_string()),
        ],
    );
    let ran = super::launch::run_agent(launch, exec.as_ref(), (&pseudo, &run_id), prompt, attempt)
        .map_err(|f| f.message)?;
    drop(ws);
    let seen = ran.net;
    let spent = spend.get_or_insert_with(|| crate::store::AgentSpend {
        role: "planner".to_string(),
        run_id: Some(run_id.clone()),
        executor: Some(chosen.label.clone()),
        ..Default::default()
    });
    super::network::account_agent(spent, &seen.traffic, &ran.result);
    let result = ran.result.map_err(|e| e.to_string())?;
    if let (Some(hit), false) = (&ran.limit, result.exit == executor::AgentExit::Finished) {
        return Err(hit.failure("the planner agent"));
    }
    let stopped = seen.stop.as_ref().map(|(_, why)| why.as_str());
    super::agent::gave_no_answer("planner", &result, stopped, agent, act.redactor)?;
    // Task titles and goals are stored and posted as issues: no secret goes with them.
    result
        .result
        .map(|v| act.redactor.redact_json(v))
        .ok_or_else(|| {
            result.result_error.unwrap_or_else(|| {
                "the planner wrote no task list to $OPENTIGER_RESULT_FILE".to_string()
            })
        })
}

//! A task run (spec §2.3): research, direct mode and conflict fixes go to their own modules; a
//! worker/tester/docser run in a worktree is workspace, prompt, agent, then the runner's own checks
//! on the change it imported (what it holds, the path policy, the verification commands), the
//! commit and the push of the task branch. Produces an outcome; the caller records it. Not for:
//! what the outcome does to the task (`engine::outcome`) or the pull request (`tick::publish`).

use std::path::Path;

pub use super::agent::WorkResult;
use super::agent::{import, run_agent_with, setup, setup_text, AgentJob};
use super::checks::{self, CheckFailure};
use super::{Act, Brief, Delivery};
use crate::git::{Git, NumstatEntry};
use crate::model::{FailureCode, Mode, Role, RunId, Task, TaskKind};
use crate::store::RunRecord;
use crate::workspace::{task_branch, Branches, Start, Workspace};

#[path = "work_conflicts.rs"]
mod conflicts;
#[path = "work_direct.rs"]
mod direct;
#[path = "work_held.rs"]
mod held;
use conflicts::{fix_conflicts, Held};
use direct::direct;
pub use held::hold;

/// Runs one claimed task. Errors of the runner itself (git broken, disk full) come back as a
/// failed outcome too: the task is retried under its budget, never lost.
pub fn run_task(act: &Act<'_>, task: &Task, run_id: &RunId, brief: &Brief) -> WorkResult {
    let mut record = RunRecord::default();
    match (task.role, act.config.mode) {
        (Role::Research, _) => super::research::research(act, task, run_id, brief, &mut record),
        (_, Mode::Direct) => direct(act, task, run_id, brief, &mut record),
        (_, Mode::LocalGit | Mode::Github) => in_worktree(act, task, run_id, brief, &mut record),
    }
    .unwrap_or_else(|failure| WorkResult::failed(failure.code, failure.message, record))
}

fn in_worktree(
    act: &Act<'_>,
    task: &Task,
    run_id: &RunId,
    brief: &Brief,
    record: &mut RunRecord,
) -> Result<WorkResult, CheckFailure> {
    let branch = task_branch(task);
    let git = Git::new(act.repo);
    let base = &act.config.base_branch;
    let branches = Branches::new(&git, &act.config.remote)
        .pushing_heads_with(crate::credentials::Token::for_heads(act.config));
    if act.delivery == Delivery::Push {
        branches.refresh(&[base, &branch]).map_err(setup)?;
    }
    // Work continues from the branch as published (an AutoFix, a retry after a lost run), else
    // starts from the base as published.
    let tip = match branches.remote {
        Some(_) => branches.head(&branch).map_err(setup)?,
        None => None,
    };
    // Issue 36: a change a person approved after the threat scan held it starts the run.
    let approved = held::approved_start(act, tip.as_deref(), brief);
    let tip = approved.clone().or(tip);
    let base_ref = branches.tracking(base);
    let start =
        crate::workspace::start_branch(&git, &branch, &base_ref, tip.as_deref()).map_err(setup)?;
    record.branch = Some(branch.clone());
    record.start_sha = Some(start.clone());
    if approved.as_deref() == Some(start.as_str()) {
        return held::deliver_approved(act, &branches, (task, brief), &branch, &start, record);
    }
    if task.kind == TaskKind::AutofixConflict {
        let result = fix_conflicts(
            act,
            task,
            (run_id, brief),
            (&branch, &start),
            &base_ref,
            record,
        )
        .map_err(|held| match held {
            Held::Findings(head, findings) => {
                held::hold(&git, task, (&start, &head), &findings, record)
            }
            Held::Failed(failure) => failure,
        })?;
        if record.head_sha.as_deref() != Some(start.as_str()) {
            deliver(act, &branches, &branch)?;
        }
        return Ok(result);
    }
    let ws = Workspace::create(
        &git,
        "run",
        Start {
            commit: &start,
            files: None,
            branch: Some(&branch),
        },
    )
    .map_err(setup)?;
    let agent = match run_agent(act, task, run_id, brief, &ws, record) {
        Ok(agent) => agent,
        Err(failure) if record.cut_short => {
            return Err(keep_progress(
                act, task, run_id, &ws, &branches, record, failure,
            ))
        }
        Err(failure) => return Err(failure),
    };
    let change = import(&ws, act.config)?;
    if change.is_empty() {
        if let Some(adopted) = adopt_earlier_commit(act, task, &ws, &base_ref, &branches, record)? {
            return Ok(adopted);
        }
    }
    let texts = [("the PR body", agent.as_deref().unwrap_or(""))];
    let findings = crate::runner::check_content(
        task,
        act.config,
        &git,
        &[&ws.base_tree, &change.tree],
        &change.links,
        act.redactor,
        &texts,
    )?;
    let (passed, summary) = check_change(act, task, &ws.path, &change.numstat, agent, record)?;
    if change.is_empty() {
        return Ok(noop_success(passed, summary, record));
    }
    let mut findings = findings;
    if act.config.scan.agent {
        let texts = [("the PR body", summary.as_deref().unwrap_or(""))];
        let range = (ws.base_tree.as_str(), change.tree.as_str());
        findings.extend(super::detect::detect(
            act, task, run_id, range, &texts, record,
        )?);
    }
    let head = ws
        .commit(
            &change.tree,
            None,
            &format!("[opentiger] {}", task.title),
            &format!("Task: {}\nRun: {run_id}", task.id),
        )
        .map_err(setup)?;
    let approval = held::approved_rebuilt(brief, &start, &change.tree);
    let mut summary = summary;
    match (findings.is_empty(), approval) {
        (true, _) => {}
        // Issue 36: exactly the change a person approved after it was held: it goes out, once,
        // its PR body naming what held it (issue 48).
        (false, Some(approved)) => {
            record.used_approval = Some(approved.head.clone());
            let listed: Vec<String> = findings
                .iter()
                .map(|f| format!("{f} [{}]", f.rule.word()))
                .collect();
            let note = held::approved_findings(&listed);
            summary = Some(format!("{}{note}", summary.unwrap_or_default()));
            record.summary = summary.clone();
        }
        // Nothing leaves the job; a person decides on exactly this change.
        (false, None) => {
            return Err(held::hold(&git, task, (&start, &head), &findings, record));
        }
    }
    deliver(act, &branches, &branch)?;
    record.head_sha = Some(head);
    Ok(success(summary, record))
}

/// An agent cut short (timeout, turn or spending cap) leaves unfinished work: it is committed
/// to the task branch as work in progress (and published), so the next attempt starts from it
/// instead of from scratch. Only what the path policy allows is kept. The run still fails with
/// its cause; the message says what was kept.
fn keep_progress(
    act: &Act<'_>,
    task: &Task,
    run_id: &RunId,
    ws: &Workspace,
    branches: &Branches,
    record: &mut RunRecord,
    mut failure: CheckFailure,
) -> CheckFailure {
    let kept = (|| -> Result<Option<String>, String> {
        let change = import(ws, act.config).map_err(|e| e.message)?;
        if change.is_empty() {
            return Ok(None);
        }
        let content = || {
            crate::runner::check_content(
                task,
                act.config,
                ws.repo(),
                &[&ws.base_tree, &change.tree],
                &change.links,
                act.redactor,
                &[],
            )
        };
        let findings = checks::check_policy(task, act.config, &change.numstat)
            .and_then(|()| content())
            .map_err(|refused| format!("it breaks the path policy ({})", refused.message))?;
        if !findings.is_empty() {
            return Err(format!(
                "the threat scan would hold them ({})",
                crate::scan::summary(&findings)
            ));
        }
        let head = ws
            .commit(
                &change.tree,
                None,
                &format!("[opentiger] WIP: {}", task.title),
                &format!(
                    "Work in progress: the agent was cut short; the next attempt continues from here.\n\nTask: {}\nRun: {run_id}",
                    task.id
                ),
            )
            .map_err(|e| e.to_string())?;
        deliver(act, branches, &ws.branch).map_err(|e| e.message)?;
        Ok(Some(head))
    })();
    match kept {
        Ok(Some(head)) => {
            let note = format!(
                "; its work in progress is committed to {} ({}) and the next attempt continues from it",
                ws.branch,
                crate::engine::verdict::short_sha(&head)
            );
            failure.message = after_first_line(&failure.message, &note);
            record.head_sha = Some(head);
        }
        Ok(None) => {}
        Err(why) => {
            let note = format!("; its unfinished changes were not kept: {why}");
            failure.message = after_first_line(&failure.message, &note);
        }
    }
    failure
}

/// Pushes the task branch ([`Delivery::Push`]), or leaves it for `apply` ([`Delivery::Keep`]).
fn deliver(act: &Act<'_>, branches: &Branches, branch: &str) -> Result<(), CheckFailure> {
    match act.delivery {
        Delivery::Push => branches.publish(branch).map_err(|e| CheckFailure {
            code: FailureCode::BranchDivergedRequiresRecreate,
            message: format!("branch_diverged_requires_recreate: could not push {branch}: {e}"),
        }),
        Delivery::Keep => Ok(()),
    }
}

/// `text` with `note` added to its first line (the line reports and `task show` print).
fn after_first_line(text: &str, note: &str) -> String {
    match text.split_once('\n') {
        Some((first, rest)) => format!("{first}{note}\n{rest}"),
        None => format!("{text}{note}"),
    }
}

/// An earlier run of this task committed its work to the task branch, but its outcome was
/// never recorded (its tick died, perhaps before the push): the branch already holds the
/// change, so this run adopts it after the same checks — and publishes it, since nothing says
/// the dead tick did — instead of failing with "no changes".
fn adopt_earlier_commit(
    act: &Act<'_>,
    task: &Task,
    ws: &Workspace,
    base_ref: &str,
    branches: &Branches,
    record: &mut RunRecord,
) -> Result<Option<WorkResult>, CheckFailure> {
    let marker = format!("Task: {}", task.id);
    let range = format!("{base_ref}..{}", ws.start);
    let repo = ws.repo();
    let ours = repo
        .run(&["log", "-F", "--grep", &marker, "--format=%H", &range])
        .map_err(setup)?;
    if ours.trim().is_empty() {
        return Ok(None);
    }
    let fork = repo
        .run(&["merge-base", base_ref, &ws.start])
        .map_err(setup)?;
    let committed = crate::workspace::changed_files(repo, &fork, &ws.start).map_err(setup)?;
    checks::check_policy(task, act.config, &committed)?;
    // Issue 36: a commit a killed tick left may be one the threat scan was about to hold.
    let links = crate::workspace::links_between(repo, &fork, &ws.start).map_err(setup)?;
    let findings = crate::runner::check_content(
        task,
        act.config,
        repo,
        &[&fork, &ws.start],
        &links,
        act.redactor,
        &[],
    )?;
    if !findings.is_empty() {
        return Err(held::hold(
            repo,
            task,
            (&fork, &ws.start),
            &findings,
            record,
        ));
    }
    let verified = checks::run_verification(act, task, &ws.path, &committed);
    record.verification = verified.commands.clone();
    crate::model::network::merge_refusals(&mut record.refused, &verified.refused);
    verified.passed()?;
    deliver(act, branches, &ws.branch)?;
    record.head_sha = Some(ws.start.clone());
    let summary =
        "adopted the change an earlier, unrecorded run of this task committed".to_string();
    record.summary = Some(summary.clone());
    Ok(Some(success(Some(summary), record)))
}

/// Runs the agent; a failed, cut-short or garbled run is a failure with its output.
fn run_agent(
    act: &Act<'_>,
    task: &Task,
    run_id: &RunId,
    brief: &Brief,
    ws: &Workspace,
    record: &mut RunRecord,
) -> Result<Option<String>, CheckFailure> {
    let job = AgentJob {
        act,
        task,
        run_id,
        brief,
        ws,
        writes_workspace: true,
    };
    // Issue 52: what the loop learned, within its budget; the prompt's size is recorded.
    let sections = super::prompts::context_sections(act, task);
    record.prompt = Some(super::prompts::size_of("", &sections));
    run_agent_with(
        &job,
        record,
        |scratch, can| {
            let result = scratch.join("result.json");
            let prompt = super::prompts::worker(act, task, brief, &sections, (&result, can))?;
            Ok((prompt, Vec::new()))
        },
        |result, _| Ok(result.summary.clone()),
    )
}

/// Policy and verification of a change; `Ok((commands that passed, agent summary))`.
fn check_change(
    act: &Act<'_>,
    task: &Task,
    cwd: &Path,
    changes: &[NumstatEntry],
    summary: Option<String>,
    record: &mut RunRecord,
) -> Result<(usize, Option<String>), CheckFailure> {
    if changes.is_empty() && !may_change_nothing(task) {
        return Err(CheckFailure {
            code: FailureCode::NoActionableChanges,
            message: "No changes were made: the agent finished without changing any file"
                .to_string(),
        });
    }
    checks::check_policy(task, act.config, changes)?;
    let verified = checks::run_verification(act, task, cwd, changes);
    record.verification = verified.commands.clone();
    crate::model::network::merge_refusals(&mut record.refused, &verified.refused);
    let passed = verified.passed()?.len();
    if changes.is_empty() && passed == 0 {
        return Err(CheckFailure {
            code: FailureCode::NoActionableChanges,
            message:
                "No changes were made and no verification command ran to confirm nothing was needed"
                    .to_string(),
        });
    }
    Ok((passed, summary))
}

/// spec §2.3.1: a tester or docs task may conclude that nothing needs changing, if verification
/// confirms it; a worker must change something.
fn may_change_nothing(task: &Task) -> bool {
    match task.role {
        Role::Tester | Role::Docser => true,
        // A research task never reaches these checks (`runner::research`).
        Role::Worker | Role::Research => false,
    }
}

fn success(summary: Option<String>, record: &mut RunRecord) -> WorkResult {
    WorkResult::succeeded(summary.unwrap_or_default(), false, record)
}

fn noop_success(passed: usize, summary: Option<String>, record: &mut RunRecord) -> WorkResult {
    let message = format!("nothing needed changing; {passed} verification command(s) passed");
    record.summary = Some(summary.map_or(message.clone(), |s| format!("{s} ({message})")));
    WorkResult::succeeded(message, true, record)
}

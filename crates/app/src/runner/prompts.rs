//! Filling the worker, research and judge prompt templates from a task and its brief (earlier
//! attempts, the issue it comes from). Text from outside (agent output, diffs) is redacted here
//! before it reaches a prompt; the issue's text was redacted when it was read. The templates fence
//! all of it as untrusted. Not for: the templates, their data and rendering (`prompt`), or the
//! planner's and detector's prompts (`runner::planner`, `runner::detect` fill their own).

use std::path::Path;

use super::checks::{allowed_paths, CheckFailure};
use super::{Act, Brief};
use crate::engine::classify::classify;
use crate::engine::import::acceptance_criteria;
use crate::engine::learned::book::in_force;
use crate::engine::learned::inject::{self, Scope, Sections};
use crate::executor::Abilities;
use crate::model::learned::PromptSize;
use crate::model::{FailureCode, IssueSpec, Run, RunStatus, Task};
use crate::prompt::{IssueText, JudgePrompt, PriorFailure, VerificationResult, WorkerPrompt};

/// Earlier failed attempts shown to the next one (spec §2.3 step 3: the last three).
const FAILURES_SHOWN: usize = 3;

/// What `task`'s run will run (issue 52: the lessons that matter to it, the tools its prompt
/// names first): its checks as `verify` plans them for the paths it touches, every
/// `verify.when_changed` rule's when it names none.
pub(super) fn scope(act: &Act<'_>, task: &Task) -> Scope {
    let verify = &act.config.verify;
    let mut commands: Vec<String> =
        match crate::verify::plan_commands(&task.commands, verify, task.role, &task.touches) {
            Ok(plan) => plan.commands.iter().map(|c| c.spec.text.clone()).collect(),
            Err(_) => task
                .commands
                .iter()
                .chain(&verify.commands)
                .cloned()
                .collect(),
        };
    if task.touches.is_empty() {
        let rules = verify.when_changed.iter().flat_map(|w| &w.commands);
        commands.extend(rules.flat_map(|c| c.split("&&").map(|p| p.trim().to_string())));
    }
    Scope { commands }
}

/// The host context and failure hints of `task`'s prompt (issue 52), within
/// `context.*_chars`: the lessons in force at `act.now`, ranked for the task.
pub(super) fn context_sections(act: &Act<'_>, task: &Task) -> Sections {
    let learned = act.learned;
    let context = &act.config.context;
    let lessons = in_force(&learned.lessons, learned.host.as_ref(), act.now, context);
    inject::sections(learned.host.as_ref(), &lessons, &scope(act, task), context)
}

/// The size of a prompt given its sections, for the run's record.
pub(super) fn size_of(prompt: &str, sections: &Sections) -> PromptSize {
    let count = |t: &str| u64::try_from(t.chars().count()).unwrap_or(u64::MAX);
    PromptSize {
        chars: count(prompt),
        host_chars: count(&sections.host),
        hints_chars: count(&sections.hints),
    }
}

/// The worker's prompt, asking only for what its executor can do (`can`, issue 39), with its
/// host context and failure hints (`sections`).
pub fn worker(
    act: &Act<'_>,
    task: &Task,
    brief: &Brief,
    sections: &Sections,
    (result_file, can): (&Path, Abilities),
) -> Result<String, CheckFailure> {
    let mut data = worker_data(act, task, brief, sections, result_file);
    data.no_commands = !can.runs_commands;
    if data.no_commands && data.allowed_paths.iter().all(|p| p == "**") {
        // Its compact prompt names only the limits that bind (a small model loses the goal in
        // the rest): a glob allowing every path binds nothing.
        data.allowed_paths.clear();
    }
    if !can.writes_result_file {
        data.result_file = None;
    }
    act.templates
        .render_worker(&data)
        .map_err(|e| CheckFailure {
            code: FailureCode::SetupOrBootstrapIssue,
            message: format!("the worker prompt could not be rendered: {e}"),
        })
}

/// The prompt of a research run (issue 28): the worker's data — the issue is the question —
/// plus the base commit and where the report goes.
pub fn research(
    act: &Act<'_>,
    task: &Task,
    brief: &Brief,
    (base_sha, sections): (&str, &Sections),
    files: (&Path, &Path),
) -> Result<String, CheckFailure> {
    let (report_file, result_file) = files;
    let data = crate::prompt::ResearchPrompt {
        work: worker_data(act, task, brief, sections, result_file),
        base_sha: base_sha.to_string(),
        report_file: report_file.display().to_string(),
        max_proposals: crate::engine::research::MAX_PROPOSALS,
    };
    act.templates
        .render_research(&data)
        .map_err(|e| CheckFailure {
            code: FailureCode::SetupOrBootstrapIssue,
            message: format!("the research prompt could not be rendered: {e}"),
        })
}

fn worker_data(
    act: &Act<'_>,
    task: &Task,
    brief: &Brief,
    sections: &Sections,
    result_file: &Path,
) -> WorkerPrompt {
    let history = &brief.runs;
    let failed: Vec<&Run> = history
        .iter()
        .filter(|r| matches!(r.status, RunStatus::Failed | RunStatus::Cancelled))
        .filter(|r| agent_can_act(r))
        .take(FAILURES_SHOWN)
        .collect();
    let total = history.len();
    let failures = failed
        .iter()
        .enumerate()
        .map(|(i, r)| {
            let excerpt = r
                .error
                .clone()
                .unwrap_or_else(|| "no output recorded".to_string());
            PriorFailure {
                attempt: u32::try_from(total - i).unwrap_or(0),
                category: classify(&excerpt, r.failure_code).reason.to_string(),
                excerpt: act.redactor.excerpt(&excerpt, 1200),
            }
        })
        .collect();
    WorkerPrompt {
        role: task.role.to_string(),
        title: prompt_title(task, brief.issue.as_ref()),
        goal: task.goal.clone(),
        notes: Some(task.notes.clone()).filter(|n| !n.trim().is_empty()),
        allowed_paths: allowed_paths(task, act.config),
        commands: task
            .commands
            .iter()
            .chain(act.config.verify.commands.iter())
            .cloned()
            .collect(),
        failures,
        result_file: Some(result_file.display().to_string()),
        no_commands: false,
        issue: brief.issue.as_ref().map(issue_text),
        acceptance_criteria: criteria(brief.issue.as_ref()),
        comments: brief
            .comments
            .iter()
            .map(|c| {
                format!(
                    "@{} ({}) on #{} at {}:\n{}\n",
                    c.author,
                    c.association,
                    c.thread,
                    c.created_at,
                    c.body.trim_end()
                )
            })
            .collect(),
        host_context: Some(sections.host.clone()).filter(|t| !t.is_empty()),
        failure_hints: Some(sections.hints.clone()).filter(|t| !t.is_empty()),
    }
}

/// Whether an earlier failure belongs in the next prompt as one not to repeat: only what the
/// agent can act on (its tests failed, it changed nothing, it touched a denied path, it looped),
/// not the runner's setup, the environment or a permission prompt (issue 15).
fn agent_can_act(run: &Run) -> bool {
    use crate::model::FailureCategory as C;
    let message = run.error.as_deref().unwrap_or_default();
    match classify(message, run.failure_code).category {
        C::Env | C::Setup | C::Permission | C::AgentConfig => false,
        C::Noop | C::Policy | C::Test | C::Flaky | C::Model | C::ModelLoop => true,
    }
}

pub fn judge(
    act: &Act<'_>,
    task: &Task,
    issue: Option<&IssueSpec>,
    (verified, findings): (&[String], &[crate::scan::Finding]),
    (diff, summary): (&str, &str),
    (result_file, can): (&Path, Abilities),
) -> Result<String, CheckFailure> {
    let data = JudgePrompt {
        title: prompt_title(task, issue),
        goal: task.goal.clone(),
        notes: Some(task.notes.clone()).filter(|n| !n.trim().is_empty()),
        allowed_paths: allowed_paths(task, act.config),
        diff: act.redactor.redact(diff),
        // Issue 48: what the worker wrote goes with the change, as data.
        agent_texts: Some(summary)
            .filter(|s| !s.trim().is_empty())
            .map(|s| crate::prompt::PlacedText {
                place: "the worker's summary (the PR body)".to_string(),
                text: act.redactor.redact(s),
            })
            .into_iter()
            .collect(),
        scan_findings: findings
            .iter()
            .map(|f| act.redactor.redact(&f.for_review()))
            .collect(),
        verification: verified
            .iter()
            .map(|c| VerificationResult {
                command: c.clone(),
                passed: true,
                output: None,
            })
            .collect(),
        policy_findings: Vec::new(),
        result_file: Some(result_file.display().to_string()).filter(|_| can.writes_result_file),
        issue: issue.map(issue_text),
        acceptance_criteria: criteria(issue),
        host_context: Some(inject::host_only(
            act.learned.host.as_ref(),
            &scope(act, task),
            &act.config.context,
        ))
        .filter(|t| !t.is_empty()),
    };
    act.templates.render_judge(&data).map_err(|e| CheckFailure {
        code: FailureCode::SetupOrBootstrapIssue,
        message: format!("the judge prompt could not be rendered: {e}"),
    })
}

/// The task's title as a prompt shows it: an imported issue's title is its author's text, so it
/// is named by number there (`AutoFix 1/3: issue #4`) and shown only inside the fence.
fn prompt_title(task: &Task, issue: Option<&IssueSpec>) -> String {
    match issue {
        Some(spec) if !spec.title.trim().is_empty() && task.title.contains(spec.title.trim()) => {
            task.title
                .replace(spec.title.trim(), &format!("GitHub issue #{}", spec.number))
        }
        Some(_) | None => task.title.clone(),
    }
}

fn issue_text(spec: &IssueSpec) -> IssueText {
    IssueText {
        number: Some(spec.number),
        author: Some(spec.author.clone()).filter(|a| !a.is_empty()),
        title: spec.title.clone(),
        body: spec.body.clone(),
    }
}

/// The issue's checklist, numbered from 1 in the prompts (the judge answers per number).
fn criteria(issue: Option<&IssueSpec>) -> Vec<String> {
    let items = issue
        .map(|spec| acceptance_criteria(&spec.body))
        .unwrap_or_default();
    items
        .iter()
        .enumerate()
        .map(|(i, item)| format!("{}. {item}", i + 1))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::agent_can_act;
    use crate::engine::testkit::{at, failed_run};
    use crate::model::FailureCode;

    #[test]
    fn only_failures_the_agent_can_act_on_are_shown_again() {
        #[rustfmt::skip]
        let cases = [
            (FailureCode::TestFailure, "assertion failed", true),
            (FailureCode::NoActionableChanges, "no diff", true),
            (FailureCode::PolicyViolation, "change to denied path", true),
            (FailureCode::ModelDoomLoop, "same edit again", true),
            (FailureCode::SetupOrBootstrapIssue, "could not create the worktree", false),
            (FailureCode::VerificationCommandMissingScript, "./check.sh: No such file", false),
            (FailureCode::EnvironmentIssue, "disk full", false),
            (FailureCode::QuotaFailure, "429", false),
            (FailureCode::ExternalDirectoryPermissionPrompt, "permission prompt", false),
        ];
        for (code, message, shown) in cases {
            let run = failed_run("r", "t", Some(code), message, at(0));
            assert_eq!(agent_can_act(&run), shown, "{code}");
        }
    }
}

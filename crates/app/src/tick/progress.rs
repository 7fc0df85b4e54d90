//! github mode, after a tick recorded its work: each issue task's one progress comment is
//! rewritten in place when its report changed (issue 14 item 6), and its PR body's acceptance
//! checklist follows the judge's last answers (item 2).
//!
//! The report is rendered from the state (`report::progress`); the text last posted is kept in
//! a cursor per task, so an unchanged report costs no GitHub call and a tick killed after
//! posting edits the same comment next time (found by the task's marker). Visibility only: a
//! failure here is a warning, never lost state. Not for: the comment's text (`report::progress`)
//! or the phase word (`model::phase`; its facts are gathered here, [`phase_facts`]).

use serde::{Deserialize, Serialize};

use super::{Context, Failure};
use crate::forge::calls::marker;
use crate::forge::github::{ForgeError, GithubClient};
use crate::model::{IssueReport, Phase, PhaseFacts, Task};
use crate::report::progress::{progress_comment, with_checklist, ProgressView};
use crate::store::{Cursor, Store};

/// What the last report of a task said.
#[derive(Serialize, Deserialize)]
struct Reported {
    phase: Phase,
    text: String,
}

fn key(task: &Task) -> String {
    format!("progress:{}", task.id)
}

fn last_report(store: &Store, task: &Task) -> Result<Option<Reported>, Failure> {
    Ok(store
        .cursor(&key(task))?
        .body
        .and_then(|b| serde_json::from_str(&b).ok()))
}

/// The facts of a task's phase kept in the state: whether dispatch holds it for a spent budget
/// (in `plan`), and what its issue's progress comment last published (issue 14 item 7).
pub fn phase_facts(
    ctx: &Context,
    store: &Store,
    plan: &crate::engine::Plan,
    task: &Task,
) -> Result<PhaseFacts, Failure> {
    // Only a decided task can owe its final report: the cursor is read for those alone.
    let last = match task.status.is_terminal() {
        true => last_report(store, task)?.map(|r| r.phase),
        false => None,
    };
    Ok(PhaseFacts {
        over_budget: plan.budget_hold(&task.id).is_some(),
        held_by_people: plan.people_hold(&task.id).is_some(),
        report: IssueReport::of(ctx.config.mode, last),
        ..PhaseFacts::of(task)
    })
}

/// Which reports a tick posts.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Reports {
    /// Every report that changed (a tick that did something).
    All,
    /// Only the final reports owed by decided tasks, and the reports of tasks whose merge
    /// people hold (a quiet tick: nothing else changed; a hold comes with no decision).
    FinalAndHeld,
}

/// Posts the reports that changed; returns a line per comment edited or created.
pub fn report_progress(
    ctx: &Context,
    client: &GithubClient,
    store: &crate::store::Store,
    which: Reports,
) -> Result<Vec<String>, Failure> {
    let mut due = Vec::new();
    let mut plan = None;
    for (task, body) in store.tasks_to_report(true)? {
        let Some(issue) = task.issue_number else {
            continue;
        };
        let last: Option<Reported> = body.and_then(|b| serde_json::from_str(&b).ok());
        // A finished task gets its last report once (it is `reporting` until then); tasks
        // finished before reports began none.
        let owed =
            IssueReport::of(ctx.config.mode, last.as_ref().map(|l| l.phase)).owed(task.status);
        let wanted = match which {
            Reports::All => !task.status.is_terminal(),
            Reports::FinalAndHeld => {
                if plan.is_none() {
                    plan = Some(ctx.plan(store)?.1);
                }
                plan.as_ref()
                    .is_some_and(|p| p.people_hold(&task.id).is_some())
            }
        };
        if owed || wanted {
            due.push((task, issue, last));
        }
    }
    if due.is_empty() {
        return Ok(Vec::new());
    }
    let plan = match plan {
        Some(plan) => plan,
        None => ctx.plan(store)?.1,
    };
    let redactor = ctx.redactor();
    let mut posted = Vec::new();
    for (task, issue, last) in due {
        let view = view(ctx, store, &plan, &task, last.as_ref().map(|l| l.phase))?;
        let text = redactor.redact(&progress_comment(&view));
        if last.as_ref().is_some_and(|l| l.text == text) {
            continue;
        }
        let now = ctx.later();
        let phase = view.phase.unwrap_or(Phase::Intake);
        match client.upsert_comment(issue, &marker(task.id.as_str(), None), &text, now) {
            Ok(_) => posted.push((task.clone(), phase, text, false)),
            // Deleted, or transferred elsewhere: nobody is left to tell. Kept as said, so a
            // decided task is not `reporting` forever and no tick asks again.
            Err(ForgeError::Http {
                status: 301 | 404 | 410,
                ..
            }) => posted.push((task.clone(), phase, text, true)),
            Err(e) => tracing::warn!("could not update the progress comment on #{issue}: {e}"),
        }
        let pr = pr_of(store, &task)?;
        let approvals = match pr {
            Some(pr) => approvals(ctx, store, pr)?,
            None => Vec::new(),
        };
        if let (false, Some(pr)) = (view.criteria.is_empty() && approvals.is_empty(), pr) {
            let body = client
                .pull(pr, now)
                .map(|p| with_checklist(&p.body, &view.criteria, &approvals));
            if let Err(e) = body.and_then(|b| client.set_pull_body(pr, &redactor.redact(&b), now)) {
                tracing::warn!("could not update the checklist of PR #{pr}: {e}");
            }
        }
    }
    if posted.is_empty() {
        return Ok(Vec::new());
    }
    ctx.write_state("progress", |store| {
        for (task, phase, text, _) in &posted {
            let body = serde_json::to_string(&Reported {
                phase: *phase,
                text: text.clone(),
            })
            .ok();
            store.set_cursor(&key(task), &Cursor { etag: None, body }, ctx.now)?;
        }
        Ok(())
    })?;
    Ok(posted
        .iter()
        .map(|(t, phase, _, gone)| {
            let issue = t.issue_number.unwrap_or(0);
            match gone {
                false => format!("task {}: progress comment on #{issue} says {phase}", t.id),
                true => format!(
                    "task {}: issue #{issue} is gone (deleted or transferred): its report \
                     ({phase}) is not posted",
                    t.id
                ),
            }
        })
        .collect())
}

/// Approving reviews of the PR by trusted people, as evidence (`merge.human_approval` other
/// than `ignored`).
fn approvals(ctx: &Context, store: &Store, pr: u64) -> Result<Vec<String>, Failure> {
    use crate::config::HumanApproval;
    match ctx.config.merge.human_approval {
        HumanApproval::Ignored => Ok(Vec::new()),
        HumanApproval::Required | HumanApproval::Counts => Ok(store
            .pull_reviews(&[pr])?
            .iter()
            .filter(|r| r.state == crate::model::ReviewState::Approved)
            .map(|r| {
                format!(
                    "approved by @{} on {}",
                    r.author,
                    crate::engine::verdict::short_sha(&r.commit_id)
                )
            })
            .collect()),
    }
}

/// The task's PR: the one it works on, else the one its latest run opened.
fn pr_of(store: &Store, task: &Task) -> Result<Option<u64>, Failure> {
    if task.source_pr.is_some() {
        return Ok(task.source_pr);
    }
    Ok(store
        .runs_of(&task.id, 10)?
        .iter()
        .find_map(|r| r.pr_number))
}

/// Why a task with an open question waits, said without the question's commands.
const ASKED: &str = "a person decides: the question on this issue says how";

fn view(
    ctx: &Context,
    store: &Store,
    plan: &crate::engine::Plan,
    task: &Task,
    previous: Option<Phase>,
) -> Result<ProgressView, Failure> {
    // The comment being written is the report: it shows the phase the task is in once the
    // comment is published, so a decided task's says `completed`, never `reporting`.
    let hold = plan.budget_hold(&task.id);
    let phase = task.phase(PhaseFacts {
        over_budget: hold.is_some(),
        held_by_people: plan.people_hold(&task.id).is_some(),
        ..PhaseFacts::of(task)
    });
    // Issue 29: one comment per question. Where a question comment asks (options, the
    // recommended one, what silence does), this one points to it instead of repeating it.
    let question = match phase {
        Phase::AwaitingFeedback => store.escalations()?.into_iter().find(|e| {
            e.task_id == task.id && e.resolved_at.is_none() && task.issue_number == Some(e.thread)
        }),
        Phase::Intake
        | Phase::Planning
        | Phase::Executing
        | Phase::Verifying
        | Phase::Reporting
        | Phase::Completed
        | Phase::Paused
        | Phase::Blocked => None,
    };
    let reason = match (hold, plan.people_hold(&task.id), &question) {
        (Some((_, why)), _, _) | (None, Some(why), _) => Some(why.to_string()),
        (None, None, Some(_)) => Some(ASKED.to_string()),
        (None, None, None) => task.status_reason.clone(),
    };
    let blocker = match phase {
        Phase::AwaitingFeedback if question.is_some() && plan.people_hold(&task.id).is_none() => {
            Some("a maintainer must act: answer the question on this issue".to_string())
        }
        Phase::AwaitingFeedback => Some(format!(
            "a maintainer must act: {}",
            reason.as_deref().unwrap_or("the task waits on a person")
        )),
        Phase::Paused => Some(match (hold, task.next_attempt_at) {
            (Some((None, _)), _) => "a maintainer must act: the task spent its budget; raise it \
                 with `/opentiger budget <usd>` on this issue, or cancel it"
                .to_string(),
            (Some((Some(at), _)), _) => {
                format!("nobody needs to act: today's budget is spent; runs start again at {at}")
            }
            (None, Some(at)) => format!("nobody needs to act: it resumes on its own after {at}"),
            (None, None) => {
                "nobody needs to act: it resumes when the pause or budget clears".to_string()
            }
        }),
        Phase::Blocked => Some(
            "the last attempt failed; opentiger retries or reworks it within its limits"
                .to_string(),
        ),
        Phase::Intake
        | Phase::Planning
        | Phase::Executing
        | Phase::Verifying
        | Phase::Reporting
        | Phase::Completed => None,
    };
    let runs = store.runs_of(&task.id, 10)?;
    let mut evidence = Vec::new();
    if let Some(pr) = pr_of(store, task)? {
        let checks = store
            .pull_checks(pr)?
            .map(|(_, c)| format!(", CI {}", c.state))
            .filter(|c| c != ", CI none")
            .unwrap_or_default();
        evidence.push(format!("PR #{pr}{checks}"));
        evidence.extend(approvals(ctx, store, pr)?);
    }
    if let Some(run) = runs.first() {
        evidence.push(format!("run `{}` {}", run.id, run.status));
        if let Some(summary) = run.summary.as_deref().filter(|s| !s.trim().is_empty()) {
            evidence.push(format!(
                "summary: {}",
                crate::report::truncate(summary, 200)
            ));
        }
        if let Ok(url) = std::env::var("GITHUB_SERVER_URL").and_then(|server| {
            let repo = std::env::var("GITHUB_REPOSITORY")?;
            let id = std::env::var("GITHUB_RUN_ID")?;
            Ok(format!("{server}/{repo}/actions/runs/{id}"))
        }) {
            evidence.push(format!("[this tick's CI run]({url})"));
        }
    }
    let verification = runs
        .first()
        .filter(|r| r.failure_code.is_some())
        .and_then(|r| r.error.clone());
    Ok(ProgressView {
        task_id: task.id.to_string(),
        title: task.title.clone(),
        phase: Some(phase),
        previous,
        reason,
        blocker,
        next: match &question {
            Some(_) => "waits for an answer to the question on this issue".to_string(),
            None => crate::report::next_action(plan, task),
        },
        question: question
            .and_then(|q| q.comment_id)
            .map(|id| format!("#issuecomment-{id}")),
        spent_usd: store.family_spend(&task.id)?,
        refused: store.refusals_of(&task.id)?,
        budget_usd: ctx.config.budget.per_task_usd,
        evidence,
        verification,
        findings: held_findings(store, task)?,
        criteria: store.latest_criteria(&task.id)?,
    })
}

/// Issue 48: what held the latest change of a task waiting on a person, each finding whole.
pub fn held_findings(store: &Store, task: &crate::model::Task) -> Result<Vec<String>, Failure> {
    let waits =
        task.state() == crate::model::TaskState::blocked(crate::model::BlockReason::AwaitingHuman);
    if !waits {
        return Ok(Vec::new());
    }
    let runs = store.runs_of(&task.id, 1)?;
    Ok(runs
        .first()
        .filter(|r| r.failure_code == Some(crate::model::FailureCode::ThreatFlagged))
        .and_then(|r| r.error.as_deref())
        .map(|e| {
            crate::model::excerpt::findings(e)
                .into_iter()
                .map(String::from)
                .collect()
        })
        .unwrap_or_default())
}

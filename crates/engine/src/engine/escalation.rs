//! Escalations as one question (DESIGN §9, task-lifecycle §6, issue 17): when a task waits on
//! a person (`blocked(awaiting_human)`), the tick asks once, on the task's issue or PR: the
//! question, the recommended option first and marked, each option's trade-off, the exact
//! command to choose it, and what happens without an answer. After
//! `escalation.timeout_hours` a later tick applies `escalation.default`.
//!
//! Pure: [`escalate`] reads tasks, the escalations already open and the time, and says which
//! questions to ask (or restate), which to close, and which defaults fall due. Each question
//! has its own timeout and default (`escalation.reasons.<question>`, see [`settings`]), the
//! global ones where it sets none. Not for: posting, editing and recording the comment
//! (`tick::escalate`), or acting on a person's answer (`engine::commands`).

use crate::config::{EscalationConfig, EscalationDefault};
use crate::model::{BlockReason, Task, TaskId, TaskState};
use crate::time::{Timestamp, HOUR};

/// What is asked: each task has at most one open question of each kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Question {
    /// `execution_mode: ask`: may the task start?
    Approval,
    /// Retries, reviews or recoveries ran out: how should it go on?
    Stuck,
}

impl Question {
    pub fn word(self) -> &'static str {
        match self {
            Question::Approval => "approval",
            Question::Stuck => "stuck",
        }
    }

    fn of(task: &Task) -> Question {
        if task.needs_approval {
            Question::Approval
        } else {
            Question::Stuck
        }
    }
}

/// What one question gets when nobody answers: after `hours` (0: never), `default`; `key`
/// names the setting that chose the default, for the comment and the record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Settings {
    pub hours: u32,
    pub default: EscalationDefault,
    pub key: String,
}

/// The timeout and default of `question`: its own under `escalation.reasons`, else the global
/// `escalation.timeout_hours` / `escalation.default`.
pub fn settings(config: &EscalationConfig, question: Question) -> Settings {
    let rule = match question {
        Question::Approval => &config.reasons.approval,
        Question::Stuck => &config.reasons.stuck,
    };
    let (hours, default) = config.resolved(rule);
    let key = match rule.default {
        Some(_) => format!("escalation.reasons.{}.default", question.word()),
        None => "escalation.default".to_string(),
    };
    Settings {
        hours,
        default,
        key,
    }
}

/// An escalation as the state holds it.
#[derive(Clone, Debug, PartialEq)]
pub struct Open {
    pub task_id: TaskId,
    pub question: String,
    pub opened_at: Timestamp,
    /// Closed (answered, or the task moved on).
    pub resolved: bool,
    /// The text last decided for it (so an unchanged question is not rewritten).
    pub body: String,
}

/// One step for the tick.
#[derive(Clone, Debug, PartialEq)]
pub enum Step {
    /// Ask (or restate, when the facts changed): the comment on `thread` should say `body`.
    Ask {
        task_id: TaskId,
        question: Question,
        thread: u64,
        body: String,
        opened_at: Timestamp,
    },
    /// The task no longer waits on this question.
    Close { task_id: TaskId, question: String },
    /// Nobody answered in time: move the task and close the question.
    Default {
        task_id: TaskId,
        question: Question,
        to: TaskState,
        reset_attempts: bool,
        reason: String,
    },
}

/// The hidden marker that ties a comment to its escalation.
pub fn marker(task: &TaskId, question: Question) -> String {
    format!("<!-- opentiger:escalation={task}:{} -->", question.word())
}

/// What an approval question says the task will cost: its budget and, from history, what a
/// finished task spent on average.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Estimate {
    pub budget_usd: f64,
    pub typical_usd: Option<f64>,
}

/// The steps of this tick. `thread_of` gives a task's thread (its issue, else its PR);
/// `retried_by_default` says whether `retry_once` was used on this task and question already.
pub fn escalate(
    tasks: &[Task],
    open: &[Open],
    estimate: Estimate,
    thread_of: &dyn Fn(&Task) -> Option<u64>,
    retried_by_default: &dyn Fn(&TaskId, Question) -> bool,
    config: &EscalationConfig,
    now: Timestamp,
) -> Vec<Step> {
    let mut steps = Vec::new();
    let waiting: Vec<&Task> = tasks
        .iter()
        .filter(|t| t.state() == TaskState::blocked(BlockReason::AwaitingHuman))
        .collect();
    for e in open.iter().filter(|e| !e.resolved) {
        let still = waiting
            .iter()
            .any(|t| t.id == e.task_id && Question::of(t).word() == e.question);
        if !still {
            steps.push(Step::Close {
                task_id: e.task_id.clone(),
                question: e.question.clone(),
            });
        }
    }
    if !config.comment {
        return steps;
    }
    for task in waiting {
        let Some(thread) = thread_of(task) else {
            continue; // a local task has no thread to ask on
        };
        let question = Question::of(task);
        let existing = open
            .iter()
            .find(|e| e.task_id == task.id && e.question == question.word() && !e.resolved);
        let opened_at = existing.map_or(now, |e| e.opened_at);
        let retried = retried_by_default(&task.id, question);
        let mut rule = settings(config, question);
        rule.default = effective_default(rule.default, question, retried);
        let due = opened_at.plus(i64::from(rule.hours) * HOUR);
        if existing.is_some() && rule.hours > 0 && now >= due {
            if let Some(step) = apply_default(task, question, &rule) {
                steps.push(step);
                continue;
            }
        }
        let body = question_text(task, question, &rule, due, estimate);
        if existing.is_none_or(|e| e.body != body) {
            steps.push(Step::Ask {
                task_id: task.id.clone(),
                question,
                thread,
                body,
                opened_at,
            });
        }
    }
    steps
}

/// Items as inline code, comma-separated (backticks inside defused), or `none` when empty.
pub fn code_list(items: &[String], none: &str) -> String {
    if items.is_empty() {
        none.to_string()
    } else {
        items
            .iter()
            .map(|i| format!("`{}`", i.replace('`', "'")))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

/// The plan an approval is asked for: where the change may go, how it is checked, and what it
/// may cost.
fn plan_lines(task: &Task, estimate: Estimate) -> String {
    let code = code_list;
    let typical = estimate
        .typical_usd
        .map(|t| format!("; finished tasks here spent ${t:.2} on average"))
        .unwrap_or_default();
    format!(
        "The plan: a `{}` agent changes {}; the runner then checks {} and the repository's `verify.commands`; the judge reviews the PR before it merges. Budget: up to ${:.2} over all attempts{typical}.\n\n",
        task.role,
        code(&task.allowed_paths, "any path the policy allows (`policy.allowed_paths`)"),
        code(&task.commands, "no task-specific command"),
        estimate.budget_usd,
    )
}

/// `retry_once` retries once per question; after that, and for an approval (a retry is no
/// answer to "may it start?"), it waits.
fn effective_default(
    default: EscalationDefault,
    question: Question,
    retried: bool,
) -> EscalationDefault {
    match (default, question) {
        (EscalationDefault::RetryOnce, Question::Approval) => EscalationDefault::Wait,
        (EscalationDefault::RetryOnce, Question::Stuck) if retried => EscalationDefault::Wait,
        (d, _) => d,
    }
}

fn apply_default(task: &Task, question: Question, rule: &Settings) -> Option<Step> {
    let (to, reset_attempts, what) = match rule.default {
        EscalationDefault::Wait => return None,
        EscalationDefault::Cancel => (TaskState::CANCELLED, false, "cancelled"),
        EscalationDefault::RetryOnce => (TaskState::QUEUED, true, "retried once"),
    };
    Some(Step::Default {
        task_id: task.id.clone(),
        question,
        to,
        reset_attempts,
        reason: format!("no answer in {}h: {what} ({})", rule.hours, rule.key),
    })
}

/// The question comment, in the lifecycle's format (recommended option first and marked).
pub fn question_text(
    task: &Task,
    question: Question,
    rule: &Settings,
    due: Timestamp,
    estimate: Estimate,
) -> String {
    let (default, hours) = (rule.default, rule.hours);
    // The reason's own "Decide: `opentiger task …`" is for a terminal; the options below are
    // the comment commands.
    let why = task
        .status_reason
        .as_deref()
        .unwrap_or("no reason recorded");
    let why = why
        .split(". Decide:")
        .next()
        .unwrap_or(why)
        .trim_end_matches('.');
    let mut out = String::new();
    let (ask, options): (String, Vec<(&str, &str, String)>) = match question {
        Question::Approval => (
            format!("Task `{}` waits for your approval before it starts.", task.id),
            vec![
                (
                    "approve",
                    "/opentiger approve",
                    "the task is queued and an agent works on it; it may spend up to its budget. Choose it when the task says what you want.".to_string(),
                ),
                (
                    "cancel",
                    "/opentiger cancel",
                    "nothing runs and nothing is spent; the issue stays open for a person.".to_string(),
                ),
            ],
        ),
        Question::Stuck => (
            format!("Task `{}` stopped and waits on you: {why}.", task.id),
            vec![
                (
                    "retry",
                    "/opentiger retry",
                    "it runs again with fresh attempt budgets and may spend up to its budget again. Choose it when the cause is dealt with (or was passing).".to_string(),
                ),
                (
                    "cancel",
                    "/opentiger cancel",
                    "it stops here, nothing more is spent; the issue stays open for a person.".to_string(),
                ),
                (
                    "pause",
                    "/opentiger pause",
                    "it stays as it is, off the queue, until `/opentiger resume`.".to_string(),
                ),
            ],
        ),
    };
    out.push_str(&format!("**opentiger needs a decision.** {ask}\n\n"));
    if question == Question::Approval {
        out.push_str(&plan_lines(task, estimate));
    }
    for (i, (name, command, tradeoff)) in options.iter().enumerate() {
        let mark = if i == 0 { " (recommended)" } else { "" };
        out.push_str(&format!(
            "→ **{name}{mark}**: comment `{command}`. {tradeoff}\n\n"
        ));
    }
    let fallback = match default {
        EscalationDefault::Wait => "it keeps waiting for a person".to_string(),
        EscalationDefault::Cancel => format!("the task is cancelled at {due}"),
        EscalationDefault::RetryOnce => format!("the task is retried once at {due}"),
    };
    if hours == 0 || default == EscalationDefault::Wait {
        out.push_str(&format!("If nobody answers, {fallback}."));
    } else {
        out.push_str(&format!(
            "If nobody answers within {hours}h, {fallback} (`{}`).",
            rule.key
        ));
    }
    out.push_str(&format!("\n\n{}", marker(&task.id, question)));
    out
}

#[cfg(test)]
#[path = "escalation_tests.rs"]
mod tests;

//! Comment commands (DESIGN §9, issue 17): what a person's `/opentiger …` comment on a task's
//! issue, its PR or the dashboard issue asks for, and what the tick does about it.
//!
//! Two pure steps: [`parse`] reads a comment's text (a command is a line of its own that
//! starts with `/opentiger`; quoted lines and code are not commands), and [`decide`] turns one
//! command, who asked and the tasks it may name into state changes ([`Effect`]) and the one
//! reply that says what happened. Reading comments, checking permission, applying the effects
//! and posting the reply are the tick's (`tick::people`). Not for: GitHub's wire shapes.

use std::collections::BTreeMap;

use crate::model::{BlockReason, ResearchReport, RunId, Task, TaskId, TaskState, TaskStatus};
use crate::time::Timestamp;

mod approve;
mod hold;
mod parse;
mod pick;
mod plan;
mod replan;
mod research;
mod retry;
pub use approve::approved_state;
pub use parse::{parse, MAX_BUDGET_USD};
use pick::{find_task, pick_task};
pub use replan::Origin;
pub use retry::{
    cancel_family, cancel_refusal, retry_allowed, retry_move, retry_target, LastRun, RetryMove,
};

/// The word that starts every command.
pub const PREFIX: &str = "/opentiger";

/// What a command asks for.
#[derive(Clone, Debug, PartialEq)]
pub enum Verb {
    Approve,
    /// `approve all` (dashboard only): every task waiting for approval.
    ApproveAll,
    /// `approve <n>` (issue 28): proposal `n` of the thread's research report becomes a task.
    ApproveProposal(u32),
    Retry,
    Cancel,
    /// Stop the task's running run (issue 51): the tick running its agent ends it.
    Stop,
    /// A task (on its issue, or naming it) or, on the dashboard without a task, the repository.
    Pause,
    Resume,
    /// Raise the task's budget to this many USD (over all its attempts).
    Budget(f64),
    Status,
    /// Make the task's plan again (its issue's current text, or the requirement's planner).
    Replan,
    /// Hold the merge of this thread's task PR until a `release` (issue 26).
    Hold,
    /// Lift a `hold`.
    Release,
    Help,
}

/// One command: the verb and the task it names, if any.
#[derive(Clone, Debug, PartialEq)]
pub struct Command {
    pub verb: Verb,
    pub task: Option<String>,
}

/// A comment's command line, read.
#[derive(Clone, Debug, PartialEq)]
pub enum Parsed {
    Command(Command),
    /// It starts with `/opentiger` but is not a command we know, or its argument is wrong.
    Malformed {
        line: String,
        why: String,
    },
}

/// Where the command was posted.
#[derive(Clone, Debug, PartialEq)]
pub enum Place {
    /// The dashboard issue: task commands must name their task; `pause`/`resume` without one
    /// act on the repository.
    Dashboard,
    /// An issue or PR; `tasks` are the tasks that belong to it (its issue's tasks, the PR's).
    Thread { number: u64, tasks: Vec<TaskId> },
    /// The requirement's issue, where the latest plan (`tasks`) is shown for approval:
    /// `approve`, `cancel`, `replan` and `status` without a task act on the whole plan.
    Plan { number: u64, tasks: Vec<TaskId> },
}

/// Everything [`decide`] reads besides the command.
pub struct Request<'a> {
    pub author: &'a str,
    /// Write permission (or a trusted association, `commands.trusted_associations`).
    pub allowed: bool,
    /// This author was already told, on this thread, that they may not command.
    pub refused_before: bool,
    pub place: Place,
    /// The tasks a command may name (all tasks of the state), by id.
    pub tasks: &'a BTreeMap<TaskId, Task>,
    /// The repository is paused (and by whom).
    pub repo_paused_by: Option<&'a str>,
    /// Spend so far per task and the budget each has now (USD), for `budget` and `status`.
    pub spent: &'a BTreeMap<TaskId, f64>,
    pub budgets: &'a BTreeMap<TaskId, f64>,
    pub default_budget: f64,
    /// Where each task's plan came from (tasks added by hand and fix children have none).
    pub origins: &'a BTreeMap<TaskId, Origin>,
    /// When the command is decided (a retry ends a cooldown that is still running).
    pub now: Timestamp,
    /// Given by ticking a dashboard checkbox: GitHub does not say who ticked it (only people
    /// with write access can edit the dashboard), so the record says "from a checkbox".
    pub checkbox: bool,
    /// Each research task's latest report (issue 28), for `approve <n>`.
    pub reports: &'a BTreeMap<TaskId, ResearchReport>,
    /// The latest run of each task waiting on a person, for `retry` (issue 35).
    pub last_runs: &'a BTreeMap<TaskId, LastRun>,
}

/// A change to the state that a command makes.
#[derive(Clone, Debug, PartialEq)]
pub enum Effect {
    Move {
        task: TaskId,
        to: TaskState,
        /// A person's retry starts the per-category budgets afresh.
        reset_attempts: bool,
        /// Approval given (or no longer needed).
        approved: bool,
        reason: String,
    },
    SetBudget {
        task: TaskId,
        usd: f64,
    },
    PauseRepo,
    ResumeRepo,
    /// A queued task's cooldown ends and its attempt budgets start afresh.
    EndCooldown {
        task: TaskId,
        reason: String,
    },
    /// Read the issue's current title and text again as the task's spec (a person vouched for
    /// it by commanding `replan`, even when the issue's author is not trusted).
    Respec {
        task: TaskId,
        issue: u64,
    },
    /// Let the planner plan the requirement again (its inputs count as changed).
    Replan {
        plan: String,
    },
    /// Hold (`by` a person) or release (`None`) the merge of the PR of this issue or PR.
    Hold {
        thread: u64,
        by: Option<String>,
    },
    /// A new task: an approved research proposal (issue 28), unless it exists already.
    AddTask(Box<Task>),
    /// Issue 36: a person approved the change the threat scan held, exactly that change:
    /// the task is queued and its next run delivers it (`engine::scan`).
    ApproveChange {
        task: TaskId,
        held: super::scan::HeldChange,
        reason: String,
    },
    /// The task waits on the judge again for its run `run`, its budgets afresh.
    Rejudge {
        task: TaskId,
        run: RunId,
        reason: String,
    },
    /// Ask the run holding the task's lease to stop (issue 51), `by` a person; nothing when
    /// the run ended meanwhile.
    Stop {
        task: TaskId,
        by: String,
    },
}

/// How a command ended, for the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Done,
    /// A command we understood but that does not apply (wrong state, wrong thread).
    Refused,
    /// The author may not command.
    NotAllowed,
    /// Not a command we know: the help text was the answer.
    Help,
}

impl Outcome {
    pub fn word(self) -> &'static str {
        match self {
            Outcome::Done => "done",
            Outcome::Refused => "refused",
            Outcome::NotAllowed => "not_allowed",
            Outcome::Help => "help",
        }
    }
}

/// What the tick does about one command: effects (applied in the claim phase, with the
/// comment id recorded in the same write) and one reply (`None`: say nothing, e.g. to an
/// outsider already answered on this thread).
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub outcome: Outcome,
    pub effects: Vec<Effect>,
    pub reply: Option<String>,
}

/// The commands, for people (every reply to a malformed command ends with it).
pub fn help_text() -> String {
    [
        "Commands (a line of their own, from someone with write access):",
        "",
        "| command | what it does |",
        "|---|---|",
        "| `/opentiger approve` | start a task that waits for approval |",
        "| `/opentiger approve <n>` | on a research task's issue: make its report's proposal `n` a task (it gets its own issue) |",
        "| `/opentiger retry` | send a failed, cancelled or blocked task back to the queue (attempt budgets start afresh) |",
        "| `/opentiger stop` | stop the task's running run within 30 s; the task then waits for `/opentiger retry` |",
        "| `/opentiger cancel` | cancel a task that is not running |",
        "| `/opentiger pause` / `resume` | hold a task, or let it go again |",
        "| `/opentiger budget <usd>` | set this task's budget over all its attempts (at most $1000) |",
        "| `/opentiger replan` | make the task's plan again: an issue's task works from the issue's current text, afresh; a planned task's unstarted plan is cancelled and the requirement planned again |",
        "| `/opentiger status` | say where the task stands |",
        "| `/opentiger hold` / `release` | on a task's issue or PR: hold its merge (whatever the judge says), or let it go again |",
        "| `/opentiger help` | this list |",
        "",
        "On the dashboard issue, name the task (`/opentiger retry <task-id>`); there `pause` and `resume` without a task hold the whole repository, and `approve all` starts every task that waits for approval.",
        "On the requirement's issue (label `opentiger:plan`), `approve`, `cancel`, `replan` and `status` without a task act on the whole plan shown there.",
    ]
    .join("\n")
}

/// Decides one command. Pure: the same inputs give the same effects and the same reply.
pub fn decide(parsed: &Parsed, req: &Request<'_>) -> Decision {
    if !req.allowed {
        return Decision {
            outcome: Outcome::NotAllowed,
            effects: Vec::new(),
            reply: (!req.refused_before).then(|| {
                format!(
                    "Thanks @{}, but only people with write access to this repository can give opentiger commands, so nothing was changed. A maintainer can post the command if they agree.",
                    req.author
                )
            }),
        };
    }
    let command = match parsed {
        Parsed::Malformed { line, why } => {
            return Decision {
                outcome: Outcome::Help,
                effects: Vec::new(),
                reply: Some(format!(
                    "@{}: `{}` was not understood ({why}); nothing was changed.\n\n{}",
                    req.author,
                    line.replace('`', "'"),
                    help_text()
                )),
            }
        }
        Parsed::Command(c) => c,
    };
    let on_dashboard = req.place == Place::Dashboard;
    let by = match (req.checkbox, &command.verb) {
        (true, Verb::ApproveProposal(_)) => "from a box of the report".to_string(),
        (true, _) => "from a dashboard checkbox".to_string(),
        (false, _) => format!("by @{}", req.author),
    };
    match (&command.verb, &command.task) {
        (Verb::Help, _) => {
            return Decision {
                outcome: Outcome::Done,
                effects: Vec::new(),
                reply: Some(help_text()),
            }
        }
        (Verb::ApproveAll, _) if !on_dashboard => {
            return refuse("`approve all` works on the dashboard issue only".to_string())
        }
        (Verb::ApproveAll, Some(_)) => {
            return refuse("`approve all` takes no task".to_string())
        }
        (Verb::ApproveAll, None) => return approve::decide_all(req, &by),
        (Verb::Hold | Verb::Release, _) => return hold::decide(&command.verb, req),
        (Verb::ApproveProposal(n), _) => return research::decide(*n, command, req, &by),
        (Verb::Pause, None) if on_dashboard => {
            return match req.repo_paused_by {
                Some(by) => refuse(format!("The repository is already paused (by @{by})")),
                None => done(
                    vec![Effect::PauseRepo],
                    format!(
                        "Paused by @{}: opentiger claims no new work in this repository; runs under way finish. Resume with `/opentiger resume` here.",
                        req.author
                    ),
                ),
            }
        }
        (Verb::Resume, None) if on_dashboard => {
            return match req.repo_paused_by {
                None => refuse("The repository is not paused".to_string()),
                Some(_) => done(
                    vec![Effect::ResumeRepo],
                    format!(
                        "Resumed by @{}: opentiger claims work again from the next tick.",
                        req.author
                    ),
                ),
            }
        }
        _ => {}
    }
    if let (Place::Plan { number, tasks }, None) = (&req.place, &command.task) {
        return plan::decide(&command.verb, req, *number, tasks, &by);
    }
    // Issue 36: `approve <commit>` on a thread names the held change, not a task.
    let named_change = match (&command.verb, &command.task) {
        (Verb::Approve, Some(word))
            if super::scan::looks_like_commit(word) && find_task(req.tasks, word).is_err() =>
        {
            Some(word.as_str())
        }
        _ => None,
    };
    let thread_task = Command {
        verb: command.verb.clone(),
        task: None,
    };
    let picked = pick_task(
        if named_change.is_some() {
            &thread_task
        } else {
            command
        },
        req,
    );
    let task = match picked {
        Ok(task) => task,
        Err(why) => return refuse(why),
    };
    let id = &task.id;
    let state = task.state();
    match &command.verb {
        Verb::Retry => retry::decide(task, req, &by),
        Verb::Cancel => retry::decide_cancel(task, req, &by),
        Verb::Stop => match task.status {
            TaskStatus::Running => done(
                vec![Effect::Stop {
                    task: id.clone(),
                    by: by.trim_start_matches("by ").to_string(),
                }],
                format!("Stop asked {by}: task `{id}`'s run ends within 30 s (the tick running its agent reads this), then the task waits on a person: `/opentiger retry` queues it again, `/opentiger cancel` drops it."),
            ),
            TaskStatus::Queued
            | TaskStatus::Blocked
            | TaskStatus::Failed
            | TaskStatus::Done
            | TaskStatus::Cancelled => refuse(format!(
                "Task `{id}` is not running (it is {state}): there is no run to stop"
            )),
        },
        Verb::Approve => approve::decide(task, named_change, req, &by),
        Verb::Pause => match task.status {
            TaskStatus::Queued | TaskStatus::Failed => done(
                vec![pause_effect(id, &by)],
                format!("Paused {by}: task `{id}` {state} → blocked(paused). `/opentiger resume` lets it go again."),
            ),
            TaskStatus::Blocked if task.block_reason != Some(BlockReason::Paused) => done(
                vec![pause_effect(id, &by)],
                format!("Paused {by}: task `{id}` {state} → blocked(paused). `/opentiger resume` queues it again."),
            ),
            TaskStatus::Blocked => refuse(format!("Task `{id}` is already paused")),
            TaskStatus::Running => refuse(format!(
                "Task `{id}` is running: pause it when its run has ended, or `/opentiger cancel` it"
            )),
            TaskStatus::Done | TaskStatus::Cancelled => refuse(format!("Task `{id}` is {state}")),
        },
        Verb::Resume => {
            if state != TaskState::blocked(BlockReason::Paused) {
                return refuse(format!("Task `{id}` is not paused (it is {state})"));
            }
            done(
                vec![Effect::Move {
                    task: id.clone(),
                    to: TaskState::QUEUED,
                    reset_attempts: false,
                    approved: false,
                    reason: format!("resumed {by}"),
                }],
                format!("Resumed {by}: task `{id}` is queued."),
            )
        }
        Verb::Budget(usd) => {
            if task.status.is_terminal() {
                return refuse(format!("Task `{id}` is {state}"));
            }
            let spent = req.spent.get(id).copied().unwrap_or(0.0);
            let before = req.budgets.get(id).copied().unwrap_or(req.default_budget);
            let mut reply = format!(
                "Budget set {by}: task `{id}` may spend ${usd:.2} over all its attempts (was ${before:.2}; spent ${spent:.2})."
            );
            if *usd <= spent {
                reply.push_str(" That is no more than it spent already, so it starts no new run.");
            }
            done(
                vec![Effect::SetBudget {
                    task: id.clone(),
                    usd: *usd,
                }],
                reply,
            )
        }
        Verb::Status => {
            let spent = req.spent.get(id).copied().unwrap_or(0.0);
            let budget = req.budgets.get(id).copied().unwrap_or(req.default_budget);
            let why = task.status_reason.as_deref().unwrap_or("no reason recorded");
            Decision {
                outcome: Outcome::Done,
                effects: Vec::new(),
                reply: Some(format!(
                    "Task `{id}` ({}) is {state}: {why}. Spent ${spent:.2} of ${budget:.2}.{}",
                    task.title,
                    req.repo_paused_by
                        .map(|b| format!(" The repository is paused (by @{b})."))
                        .unwrap_or_default()
                )),
            }
        }
        Verb::Replan => replan::decide(task, req, &by),
        // Answered before a task is picked; the help text is the safe answer anyway.
        Verb::Help
        | Verb::ApproveAll
        | Verb::ApproveProposal(_)
        | Verb::Hold
        | Verb::Release => Decision {
            outcome: Outcome::Help,
            effects: Vec::new(),
            reply: Some(help_text()),
        },
    }
}

/// A command carried out: its effects and what the reply says.
fn done(effects: Vec<Effect>, reply: String) -> Decision {
    Decision {
        outcome: Outcome::Done,
        effects,
        reply: Some(reply),
    }
}

/// A command understood but refused, with why.
fn refuse(reply: String) -> Decision {
    Decision {
        outcome: Outcome::Refused,
        effects: Vec::new(),
        reply: Some(format!("{reply}; nothing was changed.")),
    }
}

fn pause_effect(id: &TaskId, by: &str) -> Effect {
    plain_move(
        id,
        TaskState::blocked(BlockReason::Paused),
        format!("paused {by}"),
    )
}

/// A move that neither resets the attempt budgets nor gives approval.
fn plain_move(id: &TaskId, to: TaskState, reason: String) -> Effect {
    Effect::Move {
        task: id.clone(),
        to,
        reset_attempts: false,
        approved: false,
        reason,
    }
}

/// The comment command a person would most likely post for a task that waits on them (for
/// the dashboard, where commands name their task), or `None` when it waits on nobody.
pub fn recommended(task: &Task) -> Option<String> {
    match task.state() {
        s if s == TaskState::blocked(BlockReason::AwaitingHuman) && task.needs_approval => {
            Some(format!("{PREFIX} approve {}", task.id))
        }
        s if s == TaskState::blocked(BlockReason::AwaitingHuman) => {
            Some(format!("{PREFIX} retry {}", task.id))
        }
        s if s == TaskState::blocked(BlockReason::Paused) => {
            Some(format!("{PREFIX} resume {}", task.id))
        }
        _ => None,
    }
}

/// A task waiting for a person's approval (`execution_mode: ask`).
pub fn waits_approval(task: &Task) -> bool {
    task.needs_approval && task.state() == TaskState::blocked(BlockReason::AwaitingHuman)
}

#[cfg(test)]
mod tests;

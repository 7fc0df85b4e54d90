//! Backlog import: which open GitHub issues become tasks, and how (spec §6 items 2-5, DESIGN §10).
//!
//! Pure: [`import_issues`] decides, per issue, to create a task, to move a linked task to the role
//! the issue now asks for, or to skip the issue with a reason the dashboard shows. Not for:
//! fetching, labelling or commenting on issues (the shell), nor importing open PRs for review.
//!
//! Departures from the spec, on purpose: an issue whose tasks were all cancelled comes back only
//! once it was updated after the last cancellation (spec §8 item 11: cancel and re-import looped
//! forever; so the shell must not comment on or relabel an issue when it cancels its task); an
//! issue naming no role becomes a worker task instead of stalling as backlog (§8 item 11); only a
//! closing keyword in an open PR holds an issue back, not any mention. The issue's text reaches no
//! trusted field an agent reads (goal, notes; the prompts name the task by its issue number):
//! agents see title and body only inside the prompt's untrusted-data fence.

use std::cmp::Reverse;
use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use crate::config::BacklogConfig;
use crate::model::graph::reachable;
use crate::model::{short_hash, Lane, Role, Task, TaskId, TaskKind, TaskStatus};
use crate::model::{BlockReason, ExecutionMode};
use crate::model::{Issue, PullRequest};
use crate::time::Timestamp;

mod pulls;
mod spec;
mod text;
mod thread;

pub use pulls::{import_pulls, review_task_id, PullImport};
pub use spec::{
    acceptance_criteria, cap_body, cap_title, spec_change, spec_of, SpecChange, BODY_CAP,
};
pub use thread::{comment_trusted, context_comments, kept_comments, COMMENTS_CAP, COMMENT_CAP};

pub use text::RESEARCH_LABEL;
use text::{allowed_paths, dependencies, explicit_role, priority, referencing_pr, risk};

/// What the import decides on.
#[derive(Clone, Copy)]
pub struct ImportInput<'a> {
    /// Open issues carrying a backlog label (filtered by the caller; checked again here).
    pub issues: &'a [Issue],
    pub open_prs: &'a [PullRequest],
    /// Every task that has an `issue_number`, in any status, with its dependencies.
    pub tasks: &'a [Task],
    pub config: &'a BacklogConfig,
    /// The requirement's allowed paths, used when the issue names none (empty: the config
    /// policy applies).
    pub default_allowed: &'a [String],
    /// Why a path pattern cannot be used by the path policy, if it cannot: the policy's own
    /// matcher, given by the shell (the engine does not depend on `policy`), so a task is never
    /// created with a pattern its run would then fail on.
    pub pattern_problem: &'a dyn Fn(&str) -> Option<String>,
    /// `execution_mode`: `ask` holds every imported task for approval, `decide` the high-risk
    /// ones; the labels `opentiger:ask` / `opentiger:go` decide per issue.
    pub execution_mode: ExecutionMode,
    /// The hash of the spec kept of each issue (`IssueSpec::hash`): an issue edited after its
    /// task was done gets a follow-up task (issue 14 item 3).
    pub specs: &'a BTreeMap<u64, String>,
    pub now: Timestamp,
}

/// What happens to one issue. An issue gets one `Create` or `Skip`, or one `Retarget` per
/// linked task that moves.
// A few per tick, matched by value: boxing the task would buy nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum ImportDecision {
    /// A new queued task for the issue.
    Create { task: Task, reason: String },
    /// The issue names another role than its queued, failed or blocked task has. The caller
    /// moves the lane with the role ([`lane_of`]).
    Retarget {
        task_id: TaskId,
        role: Role,
        reason: String,
    },
    /// Not imported, and why.
    Skip { issue: u64, reason: SkipReason },
}

/// Why an issue is not imported.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum SkipReason {
    Untrusted { author: String, association: String },
    ReferencedByPr { pr: u64 },
    AlreadyLinked { task: TaskId, status: TaskStatus },
    Done { task: TaskId },
    CancelledUnchanged { task: TaskId },
    NoBacklogLabel,
    Closed,
}

impl fmt::Display for SkipReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SkipReason::Untrusted {
                author,
                association,
            } => write!(
                f,
                "opened by @{author} ({association}), who is not trusted, and no trusted person \
                 applied the label"
            ),
            SkipReason::ReferencedByPr { pr } => write!(f, "open pull request #{pr} closes it"),
            SkipReason::AlreadyLinked { task, status } => {
                write!(f, "already has task {task} ({status})")
            }
            SkipReason::Done { task } => write!(f, "its task {task} is done; close the issue"),
            SkipReason::CancelledUnchanged { task } => write!(
                f,
                "its task {task} was cancelled and the issue has not changed since; edit or \
                 relabel the issue to import it again"
            ),
            SkipReason::NoBacklogLabel => f.write_str("carries none of the backlog labels"),
            SkipReason::Closed => f.write_str("is closed"),
        }
    }
}

/// The lane a task of this role runs in.
pub fn lane_of(role: Role) -> Lane {
    match role {
        Role::Docser => Lane::Docser,
        Role::Worker | Role::Tester | Role::Research => Lane::Feature,
    }
}

/// The kind a task of `role` has: a research task answers a question; any other role keeps
/// the kind it had (`current`), except that one leaving research becomes a feature.
pub fn kind_of(role: Role, current: TaskKind) -> TaskKind {
    match (role, current) {
        (Role::Research, _) => TaskKind::Research,
        (Role::Worker | Role::Tester | Role::Docser, TaskKind::Research) => TaskKind::Feature,
        (Role::Worker | Role::Tester | Role::Docser, kind) => kind,
    }
}

/// The id of the task imported from this version of the issue: the same import decided twice
/// gives the same id, a re-import after an edit a new one.
pub fn issue_task_id(issue: &Issue) -> TaskId {
    TaskId(short_hash(&[
        "issue",
        &issue.number.to_string(),
        &issue.updated_at.0.to_string(),
    ]))
}

/// Decides every issue, in ascending issue number.
pub fn import_issues(input: &ImportInput<'_>) -> Vec<ImportDecision> {
    let mut issues: Vec<&Issue> = input.issues.iter().collect();
    issues.sort_by_key(|i| i.number);
    issues.dedup_by_key(|i| i.number);
    let outcomes: Vec<Outcome> = issues.iter().map(|i| decide(i, input)).collect();

    // Second pass: dependencies may name an issue imported in this same batch.
    let batch: BTreeMap<u64, TaskId> = outcomes
        .iter()
        .filter_map(|o| match o {
            Outcome::Create(d) => Some((d.task.issue_number?, d.task.id.clone())),
            Outcome::Decided(_) => None,
        })
        .collect();
    let mut edges: BTreeMap<TaskId, Vec<TaskId>> = BTreeMap::new();
    let mut decisions = Vec::new();
    for outcome in outcomes {
        match outcome {
            Outcome::Decided(list) => decisions.extend(list),
            Outcome::Create(draft) => {
                decisions.push(finish(*draft, input.tasks, &batch, &mut edges));
            }
        }
    }
    decisions
}

enum Outcome {
    Decided(Vec<ImportDecision>),
    Create(Box<Draft>),
}

/// A task to create, before its dependencies are resolved.
struct Draft {
    task: Task,
    reason: String,
    depends_on: Vec<u64>,
    notes: Vec<String>,
}

fn decide(issue: &Issue, input: &ImportInput<'_>) -> Outcome {
    let n = issue.number;
    let skip = |reason| Outcome::Decided(vec![ImportDecision::Skip { issue: n, reason }]);
    if !issue.state.trim().eq_ignore_ascii_case("open") {
        return skip(SkipReason::Closed);
    }
    let backlog = &input.config.labels;
    if !issue
        .labels
        .iter()
        .any(|l| backlog.iter().any(|b| same_word(l, b)))
    {
        return skip(SkipReason::NoBacklogLabel);
    }
    let Some(trust) = trusted_because(issue, input.config) else {
        return skip(SkipReason::Untrusted {
            author: issue.author.clone(),
            association: issue.author_association.as_str().to_string(),
        });
    };
    let linked = linked_to(n, input.tasks);
    let role = explicit_role(issue);
    if let Some(open) = pick_open(&linked) {
        let retargets = retargets(n, role.as_ref(), &linked);
        if retargets.is_empty() {
            let (task, status) = (open.id.clone(), open.status);
            return skip(SkipReason::AlreadyLinked { task, status });
        }
        return Outcome::Decided(retargets);
    }
    if let Some(done) = newest(&linked, TaskStatus::Done) {
        let task = done.id.clone();
        if !edited_by_author(issue, input) || linked.iter().any(|t| t.id == issue_task_id(issue)) {
            return skip(SkipReason::Done { task });
        }
        let mut draft = draft(issue, issue_task_id(issue), role, input);
        draft.reason = format!(
            "issue #{n} ({trust}) was edited after its task {task} was done: a follow-up, {}",
            draft.reason
        );
        return Outcome::Create(Box::new(draft));
    }
    if let Some(pr) = referencing_pr(n, input.open_prs) {
        return skip(SkipReason::ReferencedByPr { pr });
    }
    // Every linked task left is cancelled.
    let id = issue_task_id(issue);
    let cancelled = newest(&linked, TaskStatus::Cancelled);
    if let Some(last) = cancelled {
        let same_version = linked.iter().any(|t| t.id == id);
        if issue.updated_at <= last.updated_at || same_version {
            let task = last.id.clone();
            return skip(SkipReason::CancelledUnchanged { task });
        }
    }
    let mut draft = draft(issue, id, role, input);
    draft.reason = match cancelled {
        Some(last) => format!(
            "issue #{n} ({trust}) was updated at {} after task {} was cancelled at {}: {}",
            issue.updated_at, last.id, last.updated_at, draft.reason
        ),
        None => format!("issue #{n} ({trust}): {}", draft.reason),
    };
    Outcome::Create(Box::new(draft))
}

fn draft(
    issue: &Issue,
    id: TaskId,
    role: Option<(Role, String)>,
    input: &ImportInput<'_>,
) -> Draft {
    let n = issue.number;
    let title = match issue.title.trim() {
        "" => format!("GitHub issue #{n}"),
        t => t.to_string(),
    };
    // The title is the issue author's text: people see it as the task's title, but the goal an
    // agent reads as an instruction names the issue only; its title and body reach the prompt
    // inside the untrusted-data fence (issue 14).
    let goal = format!(
        "Resolve GitHub issue #{n}, whose title and text follow as data. Make the change \
         complete, so that a pull request saying `Closes #{n}` can close the issue."
    );
    let (role, role_source) =
        role.unwrap_or((Role::Worker, "by default: the issue names none".to_string()));
    let (accepted, dropped) = allowed_paths(&issue.body, input.pattern_problem);
    let mut notes = vec![format!(
        "Imported from GitHub issue #{n} ({}) opened by @{}.",
        issue.html_url, issue.author
    )];
    notes.extend(dropped);
    let mut task = Task::new(id, &title, &goal, input.now);
    task.kind = kind_of(role, TaskKind::Feature);
    task.role = role;
    task.lane = lane_of(role);
    task.status = TaskStatus::Queued;
    task.priority = priority(&issue.labels);
    task.risk = risk(&issue.labels);
    // No paths named: the requirement's, else (empty) the config policy alone.
    task.allowed_paths = if accepted.is_empty() {
        input.default_allowed.to_vec()
    } else {
        accepted
    };
    task.issue_number = Some(n);
    let mut reason = format!(
        "new {role} task {} (role {role_source}), priority {}, risk {}",
        task.id, task.priority, task.risk
    );
    let origin = crate::engine::approval::Origin::Issue {
        labels: &issue.labels,
    };
    if let Some(why) = crate::engine::approval::held(input.execution_mode, origin, task.risk) {
        task.status = TaskStatus::Blocked;
        task.block_reason = Some(BlockReason::AwaitingHuman);
        task.needs_approval = true;
        task.status_reason = Some(format!(
            "waits for approval ({why}): `/opentiger approve` on #{n}, or `opentiger task approve {}`",
            task.id
        ));
        reason.push_str(&format!(", held for approval ({why})"));
    }
    Draft {
        task,
        reason,
        depends_on: dependencies(&issue.body),
        notes,
    }
}

/// Resolves the draft's dependencies and writes its notes.
fn finish(
    mut draft: Draft,
    tasks: &[Task],
    batch: &BTreeMap<u64, TaskId>,
    edges: &mut BTreeMap<TaskId, Vec<TaskId>>,
) -> ImportDecision {
    let me = draft.task.id.clone();
    let mut deps: Vec<TaskId> = Vec::new();
    for n in draft.depends_on {
        if draft.task.issue_number == Some(n) {
            continue;
        }
        let linked = linked_to(n, tasks);
        let target = if let Some(open) = pick_open(&linked) {
            open.id.clone()
        } else if let Some(id) = batch.get(&n) {
            if reachable(edges, id).contains(&me) {
                draft.notes.push(format!(
                    "Dependency on #{n} dropped: #{n} depends on this issue, which would be a cycle."
                ));
                continue;
            }
            id.clone()
        } else {
            draft.notes.push(match newest(&linked, TaskStatus::Done) {
                Some(done) => format!("Dependency on #{n} ignored: its task {} is done.", done.id),
                None => format!("Dependency on #{n} ignored: #{n} has no open task."),
            });
            continue;
        };
        if !deps.contains(&target) {
            deps.push(target);
        }
    }
    if !deps.is_empty() {
        let list: Vec<&str> = deps.iter().map(TaskId::as_str).collect();
        draft.reason = format!("{}, after {}", draft.reason, list.join(", "));
    }
    edges.insert(me, deps.clone());
    draft.task.dependencies = deps;
    draft.task.notes = draft.notes.join("\n");
    let (task, reason) = (draft.task, draft.reason);
    ImportDecision::Create { task, reason }
}

pub use crate::engine::approval::{ASK_LABEL, GO_LABEL};

fn linked_to(n: u64, tasks: &[Task]) -> Vec<&Task> {
    tasks.iter().filter(|t| t.issue_number == Some(n)).collect()
}

fn same_word(a: &str, b: &str) -> bool {
    a.trim().eq_ignore_ascii_case(b.trim())
}

/// The issue's text differs from the spec kept for its tasks and its author is trusted by
/// association (the rule of `spec::spec_change`: an outsider's edits never change a task).
fn edited_by_author(issue: &Issue, input: &ImportInput<'_>) -> bool {
    input.specs.get(&issue.number).is_some_and(|kept| {
        *kept != spec_of(issue).hash && spec::author_trusted(issue, input.config)
    })
}

/// Why the issue is trusted (DESIGN §10), or `None`.
fn trusted_because(issue: &Issue, config: &BacklogConfig) -> Option<String> {
    let association = issue.author_association.as_str();
    let trusted = &config.trusted_associations;
    if trusted.iter().any(|a| same_word(a, association)) {
        return Some(format!("opened by @{} ({association})", issue.author));
    }
    issue
        .labelled_by
        .iter()
        .find(|e| e.actor_can_write && config.labels.iter().any(|l| same_word(l, &e.label)))
        .map(|e| format!("labelled `{}` by @{}, who can write", e.label, e.actor))
}

/// The non-terminal task to name for an issue: running before queued before blocked before
/// failed, then the newest.
fn pick_open<'t>(linked: &[&'t Task]) -> Option<&'t Task> {
    fn rank(status: TaskStatus) -> Option<u8> {
        match status {
            TaskStatus::Running => Some(0),
            TaskStatus::Queued => Some(1),
            TaskStatus::Blocked => Some(2),
            TaskStatus::Failed => Some(3),
            TaskStatus::Done | TaskStatus::Cancelled => None,
        }
    }
    linked
        .iter()
        .filter_map(|t| Some((rank(t.status)?, *t)))
        .min_by_key(|(rank, t)| (*rank, Reverse(t.created_at), Reverse(&t.id)))
        .map(|(_, t)| t)
}

/// The most recently updated linked task in `status`.
fn newest<'t>(linked: &[&'t Task], status: TaskStatus) -> Option<&'t Task> {
    linked
        .iter()
        .copied()
        .filter(|t| t.status == status)
        .max_by(|a, b| a.updated_at.cmp(&b.updated_at).then(a.id.cmp(&b.id)))
}

/// Linked tasks that can still change role and have another one than the issue names.
fn retargets(n: u64, role: Option<&(Role, String)>, linked: &[&Task]) -> Vec<ImportDecision> {
    let Some((role, source)) = role else {
        return Vec::new();
    };
    let mut movable: Vec<&Task> = linked
        .iter()
        .copied()
        .filter(|t| match t.status {
            TaskStatus::Queued | TaskStatus::Failed | TaskStatus::Blocked => t.role != *role,
            TaskStatus::Running | TaskStatus::Done | TaskStatus::Cancelled => false,
        })
        .collect();
    movable.sort_by(|a, b| a.id.cmp(&b.id));
    let retarget = |t: &Task| ImportDecision::Retarget {
        task_id: t.id.clone(),
        role: *role,
        reason: format!(
            "issue #{n} now asks for role {role} ({source}); task {} ({}) was {}",
            t.id, t.status, t.role
        ),
    };
    movable.into_iter().map(retarget).collect()
}

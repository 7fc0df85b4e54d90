//! github mode: people's `/opentiger …` comment commands (issue 17), in the three places of a
//! tick. Observe: read the repository's comment feed incrementally ([`fetch`]: one conditional
//! request when nothing changed, at most `commands.max_pages` pages otherwise), parse each
//! comment (`engine::commands::parse`) and check who may command (association, else GitHub's
//! permission, cached for an hour). Claim: [`CommandFeed::apply`] decides each new command
//! (`engine::commands::decide`), applies its effects and records its comment id in the same
//! state write, so it acts exactly once. After the claim: [`post_replies`] posts each owed
//! reply once (a reply carries a marker naming the command's comment; the feed shows it back,
//! so a tick killed after posting does not post again).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{Context, Failure};
use crate::engine::commands::{self, Effect, Origin, Outcome, Parsed, Place, Request};
use crate::forge::comments::{Feed, FeedComment};
use crate::forge::github::{ForgeError, GithubClient};
use crate::model::{Issue, PullRequest, TaskId};
use crate::store::{CommandRecord, Cursor, RepoPause, Store, TaskChanges, TaskFilter, Writer};
use crate::time::{Timestamp, DAY, HOUR};

const FEED: &str = "comments:feed";
const DASHBOARD: &str = "dashboard:issue";
/// The login opentiger's own comments are posted as.
const SELF: &str = "self:login";
/// The hidden marker of a reply to command comment `id`.
pub fn reply_marker(id: u64) -> String {
    format!("<!-- opentiger:reply={id} -->")
}

/// Where the feed stopped: comments updated at or after `since` are read next time.
#[derive(Serialize, Deserialize)]
struct FeedCursor {
    since: Timestamp,
    /// A read cut short by `commands.max_pages` goes on from this page.
    #[serde(default)]
    rest: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct Permission {
    can_write: bool,
    at: Timestamp,
}

/// One command comment seen in the feed.
#[derive(Clone, Debug)]
pub struct SeenCommand {
    pub comment: FeedComment,
    pub parsed: Parsed,
    pub allowed: bool,
    pub on_dashboard: bool,
}

/// What the feed gave this tick.
#[derive(Default)]
pub struct CommandFeed {
    pub commands: Vec<SeenCommand>,
    /// Command comments whose reply is already on GitHub (their markers were seen).
    pub replied: Vec<u64>,
    /// Our question comments seen: (task, question, comment id, text).
    pub questions: Vec<(TaskId, String, u64, String)>,
    /// The feed was read to its end: every reply posted so far was seen.
    pub complete: bool,
    /// Our research report comments seen (their boxes approve proposals, issue 28).
    pub reports: Vec<crate::engine::research::ReportComment>,
    pub cursors: Vec<(String, Cursor)>,
}

/// Reads what changed in the comment feed (issue 17 item 1).
pub fn fetch(
    ctx: &Context,
    client: &GithubClient,
    store: &Store,
    pulls: &[PullRequest],
) -> Result<CommandFeed, ForgeError> {
    let mut feed = CommandFeed {
        complete: true,
        ..CommandFeed::default()
    };
    // The feed also brings back our question comments (their ids), so it is read when either
    // feature is on.
    let commands_on = ctx.config.commands.enabled;
    if !commands_on && !ctx.config.escalation.comment {
        return Ok(feed);
    }
    let config_error = |e: crate::store::StoreError| ForgeError::Config(e.to_string());
    let cursor = store.cursor(FEED).map_err(config_error)?;
    let stored = cursor
        .body
        .as_deref()
        .and_then(|b| serde_json::from_str::<FeedCursor>(b).ok());
    // The first read looks back one day, not over the repository's whole history: an old
    // command must not act on the day opentiger is installed.
    let since = Some(stored.as_ref().map_or(ctx.now.plus(-DAY), |c| c.since));
    let resume = stored.as_ref().and_then(|c| c.rest.clone());
    let max_pages = ctx.config.commands.max_pages;
    let (comments, etag, rest) = match client.comment_feed(
        since,
        resume.as_deref(),
        cursor.etag.as_deref(),
        max_pages,
        ctx.now,
    )? {
        Feed::NotModified => return Ok(feed),
        Feed::Fresh {
            comments,
            etag,
            rest,
        } => (comments, etag, rest),
    };
    feed.complete = rest.is_none();
    // `since` is inclusive: the newest comments are read again next time and found recorded.
    // While pages are left, `since` stays and the read goes on from the page left.
    let next_since = match &rest {
        Some(_) => since,
        None => comments.iter().map(|c| c.updated_at).max().or(since),
    };
    feed.cursors.push((
        FEED.to_string(),
        Cursor {
            // The ETag stands for the first page of a complete read from `since`.
            etag: if rest.is_none() && resume.is_none() {
                etag
            } else {
                None
            },
            body: next_since
                .and_then(|since| serde_json::to_string(&FeedCursor { since, rest }).ok()),
        },
    ));
    let mut permissions: BTreeMap<String, bool> = BTreeMap::new();
    let mut dashboard: Option<u64> = store
        .cursor(DASHBOARD)
        .map_err(config_error)?
        .body
        .and_then(|b| b.parse().ok());
    let me = store.cursor(SELF).map_err(config_error)?.body;
    let plan_thread = super::plan_thread::thread(store).map_err(config_error)?;
    for comment in comments {
        let ours = me.as_deref() == Some(comment.author.as_str());
        if let Some(id) = replied_to(&comment.body).filter(|_| ours) {
            feed.replied.push(id);
            continue;
        }
        if let Some((task, question)) = super::escalate::marked(&comment.body).filter(|_| ours) {
            feed.questions
                .push((task, question, comment.id, comment.body.clone()));
            continue;
        }
        if let Some(task) = crate::engine::research::marked(&comment.body).filter(|_| ours) {
            feed.reports.push(crate::engine::research::ReportComment {
                task,
                thread: comment.thread,
                url: comment.html_url.clone(),
                body: comment.body.clone(),
            });
            continue;
        }
        if !commands_on || comment.body.contains("<!-- opentiger:") {
            continue; // our own comments (progress, escalations, verdicts) command nothing
        }
        let Some(parsed) = commands::parse(&comment.body) else {
            continue;
        };
        if store.command_seen(comment.id).map_err(config_error)? {
            continue; // acted on already; an edit does not make it new
        }
        let allowed = may_command(ctx, client, store, &comment, &mut permissions, &mut feed)?;
        let own_thread = !store
            .tasks_of_thread(comment.thread)
            .map_err(config_error)?
            .is_empty()
            || pulls.iter().any(|p| p.number == comment.thread)
            || plan_thread == Some(comment.thread);
        let on_dashboard = match dashboard {
            Some(n) => n == comment.thread,
            None if own_thread || !allowed => false,
            None => {
                let is = client.issue_has_label(
                    comment.thread,
                    super::publish::DASHBOARD_LABEL,
                    ctx.now,
                )?;
                if is {
                    dashboard = Some(comment.thread);
                    feed.cursors.push((
                        DASHBOARD.to_string(),
                        Cursor {
                            etag: None,
                            body: Some(comment.thread.to_string()),
                        },
                    ));
                }
                is
            }
        };
        feed.commands.push(SeenCommand {
            comment,
            parsed,
            allowed,
            on_dashboard,
        });
    }
    Ok(feed)
}

/// The command comment a reply of ours answers, from its marker.
fn replied_to(body: &str) -> Option<u64> {
    let rest = body.split("<!-- opentiger:reply=").nth(1)?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// A trusted association (`commands.trusted_associations`), else write permission as GitHub
/// says (cached in the state for an hour: a flood of comments costs one call per person).
fn may_command(
    ctx: &Context,
    client: &GithubClient,
    store: &Store,
    comment: &FeedComment,
    asked: &mut BTreeMap<String, bool>,
    feed: &mut CommandFeed,
) -> Result<bool, ForgeError> {
    let trusted = &ctx.config.commands.trusted_associations;
    if trusted
        .iter()
        .any(|t| t.eq_ignore_ascii_case(comment.association.as_str()))
    {
        return Ok(true);
    }
    if comment.author.is_empty() {
        return Ok(false);
    }
    if let Some(known) = asked.get(&comment.author) {
        return Ok(*known);
    }
    let key = format!("permission:{}", comment.author);
    let cached = store
        .cursor(&key)
        .map_err(|e| ForgeError::Config(e.to_string()))?
        .body
        .and_then(|b| serde_json::from_str::<Permission>(&b).ok())
        .filter(|p| ctx.now.minus(p.at) < HOUR && p.at <= ctx.now);
    let can_write = match cached {
        Some(p) => p.can_write,
        None => {
            let can_write = client.can_write(&comment.author, ctx.now)?;
            feed.cursors.push((
                key,
                Cursor {
                    etag: None,
                    body: serde_json::to_string(&Permission {
                        can_write,
                        at: ctx.now,
                    })
                    .ok(),
                },
            ));
            can_write
        }
    };
    asked.insert(comment.author.clone(), can_write);
    Ok(can_write)
}

impl CommandFeed {
    /// Decides and applies each new command, recording its comment id with the reply owed, in
    /// the claim phase's state write (re-run on fresh state if the save loses a race: a command
    /// recorded by the winner is skipped). Returns report lines.
    ///
    /// `issues` are the backlog issues as this tick read them: `replan` re-reads a task's
    /// issue from them.
    pub fn apply(
        &self,
        ctx: &Context,
        store: &mut Store,
        issues: &[Issue],
        writer: Writer<'_>,
    ) -> Result<Vec<String>, Failure> {
        for (key, cursor) in &self.cursors {
            store.set_cursor(key, cursor, writer.now)?;
        }
        for id in &self.replied {
            store.mark_replied(*id, writer.now)?;
        }
        if !self.questions.is_empty() {
            let recorded = store.escalations()?;
            for (task, question, id, body) in &self.questions {
                let known = recorded
                    .iter()
                    .find(|e| &e.task_id == task && &e.question == question);
                if known.is_some_and(|e| {
                    e.comment_id != Some(*id) || e.posted_body.as_deref() != Some(body.as_str())
                }) {
                    store.escalation_posted(task, question, *id, body)?;
                }
            }
        }
        let mut lines = Vec::new();
        if self.commands.is_empty() {
            return Ok(lines);
        }
        let mut seen: Vec<&SeenCommand> = self.commands.iter().collect();
        seen.sort_by_key(|c| c.comment.id);
        for command in seen {
            let comment = &command.comment;
            if store.command_seen(comment.id)? {
                continue;
            }
            let place = if command.on_dashboard {
                Place::Dashboard
            } else if super::plan_thread::thread(store)? == Some(comment.thread) {
                Place::Plan {
                    number: comment.thread,
                    tasks: super::plan_thread::latest_plan(store)?
                        .map(|(_, tasks)| tasks.into_iter().map(|t| t.id).collect())
                        .unwrap_or_default(),
                }
            } else {
                Place::Thread {
                    number: comment.thread,
                    tasks: store.tasks_of_thread(comment.thread)?,
                }
            };
            let asked = Asked {
                author: &comment.author,
                allowed: command.allowed,
                refused_before: store.refused_before(comment.thread, &comment.author)?,
                place,
                checkbox: false,
            };
            let decision = decide_on(ctx, store, &command.parsed, asked, issues, writer.now)?;
            let mut outcome = decision.outcome;
            let mut reply = decision.reply.clone();
            let source = Source {
                actor: format!("github:{}", comment.author),
                author: &comment.author,
                url: &comment.html_url,
                nonce: comment.id,
            };
            if let Err(e) = apply_effects(store, &decision.effects, &source, issues, writer) {
                // The state moved on under the command (a race with a run ending): say so.
                outcome = Outcome::Refused;
                reply = Some(format!("This could not be done: {e}; nothing was changed."));
            }
            let line = command_line(&comment.body);
            lines.push(format!(
                "command `{line}` by @{} on #{}: {}",
                comment.author,
                comment.thread,
                outcome.word()
            ));
            store.record_command(
                &CommandRecord {
                    comment_id: comment.id,
                    thread: comment.thread,
                    author: comment.author.clone(),
                    line,
                    outcome: outcome.word().to_string(),
                    reply,
                    replied_at: None,
                },
                writer.now,
            )?;
        }
        Ok(lines)
    }
}

/// Who asks, where, and how (everything of a [`Request`] besides the state).
pub(super) struct Asked<'a> {
    pub author: &'a str,
    pub allowed: bool,
    pub refused_before: bool,
    pub place: Place,
    pub checkbox: bool,
}

/// Decides one command on the state as it is now (`engine::commands::decide`).
pub(super) fn decide_on(
    ctx: &Context,
    store: &Store,
    parsed: &Parsed,
    asked: Asked<'_>,
    issues: &[Issue],
    now: Timestamp,
) -> Result<commands::Decision, crate::store::StoreError> {
    let tasks: BTreeMap<TaskId, crate::model::Task> = store
        .list_tasks(&TaskFilter {
            status: None,
            include_terminal: true,
        })?
        .into_iter()
        .map(|t| (t.id.clone(), t))
        .collect();
    let pause = store.repo_pause()?;
    let origins = origins(store, &tasks, issues)?;
    Ok(commands::decide(
        parsed,
        &Request {
            author: asked.author,
            allowed: asked.allowed,
            refused_before: asked.refused_before,
            place: asked.place,
            tasks: &tasks,
            repo_paused_by: pause.as_ref().map(|p| p.by.as_str()),
            spent: &store.spend_by_task()?,
            budgets: &store.task_budgets()?,
            default_budget: ctx.config.budget.per_task_usd,
            origins: &origins,
            now,
            checkbox: asked.checkbox,
            reports: &store
                .research_reports()?
                .into_iter()
                .map(|r| (r.task_id.clone(), r))
                .collect(),
            last_runs: &last_runs(store, &tasks)?,
        },
    ))
}

/// The latest run of each task that waits on a person (what `retry` looks at).
fn last_runs(
    store: &Store,
    tasks: &BTreeMap<TaskId, crate::model::Task>,
) -> Result<BTreeMap<TaskId, commands::LastRun>, crate::store::StoreError> {
    let waiting = tasks.values().filter(|t| {
        t.state() == crate::model::TaskState::blocked(crate::model::BlockReason::AwaitingHuman)
    });
    let mut runs = BTreeMap::new();
    for task in waiting {
        if let Some(last) = store.last_run(&task.id)? {
            runs.insert(task.id.clone(), last);
        }
    }
    Ok(runs)
}

/// Where each task's plan came from, for `replan`: the planner's plan, else the issue it was
/// imported from (fix children and tasks added by hand have none).
fn origins(
    store: &Store,
    tasks: &BTreeMap<TaskId, crate::model::Task>,
    issues: &[Issue],
) -> Result<BTreeMap<TaskId, Origin>, crate::store::StoreError> {
    let planned = store.plan_of_tasks()?;
    Ok(tasks
        .values()
        .filter_map(|t| {
            let origin = match (planned.get(&t.id), t.issue_number) {
                (Some(plan), _) => Origin::Plan(plan.clone()),
                (None, Some(number)) if t.parent_task_id.is_none() => Origin::Issue {
                    number,
                    open: issues.iter().any(|i| i.number == number),
                },
                (None, _) => return None,
            };
            Some((t.id.clone(), origin))
        })
        .collect())
}

/// The key whose value salts the plan signature: a `replan` makes the requirement count as
/// changed (the comment id, so each replan is new).
pub const REPLAN: &str = "planner:replan";

/// Who gave a command, and where, for the record.
pub(super) struct Source<'a> {
    /// The event's actor, e.g. `github:alice`.
    pub actor: String,
    pub author: &'a str,
    /// The comment (or issue) that gave it.
    pub url: &'a str,
    /// Unique per command: a replan's salt.
    pub nonce: u64,
}

/// The effects of one command, all or nothing.
pub(super) fn apply_effects(
    store: &mut Store,
    effects: &[Effect],
    source: &Source<'_>,
    issues: &[Issue],
    writer: Writer<'_>,
) -> Result<(), crate::store::StoreError> {
    // Check every move first, so a command never half-happens.
    for effect in effects {
        match effect {
            Effect::Move { task, to, .. } => {
                crate::model::check_transition(store.task(task)?.state(), *to)?;
            }
            Effect::Rejudge { task, .. } => {
                let to = crate::model::TaskState::blocked(crate::model::BlockReason::AwaitingJudge);
                crate::model::check_transition(store.task(task)?.state(), to)?;
            }
            Effect::ApproveChange { task, .. } => {
                crate::model::check_transition(
                    store.task(task)?.state(),
                    crate::model::TaskState::QUEUED,
                )?;
            }
            Effect::Respec { issue, .. } if !issues.iter().any(|i| i.number == *issue) => {
                return Err(crate::store::StoreError::Invalid(format!(
                    "issue #{issue} was not in this tick's backlog list"
                )));
            }
            Effect::Respec { .. }
            | Effect::AddTask(_)
            | Effect::EndCooldown { .. }
            | Effect::SetBudget { .. }
            | Effect::PauseRepo
            | Effect::ResumeRepo
            | Effect::Replan { .. }
            | Effect::Hold { .. } => {}
        }
    }
    for effect in effects {
        match effect {
            Effect::Move {
                task,
                to,
                reset_attempts,
                approved,
                reason,
            } => {
                let changes = TaskChanges {
                    attempts: reset_attempts.then(Default::default),
                    next_attempt_at: reset_attempts.then_some(None),
                    needs_approval: approved.then_some(false),
                };
                let reason = format!("{reason} ({})", source.url);
                let writer = Writer {
                    actor: &source.actor,
                    ..writer
                };
                store.transition_task(task, *to, &reason, changes, writer)?;
                // Issue 18: a person's retry says the agents' configuration is dealt with,
                // as `opentiger task retry` does: executors parked for it may run again.
                if *reset_attempts {
                    store.clear_config_parks()?;
                }
            }
            Effect::SetBudget { task, usd } => {
                store.set_task_budget(task, *usd, source.author, writer.now)?;
            }
            Effect::PauseRepo => store.set_repo_pause(Some(&RepoPause {
                by: source.author.to_string(),
                at: writer.now,
                comment: Some(source.url.to_string()),
            }))?,
            Effect::ResumeRepo => store.set_repo_pause(None)?,
            Effect::Respec { issue, .. } => {
                // Present: checked above.
                if let Some(read) = issues.iter().find(|i| i.number == *issue) {
                    store.set_issue_spec(&crate::engine::import::spec_of(read))?;
                }
            }
            Effect::EndCooldown { task, reason } => {
                let writer = Writer {
                    actor: &source.actor,
                    ..writer
                };
                store.clear_cooldown(task, &format!("{reason} ({})", source.url), writer)?;
            }
            Effect::AddTask(task) => {
                let writer = Writer {
                    actor: &source.actor,
                    ..writer
                };
                store.add_proposal_task(task, writer)?;
            }
            Effect::ApproveChange { task, held, reason } => {
                let writer = Writer {
                    actor: &source.actor,
                    ..writer
                };
                let reason = format!("{reason} ({})", source.url);
                store.approve_change(task, held, source.author, &reason, writer)?;
            }
            Effect::Rejudge { task, run, reason } => {
                let writer = Writer {
                    actor: &source.actor,
                    ..writer
                };
                store.rejudge(task, run, &format!("{reason} ({})", source.url), writer)?;
            }
            Effect::Hold { thread, by } => {
                super::last_word::set_hold(store, *thread, by.as_deref(), writer.now)?
            }
            Effect::Replan { .. } => store.set_cursor(
                REPLAN,
                &Cursor {
                    etag: None,
                    body: Some(source.nonce.to_string()),
                },
                writer.now,
            )?,
        }
    }
    Ok(())
}

/// The command line as written (for the record and the report), shortened.
fn command_line(body: &str) -> String {
    let line = body
        .lines()
        .map(str::trim)
        .find(|l| l.starts_with(commands::PREFIX))
        .unwrap_or(commands::PREFIX);
    crate::report::truncate(line, 80).replace('`', "'")
}

/// Posts each owed reply once. Only after a complete read of the feed: then every reply
/// already posted (by a tick killed before it could record it) has been seen and marked.
/// A failure is a warning: the reply stays owed for the next tick.
pub fn post_replies(
    ctx: &Context,
    client: &GithubClient,
    feed: &CommandFeed,
    owed: &[CommandRecord],
) -> Option<String> {
    let mut poster = None;
    if !feed.complete {
        return poster;
    }
    for command in owed {
        let Some(reply) = &command.reply else {
            continue;
        };
        let body = format!("{reply}\n\n{}", reply_marker(command.comment_id));
        let body = ctx.redactor().redact(&body);
        match client.post_comment(command.thread, &body, ctx.later()) {
            Ok(login) => poster = Some(login),
            Err(e) => tracing::warn!(
                "could not reply to the command of comment {} on #{}: {e}",
                command.comment_id,
                command.thread
            ),
        }
    }
    poster
}

/// Who opentiger posts as, once known (from a comment or the dashboard it posted).
pub fn self_login(store: &Store) -> Result<Option<String>, crate::store::StoreError> {
    Ok(store.cursor(SELF)?.body.filter(|l| !l.is_empty()))
}

/// Remembers who opentiger posts as (the token's login, from a comment it posted): only
/// markers in that login's comments are believed, so nobody can silence a reply or take over
/// a question by pasting a marker. Written only when it changed.
pub fn remember_self(ctx: &Context, login: &str) -> Result<(), Failure> {
    if login.is_empty() {
        return Ok(());
    }
    let known = ctx.read_store()?.cursor(SELF)?.body;
    if known.as_deref() == Some(login) {
        return Ok(());
    }
    ctx.write_state("who opentiger posts as", |store| {
        store.set_cursor(
            SELF,
            &Cursor {
                etag: None,
                body: Some(login.to_string()),
            },
            ctx.now,
        )?;
        Ok(())
    })
}

//! What people said from GitHub and what it changed (issue 17): comment commands acted on
//! (keyed by comment id, so each acts once) with the reply owed, per-task budgets set by a
//! command, the repository's pause, the `/opentiger hold`s in force (issue 26), and escalation
//! comments (one per task and question). Not for: reading GitHub or posting (`tick::people`,
//! `tick::escalate`).

use std::collections::BTreeMap;

use rusqlite::{params, OptionalExtension};

use super::{Cursor, Store, StoreError};
use crate::model::TaskId;
use crate::time::Timestamp;

/// The cursor whose body keeps the holds in force: issue or PR number → who holds it.
const HOLDS: &str = "holds";

/// A command acted on, as recorded.
#[derive(Clone, Debug, PartialEq)]
pub struct CommandRecord {
    pub comment_id: u64,
    pub thread: u64,
    pub author: String,
    pub line: String,
    pub outcome: String,
    pub reply: Option<String>,
    pub replied_at: Option<Timestamp>,
}

/// Who paused the repository, when, and where (the comment's address).
#[derive(Clone, Debug, PartialEq)]
pub struct RepoPause {
    pub by: String,
    pub at: Timestamp,
    pub comment: Option<String>,
}

/// One escalation: the question asked on a task's thread.
#[derive(Clone, Debug, PartialEq)]
pub struct Escalation {
    pub task_id: TaskId,
    pub question: String,
    pub thread: u64,
    /// What the comment should say now.
    pub body: String,
    pub comment_id: Option<u64>,
    /// What it says on GitHub (as last posted).
    pub posted_body: Option<String>,
    pub opened_at: Timestamp,
    pub resolved_at: Option<Timestamp>,
    /// How often `escalation.default` moved the task on this question.
    pub defaults: u32,
}

fn id_i64(id: u64) -> i64 {
    i64::try_from(id).unwrap_or(i64::MAX)
}

fn id_u64(id: i64) -> u64 {
    u64::try_from(id).unwrap_or(0)
}

impl Store {
    /// Whether this comment's command was acted on already.
    pub fn command_seen(&self, comment_id: u64) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT 1 FROM commands WHERE comment_id = ?1",
                [id_i64(comment_id)],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }

    /// Whether `author` was already told on `thread` that they may not command.
    pub fn refused_before(&self, thread: u64, author: &str) -> Result<bool, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT 1 FROM commands WHERE thread = ?1 AND author = ?2 AND outcome = 'not_allowed' AND reply IS NOT NULL",
                params![id_i64(thread), author],
                |_| Ok(()),
            )
            .optional()?
            .is_some())
    }

    pub fn record_command(&mut self, c: &CommandRecord, now: Timestamp) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT OR IGNORE INTO commands (comment_id, thread, author, line, outcome, reply, replied_at, created_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                id_i64(c.comment_id),
                id_i64(c.thread),
                c.author,
                c.line,
                c.outcome,
                c.reply,
                c.replied_at.map(|t| t.0),
                now.0
            ],
        )?;
        Ok(())
    }

    /// Commands whose reply is owed (oldest first).
    pub fn unreplied_commands(&self) -> Result<Vec<CommandRecord>, StoreError> {
        let rows = self
            .conn
            .prepare(
                "SELECT comment_id, thread, author, line, outcome, reply, replied_at FROM commands \
                 WHERE replied_at IS NULL AND reply IS NOT NULL ORDER BY comment_id",
            )?
            .query_map([], |r| {
                Ok(CommandRecord {
                    comment_id: id_u64(r.get(0)?),
                    thread: id_u64(r.get(1)?),
                    author: r.get(2)?,
                    line: r.get(3)?,
                    outcome: r.get(4)?,
                    reply: r.get(5)?,
                    replied_at: r.get::<_, Option<i64>>(6)?.map(Timestamp),
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// The reply to `comment_id` is on GitHub (posted now, or seen posted by an earlier tick).
    pub fn mark_replied(&mut self, comment_id: u64, now: Timestamp) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE commands SET replied_at = ?2 WHERE comment_id = ?1 AND replied_at IS NULL",
            params![id_i64(comment_id), now.0],
        )?;
        Ok(())
    }

    /// Budgets set by a command, per task (USD over all attempts).
    pub fn task_budgets(&self) -> Result<BTreeMap<TaskId, f64>, StoreError> {
        let rows = self
            .conn
            .prepare("SELECT task_id, usd FROM task_budgets")?
            .query_map([], |r| Ok((TaskId(r.get(0)?), r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    pub fn set_task_budget(
        &mut self,
        task: &TaskId,
        usd: f64,
        by: &str,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO task_budgets (task_id, usd, set_by, set_at) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT(task_id) DO UPDATE SET usd = excluded.usd, set_by = excluded.set_by, set_at = excluded.set_at",
            params![task.as_str(), usd, by, now.0],
        )?;
        Ok(())
    }

    /// Spend so far of every task that spent anything (USD).
    pub fn spend_by_task(&self) -> Result<BTreeMap<TaskId, f64>, StoreError> {
        let rows = self
            .conn
            .prepare("SELECT key, spent_usd FROM budgets WHERE scope = 'task' AND spent_usd > 0")?
            .query_map([], |r| Ok((TaskId(r.get(0)?), r.get(1)?)))?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// The tasks that belong to issue or PR `number`: their issue, a PR one of their runs
    /// opened, or the PR they review.
    pub fn tasks_of_thread(&self, number: u64) -> Result<Vec<TaskId>, StoreError> {
        let rows = self
            .conn
            .prepare(
                "SELECT id FROM tasks WHERE issue_number = ?1 OR source_pr = ?1                  UNION SELECT task_id FROM runs WHERE pr_number = ?1 ORDER BY 1",
            )?
            .query_map([id_i64(number)], |r| Ok(TaskId(r.get(0)?)))?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// What a finished (done) task spent on average, over the tasks that spent anything.
    pub fn typical_task_spend(&self) -> Result<Option<f64>, StoreError> {
        Ok(self.conn.query_row(
            "SELECT AVG(b.spent_usd) FROM budgets b JOIN tasks t ON t.id = b.key \
             WHERE b.scope = 'task' AND t.status = 'done' AND b.spent_usd > 0",
            [],
            |r| r.get::<_, Option<f64>>(0),
        )?)
    }

    pub fn repo_pause(&self) -> Result<Option<RepoPause>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT paused_by, paused_at, comment FROM repo_pause WHERE id = 1",
                [],
                |r| {
                    Ok(RepoPause {
                        by: r.get(0)?,
                        at: Timestamp(r.get(1)?),
                        comment: r.get(2)?,
                    })
                },
            )
            .optional()?)
    }

    /// Pauses the repository (`Some`) or resumes it (`None`).
    pub fn set_repo_pause(&mut self, pause: Option<&RepoPause>) -> Result<(), StoreError> {
        match pause {
            Some(p) => self.conn.execute(
                "INSERT INTO repo_pause (id, paused_by, paused_at, comment) VALUES (1, ?1, ?2, ?3) \
                 ON CONFLICT(id) DO UPDATE SET paused_by = excluded.paused_by, paused_at = excluded.paused_at, comment = excluded.comment",
                params![p.by, p.at.0, p.comment],
            )?,
            None => self.conn.execute("DELETE FROM repo_pause", [])?,
        };
        Ok(())
    }

    pub fn escalations(&self) -> Result<Vec<Escalation>, StoreError> {
        let rows = self
            .conn
            .prepare(
                "SELECT task_id, question, thread, body, comment_id, posted_body, opened_at, resolved_at, defaults \
                 FROM escalations ORDER BY opened_at, task_id",
            )?
            .query_map([], |r| {
                Ok(Escalation {
                    task_id: TaskId(r.get(0)?),
                    question: r.get(1)?,
                    thread: id_u64(r.get(2)?),
                    body: r.get(3)?,
                    comment_id: r.get::<_, Option<i64>>(4)?.map(id_u64),
                    posted_body: r.get(5)?,
                    opened_at: Timestamp(r.get(6)?),
                    resolved_at: r.get::<_, Option<i64>>(7)?.map(Timestamp),
                    defaults: u32::try_from(r.get::<_, i64>(8)?).unwrap_or(0),
                })
            })?
            .collect::<Result<_, _>>()?;
        Ok(rows)
    }

    /// Opens an escalation, or updates what its comment should say (the comment id, the time
    /// it opened and what was posted are kept: one comment per task and question). Reopens a
    /// resolved one when the task waits on the same question again.
    pub fn upsert_escalation(&mut self, e: &Escalation) -> Result<(), StoreError> {
        self.conn.execute(
            "INSERT INTO escalations (task_id, question, thread, body, comment_id, posted_body, opened_at, resolved_at) \
             VALUES (?1, ?2, ?3, ?4, NULL, NULL, ?5, NULL) \
             ON CONFLICT(task_id, question) DO UPDATE SET body = excluded.body, thread = excluded.thread, \
             opened_at = CASE WHEN escalations.resolved_at IS NULL THEN escalations.opened_at ELSE excluded.opened_at END, \
             resolved_at = NULL",
            params![e.task_id.as_str(), e.question, id_i64(e.thread), e.body, e.opened_at.0],
        )?;
        Ok(())
    }

    /// Closes an escalation; `by_default`: `escalation.default` moved the task.
    pub fn resolve_escalation(
        &mut self,
        task: &TaskId,
        question: &str,
        by_default: bool,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE escalations SET resolved_at = ?3, defaults = defaults + ?4 \
             WHERE task_id = ?1 AND question = ?2 AND resolved_at IS NULL",
            params![task.as_str(), question, now.0, i64::from(by_default)],
        )?;
        Ok(())
    }

    /// The PR a task's runs opened last, if any.
    pub fn pr_of_task(&self, task: &TaskId) -> Result<Option<u64>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT pr_number FROM runs WHERE task_id = ?1 AND pr_number IS NOT NULL \
                 ORDER BY started_at DESC, rowid DESC LIMIT 1",
                [task.as_str()],
                |r| r.get::<_, i64>(0),
            )
            .optional()?
            .map(id_u64))
    }

    /// The comment now says `body` (posted or edited as comment `comment_id`).
    pub fn escalation_posted(
        &mut self,
        task: &TaskId,
        question: &str,
        comment_id: u64,
        body: &str,
    ) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE escalations SET comment_id = ?3, posted_body = ?4 WHERE task_id = ?1 AND question = ?2",
            params![task.as_str(), question, id_i64(comment_id), body],
        )?;
        Ok(())
    }

    /// The `/opentiger hold`s in force (issue 26), by issue or PR number: who holds each.
    pub fn holds(&self) -> Result<BTreeMap<u64, String>, StoreError> {
        Ok(self
            .cursor(HOLDS)?
            .body
            .and_then(|b| serde_json::from_str(&b).ok())
            .unwrap_or_default())
    }

    /// Records `by`'s hold of `thread`, or (`None`) its release.
    pub fn set_hold(
        &mut self,
        thread: u64,
        by: Option<&str>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let mut all = self.holds()?;
        match by {
            Some(by) => all.insert(thread, by.to_string()),
            None => all.remove(&thread),
        };
        let body =
            serde_json::to_string(&all).map_err(|e| StoreError::Invalid(format!("holds: {e}")))?;
        self.set_cursor(
            HOLDS,
            &Cursor {
                etag: None,
                body: Some(body),
            },
            now,
        )
    }
}

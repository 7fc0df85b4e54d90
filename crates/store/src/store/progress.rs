//! The conversation around a task (issue 14): what its progress comment reads beyond the task
//! itself (its spend, the judge's last answer per acceptance criterion), and the trusted
//! comments on its issue and PR that its next attempt reads. Not for: reading GitHub
//! (`tick::observe`), or writing and posting the comment (`report::progress`, `tick::progress`).

use rusqlite::{params, OptionalExtension};

use super::{Store, StoreError};
use crate::model::{CriterionCheck, PullReview, TaskId, ThreadComment};
use crate::time::Timestamp;

impl Store {
    /// What the task's runs spent so far (USD).
    pub fn spend_of_task(&self, id: &TaskId) -> Result<f64, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT spent_usd FROM budgets WHERE scope = 'task' AND key = ?1",
                [id.as_str()],
                |r| r.get::<_, f64>(0),
            )
            .optional()?
            .unwrap_or(0.0))
    }

    /// The acceptance checklist of the task's latest judgement that has one (empty otherwise).
    pub fn latest_criteria(&self, id: &TaskId) -> Result<Vec<CriterionCheck>, StoreError> {
        let text: Option<String> = self
            .conn
            .query_row(
                "SELECT criteria FROM judgements WHERE task_id = ?1 AND criteria <> '[]' \
                 ORDER BY id DESC LIMIT 1",
                [id.as_str()],
                |r| r.get(0),
            )
            .optional()?;
        match text {
            None => Ok(Vec::new()),
            Some(t) => serde_json::from_str(&t)
                .map_err(|e| StoreError::Invalid(format!("judgement criteria of {id}: {e}"))),
        }
    }

    /// Replaces the kept comments of `thread` by `comments` (edited ones change, deleted ones
    /// go); unchanged lists write nothing.
    pub fn set_thread_comments(
        &mut self,
        thread: u64,
        comments: &[ThreadComment],
    ) -> Result<(), StoreError> {
        if self.thread_comments(&[thread])? == comments {
            return Ok(());
        }
        let n = thread as i64;
        self.conn
            .execute("DELETE FROM thread_comments WHERE thread = ?1", [n])?;
        for c in comments {
            self.conn.execute(
                "INSERT OR REPLACE INTO thread_comments \
                 (id, thread, author, association, body, created_at, updated_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    c.id as i64,
                    n,
                    c.author,
                    c.association,
                    c.body,
                    c.created_at.0,
                    c.updated_at.0
                ],
            )?;
        }
        Ok(())
    }

    /// The kept comments of these threads, oldest first.
    pub fn thread_comments(&self, threads: &[u64]) -> Result<Vec<ThreadComment>, StoreError> {
        let mut out = Vec::new();
        let mut stmt = self.conn.prepare(
            "SELECT id, thread, author, association, body, created_at, updated_at \
             FROM thread_comments WHERE thread = ?1",
        )?;
        for &thread in threads {
            let rows = stmt.query_map([thread as i64], |r| {
                Ok(ThreadComment {
                    id: r.get::<_, i64>(0)? as u64,
                    thread: r.get::<_, i64>(1)? as u64,
                    author: r.get(2)?,
                    association: r.get(3)?,
                    body: r.get(4)?,
                    created_at: Timestamp(r.get(5)?),
                    updated_at: Timestamp(r.get(6)?),
                })
            })?;
            for row in rows {
                out.push(row?);
            }
        }
        out.sort_by_key(|c| (c.created_at, c.id));
        Ok(out)
    }

    /// Replaces the kept reviews of PR `pr`; unchanged lists write nothing.
    pub fn set_pull_reviews(&mut self, pr: u64, reviews: &[PullReview]) -> Result<(), StoreError> {
        if self.pull_reviews(&[pr])? == reviews {
            return Ok(());
        }
        self.conn
            .execute("DELETE FROM pull_reviews WHERE pr = ?1", [pr as i64])?;
        for r in reviews {
            let json = serde_json::to_string(r)
                .map_err(|e| StoreError::Invalid(format!("review {}: {e}", r.id)))?;
            self.conn.execute(
                "INSERT OR REPLACE INTO pull_reviews (id, pr, review) VALUES (?1, ?2, ?3)",
                params![r.id as i64, pr as i64, json],
            )?;
        }
        Ok(())
    }

    /// The kept reviews of these PRs, oldest first.
    pub fn pull_reviews(&self, prs: &[u64]) -> Result<Vec<PullReview>, StoreError> {
        let mut out = Vec::new();
        let mut stmt = self
            .conn
            .prepare("SELECT review FROM pull_reviews WHERE pr = ?1")?;
        for &pr in prs {
            let rows = stmt.query_map([pr as i64], |r| r.get::<_, String>(0))?;
            for row in rows {
                let text = row?;
                out.push(
                    serde_json::from_str::<PullReview>(&text).map_err(|e| {
                        StoreError::Invalid(format!("a kept review of PR #{pr}: {e}"))
                    })?,
                );
            }
        }
        out.sort_by_key(|r| (r.submitted_at, r.id));
        Ok(out)
    }

    /// The kept reviews of every PR, by PR (for the engine's review gate).
    pub fn all_pull_reviews(
        &self,
    ) -> Result<std::collections::BTreeMap<u64, Vec<PullReview>>, StoreError> {
        let prs: Vec<i64> = self
            .conn
            .prepare("SELECT DISTINCT pr FROM pull_reviews")?
            .query_map([], |r| r.get(0))?
            .collect::<Result<_, _>>()?;
        let mut out = std::collections::BTreeMap::new();
        for pr in prs {
            let pr = pr as u64;
            out.insert(pr, self.pull_reviews(&[pr])?);
        }
        Ok(out)
    }
}

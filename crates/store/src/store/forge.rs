//! What the forge sync stores: conditional-request cursors (ETag, cached body), the open pull
//! requests' labels read from the cached list, and the state of the pull requests tasks wait
//! on. Not for: asking GitHub (`forge`) or deciding from what it said (`engine`).

use std::collections::BTreeMap;

use rusqlite::{params, OptionalExtension};

use super::{Store, StoreError};
use crate::engine::gate::{CiObservation, ExpectedChecks, ExpectedSource};
use crate::engine::stall::CiHeal;
use crate::engine::PullState;
use crate::model::IssueSpec;
use crate::time::Timestamp;

/// A conditional request's memory: the ETag to send next time, and the body it stood for.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Cursor {
    pub etag: Option<String>,
    pub body: Option<String>,
}

impl Store {
    /// The spec kept of issue `number`, if any.
    pub fn issue_spec(&self, number: u64) -> Result<Option<IssueSpec>, StoreError> {
        let n =
            i64::try_from(number).map_err(|_| StoreError::Invalid(format!("issue #{number}")))?;
        Ok(self
            .conn
            .query_row(
                "SELECT title, body, author, url, hash, updated_at FROM issue_specs WHERE number = ?1",
                [n],
                |r| {
                    Ok(IssueSpec {
                        number,
                        title: r.get(0)?,
                        body: r.get(1)?,
                        author: r.get(2)?,
                        url: r.get(3)?,
                        hash: r.get(4)?,
                        updated_at: Timestamp(r.get(5)?),
                    })
                },
            )
            .optional()?)
    }

    /// Keeps `spec` as the spec of its issue's tasks (replacing an older version).
    pub fn set_issue_spec(&mut self, spec: &IssueSpec) -> Result<(), StoreError> {
        let n = i64::try_from(spec.number)
            .map_err(|_| StoreError::Invalid(format!("issue #{}", spec.number)))?;
        self.conn.execute(
            "INSERT INTO issue_specs (number, title, body, author, url, hash, updated_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(number) DO UPDATE SET \
             title = excluded.title, body = excluded.body, author = excluded.author, \
             url = excluded.url, hash = excluded.hash, updated_at = excluded.updated_at",
            params![
                n,
                spec.title,
                spec.body,
                spec.author,
                spec.url,
                spec.hash,
                spec.updated_at.0
            ],
        )?;
        Ok(())
    }

    /// The labels of each open PR, from the open-PR list the observe step keeps.
    pub fn open_pull_labels(&self) -> Result<BTreeMap<u64, Vec<String>>, StoreError> {
        let pulls: Vec<crate::model::PullRequest> = self
            .cursor(OPEN_PULLS)?
            .body
            .and_then(|b| serde_json::from_str(&b).ok())
            .unwrap_or_default();
        Ok(pulls.into_iter().map(|p| (p.number, p.labels)).collect())
    }

    pub fn cursor(&self, key: &str) -> Result<Cursor, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT etag, body FROM forge_cursors WHERE key = ?1",
                [key],
                |r| {
                    Ok(Cursor {
                        etag: r.get(0)?,
                        body: r.get(1)?,
                    })
                },
            )
            .optional()?
            .unwrap_or_default())
    }

    /// Stores a cursor; unchanged values write nothing (a quiet tick must not make a commit).
    pub fn set_cursor(
        &mut self,
        key: &str,
        cursor: &Cursor,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        if &self.cursor(key)? == cursor {
            return Ok(());
        }
        self.conn.execute(
            "INSERT INTO forge_cursors (key, etag, body, updated_at) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT(key) DO UPDATE SET etag = excluded.etag, body = excluded.body, updated_at = excluded.updated_at",
            params![key, cursor.etag, cursor.body, now.0],
        )?;
        Ok(())
    }

    pub fn pull_states(&self) -> Result<BTreeMap<u64, PullState>, StoreError> {
        let rows = self
            .conn
            .prepare("SELECT number, state FROM pull_states")?
            .query_map([], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?)))?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows
            .into_iter()
            .filter_map(|(n, s)| {
                let state = match s.as_str() {
                    "open" => PullState::Open,
                    "merged" => PullState::Merged,
                    "closed" => PullState::Closed,
                    _ => return None,
                };
                Some((u64::try_from(n).ok()?, state))
            })
            .collect())
    }

    /// Records a PR's state; unchanged values write nothing. A new head forgets the checks read
    /// for the old one (CI on one commit says nothing about the next).
    pub fn set_pull_state(
        &mut self,
        number: u64,
        state: PullState,
        head_sha: Option<&str>,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let word = match state {
            PullState::Open => "open",
            PullState::Merged => "merged",
            PullState::Closed => "closed",
        };
        let current: Option<(String, Option<String>)> = self
            .conn
            .query_row(
                "SELECT state, head_sha FROM pull_states WHERE number = ?1",
                [number as i64],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        if current
            .as_ref()
            .is_some_and(|(s, h)| s == word && h.as_deref() == head_sha)
        {
            return Ok(());
        }
        self.conn.execute(
            "INSERT INTO pull_states (number, state, head_sha, updated_at) VALUES (?1, ?2, ?3, ?4) \
             ON CONFLICT(number) DO UPDATE SET state = excluded.state, head_sha = excluded.head_sha, updated_at = excluded.updated_at, \
             checks = CASE WHEN pull_states.head_sha IS excluded.head_sha THEN pull_states.checks ELSE NULL END",
            params![number as i64, word, head_sha, now.0],
        )?;
        Ok(())
    }
}

impl Store {
    /// Every review task of a person's PR (`pr_review`), in any status.
    pub fn pull_review_tasks(&self) -> Result<Vec<crate::model::Task>, StoreError> {
        let sql = format!(
            "SELECT {} FROM tasks WHERE kind = 'pr_review' ORDER BY created_at, id",
            super::rows::TASK_COLUMNS
        );
        let tasks = self
            .conn
            .prepare(&sql)?
            .query_map([], super::rows::task)?
            .collect::<Result<_, _>>()?;
        Ok(tasks)
    }

    /// The issue tasks whose progress comment a tick may have to rewrite, with the body of
    /// their `progress:<id>` cursor: every open one when `open` is set, and the decided ones
    /// (done, cancelled) whose last published report does not say `completed` yet. One query,
    /// so a quiet tick on a large state does not read every finished task's cursor.
    pub fn tasks_to_report(
        &self,
        open: bool,
    ) -> Result<Vec<(crate::model::Task, Option<String>)>, StoreError> {
        let sql = format!(
            "SELECT {}, (SELECT body FROM forge_cursors WHERE key = 'progress:' || tasks.id) \
             FROM tasks WHERE issue_number IS NOT NULL AND kind <> 'pr_review' AND \
             CASE WHEN status IN ('done', 'cancelled') THEN EXISTS (SELECT 1 FROM forge_cursors c \
               WHERE c.key = 'progress:' || tasks.id AND c.body IS NOT NULL \
               AND json_extract(c.body, '$.phase') IS NOT 'completed') \
             ELSE ?1 END \
             ORDER BY created_at, id",
            super::rows::TASK_COLUMNS
        );
        let columns = super::rows::TASK_COLUMNS.split(',').count();
        let rows: Vec<(crate::model::Task, Option<String>)> = self
            .conn
            .prepare(&sql)?
            .query_map([open], |r| Ok((super::rows::task(r)?, r.get(columns)?)))?
            .collect::<Result<_, _>>()?;
        let (mut tasks, bodies): (Vec<_>, Vec<_>) = rows.into_iter().unzip();
        self.attach_dependencies(&mut tasks)?;
        Ok(tasks.into_iter().zip(bodies).collect())
    }

    /// Every task linked to an issue, in any status, with its dependencies.
    pub fn tasks_with_issues(&self) -> Result<Vec<crate::model::Task>, StoreError> {
        let sql = format!(
            "SELECT {} FROM tasks WHERE issue_number IS NOT NULL ORDER BY created_at, id",
            super::rows::TASK_COLUMNS
        );
        let mut tasks: Vec<_> = self
            .conn
            .prepare(&sql)?
            .query_map([], super::rows::task)?
            .collect::<Result<_, _>>()?;
        self.attach_dependencies(&mut tasks)?;
        Ok(tasks)
    }

    /// Moves a task to another role (its issue now asks for one), with its lane.
    pub fn retarget(
        &mut self,
        id: &crate::model::TaskId,
        (role, kind): (crate::model::Role, crate::model::TaskKind),
        lane: crate::model::Lane,
        reason: &str,
        writer: super::Writer<'_>,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "UPDATE tasks SET role = ?2, lane = ?3, kind = ?5, updated_at = ?4 WHERE id = ?1",
            params![
                id.as_str(),
                role.as_str(),
                lane.as_str(),
                writer.now.0,
                kind.as_str()
            ],
        )?;
        super::journal::note(&tx, writer, "task.retargeted", Some(id), None, reason)?;
        tx.commit()?;
        Ok(())
    }

    /// Remembers the PR a task's change is in.
    pub fn set_task_pr(&mut self, id: &crate::model::TaskId, pr: u64) -> Result<(), StoreError> {
        self.conn.execute(
            "UPDATE tasks SET source_pr = ?2 WHERE id = ?1 AND (source_pr IS NULL OR source_pr <> ?2)",
            params![id.as_str(), pr as i64],
        )?;
        Ok(())
    }
}

impl Store {
    /// Links a task to the issue that mirrors it (idempotent).
    pub fn link_issue(
        &mut self,
        id: &crate::model::TaskId,
        issue: u64,
    ) -> Result<bool, StoreError> {
        Ok(self.conn.execute(
            "UPDATE tasks SET issue_number = ?2 WHERE id = ?1 AND issue_number IS NULL",
            params![id.as_str(), issue as i64],
        )? > 0)
    }
}

impl Store {
    /// The checks stored for a PR, with the head they were read for.
    pub fn pull_checks(
        &self,
        number: u64,
    ) -> Result<Option<(Option<String>, crate::model::Checks)>, StoreError> {
        let row: Option<(Option<String>, Option<String>)> = self
            .conn
            .query_row(
                "SELECT head_sha, checks FROM pull_states WHERE number = ?1",
                [number as i64],
                |r| Ok((r.get(0)?, r.get(1)?)),
            )
            .optional()?;
        Ok(row.and_then(|(sha, checks)| Some((sha, serde_json::from_str(&checks?).ok()?))))
    }

    /// What CI last said about each open PR's head, for the judge's gate.
    pub fn open_pull_checks(&self) -> Result<BTreeMap<u64, CiObservation>, StoreError> {
        let rows = self
            .conn
            .prepare(
                "SELECT number, head_sha, checks FROM pull_states
                 WHERE state = 'open' AND head_sha IS NOT NULL AND checks IS NOT NULL",
            )?
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let mut out = BTreeMap::new();
        for (number, head_sha, checks) in rows {
            let (Ok(number), Ok(checks)) = (u64::try_from(number), serde_json::from_str(&checks))
            else {
                continue;
            };
            let mergeable_unknown_since = self
                .mergeable_unknown(number)?
                .filter(|u| u.head_sha == head_sha)
                .map(|u| u.since);
            out.insert(
                number,
                CiObservation {
                    head_sha,
                    checks,
                    mergeable_unknown_since,
                },
            );
        }
        Ok(out)
    }

    /// Stores what CI said about a PR's head; unchanged values write nothing.
    pub fn set_pull_checks(
        &mut self,
        number: u64,
        head_sha: &str,
        checks: &crate::model::Checks,
    ) -> Result<(), StoreError> {
        let text = serde_json::to_string(checks).unwrap_or_default();
        self.conn.execute(
            "UPDATE pull_states SET checks = ?3, head_sha = ?2 WHERE number = ?1 AND (checks IS NOT ?3 OR head_sha IS NOT ?2)",
            params![number as i64, head_sha, text],
        )?;
        Ok(())
    }
}

/// The cursor key of what was done about a PR whose expected checks never appeared.
fn heal_key(pr: u64) -> String {
    format!("ci:heal:{pr}")
}

/// The cursor key of the check names learned from the base branch and PR heads.
pub const LEARNED_CHECKS: &str = "ci:learned";

/// The cursor keys of the check runs and the commit statuses last read on the base branch's
/// tip; a base whose two reads were never stored is not known to have CI or not (issue 49).
pub const BASE_CHECK_RUNS: &str = "ci:base-check-runs";
pub const BASE_STATUSES: &str = "ci:base-statuses";

/// The cursor key of the repository's open pull requests (the body is the list as last read).
pub const OPEN_PULLS: &str = "pulls:open";

/// The cursor key of the base branch's rules (the body is the names of its required checks).
pub fn rules_key(branch: &str) -> String {
    format!("rules:{branch}")
}

/// Records a stalled PR's heal inside a plan's transaction.
pub(super) fn write_ci_heal(
    tx: &rusqlite::Transaction<'_>,
    pr: u64,
    heal: &CiHeal,
    now: Timestamp,
) -> Result<(), StoreError> {
    let body = serde_json::to_string(heal).unwrap_or_default();
    write_cursor_body(tx, &heal_key(pr), &body, now)
}

/// Sets the body of cursor `key` inside a transaction, keeping its ETag.
fn write_cursor_body(
    tx: &rusqlite::Transaction<'_>,
    key: &str,
    body: &str,
    now: Timestamp,
) -> Result<(), StoreError> {
    tx.execute(
        "INSERT INTO forge_cursors (key, etag, body, updated_at) VALUES (?1, NULL, ?2, ?3) \
         ON CONFLICT(key) DO UPDATE SET body = excluded.body, updated_at = excluded.updated_at",
        params![key, body, now.0],
    )?;
    Ok(())
}

impl Store {
    /// What was done about stalled PR heads, by PR.
    pub fn ci_heals(&self) -> Result<BTreeMap<u64, CiHeal>, StoreError> {
        let rows = self
            .conn
            .prepare("SELECT key, body FROM forge_cursors WHERE key LIKE 'ci:heal:%'")?
            .query_map([], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows
            .into_iter()
            .filter_map(|(key, body)| {
                let pr = key.strip_prefix("ci:heal:")?.parse().ok()?;
                Some((pr, serde_json::from_str(&body?).ok()?))
            })
            .collect())
    }

    /// Records how a dispatch went (after the act phase sent it).
    pub fn set_ci_heal(
        &mut self,
        pr: u64,
        heal: &CiHeal,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let body = serde_json::to_string(heal).ok();
        self.set_cursor(&heal_key(pr), &Cursor { etag: None, body }, now)
    }

    /// A list of names stored as a cursor's body (learned checks, a branch's required checks).
    pub fn cursor_names(&self, key: &str) -> Result<Vec<String>, StoreError> {
        Ok(self
            .cursor(key)?
            .body
            .and_then(|b| serde_json::from_str(&b).ok())
            .unwrap_or_default())
    }

    /// Adds check names to what is learned about this repository's CI; unchanged writes nothing.
    pub fn learn_checks(&mut self, names: &[String], now: Timestamp) -> Result<(), StoreError> {
        let mut known = self.cursor_names(LEARNED_CHECKS)?;
        let before = known.len();
        known.extend(names.iter().cloned());
        known.sort();
        known.dedup();
        if known.len() == before {
            return Ok(());
        }
        let cursor = Cursor {
            etag: None,
            body: serde_json::to_string(&known).ok(),
        };
        self.set_cursor(LEARNED_CHECKS, &cursor, now)
    }

    /// The checks a PR into `base` must pass: `merge.required_checks`, else the base branch's
    /// required checks as last read, else what was learned; with none of them, "no CI" only
    /// once the base branch's checks and statuses were read, "not known yet" before.
    pub fn expected_checks(
        &self,
        configured: Option<&[String]>,
        base: &str,
    ) -> Result<ExpectedChecks, StoreError> {
        let rules = self.cursor_names(&rules_key(base))?;
        let learned = self.cursor_names(LEARNED_CHECKS)?;
        let mut expected = ExpectedChecks::choose(configured, &rules, &learned);
        let read = |key: &str| -> Result<bool, StoreError> {
            let c = self.cursor(key)?;
            Ok(c.etag.is_some() || c.body.is_some())
        };
        if expected.source == ExpectedSource::Nothing
            && configured.is_none()
            && !(read(BASE_CHECK_RUNS)? && read(BASE_STATUSES)?)
        {
            expected.source = ExpectedSource::Unknown;
        }
        Ok(expected)
    }
}

/// Since when a PR head's mergeability has been unknown (GitHub's `mergeable: null`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MergeableUnknown {
    pub head_sha: String,
    pub since: Timestamp,
}

fn unknown_key(pr: u64) -> String {
    format!("pull:mergeable-unknown:{pr}")
}

impl Store {
    pub fn mergeable_unknown(&self, pr: u64) -> Result<Option<MergeableUnknown>, StoreError> {
        Ok(self
            .cursor(&unknown_key(pr))?
            .body
            .and_then(|b| serde_json::from_str(&b).ok()))
    }

    /// Notes what a read of a PR head said about its mergeability: the first time it is unknown
    /// for this head starts the clock; a known answer stops it.
    pub fn note_mergeable(
        &mut self,
        pr: u64,
        head_sha: &str,
        unknown: bool,
        now: Timestamp,
    ) -> Result<(), StoreError> {
        let current = self.mergeable_unknown(pr)?;
        let wanted = match current {
            Some(u) if unknown && u.head_sha == head_sha => Some(u),
            _ if unknown => Some(MergeableUnknown {
                head_sha: head_sha.to_string(),
                since: now,
            }),
            _ => None,
        };
        let cursor = Cursor {
            etag: None,
            body: wanted.and_then(|w| serde_json::to_string(&w).ok()),
        };
        if cursor.body.is_none() && self.cursor(&unknown_key(pr))? == Cursor::default() {
            return Ok(());
        }
        self.set_cursor(&unknown_key(pr), &cursor, now)
    }
}

fn base_key(pr: u64) -> String {
    format!("pull:base:{pr}")
}

fn retarget_key(pr: u64) -> String {
    format!("pull:retarget:{pr}")
}

/// Records, inside a plan's transaction, that a PR is being retargeted away from `from`.
pub(super) fn write_retarget(
    tx: &rusqlite::Transaction<'_>,
    pr: u64,
    from: &str,
    now: Timestamp,
) -> Result<(), StoreError> {
    write_cursor_body(tx, &retarget_key(pr), from, now)
}

impl Store {
    /// Remembers the base branch a task PR targets (unchanged writes nothing).
    pub fn set_pull_base(&mut self, pr: u64, base: &str, now: Timestamp) -> Result<(), StoreError> {
        let cursor = Cursor {
            etag: None,
            body: Some(base.to_string()),
        };
        self.set_cursor(&base_key(pr), &cursor, now)
    }

    /// Cursor bodies under `prefix` + PR number, by PR.
    fn by_pull(&self, prefix: &str) -> Result<BTreeMap<u64, String>, StoreError> {
        let rows = self
            .conn
            .prepare("SELECT key, body FROM forge_cursors WHERE key LIKE ?1 || '%'")?
            .query_map([prefix], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, Option<String>>(1)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        Ok(rows
            .into_iter()
            .filter_map(|(key, body)| Some((key.strip_prefix(prefix)?.parse().ok()?, body?)))
            .collect())
    }

    /// The base branch of each task PR as last seen.
    pub fn pull_bases(&self) -> Result<BTreeMap<u64, String>, StoreError> {
        self.by_pull("pull:base:")
    }

    /// PRs retargeted, with the base each was moved away from.
    pub fn retargeted_pulls(&self) -> Result<BTreeMap<u64, String>, StoreError> {
        self.by_pull("pull:retarget:")
    }
}

//! What the loop learned about where agents run (issue 52): the host snapshot (one row, its
//! facts as JSON), the failure lessons (one row each, written only when one changes: a save
//! costs the rows a run changed, never the whole book) and each run's prompt size.
//!
//! Not for: what a run teaches, when a lesson expires or what the book keeps
//! (`engine::learned::book`), or probing (`runner::probe`).

use rusqlite::{params, OptionalExtension};

use super::{Store, StoreError};
use crate::engine::learned::book::BookChange;
use crate::model::learned::{HostSnapshot, Learned, Lesson, PromptSize, Signature};
use crate::model::{RunId, TaskId};
use crate::time::Timestamp;

/// What `lessons clear` removed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Cleared {
    All(usize),
    One(Lesson),
    /// No lesson has this id (or id prefix).
    None,
}

impl Store {
    /// The stored host snapshot, if one was taken.
    pub fn host_snapshot(&self) -> Result<Option<HostSnapshot>, StoreError> {
        let facts: Option<String> = self
            .conn
            .query_row("SELECT facts FROM host_snapshot WHERE id = 1", [], |r| {
                r.get(0)
            })
            .optional()?;
        // A row this build cannot read is a snapshot to take again, not a broken state.
        Ok(facts.and_then(|f| serde_json::from_str(&f).ok()))
    }

    /// Keeps `snapshot` in place of the one stored.
    pub fn save_host_snapshot(&mut self, snapshot: &HostSnapshot) -> Result<(), StoreError> {
        let facts = serde_json::to_string(snapshot)
            .map_err(|e| StoreError::Invalid(format!("host snapshot: {e}")))?;
        self.conn.execute(
            "INSERT INTO host_snapshot (id, taken_at, facts) VALUES (1, ?1, ?2) \
             ON CONFLICT(id) DO UPDATE SET taken_at = excluded.taken_at, facts = excluded.facts",
            params![snapshot.taken_at.0, facts],
        )?;
        Ok(())
    }

    /// Every stored lesson, the most recently seen first (expired ones too: the engine says
    /// which are in force).
    pub fn lessons(&self) -> Result<Vec<Lesson>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, signature, count, first_seen, last_seen FROM lessons \
             ORDER BY last_seen DESC, id",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, i64>(3)?,
                r.get::<_, i64>(4)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (id, signature, count, first, last) = row?;
            // A signature this build does not know is skipped, not an error.
            let Ok(signature) = serde_json::from_str::<Signature>(&signature) else {
                continue;
            };
            out.push(Lesson {
                id,
                signature,
                count: u32::try_from(count).unwrap_or(u32::MAX),
                first_seen: Timestamp(first),
                last_seen: Timestamp(last),
            });
        }
        Ok(out)
    }

    /// The snapshot and every stored lesson.
    pub fn learned(&self) -> Result<Learned, StoreError> {
        Ok(Learned {
            host: self.host_snapshot()?,
            lessons: self.lessons()?,
        })
    }

    /// Writes what changed of the book, in one transaction.
    pub fn apply_lessons(&mut self, change: &BookChange) -> Result<(), StoreError> {
        if change.is_empty() {
            return Ok(());
        }
        let tx = self.conn.transaction()?;
        for id in &change.remove {
            tx.execute("DELETE FROM lessons WHERE id = ?1", [id])?;
        }
        for l in &change.upsert {
            let signature = serde_json::to_string(&l.signature)
                .map_err(|e| StoreError::Invalid(format!("lesson: {e}")))?;
            tx.execute(
                "INSERT INTO lessons (id, signature, count, first_seen, last_seen) \
                 VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(id) DO UPDATE SET \
                 count = excluded.count, last_seen = excluded.last_seen",
                params![l.id, signature, l.count, l.first_seen.0, l.last_seen.0],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Removes every lesson (`None`) or the one whose id starts with `prefix` (4 or more
    /// characters, unique).
    pub fn clear_lessons(&mut self, prefix: Option<&str>) -> Result<Cleared, StoreError> {
        let Some(prefix) = prefix else {
            let n = self.conn.execute("DELETE FROM lessons", [])?;
            return Ok(Cleared::All(n));
        };
        let found: Vec<Lesson> = self
            .lessons()?
            .into_iter()
            .filter(|l| l.id.starts_with(prefix))
            .collect();
        match found.as_slice() {
            [] => Ok(Cleared::None),
            [one] if prefix.len() >= 4 || prefix == one.id => {
                self.conn.execute("DELETE FROM lessons WHERE id = ?1", [&one.id])?;
                Ok(Cleared::One(one.clone()))
            }
            [one] => Err(StoreError::Invalid(format!(
                "lesson id prefix `{prefix}` is too short\n  fix: give 4 or more characters of the id (`opentiger lessons` lists them), e.g. `opentiger lessons clear {}`",
                one.id
            ))),
            many => Err(StoreError::Ambiguous {
                prefix: prefix.to_string(),
                matches: many.iter().map(|l| l.id.clone()).collect(),
            }),
        }
    }

    /// Records how big run `run_id`'s prompt was.
    pub fn record_prompt_size(
        &mut self,
        run_id: &RunId,
        size: &PromptSize,
    ) -> Result<(), StoreError> {
        let n = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
        self.conn.execute(
            "UPDATE runs SET prompt_chars = ?2, host_chars = ?3, hints_chars = ?4 WHERE id = ?1",
            params![
                run_id.as_str(),
                n(size.chars),
                n(size.host_chars),
                n(size.hints_chars)
            ],
        )?;
        Ok(())
    }

    /// The prompt sizes of `task`'s runs that recorded one, by run.
    pub fn prompt_sizes_of(&self, task: &TaskId) -> Result<Vec<(RunId, PromptSize)>, StoreError> {
        let mut stmt = self.conn.prepare(
            "SELECT id, prompt_chars, host_chars, hints_chars FROM runs \
             WHERE task_id = ?1 AND prompt_chars IS NOT NULL ORDER BY started_at DESC, id",
        )?;
        let rows = stmt.query_map([task.as_str()], |r| {
            let n = |i: usize| r.get::<_, i64>(i).map(|v| u64::try_from(v).unwrap_or(0));
            Ok((
                RunId(r.get(0)?),
                PromptSize {
                    chars: n(1)?,
                    host_chars: n(2)?,
                    hints_chars: n(3)?,
                },
            ))
        })?;
        Ok(rows.collect::<Result<_, _>>()?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::ContextConfig;
    use crate::engine::learned::book::{learn, Observation};
    use crate::model::learned::ToolFact;

    fn pnpm() -> Signature {
        Signature::MissingCommand {
            program: Some("pnpm".into()),
            command: "pnpm test".into(),
        }
    }

    #[test]
    fn the_snapshot_and_the_book_round_trip_and_clear() {
        let mut store = Store::in_memory("test").unwrap();
        assert_eq!(store.learned().unwrap(), Learned::default());
        let snapshot = HostSnapshot {
            taken_at: Timestamp(5),
            fingerprint: "abc".into(),
            os: "Debian".into(),
            tools: vec![ToolFact {
                name: "npm".into(),
                present: true,
                version: Some("10.2.4".into()),
            }],
            ..Default::default()
        };
        store.save_host_snapshot(&snapshot).unwrap();
        store.save_host_snapshot(&snapshot).unwrap();
        assert_eq!(store.host_snapshot().unwrap(), Some(snapshot));

        let context = ContextConfig::default();
        let seen = Observation {
            failed: vec![pnpm()],
            passed: vec![],
        };
        for at in [10, 20] {
            let change = learn(
                &store.lessons().unwrap(),
                &seen,
                None,
                Timestamp(at),
                &context,
            );
            store.apply_lessons(&change).unwrap();
        }
        let book = store.lessons().unwrap();
        assert_eq!(book.len(), 1);
        assert_eq!(
            (book[0].count, book[0].first_seen, book[0].last_seen),
            (2, Timestamp(10), Timestamp(20))
        );
        // Nothing changed: nothing written.
        let before = store.change_count();
        store.apply_lessons(&BookChange::default()).unwrap();
        assert_eq!(store.change_count(), before);

        let id = book[0].id.clone();
        assert!(store.clear_lessons(Some(&id[..2])).is_err());
        assert_eq!(store.clear_lessons(Some("zzzz")).unwrap(), Cleared::None);
        assert_eq!(
            store.clear_lessons(Some(&id[..4])).unwrap(),
            Cleared::One(book[0].clone())
        );
        assert!(store.lessons().unwrap().is_empty());
        store
            .apply_lessons(&learn(&[], &seen, None, Timestamp(30), &context))
            .unwrap();
        assert_eq!(store.clear_lessons(None).unwrap(), Cleared::All(1));
    }
}

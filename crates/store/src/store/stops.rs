//! A person's request to stop a running run (issue 51): written by `opentiger task stop` or a
//! `/opentiger stop` comment through the state like every other command, read by the tick that
//! runs the agent while it runs (`tick::stop_watch`), removed when the run is recorded.
//!
//! Not for: whether a stop may be asked (`engine::stop`), or ending the agent (`process`).

use rusqlite::{params, OptionalExtension};

use super::journal::{note, Writer};
use super::{Store, StoreError};
use crate::model::{RunId, TaskId};
use crate::time::Timestamp;

/// Who asked a run to stop, and when.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StopRequest {
    pub by: String,
    pub at: Timestamp,
}

impl Store {
    /// Asks run `run` of `task` to stop, `by` a person; asking again keeps the first request.
    pub fn request_stop(
        &mut self,
        task: &TaskId,
        run: &RunId,
        by: &str,
        writer: Writer<'_>,
    ) -> Result<(), StoreError> {
        let tx = self.conn.transaction()?;
        let added = tx.execute(
            "INSERT OR IGNORE INTO stop_requests (run_id, task_id, asked_by, asked_at) VALUES (?1, ?2, ?3, ?4)",
            params![run.as_str(), task.as_str(), by, writer.now.0],
        )?;
        if added > 0 {
            note(
                &tx,
                writer,
                "run.stop_requested",
                Some(task),
                Some(run),
                &format!("{by} asked its run to stop"),
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The request to stop run `run`, if a person made one.
    pub fn stop_request(&self, run: &RunId) -> Result<Option<StopRequest>, StoreError> {
        Ok(self
            .conn
            .query_row(
                "SELECT asked_by, asked_at FROM stop_requests WHERE run_id = ?1",
                params![run.as_str()],
                |r| {
                    Ok(StopRequest {
                        by: r.get(0)?,
                        at: Timestamp(r.get(1)?),
                    })
                },
            )
            .optional()?)
    }

    /// The run was recorded: its request, if any, is done with.
    pub fn forget_stop(&mut self, run: &RunId) -> Result<(), StoreError> {
        self.conn.execute(
            "DELETE FROM stop_requests WHERE run_id = ?1",
            params![run.as_str()],
        )?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Task;

    #[test]
    fn a_stop_request_is_kept_once_and_forgotten_with_its_run() {
        let mut store = Store::in_memory("test").unwrap();
        let now = Timestamp(1_000);
        let writer = Writer {
            tick_id: None,
            actor: "human",
            now,
        };
        let task = Task::new(TaskId::from("t1"), "T", "g", now);
        store
            .insert_tasks(std::slice::from_ref(&task), writer)
            .unwrap();
        let run = RunId::from("r1");
        assert_eq!(store.stop_request(&run).unwrap(), None);
        store.request_stop(&task.id, &run, "ann", writer).unwrap();
        let later = Writer {
            now: Timestamp(2_000),
            ..writer
        };
        store.request_stop(&task.id, &run, "bob", later).unwrap();
        assert_eq!(
            store.stop_request(&run).unwrap(),
            Some(StopRequest {
                by: "ann".into(),
                at: now
            })
        );
        let events = store.events_of(&task.id, 10).unwrap();
        assert_eq!(
            events
                .iter()
                .filter(|e| e.kind == "run.stop_requested")
                .count(),
            1
        );
        store.forget_stop(&run).unwrap();
        assert_eq!(store.stop_request(&run).unwrap(), None);
    }
}

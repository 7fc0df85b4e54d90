//! The SQLite state store: opening, migrating, and every read and write of state.
//!
//! One file holds the whole state (DESIGN §4). It is opened straight from disk: read-write under
//! the state lock, or read-only in place for commands that only read (a dry run must leave the
//! file byte-identical); from bytes only in tests and benchmarks. Every status move goes through [`crate::model::check_transition`] and
//! writes an event in the same SQL transaction.
//!
//! Not for: deciding anything (the engine's rules; the store takes the engine's `Plan` only to
//! apply it in one transaction), or where the file lives (`statebranch`, the file lock).

mod apply;
mod approvals;
mod executors;
mod family;
mod forge;
mod journal;
mod learned;
mod people;
mod plans;
mod progress;
mod record;
mod research;
mod retention;
mod rows;
mod schema;
mod snapshot;
mod spend;
mod stops;
mod tasks;

use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

pub use apply::{ApplyReport, HealCi};
pub use family::FamilyRuns;
pub use forge::{rules_key, Cursor, BASE_CHECK_RUNS, BASE_STATUSES, LEARNED_CHECKS, OPEN_PULLS};
pub use journal::{TaskChanges, Writer};
pub use learned::Cleared;
pub use people::{CommandRecord, Escalation, RepoPause};
pub use plans::ReviewFeedback;
pub use record::{Handover, JudgementRow, Recorded, RunRecord, FAN_OUT_PREFIX};
pub use retention::{Pruned, Table};
pub use schema::LATEST as SCHEMA_VERSION;
pub use snapshot::SnapshotLimits;
pub use spend::{AgentSpend, AgentSpendRow};
pub use stops::StopRequest;
pub use tasks::{NewTask, TaskFilter, TickRecord};

/// What can go wrong with the state file.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: the state file was written by a newer opentiger (schema {found}, this build knows up to {known})\n  fix: upgrade opentiger; the file was left untouched")]
    NewerSchema {
        path: String,
        found: i64,
        known: i64,
    },
    #[error("{path}: not a readable opentiger state file ({detail})\n  fix: restore it from git history (`git log -- {path}`), or move it away to start with an empty state")]
    Corrupt { path: String, detail: String },
    #[error("{0}")]
    Invalid(String),
    #[error("task {0} not found\n  fix: `opentiger task list` shows the ids")]
    NoSuchTask(String),
    #[error("task id prefix `{prefix}` is ambiguous: {}\n  fix: give more characters of the id", matches.join(", "))]
    Ambiguous {
        prefix: String,
        matches: Vec<String>,
    },
    #[error(transparent)]
    Transition(#[from] crate::model::IllegalTransition),
    #[error("state store: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("state store: {0}")]
    Io(#[from] std::io::Error),
}

impl StoreError {
    /// Errors the user can fix (exit code 2) versus failures of the tick itself.
    pub fn is_user_error(&self) -> bool {
        match self {
            StoreError::NewerSchema { .. }
            | StoreError::Corrupt { .. }
            | StoreError::Invalid(_)
            | StoreError::NoSuchTask(_)
            | StoreError::Ambiguous { .. }
            | StoreError::Transition(_) => true,
            StoreError::Sqlite(_) | StoreError::Io(_) => false,
        }
    }
}

/// An open state database.
pub struct Store {
    conn: Connection,
    /// Where it came from, for messages.
    origin: String,
    /// A private copy's folder, removed when the store is dropped.
    _scratch: Option<tempfile::TempDir>,
}

impl Store {
    /// Opens (creating when missing) the state file at `path` for reading and writing.
    pub fn open_file(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir)?;
        }
        let origin = path.display().to_string();
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE
                | OpenFlags::SQLITE_OPEN_CREATE
                | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| corrupt(&origin, &e))?;
        Store::ready(conn, origin)
    }

    /// Opens the state file at `path` read-only, in place: nothing is copied into memory (SQLite
    /// reads the pages a query needs), and any attempt to write fails. A missing file gives an
    /// empty state; a file of an older schema is loaded into memory and migrated there, so the
    /// file stays untouched until the next command that writes.
    pub fn open_read_only(path: &Path) -> Result<Store, StoreError> {
        let origin = path.display().to_string();
        if !path.exists() {
            return Store::in_memory(&origin);
        }
        let conn = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|e| corrupt(&origin, &e))?;
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        let version: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| corrupt(&origin, &e))?;
        if (0..schema::LATEST).contains(&version) {
            drop(conn);
            return Store::load_file_in_memory(path);
        }
        Store::ready(conn, origin)
    }

    /// Loads a state file into memory without touching it; changes stay in memory.
    /// A missing file gives an empty state.
    pub fn load_file_in_memory(path: &Path) -> Result<Store, StoreError> {
        let origin = path.display().to_string();
        match std::fs::read(path) {
            Ok(bytes) => Store::from_bytes(&bytes, &origin),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Store::in_memory(&origin),
            Err(e) => Err(e.into()),
        }
    }

    /// A state database from bytes (a git blob or a file read whole), in memory.
    pub fn from_bytes(bytes: &[u8], origin: &str) -> Result<Store, StoreError> {
        if bytes.is_empty() {
            return Store::in_memory(origin);
        }
        let mut conn = Connection::open_in_memory()?;
        conn.deserialize_read_exact(rusqlite::MAIN_DB, bytes, bytes.len(), false)
            .map_err(|e| corrupt(origin, &e))?;
        Store::ready(conn, origin.to_string())
    }

    /// An empty state in memory.
    pub fn in_memory(origin: &str) -> Result<Store, StoreError> {
        Store::ready(Connection::open_in_memory()?, origin.to_string())
    }

    /// Keeps `dir` (holding this store's file) alive as long as the store.
    pub fn owning(mut self, dir: tempfile::TempDir) -> Store {
        self._scratch = Some(dir);
        self
    }

    /// The whole database as bytes (for the state branch).
    pub fn to_bytes(&mut self) -> Result<Vec<u8>, StoreError> {
        Ok(self.conn.serialize(rusqlite::MAIN_DB)?.to_vec())
    }

    /// Rows changed through this connection so far: unchanged means nothing to save.
    pub fn change_count(&self) -> u64 {
        self.conn.total_changes()
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    fn ready(conn: Connection, origin: String) -> Result<Store, StoreError> {
        conn.busy_timeout(std::time::Duration::from_secs(10))?;
        conn.pragma_update(None, "foreign_keys", "ON")
            .map_err(|e| corrupt(&origin, &e))?;
        let mut store = Store {
            conn,
            origin,
            _scratch: None,
        };
        store.migrate()?;
        store.check_schema()?;
        Ok(store)
    }

    /// Refuses a file whose tables or columns are not all there (a table dropped by hand, a file
    /// stamped with a schema version it does not have): it is read before anything is claimed,
    /// so a broken state stops the tick before any work starts, not halfway through it.
    fn check_schema(&self) -> Result<(), StoreError> {
        let expected = expected_schema()?;
        let found = schema_of(&self.conn).map_err(|e| corrupt(&self.origin, &e))?;
        let mut problems = Vec::new();
        for (table, columns) in expected {
            match found.iter().find(|(t, _)| t == table) {
                None => problems.push(format!("the table `{table}` is missing")),
                Some((_, have)) => {
                    for column in columns.iter().filter(|c| !have.contains(c)) {
                        problems.push(format!("the table `{table}` has no column `{column}`"));
                    }
                }
            }
        }
        if problems.is_empty() {
            return Ok(());
        }
        Err(StoreError::Corrupt {
            path: self.origin.clone(),
            detail: format!(
                "schema version {} but {}",
                self.schema_version()?,
                problems.join(", ")
            ),
        })
    }

    /// Brings the schema forward; refuses files from a newer build.
    fn migrate(&mut self) -> Result<(), StoreError> {
        let version: i64 = self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .map_err(|e| corrupt(&self.origin, &e))?;
        if version > schema::LATEST {
            return Err(StoreError::NewerSchema {
                path: self.origin.clone(),
                found: version,
                known: schema::LATEST,
            });
        }
        if version < 0 {
            return Err(StoreError::Corrupt {
                path: self.origin.clone(),
                detail: format!("negative schema version {version}"),
            });
        }
        if version == 0 {
            // A version-0 file must be empty: anything else is not ours.
            let tables: i64 = self
                .conn
                .query_row("SELECT count(*) FROM sqlite_schema", [], |r| r.get(0))
                .map_err(|e| corrupt(&self.origin, &e))?;
            if tables > 0 {
                return Err(StoreError::Corrupt {
                    path: self.origin.clone(),
                    detail: "a SQLite database, but not an opentiger state (no schema version)"
                        .to_string(),
                });
            }
        }
        let tx = self.conn.transaction()?;
        for (index, sql) in schema::MIGRATIONS.iter().enumerate().skip(version as usize) {
            tx.execute_batch(sql)?;
            tx.pragma_update(None, "user_version", index as i64 + 1)?;
        }
        tx.commit()?;
        Ok(())
    }

    pub fn schema_version(&self) -> Result<i64, StoreError> {
        Ok(self
            .conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))?)
    }
}

/// Tables and their columns, by name.
type Schema = Vec<(String, Vec<String>)>;

/// The tables and columns of a state file at the latest schema, computed once.
fn expected_schema() -> Result<&'static Schema, StoreError> {
    static EXPECTED: std::sync::OnceLock<Schema> = std::sync::OnceLock::new();
    if let Some(schema) = EXPECTED.get() {
        return Ok(schema);
    }
    let conn = Connection::open_in_memory()?;
    for sql in schema::MIGRATIONS {
        conn.execute_batch(sql)?;
    }
    let schema = schema_of(&conn)?;
    Ok(EXPECTED.get_or_init(|| schema))
}

fn schema_of(conn: &Connection) -> Result<Schema, rusqlite::Error> {
    let mut tables = conn.prepare(
        "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
    )?;
    let names = tables
        .query_map([], |r| r.get::<_, String>(0))?
        .collect::<Result<Vec<_>, _>>()?;
    let mut out = Vec::new();
    for name in names {
        let mut info = conn.prepare("SELECT name FROM pragma_table_info(?1)")?;
        let columns = info
            .query_map([&name], |r| r.get::<_, String>(0))?
            .collect::<Result<Vec<_>, _>>()?;
        out.push((name, columns));
    }
    Ok(out)
}

fn corrupt(origin: &str, err: &rusqlite::Error) -> StoreError {
    StoreError::Corrupt {
        path: origin.to_string(),
        detail: err.to_string(),
    }
}

/// The path of the state file for `store: file`, relative paths taken from the repository root.
pub fn file_path(repo: &Path, configured: &str) -> PathBuf {
    let p = Path::new(configured);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        repo.join(p)
    }
}

#[cfg(test)]
mod tests;

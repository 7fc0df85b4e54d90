//! What an eval keeps on disk, so an interrupted eval resumes where it stopped: one result file
//! per (configuration, commit), written atomically (a temporary file renamed) when the task is
//! finished, next to that task's logs; the configuration as evaluated; the last report.
//!
//! ```text
//! <eval dir>/                  --out DIR, default <git dir>/opentiger/eval
//!   runs/<key>/config.yml      the configuration as the throw-away clones get it
//!   runs/<key>/<commit>/       result.json, the ticks' logs, the hidden tests' output
//!   work/                      clones of the tasks in progress (removed as each ends)
//!   report.md report.json report.svg
//! ```
//!
//! `<key>` names what decides a task's outcome: the configuration, the hidden-test patterns,
//! the test command and the tick bound. A rerun with the same ones reuses every finished task.
//! Not for: what a result means (`eval::rules`), or how it is printed (`eval::report`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::rules::HiddenTests;

/// One task as the loop handled it, and what the hidden tests said.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TaskResult {
    pub commit: String,
    pub parent: String,
    pub title: String,
    /// Merged into the base branch of the throw-away clone.
    pub merged: bool,
    /// Not merged: the task's last state and its reason.
    pub why_not: Option<String>,
    /// The task's state when the eval stopped ticking.
    pub state: String,
    /// On the merged tree, or unmerged, on the loop's last change.
    pub hidden_tests: HiddenTests,
    /// Which tree `hidden_tests` speaks of: `merged`, `last_change` or `nothing`.
    pub tested: String,
    pub hidden_test_files: Vec<String>,
    /// The hidden tests passed on the parent already (without the change): they do not tell a
    /// right change from no change.
    pub weak_tests: bool,
    pub resolved: bool,
    pub wrong_merge: bool,
    pub refused_passing: bool,
    /// Agent runs over the task and its AutoFix and rework tasks.
    pub runs: u32,
    /// AutoFix, rework, conflict-fix and recreate tasks the loop added.
    pub reworks: u32,
    /// Reviews by the judge, and how many of them did not approve.
    pub reviews: u32,
    pub refusals: u32,
    pub tokens: i64,
    pub cost_usd: f64,
    pub seconds: f64,
    pub ticks: u32,
    /// The task's folder of logs, relative to the eval folder.
    pub logs: String,
    /// The eval stopped ticking at a bound before the loop settled.
    pub bound: Option<String>,
}

/// One configuration's part of the report.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ConfigReport {
    /// The file as given.
    pub config: String,
    /// Its short name in the report's columns.
    pub label: String,
    /// The name of its folder of results (`runs/<key>`).
    pub key: String,
    pub summary: super::rules::Summary,
    pub tasks: Vec<TaskResult>,
    /// Changes whose hidden tests fail on the change itself: left out of the figures.
    pub invalid: Vec<super::change::Skipped>,
    /// Changes not run (the budget, or an interrupt).
    pub not_run: Vec<String>,
}

/// Everything the report shows.
#[derive(Clone, Debug, serde::Serialize)]
pub struct Evaluated {
    pub configs: Vec<ConfigReport>,
    /// Changes picked but left out, and why.
    pub skipped: Vec<super::change::Skipped>,
    pub eval_dir: std::path::PathBuf,
    /// Why tasks were left unrun: the budget, an interrupt.
    pub stopped: Option<String>,
    /// The signal that interrupted the eval.
    #[serde(skip)]
    pub interrupted: Option<crate::process::interrupt::Signal>,
}

/// The eval's folder and its parts.
#[derive(Clone, Debug)]
pub struct EvalDir {
    pub root: PathBuf,
}

impl EvalDir {
    pub fn config_dir(&self, key: &str) -> PathBuf {
        self.root.join("runs").join(key)
    }

    /// The folder of one task's result and logs.
    pub fn task_dir(&self, key: &str, commit: &str) -> PathBuf {
        self.config_dir(key).join(commit)
    }

    pub fn work(&self) -> PathBuf {
        self.root.join("work")
    }

    /// The finished result of `commit` under `key`, if an earlier eval wrote one (one it cannot
    /// read is run again).
    pub fn finished(&self, key: &str, commit: &str) -> Option<TaskResult> {
        let text = std::fs::read_to_string(self.task_dir(key, commit).join("result.json")).ok()?;
        serde_json::from_str(&text).ok()
    }

    /// Writes `result` whole or not at all.
    pub fn save(&self, key: &str, result: &TaskResult) -> std::io::Result<()> {
        let dir = self.task_dir(key, &result.commit);
        std::fs::create_dir_all(&dir)?;
        let text = serde_json::to_string_pretty(result).map_err(std::io::Error::other)?;
        write_atomically(&dir.join("result.json"), text.as_bytes())
    }
}

/// Writes `path` through a temporary file in its folder, renamed over it.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
    std::io::Write::write_all(&mut tmp, bytes)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    Ok(())
}

/// A short stable name for what decides a task's outcome (see the module doc).
pub fn key(config_text: &str, tests: &[String], test_command: Option<&str>, bound: &str) -> String {
    use sha2::Digest;
    let mut hash = sha2::Sha256::new();
    for part in [
        config_text,
        &tests.join("\n"),
        test_command.unwrap_or(""),
        bound,
    ] {
        hash.update(part.as_bytes());
        hash.update([0u8]);
    }
    hash.finalize()
        .iter()
        .take(6)
        .map(|b| format!("{b:02x}"))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_is_read_back_as_it_was_saved() {
        let dir = tempfile::tempdir().unwrap();
        let eval = EvalDir {
            root: dir.path().to_path_buf(),
        };
        let result = TaskResult {
            commit: "abc".into(),
            parent: "def".into(),
            title: "Add double(x)".into(),
            merged: true,
            why_not: None,
            state: "done".into(),
            hidden_tests: HiddenTests::Pass,
            tested: "merged".into(),
            hidden_test_files: vec!["tests/test_double.py".into()],
            weak_tests: false,
            resolved: true,
            wrong_merge: false,
            refused_passing: false,
            runs: 1,
            reworks: 0,
            reviews: 1,
            refusals: 0,
            tokens: 0,
            cost_usd: 0.0,
            seconds: 1.5,
            ticks: 2,
            logs: "runs/k/abc".into(),
            bound: None,
        };
        assert_eq!(eval.finished("k", "abc"), None);
        eval.save("k", &result).unwrap();
        assert_eq!(eval.finished("k", "abc"), Some(result));
        std::fs::write(eval.task_dir("k", "abc").join("result.json"), "{").unwrap();
        assert_eq!(eval.finished("k", "abc"), None, "a torn file is run again");
    }

    #[test]
    fn the_key_changes_with_what_decides_an_outcome() {
        let base = key("mode: local-git\n", &[], None, "30");
        assert_eq!(base, key("mode: local-git\n", &[], None, "30"));
        assert_eq!(base.len(), 12);
        for other in [
            key("mode: github\n", &[], None, "30"),
            key("mode: local-git\n", &["t/**".into()], None, "30"),
            key("mode: local-git\n", &[], Some("make test"), "30"),
            key("mode: local-git\n", &[], None, "10"),
        ] {
            assert_ne!(base, other);
        }
    }
}

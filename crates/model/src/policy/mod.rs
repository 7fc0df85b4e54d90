//! The path policy: which changed files a run may touch, and how big a change may be.
//!
//! One policy, one matcher ([`Glob`]), used by the worker after the agent ran and by the judge
//! before it reviews (DESIGN §7; spec §8 item 14: the original's worker and judge disagreed, so a
//! worker committed files the judge then rejected, forever). Denied paths win over allowed paths;
//! the file and line limits are enforced here too (spec §2.3.2 notes they never were).
//!
//! Also the names a change may add (`names.rs`: no control character, none Windows or macOS
//! cannot check out) and the paths that wait for a person (`sensitive.rs`, issue 48).
//!
//! Not for: finding the changed files (git's job, in the shell), the policy defaults (they live in
//! `config::PolicyConfig::default`), or what a violation does to a task (`policy_violation`,
//! decided by the engine). Pure: no I/O.

mod content;
mod glob;
pub mod names;
pub mod sensitive;

use std::fmt;

pub use content::{
    added_lines, resolve_in_tree, resolve_link, secrets, unquote, AddedLine, ContentViolation,
    DiffWalker,
};
pub use glob::{Glob, GlobError, GlobProblem};

/// How many violations [`summary`] lists before it only counts the rest.
const SUMMARY_LINES: usize = 20;

/// The compiled policy a run's changes are checked against.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PathPolicy {
    /// A changed file must match one of these. Empty allows nothing.
    pub allowed: Vec<Glob>,
    /// A changed file matching one of these is a violation even when it is allowed.
    pub denied: Vec<Glob>,
    /// Most files one run may change; 0 means no limit.
    pub max_changed_files: u32,
    /// Most lines (added plus removed) one run may change; 0 means no limit.
    pub max_changed_lines: u32,
}

/// One changed file, as `git diff --numstat` reports it. A rename is two entries, the old path
/// and the new one, so that moving a file out of a denied path is caught too. Binary files count
/// 0 lines.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChangedFile {
    /// Repository-relative, with `/` separators.
    pub path: String,
    pub added: u32,
    pub removed: u32,
}

/// One way a change breaks the policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Violation {
    Denied {
        path: String,
        pattern: String,
    },
    OutsideAllowed {
        path: String,
    },
    TooManyFiles {
        count: u32,
        max: u32,
    },
    TooManyLines {
        count: u32,
        max: u32,
    },
    /// Issue 36: one file over `policy.max_file_bytes`.
    FileTooLarge {
        path: String,
        size: u64,
        max: u64,
    },
    /// Issue 36: the change over `policy.max_change_bytes`.
    ChangeTooLarge {
        size: u64,
        max: u64,
    },
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Violation::Denied { path, pattern } => {
                write!(f, "change to denied path: {path} (matches {pattern})")
            }
            Violation::OutsideAllowed { path } => {
                write!(f, "change outside allowed paths: {path}")
            }
            Violation::TooManyFiles { count, max } => {
                write!(f, "{count} files changed (limit {max})")
            }
            Violation::TooManyLines { count, max } => {
                write!(f, "{count} lines changed (limit {max})")
            }
            Violation::FileTooLarge { path, size, max } => write!(
                f,
                "{path} is {size} bytes, over policy.max_file_bytes = {max}"
            ),
            Violation::ChangeTooLarge { size, max } => write!(
                f,
                "the change is {size} bytes in all, over policy.max_change_bytes = {max}"
            ),
        }
    }
}

impl PathPolicy {
    /// Compiles the policy. `allowed` is the task's own `allowed_paths`, or, when the task has
    /// none, the config's `policy.allowed_paths` (the caller picks); `denied` is the config's
    /// `policy.denied_paths`. The first invalid pattern is the error.
    pub fn new(
        allowed: &[String],
        denied: &[String],
        max_files: u32,
        max_lines: u32,
    ) -> Result<PathPolicy, GlobError> {
        Ok(PathPolicy {
            allowed: compile(allowed)?,
            denied: compile(denied)?,
            max_changed_files: max_files,
            max_changed_lines: max_lines,
        })
    }

    /// Every violation of `changes`: per file in the given order (denied, else outside the allowed
    /// paths), then the file limit, then the line limit. Empty means the change is within policy.
    pub fn check(&self, changes: &[ChangedFile]) -> Vec<Violation> {
        let mut violations: Vec<Violation> = changes
            .iter()
            .filter_map(|change| self.check_path(&change.path))
            .collect();
        let files = u32::try_from(changes.len()).unwrap_or(u32::MAX);
        if exceeds(files, self.max_changed_files) {
            violations.push(Violation::TooManyFiles {
                count: files,
                max: self.max_changed_files,
            });
        }
        let lines = changes.iter().fold(0u32, |sum, change| {
            sum.saturating_add(change.added)
                .saturating_add(change.removed)
        });
        if exceeds(lines, self.max_changed_lines) {
            violations.push(Violation::TooManyLines {
                count: lines,
                max: self.max_changed_lines,
            });
        }
        violations
    }

    /// Whether `path` (repository-relative) is a path the change may touch.
    pub fn permits(&self, path: &str) -> bool {
        self.check_path(path).is_none()
    }

    /// The denied pattern `path` matches, if any. A pattern `dir/**` also denies `dir` itself
    /// (issue 36: a file or a link taking the folder's name would stand for the folder).
    pub fn denied_by(&self, path: &str) -> Option<&str> {
        self.denied
            .iter()
            .find(|glob| {
                glob.matches(path)
                    || glob
                        .as_str()
                        .strip_suffix("/**")
                        .is_some_and(|dir| Glob::new(dir).is_ok_and(|d| d.matches(path)))
            })
            .map(Glob::as_str)
    }

    /// The denied pattern whose fixed leading folders `path` is, or lies above: a link there
    /// would stand for a denied folder (`.github` for `.github/workflows/**`). Patterns that
    /// start with a wildcard fix no folder.
    pub fn shadows_denied(&self, path: &str) -> Option<&str> {
        self.denied
            .iter()
            .find(|glob| {
                let fixed: Vec<&str> = glob
                    .as_str()
                    .split('/')
                    .take_while(|c| !c.contains(['*', '?', '[', '{']))
                    .collect();
                let path: Vec<&str> = path.split('/').collect();
                !fixed.is_empty() && path.len() <= fixed.len() && fixed.starts_with(&path)
            })
            .map(Glob::as_str)
    }

    fn check_path(&self, path: &str) -> Option<Violation> {
        if let Some(pattern) = self.denied_by(path) {
            return Some(Violation::Denied {
                path: path.to_string(),
                pattern: pattern.to_string(),
            });
        }
        if self.allowed.iter().any(|glob| glob.matches(path)) {
            return None;
        }
        Some(Violation::OutsideAllowed {
            path: path.to_string(),
        })
    }
}

/// The sizes of the files a change writes (path, bytes, as the file system or git gives them
/// before anything reads the content) against `max_file` and `max_change` (0: no limit).
pub fn size_violations(files: &[(String, u64)], max_file: u64, max_change: u64) -> Vec<Violation> {
    let mut out: Vec<Violation> = files
        .iter()
        .filter(|(_, size)| max_file > 0 && *size > max_file)
        .map(|(path, size)| Violation::FileTooLarge {
            path: path.clone(),
            size: *size,
            max: max_file,
        })
        .collect();
    let total = files
        .iter()
        .fold(0u64, |sum, (_, size)| sum.saturating_add(*size));
    if max_change > 0 && total > max_change {
        out.push(Violation::ChangeTooLarge {
            size: total,
            max: max_change,
        });
    }
    out
}

/// One line per violation, for the run's error excerpt and the next attempt's prompt; after
/// twenty lines the rest are only counted. Empty for no violations.
pub fn summary(violations: &[Violation]) -> String {
    let mut lines: Vec<String> = violations
        .iter()
        .take(SUMMARY_LINES)
        .map(Violation::to_string)
        .collect();
    let rest = violations.len().saturating_sub(SUMMARY_LINES);
    if rest > 0 {
        lines.push(format!("... and {rest} more"));
    }
    lines.join("\n")
}

fn compile(patterns: &[String]) -> Result<Vec<Glob>, GlobError> {
    patterns.iter().map(|pattern| Glob::new(pattern)).collect()
}

/// A limit of 0 means no limit.
fn exceeds(count: u32, max: u32) -> bool {
    max > 0 && count > max
}

#[cfg(test)]
mod tests;

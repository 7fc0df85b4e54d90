//! The credentials this job left in the runner's repository ([`Owner::Job`]: actions/checkout's
//! token, v4's in `.git/config`, v6's in `$RUNNER_TEMP/git-credentials-<uuid>.config` and the
//! include lines naming it) are taken away before any agent or check starts, and put back when
//! the command ends: a later step of the person's workflow that pushes with them still can, and
//! the checkout's own clean-up at the end of the job finds them where it left them.
//!
//! While taken they are held in this process's memory only, which no agent can read (the runner
//! is non-dumpable, and Landlock denies ptrace across domains): no file is safe from an agent of
//! the same user where only Landlock confines it, since it confines writes, not reads. Each
//! step is held the moment it is done, and an `atexit` handler registered before the first one
//! puts everything back on every way out of the command (its end, an error, the exit codes 130
//! and 143 of an interrupt), once agents and the processes they started have ended. A command
//! killed with `SIGKILL` cannot put them back: the checkout's token is then gone for the rest
//! of the job (it ends with the job anyway), never left half-taken where an agent could read it.
//!
//! Putting back never overwrites: a file is written only where none is, a line added only where
//! it is missing, a URL restored only where it is still the one written in its place. Taking is
//! idempotent: what is taken is no longer found.
//!
//! Not for: finding credentials (`credentials`), the person's (never touched: `doctor` names
//! them).

use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, Once};

use super::credentials::{self, Finding, Owner, Places, What};
use crate::git::{Git, GitError};

/// One thing taken away, with what puts it back.
enum Held {
    /// A configuration line removed.
    Line {
        file: PathBuf,
        key: String,
        value: String,
    },
    /// A configuration value replaced by `shown` (a URL without its password).
    Replaced {
        file: PathBuf,
        key: String,
        value: String,
        shown: String,
    },
    /// A file removed.
    File {
        path: PathBuf,
        bytes: Vec<u8>,
        mode: u32,
    },
}

static HELD: Mutex<Vec<Held>> = Mutex::new(Vec::new());
static AT_EXIT: Once = Once::new();

extern "C" fn put_back_at_exit() {
    for problem in put_back() {
        eprintln!("opentiger: {problem}");
    }
}

/// Takes away the job's credentials among `found` (see the module doc). Returns what was taken,
/// one line each, no secret in it.
pub fn take(found: &[Finding], places: &Places) -> Result<Vec<String>, GitError> {
    let jobs: Vec<&Finding> = found.iter().filter(|f| f.owner == Owner::Job).collect();
    if jobs.is_empty() {
        return Ok(Vec::new());
    }
    AT_EXIT.call_once(|| {
        // SAFETY: registers a plain extern "C" function that captures nothing.
        unsafe { libc::atexit(put_back_at_exit) };
    });
    let mut held = HELD.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    let mut taken = Vec::new();
    for finding in jobs {
        let Some(key) = &finding.key else { continue };
        let value = finding.value.clone().unwrap_or_default();
        match &finding.what {
            What::File(path, _) => {
                take_file(path, &mut held)?;
                taken.push(format!("the file {}", places.shown(path)));
            }
            What::UrlPassword if credentials::url_password(&value).is_some() => {
                let range = credentials::url_password(&value).unwrap_or(0..0);
                let shown = format!("{}{}", &value[..range.start], &value[range.end..]);
                ConfigFile::new(&finding.file).replace(key, &value, &shown)?;
                held.push(Held::Replaced {
                    file: finding.file.clone(),
                    key: key.clone(),
                    value,
                    shown,
                });
                taken.push(format!(
                    "the password in {key} ({})",
                    places.shown(&finding.file)
                ));
            }
            What::Header if !finding.via.is_empty() => {
                for (file, include) in &finding.via {
                    let config = ConfigFile::new(file);
                    for line in config.naming(include, &finding.file, places)? {
                        config.unset(include, &line)?;
                        held.push(Held::Line {
                            file: file.clone(),
                            key: include.clone(),
                            value: line,
                        });
                    }
                    taken.push(format!("{include} ({})", places.shown(file)));
                }
                take_file(&finding.file, &mut held)?;
                taken.push(format!("the file {}", places.shown(&finding.file)));
            }
            _ => {
                ConfigFile::new(&finding.file).unset(key, &value)?;
                held.push(Held::Line {
                    file: finding.file.clone(),
                    key: key.clone(),
                    value,
                });
                taken.push(format!(
                    "{} ({})",
                    credentials::without_password(key),
                    places.shown(&finding.file)
                ));
            }
        }
    }
    taken.dedup();
    Ok(taken)
}

/// Reads `path` into `held`, then removes it. A file already gone is nothing to take.
fn take_file(path: &Path, held: &mut Vec<Held>) -> Result<(), GitError> {
    if held
        .iter()
        .any(|h| matches!(h, Held::File { path: p, .. } if p == path))
    {
        return Ok(());
    }
    let failed = |e: std::io::Error| {
        GitError {
        dir: path.display().to_string(),
        args: "(opentiger) taking away a credentials file".to_string(),
        code: None,
        detail: format!(
            "{e}; no agent starts while it is readable (fix: check out with `persist-credentials: false`)"
        ),
    }
    };
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_file() => meta,
        Ok(_) => return Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(failed(e)),
    };
    let bytes = std::fs::read(path).map_err(failed)?;
    held.push(Held::File {
        path: path.to_path_buf(),
        bytes,
        mode: meta.permissions().mode() & 0o7777,
    });
    std::fs::remove_file(path).map_err(failed)
}

/// Puts back everything taken, files first, then lines; returns what could not be, one line
/// each (no secret in it). What is put back is no longer held, so a second call does nothing.
pub fn put_back() -> Vec<String> {
    let Ok(mut held) = HELD.try_lock() else {
        return vec![
            "the checkout's credentials are being taken while the command ends: not put back"
                .to_string(),
        ];
    };
    let mut problems = Vec::new();
    let mut all: Vec<Held> = held.drain(..).collect();
    all.sort_by_key(|h| !matches!(h, Held::File { .. }));
    for item in all {
        if let Err(problem) = restore(&item) {
            problems.push(problem);
        }
    }
    problems
}

fn restore(item: &Held) -> Result<(), String> {
    match item {
        Held::File { path, bytes, mode } => {
            use std::io::Write;
            let written = std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(*mode)
                .open(path)
                .and_then(|mut f| f.write_all(bytes));
            match written {
                Ok(()) => Ok(()),
                // Something is there again: it is not ours to overwrite.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
                Err(e) => Err(format!(
                    "could not put back {} (taken away while agents ran): {e}",
                    path.display()
                )),
            }
        }
        Held::Line { file, key, value } => {
            let git = ConfigFile::new(file);
            if git.has(key, value) {
                return Ok(());
            }
            git.add(key, value).map_err(|e| not_put_back(key, file, &e))
        }
        Held::Replaced {
            file,
            key,
            value,
            shown,
        } => ConfigFile::new(file)
            .replace(key, shown, value)
            .map_err(|e| not_put_back(key, file, &e)),
    }
}

/// What could not be put back, naming the key (its password hidden) and the file; git's words
/// were already cleared of the value (`ConfigFile::run`).
fn not_put_back(key: &str, file: &Path, e: &GitError) -> String {
    format!(
        "could not put back {} in {}: {}",
        credentials::without_password(key),
        file.display(),
        e.detail
    )
}

/// One configuration file, edited with the runner's git run from the file's folder (a
/// `--file` needs no repository).
struct ConfigFile {
    git: Git,
    path: String,
}

impl ConfigFile {
    fn new(file: &Path) -> ConfigFile {
        ConfigFile {
            git: Git::new(file.parent().unwrap_or(Path::new("/"))),
            path: file.display().to_string(),
        }
    }

    fn args<'a>(&'a self, rest: &[&'a str]) -> Vec<&'a str> {
        let mut args = vec!["config", "--file", self.path.as_str()];
        args.extend_from_slice(rest);
        args
    }

    /// Runs `args`; a failure names the key, never a value (a value may be a token).
    fn run(&self, args: &[&str], values: &[&str]) -> Result<(), GitError> {
        self.git.run(args).map(drop).map_err(|mut e| {
            for value in values.iter().filter(|v| !v.is_empty()) {
                e.args = e.args.replace(value, "<value>");
                e.detail = e.detail.replace(value, "<value>");
            }
            e.args = credentials::without_password(&e.args);
            e
        })
    }

    /// Removes every `key` line whose value is `value`, exactly.
    fn unset(&self, key: &str, value: &str) -> Result<(), GitError> {
        let args = self.args(&["--fixed-value", "--unset-all", key, value]);
        match self.git.try_run(&args)? {
            Some(_) => Ok(()),
            // Exit 5: no such line (already taken), which is what was wanted.
            None if !self.has(key, value) => Ok(()),
            None => self.run(&args, &[value]),
        }
    }

    /// Replaces the `key` lines whose value is `from` by `to`.
    fn replace(&self, key: &str, from: &str, to: &str) -> Result<(), GitError> {
        if !self.has(key, from) {
            return Ok(());
        }
        let args = self.args(&["--fixed-value", "--replace-all", key, to, from]);
        self.run(&args, &[from, to])
    }

    fn add(&self, key: &str, value: &str) -> Result<(), GitError> {
        self.run(&self.args(&["--add", key, value]), &[value])
    }

    /// The values of the include line `key` that name `target`: one line may be written more
    /// than once, and `include.path` may name other files besides.
    fn naming(&self, key: &str, target: &Path, places: &Places) -> Result<Vec<String>, GitError> {
        let values = self
            .git
            .try_run(&self.args(&["--get-all", key]))?
            .unwrap_or_default();
        let file = PathBuf::from(&self.path);
        Ok(values
            .lines()
            .filter(|v| places.resolve(v, &file).is_some_and(|t| t == target))
            .map(str::to_string)
            .collect())
    }

    fn has(&self, key: &str, value: &str) -> bool {
        self.git
            .try_run(&self.args(&["--fixed-value", "--get-all", key, value]))
            .ok()
            .flatten()
            .is_some()
    }
}

#[cfg(test)]
#[path = "checkout_tests.rs"]
mod tests;

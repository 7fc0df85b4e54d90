//! The agent's home is its own (`sandbox.agent_home: private`).
//!
//! An agent, and the verification commands that run its code, get a `HOME` made for one run: a
//! 0700 folder inside the run's scratch folder, removed with it. With the runner's `HOME`
//! writable, an agent could leave a `git` in `~/.local/bin`, a `ProxyCommand` in
//! `~/.ssh/config` or a line in `~/.bashrc` for the runner's user to run later, outside any
//! sandbox. What a CLI needs from the runner's home (its login, its settings) is copied in
//! first (`agents.<name>.home_files`); nothing is copied back.
//!
//! Not here: whether the home is private (the configuration), what the agent may write (the
//! runner's Landlock rules, which list this folder).

use std::io;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// Makes `dir` (which must not exist) a private home and copies `files` (paths relative to
/// `from`, the runner's home; a trailing `/` for a folder) into it. A listed path that does not
/// exist is skipped; a link is copied as what it points to, only when that is a regular file
/// or a folder. Returns the paths copied.
pub fn make(dir: &Path, from: Option<&Path>, files: &[String]) -> io::Result<Vec<String>> {
    std::fs::DirBuilder::new().mode(0o700).create(dir)?;
    let mut copied = Vec::new();
    let Some(from) = from else {
        return Ok(copied);
    };
    for file in files {
        let rel = file.trim_end_matches('/');
        if rel.is_empty() || Path::new(rel).is_absolute() || rel.split('/').any(|c| c == "..") {
            continue; // refused at config load; never copy from outside the home
        }
        let source = from.join(rel);
        let target = dir.join(rel);
        let Ok(meta) = std::fs::metadata(&source) else {
            continue;
        };
        if let Some(parent) = target.parent() {
            std::fs::DirBuilder::new()
                .recursive(true)
                .mode(0o700)
                .create(parent)?;
        }
        if meta.is_dir() {
            copy_tree(&source, &target)?;
        } else if meta.is_file() {
            copy_file(&source, &target)?;
        } else {
            continue;
        }
        copied.push(file.clone());
    }
    Ok(copied)
}

fn copy_file(source: &Path, target: &Path) -> io::Result<()> {
    std::fs::copy(source, target)?;
    std::fs::set_permissions(target, std::fs::Permissions::from_mode(0o600))
}

/// Copies a folder: regular files and folders, links followed once when they are either.
fn copy_tree(source: &Path, target: &Path) -> io::Result<()> {
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(target)?;
    for entry in std::fs::read_dir(source)? {
        let entry = entry?;
        let Ok(meta) = std::fs::metadata(entry.path()) else {
            continue;
        };
        let to = target.join(entry.file_name());
        if meta.is_dir() {
            copy_tree(&entry.path(), &to)?;
        } else if meta.is_file() {
            copy_file(&entry.path(), &to)?;
        }
    }
    Ok(())
}

/// The `CARGO_HOME` and `RUSTUP_HOME` a private home needs so that the runner's Rust toolchain
/// is still found (read-only: a toolchain writes its caches under the workspace's `target/`,
/// or, for downloads, under `sandbox.writable`): the runner's own values, else the folders
/// rustup made under the runner's home.
pub fn toolchain_vars(
    runner_home: Option<&Path>,
    lookup: impl Fn(&str) -> Option<String>,
) -> Vec<(String, String)> {
    let mut vars = Vec::new();
    for (var, default) in [("CARGO_HOME", ".cargo"), ("RUSTUP_HOME", ".rustup")] {
        let value = lookup(var)
            .map(PathBuf::from)
            .or_else(|| runner_home.map(|h| h.join(default)).filter(|p| p.is_dir()));
        if let Some(value) = value {
            vars.push((var.to_string(), value.display().to_string()));
        }
    }
    vars
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_home_holds_only_the_listed_files_and_is_private() {
        let runner = tempfile::tempdir().unwrap();
        let r = runner.path();
        std::fs::create_dir_all(r.join(".codex")).unwrap();
        std::fs::write(r.join(".codex/auth.json"), "{}").unwrap();
        std::fs::write(r.join(".claude.json"), "{\"x\":1}").unwrap();
        std::fs::write(r.join(".bashrc"), "evil").unwrap();
        std::fs::create_dir_all(r.join(".local/bin")).unwrap();
        std::fs::write(r.join(".local/bin/git"), "#!/bin/sh").unwrap();
        let scratch = tempfile::tempdir().unwrap();
        let home = scratch.path().join("home");
        let files = [".claude.json", ".codex/", ".missing", "../escape"].map(String::from);
        let copied = make(&home, Some(r), &files).unwrap();
        assert_eq!(copied, [".claude.json", ".codex/"]);
        assert_eq!(
            std::fs::read_to_string(home.join(".codex/auth.json")).unwrap(),
            "{}"
        );
        assert!(home.join(".claude.json").is_file());
        assert!(!home.join(".bashrc").exists() && !home.join(".local").exists());
        let mode = std::fs::metadata(&home).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o700);
    }

    #[test]
    fn toolchain_folders_are_named_from_the_runner() {
        let runner = tempfile::tempdir().unwrap();
        std::fs::create_dir(runner.path().join(".cargo")).unwrap();
        let vars = toolchain_vars(Some(runner.path()), |k| {
            (k == "RUSTUP_HOME").then(|| "/opt/rustup".to_string())
        });
        assert_eq!(
            vars,
            [
                (
                    "CARGO_HOME".to_string(),
                    runner.path().join(".cargo").display().to_string()
                ),
                ("RUSTUP_HOME".to_string(), "/opt/rustup".to_string()),
            ]
        );
    }
}

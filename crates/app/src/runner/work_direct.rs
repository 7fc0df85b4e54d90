//! A run in direct mode (`mode: direct`): the change lands in the repository's working files,
//! uncommitted. The agent works in a workspace of its own holding the working state (read with a
//! private index); a change that passed the checks is written back file by file, only where the
//! file is still as the agent was shown it: a person's edit meanwhile is never overwritten. Part
//! of a run ([`super`]): the same agent, policy and verification as in a worktree. Not for:
//! commits, pushes and holds (`runner::work`, `runner::work_held`): nothing leaves the machine.

use std::io::Write;
use std::os::unix::ffi::OsStrExt;

use super::{
    check_change, import, noop_success, run_agent, setup, setup_text, success, WorkResult,
};
use crate::git::Git;
use crate::model::{FailureCode, RunId, Task};
use crate::runner::checks::CheckFailure;
use crate::runner::{Act, Brief};
use crate::store::RunRecord;
use crate::workspace::{Change, Start, Workspace};

/// Direct mode (see the module doc); a failed run leaves the repository's files untouched.
pub(super) fn direct(
    act: &Act<'_>,
    task: &Task,
    run_id: &RunId,
    brief: &Brief,
    record: &mut RunRecord,
) -> Result<WorkResult, CheckFailure> {
    let scratch = crate::scratch::private_dir("index").map_err(|e| setup_text(e.to_string()))?;
    let index = scratch.path().join("index");
    let repo = Git::new(act.repo);
    let git = repo.with_env("GIT_INDEX_FILE", &index.display().to_string());
    git.run(&["add", "-A"]).map_err(setup)?;
    let exclusions = act.state_exclusions();
    if !exclusions.is_empty() {
        let mut args = vec!["rm", "-r", "-q", "--cached", "--ignore-unmatch", "--"];
        args.extend(exclusions.iter().map(String::as_str));
        git.run(&args).map_err(setup)?;
    }
    let before = git.run(&["write-tree"]).map_err(setup)?;
    let head = repo
        .resolve("HEAD")
        .map_err(setup)?
        .ok_or_else(|| setup_text("direct mode needs a commit to start from".to_string()))?;
    let ws = Workspace::create(
        &repo,
        "run",
        Start {
            commit: &head,
            files: Some(&before),
            branch: None,
        },
    )
    .map_err(setup)?;
    let agent = run_agent(act, task, run_id, brief, &ws, record)?;
    let change = import(&ws, act.config)?;
    // Direct mode sends nothing out (the change lands in the person's files): the scan's
    // findings are not a hold here; links and secrets still refuse it.
    crate::runner::check_content(
        task,
        act.config,
        &repo,
        &[&before, &change.tree],
        &change.links,
        act.redactor,
        &[],
    )?;
    let (passed, summary) = check_change(act, task, &ws.path, &change.numstat, agent, record)?;
    if change.is_empty() {
        return Ok(noop_success(passed, summary, record));
    }
    write_back(&repo, &before, &change.changes)?;
    Ok(success(summary, record))
}

/// Writes the change into the repository's working files, after checking every one of them is
/// still as it was in `before` (else nothing is written and the run fails naming them).
fn write_back(repo: &Git, before: &str, changes: &[Change]) -> Result<(), CheckFailure> {
    let moved: Vec<&str> = changes
        .iter()
        .filter(|c| current_blob(repo, &c.path).ok() != Some(blob_in(repo, before, &c.path)))
        .map(|c| c.path.as_str())
        .collect();
    if !moved.is_empty() {
        return Err(CheckFailure {
            code: FailureCode::TransientOrFlakyFailure,
            message: format!(
                "not applied: {} changed in the repository while the agent worked; nothing was written (retried from the files as they are now)",
                moved.join(", ")
            ),
        });
    }
    for change in changes {
        let full = repo
            .dir()
            .join(std::ffi::OsStr::from_bytes(change.path.as_bytes()));
        let written = match &change.after {
            None => match std::fs::remove_file(&full) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e.to_string()),
                _ => Ok(()),
            },
            Some((mode, oid)) => write_blob(repo, &full, mode, oid),
        };
        written.map_err(|e| setup_text(format!("writing {}: {e}", change.path)))?;
    }
    Ok(())
}

/// The mode and blob of `path` in `tree`, `None` when it has none.
fn blob_in(repo: &Git, tree: &str, path: &str) -> Option<(String, String)> {
    let out = repo.run_bytes(&["ls-tree", "-z", tree, "--", path]).ok()?;
    let text = String::from_utf8_lossy(&out);
    let (meta, name) = text.trim_end_matches('\0').split_once('\t')?;
    let mut words = meta.split(' ');
    let mode = words.next()?.to_string();
    let _kind = words.next()?;
    let oid = words.next()?.to_string();
    (name == path).then_some((mode, oid))
}

/// The mode and blob of the repository's working file `path` now (bytes as they are), `None`
/// when there is none.
fn current_blob(repo: &Git, path: &str) -> Result<Option<(String, String)>, String> {
    let full = repo
        .dir()
        .join(std::ffi::OsStr::from_bytes(path.as_bytes()));
    let meta = match std::fs::symlink_metadata(&full) {
        Ok(meta) => meta,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e.to_string()),
    };
    let (mode, bytes) = if meta.file_type().is_symlink() {
        let target = std::fs::read_link(&full).map_err(|e| e.to_string())?;
        ("120000", target.as_os_str().as_bytes().to_vec())
    } else if meta.is_file() {
        let exec = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0;
        let mode = if exec { "100755" } else { "100644" };
        let oid = repo
            .run(&[
                "hash-object",
                "--no-filters",
                "--",
                &full.display().to_string(),
            ])
            .map_err(|e| e.to_string())?;
        return Ok(Some((mode.to_string(), oid)));
    } else {
        return Ok(None);
    };
    let oid = repo
        .run_with_input(&["hash-object", "--no-filters", "--stdin"], &bytes)
        .map_err(|e| e.to_string())?;
    Ok(Some((mode.to_string(), oid)))
}

/// Writes blob `oid` at `full` with git `mode` (a new file renamed over the old one).
fn write_blob(repo: &Git, full: &std::path::Path, mode: &str, oid: &str) -> Result<(), String> {
    if let Some(parent) = full.parent() {
        std::fs::create_dir_all(parent).map_err(|e| e.to_string())?;
    }
    let bytes = repo
        .run_bytes(&["cat-file", "blob", oid])
        .map_err(|e| e.to_string())?;
    match std::fs::symlink_metadata(full) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(full).map_err(|e| e.to_string())?,
        Ok(_) => std::fs::remove_file(full).map_err(|e| e.to_string())?,
        Err(_) => {}
    }
    if mode == "120000" {
        return std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&bytes), full)
            .map_err(|e| e.to_string());
    }
    use std::os::unix::fs::OpenOptionsExt;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(if mode == "100755" { 0o755 } else { 0o644 })
        .open(full)
        .map_err(|e| e.to_string())?;
    file.write_all(&bytes).map_err(|e| e.to_string())
}

//! A run in direct mode (`mode: direct`): the agent edits the repository in place, and a change
//! that fails the checks is rolled back. Part of a run ([`super`]): the same agent, policy and
//! verification as in a worktree.

use super::{check_change, noop_success, run_agent, setup, setup_text, success, WorkResult};
use crate::git::{Git, NumstatEntry};
use crate::model::{RunId, Task};
use crate::runner::checks::{self, CheckFailure};
use crate::runner::{Act, Brief};
use crate::store::RunRecord;

/// Direct mode: the agent edits the repository in place. The change is measured against a
/// snapshot tree taken before (a private index, so the user's index is untouched); a change that
/// fails the checks is rolled back (spec weak spot §8.20: failed edits are not left behind).
pub(super) fn direct(
    act: &Act<'_>,
    task: &Task,
    run_id: &RunId,
    brief: &Brief,
    record: &mut RunRecord,
) -> Result<WorkResult, CheckFailure> {
    let scratch = crate::scratch::private_dir("index").map_err(|e| setup_text(e.to_string()))?;
    let index = scratch.path().join("index");
    let git = Git::new(act.repo).with_env("GIT_INDEX_FILE", &index.display().to_string());
    let exclusions = act.state_exclusions();
    let snapshot = |g: &Git| -> Result<String, CheckFailure> {
        g.run(&["add", "-A"]).map_err(setup)?;
        if !exclusions.is_empty() {
            let mut args = vec!["rm", "-r", "-q", "--cached", "--ignore-unmatch", "--"];
            args.extend(exclusions.iter().map(String::as_str));
            g.run(&args).map_err(setup)?;
        }
        g.run(&["write-tree"]).map_err(setup)
    };
    let before = snapshot(&git)?;
    let agent = run_agent(act, task, run_id, brief, act.repo, record);
    let after = snapshot(&git)?;
    let diff = git
        .run(&[
            "diff-tree",
            "-r",
            "--numstat",
            "-z",
            "--no-renames",
            &before,
            &after,
        ])
        .map_err(setup)?;
    let changes = crate::git::parse_numstat_z(&diff);
    let checked = agent
        .and_then(|agent| {
            checks::check_content(
                task,
                act.config,
                &git,
                &[&before, &after],
                &changes,
                act.redactor,
            )
            .map(|()| agent)
        })
        .and_then(|agent| check_change(act, task, act.repo, &changes, agent, record));
    match checked {
        Ok((passed, summary)) if changes.is_empty() => Ok(noop_success(passed, summary, record)),
        Ok((_, summary)) => Ok(success(summary, record)),
        Err(failure) => {
            rollback(&git, &before, &changes);
            Err(failure)
        }
    }
}

/// Puts the files a failed direct run changed back as they were.
fn rollback(git: &Git, before: &str, changes: &[NumstatEntry]) {
    let _ = git.run(&["read-tree", before]);
    for change in changes {
        let existed = git
            .try_run(&["cat-file", "-e", &format!("{before}:{}", change.path)])
            .ok()
            .flatten()
            .is_some();
        if existed {
            let _ = git.run(&["checkout-index", "-f", "--", &change.path]);
        } else {
            let _ = std::fs::remove_file(git.dir().join(&change.path));
        }
    }
}

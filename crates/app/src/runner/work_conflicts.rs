//! A conflict fix (`autofix_conflict`, spec §2.3): the base merged into the change's branch by
//! the runner (`workspace::merge_with`, no work tree), the agent resolving what conflicts in a
//! workspace holding the marked files, the runner checking no marker is left and committing
//! the merge. Part of a run ([`super`]): the same agent, policy and verification. Not for: when a
//! conflict fix is made and how many (`engine::verdict::conflict`).

use std::io::BufRead;
use std::path::Path;

use super::{import, run_agent, setup, setup_text, success, WorkResult};
use crate::model::{FailureCode, RunId, Task};
use crate::runner::checks::{self, CheckFailure};
use crate::runner::{Act, Brief};
use crate::store::RunRecord;
use crate::workspace::{Merge, Start, Workspace};

/// Why a conflict fix did not deliver: its resolution was held by the threat scan (the commit
/// and the findings), or it failed.
pub(super) enum Held {
    Findings(String, Vec<crate::scan::Finding>),
    Failed(CheckFailure),
}

impl From<CheckFailure> for Held {
    fn from(failure: CheckFailure) -> Held {
        Held::Failed(failure)
    }
}

/// A conflict fix: the base is merged into the task branch (which starts at `start`); a base
/// that merges cleanly needs no agent; conflicts are written marked into a workspace for the
/// agent to resolve, and the runner checks that no marker is left before it commits the merge.
/// Policy and verification then judge the branch as its PR shows it: against the base. The
/// commit is the task branch's new head (moved from `start` only).
pub(super) fn fix_conflicts(
    act: &Act<'_>,
    task: &Task,
    (run_id, brief): (&RunId, &Brief),
    (branch, start): (&str, &str),
    base_ref: &str,
    record: &mut RunRecord,
) -> Result<WorkResult, Held> {
    let repo = crate::git::Git::new(act.repo);
    let base = &act.config.base_branch;
    let message = format!(
        "Merge {base} into {branch}\n\nTask: {}\nRun: {run_id}",
        task.id
    );
    let base_commit = repo
        .resolve(base_ref)
        .map_err(setup)?
        .ok_or_else(|| setup_text(format!("{base_ref} does not exist")))?;
    let merge =
        crate::workspace::merge_with(&repo, start, &base_commit, &message).map_err(setup)?;
    let (ws, head, summary) = match merge {
        Merge::Clean { commit } => {
            let summary = if commit == start {
                format!("{base} was already merged into the branch: nothing to resolve")
            } else {
                repo.run(&[
                    "update-ref",
                    &format!("refs/heads/{branch}"),
                    &commit,
                    start,
                ])
                .map_err(setup)?;
                format!("{base} merged into the branch without conflicts")
            };
            let ws = Workspace::open_detached(&repo, "run", &commit).map_err(setup)?;
            (ws, commit, Some(summary))
        }
        Merge::Conflict { tree, files } => {
            let ws = Workspace::create(
                &repo,
                "run",
                Start {
                    commit: start,
                    files: Some(&tree),
                    branch: Some(branch),
                },
            )
            .map_err(setup)?;
            let agent = run_agent(act, task, run_id, brief, &ws, record)?;
            let change = import(&ws, act.config)?;
            let left: Vec<&String> = files
                .iter()
                .filter(|f| has_conflict_markers(&ws.path.join(f)))
                .collect();
            if !left.is_empty() {
                return Err(Held::Failed(CheckFailure {
                    code: FailureCode::ModelOrUnknownFailure,
                    message: format!(
                        "conflict markers are still in {} after the agent finished",
                        left.iter()
                            .map(|f| f.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                }));
            }
            let texts = [("the PR body", agent.as_deref().unwrap_or(""))];
            let mut findings = crate::runner::check_content(
                task,
                act.config,
                &repo,
                &[&ws.base_tree, &change.tree],
                &change.links,
                act.redactor,
                &texts,
            )?;
            // Issue 36: the resolution is the agent's change like any other.
            if act.config.scan.agent {
                let range = (ws.base_tree.as_str(), change.tree.as_str());
                findings.extend(crate::runner::detect::detect(
                    act, task, run_id, range, &texts, record,
                )?);
            }
            let (subject, body) = message.split_once("\n\n").unwrap_or((&message, ""));
            let head = ws
                .commit(&change.tree, Some(&base_commit), subject, body)
                .map_err(setup)?;
            match crate::engine::scan::approval_for(&brief.approved, start, &change.tree) {
                _ if findings.is_empty() => {}
                // Exactly the resolution a person approved after it was held: it goes out, once.
                Some(approved) => record.used_approval = Some(approved.head.clone()),
                None => return Err(Held::Findings(head, findings)),
            }
            (ws, head, agent)
        }
    };
    let changes = crate::workspace::changed_files(&repo, base_ref, &head).map_err(setup)?;
    checks::check_policy(task, act.config, &changes)?;
    let verified = checks::run_verification(act, task, &ws.path, &changes);
    record.verification = verified.commands.clone();
    crate::model::network::merge_refusals(&mut record.refused, &verified.refused);
    verified.passed()?;
    record.head_sha = Some(head);
    record.summary = summary.clone().map(|s| act.redactor.excerpt(&s, 500));
    Ok(success(summary, record))
}

/// A file still holding a conflict marker line (`<<<<<<< `, `=======`, `>>>>>>> `), read line
/// by line (a regular file only, never through a link).
fn has_conflict_markers(path: &Path) -> bool {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return false; // deleted as the resolution
    };
    if !meta.is_file() {
        return false;
    }
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    std::io::BufReader::new(file).split(b'\n').any(|line| {
        line.is_ok_and(|l| {
            l.starts_with(b"<<<<<<< ") || l.starts_with(b">>>>>>> ") || l == b"======="
        })
    })
}

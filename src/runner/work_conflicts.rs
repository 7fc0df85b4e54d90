//! A conflict fix (`autofix_conflict`, spec §2.3): the base merged into the change's branch,
//! the agent resolving what conflicts, the runner checking no marker is left. Part of a run
//! ([`super`]): the same agent, policy and verification.

use std::path::Path;

use super::{run_agent, setup, setup_text, success, WorkResult};
use crate::model::{FailureCode, RunId, Task};
use crate::runner::checks::{self, CheckFailure};
use crate::runner::{Act, Brief};
use crate::store::RunRecord;
use crate::workspace::Workspace;

/// A conflict fix (`autofix_conflict`): the base is merged into the change's branch; conflicts
/// are left marked for the agent to resolve, and the runner checks that no marker is left before
/// it concludes the merge. A base that merges cleanly needs no agent. Policy and verification
/// then judge the branch as its PR shows it: against the base.
pub(super) fn fix_conflicts(
    act: &Act<'_>,
    task: &Task,
    (run_id, brief): (&RunId, &Brief),
    ws: &Workspace,
    base_ref: &str,
    record: &mut RunRecord,
) -> Result<WorkResult, CheckFailure> {
    let git = ws.git();
    let base = &act.config.base_branch;
    let message = format!(
        "Merge {base} into {}\n\nTask: {}\nRun: {run_id}",
        ws.branch, task.id
    );
    let clean = git
        .try_run(&[
            "merge",
            "--no-edit",
            "--no-ff",
            "-q",
            "-m",
            &message,
            base_ref,
        ])
        .map_err(setup)?
        .is_some();
    let summary = if clean {
        Some(if ws.head().map_err(setup)? == ws.start {
            format!("{base} was already merged into the branch: nothing to resolve")
        } else {
            format!("{base} merged into the branch without conflicts")
        })
    } else {
        let conflicted: Vec<String> = git
            .run(&["diff", "--name-only", "--diff-filter=U"])
            .map_err(setup)?
            .lines()
            .map(String::from)
            .collect();
        if conflicted.is_empty() {
            return Err(setup_text(format!(
                "merging {base} into {} failed without conflicts",
                ws.branch
            )));
        }
        let agent = run_agent(act, task, run_id, brief, &ws.path, record)?;
        let left: Vec<&String> = conflicted
            .iter()
            .filter(|f| has_conflict_markers(&ws.path.join(f)))
            .collect();
        if !left.is_empty() {
            let _ = git.run(&["merge", "--abort"]);
            return Err(CheckFailure {
                code: FailureCode::ModelOrUnknownFailure,
                message: format!(
                    "conflict markers are still in {} after the agent finished",
                    left.iter()
                        .map(|f| f.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        git.run(&["add", "-A"]).map_err(setup)?;
        git.run(&["commit", "--no-verify", "-q", "--no-edit"])
            .map_err(setup)?;
        agent
    };
    let head = ws.head().map_err(setup)?;
    let changes = crate::workspace::changed_files(git, base_ref, &head).map_err(setup)?;
    checks::check_policy(task, act.config, &changes)?;
    let verified = checks::run_verification(task, act.config, &ws.path, &changes, act.redactor);
    record.verification = verified.commands.clone();
    crate::model::network::merge_refusals(&mut record.refused, &verified.refused);
    verified.passed()?;
    record.head_sha = Some(head);
    record.summary = summary.clone().map(|s| act.redactor.excerpt(&s, 500));
    Ok(success(summary, record))
}

/// A file still holding a conflict marker line (`<<<<<<< `, `=======`, `>>>>>>> `).
fn has_conflict_markers(path: &Path) -> bool {
    let Ok(text) = std::fs::read(path) else {
        return false; // deleted as the resolution
    };
    String::from_utf8_lossy(&text)
        .lines()
        .any(|l| l.starts_with("<<<<<<< ") || l.starts_with(">>>>>>> ") || l == "=======")
}

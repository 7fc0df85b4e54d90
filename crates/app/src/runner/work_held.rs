//! A change the threat scan holds (issue 36): it never leaves the job — not pushed, not even to
//! a ref of its own (in a public repository anyone may fetch any ref). The commit is kept on
//! this machine only, at `refs/opentiger/held/<task>`, and the task branch goes back to where
//! the run started, so no later run builds on it or adopts it. The run's record names the
//! change by commit, tree and start: what a person's approval names.
//!
//! After an approval, the next run lets out exactly that change: the held commit as it is when
//! this machine still has it; elsewhere (a fresh CI checkout) the agent runs again and its
//! change goes out, unheld, only if it is the approved one — the same start, the same tree
//! (`engine::scan::approval_for`); anything else is scanned as ever. Part of a run
//! ([`super`]).
//!
//! Not for: finding what to hold (`runner::content`, `runner::detect`), or what a hold and an
//! approval do to the task (`engine::scan`, `engine::outcome`, `engine::commands::approve`).

use super::{deliver, success, WorkResult};
use crate::engine::scan::{short, HeldChange};
use crate::git::Git;
use crate::model::{FailureCode, Task};
use crate::runner::checks::CheckFailure;
use crate::runner::{Act, Brief};
use crate::scan::Finding;
use crate::store::RunRecord;
use crate::workspace::Branches;

/// Where a held change is kept on this machine (never pushed).
pub(super) fn held_ref(task: &Task) -> String {
    format!("refs/opentiger/held/{}", task.id)
}

/// The run's failure for a held change: the change recorded (commit `head`, made on `start`),
/// the findings and how to decide. The task branch goes back to `start` where it had moved to
/// `head`.
pub fn hold(
    git: &Git,
    task: &Task,
    (start, head): (&str, &str),
    findings: &[Finding],
    record: &mut RunRecord,
) -> CheckFailure {
    let branch = format!("refs/heads/{}", crate::model::task_branch(task));
    let _ = git.try_run(&["update-ref", &branch, start, head]);
    let kept = match git.try_run(&["update-ref", &held_ref(task), head]) {
        Ok(Some(_)) => format!(
            "kept on the machine that ran it: `git show {}`",
            held_ref(task)
        ),
        _ => "kept nowhere else".to_string(),
    };
    let tree = git
        .run(&["rev-parse", &format!("{head}^{{tree}}")])
        .unwrap_or_default();
    record.head_sha = Some(head.to_string());
    record.held = Some(HeldChange {
        head: head.to_string(),
        tree,
        start: start.to_string(),
    });
    // Issue 48: a short first line (what `status` and the task's reason show), then every
    // finding whole on a line of its own.
    let listed: Vec<String> = findings
        .iter()
        .map(|f| format!("- {f} [{}]", f.rule.word()))
        .collect();
    CheckFailure {
        code: FailureCode::ThreatFlagged,
        message: format!(
            "held for a person before anything left the job: commit {}, pushed nowhere ({} finding{})\n{}\n{}\n{kept}",
            short(head),
            findings.len(),
            if findings.len() == 1 { "" } else { "s" },
            crate::model::excerpt::FINDINGS,
            listed.join("\n"),
        ),
    }
}

/// Issue 48: what the threat scan found in a change a person approved, as the PR body names
/// it (empty when nothing is listed).
pub(super) fn approved_findings(listed: &[String]) -> String {
    if listed.is_empty() {
        return String::new();
    }
    let lines: Vec<String> = listed.iter().map(|f| format!("- {f}")).collect();
    format!(
        "\n\n**Held for a person, then approved by one.** What the threat scan found:\n\n{}",
        lines.join("\n")
    )
}

/// The approved commit the next run delivers as it is: one this machine still has, continuing
/// the branch as published (`tip`). `None`: none here (the agent runs, and its change goes out
/// unheld only if it is exactly an approved one: [`approved_rebuilt`]).
pub(super) fn approved_start(act: &Act<'_>, tip: Option<&str>, brief: &Brief) -> Option<String> {
    let git = Git::new(act.repo);
    let known = |sha: &str| {
        git.try_run(&["cat-file", "-e", &format!("{sha}^{{commit}}")])
            .ok()
            .flatten()
            .is_some()
    };
    brief
        .approved
        .iter()
        .find(|a| {
            known(&a.head)
                && tip.is_none_or(|tip| {
                    git.try_run(&["merge-base", "--is-ancestor", tip, &a.head])
                        .ok()
                        .flatten()
                        .is_some()
                })
        })
        .map(|a| a.head.clone())
}

/// The approval that lets a held-again change out: exactly the approved change, made anew.
pub(super) fn approved_rebuilt<'a>(
    brief: &'a Brief,
    start: &str,
    tree: &str,
) -> Option<&'a HeldChange> {
    crate::engine::scan::approval_for(&brief.approved, start, tree)
}

/// Delivers the approved commit `start` as it was held: no agent, no new change; the approval
/// is used up.
pub(super) fn deliver_approved(
    act: &Act<'_>,
    branches: &Branches,
    (task, brief): (&Task, &Brief),
    branch: &str,
    start: &str,
    record: &mut RunRecord,
) -> Result<WorkResult, CheckFailure> {
    deliver(act, branches, branch)?;
    let _ = Git::new(act.repo).try_run(&["update-ref", "-d", &held_ref(task)]);
    record.head_sha = Some(start.to_string());
    record.used_approval = Some(start.to_string());
    let listed: Vec<String> = brief
        .runs
        .iter()
        .filter(|r| r.head_sha.as_deref() == Some(start))
        .find_map(|r| r.error.as_deref())
        .map(|e| {
            crate::model::excerpt::findings(e)
                .into_iter()
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let summary = format!(
        "delivered the change a person approved after the threat scan held it ({}){}",
        short(start),
        approved_findings(&listed)
    );
    record.summary = Some(summary.clone());
    Ok(success(Some(summary), record))
}

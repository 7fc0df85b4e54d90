//! A change the threat scan holds (issue 36): it is committed on the local task branch but not
//! delivered — with a remote, it is kept on a ref no workflow and no pull request sees
//! (`refs/opentiger/held/<task>`), so a person can look at it and a later job can still deliver
//! it. A person's approval names exactly that commit; the next run delivers it as it was held,
//! without an agent. Part of a run ([`super`]).

use super::{deliver, success, WorkResult};
use crate::model::{FailureCode, Task};
use crate::runner::checks::CheckFailure;
use crate::runner::{Act, Brief, Delivery};
use crate::scan::Finding;
use crate::store::RunRecord;
use crate::workspace::Branches;

/// Where a held change is kept on the remote.
pub(super) fn held_ref(task: &Task) -> String {
    format!("refs/opentiger/held/{}", task.id)
}

/// The run's failure for a held change: the findings and how to decide. The commit is kept
/// where a person (and a later job) can find it.
pub fn hold(
    delivery: Delivery,
    branches: &Branches,
    task: &Task,
    head: &str,
    findings: &[Finding],
) -> CheckFailure {
    let kept = match (delivery, &branches.remote) {
        (Delivery::Push, Some(remote)) => match branches.keep_at(head, &held_ref(task)) {
            Ok(()) => format!(
                "; to look at it: `git fetch {remote} {r}` then `git show FETCH_HEAD`",
                r = held_ref(task)
            ),
            Err(e) => format!("; it could not be kept on the remote ({e})"),
        },
        _ => format!(
            "; it is on the local branch {}",
            crate::model::task_branch(task)
        ),
    };
    CheckFailure {
        code: FailureCode::ThreatFlagged,
        message: format!(
            "held by the threat scan before anything left the job: commit {}{kept}; findings: {}",
            crate::engine::verdict::short_sha(head),
            crate::scan::summary(findings)
        ),
    }
}

/// The commit the next run starts from when a person approved a held change: the approved
/// commit (fetched from its ref when this clone lacks it), if it continues the branch as
/// published (`tip`). `None`: nothing approved applies.
pub(super) fn approved_start(
    act: &Act<'_>,
    branches: &Branches,
    task: &Task,
    tip: Option<&str>,
    brief: &Brief,
) -> Option<String> {
    let git = crate::git::Git::new(act.repo);
    let known = |sha: &str| git.resolve(sha).ok().flatten().is_some();
    if brief.approved.iter().any(|h| !known(h)) && act.delivery == Delivery::Push {
        let _ = branches.fetch_to(&held_ref(task), &held_ref(task));
    }
    brief
        .approved
        .iter()
        .find(|head| {
            known(head)
                && tip.is_none_or(|tip| {
                    git.try_run(&["merge-base", "--is-ancestor", tip, head])
                        .ok()
                        .flatten()
                        .is_some()
                })
        })
        .cloned()
}

/// Delivers the approved commit `start` as it was held: no agent, no new change.
pub(super) fn deliver_approved(
    act: &Act<'_>,
    branches: &Branches,
    task: &Task,
    branch: &str,
    start: &str,
    record: &mut RunRecord,
) -> Result<WorkResult, CheckFailure> {
    deliver(act, branches, branch)?;
    if act.delivery == Delivery::Push {
        branches.forget(&held_ref(task));
    }
    record.head_sha = Some(start.to_string());
    let summary = format!(
        "delivered the change a person approved after the threat scan held it ({})",
        crate::engine::verdict::short_sha(start)
    );
    record.summary = Some(summary.clone());
    Ok(success(Some(summary), record))
}

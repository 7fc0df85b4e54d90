//! When CI may run an agent's head (issue 36, `scan.ci`): with `after-scan` or `after-review`,
//! opentiger pushes heads with the workflow's own `GITHUB_TOKEN`, which starts no workflow, and
//! starts CI itself (`workflow_dispatch`, every CI workflow that runs on its heads) once the
//! head passed the threat scan — every head it pushes did, a held one is never pushed — and,
//! under `after-review`, once the judge or a person approved that exact head. The start is
//! recorded before it is sent (a [`CiHeal`] with `after_scan`), so it happens at most once per
//! head, and the CI gate's grace period and timeout count from it.
//!
//! Under `after-review` the judge reviews before CI ran: its approval is recorded
//! ([`crate::engine::verdict::JudgeConclusion::ApprovedBeforeCi`]) and the run is claimable
//! again, CI starts, and once its checks pass the judge merges the head it approved, without a
//! second review.
//!
//! Not for: reading workflows or tokens (the shell fills [`CiSetup`]), sending the dispatch
//! (`tick::ci_gate`), or what CI's checks mean (`engine::gate`, `engine::stall`).

use super::stall::{quoted, CiHeal, CiSetup};
use crate::config::CiStart;
use crate::time::Timestamp;

/// The facts about one PR head of opentiger's.
#[derive(Clone, Copy, Debug)]
pub struct Head<'a> {
    /// The head the task's latest successful run pushed (it passed the scan).
    pub pushed: &'a str,
    /// The PR's head as last read; `None` before it was read.
    pub observed: Option<&'a str>,
    /// The judge or a trusted person approved exactly `pushed`.
    pub approved: bool,
}

/// What a PR head of opentiger's needs before its CI gate.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CiStartStep {
    /// The CI gate as ever; `since`: CI was started on this head then, and its grace period
    /// and timeout count from there (not from the push).
    Gate { since: Option<Timestamp> },
    /// `after-review`: the judge reviews the head before any CI runs on it.
    ReviewFirst,
    /// Start these workflows on the head's branch (recorded before it is sent).
    Start { workflows: Vec<String> },
    /// CI runs on opentiger's heads, but nothing may start it: a person decides.
    CannotStart { reason: String },
}

/// The step for `head` of a task whose heads opentiger pushes (never a person's PR: their
/// pushes start their CI).
pub fn ci_start_step(
    mode: CiStart,
    head: Head<'_>,
    heal: Option<&CiHeal>,
    setup: &CiSetup,
) -> CiStartStep {
    match mode {
        CiStart::OnPush => return CiStartStep::Gate { since: None },
        CiStart::AfterScan | CiStart::AfterReview if setup.head_workflows.is_empty() => {
            // No CI runs on these heads: nothing to hold back or to start.
            return CiStartStep::Gate { since: None };
        }
        CiStart::AfterScan | CiStart::AfterReview => {}
    }
    // A head not read yet, or moved since the push: the gate says so (and waits).
    if head.observed != Some(head.pushed) {
        return CiStartStep::Gate { since: None };
    }
    if let Some(heal) = heal.filter(|h| h.head_sha == head.pushed) {
        // Started for this head already (or diagnosed): the gate and the stall rules go on.
        return CiStartStep::Gate {
            since: heal.after_scan.then_some(heal.at),
        };
    }
    if mode == CiStart::AfterReview && !head.approved {
        return CiStartStep::ReviewFirst;
    }
    let workflows = setup.dispatchable();
    if workflows.is_empty() {
        let why = if setup.may_dispatch {
            format!(
                "{} run on opentiger's heads but accept no `workflow_dispatch`",
                quoted(&setup.lacks_dispatch)
            )
        } else {
            "the ticking workflow does not grant `actions: write`, so opentiger may not dispatch CI"
                .to_string()
        };
        return CiStartStep::CannotStart {
            reason: format!(
                "CI cannot be started on this head once it passed the scan (scan.ci): {why}. Decide: add `workflow_dispatch:` to those workflows and `actions: write` to the ticking workflow's permissions, then `opentiger task retry`; or set `scan.ci: on-push`"
            ),
        };
    }
    CiStartStep::Start { workflows }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::stall::Dispatch;
    use crate::engine::testkit::at;

    /// CI on opentiger's heads: some accepting `workflow_dispatch`, some not; `may`: the
    /// ticking workflow grants `actions: write`.
    fn setup(dispatchable: &[&str], undispatchable: &[&str], may: bool) -> CiSetup {
        let names = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        CiSetup {
            workflow_token: true,
            push_workflows: names(dispatchable),
            head_workflows: names(dispatchable)
                .into_iter()
                .chain(names(undispatchable))
                .collect(),
            lacks_dispatch: names(undispatchable),
            may_dispatch: may,
        }
    }

    fn heal(head: &str, after_scan: bool) -> CiHeal {
        CiHeal {
            head_sha: head.into(),
            at: at(3),
            dispatch: Dispatch::Sent {
                workflows: vec!["ci.yml".into()],
            },
            after_scan,
        }
    }

    fn kind(step: &CiStartStep) -> String {
        match step {
            CiStartStep::Gate { since: None } => "gate".into(),
            CiStartStep::Gate { since: Some(t) } => format!("gate since {t}"),
            CiStartStep::ReviewFirst => "review first".into(),
            CiStartStep::Start { workflows } => format!("start {}", workflows.join(",")),
            CiStartStep::CannotStart { .. } => "cannot start".into(),
        }
    }

    #[test]
    fn when_ci_starts_on_a_head() {
        use CiStart::{AfterReview, AfterScan, OnPush};
        let both = setup(&["ci.yml", "lint.yml"], &[], true);
        let none = CiSetup::default();
        let head = |observed: Option<&'static str>, approved| Head {
            pushed: "aaa",
            observed,
            approved,
        };
        let h = head(Some("aaa"), false);
        let ok = head(Some("aaa"), true);
        let since = format!("gate since {}", at(3));
        type Row<'a> = (&'a str, CiStart, Head<'a>, Option<CiHeal>, CiSetup, String);
        #[rustfmt::skip]
        let cases: Vec<Row> = vec![
            ("on-push: as ever",                OnPush,      h,   None, both.clone(), "gate".into()),
            ("no CI on our heads",              AfterScan,   h,   None, none.clone(), "gate".into()),
            ("head not read yet",               AfterScan,   head(None, false), None, both.clone(), "gate".into()),
            ("head moved since the push",       AfterScan,   head(Some("bbb"), true), None, both.clone(), "gate".into()),
            ("passed the scan: start every CI", AfterScan,   h,   None, both.clone(), "start ci.yml,lint.yml".into()),
            ("started already",                 AfterScan,   h,   Some(heal("aaa", true)), both.clone(), since.clone()),
            ("started for an older head",       AfterScan,   h,   Some(heal("old", true)), both.clone(), "start ci.yml,lint.yml".into()),
            ("a stall's heal of this head",     AfterScan,   h,   Some(heal("aaa", false)), both.clone(), "gate".into()),
            ("after-review, not approved",      AfterReview, h,   None, both.clone(), "review first".into()),
            ("after-review, approved",          AfterReview, ok,  None, both.clone(), "start ci.yml,lint.yml".into()),
            ("after-review, started",           AfterReview, ok,  Some(heal("aaa", true)), both.clone(), since.clone()),
            ("no workflow_dispatch",            AfterScan,   h,   None, setup(&[], &["ci.yml"], true), "cannot start".into()),
            ("no actions: write",               AfterScan,   h,   None, setup(&["ci.yml"], &[], false), "cannot start".into()),
            ("some dispatchable",               AfterScan,   h,   None, setup(&["ci.yml"], &["deploy.yml"], true), "start ci.yml".into()),
        ];
        for (name, mode, head, heal, setup, want) in cases {
            let got = ci_start_step(mode, head, heal.as_ref(), &setup);
            assert_eq!(kind(&got), want, "{name}: {got:?}");
        }
    }

    #[test]
    fn what_cannot_start_says() {
        let head = Head {
            pushed: "aaa",
            observed: Some("aaa"),
            approved: false,
        };
        let reason = |setup: &CiSetup| match ci_start_step(CiStart::AfterScan, head, None, setup) {
            CiStartStep::CannotStart { reason } => reason,
            other => panic!("{other:?}"),
        };
        let lacking = reason(&setup(&[], &["ci.yml"], true));
        assert!(lacking.contains("`ci.yml`"), "{lacking}");
        assert!(lacking.contains("workflow_dispatch"), "{lacking}");
        let no_rights = reason(&setup(&["ci.yml"], &[], false));
        assert!(no_rights.contains("actions: write"), "{no_rights}");
        assert!(no_rights.contains("scan.ci: on-push"), "{no_rights}");
    }
}

#[cfg(test)]
#[path = "ci_start_tests.rs"]
mod plan_tests;

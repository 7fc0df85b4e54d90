//! What to do about a pull request whose expected CI checks never appeared on the head the run
//! pushed (issue 19): never merge it, say why once, heal it once when the token may, and
//! otherwise ask a person once.
//!
//! The usual cause is GitHub's `GITHUB_TOKEN` trap: PRs opened and branches pushed with a
//! workflow's own token start no workflow, so CI triggered by `pull_request`/`push` stays
//! silent. `workflow_dispatch` is the exception GitHub makes, so when a CI workflow accepts it
//! and the token may dispatch (`actions: write`), opentiger starts it for the head itself.
//!
//! - first time for this head → [`StallStep::Diagnose`]: one comment on the PR (the trap and its
//!   fix, or plainly "CI did not start"), a dispatch when possible (recorded before it is sent,
//!   so it happens at most once per head), and when no dispatch is possible the escalation too;
//! - dispatched for this head → wait `merge.checks_grace_minutes` more for the checks;
//! - still missing after that, or the dispatch failed → [`StallStep::Escalate`] to a person.
//!
//! Not for: reading workflows or tokens (the shell fills [`CiSetup`]), sending anything.

use serde::{Deserialize, Serialize};

use super::verdict::short_sha;
use crate::config::MergeConfig;
use crate::time::{Timestamp, MINUTE};

/// Where the README explains the fix.
pub const APP_TOKEN_FIX: &str =
    "use a GitHub App token for opentiger (docs/github.md: \"CI on opentiger's PRs needs an App token\")";

/// How CI gets started in this repository, as the shell read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CiSetup {
    /// The token is a workflow's own `GITHUB_TOKEN` (in Actions, with no App token or PAT set).
    pub workflow_token: bool,
    /// Workflow files started by `pull_request` or `push`: the CI the trap keeps silent.
    pub push_workflows: Vec<String>,
    /// Every CI workflow (not the ticking one) that runs on opentiger's heads: on `push` to
    /// its branches, `pull_request`, `pull_request_target` or `workflow_run` (issue 36).
    pub head_workflows: Vec<String>,
    /// Those of `head_workflows` that accept no `workflow_dispatch`.
    pub lacks_dispatch: Vec<String>,
    /// The ticking workflow grants `actions: write`: opentiger may dispatch workflows.
    pub may_dispatch: bool,
}

impl CiSetup {
    /// What opentiger can start itself: every CI workflow on its heads that accepts
    /// `workflow_dispatch`, when it may dispatch.
    pub fn dispatchable(&self) -> Vec<String> {
        if !self.may_dispatch {
            return Vec::new();
        }
        self.head_workflows
            .iter()
            .filter(|w| !self.lacks_dispatch.contains(w))
            .cloned()
            .collect()
    }

    /// The known trap: a workflow token, and CI that only the trap's events would start.
    pub fn is_trap(&self) -> bool {
        self.workflow_token && !self.push_workflows.is_empty()
    }
}

/// What opentiger did about a PR head's CI: a head whose checks never appeared, or (issue 36,
/// `scan.ci`) CI started on a head once it passed the scan. One per PR, stored; a new head
/// replaces it, so a dispatch happens at most once per head.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CiHeal {
    pub head_sha: String,
    /// When the diagnosis (or the start) was decided: a started CI's grace counts from here.
    pub at: Timestamp,
    pub dispatch: Dispatch,
    /// `scan.ci`: CI was started on purpose once the head passed the scan (and the review, under
    /// `after-review`), not to heal a stall; its wait is not the `GITHUB_TOKEN` trap.
    #[serde(default)]
    pub after_scan: bool,
}

/// The `workflow_dispatch` of a head (every CI workflow concerned).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum Dispatch {
    /// None possible: the diagnosis escalated at once.
    NotPossible,
    /// Decided and recorded; sent by the act phase of the same tick.
    Requested {
        #[serde(alias = "workflow", deserialize_with = "one_or_many")]
        workflows: Vec<String>,
    },
    Sent {
        #[serde(alias = "workflow", deserialize_with = "one_or_many")]
        workflows: Vec<String>,
    },
    Failed {
        #[serde(alias = "workflow", deserialize_with = "one_or_many")]
        workflows: Vec<String>,
        error: String,
    },
}

/// A stored dispatch names one workflow (before issue 36) or several.
fn one_or_many<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::One(one) => vec![one],
        OneOrMany::Many(many) => many,
    })
}

/// The workflows as people read them: `a.yml`, `b.yml`.
pub fn quoted(files: &[String]) -> String {
    files
        .iter()
        .map(|f| format!("`{f}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// What a stalled PR needs now.
#[derive(Clone, Debug, PartialEq)]
pub enum StallStep {
    /// Comment on the PR once for this head; dispatch the workflows of `dispatch` for the
    /// head's branch; escalate with `escalate` at once when no dispatch can help.
    Diagnose {
        comment: String,
        dispatch: Vec<String>,
        escalate: Option<String>,
    },
    /// A dispatched CI gets its own grace period to report.
    Wait { until: Timestamp, reason: String },
    /// A person decides (the reason is the question, with the commands).
    Escalate { reason: String },
}

/// The facts about one stalled PR head.
#[derive(Clone, Copy, Debug)]
pub struct Stall<'a> {
    pub task: &'a str,
    pub pr: u64,
    pub branch: &'a str,
    pub head_sha: &'a str,
    pub missing: &'a [String],
    /// Where the expected names came from (`ExpectedChecks::origin`).
    pub origin: &'a str,
}

/// The next step for a stalled head, given what was done about this PR before.
pub fn next_step(
    stall: &Stall<'_>,
    heal: Option<&CiHeal>,
    setup: &CiSetup,
    merge: &MergeConfig,
    now: Timestamp,
) -> StallStep {
    let head = short_sha(stall.head_sha);
    let missing = stall.missing.join(", ");
    let heal = heal.filter(|h| h.head_sha == stall.head_sha);
    // A CI opentiger started on purpose (issue 36, scan.ci) is silent by design until then:
    // not the trap, whatever the token.
    let trap = setup.is_trap() && !heal.is_some_and(|h| h.after_scan);
    let start = match setup.push_workflows.first() {
        Some(workflow) => format!("`gh workflow run {workflow} --ref {}`", stall.branch),
        None => format!("push to `{}` or re-run it", stall.branch),
    };
    let question = |what: &str| {
        format!(
            "PR #{pr}: expected CI checks never started on {head} ({missing}; from {origin}){what}. Decide: start CI on the head ({start}) and `opentiger task retry {task}` once it reports, or merge by hand; for good: {fix}",
            pr = stall.pr,
            origin = stall.origin,
            task = stall.task,
            fix = if trap {
                APP_TOKEN_FIX
            } else if heal.is_some_and(|h| h.after_scan) {
                "make the dispatched workflows report the expected checks on `workflow_dispatch`, or list the checks they do report in merge.required_checks"
            } else {
                "make CI start on pull requests, or list the checks that do in merge.required_checks"
            },
        )
    };
    match heal {
        None => {
            let dispatch = if trap {
                setup.dispatchable()
            } else {
                Vec::new()
            };
            let mut comment = format!(
                "**opentiger: CI did not start on {head}.** Expected checks ({}): {missing}. None of them appeared within {} minutes of the push (`merge.checks_grace_minutes`), so this PR is not merged.",
                stall.origin, merge.checks_grace_minutes
            );
            if trap {
                comment.push_str(&format!(
                    "\n\nThis is GitHub's `GITHUB_TOKEN` trap: opentiger runs with the workflow's own `GITHUB_TOKEN`, and GitHub starts no workflow for PRs opened or branches pushed with it, while {} start on `pull_request`/`push`. Fix: {APP_TOKEN_FIX}.",
                    quoted(&setup.push_workflows)
                ));
            }
            let escalate = if dispatch.is_empty() {
                comment.push_str(
                    "\n\nopentiger cannot start CI for this head itself: a person decides (see the dashboard).",
                );
                Some(question(if trap { ": the GITHUB_TOKEN trap" } else { "" }))
            } else {
                comment.push_str(&format!(
                    "\n\nMeanwhile opentiger started {} for this head (`workflow_dispatch` on `{}`, once); the PR is merged when the checks pass.",
                    quoted(&dispatch),
                    stall.branch
                ));
                None
            };
            StallStep::Diagnose {
                comment,
                dispatch,
                escalate,
            }
        }
        Some(heal) => match &heal.dispatch {
            Dispatch::Requested { workflows } | Dispatch::Sent { workflows } => {
                let until = heal.at.plus(i64::from(merge.checks_grace_minutes) * MINUTE);
                let workflows = quoted(workflows);
                if now < until {
                    StallStep::Wait {
                        until,
                        reason: if heal.after_scan {
                            format!(
                                "PR #{}: CI was started on {head} once it passed the threat scan (scan.ci): {workflows} dispatched at {}; {missing} is waited for until {until}",
                                stall.pr, heal.at
                            )
                        } else {
                            format!(
                                "PR #{}: expected CI never started on {head}{}; {workflows} was dispatched for it and {missing} is waited for until {until}",
                                stall.pr,
                                if trap {
                                    format!(" (the GITHUB_TOKEN trap; for good: {APP_TOKEN_FIX})")
                                } else {
                                    String::new()
                                }
                            )
                        },
                    }
                } else {
                    StallStep::Escalate {
                        reason: question(&format!(", even after dispatching {workflows}")),
                    }
                }
            }
            Dispatch::Failed { workflows, error } => StallStep::Escalate {
                reason: question(&format!(
                    ": dispatching {} failed ({error})",
                    quoted(workflows)
                )),
            },
            Dispatch::NotPossible => StallStep::Escalate {
                reason: question(if trap { ": the GITHUB_TOKEN trap" } else { "" }),
            },
        },
    }
}

/// How long GitHub may leave a PR's mergeability unknown (`mergeable: null`, re-read every
/// tick) before a person is asked.
pub const MERGEABLE_UNKNOWN_MINUTES: i64 = 5;

/// Whether a PR whose CI passed can go to review and merge as far as GitHub's mergeability goes.
#[derive(Clone, Debug, PartialEq)]
pub enum MergeableStep {
    Proceed,
    /// Unknown for now: read again next tick.
    Wait {
        until: Timestamp,
        reason: String,
    },
    Escalate {
        reason: String,
    },
}

/// GitHub computes mergeability lazily and reports `null` meanwhile; a merge then fails for no
/// reason of the PR's. Wait while it may still come, then ask a person (once: the task leaves
/// the gate for `awaiting_human`).
pub fn mergeable_step(
    task: &str,
    pr: u64,
    observed: Option<&super::gate::CiObservation>,
    now: Timestamp,
) -> MergeableStep {
    let Some(since) = observed.and_then(|o| o.mergeable_unknown_since) else {
        return MergeableStep::Proceed;
    };
    let until = since.plus(MERGEABLE_UNKNOWN_MINUTES * MINUTE);
    if now < until {
        return MergeableStep::Wait {
            until,
            reason: format!(
                "PR #{pr}: CI passed; GitHub has not worked out whether it merges yet (mergeable: null): read again next tick"
            ),
        };
    }
    MergeableStep::Escalate {
        reason: format!(
            "PR #{pr}: GitHub still reports mergeable: null since {since}, read again every tick. Decide: open the PR on GitHub (that makes GitHub compute it), then `opentiger task retry {task}`; or merge by hand"
        ),
    }
}

/// What a task's PR needs about its base branch.
#[derive(Clone, Debug, PartialEq)]
pub enum BaseStep {
    /// It targets the configured base (or its base is not known).
    Fine,
    /// Open, on another base, not yet retargeted: point it at the configured base.
    Retarget {
        from: String,
    },
    Escalate {
        reason: String,
    },
}

/// A PR on a base other than `merge`'s target: the base was renamed or deleted (or the
/// configuration's base changed). An open one is retargeted once; one that stays put, or a PR
/// GitHub closed because its base went away, waits on a person. A PR a person closed on the
/// right base is not this rule's business (the task is cancelled, as before).
pub fn base_step(
    task: &str,
    pr: u64,
    base: Option<&str>,
    configured: &str,
    open: bool,
    retargeted_from: Option<&str>,
) -> BaseStep {
    let Some(base) = base.filter(|b| *b != configured) else {
        return BaseStep::Fine;
    };
    if !open {
        return BaseStep::Escalate {
            reason: format!(
                "PR #{pr} was closed while it targeted `{base}`, which is not the base branch `{configured}` (deleted or renamed?). Decide: `opentiger task retry {task}` opens a new PR against `{configured}`, or `opentiger task cancel {task}`"
            ),
        };
    }
    match retargeted_from {
        Some(from) if from == base => BaseStep::Escalate {
            reason: format!(
                "PR #{pr} targets `{base}`, not the base branch `{configured}`, and retargeting it did not take. Decide: change its base to `{configured}` on GitHub, then `opentiger task retry {task}`; or close it and `opentiger task retry {task}`"
            ),
        },
        _ => BaseStep::Retarget {
            from: base.to_string(),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testkit::at;

    fn setup(workflow_token: bool, dispatchable: bool) -> CiSetup {
        CiSetup {
            workflow_token,
            push_workflows: vec!["ci.yml".into()],
            head_workflows: vec!["ci.yml".into()],
            lacks_dispatch: Vec::new(),
            may_dispatch: dispatchable,
        }
    }

    fn heal(head: &str, dispatch: Dispatch) -> CiHeal {
        CiHeal {
            head_sha: head.into(),
            at: at(0),
            dispatch,
            after_scan: false,
        }
    }

    fn kind(step: &StallStep) -> &'static str {
        match step {
            StallStep::Diagnose { dispatch, .. } if !dispatch.is_empty() => "diagnose+dispatch",
            StallStep::Diagnose {
                escalate: Some(_), ..
            } => "diagnose+escalate",
            StallStep::Diagnose { .. } => "diagnose",
            StallStep::Wait { .. } => "wait",
            StallStep::Escalate { .. } => "escalate",
        }
    }

    #[test]
    fn stall_table() {
        let missing = vec!["test".to_string()];
        let stall = Stall {
            task: "t1",
            pr: 7,
            branch: "opentiger/t1",
            head_sha: "aaaa",
            missing: &missing,
            origin: "merge.required_checks",
        };
        let ci = || vec!["ci.yml".to_string()];
        let requested = Dispatch::Requested { workflows: ci() };
        let sent = Dispatch::Sent { workflows: ci() };
        let failed = Dispatch::Failed {
            workflows: ci(),
            error: "403".into(),
        };
        #[rustfmt::skip]
        let cases: Vec<(&str, Option<CiHeal>, CiSetup, Timestamp, &str)> = vec![
            ("trap, may dispatch",          None, setup(true, true),  at(0), "diagnose+dispatch"),
            ("trap, may not dispatch",      None, setup(true, false), at(0), "diagnose+escalate"),
            ("an App token: not the trap",  None, setup(false, true), at(0), "diagnose+escalate"),
            ("diagnosed for an older head", Some(heal("old", sent.clone())), setup(true, true), at(1), "diagnose+dispatch"),
            ("dispatched, in its grace",    Some(heal("aaaa", sent.clone())), setup(true, true), at(9), "wait"),
            ("requested, tick died",        Some(heal("aaaa", requested)), setup(true, true), at(9), "wait"),
            ("dispatched, still nothing",   Some(heal("aaaa", sent)), setup(true, true), at(10), "escalate"),
            ("dispatch failed",             Some(heal("aaaa", failed)), setup(true, true), at(1), "escalate"),
            ("not possible, asked already", Some(heal("aaaa", Dispatch::NotPossible)), setup(true, false), at(1), "escalate"),
        ];
        for (name, heal, setup, now, want) in cases {
            let step = next_step(&stall, heal.as_ref(), &setup, &MergeConfig::default(), now);
            assert_eq!(kind(&step), want, "{name}: {step:?}");
        }
    }

    #[test]
    fn a_pr_off_the_base_is_retargeted_once_then_escalated() {
        type Row<'a> = (&'a str, Option<&'a str>, bool, Option<&'a str>, &'a str);
        #[rustfmt::skip]
        let cases: Vec<Row> = vec![
            ("on the base",               Some("main"),   true,  None,           "fine"),
            ("base unknown",              None,           true,  None,           "fine"),
            ("renamed base, open",        Some("master"), true,  None,           "retarget"),
            ("retargeted, still off",     Some("master"), true,  Some("master"), "escalate"),
            ("retargeted, now elsewhere", Some("dev"),    true,  Some("master"), "retarget"),
            ("closed with its base gone", Some("master"), false, None,           "escalate"),
            ("closed on the base",        Some("main"),   false, None,           "fine"),
        ];
        for (name, base, open, retargeted, want) in cases {
            let got = match base_step("t1", 7, base, "main", open, retargeted) {
                BaseStep::Fine => "fine",
                BaseStep::Retarget { .. } => "retarget",
                BaseStep::Escalate { reason } => {
                    assert!(
                        reason.contains("opentiger task retry t1"),
                        "{name}: {reason}"
                    );
                    "escalate"
                }
            };
            assert_eq!(got, want, "{name}");
        }
    }

    #[test]
    fn mergeability_unknown_waits_then_asks_a_person() {
        let mut observed = crate::engine::testkit::checks_on("aaaa", &["test"], &[], &[]);
        assert_eq!(
            mergeable_step("t1", 7, Some(&observed), at(0)),
            MergeableStep::Proceed
        );
        assert_eq!(mergeable_step("t1", 7, None, at(0)), MergeableStep::Proceed);
        observed.mergeable_unknown_since = Some(at(0));
        #[rustfmt::skip]
        let cases = [(at(0), "wait"), (at(4), "wait"), (at(5), "escalate"), (at(60), "escalate")];
        for (now, want) in cases {
            let got = match mergeable_step("t1", 7, Some(&observed), now) {
                MergeableStep::Proceed => "proceed",
                MergeableStep::Wait { .. } => "wait",
                MergeableStep::Escalate { reason } => {
                    assert!(reason.contains("opentiger task retry t1"), "{reason}");
                    "escalate"
                }
            };
            assert_eq!(got, want, "{now}");
        }
    }

    #[test]
    fn the_diagnosis_names_the_trap_the_fix_and_the_commands() {
        let missing = vec!["test".to_string()];
        let stall = Stall {
            task: "t1",
            pr: 7,
            branch: "opentiger/t1",
            head_sha: "aaaa",
            missing: &missing,
            origin: "checks seen on the base branch",
        };
        let StallStep::Diagnose {
            comment,
            dispatch,
            escalate,
        } = next_step(
            &stall,
            None,
            &setup(true, true),
            &MergeConfig::default(),
            at(0),
        )
        else {
            panic!("first time: a diagnosis");
        };
        assert_eq!(dispatch, vec!["ci.yml".to_string()]);
        assert_eq!(escalate, None);
        for part in [
            "`GITHUB_TOKEN` trap",
            "App token",
            "`ci.yml`",
            "workflow_dispatch",
        ] {
            assert!(comment.contains(part), "{part}: {comment}");
        }
        let StallStep::Diagnose { escalate, .. } = next_step(
            &stall,
            None,
            &setup(true, false),
            &MergeConfig::default(),
            at(0),
        ) else {
            panic!("first time: a diagnosis");
        };
        let question = escalate.expect("no dispatch: a person decides at once");
        for part in [
            "PR #7",
            "test",
            "gh workflow run ci.yml --ref opentiger/t1",
            "opentiger task retry t1",
            "App token",
        ] {
            assert!(question.contains(part), "{part}: {question}");
        }
    }
}

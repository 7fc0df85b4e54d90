//! The first step of judging a pull request: what CI says about the head the run pushed
//! (DESIGN §8; spec §2.4 step 5).
//!
//! - the PR head is not the run's commit → the run's verdict would be stale: judge the new head;
//! - checks not required → the review goes on;
//! - some check failed → changes are requested, naming the failing checks;
//! - the expected checks ([`ExpectedChecks`]) all passed on the head → the review goes on; an
//!   unrelated green check does not stand in for a missing expected one, and a skipped or
//!   neutral check counts as passed (GitHub's rule for required checks);
//! - an expected check has not appeared yet → wait `merge.checks_grace_minutes` after the push,
//!   then [`CheckGate::NeverStarted`]: no CI at all is never a pass when CI is expected (what
//!   happens then is `engine::stall`);
//! - nothing is expected (no configured names, no branch rules, no CI ever seen on the base) and
//!   nothing reported → the review goes on, saying the merge rests on opentiger's own checks;
//! - whether the repository has CI is not known yet (the base branch's checks were never read,
//!   issue 49) and nothing reported → wait: a head is never merged before the gate knows, in
//!   any round and with any review window;
//! - checks still running → wait and look again next tick, at most `merge.checks_timeout_minutes`
//!   after the run finished; past that a person decides (a stuck CI never merges, never loops).
//!
//! Not for: reading CI or the rules (the forge does), or acting on a stall (the tick does).

use serde::{Deserialize, Serialize};

use super::verdict::{short_sha, JudgeConclusion};
use crate::config::MergeConfig;
use crate::model::{Checks, Run};
use crate::time::{Timestamp, MINUTE};

/// What the dashboard and the verdict say when a repository has no CI to wait for.
pub const NO_CI_NOTE: &str = "no CI configured: merged on opentiger's own verification";

/// What a head waits for while the gate does not know whether the repository has CI.
pub const UNKNOWN_CI: &str =
    "whether the repository has CI (the base branch's checks are not read yet)";

/// CI's view of one commit, as the shell observed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CiObservation {
    /// The commit the PR head pointed at when CI was read.
    pub head_sha: String,
    pub checks: Checks,
    /// Since when GitHub has reported this head's mergeability as unknown (`mergeable: null`),
    /// when it still does.
    pub mergeable_unknown_since: Option<Timestamp>,
}

/// Where the gate learned which checks a PR must pass (the first that names any wins).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExpectedSource {
    /// `merge.required_checks`: each named check must pass on the head.
    Config,
    /// The required status checks of the base branch's rules: each must pass on the head.
    BranchRules,
    /// Checks seen on the base branch or earlier PR heads: the repository has CI, so some check
    /// must report on the head and every one that does must pass (which of them run on a PR is
    /// the workflows' business: a deploy that runs only on the base is not waited for).
    Learned,
    /// Nothing named, but workflows of the repository run on pull requests: CI is expected as
    /// with learned checks (some check must report, all must pass).
    Workflows,
    /// None of these: the repository has no CI.
    #[default]
    Nothing,
    /// Nothing named, no workflow on pull requests, and the base branch's checks and statuses
    /// never read (issue 49): whether the repository has CI is not known yet, so a head that
    /// reported nothing is not merged.
    Unknown,
}

/// The checks a PR must pass, and where that came from.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExpectedChecks {
    pub source: ExpectedSource,
    pub names: Vec<String>,
}

impl ExpectedChecks {
    /// The first source that names any check: configuration, branch rules, what was learned.
    pub fn choose(configured: Option<&[String]>, rules: &[String], learned: &[String]) -> Self {
        // opentiger's own checks (issue 28) are never CI to wait for, even where the branch's
        // rules require them: the judge completes them, after this gate.
        let ci = |names: &[String]| -> Vec<String> {
            names
                .iter()
                .filter(|n| !crate::model::checks::is_own_check(n))
                .cloned()
                .collect()
        };
        let configured = configured.map(ci);
        let (rules, learned) = (ci(rules), ci(learned));
        let (source, names) = match configured.as_deref() {
            // An explicit empty list says: this repository has no CI to wait for.
            Some(names) => (ExpectedSource::Config, names.to_vec()),
            None if !rules.is_empty() => (ExpectedSource::BranchRules, rules.to_vec()),
            None if !learned.is_empty() => (ExpectedSource::Learned, learned.to_vec()),
            None => (ExpectedSource::Nothing, Vec::new()),
        };
        let mut names = names;
        names.sort();
        names.dedup();
        let source = if names.is_empty() {
            ExpectedSource::Nothing
        } else {
            source
        };
        ExpectedChecks { source, names }
    }

    /// With nothing named by the three sources, workflow files that start on pull requests
    /// still say the repository has CI (their names stand for the checks they report).
    pub fn or_workflows(self, files: &[String]) -> Self {
        match self.source {
            ExpectedSource::Nothing | ExpectedSource::Unknown if !files.is_empty() => {
                ExpectedChecks {
                    source: ExpectedSource::Workflows,
                    names: files.to_vec(),
                }
            }
            ExpectedSource::Config
            | ExpectedSource::BranchRules
            | ExpectedSource::Learned
            | ExpectedSource::Workflows
            | ExpectedSource::Nothing
            | ExpectedSource::Unknown => self,
        }
    }

    /// Whether CI gates a merge here, or may (not known yet): anything but "no CI".
    pub fn may_gate(&self) -> bool {
        self.source != ExpectedSource::Nothing
    }

    /// Where the names came from, for people.
    pub fn origin(&self) -> &'static str {
        match self.source {
            ExpectedSource::Config => "merge.required_checks",
            ExpectedSource::BranchRules => "the base branch's required status checks",
            ExpectedSource::Learned => "checks seen on the base branch",
            ExpectedSource::Workflows => "workflows that run on pull requests",
            ExpectedSource::Nothing => "nothing: no CI configured",
            ExpectedSource::Unknown => "nothing read yet: the base branch's checks come first",
        }
    }
}

/// What the judge does about CI before anything else.
#[derive(Clone, Debug, PartialEq)]
pub enum CheckGate {
    /// CI is green, or not required, or there is no CI: go on with policy, limits and review.
    Proceed { note: String },
    /// CI is still running, or expected checks may yet appear: look again next tick.
    Wait {
        pending: Vec<String>,
        deadline: Timestamp,
    },
    /// CI failed: the judge requests changes with this conclusion.
    Failed(JudgeConclusion),
    /// CI stayed pending past the timeout: a person decides.
    TimedOut { reason: String },
    /// The PR head moved since the run pushed: this run's verdict would judge the wrong code.
    Stale { observed: String },
    /// Expected checks did not appear on the head within `merge.checks_grace_minutes` of the
    /// push: CI did not start (never a pass; `engine::stall` says what to do).
    NeverStarted {
        head_sha: String,
        missing: Vec<String>,
        /// When the grace period ended.
        since: Timestamp,
    },
}

/// `observed` is `None` when CI has not been read for this PR yet.
pub fn checks_gate(
    run: &Run,
    observed: Option<&CiObservation>,
    expected: &ExpectedChecks,
    merge: &MergeConfig,
    now: Timestamp,
) -> CheckGate {
    let pushed_at = run.finished_at.unwrap_or(run.started_at);
    checks_gate_from(run, pushed_at, observed, expected, merge, now)
}

/// [`checks_gate`] with CI's clock starting at `pushed_at`: the push, or when opentiger started
/// CI on the head itself (issue 36, `scan.ci`), so the grace period and the timeout count from
/// the dispatch.
pub fn checks_gate_from(
    run: &Run,
    pushed_at: Timestamp,
    observed: Option<&CiObservation>,
    expected: &ExpectedChecks,
    merge: &MergeConfig,
    now: Timestamp,
) -> CheckGate {
    if !merge.require_checks {
        return CheckGate::Proceed {
            note: "CI checks not required (merge.require_checks: false)".into(),
        };
    }
    let deadline = pushed_at.plus(i64::from(merge.checks_timeout_minutes) * MINUTE);
    let grace = pushed_at.plus(i64::from(merge.checks_grace_minutes) * MINUTE);
    let Some(observed) = observed else {
        return wait_or_time_out(Vec::new(), deadline, merge, now);
    };
    if let Some(pushed) = run.head_sha.as_deref() {
        if pushed != observed.head_sha {
            return CheckGate::Stale {
                observed: observed.head_sha.clone(),
            };
        }
    }
    let checks = &observed.checks;
    let head = short_sha(&observed.head_sha);
    if !checks.failing.is_empty() || checks.state == "failure" {
        return failed(&observed.head_sha, checks);
    }
    let reported = |name: &String| {
        checks.passed.contains(name)
            || checks.pending.contains(name)
            || checks.failing.contains(name)
    };
    let (waiting, missing): (Vec<String>, Vec<String>) = match expected.source {
        ExpectedSource::Config | ExpectedSource::BranchRules => (
            expected
                .names
                .iter()
                .filter(|n| checks.pending.contains(n))
                .cloned()
                .collect(),
            expected
                .names
                .iter()
                .filter(|n| !reported(n))
                .cloned()
                .collect(),
        ),
        ExpectedSource::Learned | ExpectedSource::Workflows => {
            let nothing = checks.passed.is_empty() && checks.pending.is_empty();
            (
                checks.pending.clone(),
                if nothing {
                    expected.names.clone()
                } else {
                    Vec::new()
                },
            )
        }
        ExpectedSource::Nothing => {
            if checks.passed.is_empty() && checks.pending.is_empty() {
                return CheckGate::Proceed {
                    note: format!("{NO_CI_NOTE} (nothing reported on {head})"),
                };
            }
            (checks.pending.clone(), Vec::new())
        }
        // Issue 49: a head's silence proves nothing until the base says whether CI exists;
        // what the head reported counts as it would for learned checks.
        ExpectedSource::Unknown => {
            if checks.passed.is_empty() && checks.pending.is_empty() {
                return wait_or_time_out(vec![UNKNOWN_CI.to_string()], deadline, merge, now);
            }
            (checks.pending.clone(), Vec::new())
        }
    };
    if !missing.is_empty() {
        if now < grace {
            let mut pending = waiting;
            pending.extend(missing.iter().map(|m| format!("{m} (not started)")));
            return CheckGate::Wait {
                pending,
                deadline: grace,
            };
        }
        return CheckGate::NeverStarted {
            head_sha: observed.head_sha.clone(),
            missing,
            since: grace,
        };
    }
    if !waiting.is_empty() {
        return wait_or_time_out(waiting, deadline, merge, now);
    }
    let passed = match expected.source {
        ExpectedSource::Config | ExpectedSource::BranchRules => expected.names.join(", "),
        ExpectedSource::Learned
        | ExpectedSource::Workflows
        | ExpectedSource::Nothing
        | ExpectedSource::Unknown => checks.passed.join(", "),
    };
    CheckGate::Proceed {
        note: format!("CI green on {head} ({passed})"),
    }
}

fn failed(head_sha: &str, checks: &Checks) -> CheckGate {
    CheckGate::Failed(JudgeConclusion::RequestChanges {
        summary: format!(
            "CI failed on {}: {}",
            short_sha(head_sha),
            names(&checks.failing)
        ),
        findings: checks
            .failing
            .iter()
            .map(|name| match checks.excerpts.get(name) {
                Some(said) => {
                    format!("CI check `{name}` failed; make it pass. It reported: {said}")
                }
                None => format!("CI check `{name}` failed; make it pass"),
            })
            .collect(),
    })
}

fn wait_or_time_out(
    pending: Vec<String>,
    deadline: Timestamp,
    merge: &MergeConfig,
    now: Timestamp,
) -> CheckGate {
    if now < deadline {
        return CheckGate::Wait { pending, deadline };
    }
    CheckGate::TimedOut {
        reason: format!(
            "CI still pending after {} minutes (merge.checks_timeout_minutes): {}. Decide: re-run CI and `opentiger task retry`, or merge by hand",
            merge.checks_timeout_minutes,
            names(&pending)
        ),
    }
}

fn names(checks: &[String]) -> String {
    if checks.is_empty() {
        "no check named".into()
    } else {
        checks.join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testkit::{at, checks_on, ci, run};
    use crate::model::RunStatus;

    fn pushed(sha: &str, finished: Timestamp) -> Run {
        let mut r = run("r1", "t1", RunStatus::Success, finished.plus(-MINUTE));
        r.head_sha = Some(sha.into());
        r.finished_at = Some(finished);
        r
    }

    fn merge(require: bool) -> MergeConfig {
        MergeConfig {
            require_checks: require,
            checks_timeout_minutes: 60,
            checks_grace_minutes: 10,
            ..MergeConfig::default()
        }
    }

    fn expect(source: ExpectedSource, names: &[&str]) -> ExpectedChecks {
        ExpectedChecks {
            source,
            names: names.iter().map(|n| n.to_string()).collect(),
        }
    }

    fn outcome(gate: &CheckGate) -> &'static str {
        match gate {
            CheckGate::Proceed { .. } => "proceed",
            CheckGate::Wait { .. } => "wait",
            CheckGate::Failed(_) => "failed",
            CheckGate::TimedOut { .. } => "timed_out",
            CheckGate::Stale { .. } => "stale",
            CheckGate::NeverStarted { .. } => "never_started",
        }
    }

    #[test]
    fn gate_table() {
        let pushed = pushed("aaaa", at(0));
        let before_deadline = at(59);
        let at_deadline = at(60);
        let none = ExpectedChecks::default();

        #[rustfmt::skip]
        let cases: Vec<(&str, bool, Option<CiObservation>, Timestamp, &str)> = vec![
            ("not required, red",      false, Some(ci("aaaa", "failure", &["test"], &[])), before_deadline, "proceed"),
            ("green",                  true,  Some(checks_on("aaaa", &["test"], &[], &[])), before_deadline, "proceed"),
            ("no CI at all",           true,  Some(ci("aaaa", "none", &[], &[])),          before_deadline, "proceed"),
            ("red",                    true,  Some(ci("aaaa", "failure", &["test"], &[])), before_deadline, "failed"),
            ("red after the deadline", true,  Some(ci("aaaa", "failure", &["test"], &[])), at_deadline,     "failed"),
            ("pending",                true,  Some(ci("aaaa", "pending", &[], &["lint"])), before_deadline, "wait"),
            ("pending too long",       true,  Some(ci("aaaa", "pending", &[], &["lint"])), at_deadline,     "timed_out"),
            ("not read yet",           true,  None,                                        before_deadline, "wait"),
            ("never read",             true,  None,                                        at_deadline,     "timed_out"),
            ("head moved, green",      true,  Some(checks_on("bbbb", &["test"], &[], &[])), before_deadline, "stale"),
            ("head moved, pending",    true,  Some(ci("bbbb", "pending", &[], &["ci"])),   before_deadline, "stale"),
        ];
        for (name, require, observed, now, want) in cases {
            let got = checks_gate(&pushed, observed.as_ref(), &none, &merge(require), now);
            assert_eq!(outcome(&got), want, "{name}");
        }
    }

    /// Issue 19: "no checks" is never a pass when checks are expected; named checks are waited
    /// for one by one; skipped and neutral count as passed.
    #[test]
    fn expected_checks_table() {
        let pushed = pushed("aaaa", at(0));
        let in_grace = at(9);
        let after_grace = at(10);
        let config = expect(ExpectedSource::Config, &["test"]);
        let rules = expect(ExpectedSource::BranchRules, &["test", "build"]);
        let learned = expect(ExpectedSource::Learned, &["test", "deploy"]);
        let workflows = ExpectedChecks::default().or_workflows(&["ci.yml".to_string()]);
        assert_eq!(workflows.source, ExpectedSource::Workflows);
        assert_eq!(
            expect(ExpectedSource::BranchRules, &["b"]).or_workflows(&["ci.yml".to_string()]),
            expect(ExpectedSource::BranchRules, &["b"])
        );
        let nothing = ExpectedChecks::default();
        let unknown = expect(ExpectedSource::Unknown, &[]);
        assert_eq!(
            unknown.clone().or_workflows(&["ci.yml".to_string()]).source,
            ExpectedSource::Workflows
        );

        #[rustfmt::skip]
        let cases: Vec<(&str, &ExpectedChecks, CiObservation, Timestamp, &str)> = vec![
            ("configured, nothing yet",        &config,  ci("aaaa", "none", &[], &[]),                 in_grace,    "wait"),
            ("configured, never started",      &config,  ci("aaaa", "none", &[], &[]),                 after_grace, "never_started"),
            ("configured, only lint green",    &config,  checks_on("aaaa", &["lint"], &[], &[]),       in_grace,    "wait"),
            ("configured, only lint, late",    &config,  checks_on("aaaa", &["lint"], &[], &[]),       after_grace, "never_started"),
            ("configured, test queued",        &config,  checks_on("aaaa", &["lint"], &[], &["test"]), after_grace, "wait"),
            ("configured, test green",         &config,  checks_on("aaaa", &["lint", "test"], &[], &[]), in_grace,  "proceed"),
            ("configured, test skipped",       &config,  checks_on("aaaa", &["test"], &[], &[]),       in_grace,    "proceed"),
            ("configured, unrelated pending",  &config,  checks_on("aaaa", &["test"], &[], &["docs"]), in_grace,    "proceed"),
            ("configured, unrelated red",      &config,  checks_on("aaaa", &["test"], &["lint"], &[]), in_grace,    "failed"),
            ("rules, one of two green",        &rules,   checks_on("aaaa", &["test"], &[], &[]),       after_grace, "never_started"),
            ("rules, both green",              &rules,   checks_on("aaaa", &["test", "build"], &[], &[]), in_grace, "proceed"),
            ("learned, nothing reported",      &learned, ci("aaaa", "none", &[], &[]),                 in_grace,    "wait"),
            ("learned, nothing, late",         &learned, ci("aaaa", "none", &[], &[]),                 after_grace, "never_started"),
            ("learned, test green, no deploy", &learned, checks_on("aaaa", &["test"], &[], &[]),       in_grace,    "proceed"),
            ("learned, lint pending",          &learned, checks_on("aaaa", &[], &[], &["lint"]),       after_grace, "wait"),
            ("PR workflows, nothing reported", &workflows, ci("aaaa", "none", &[], &[]),               after_grace, "never_started"),
            ("PR workflows, test green",       &workflows, checks_on("aaaa", &["test"], &[], &[]),     in_grace,    "proceed"),
            ("no CI anywhere",                 &nothing, ci("aaaa", "none", &[], &[]),                 in_grace,    "proceed"),
            ("no CI expected, some pending",   &nothing, checks_on("aaaa", &[], &[], &["lint"]),       in_grace,    "wait"),
            // Issue 49: before the base was read, a silent head waits; one reporting is judged.
            ("not known, nothing reported",    &unknown, ci("aaaa", "none", &[], &[]),                 in_grace,    "wait"),
            ("not known, nothing, late",       &unknown, ci("aaaa", "none", &[], &[]),                 after_grace, "wait"),
            ("not known, nothing, timed out",  &unknown, ci("aaaa", "none", &[], &[]),                 at(60),      "timed_out"),
            ("not known, test queued",         &unknown, checks_on("aaaa", &[], &[], &["test"]),       in_grace,    "wait"),
            ("not known, test green",          &unknown, checks_on("aaaa", &["test"], &[], &[]),       in_grace,    "proceed"),
            ("not known, test red",            &unknown, checks_on("aaaa", &[], &["test"], &[]),       in_grace,    "failed"),
        ];
        for (name, expected, observed, now, want) in cases {
            let got = checks_gate(&pushed, Some(&observed), expected, &merge(true), now);
            assert_eq!(outcome(&got), want, "{name}: {got:?}");
        }
    }

    #[test]
    fn what_the_gate_says() {
        let pushed = pushed("aaaa", at(0));
        let none = ci("aaaa", "none", &[], &[]);
        let CheckGate::Proceed { note } = checks_gate(
            &pushed,
            Some(&none),
            &ExpectedChecks::default(),
            &merge(true),
            at(1),
        ) else {
            panic!("no CI anywhere proceeds");
        };
        assert!(note.starts_with(NO_CI_NOTE), "{note}");
        let config = expect(ExpectedSource::Config, &["test"]);
        let lint = checks_on("aaaa", &["lint"], &[], &[]);
        assert_eq!(
            checks_gate(&pushed, Some(&lint), &config, &merge(true), at(1)),
            CheckGate::Wait {
                pending: vec!["test (not started)".into()],
                deadline: at(10)
            }
        );
        assert_eq!(
            checks_gate(&pushed, Some(&lint), &config, &merge(true), at(12)),
            CheckGate::NeverStarted {
                head_sha: "aaaa".into(),
                missing: vec!["test".into()],
                since: at(10)
            }
        );
        let green = checks_on("aaaa", &["lint", "test"], &[], &[]);
        assert_eq!(
            checks_gate(&pushed, Some(&green), &config, &merge(true), at(1)),
            CheckGate::Proceed {
                note: "CI green on aaaa (test)".into()
            }
        );
    }

    #[test]
    fn the_first_source_that_names_checks_wins() {
        let s = |v: &[&str]| v.iter().map(|n| n.to_string()).collect::<Vec<_>>();
        let (config, rules, learned) = (s(&["b", "a", "a"]), s(&["r"]), s(&["l"]));
        let own = s(&["opentiger / judge", "opentiger / verify"]);
        let (own_and_l, own_and_a) = (
            s(&["opentiger / verify", "l"]),
            s(&["opentiger / judge", "a"]),
        );
        type Row<'a> = (
            Option<&'a [String]>,
            &'a [String],
            &'a [String],
            ExpectedSource,
            Vec<String>,
        );
        #[rustfmt::skip]
        let cases: Vec<Row> = vec![
            (Some(&config), &rules, &learned, ExpectedSource::Config, s(&["a", "b"])),
            (None,          &rules, &learned, ExpectedSource::BranchRules, s(&["r"])),
            (None,          &[],    &learned, ExpectedSource::Learned, s(&["l"])),
            (None,          &[],    &[],      ExpectedSource::Nothing, vec![]),
            (Some(&[]),     &rules, &learned, ExpectedSource::Nothing, vec![]),
            // Issue 28: opentiger's own checks are never the CI it waits for, wherever named.
            (None,          &own,   &learned, ExpectedSource::Learned, s(&["l"])),
            (None,          &[],    &own_and_l, ExpectedSource::Learned, s(&["l"])),
            (Some(&own_and_a), &rules, &learned, ExpectedSource::Config, s(&["a"])),
        ];
        for (configured, rules, learned, source, names) in cases {
            let got = ExpectedChecks::choose(configured, rules, learned);
            assert_eq!(got, ExpectedChecks { source, names });
        }
    }

    #[test]
    fn a_failure_names_the_failing_checks() {
        let pushed = pushed("aaaa", at(0));
        let mut observed = ci("aaaa", "failure", &["test (ubuntu)", "lint"], &[]);
        observed
            .checks
            .excerpts
            .insert("lint".into(), "3 warnings: unused import".into());
        let CheckGate::Failed(JudgeConclusion::RequestChanges { summary, findings }) = checks_gate(
            &pushed,
            Some(&observed),
            &ExpectedChecks::default(),
            &merge(true),
            at(1),
        ) else {
            panic!("a red CI must request changes");
        };
        assert_eq!(summary, "CI failed on aaaa: test (ubuntu), lint");
        assert_eq!(
            findings,
            vec![
                "CI check `test (ubuntu)` failed; make it pass",
                "CI check `lint` failed; make it pass. It reported: 3 warnings: unused import"
            ]
        );
    }

    #[test]
    fn waiting_is_bounded_from_when_the_run_finished() {
        let mut pushed = pushed("aaaa", at(10));
        pushed.started_at = at(0);
        let observed = ci("aaaa", "pending", &[], &["build"]);
        let none = ExpectedChecks::default();
        assert_eq!(
            checks_gate(&pushed, Some(&observed), &none, &merge(true), at(11)),
            CheckGate::Wait {
                pending: vec!["build".into()],
                deadline: at(70)
            }
        );
        let CheckGate::TimedOut { reason } =
            checks_gate(&pushed, Some(&observed), &none, &merge(true), at(70))
        else {
            panic!("pending past the timeout must wait on a person");
        };
        assert!(reason.contains("60 minutes"), "{reason}");
        assert!(reason.contains("build"), "{reason}");
    }
}

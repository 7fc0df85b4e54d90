//! The doctor's CI checks in github mode: the "PRs made with the workflow's GITHUB_TOKEN do not
//! trigger CI" trap, (issue 36) the workflows that would run an agent's head with the
//! repository's secrets before anything reviewed it, given the token and `scan.ci`, and
//! (issue 51) CI workflows whose completion cannot wake a tick.
//!
//! Not for: reading the workflow files (`workflows`) or deciding when CI starts
//! (`engine::ci_start`).

use super::{Check, Vars};
use crate::workflows::Workflow;

pub(super) const APP_TOKEN_FIX: &str = "create a GitHub App (contents, issues, pull requests and checks: read and write; commit statuses: read), install it, and store its id as the repository variable OPENTIGER_APP_ID and its private key as the secret OPENTIGER_APP_PRIVATE_KEY: the workflow `opentiger init` writes then mints its token with actions/create-github-app-token and gives it to actions/checkout and to opentiger (nothing to uncomment; in a workflow of your own, the action's `token:` input or OPENTIGER_GITHUB_TOKEN)";

/// The variable the tick takes its token from, as `GithubClient::from_env` picks it: the first
/// one set, even if it is empty.
pub(super) fn token_source(vars: Vars<'_>) -> Option<(&'static str, String)> {
    ["OPENTIGER_GITHUB_TOKEN", "GITHUB_TOKEN"]
        .into_iter()
        .find_map(|k| vars(k).map(|v| (k, v)))
}

/// GitHub does not start workflows for events caused by a workflow's own GITHUB_TOKEN: PRs
/// opened and branches pushed with it get no CI, and the CI gate then waits in vain. In
/// Actions, a token from `GITHUB_TOKEN` that is not a personal access token is taken to be that
/// one, unless `OPENTIGER_GITHUB_TOKEN` (where an App token goes) is set.
pub(super) fn ci_trigger(vars: Vars<'_>) -> Check {
    let in_actions = vars("GITHUB_ACTIONS").as_deref() == Some("true");
    if !in_actions {
        return Check::ok(
            "CI trigger",
            "not in GitHub Actions (there, PRs opened with the workflow's GITHUB_TOKEN trigger no CI)",
        );
    }
    match token_source(vars).filter(|(_, v)| !v.trim().is_empty()) {
        Some(("OPENTIGER_GITHUB_TOKEN", _)) => Check::ok(
            "CI trigger",
            "OPENTIGER_GITHUB_TOKEN is set: taken as an App token or PAT, whose PRs trigger CI",
        ),
        Some((_, value)) if value.starts_with("ghp_") || value.starts_with("github_pat_") => {
            Check::ok(
                "CI trigger",
                "a personal access token: its PRs trigger CI (they are authored by its user; an App token is better)",
            )
        }
        Some(_) => Check::warn(
            "CI trigger",
            "the token looks like the workflow's GITHUB_TOKEN: PRs opened and branches pushed with it do not trigger workflows, so CI never runs on opentiger's PRs: the CI gate then diagnoses each PR after merge.checks_grace_minutes and, unless it may dispatch the CI (actions: write), asks a person",
            APP_TOKEN_FIX,
        ),
        None => Check::ok("CI trigger", "no token to check"),
    }
}

/// Issue 36: the workflows that would run an agent's head with repository secrets before
/// anything reviewed it — they start on a push to its branch or on its PR and are given a
/// secret other than `GITHUB_TOKEN` — named, given the token that pushes and `scan.ci`.
pub(super) fn ci_secrets(
    ci: crate::config::CiStart,
    vars: Vars<'_>,
    workflows: &[Workflow],
) -> Check {
    use crate::config::CiStart;
    const NAME: &str = "CI secrets";
    let on_heads = |w: &&Workflow| !w.runs_opentiger && !w.on_heads.is_empty();
    let exposed: Vec<String> = workflows
        .iter()
        .filter(on_heads)
        .filter(|w| !w.secrets.is_empty())
        .map(|w| {
            let secrets = w.secrets.join(", ");
            format!(
                "`{}` (secrets {secrets}; on {})",
                w.file,
                w.on_heads.join(", ")
            )
        })
        .collect();
    let lacking: Vec<String> = workflows
        .iter()
        .filter(on_heads)
        .filter(|w| !w.dispatch)
        .map(|w| format!("`{}`", w.file))
        .collect();
    let may_dispatch = workflows
        .iter()
        .any(|w| w.runs_opentiger && w.actions_write);
    let mut fix = vec!["set `scan.ci: after-scan` (or `after-review`) in .opentiger.yml: heads are pushed with the workflow's own GITHUB_TOKEN (the action's `push-token`), which starts no workflow, and opentiger starts CI (`workflow_dispatch`) once a head passed the scan".to_string()];
    if !lacking.is_empty() {
        fix.push(format!(
            "add `workflow_dispatch:` to {}",
            lacking.join(", ")
        ));
    }
    if !may_dispatch {
        fix.push("grant `actions: write` in the ticking workflow's `permissions:`".to_string());
    }
    match ci {
        CiStart::OnPush if exposed.is_empty() => Check::ok(
            NAME,
            "no workflow that runs on opentiger's heads is given repository secrets",
        ),
        CiStart::OnPush if crate::workflows::is_workflow_token(vars) => Check::ok(
            NAME,
            format!("{} would get repository secrets on an agent's head, but heads pushed with the workflow's GITHUB_TOKEN start no workflow", exposed.join("; ")),
        ),
        CiStart::OnPush => Check::warn(
            NAME,
            format!("{} run an agent's head with repository secrets before anything reviewed it: opentiger's pushes and PRs start them (scan.ci: on-push)", exposed.join("; ")),
            fix.join("; "),
        ),
        CiStart::AfterScan | CiStart::AfterReview => {
            let when = if ci == CiStart::AfterReview {
                "passed the scan and the judge or a person approved it (scan.ci: after-review)"
            } else {
                "passed the scan (scan.ci: after-scan)"
            };
            if vars(crate::credentials::PUSH_TOKEN_VAR).is_none_or(|t| t.trim().is_empty()) {
                return Check::fail(
                    NAME,
                    format!("scan.ci starts CI only once a head {when}, but {} is not set: the tick refuses to push", crate::credentials::PUSH_TOKEN_VAR),
                    "give the workflow's own token as OPENTIGER_PUSH_TOKEN (the action's `push-token` input does by default)",
                );
            }
            if lacking.is_empty() && may_dispatch {
                return Check::ok(
                    NAME,
                    format!("CI starts on an agent's head only once it {when}"),
                );
            }
            Check::warn(
                NAME,
                format!("CI is started on an agent's head only once it {when}, but opentiger cannot start all of it: a person is asked instead"),
                fix[1..].join("; "),
            )
        }
    }
}

/// Issue 51: GitHub sends no `check_suite` event for the check suites of GitHub Actions itself,
/// so CI that is an Actions workflow wakes a tick only through a `workflow_run` trigger of the
/// ticking workflow naming it; without one a PR waits for the next scheduled tick after its CI
/// ends. `None` when there is no CI workflow or no workflow running opentiger (the workflow
/// check says so).
pub(super) fn ci_wake(workflows: &[Workflow]) -> Option<Check> {
    const NAME: &str = "CI wake";
    let ci = crate::workflows::ci_workflows(workflows);
    let ticking: Vec<&Workflow> = workflows.iter().filter(|w| w.runs_opentiger).collect();
    if ci.is_empty() || ticking.is_empty() {
        return None;
    }
    let named = |w: &&Workflow| ticking.iter().any(|t| t.wakes_on.contains(&w.name));
    let (woken, missing): (Vec<&Workflow>, Vec<&Workflow>) = ci.into_iter().partition(named);
    let shown = |list: &[&Workflow]| {
        list.iter()
            .map(|w| format!("`{}` ({})", w.name, w.file))
            .collect::<Vec<_>>()
            .join(", ")
    };
    if missing.is_empty() {
        return Some(Check::ok(
            NAME,
            format!(
                "a tick starts when {} completes (workflow_run)",
                shown(&woken)
            ),
        ));
    }
    let file = format!(".github/workflows/{}", ticking[0].file);
    let mut names: Vec<String> = ticking[0].wakes_on.clone();
    names.extend(missing.iter().map(|w| w.name.clone()));
    let quoted: Vec<String> = names
        .iter()
        .map(|n| serde_json::to_string(n).unwrap_or_default())
        .collect();
    Some(Check::warn(
        NAME,
        format!(
            "your CI {} GitHub Actions, which sends no check_suite event for its own runs, and {file} has no `workflow_run` trigger naming it: a PR waits for the next scheduled tick after its CI ends",
            if missing.len() == 1 {
                format!("{} runs on", shown(&missing))
            } else {
                format!("workflows {} run on", shown(&missing))
            }
        ),
        format!(
            "put this under `on:` in {file}: `workflow_run: {{workflows: [{}], types: [completed]}}`, and let the job's `if:` through for it (`opentiger init --force` writes both)",
            quoted.join(", ")
        ),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::doctor::github::tests::vars;
    use crate::doctor::Level;

    /// Issue 51: CI that is an Actions workflow must be named by a `workflow_run` trigger.
    #[test]
    fn ci_workflows_that_cannot_wake_the_tick_are_named() {
        let parse = |file: &str, text: &str| crate::workflows::parse(file, text).unwrap();
        let ci = parse("ci.yml", "name: CI\non: [pull_request]\njobs: {}\n");
        let lint = parse("lint.yml", "on:\n  push:\njobs: {}\n");
        let release = parse("release.yml", "on:\n  push:\n    tags: ['v*']\njobs: {}\n");
        let tick = |extra: &str| {
            parse(
                "opentiger.yml",
                &format!("name: opentiger\non:\n  schedule:\n    - cron: '17 * * * *'\n{extra}jobs:\n  t:\n    steps:\n      - run: opentiger tick\n"),
            )
        };
        let woken = tick("  workflow_run:\n    workflows: [CI]\n    types: [completed]\n");
        assert_eq!(ci_wake(&[tick("")]), None, "no CI, nothing to say");
        assert_eq!(
            ci_wake(std::slice::from_ref(&ci)),
            None,
            "no ticking workflow"
        );
        assert_eq!(ci_wake(&[release, tick("")]), None, "tags only: not CI");
        let ok = ci_wake(&[ci.clone(), woken.clone()]).unwrap();
        assert_eq!(ok.level, Level::Ok, "{}", ok.detail);
        let missing = ci_wake(&[ci, lint, woken]).unwrap();
        assert_eq!(missing.level, Level::Warn);
        assert!(
            missing
                .detail
                .contains("`.github/workflows/lint.yml` (lint.yml) runs on GitHub Actions"),
            "{}",
            missing.detail
        );
        let fix = missing.fix.unwrap();
        assert!(
            fix.contains("`workflow_run: {workflows: [\"CI\", \".github/workflows/lint.yml\"], types: [completed]}`"),
            "{fix}"
        );
    }

    #[test]
    fn the_workflow_token_trap_is_a_warning_in_actions_only() {
        let cases: &[(&[(&str, &str)], Level)] = &[
            (&[("GITHUB_TOKEN", "ghs_x")], Level::Ok),
            (
                &[("GITHUB_ACTIONS", "true"), ("GITHUB_TOKEN", "ghs_x")],
                Level::Warn,
            ),
            (
                &[("GITHUB_ACTIONS", "true"), ("GITHUB_TOKEN", "v1.0123abc")],
                Level::Warn,
            ),
            (
                &[("GITHUB_ACTIONS", "true"), ("GITHUB_TOKEN", "ghp_x")],
                Level::Ok,
            ),
            (
                &[
                    ("GITHUB_ACTIONS", "true"),
                    ("GITHUB_TOKEN", "ghs_x"),
                    ("OPENTIGER_GITHUB_TOKEN", "ghs_app"),
                ],
                Level::Ok,
            ),
        ];
        for (env, level) in cases {
            let lookup = vars(env);
            let check = ci_trigger(&lookup);
            assert_eq!(check.level, *level, "{env:?}: {}", check.detail);
            if check.level == Level::Warn {
                let fix = check.fix.unwrap_or_default();
                assert!(fix.contains("actions/create-github-app-token"), "{fix}");
            }
        }
    }

    /// Issue 36: each workflow that would run an agent's head with secrets is named, with the
    /// fix; under scan.ci the check says what is missing for it to work.
    #[test]
    fn doctor_names_workflows_that_run_agents_heads_with_secrets() {
        use crate::config::CiStart::{AfterReview, AfterScan, OnPush};
        let wf = |file: &str, on: &[&str], secrets: &[&str], dispatch: bool| Workflow {
            file: file.into(),
            on_heads: on.iter().map(|s| s.to_string()).collect(),
            secrets: secrets.iter().map(|s| s.to_string()).collect(),
            dispatch,
            ..Workflow::default()
        };
        let tick = |actions_write| Workflow {
            file: "opentiger.yml".into(),
            runs_opentiger: true,
            actions_write,
            ..Workflow::default()
        };
        let deploy = wf("deploy.yml", &["push"], &["DEPLOY_KEY"], false);
        let ci = wf("ci.yml", &["pull_request"], &[], true);
        let app: &[(&str, &str)] = &[
            ("GITHUB_ACTIONS", "true"),
            ("OPENTIGER_GITHUB_TOKEN", "ghs_app"),
            ("GITHUB_TOKEN", "ghs_x"),
        ];
        let app_and_push: &[(&str, &str)] = &[
            ("GITHUB_ACTIONS", "true"),
            ("OPENTIGER_GITHUB_TOKEN", "ghs_app"),
            ("OPENTIGER_PUSH_TOKEN", "ghs_x"),
        ];
        let workflow_token: &[(&str, &str)] =
            &[("GITHUB_ACTIONS", "true"), ("GITHUB_TOKEN", "ghs_x")];
        type Row<'a> = (
            crate::config::CiStart,
            &'a [(&'a str, &'a str)],
            Vec<Workflow>,
            Level,
            &'a [&'a str],
        );
        #[rustfmt::skip]
        let cases: Vec<Row> = vec![
            (OnPush, app, vec![ci.clone(), tick(true)], Level::Ok, &["no workflow"]),
            (OnPush, app, vec![deploy.clone(), ci.clone(), tick(false)], Level::Warn,
                &["`deploy.yml` (secrets DEPLOY_KEY; on push)", "scan.ci: after-scan", "add `workflow_dispatch:` to `deploy.yml`", "actions: write"]),
            (OnPush, workflow_token, vec![deploy.clone(), tick(true)], Level::Ok, &["start no workflow"]),
            (AfterScan, app, vec![deploy.clone(), tick(true)], Level::Fail, &["OPENTIGER_PUSH_TOKEN is not set"]),
            (AfterScan, app_and_push, vec![deploy.clone(), ci.clone(), tick(true)], Level::Warn, &["add `workflow_dispatch:` to `deploy.yml`"]),
            (AfterReview, app_and_push, vec![ci.clone(), tick(true)], Level::Ok, &["approved it (scan.ci: after-review)"]),
        ];
        for (mode, env, workflows, level, says) in cases {
            let check = ci_secrets(mode, &vars(env), &workflows);
            assert_eq!(check.level, level, "{mode:?} {env:?}: {}", check.detail);
            let text = format!("{} {}", check.detail, check.fix.clone().unwrap_or_default());
            for part in says {
                assert!(text.contains(part), "{part}: {text}");
            }
            assert!(!text.contains("ghs_app"), "a token shown: {text}");
        }
    }
}

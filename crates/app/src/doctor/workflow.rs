//! doctor's workflow check (github mode): some workflow in `.github/workflows` runs opentiger,
//! and it runs a fixed release of it — the action pinned to a release tag or a commit, never a
//! branch such as `@main` (every tick would run whatever is pushed there next, holding the write
//! token and the agent's key), with `version:` set, and no `cargo install --git` of opentiger
//! (whatever the default branch is at, in every job); and no schedule starting a tick more often
//! than every 15 minutes (each job is billed as at least a minute, and events start the rest);
//! and a job running opentiger checks out with `persist-credentials: false` (issue 47: else
//! actions/checkout leaves the job's token where its agents can read it).
//!
//! Not for: linting workflows (actionlint does that) or checking the pinned tag exists.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use super::Check;
use crate::release::{self, Pin};

#[derive(Deserialize)]
struct Workflow {
    #[serde(default)]
    jobs: BTreeMap<String, Job>,
}

#[derive(Deserialize)]
struct Job {
    #[serde(default)]
    steps: Vec<Step>,
}

#[derive(Deserialize)]
struct Step {
    #[serde(default)]
    uses: Option<String>,
    #[serde(default)]
    run: Option<String>,
    #[serde(default)]
    with: BTreeMap<String, serde_json::Value>,
}

/// A problem with how one workflow runs opentiger.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Problem {
    pub detail: String,
    pub fix: String,
    /// GitHub refuses the file: no tick runs at all (a failure, not a warning).
    pub refused: bool,
}

/// What one workflow file says about opentiger: whether it runs it, and what is wrong with how.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Inspection {
    pub runs_opentiger: bool,
    /// The pins of its `uses:` of the action, for the report.
    pub pins: Vec<String>,
    pub problems: Vec<Problem>,
}

/// Reads one workflow's text. A file that is not a workflow (or not YAML) is taken at its word
/// only: it runs opentiger if it names it.
pub fn inspect(text: &str) -> Inspection {
    let mut out = Inspection {
        runs_opentiger: text.contains("opentiger"),
        ..Inspection::default()
    };
    // Issue 51: GitHub refuses a file with a key twice in one mapping, whatever a YAML
    // reader makes of it.
    out.problems.extend(super::yaml_keys::duplicates(text).into_iter().map(|d| Problem {
        detail: format!(
            "line {}: `{}:` is given a second time in the same mapping (first on line {}): GitHub refuses the file, so no tick runs",
            d.again, d.key, d.first
        ),
        fix: format!(
            "keep one of the two `{}:` lines (lines {} and {})",
            d.key, d.first, d.again
        ),
        refused: true,
    }));
    let Ok(workflow) = serde_saphyr::from_str::<Workflow>(text) else {
        return out;
    };
    out.problems.extend(frequent_schedules(text));
    let pinned = format!(
        "pin the major version and the release: `uses: {}` with `version: {}` (what `opentiger init --force` writes)",
        release::action_reference(),
        release::release_tag()
    );
    for (name, job) in &workflow.jobs {
        out.problems.extend(persisted_checkouts(name, job));
    }
    for (job, step) in workflow
        .jobs
        .iter()
        .flat_map(|(name, job)| job.steps.iter().map(move |s| (name, s)))
    {
        if let Some(uses) = &step.uses {
            match release::action_pin(uses) {
                Some(Pin::Branch(branch)) => out.problems.push(Problem {
                    detail: format!(
                        "job `{job}`: `uses: {uses}` follows the branch `{branch}`: every tick runs whatever is pushed there next, with your write token and the agent's key"
                    ),
                    fix: pinned.clone(),
                    refused: false,
                }),
                Some(Pin::Release(r) | Pin::Commit(r)) => {
                    out.pins.push(r);
                    if !step.with.contains_key("version") {
                        out.problems.push(Problem {
                            detail: format!(
                                "job `{job}`: `uses: {uses}` has no `version:`, so opentiger is built from source where no build is cached (minutes)"
                            ),
                            fix: format!(
                                "add `version: {}` under `with:`: the release's checked binary is downloaded instead",
                                release::release_tag()
                            ),
                            refused: false,
                        });
                    }
                }
                None => {}
            }
        }
        let builds_from_git = step.run.as_deref().is_some_and(|run| {
            run.lines().any(|line| {
                line.contains("cargo install")
                    && line.contains("--git")
                    && line.contains("opentiger")
            })
        });
        if builds_from_git {
            out.problems.push(Problem {
                detail: format!(
                    "job `{job}`: `cargo install --git` of opentiger builds whatever the default branch is at, in every job (maybe not the version the other jobs run)"
                ),
                fix: format!(
                    "install through the action: `uses: {}` with `version: {}` and `install-only: true`",
                    release::action_reference(),
                    release::release_tag()
                ),
                refused: false,
            });
        }
    }
    out
}

/// The `actions/checkout` steps of a job that runs opentiger which leave the job's token behind
/// (`persist-credentials` is true unless set to false).
fn persisted_checkouts(name: &str, job: &Job) -> Vec<Problem> {
    let runs_opentiger = job.steps.iter().any(|s| {
        s.uses.as_deref().and_then(release::action_pin).is_some()
            || s.run.as_deref().is_some_and(|r| r.contains("opentiger"))
    });
    if !runs_opentiger {
        return Vec::new();
    }
    job.steps
        .iter()
        .filter_map(|s| s.uses.as_deref().filter(|u| u.starts_with("actions/checkout@")).map(|u| (s, u)))
        .filter(|(s, _)| !checks_out_without_credentials(s))
        .map(|(_, uses)| Problem {
            detail: format!(
                "job `{name}`: `uses: {uses}` keeps the job's token where its agents can read it (v4 in .git/config, v6 in $RUNNER_TEMP/git-credentials-*.config, included from .git/config)"
            ),
            fix: "add `persist-credentials: false` under the checkout's `with:`: opentiger pushes with its own token (each tick also takes a token left there away while agents run)".to_string(),
            refused: false,
        })
        .collect()
}

/// Whether a checkout step sets `persist-credentials: false`.
fn checks_out_without_credentials(step: &Step) -> bool {
    match step.with.get("persist-credentials") {
        Some(serde_json::Value::Bool(persist)) => !persist,
        Some(serde_json::Value::String(persist)) => persist.trim() == "false",
        _ => false,
    }
}

/// A schedule starting a job more often than this costs more billed minutes than it saves:
/// events start a tick for everything that matters, the schedule is only the heartbeat.
const SHORTEST_SCHEDULE: crate::time::Millis = 15 * crate::time::MINUTE;

/// Each `schedule` cron that runs more often than every [`SHORTEST_SCHEDULE`].
fn frequent_schedules(text: &str) -> Vec<Problem> {
    let Some(parsed) = crate::workflows::parse("", text) else {
        return Vec::new();
    };
    parsed
        .crons
        .iter()
        .filter_map(|cron| {
            let every = crate::workflows::cron_shortest_interval(cron)?;
            (every < SHORTEST_SCHEDULE).then(|| {
                let minutes = every / crate::time::MINUTE;
                Problem {
                    detail: format!(
                        "`cron: \"{cron}\"` starts a tick every {minutes} min: {} billed job minutes on a quiet day, while events already start a tick for what matters",
                        24 * 60 / minutes.max(1)
                    ),
                    fix: "make the heartbeat hourly, `cron: \"17 * * * *\"` (24 billed minutes a day; docs/github.md: What a quiet day costs)".into(),
                    refused: false,
                }
            })
        })
        .collect()
}

/// Every workflow of the repository that runs opentiger, and what is wrong with how.
pub fn checks(repo: &Path) -> Vec<Check> {
    let mut out = Vec::new();
    for path in crate::workflows::files(repo) {
        let Ok(text) = std::fs::read_to_string(&path) else {
            continue;
        };
        let found = inspect(&text);
        if !found.runs_opentiger {
            continue;
        }
        let shown = path
            .strip_prefix(repo)
            .unwrap_or(&path)
            .display()
            .to_string();
        if found.problems.is_empty() {
            let pins = if found.pins.is_empty() {
                String::new()
            } else {
                let mut pins = found.pins.clone();
                pins.dedup();
                format!(" (the action at {})", pins.join(", "))
            };
            out.push(Check::ok(
                "workflow",
                format!("{shown} runs opentiger{pins}"),
            ));
        }
        for problem in found.problems {
            let check = if problem.refused {
                Check::fail
            } else {
                Check::warn
            };
            out.push(check(
                "workflow",
                format!("{shown}: {}", problem.detail),
                problem.fix,
            ));
        }
    }
    if out.is_empty() {
        out.push(Check::warn(
            "workflow",
            "no workflow in .github/workflows mentions opentiger: nothing will tick on GitHub",
            format!("`opentiger init` writes {}", crate::init::WORKFLOW_PATH),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const FANOUT: &str = include_str!("../../../../examples/workflows/opentiger-fanout.yml");

    fn details(text: &str) -> Vec<String> {
        inspect(text)
            .problems
            .into_iter()
            .map(|p| p.detail)
            .collect()
    }

    #[test]
    fn the_example_workflows_run_a_pinned_release() {
        for (name, text) in [
            ("opentiger.yml", crate::init::WORKFLOW),
            ("opentiger-fanout.yml", FANOUT),
        ] {
            let found = inspect(text);
            assert!(found.runs_opentiger, "{name}");
            assert_eq!(found.problems, [], "{name}");
            assert!(!found.pins.is_empty(), "{name} uses the action");
            assert!(
                found.pins.iter().all(|p| *p == release::major_tag()),
                "{name}: {:?}",
                found.pins
            );
        }
    }

    #[test]
    fn branch_pins_missing_versions_and_git_builds_are_reported() {
        let cases: &[(&str, &[&str])] = &[
            (
                "jobs:\n  t:\n    steps:\n      - uses: opentiger/opentiger@main\n",
                &["job `t`: `uses: opentiger/opentiger@main` follows the branch `main`"],
            ),
            (
                "jobs:\n  t:\n    steps:\n      - uses: acme/opentiger@v1\n",
                &["job `t`: `uses: acme/opentiger@v1` has no `version:`"],
            ),
            (
                "jobs:\n  t:\n    steps:\n      - uses: acme/opentiger@v1\n        with:\n          version: v1.2.0\n",
                &[],
            ),
            (
                "jobs:\n  w:\n    steps:\n      - run: cargo install --locked --git https://github.com/opentiger/opentiger opentiger\n",
                &["job `w`: `cargo install --git` of opentiger"],
            ),
            // The repository's own CI builds the action from its checkout.
            (
                "jobs:\n  a:\n    steps:\n      - uses: ./\n        with:\n          mode: local-git\n",
                &[],
            ),
            ("not: [a workflow", &[]),
            (
                "on:\n  schedule:\n    - cron: \"*/5 * * * *\"\njobs:\n  t:\n    steps:\n      - run: opentiger tick\n",
                &["`cron: \"*/5 * * * *\"` starts a tick every 5 min: 288 billed job minutes"],
            ),
            (
                "on:\n  schedule:\n    - cron: \"*/15 * * * *\"\njobs:\n  t:\n    steps:\n      - run: opentiger tick\n",
                &[],
            ),
            // Issue 47: the checkout of a job that runs opentiger leaves no token behind.
            (
                "jobs:\n  t:\n    steps:\n      - uses: actions/checkout@v6\n      - run: opentiger tick\n",
                &["job `t`: `uses: actions/checkout@v6` keeps the job's token where its agents can read it"],
            ),
            (
                "jobs:\n  t:\n    steps:\n      - uses: actions/checkout@v4\n        with:\n          persist-credentials: true\n      - run: opentiger tick\n",
                &["job `t`: `uses: actions/checkout@v4` keeps"],
            ),
            (
                "jobs:\n  t:\n    steps:\n      - uses: actions/checkout@v6\n        with:\n          persist-credentials: false\n      - run: opentiger tick\n  ci:\n    steps:\n      - uses: actions/checkout@v6\n      - run: cargo test\n",
                &[],
            ),
        ];
        for (text, expected) in cases {
            let found = details(text);
            assert_eq!(found.len(), expected.len(), "{text}: {found:?}");
            for (detail, start) in found.iter().zip(expected.iter()) {
                assert!(detail.starts_with(start), "{text}: {detail}");
            }
        }
    }

    #[test]
    fn fan_out_work_jobs_install_through_the_action() {
        let workflow: Workflow = serde_saphyr::from_str(FANOUT).expect("the example parses");
        let work = &workflow.jobs["work"];
        let install = work
            .steps
            .iter()
            .find(|s| s.uses.as_deref().and_then(release::action_pin).is_some())
            .expect("the work job uses the action");
        assert_eq!(
            install.with.get("install-only"),
            Some(&serde_json::Value::Bool(true))
        );
        assert!(work.steps.iter().any(|s| s
            .run
            .as_deref()
            .is_some_and(|r| r.starts_with("opentiger work"))));
    }
}

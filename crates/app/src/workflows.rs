//! The repository's GitHub Actions workflow files, read for the few facts a tick needs about
//! them: which start CI on `pull_request`/`push` (what the `GITHUB_TOKEN` trap silences), which
//! run on opentiger's heads and with which repository secrets (issue 36: what `doctor` names
//! and `scan.ci` holds back), which of those also accept `workflow_dispatch`, which runs
//! opentiger, on what cron and whether it may dispatch workflows (`actions: write`); and how
//! often a cron fires.
//!
//! Parsing is typed (serde-saphyr), so `on:` stays a key. A file that does not parse is left
//! out: this is a diagnosis aid, not a validator (actionlint is).
//!
//! Not for: running or changing workflows, deciding anything (the engine does, on `CiSetup`).

use std::collections::BTreeMap;
use std::path::Path;

use serde::de::IgnoredAny;
use serde::Deserialize;

#[path = "workflows_heads.rs"]
mod heads;

use crate::engine::stall::CiSetup;
use crate::report::heartbeat::Schedule;
use crate::time::{Millis, MINUTE};

/// What one workflow file says, as far as opentiger cares.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Workflow {
    /// The file name (`ci.yml`): what the dispatch API takes as the workflow's id.
    pub file: String,
    /// Its `name:`, or GitHub's stand-in for a workflow without one (its path): what a
    /// `workflow_run` trigger names it by.
    pub name: String,
    /// The workflows whose completion starts it (`on.workflow_run.workflows`).
    pub wakes_on: Vec<String>,
    /// Started for a PR's head: by `pull_request` (or `pull_request_target`) without a path
    /// filter, or by `push` without a branch, tag or path filter (a filtered trigger may
    /// rightly not run on a PR, so it does not make CI expected).
    pub on_push_or_pr: bool,
    /// The events that run it on a head opentiger pushes (issue 36): `push` without a branch
    /// filter or with one that lets `opentiger/*` branches through, `pull_request`,
    /// `pull_request_target`, `workflow_run`.
    pub on_heads: Vec<String>,
    /// The repository secrets it is given: `secrets.NAME` other than `GITHUB_TOKEN`, and
    /// `inherit` for `secrets: inherit`.
    pub secrets: Vec<String>,
    /// Accepts `workflow_dispatch`.
    pub dispatch: bool,
    /// The `schedule` crons.
    pub crons: Vec<String>,
    /// Mentions opentiger (the ticking workflow).
    pub runs_opentiger: bool,
    /// Grants `actions: write` (top level or a job), or `write-all`.
    pub actions_write: bool,
    /// Grants `checks: write` (top level or a job, or `write-all`): `Some(true)`; names
    /// permissions without it: `Some(false)`; names none (the repository's default token
    /// permissions decide): `None`.
    pub checks_write: Option<bool>,
}

#[derive(Deserialize)]
struct RawWorkflow {
    #[serde(default)]
    name: Option<String>,
    #[serde(rename = "on", default)]
    on: Option<Triggers>,
    #[serde(default)]
    permissions: Option<Permissions>,
    #[serde(default)]
    jobs: BTreeMap<String, RawJob>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Triggers {
    One(String),
    Many(Vec<String>),
    Map(BTreeMap<String, Trigger>),
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Trigger {
    Schedule(Vec<Cron>),
    Filtered(Filters),
    Other(IgnoredAny),
}

/// The filters of a `push` or `pull_request` trigger (whether each is there, and the branch
/// patterns of a `push`).
#[derive(Deserialize)]
struct Filters {
    #[serde(default)]
    branches: Option<heads::Patterns>,
    #[serde(default, rename = "branches-ignore")]
    branches_ignore: Option<heads::Patterns>,
    #[serde(default)]
    tags: Option<IgnoredAny>,
    #[serde(default, rename = "tags-ignore")]
    tags_ignore: Option<IgnoredAny>,
    #[serde(default)]
    paths: Option<IgnoredAny>,
    #[serde(default, rename = "paths-ignore")]
    paths_ignore: Option<IgnoredAny>,
    /// `workflow_run`'s workflows.
    #[serde(default)]
    workflows: Option<heads::Patterns>,
}

impl Filters {
    fn paths(&self) -> bool {
        self.paths.is_some() || self.paths_ignore.is_some()
    }

    fn refs(&self) -> bool {
        self.branches.is_some()
            || self.branches_ignore.is_some()
            || self.tags.is_some()
            || self.tags_ignore.is_some()
    }
}

#[derive(Deserialize)]
struct Cron {
    cron: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum Permissions {
    All(String),
    Each(BTreeMap<String, String>),
}

#[derive(Deserialize)]
struct RawJob {
    #[serde(default)]
    permissions: Option<Permissions>,
}

impl Permissions {
    fn writes(&self, scope: &str) -> bool {
        match self {
            Permissions::All(all) => all == "write-all",
            Permissions::Each(each) => each.get(scope).is_some_and(|p| p == "write"),
        }
    }
}

/// One workflow file's facts; `None` when it is not a workflow we can read.
pub fn parse(file: &str, text: &str) -> Option<Workflow> {
    let raw: RawWorkflow = serde_saphyr::from_str(text).ok()?;
    let events: Vec<(String, Option<&Trigger>)> = match &raw.on {
        None => Vec::new(),
        Some(Triggers::One(event)) => vec![(event.clone(), None)],
        Some(Triggers::Many(events)) => events.iter().map(|e| (e.clone(), None)).collect(),
        Some(Triggers::Map(map)) => map.iter().map(|(e, t)| (e.clone(), Some(t))).collect(),
    };
    let has = |names: &[&str]| events.iter().any(|(e, _)| names.contains(&e.as_str()));
    let on_prs = events.iter().any(|(event, trigger)| {
        let filters = match trigger {
            Some(Trigger::Filtered(f)) => Some(f),
            _ => None,
        };
        match event.as_str() {
            "pull_request" | "pull_request_target" => !filters.is_some_and(Filters::paths),
            "push" => !filters.is_some_and(|f| f.paths() || f.refs()),
            _ => false,
        }
    });
    let on_heads = events
        .iter()
        .filter(|(event, trigger)| {
            let filters = match trigger {
                Some(Trigger::Filtered(f)) => Some(f),
                _ => None,
            };
            match event.as_str() {
                "pull_request" | "pull_request_target" | "workflow_run" => true,
                "push" => filters.is_none_or(|f| heads::push_runs_on(f, heads::TASK_BRANCH)),
                _ => false,
            }
        })
        .map(|(event, _)| event.clone())
        .collect();
    let crons = events
        .iter()
        .filter_map(|(_, t)| match t {
            Some(Trigger::Schedule(list)) => Some(list.iter().map(|c| c.cron.clone())),
            _ => None,
        })
        .flatten()
        .collect();
    let blocks: Vec<&Permissions> = raw
        .permissions
        .iter()
        .chain(raw.jobs.values().filter_map(|j| j.permissions.as_ref()))
        .collect();
    let actions_write = blocks.iter().any(|p| p.writes("actions"));
    let checks_write = (!blocks.is_empty()).then(|| blocks.iter().any(|p| p.writes("checks")));
    let wakes_on = events
        .iter()
        .filter(|(event, _)| event == "workflow_run")
        .filter_map(|(_, trigger)| match trigger {
            Some(Trigger::Filtered(f)) => f.workflows.as_ref(),
            _ => None,
        })
        .flat_map(|p| p.list())
        .map(str::to_string)
        .collect();
    Some(Workflow {
        file: file.to_string(),
        name: raw
            .name
            .filter(|n| !n.trim().is_empty())
            .unwrap_or_else(|| format!(".github/workflows/{file}")),
        wakes_on,
        on_push_or_pr: on_prs,
        on_heads,
        secrets: heads::secrets_used(text),
        dispatch: has(&["workflow_dispatch"]),
        crons,
        runs_opentiger: text.contains("opentiger"),
        actions_write,
        checks_write,
    })
}

/// The workflow files of the repository checkout (`.github/workflows/*.yml|yaml`), sorted.
pub fn files(repo: &Path) -> Vec<std::path::PathBuf> {
    let mut files: Vec<_> = std::fs::read_dir(repo.join(".github/workflows"))
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "yml" || x == "yaml"))
        .collect();
    files.sort();
    files
}

/// Every readable workflow of the repository checkout, by file name.
pub fn read(repo: &Path) -> Vec<Workflow> {
    files(repo)
        .iter()
        .filter_map(|path| {
            let name = path.file_name()?.to_string_lossy().into_owned();
            parse(&name, &std::fs::read_to_string(path).ok()?)
        })
        .collect()
}

/// How CI gets started here: whether the token is a workflow's own, which CI it silences, which
/// CI runs on opentiger's heads and which of that opentiger could start itself.
pub fn ci_setup(workflows: &[Workflow], workflow_token: bool) -> CiSetup {
    let ci = || workflows.iter().filter(|w| !w.runs_opentiger);
    let on_heads: Vec<&Workflow> = ci().filter(|w| !w.on_heads.is_empty()).collect();
    CiSetup {
        workflow_token,
        push_workflows: ci()
            .filter(|w| w.on_push_or_pr)
            .map(|w| w.file.clone())
            .collect(),
        head_workflows: on_heads.iter().map(|w| w.file.clone()).collect(),
        lacks_dispatch: on_heads
            .iter()
            .filter(|w| !w.dispatch)
            .map(|w| w.file.clone())
            .collect(),
        may_dispatch: workflows
            .iter()
            .any(|w| w.runs_opentiger && w.actions_write),
    }
}

/// The CI workflows among `workflows`: those that do not run opentiger and run on a pull
/// request or a push of opentiger's heads. Their completion is what a tick waits for, and
/// GitHub sends no `check_suite` event for Actions' own suites: only a `workflow_run` trigger
/// naming them wakes the tick.
pub fn ci_workflows(workflows: &[Workflow]) -> Vec<&Workflow> {
    workflows
        .iter()
        .filter(|w| !w.runs_opentiger)
        .filter(|w| {
            w.on_heads
                .iter()
                .any(|e| matches!(e.as_str(), "pull_request" | "pull_request_target" | "push"))
        })
        .collect()
}

/// The schedule of the workflow that runs opentiger: its most frequent cron.
pub fn schedule(workflows: &[Workflow]) -> Option<Schedule> {
    workflows
        .iter()
        .filter(|w| w.runs_opentiger)
        .flat_map(|w| {
            w.crons.iter().filter_map(|cron| {
                Some(Schedule {
                    file: format!(".github/workflows/{}", w.file),
                    cron: cron.clone(),
                    every: cron_interval(cron)?,
                })
            })
        })
        .min_by_key(|s| s.every)
}

/// In GitHub Actions, a token that is not a personal access token, read from `GITHUB_TOKEN`
/// with no `OPENTIGER_GITHUB_TOKEN` (where an App token goes) set, is the workflow's own.
pub fn is_workflow_token(env: impl Fn(&str) -> Option<String>) -> bool {
    if env("GITHUB_ACTIONS").as_deref() != Some("true") {
        return false;
    }
    if env("OPENTIGER_GITHUB_TOKEN").is_some_and(|t| !t.trim().is_empty()) {
        return false;
    }
    env("GITHUB_TOKEN").is_some_and(|t| {
        !t.trim().is_empty() && !t.starts_with("ghp_") && !t.starts_with("github_pat_")
    })
}

/// The longest time between two runs of a cron (`minute hour * * *` forms; the day fields must
/// be `*`), or `None` when the expression is not one of those.
pub fn cron_interval(cron: &str) -> Option<Millis> {
    let longest = cron_gaps(cron)?.into_iter().max()?;
    Some(i64::from(longest) * MINUTE)
}

/// The shortest time between two runs of a cron (the forms of [`cron_interval`]): how often it
/// can start a job, which is what a quiet day costs in billed minutes.
pub fn cron_shortest_interval(cron: &str) -> Option<Millis> {
    let shortest = cron_gaps(cron)?.into_iter().min()?;
    Some(i64::from(shortest) * MINUTE)
}

/// The minutes between consecutive runs of a cron over a day, the last one wrapping to the next
/// day's first.
fn cron_gaps(cron: &str) -> Option<Vec<u32>> {
    let fields: Vec<&str> = cron.split_whitespace().collect();
    let [minute, hour, day, month, weekday] = fields.as_slice() else {
        return None;
    };
    if [day, month, weekday].iter().any(|f| **f != "*") {
        return None;
    }
    let minutes = expand(minute, 59)?;
    let hours = expand(hour, 23)?;
    let mut fires: Vec<u32> = hours
        .iter()
        .flat_map(|h| minutes.iter().map(move |m| h * 60 + m))
        .collect();
    fires.sort_unstable();
    let first = *fires.first()?;
    let wrap = first + 24 * 60 - fires.last()?;
    Some(
        fires
            .windows(2)
            .map(|w| w[1] - w[0])
            .chain(std::iter::once(wrap))
            .collect(),
    )
}

/// One cron field's values: `*`, `*/n`, `a`, `a-b`, `a-b/n`, and lists of those.
fn expand(field: &str, max: u32) -> Option<Vec<u32>> {
    let mut out = Vec::new();
    for part in field.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (r, s.parse::<u32>().ok().filter(|s| *s > 0)?),
            None => (part, 1),
        };
        let (from, to) = match range {
            "*" => (0, max),
            _ => match range.split_once('-') {
                Some((a, b)) => (a.parse().ok()?, b.parse().ok()?),
                None => {
                    let at: u32 = range.parse().ok()?;
                    (at, if part.contains('/') { max } else { at })
                }
            },
        };
        if from > to || to > max {
            return None;
        }
        out.extend((from..=to).step_by(step as usize));
    }
    out.sort_unstable();
    out.dedup();
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crons_become_their_longest_gap() {
        #[rustfmt::skip]
        let cases: Vec<(&str, Option<i64>)> = vec![
            ("*/30 * * * *", Some(30)),
            ("0 * * * *", Some(60)),
            ("15,45 * * * *", Some(30)),
            ("0 */6 * * *", Some(360)),
            ("0 9-17 * * *", Some(16 * 60)),
            ("*/5 * * * *", Some(5)),
            ("0 0 * * 1", None),
            ("not a cron", None),
            ("61 * * * *", None),
        ];
        for (cron, minutes) in cases {
            assert_eq!(cron_interval(cron), minutes.map(|m| m * MINUTE), "{cron}");
        }
    }

    #[test]
    fn crons_become_their_shortest_gap() {
        #[rustfmt::skip]
        let cases: Vec<(&str, Option<i64>)> = vec![
            ("17 * * * *", Some(60)),
            ("*/30 * * * *", Some(30)),
            ("0,5 * * * *", Some(5)),
            ("0 9-17 * * *", Some(60)),
            ("*/5 * * * *", Some(5)),
            ("0 0 * * *", Some(24 * 60)),
            ("0 0 * * 1", None),
        ];
        for (cron, minutes) in cases {
            assert_eq!(
                cron_shortest_interval(cron),
                minutes.map(|m| m * MINUTE),
                "{cron}"
            );
        }
    }

    #[test]
    fn workflows_say_what_starts_them() {
        let ci = "name: CI\non:\n  push:\n    branches: [main]\n  pull_request:\n  workflow_dispatch:\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: cargo test\n";
        let w = parse("ci.yml", ci).expect("a workflow");
        assert!(w.on_push_or_pr && w.dispatch && !w.runs_opentiger && !w.actions_write);
        let list = parse("lint.yml", "on: [push, pull_request]\njobs: {}\n").expect("a workflow");
        assert!(list.on_push_or_pr && !list.dispatch);
        #[rustfmt::skip]
        let filtered = [
            ("on:\n  push:\n    branches: [main]\n", false),
            ("on:\n  push:\n    tags: ['v*']\n", false),
            ("on:\n  push:\n    paths: ['src/**']\n", false),
            ("on:\n  pull_request:\n    paths-ignore: ['docs/**']\n", false),
            ("on:\n  pull_request:\n    branches: [main]\n    types: [opened, synchronize]\n", true),
            ("on:\n  push:\n", true),
            ("on: push\n", true),
            ("on:\n  release:\n    types: [published]\n", false),
        ];
        for (on, runs_on_prs) in filtered {
            let w = parse("w.yml", &format!("{on}jobs: {{}}\n")).expect("a workflow");
            assert_eq!(w.on_push_or_pr, runs_on_prs, "{on}");
        }
        let tick = include_str!("../../../examples/workflows/opentiger.yml");
        let w = parse("opentiger.yml", tick).expect("the example workflow");
        assert_eq!(w.crons, vec!["17 * * * *"]);
        let every = schedule(std::slice::from_ref(&w)).map(|s| s.every);
        assert_eq!(every, Some(60 * MINUTE));
        assert!(w.runs_opentiger && w.dispatch && !w.on_push_or_pr);
        let with_actions = tick.replace("  statuses: read", "  actions: write\n  statuses: read");
        assert!(
            parse("opentiger.yml", &with_actions)
                .expect("parses")
                .actions_write
        );
        assert_eq!(parse("bad.yml", "on: [\n"), None);
    }

    #[test]
    fn the_trap_and_what_can_heal_it() {
        let ci = Workflow {
            file: "ci.yml".into(),
            on_push_or_pr: true,
            on_heads: vec!["pull_request".into()],
            dispatch: true,
            ..Workflow::default()
        };
        let tick = |actions_write| Workflow {
            file: "opentiger.yml".into(),
            runs_opentiger: true,
            dispatch: true,
            actions_write,
            ..Workflow::default()
        };
        let setup = ci_setup(&[ci.clone(), tick(true)], true);
        assert!(setup.is_trap());
        assert_eq!(setup.push_workflows, vec!["ci.yml"]);
        assert_eq!(setup.dispatchable(), vec!["ci.yml"]);
        assert!(ci_setup(&[ci.clone(), tick(false)], true)
            .dispatchable()
            .is_empty());
        assert!(!ci_setup(&[ci.clone(), tick(true)], false).is_trap());
        assert!(!ci_setup(&[tick(true)], true).is_trap());
        // Issue 36: every CI workflow on opentiger's heads is dispatched, not only the first.
        let lint = Workflow {
            file: "lint.yml".into(),
            ..ci.clone()
        };
        let deploy = Workflow {
            file: "deploy.yml".into(),
            dispatch: false,
            ..ci.clone()
        };
        let setup = ci_setup(&[ci, lint, deploy, tick(true)], true);
        assert_eq!(setup.dispatchable(), vec!["ci.yml", "lint.yml"]);
        assert_eq!(setup.lacks_dispatch, vec!["deploy.yml"]);

        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        #[rustfmt::skip]
        let cases: Vec<(&[(&str, &str)], bool)> = vec![
            (&[("GITHUB_ACTIONS", "true"), ("GITHUB_TOKEN", "ghs_abc")], true),
            (&[("GITHUB_ACTIONS", "true"), ("GITHUB_TOKEN", "ghp_abc")], false),
            (&[("GITHUB_ACTIONS", "true"), ("GITHUB_TOKEN", "ghs_abc"), ("OPENTIGER_GITHUB_TOKEN", "ghs_app")], false),
            (&[("GITHUB_TOKEN", "ghs_abc")], false),
        ];
        for (pairs, want) in cases {
            assert_eq!(is_workflow_token(env(pairs)), want, "{pairs:?}");
        }
    }
}

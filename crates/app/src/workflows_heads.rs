//! Issue 36: whether a workflow runs on a head opentiger pushes (a `push` to an `opentiger/*`
//! branch, by GitHub's branch filters) and which repository secrets its text hands its steps.
//! Part of `workflows` (`#[path]`), which reads the files and every other fact of a workflow.
//! Not for: what doctor says of such a workflow (`doctor::ci`) or when opentiger starts CI on its
//! heads (`engine::ci_start`).

use serde::Deserialize;

use super::Filters;

/// Branch patterns: a list, or (tolerated) one pattern.
#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum Patterns {
    One(String),
    Many(Vec<String>),
}

impl Patterns {
    pub(super) fn list(&self) -> Vec<&str> {
        match self {
            Patterns::One(p) => vec![p.as_str()],
            Patterns::Many(ps) => ps.iter().map(String::as_str).collect(),
        }
    }
}

/// A branch opentiger pushes, to try `push` branch filters on.
pub(super) const TASK_BRANCH: &str = "opentiger/task-0123456789ab";

/// Whether GitHub's branch filters let a push to `branch` through: the last pattern of
/// `branches` that matches decides (a `!` pattern excludes); `branches-ignore` excludes what
/// it matches. A pattern this reader cannot judge counts as matching (better named by
/// `doctor` once too often than never).
pub(super) fn push_runs_on(filters: &Filters, branch: &str) -> bool {
    let matches =
        |pattern: &str| crate::policy::Glob::new(pattern).map_or(true, |g| g.matches(branch));
    if let Some(ignore) = &filters.branches_ignore {
        return !ignore.list().iter().any(|p| matches(p));
    }
    let Some(branches) = &filters.branches else {
        return filters.tags.is_none() && filters.tags_ignore.is_none();
    };
    let mut runs = false;
    for pattern in branches.list() {
        match pattern.strip_prefix('!') {
            Some(excluded) if matches(excluded) => runs = false,
            Some(_) => {}
            None if matches(pattern) => runs = true,
            None => {}
        }
    }
    runs
}

/// The repository secrets a workflow's text hands to its steps: `secrets.NAME` (or
/// `secrets['NAME']`) other than the workflow's own `GITHUB_TOKEN`, and `secrets: inherit`.
pub(super) fn secrets_used(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    for (i, _) in text.match_indices("secrets") {
        let before = text[..i].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '-') {
            continue;
        }
        let rest = &text[i + "secrets".len()..];
        let name: String = if let Some(after) = rest.strip_prefix('.') {
            after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
                .collect()
        } else if let Some(after) = rest.strip_prefix("['").or_else(|| rest.strip_prefix("[\"")) {
            after
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '-')
                .collect()
        } else if rest
            .trim_start()
            .strip_prefix(':')
            .is_some_and(|v| v.trim_start().starts_with("inherit"))
        {
            "inherit".to_string()
        } else {
            continue;
        };
        if !name.is_empty() && !name.eq_ignore_ascii_case("GITHUB_TOKEN") && !names.contains(&name)
        {
            names.push(name);
        }
    }
    names
}

#[cfg(test)]
mod tests {
    use super::super::parse;

    /// Issue 36: which events run a workflow on a head opentiger pushes, and which repository
    /// secrets it hands its steps.
    #[test]
    fn workflows_say_whether_they_run_on_opentigers_heads_and_with_which_secrets() {
        #[rustfmt::skip]
        let cases: Vec<(&str, &[&str])> = vec![
            ("on:\n  push:\n", &["push"]),
            ("on: [push, pull_request]\n", &["pull_request", "push"]),
            ("on:\n  push:\n    branches: [main]\n", &[]),
            ("on:\n  push:\n    branches: ['opentiger/**']\n", &["push"]),
            ("on:\n  push:\n    branches: ['**', '!opentiger/**']\n", &[]),
            ("on:\n  push:\n    branches-ignore: ['opentiger/*']\n", &[]),
            ("on:\n  push:\n    branches-ignore: [main]\n", &["push"]),
            ("on:\n  push:\n    tags: ['v*']\n", &[]),
            ("on:\n  push:\n    paths: ['src/**']\n", &["push"]),
            ("on:\n  pull_request:\n    branches: [main]\n", &["pull_request"]),
            ("on:\n  pull_request_target:\n", &["pull_request_target"]),
            ("on:\n  workflow_run:\n    workflows: [CI]\n", &["workflow_run"]),
            ("on:\n  schedule:\n    - cron: '0 * * * *'\n  workflow_dispatch:\n", &[]),
        ];
        for (on, events) in cases {
            let w = parse("w.yml", &format!("{on}jobs: {{}}\n")).expect("a workflow");
            let mut got = w.on_heads.clone();
            got.sort();
            assert_eq!(got, *events, "{on}");
        }
        let text = "on: push\njobs:\n  t:\n    steps:\n      - run: ./deploy\n        env:\n          KEY: ${{ secrets.DEPLOY_KEY }}\n          T: ${{ secrets.GITHUB_TOKEN }}\n          N: ${{ secrets['NPM_TOKEN'] }}\n          K: ${{ secrets.DEPLOY_KEY }}\n  call:\n    uses: ./.github/workflows/x.yml\n    secrets: inherit\n";
        let w = parse("w.yml", text).expect("a workflow");
        assert_eq!(w.secrets, vec!["DEPLOY_KEY", "NPM_TOKEN", "inherit"]);
        let plain = parse("w.yml", "on: push\njobs:\n  t:\n    env:\n      T: ${{ secrets.GITHUB_TOKEN }}\n      mysecrets: x\n").expect("a workflow");
        assert!(plain.secrets.is_empty(), "{:?}", plain.secrets);
    }
}

//! The github-mode checks: the remote, the repository name, the token (named by its prefix, never
//! printed), whether opentiger's checks can be check runs or go out as commit statuses, CI
//! (`doctor::ci`: the `GITHUB_TOKEN` trap, workflows that would run an agent's head with
//! repository secrets before review), and with `--online` what GitHub says the token may do.
//! Not for: the workflow that runs opentiger and its pin (`doctor::workflow`), or a tick's GitHub
//! calls (`forge`; this borrows its client for the one `--online` request).

use std::path::Path;

use http::Method;
use serde::Deserialize;

use super::ci::token_source;
use super::{Check, Vars};
use crate::config::Config;
use crate::forge::github::{ForgeError, GithubClient};
use crate::git::Git;
use crate::workflows::Workflow;

pub fn checks(config: &Config, repo: &Path, vars: Vars<'_>, online: bool) -> Vec<Check> {
    let mut out = vec![remote(config, repo), repository(repo, vars)];
    let token = token(vars);
    let have_token = token.level != super::Level::Fail;
    out.push(token);
    out.push(super::ci::ci_trigger(vars));
    let workflows = crate::workflows::read(repo);
    out.push(super::ci::ci_secrets(config.scan.ci, vars, &workflows));
    out.extend(super::ci::ci_wake(&workflows));
    if have_token {
        out.push(check_writes(vars, &workflows));
    }
    if online && have_token {
        out.extend(permissions(config, vars));
    }
    out
}

fn remote(config: &Config, repo: &Path) -> Check {
    match Git::new(repo).try_run(&["remote", "get-url", &config.remote]) {
        Ok(Some(_)) => Check::ok(
            "remote",
            format!("`{}`: task branches and the state are pushed there", config.remote),
        ),
        _ => Check::fail(
            "remote",
            format!("no remote `{}`: github mode pushes task branches and the state to it", config.remote),
            "run in a clone of the GitHub repository (actions/checkout in Actions), or set `remote:` to the remote's name",
        ),
    }
}

/// `GITHUB_REPOSITORY`, which the tick needs; when it is missing, a guess from `origin`.
fn repository(repo: &Path, vars: Vars<'_>) -> Check {
    let api = vars("GITHUB_API_URL").filter(|u| !u.trim().is_empty());
    let api_note = api.map(|u| format!(" through {u}")).unwrap_or_default();
    match vars("GITHUB_REPOSITORY") {
        Some(r) if r.split('/').count() == 2 && !r.starts_with('/') && !r.ends_with('/') => {
            Check::ok("repository", format!("{r}{api_note}"))
        }
        other => {
            let guess = Git::new(repo)
                .try_run(&["remote", "get-url", "origin"])
                .ok()
                .flatten()
                .and_then(|url| owner_and_name(&url))
                .unwrap_or_else(|| "owner/name".to_string());
            let check = Check::fail(
                "repository",
                match &other {
                    Some(r) => format!("GITHUB_REPOSITORY `{r}` is not owner/name"),
                    None => "GITHUB_REPOSITORY is not set: which GitHub repository?".to_string(),
                },
                format!("export GITHUB_REPOSITORY={guess} (GitHub Actions sets it)"),
            );
            match other {
                None => check.provided_by_actions(),
                Some(_) => check,
            }
        }
    }
}

pub use crate::forge::github::owner_and_name;

/// What kind of token a value is, by GitHub's documented prefixes; the value is never shown.
pub fn token_kind(token: &str) -> &'static str {
    let prefixes = [
        ("github_pat_", "a fine-grained personal access token"),
        ("ghp_", "a personal access token (classic)"),
        (
            "ghs_",
            "an installation token (the workflow's GITHUB_TOKEN or a GitHub App's)",
        ),
        ("gho_", "an OAuth token"),
        ("ghu_", "a GitHub App user token"),
    ];
    prefixes
        .iter()
        .find(|(p, _)| token.starts_with(p))
        .map_or("a token of unknown kind", |(_, kind)| kind)
}

fn token(vars: Vars<'_>) -> Check {
    match token_source(vars) {
        Some((name, value)) if value.trim().is_empty() => {
            return Check::fail(
                "token",
                format!("{name} is set but empty (the tick reads it first, so it finds no token)"),
                format!("set {name} to the token, or unset it"),
            )
        }
        Some((name, value)) => {
            return Check::ok("token", format!("{name} is set: {}", token_kind(&value)))
        }
        None => {}
    }
    if vars("GH_TOKEN").is_some_and(|v| !v.trim().is_empty()) {
        return Check::fail(
            "token",
            "GH_TOKEN is set, but opentiger reads GITHUB_TOKEN or OPENTIGER_GITHUB_TOKEN",
            "export GITHUB_TOKEN=\"$GH_TOKEN\"",
        );
    }
    Check::fail(
        "token",
        "no GitHub token: neither OPENTIGER_GITHUB_TOKEN nor GITHUB_TOKEN is set",
        "in Actions the opentiger action passes its `token` input (default: the workflow's GITHUB_TOKEN); locally: export GITHUB_TOKEN=\"$(gh auth token)\"",
    )
    .provided_by_actions()
}

/// Issue 28: whether opentiger's own checks (`opentiger / verify`, `opentiger / judge`) can be
/// check runs with this token, or go out as commit statuses. Only GitHub Apps (and the
/// workflow's `GITHUB_TOKEN`, an App's installation token) write check runs; the workflow's
/// token only with `checks: write`.
fn check_writes(vars: Vars<'_>, workflows: &[Workflow]) -> Check {
    const NAME: &str = "own checks";
    let Some((source, value)) = token_source(vars) else {
        return Check::ok(NAME, "no token to check");
    };
    if !value.starts_with("ghs_") {
        return Check::ok(
            NAME,
            format!(
                "commit statuses: {} cannot write check runs (only GitHub Apps and the workflow's GITHUB_TOKEN can), so opentiger / verify and opentiger / judge are statuses (statuses: write), without output or annotations",
                token_kind(&value)
            ),
        );
    }
    let workflow_token =
        source == "GITHUB_TOKEN" && vars("GITHUB_ACTIONS").as_deref() == Some("true");
    if !workflow_token {
        return Check::ok(
            NAME,
            "check runs, if the GitHub App has the Checks permission (read and write); otherwise commit statuses, and each tick says so once",
        );
    }
    let granted = workflows
        .iter()
        .filter(|w| w.runs_opentiger)
        .map(|w| w.checks_write)
        .next()
        .flatten();
    match granted {
        Some(true) => Check::ok(NAME, "check runs: the workflow grants `checks: write`"),
        Some(false) => Check::warn(
            NAME,
            "commit statuses: the workflow's permissions do not grant `checks: write`, so opentiger / verify and opentiger / judge cannot be check runs",
            "add `checks: write` to the workflow's `permissions:` (examples/workflows/opentiger.yml has it)",
        ),
        None => Check::ok(
            NAME,
            "check runs if the repository's default workflow permissions allow them, else commit statuses; grant `checks: write` in the workflow to be sure",
        ),
    }
}

#[derive(Deserialize)]
struct RepoAnswer {
    #[serde(default)]
    permissions: Option<Permissions>,
    #[serde(default)]
    default_branch: Option<String>,
}

#[derive(Deserialize)]
struct Permissions {
    #[serde(default)]
    admin: bool,
    #[serde(default)]
    push: bool,
    #[serde(default)]
    pull: bool,
}

/// `--online`: one `GET /repos/{owner}/{repo}` with the token.
fn permissions(config: &Config, vars: Vars<'_>) -> Vec<Check> {
    let client = match GithubClient::from_env(None, vars) {
        Ok(c) => c,
        // The repository or token check above already says what is missing.
        Err(_) => return Vec::new(),
    };
    let name = client.repo.clone();
    let answer: Result<RepoAnswer, ForgeError> = client.call(
        Method::GET,
        &client.path(""),
        None,
        crate::time::Timestamp::now(),
    );
    let mut out = Vec::new();
    match answer {
        Ok(repo) => {
            out.push(match repo.permissions {
                Some(p) if p.push && p.pull => Check::ok(
                    "permissions",
                    format!(
                        "GitHub says this token may push to {name}{}",
                        if p.admin { " (and administer it)" } else { "" }
                    ),
                ),
                Some(_) => Check::fail(
                    "permissions",
                    format!("GitHub says this token cannot push to {name}: task branches, the state and merges need it"),
                    "use a token with write access (in Actions: `permissions: contents: write` in the workflow, or an App token)",
                ),
                None => Check::ok(
                    "permissions",
                    format!("GitHub accepts the token for {name} (installation tokens list no permissions: the workflow's `permissions:` block decides)"),
                ),
            });
            if let Some(default) = repo.default_branch.filter(|b| *b != config.base_branch) {
                out.push(Check::warn(
                    "permissions",
                    format!(
                        "{name}'s default branch is {default}, but base_branch is {}",
                        config.base_branch
                    ),
                    "set `base_branch` to the branch PRs should go into (the example workflow checks out the default branch)",
                ));
            }
        }
        Err(ForgeError::Unauthorized {
            status, message, ..
        }) => out.push(Check::fail(
            "permissions",
            format!("GitHub refused the token for {name} ({status}: {message})"),
            "set GITHUB_TOKEN (or OPENTIGER_GITHUB_TOKEN) to a valid token with access to the repository",
        )),
        Err(ForgeError::Http { status: 404, .. }) => out.push(Check::fail(
            "permissions",
            format!("{name} was not found with this token (404)"),
            "check GITHUB_REPOSITORY, and that the token can see the repository",
        )),
        Err(ForgeError::RateLimited { until, .. }) => out.push(Check::warn(
            "permissions",
            format!("GitHub's rate limit is exhausted until {until}"),
            "wait; ticks meanwhile wait too (and exit 0)",
        )),
        Err(e) => out.push(Check::fail(
            "permissions",
            format!("could not ask GitHub about {name}: {e}"),
            "check GITHUB_API_URL (GitHub Enterprise) and the network",
        )),
    }
    out
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::doctor::Level;

    pub(in crate::doctor) fn vars(
        pairs: &'static [(&'static str, &'static str)],
    ) -> impl Fn(&str) -> Option<String> {
        move |k: &str| {
            pairs
                .iter()
                .find(|(name, _)| *name == k)
                .map(|(_, v)| v.to_string())
        }
    }

    /// Variables, the expected level, and how the detail starts.
    type TokenCase = (&'static [(&'static str, &'static str)], Level, &'static str);

    #[test]
    fn tokens_are_described_never_shown() {
        let cases: &[TokenCase] = &[
            (
                &[("GITHUB_TOKEN", "ghs_abcdef123456")],
                Level::Ok,
                "GITHUB_TOKEN is set: an installation token",
            ),
            (
                &[
                    ("OPENTIGER_GITHUB_TOKEN", "ghp_abcdef123456"),
                    ("GITHUB_TOKEN", "ghs_x"),
                ],
                Level::Ok,
                "OPENTIGER_GITHUB_TOKEN is set: a personal access token (classic)",
            ),
            (
                &[("GH_TOKEN", "gho_abcdef123456")],
                Level::Fail,
                "GH_TOKEN is set, but",
            ),
            (
                &[("GITHUB_TOKEN", "  ")],
                Level::Fail,
                "GITHUB_TOKEN is set but empty",
            ),
            (
                &[
                    ("OPENTIGER_GITHUB_TOKEN", ""),
                    ("GITHUB_TOKEN", "ghs_abcdef123456"),
                ],
                Level::Fail,
                "OPENTIGER_GITHUB_TOKEN is set but empty",
            ),
            (&[], Level::Fail, "no GitHub token"),
        ];
        for (env, level, detail) in cases {
            let lookup = vars(env);
            let check = token(&lookup);
            assert_eq!(check.level, *level, "{env:?}");
            assert!(
                check.detail.starts_with(detail),
                "{env:?}: {}",
                check.detail
            );
            assert!(
                !check.detail.contains("abcdef"),
                "the token leaked: {}",
                check.detail
            );
        }
    }

    /// The App's permissions are said the same way in the fix, the docs and the workflow's
    /// comment: all five of the permissions table (docs/github.md).
    #[test]
    fn the_doctor_says_whether_own_checks_are_check_runs_or_statuses() {
        let tick = |checks_write| Workflow {
            file: "opentiger.yml".into(),
            runs_opentiger: true,
            checks_write,
            ..Workflow::default()
        };
        type Vars = &'static [(&'static str, &'static str)];
        #[rustfmt::skip]
        let cases: &[(Vars, Option<bool>, Level, &str)] = &[
            (&[("GITHUB_TOKEN", "ghp_abc")], None, Level::Ok, "commit statuses: a personal access token (classic) cannot write check runs"),
            (&[("GITHUB_TOKEN", "github_pat_abc")], Some(true), Level::Ok, "commit statuses"),
            (&[("GITHUB_TOKEN", "ghs_abc"), ("GITHUB_ACTIONS", "true")], Some(true), Level::Ok, "check runs: the workflow grants `checks: write`"),
            (&[("GITHUB_TOKEN", "ghs_abc"), ("GITHUB_ACTIONS", "true")], Some(false), Level::Warn, "do not grant `checks: write`"),
            (&[("GITHUB_TOKEN", "ghs_abc"), ("GITHUB_ACTIONS", "true")], None, Level::Ok, "default workflow permissions"),
            (&[("OPENTIGER_GITHUB_TOKEN", "ghs_abc"), ("GITHUB_ACTIONS", "true")], Some(false), Level::Ok, "if the GitHub App has the Checks permission"),
        ];
        for (pairs, granted, level, says) in cases {
            let check = check_writes(&vars(pairs), &[tick(*granted)]);
            assert_eq!(check.level, *level, "{pairs:?}: {}", check.detail);
            assert!(check.detail.contains(says), "{pairs:?}: {}", check.detail);
        }
    }

    #[test]
    fn the_app_token_fix_lists_every_permission_the_docs_do() {
        let permissions =
            "contents, issues, pull requests and checks: read and write; commit statuses: read";
        let fix = super::super::ci::APP_TOKEN_FIX;
        assert!(fix.contains(permissions), "{fix}");
        let docs = include_str!("../../../../docs/github.md").replace('\n', " ");
        assert!(docs.contains(permissions), "docs/github.md");
        let started = include_str!("../../../../docs/getting-started.md").replace('\n', " ");
        assert!(started.contains(permissions), "docs/getting-started.md");
        let workflow = crate::init::WORKFLOW
            .lines()
            .map(|l| l.trim().trim_start_matches('#').trim())
            .collect::<Vec<_>>()
            .join(" ");
        assert!(workflow.contains(permissions), "the workflow's comment");
    }

    #[test]
    fn owner_and_name_come_from_any_remote_url_without_credentials() {
        for (url, expected) in [
            ("https://github.com/acme/widgets.git", Some("acme/widgets")),
            (
                "https://x-access-token:ghs_secret@github.com/acme/widgets",
                Some("acme/widgets"),
            ),
            ("git@github.com:acme/widgets.git", Some("acme/widgets")),
            (
                "ssh://git@ghe.example.com/acme/widgets/",
                Some("acme/widgets"),
            ),
            ("widgets", None),
        ] {
            assert_eq!(owner_and_name(url).as_deref(), expected, "{url}");
        }
    }
}

//! What `opentiger doctor [--online]` checks: would a tick work here? One line per check —
//! `ok`, `warn` or `fail` — and for each problem the fix.
//!
//! Offline by default: it reads the configuration, the repository, PATH and the environment and
//! makes no network call, so it is quick and safe anywhere (a laptop, a workflow step, a test).
//! `--online` also asks GitHub what the token may do (one `GET /repos/{owner}/{repo}`) and the
//! remote whether the state ref exists (`git ls-remote`). A token is never printed. In github
//! mode it also reads the workflows: one must run opentiger, pinned to a release (`workflow`).
//!
//! Exit code: 0 when no check failed (warnings allowed), 2 when the configuration does not load
//! (as every command exits on a configuration error, issue 49), 1 for any other failure.
//!
//! Not for: fixing anything. Every check only reads.

mod agents;
mod ci;
mod credentials;
mod files;
mod github;
mod learned;
mod providers;
mod timing;
mod workflow;
mod yaml_keys;

use std::path::Path;

use crate::config::{self, Config, ConfigSource, StoreKind};
use crate::git::Git;
use crate::model::Mode;
use crate::statebranch::StateRef;
use crate::tick::ContextOptions;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    Ok,
    Warn,
    Fail,
}

impl Level {
    pub fn word(self) -> &'static str {
        match self {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Fail => "fail",
        }
    }
}

/// One check's result.
#[derive(Clone, Debug, PartialEq)]
pub struct Check {
    pub level: Level,
    pub name: &'static str,
    pub detail: String,
    /// What to do about a warning or a failure.
    pub fix: Option<String>,
    /// What it looks for is what GitHub Actions provides a tick (issue 40): the repository's
    /// name, the token, the agent CLI the workflow installs and the key it passes. Outside
    /// Actions in github mode, a problem with it is needed only to tick from this machine.
    pub actions_provides: bool,
}

impl Check {
    pub fn ok(name: &'static str, detail: impl Into<String>) -> Check {
        Check {
            level: Level::Ok,
            name,
            detail: detail.into(),
            fix: None,
            actions_provides: false,
        }
    }
    pub fn warn(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            level: Level::Warn,
            name,
            detail: detail.into(),
            fix: Some(fix.into()),
            actions_provides: false,
        }
    }
    pub fn fail(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check {
            level: Level::Fail,
            name,
            detail: detail.into(),
            fix: Some(fix.into()),
            actions_provides: false,
        }
    }
}

impl Check {
    /// The check is of something GitHub Actions provides ([`Check::actions_provides`]).
    pub fn provided_by_actions(mut self) -> Check {
        self.actions_provides = true;
        self
    }
}

/// Where `doctor` runs, for what it counts: outside GitHub Actions in github mode, problems
/// with what Actions provides are listed apart and do not fail it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Where {
    /// In GitHub Actions, or in a local mode: every check counts.
    Here,
    /// Outside Actions in github mode, where ticks run in Actions.
    OutsideActions,
}

impl Where {
    /// Where a `doctor` of `mode` with `vars` runs.
    pub fn of(mode: Option<Mode>, vars: Vars<'_>) -> Where {
        let in_actions = vars("GITHUB_ACTIONS").as_deref() == Some("true");
        match (mode, in_actions) {
            (Some(Mode::Github), false) => Where::OutsideActions,
            _ => Where::Here,
        }
    }

    /// Whether `check` is a problem here (a failure that counts), not one Actions solves.
    fn only_for_here(self, check: &Check) -> bool {
        self == Where::OutsideActions && check.actions_provides && check.level != Level::Ok
    }
}

/// The checks that fail `doctor` where it runs.
pub fn failures(checks: &[Check], at: Where) -> usize {
    checks
        .iter()
        .filter(|c| c.level == Level::Fail && !at.only_for_here(c))
        .count()
}

/// Whether the failure is the configuration's (it does not load, or `--mode` names no mode):
/// `doctor` then exits 2, as every command does on a configuration error.
pub fn configuration_failed(checks: &[Check]) -> bool {
    checks
        .iter()
        .any(|c| c.level == Level::Fail && matches!(c.name, "config" | "mode"))
}

/// The environment as the checks see it: a variable lookup, so tests pass plain values.
pub type Vars<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The mode `doctor` checks: `--mode`, else the configuration's; `None` when neither is
/// readable (the checks say why).
pub fn mode_of(options: &ContextOptions) -> Option<Mode> {
    if let Some(mode) = options.mode.as_deref() {
        return mode.parse().ok();
    }
    config::load(&options.config_path(), options.config.is_some())
        .ok()
        .map(|(config, _)| config.mode)
}

/// Every check, in the order a person would fix them.
pub fn checks(options: &ContextOptions, online: bool, vars: Vars<'_>) -> Vec<Check> {
    let repo = options.repo.as_path();
    let mut out = Vec::new();
    let path = options.config_path();
    let (mut config, source) = match config::load_checked(
        &path,
        options.config.is_some(),
        &crate::verify::config_problem,
    ) {
        Ok(loaded) => loaded,
        Err(e) => {
            // The loader's own message names file, line and key; its fix goes on the fix line.
            let text = e.to_string();
            let (detail, _) = split_fix(&text);
            out.push(Check::fail(
                "config",
                detail,
                format!(
                    "{} (the other checks need a configuration that loads)",
                    e.fix
                ),
            ));
            return out;
        }
    };
    out.push(match &source {
        ConfigSource::File(p) => Check::ok("config", format!("{} loads", p.display())),
        ConfigSource::Defaults => Check::warn(
            "config",
            format!(
                "no {}: every key has its default (github mode, claude-code agents)",
                path.display()
            ),
            "`opentiger init` writes a commented one",
        ),
    });
    if let Some(mode) = &options.mode {
        match mode.parse::<Mode>() {
            Ok(m) => config.mode = m,
            Err(e) => {
                out.push(Check::fail(
                    "mode",
                    format!("--mode: {e}"),
                    "use github, local-git or direct",
                ));
                return out;
            }
        }
    }
    out.push(Check::ok("mode", describe_mode(&config)));

    let git_ok = Git::is_repository(repo);
    if git_ok {
        out.push(base_branch(&config, repo));
    } else {
        out.push(Check::fail(
            "git",
            format!("{} is not a git repository (or git is missing)", repo.display()),
            "run `git init` and commit once (in Actions: actions/checkout), or point --repo at the repository",
        ));
    }
    if config.mode == Mode::Github {
        out.extend(github::checks(&config, repo, vars, online));
    }
    out.extend(agents::checks(&config, repo, vars));
    out.extend(providers::checks(&config, vars, online));
    if git_ok {
        out.extend(files::checks(&config, repo));
    }
    if git_ok {
        out.extend(state(&config, repo, online));
        out.extend(learned::checks(options));
    }
    if config.mode == Mode::Github {
        out.extend(workflow::checks(repo));
    }
    let ci_gates = config.mode == Mode::Github
        && config.merge.require_checks
        && !crate::workflows::ci_workflows(&crate::workflows::read(repo)).is_empty();
    out.extend(timing::tick_time(&config, ci_gates));
    out.extend(protections(&config, repo, git_ok, vars));
    out.push(held_paths(&config));
    out
}

/// Issue 48: the paths a change to which waits for a person, as in force here.
fn held_paths(config: &Config) -> Check {
    match config.held_paths() {
        Ok(held) => {
            let patterns: Vec<&str> = held.patterns().map(|(p, _)| p).collect();
            let except: Vec<&str> = held.exceptions().collect();
            let except = match except.is_empty() {
                true => String::new(),
                false => format!(
                    "; taken out (policy.held_paths_except): {}",
                    except.join(", ")
                ),
            };
            let names = match config.policy.portable_names {
                true => "names a change adds must check out on Windows and macOS too",
                false => {
                    "names are not checked for Windows and macOS (policy.portable_names: false)"
                }
            };
            Check::ok(
                "held paths",
                format!(
                    "a change to one of these {} paths waits for a person's approval of its commit (why each: docs/security.md): {}{except}; {names}",
                    patterns.len(),
                    patterns.join(", ")
                ),
            )
        }
        Err(e) => Check::fail(
            "held paths",
            format!("a pattern of policy.held_paths or policy.held_paths_except is invalid: {e}"),
            "fix the pattern in .opentiger.yml",
        ),
    }
}

/// What keeps agents from the runner's credentials here, and credentials a checkout left where
/// an agent could read them.
fn protections(config: &Config, repo: &Path, git_ok: bool, vars: Vars<'_>) -> Vec<Check> {
    let mut out: Vec<Check> = crate::sandbox::protections(config)
        .into_iter()
        .map(|p| {
            if p.in_force {
                Check::ok("sandbox", format!("{}: {}", p.name, p.detail))
            } else {
                let check = if config.sandbox.require {
                    Check::fail
                } else {
                    Check::warn
                };
                check("sandbox", format!("{}: {}", p.name, p.detail), p.fix)
            }
        })
        .collect();
    out.push(writable_check(config));
    if git_ok {
        out.extend(credentials::checks(repo, vars));
    }
    out
}

/// The folders `sandbox.writable` opens to every agent and check besides their own (issue 39).
fn writable_check(config: &Config) -> Check {
    let folders = &config.sandbox.writable;
    let detail = if folders.is_empty() {
        "sandbox.writable opens no folder: agents and checks write only their run's folders and home".to_string()
    } else {
        format!(
            "sandbox.writable opens {} folder(s) to every agent and check: {}",
            folders.len(),
            folders.join(", ")
        )
    };
    Check::ok("writable", detail)
}

fn describe_mode(config: &Config) -> String {
    let state = match config.store_kind() {
        StoreKind::Branch => format!("state on the ref {}", config.state.branch),
        StoreKind::File => format!("state in {}", config.state.path),
    };
    match config.mode {
        Mode::Github => format!(
            "github: issues labelled {} are tasks, changes are PRs into {}; {state}",
            config.backlog.labels.join(" or "),
            config.base_branch
        ),
        Mode::LocalGit => format!(
            "local-git: the local backlog, changes merged into {} by the judge; {state}",
            config.base_branch
        ),
        Mode::Direct => {
            format!("direct: one worker edits the checkout in place, no judge; {state}")
        }
    }
}

fn base_branch(config: &Config, repo: &Path) -> Check {
    let git = Git::new(repo);
    let base = &config.base_branch;
    if let Ok(Some(sha)) = git.resolve(&format!("refs/heads/{base}")) {
        return Check::ok("base branch", format!("{base} at {}", short(&sha)));
    }
    let tracking = format!("refs/remotes/{}/{base}", config.remote);
    if let Ok(Some(_)) = git.resolve(&tracking) {
        return Check::fail(
            "base branch",
            format!("{base} exists only as {}/{base} here", config.remote),
            format!("`git checkout {base}` creates it (in Actions: actions/checkout with `ref: {base}`)"),
        );
    }
    Check::fail(
        "base branch",
        format!(
            "{base} does not exist in {} (or has no commit)",
            repo.display()
        ),
        "set `base_branch` in the configuration to an existing branch, or commit on it",
    )
}

/// Where the state lives and whether it is there yet.
fn state(config: &Config, repo: &Path, online: bool) -> Vec<Check> {
    let s = &config.state;
    let mut out = Vec::new();
    match config.store_kind() {
        StoreKind::Branch => {
            let state = StateRef::new(repo, &s.branch, &s.remote, s.keep_commits);
            let git = Git::new(repo);
            let seen = [
                Some(state.reference.clone()),
                (!s.branch.starts_with("refs/"))
                    .then(|| format!("refs/remotes/{}/{}", s.remote, s.branch)),
            ]
            .into_iter()
            .flatten()
            .find_map(|r| git.resolve(&r).ok().flatten().map(|sha| (r, sha)));
            out.push(match (&state.remote, online) {
                (Some(remote), true) => match git.run(&["ls-remote", remote, &state.reference]) {
                    Ok(listed) if listed.trim().is_empty() => Check::ok(
                        "state",
                        format!("{} is not on {remote} yet: the first tick that saves creates it", state.reference),
                    ),
                    Ok(listed) => Check::ok(
                        "state",
                        format!("{} on {remote} at {}", state.reference, short(&listed)),
                    ),
                    Err(e) => Check::fail(
                        "state",
                        format!("could not ask {remote} for {}: {}", state.reference, first_line(&e.detail)),
                        "check the remote's URL and credentials (in Actions, actions/checkout sets them up)",
                    ),
                },
                (Some(remote), false) => match seen {
                    Some((r, sha)) => Check::ok(
                        "state",
                        format!("{r} at {} here; ticks fetch the latest from {remote}", short(&sha)),
                    ),
                    None => Check::ok(
                        "state",
                        format!(
                            "{} not fetched here: ticks fetch it from {remote}, or create it with their first save (--online asks {remote})",
                            state.reference
                        ),
                    ),
                },
                (None, _) => match seen {
                    Some((r, sha)) => Check::ok(
                        "state",
                        format!("{r} at {} (local: no remote `{}`)", short(&sha), s.remote),
                    ),
                    None => Check::ok(
                        "state",
                        format!("{} (local) does not exist yet: the first tick creates it", state.reference),
                    ),
                },
            });
        }
        StoreKind::File => {
            let path = crate::store::file_path(repo, &s.path);
            out.push(match std::fs::metadata(&path) {
                Ok(meta) => Check::ok(
                    "state",
                    format!("{} ({} bytes)", path.display(), meta.len()),
                ),
                Err(_) => Check::ok(
                    "state",
                    format!(
                        "{} does not exist yet: the first tick creates it",
                        path.display()
                    ),
                ),
            });
            if config.mode == Mode::Github {
                out.push(Check::warn(
                    "state",
                    "state.store: file in github mode: in GitHub Actions the file is gone when the job ends",
                    "use `state.store: branch` (the default in github mode)",
                ));
            }
            let inside = Path::new(&s.path).is_relative();
            let ignored = Git::new(repo)
                .try_run(&["check-ignore", "--quiet", &s.path])
                .ok()
                .flatten()
                .is_some();
            if inside && !ignored {
                out.push(Check::warn(
                    "state",
                    format!(
                        "{} is not ignored by git: it would show up as a change",
                        s.path
                    ),
                    format!("add `{}*` to .gitignore", s.path),
                ));
            }
        }
    }
    out
}

/// A message in the project's error style, `what\n  fix: how`, as its two parts.
fn split_fix(text: &str) -> (&str, Option<&str>) {
    match text.split_once("\n  fix: ") {
        Some((detail, fix)) => (detail, Some(fix)),
        None => (text, None),
    }
}

fn short(sha: &str) -> &str {
    sha.get(..10).unwrap_or(sha)
}

fn first_line(text: &str) -> &str {
    text.lines().find(|l| !l.trim().is_empty()).unwrap_or("")
}

/// The report: one line per check, the fix indented under each problem, then the tally.
/// Outside Actions in github mode, the problems with what Actions provides come apart, after
/// the tally, as what is needed to tick from this machine (issue 40).
pub fn render(checks: &[Check], at: Where) -> String {
    let line = |c: &Check, word: &str| {
        let mut text = format!("{word:<4}  {:<11}  {}\n", c.name, c.detail);
        if let Some(fix) = &c.fix {
            text.push_str(&format!("{:19}fix: {fix}\n", ""));
        }
        text
    };
    let (local, counted): (Vec<&Check>, Vec<&Check>) =
        checks.iter().partition(|c| at.only_for_here(c));
    let mut out = String::new();
    for c in &counted {
        out.push_str(&line(c, c.level.word()));
    }
    let count = |level| counted.iter().filter(|c| c.level == level).count();
    out.push_str(&format!(
        "\n{} ok, {} warning(s), {} failed\n",
        count(Level::Ok),
        count(Level::Warn),
        count(Level::Fail)
    ));
    if !local.is_empty() {
        out.push_str(&format!(
            "\nGitHub Actions provides these to the workflow's ticks (the repository, the token, \
             the agent CLI the workflow installs and the key it passes: `opentiger doctor` in the \
             workflow checks them there); {} only to tick from this machine:\n",
            if local.len() == 1 {
                "it is needed"
            } else {
                "they are needed"
            }
        ));
        for c in local {
            out.push_str(&line(c, "here"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_report_puts_fixes_under_their_check() {
        let text = render(
            &[
                Check::ok("config", ".opentiger.yml loads"),
                Check::fail("agents", "worker: `claude` is not on PATH", "npm install"),
            ],
            Where::Here,
        );
        assert_eq!(
            text,
            "ok    config       .opentiger.yml loads\n\
             fail  agents       worker: `claude` is not on PATH\n\
             \x20                  fix: npm install\n\
             \n1 ok, 0 warning(s), 1 failed\n"
        );
    }

    /// Issue 40: outside Actions in github mode, what Actions provides is apart and fails
    /// nothing; in Actions (or a local mode) it fails as any check.
    #[test]
    fn what_actions_provides_is_apart_outside_actions() {
        let checks = [
            Check::ok("config", ".opentiger.yml loads"),
            Check::fail("token", "no GitHub token", "export GITHUB_TOKEN").provided_by_actions(),
            Check::fail("agents", "`claude` is not on PATH", "npm i").provided_by_actions(),
            Check::fail("base branch", "main does not exist", "commit on it"),
        ];
        let vars = |actions: &'static str| {
            move |k: &str| (k == "GITHUB_ACTIONS").then(|| actions.to_string())
        };
        let outside = Where::of(Some(Mode::Github), &vars("false"));
        assert_eq!(outside, Where::OutsideActions);
        assert_eq!(Where::of(Some(Mode::Github), &vars("true")), Where::Here);
        assert_eq!(Where::of(Some(Mode::LocalGit), &vars("false")), Where::Here);
        assert_eq!(failures(&checks, outside), 1);
        assert_eq!(failures(&checks, Where::Here), 3);
        let text = render(&checks, outside);
        assert!(text.contains("1 ok, 0 warning(s), 1 failed\n"), "{text}");
        let (counted, apart) = text.split_once("GitHub Actions provides these").unwrap();
        assert!(counted.contains("fail  base branch"), "{text}");
        assert!(!counted.contains("token"), "{text}");
        assert!(
            apart.contains("they are needed only to tick from this machine:"),
            "{text}"
        );
        assert!(
            apart.contains("here  token        no GitHub token\n"),
            "{text}"
        );
        assert!(
            apart.contains("here  agents       `claude` is not on PATH\n"),
            "{text}"
        );
        assert!(!render(&checks, Where::Here).contains("GitHub Actions provides"));
    }
}

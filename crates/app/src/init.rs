//! What `opentiger init [--force] [--agent-command PROGRAM]` does (mode from `--mode`, github by
//! default): writes a commented `.opentiger.yml` and, in github mode, the workflow
//! `.github/workflows/opentiger.yml`, which is `examples/workflows/opentiger.yml` embedded, so the
//! two cannot drift apart; in local modes, keeps the state file out of git. Overwrites nothing
//! without `force`. With `--preview` (issue 51) it writes nothing and says what opentiger would
//! do here (`preview`). Not for: checking the set-up works (`doctor`), the configuration's keys
//! and defaults (`config`), or printing the report (`cli::init`).

use std::path::{Path, PathBuf};

use crate::failure::Failure;
use crate::git::Git;
use crate::model::Mode;
use crate::tick::ContextOptions;

/// The workflow `init` writes in github mode.
pub const WORKFLOW: &str = include_str!("../../../examples/workflows/opentiger.yml");
/// Where it goes, relative to the repository.
pub const WORKFLOW_PATH: &str = ".github/workflows/opentiger.yml";

/// What opentiger would do here (issue 51), writing nothing: from the existing configuration,
/// else the one [`init`] would write; in github mode with the open issues it would take, read
/// from GitHub when a token and the repository are known.
pub fn preview(options: &ContextOptions, agent_command: Option<&str>) -> Result<String, Failure> {
    let path = options.config_path();
    let (config, from) = if path.exists() {
        let (config, _) = crate::config::load(&path, true)?;
        (
            config,
            format!("{} as it is", shown(&options.repo, &path).display()),
        )
    } else {
        let mode = match &options.mode {
            Some(text) => text
                .parse::<Mode>()
                .map_err(|e| Failure::usage(format!("--mode: {e}")))?,
            None => Mode::Github,
        };
        let base = current_branch(&options.repo).unwrap_or_else(|| "main".to_string());
        let text = config_text(mode, &base, agent_command);
        let config = crate::config::load_str(&text, ".opentiger.yml")?;
        (
            config,
            "the .opentiger.yml `opentiger init` would write".to_string(),
        )
    };
    let issues = match config.mode {
        Mode::Github => backlog_issues(&options.repo, &config),
        Mode::LocalGit | Mode::Direct => {
            Err("no issues: this mode's backlog is `opentiger task add`".to_string())
        }
    };
    let text = match &issues {
        Ok(list) => crate::preview::text(&config, crate::preview::Issues::Read(list)),
        Err(why) => crate::preview::text(&config, crate::preview::Issues::Unread(why.clone())),
    };
    Ok(format!("{text}\n(from {from}; nothing was written)\n"))
}

/// The open issues with a backlog label, or why they could not be listed.
fn backlog_issues(
    repo: &Path,
    config: &crate::config::Config,
) -> Result<Vec<crate::model::Issue>, String> {
    use crate::forge::github::{owner_and_name, GithubClient};
    // The repository a tick would name (GITHUB_REPOSITORY), else the remote's.
    let origin = crate::credentials::lookup("GITHUB_REPOSITORY").or_else(|| {
        Git::new(repo)
            .try_run(&["remote", "get-url", &config.remote])
            .ok()
            .flatten()
            .and_then(|url| owner_and_name(&url))
    });
    if crate::credentials::forge_token().is_none() {
        return Err("not listed: no GitHub token here (`export GITHUB_TOKEN=$(gh auth token)`, then `opentiger init --preview` lists them)".to_string());
    }
    let client = GithubClient::from_env(origin.as_deref(), crate::credentials::lookup)
        .map_err(|e| format!("not listed: {e}"))?;
    let mut issues: Vec<crate::model::Issue> = Vec::new();
    for label in &config.backlog.labels {
        let read = client
            .backlog_issues(label, None, crate::time::Timestamp::now())
            .map_err(|e| format!("could not list them: {e}"))?;
        if let crate::forge::github::Conditional::Fresh { value, .. } = read {
            for issue in value {
                if !issues.iter().any(|i| i.number == issue.number) {
                    issues.push(issue);
                }
            }
        }
    }
    issues.sort_by_key(|i| i.number);
    Ok(issues)
}

/// Writes the files; returns what was written and the next steps, for a person. With
/// `agent_command`, that program is the agent (`executor: command`).
pub fn init(
    options: &ContextOptions,
    force: bool,
    agent_command: Option<&str>,
) -> Result<String, Failure> {
    let mode = match &options.mode {
        Some(text) => text
            .parse::<Mode>()
            .map_err(|e| Failure::usage(format!("--mode: {e}")))?,
        None => Mode::Github,
    };
    let repo = &options.repo;
    if !repo.is_dir() {
        return Err(Failure::usage(format!(
            "{} is not a directory\n  fix: create it (and `git init` it), or point --repo at the repository",
            repo.display()
        )));
    }
    let base = current_branch(repo).unwrap_or_else(|| "main".to_string());
    let mut files: Vec<(PathBuf, String)> = vec![(
        options.config_path(),
        config_text(mode, &base, agent_command),
    )];
    let mut woken_by = Vec::new();
    if mode == Mode::Github {
        let workflows = crate::workflows::read(repo);
        woken_by = crate::workflows::ci_workflows(&workflows)
            .into_iter()
            .map(|w| (w.name.clone(), w.file.clone()))
            .collect();
        let names: Vec<String> = woken_by.iter().map(|(name, _)| name.clone()).collect();
        files.push((repo.join(WORKFLOW_PATH), workflow_text(&names)));
    }

    let existing: Vec<String> = files
        .iter()
        .filter(|(path, _)| path.exists())
        .map(|(path, _)| shown(repo, path).display().to_string())
        .collect();
    if !existing.is_empty() && !force {
        return Err(Failure::usage(format!(
            "{} already exist{}: nothing was written\n  fix: pass --force to replace {}, or move {} away first",
            existing.join(" and "),
            if existing.len() == 1 { "s" } else { "" },
            if existing.len() == 1 { "it" } else { "them" },
            if existing.len() == 1 { "it" } else { "them" },
        )));
    }

    let mut report = String::new();
    for (path, text) in &files {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|e| write_error(dir, &e))?;
        }
        std::fs::write(path, text).map_err(|e| write_error(path, &e))?;
        report.push_str(&format!("wrote {}\n", shown(repo, path).display()));
    }
    if !woken_by.is_empty() {
        let named: Vec<String> = woken_by
            .iter()
            .map(|(name, file)| format!("{name} ({file})"))
            .collect();
        report.push_str(&format!(
            "the tick wakes when your CI workflow{} finish{}: {} (a `workflow_run` trigger; GitHub sends no check_suite event for Actions' own CI)\n",
            if named.len() == 1 { "" } else { "s" },
            if named.len() == 1 { "es" } else { "" },
            named.join(", ")
        ));
    }
    if mode != Mode::Github {
        if let Some(line) = ignore_state_file(repo)? {
            report.push_str(&format!("added `{line}` to .gitignore\n"));
        }
    }
    report.push_str(&next_steps(mode, &base, repo, agent_command));
    Ok(report)
}

/// The workflow `init` writes: [`WORKFLOW`], with a `workflow_run` trigger naming the
/// repository's CI workflows (by their `name:`) when there are any, so their completion starts
/// a tick (GitHub sends no `check_suite` event for suites of GitHub Actions itself).
pub fn workflow_text(ci_names: &[String]) -> String {
    const BEFORE: &str = "\n  workflow_dispatch:\n";
    if ci_names.is_empty() {
        return WORKFLOW.to_string();
    }
    // JSON strings are YAML flow scalars: any name is written quoted and whole.
    let names: Vec<String> = ci_names
        .iter()
        .map(|n| serde_json::to_string(n).unwrap_or_default())
        .collect();
    let trigger = format!(
        "\n  workflow_run:\n    workflows: [{}]\n    types: [completed]",
        names.join(", ")
    );
    WORKFLOW.replacen(BEFORE, &format!("{trigger}{BEFORE}"), 1)
}

/// A written file as the user knows it: relative to the repository when that is `.`.
fn shown<'a>(repo: &Path, path: &'a Path) -> &'a Path {
    let here = std::env::current_dir().is_ok_and(|cwd| cwd == repo);
    if repo == Path::new(".") || here {
        path.strip_prefix(repo).unwrap_or(path)
    } else {
        path
    }
}

fn write_error(path: &Path, e: &std::io::Error) -> Failure {
    Failure::usage(format!(
        "could not write {}: {e}\n  fix: make the folder writable, or point --repo elsewhere",
        path.display()
    ))
}

/// The branch checked out in `repo`, as the likely base branch (`main` when unknown).
fn current_branch(repo: &Path) -> Option<String> {
    Git::new(repo)
        .try_run(&["symbolic-ref", "--quiet", "--short", "HEAD"])
        .ok()
        .flatten()
        .filter(|b| !b.trim().is_empty())
}

/// Local modes keep the state file in the repository: keep it out of commits.
fn ignore_state_file(repo: &Path) -> Result<Option<String>, Failure> {
    const LINE: &str = ".opentiger/state.sqlite*";
    let git = Git::new(repo);
    if !Git::is_repository(repo) {
        return Ok(None);
    }
    let ignored = git
        .try_run(&["check-ignore", "--quiet", ".opentiger/state.sqlite"])
        .ok()
        .flatten()
        .is_some();
    if ignored {
        return Ok(None);
    }
    let path = repo.join(".gitignore");
    let mut text = std::fs::read_to_string(&path).unwrap_or_default();
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(LINE);
    text.push('\n');
    std::fs::write(&path, text).map_err(|e| write_error(&path, &e))?;
    Ok(Some(LINE.to_string()))
}

fn next_steps(mode: Mode, base: &str, repo: &Path, agent: Option<&str>) -> String {
    let choose = match agent {
        Some(program) => format!(
            "write the agent {program}: the prompt comes on stdin; as the judge\n\
             \x20    (OPENTIGER_ROLE=judge) it writes its verdict to $OPENTIGER_RESULT_FILE; make it\n\
             \x20    executable and commit it"
        ),
        None => "choose the agent: agents.default in .opentiger.yml (claude-code needs `claude` on PATH\n\
                 \x20    and ANTHROPIC_API_KEY; any program works with `executor: command`)"
            .to_string(),
    };
    let here = std::env::current_dir().is_ok_and(|cwd| cwd == repo);
    let doctor = if here {
        "opentiger doctor".to_string()
    } else {
        format!("opentiger --repo {} doctor", repo.display())
    };
    match mode {
        Mode::Github => format!(
            "\nnext:\n\
             \x20 1. add the repository secret ANTHROPIC_API_KEY (Settings → Secrets and variables → Actions),\n\
             \x20    or with a Claude subscription CLAUDE_CODE_OAUTH_TOKEN (from `claude setup-token`; then\n\
             \x20    swap the two lines under `env:` in {WORKFLOW_PATH})\n\
             \x20 2. create the label `opentiger` (Issues → Labels → New label, or `gh label create opentiger`)\n\
             \x20 3. recommended: a GitHub App token, so CI runs on opentiger's PRs: store the App's id as the\n\
             \x20    variable OPENTIGER_APP_ID and its key as the secret OPENTIGER_APP_PRIVATE_KEY; the workflow\n\
             \x20    then uses it (nothing to uncomment; docs/github.md: CI on opentiger's PRs needs an App token)\n\
             \x20 4. check the set-up: {doctor}   (--online also asks GitHub about the token)\n\
             \x20 5. commit both files and push them to {base}; then label an issue `opentiger`, or run the\n\
             \x20    workflow by hand (Actions → opentiger → Run workflow)\n"
        ),
        Mode::LocalGit | Mode::Direct => format!(
            "\nnext:\n\
             \x20 1. {choose}\n\
             \x20 2. check the set-up: {doctor}\n\
             \x20 3. opentiger task add --title \"...\" --goal \"...\", then opentiger tick (again and again)\n\
             \x20 no workflow was written: {mode} mode runs where you run `opentiger tick`\n\
             \x20 (`opentiger init --mode github` writes the GitHub Actions set-up)\n"
        ),
    }
}

/// The commented configuration for `mode`, with `base` as the base branch.
/// With `agent_command`, the agent is that program (`executor: command`) and no key is passed.
pub fn config_text(mode: Mode, base: &str, agent_command: Option<&str>) -> String {
    let agent = match agent_command {
        Some(program) => format!(
            "\x20   executor: command\n\
             \x20   command: [{}]\n\
             \x20   timeout_minutes: 30\n\
             \x20   # The only variables an agent sees besides PATH, HOME and OPENTIGER_*; never the\n\
             \x20   # GitHub token. A model key listed here (ANTHROPIC_API_KEY, OPENAI_API_KEY, ...)\n\
             \x20   # stays with the runner: the agent gets a placeholder and its API's base URL on\n\
             \x20   # opentiger's proxy (ANTHROPIC_BASE_URL, OPENAI_BASE_URL, ...).\n\
             \x20   env_passthrough: []\n",
            serde_json::to_string(program).unwrap_or_default()
        ),
        None => "\x20   executor: claude-code\n\
                 \x20   timeout_minutes: 30\n\
                 \x20   # Its key, ANTHROPIC_API_KEY in the workflow's env, stays with the runner: the\n\
                 \x20   # agent gets a placeholder and a base URL on opentiger's proxy, which puts the\n\
                 \x20   # key back on requests to api.anthropic.com only. Variables listed here are\n\
                 \x20   # the only others an agent sees besides PATH and HOME; never the GitHub token.\n\
                 \x20   env_passthrough: []\n"
            .to_string(),
    };
    let window = match mode {
        Mode::Github => {
            "\x20 # Minutes an approved PR stays open after its push before it is merged, for people\n\
             \x20 # to object. Unset: 10 without CI, none where CI gates the merge (the PR is open\n\
             \x20 # while CI runs). 0: merged in the job that pushed it, with no time to look.\n\
             \x20 # review_window_minutes: 10\n"
        }
        Mode::LocalGit | Mode::Direct => "",
    };
    let (intro, state) = match mode {
        Mode::Github => (
            "# github: issues labelled `opentiger` (and tasks from docs/requirement.md) are the backlog;\n\
             # each change is a pull request that CI checks and the judge reviews and merges.",
            "# The state (tasks, runs, leases, events) is one SQLite file committed to this ref of the\n\
             # repository by every tick that changes something; it is never checked out.\n\
             state:\n  store: branch\n  branch: opentiger/state\n",
        ),
        Mode::LocalGit => (
            "# local-git: a local backlog (`opentiger task add`); each change is a branch that the judge\n\
             # merges into the base branch locally (and on `origin`, when the repository has one).",
            "# The state (tasks, runs, leases, events) is one SQLite file; keep it out of git.\n\
             state:\n  store: file\n  path: .opentiger/state.sqlite\n",
        ),
        Mode::Direct => (
            "# direct: one worker edits this checkout in place; no branches, no judge.",
            "# The state (tasks, runs, leases, events) is one SQLite file; keep it out of git.\n\
             state:\n  store: file\n  path: .opentiger/state.sqlite\n",
        ),
    };
    format!(
        "# opentiger configuration, written by `opentiger init`.\n\
         # Every key has a default; these are the ones to look at first.\n\
         # All keys: `opentiger config schema`. Effective values: `opentiger config show`.\n\
         # Check the set-up: `opentiger doctor`.\n\
         \n\
         {intro}\n\
         mode: {mode}\n\
         base_branch: {base}\n\
         \n\
         {state}\
         \n\
         backlog:\n\
         \x20 # Issues with one of these labels become tasks, when their author is trusted or a\n\
         \x20 # person with write access applied the label (keep the workflow's `if:` in step).\n\
         \x20 labels: [opentiger]\n\
         \n\
         agents:\n\
         \x20 default:\n\
         \x20   # claude-code | opencode | codex | aider (their CLI on PATH), command (any program:\n\
         \x20   # `command: [\"./scripts/agent.sh\"]`, run without a shell) or scripted (the demo's agent).\n\
         {agent}\
         \x20 judge:\n\
         \x20   review: true # false: CI, the path policy and verification alone decide\n\
         \n\
         verify:\n\
         \x20 # Run by opentiger (not the agent) after each run, without a shell, e.g. [\"cargo test --quiet\"].\n\
         \x20 commands: []\n\
         \n\
         policy:\n\
         \x20 allowed_paths: [\"**\"]\n\
         \x20 # The defaults also keep agents away from .github/workflows, this file and key files,\n\
         \x20 # and hold a change to CI, CODEOWNERS, git hooks or package-manager settings for a\n\
         \x20 # person (`opentiger doctor` lists them; add with held_paths, remove with held_paths_except).\n\
         \x20 max_changed_files: 50\n\
         \x20 max_changed_lines: 2000\n\
         \x20 max_file_bytes: 5242880 # sizes are checked before anything reads the change\n\
         \x20 max_change_bytes: 20971520\n\
         \n\
         scan:\n\
         \x20 # The threat scan holds a change that looks dangerous (a script gaining a download, hidden\n\
         \x20 # text) for a person's approval. after-scan: CI with your secrets runs on an agent's head\n\
         \x20 # only once it passed the scan (your CI needs workflow_dispatch, the workflow actions: write).\n\
         \x20 ci: on-push # on-push | after-scan | after-review\n\
         \n\
         limits:\n\
         \x20 # A tick goes on to the next step (a review, a merge, the next task of a chain) while\n\
         \x20 # nothing outside is awaited and the step can end within tick_minutes of its start\n\
         \x20 # (keep it under the workflow's timeout-minutes); it starts at most this many runs.\n\
         \x20 max_runs_per_tick: 3\n\
         \x20 tick_minutes: 50\n\
         \n\
         budget:\n\
         \x20 per_task_usd: 5 # over all attempts of one task\n\
         \x20 per_day_usd: 50\n\
         \n\
         merge:\n\
         \x20 method: squash # merge | squash | rebase\n\
         \x20 require_checks: true # wait for CI on the PR's head (github mode)\n\
         {window}"
    )
}

#[cfg(test)]
#[path = "init_tests.rs"]
mod tests;

//! What `opentiger init [--force] [--agent-command PROGRAM]` does (mode from `--mode`, github by
//! default): writes a commented `.opentiger.yml` and, in github mode, the workflow
//! `.github/workflows/opentiger.yml`, which is `examples/workflows/opentiger.yml` embedded, so the
//! two cannot drift apart; in local modes, keeps the state file out of git. Overwrites nothing
//! without `force`. Not for: checking the set-up works (`doctor`), the configuration's keys and
//! defaults (`config`), or printing the report (`cli::init`).

use std::path::{Path, PathBuf};

use crate::failure::Failure;
use crate::git::Git;
use crate::model::Mode;
use crate::tick::ContextOptions;

/// The workflow `init` writes in github mode.
pub const WORKFLOW: &str = include_str!("../examples/workflows/opentiger.yml");
/// Where it goes, relative to the repository.
pub const WORKFLOW_PATH: &str = ".github/workflows/opentiger.yml";

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
    if mode == Mode::Github {
        files.push((repo.join(WORKFLOW_PATH), WORKFLOW.to_string()));
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
    if mode != Mode::Github {
        if let Some(line) = ignore_state_file(repo)? {
            report.push_str(&format!("added `{line}` to .gitignore\n"));
        }
    }
    report.push_str(&next_steps(mode, &base, repo, agent_command));
    Ok(report)
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
             \x20 3. recommended: a GitHub App token, so CI runs on opentiger's PRs (the comments in {WORKFLOW_PATH} say how)\n\
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
mod tests {
    use super::*;
    use crate::config::{load_str, StoreKind};

    #[test]
    fn every_mode_writes_a_config_the_loader_accepts() {
        for mode in [Mode::Github, Mode::LocalGit, Mode::Direct] {
            let text = config_text(mode, "trunk", None);
            let config =
                load_str(&text, ".opentiger.yml").unwrap_or_else(|e| panic!("{mode}: {e}\n{text}"));
            assert_eq!(config.mode, mode);
            assert_eq!(config.base_branch, "trunk");
            let expected_store = match mode {
                Mode::Github => StoreKind::Branch,
                Mode::LocalGit | Mode::Direct => StoreKind::File,
            };
            assert_eq!(config.store_kind(), expected_store, "{mode}");
            assert_eq!(config.backlog.labels, ["opentiger"]);
        }
    }

    /// `--agent-command`: the program is every role's agent, quoted as one argv word, and no
    /// API key is passed to it.
    #[test]
    fn an_agent_command_is_written_as_the_default_agent() {
        use crate::config::{AgentRole, ExecutorKind};
        let text = config_text(Mode::LocalGit, "main", Some("./my agent \"x\".sh"));
        let config = load_str(&text, ".opentiger.yml").unwrap_or_else(|e| panic!("{e}\n{text}"));
        for role in AgentRole::ALL {
            let agent = config.agents.effective(role);
            assert_eq!(agent.executor, ExecutorKind::Command);
            assert_eq!(agent.command, Some(vec!["./my agent \"x\".sh".to_string()]));
            assert!(agent.env_passthrough.is_empty());
        }
    }

    #[test]
    fn the_workflow_filters_on_the_backlog_label_the_config_names() {
        let config = load_str(&config_text(Mode::Github, "main", None), "c.yml").unwrap();
        for label in &config.backlog.labels {
            assert!(
                WORKFLOW.contains(&format!("github.event.label.name == '{label}'")),
                "the workflow's `if:` must let `{label}` labels through"
            );
        }
        assert!(WORKFLOW.contains("cancel-in-progress: false"));
    }

    /// The workflow `init` writes runs the release `init` came from: the action at this major
    /// version of the repository Cargo.toml names, and `version:` this very release.
    #[test]
    fn the_workflow_pins_the_release_init_came_from() {
        use crate::release;
        assert!(
            WORKFLOW.contains(&format!(
                "\n  OPENTIGER_VERSION: {}\n",
                release::release_tag()
            )),
            "the example workflow's OPENTIGER_VERSION must be {} (Cargo.toml's version)",
            release::release_tag()
        );
        assert!(
            WORKFLOW.contains(&format!("uses: {}\n", release::action_reference())),
            "the example workflow must use {}",
            release::action_reference()
        );
        assert!(WORKFLOW.contains("version: ${{ env.OPENTIGER_VERSION }}"));
        assert!(!WORKFLOW.contains("@main"));
    }

    /// The agent CLI is installed at the version its adapter was tested against: the one the
    /// fixtures were recorded with.
    #[test]
    fn the_workflows_pin_the_agent_cli_the_adapter_was_tested_against() {
        let fixtures = include_str!("../tests/fixtures/agents/README.md");
        let tested = fixtures
            .split("(claude ")
            .nth(1)
            .and_then(|rest| rest.split([',', ')']).next())
            .expect("the fixtures README names the claude version they were recorded with");
        let fanout = include_str!("../examples/workflows/opentiger-fanout.yml");
        for (name, text) in [
            ("opentiger.yml", WORKFLOW),
            ("opentiger-fanout.yml", fanout),
        ] {
            assert!(
                text.contains(&format!("\n  CLAUDE_CODE_VERSION: {tested}\n")),
                "{name} must pin claude-code {tested}"
            );
            for line in text.lines().filter(|l| l.contains("npm install")) {
                assert!(
                    line.contains("@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION"),
                    "{name}: {line}"
                );
            }
            assert!(
                text.contains("key: npm-claude-code-${{ env.CLAUDE_CODE_VERSION }}"),
                "{name} caches npm's downloads by that version"
            );
        }
    }

    /// Issue 47: every checkout of the workflow `init` writes, and of every example workflow,
    /// leaves no token behind for an agent to read (`persist-credentials: false`).
    #[test]
    fn every_checkout_of_the_workflows_persists_no_credentials() {
        let examples = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workflows");
        let mut workflows = vec![(WORKFLOW_PATH.to_string(), WORKFLOW.to_string())];
        for entry in std::fs::read_dir(&examples).expect("examples/workflows") {
            let path = entry.expect("an entry").path();
            let text = std::fs::read_to_string(&path).expect("a workflow");
            workflows.push((path.display().to_string(), text));
        }
        assert!(workflows.len() >= 3, "{workflows:?}");
        for (name, text) in workflows {
            let parsed: serde_json::Value =
                serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            let jobs = parsed["jobs"].as_object().expect("jobs");
            let checkouts: Vec<&serde_json::Value> = jobs
                .values()
                .flat_map(|job| job["steps"].as_array().into_iter().flatten())
                .filter(|step| {
                    step["uses"]
                        .as_str()
                        .is_some_and(|u| u.starts_with("actions/checkout@"))
                })
                .collect();
            assert!(!checkouts.is_empty(), "{name} checks out");
            for step in checkouts {
                assert_eq!(
                    step["with"]["persist-credentials"],
                    serde_json::Value::Bool(false),
                    "{name}: {step}"
                );
            }
        }
    }

    /// Issue 17: a comment starts a job (which holds the repository's secrets) only when it is
    /// a command from the owner, a member or a collaborator.
    #[test]
    fn the_workflow_starts_a_job_for_commands_of_trusted_authors_only() {
        let guard = WORKFLOW
            .split("(github.event_name == 'issue_comment' &&")
            .nth(1)
            .and_then(|rest| rest.split(")) ||").next())
            .expect("the `if:` has an issue_comment clause");
        assert!(
            guard.contains("startsWith(github.event.comment.body, '/opentiger')"),
            "{guard}"
        );
        assert!(
            guard.contains("github.event.comment.author_association"),
            "{guard}"
        );
        for trusted in ["\"OWNER\"", "\"MEMBER\"", "\"COLLABORATOR\""] {
            assert!(guard.contains(trusted), "{trusted} missing from {guard}");
        }
        for outsider in ["CONTRIBUTOR", "NONE", "FIRST_TIME"] {
            assert!(
                !guard.contains(outsider),
                "{outsider} must not start a job: {guard}"
            );
        }
    }
}

//! What opentiger will do on a repository, said before any paid run (issue 51), as Renovate's
//! onboarding pull request does: which issues it takes, which agent each role runs and for how
//! long, what it may spend, which paths a change may touch, what waits for a person, and how
//! to stop it. `opentiger init --preview` shows it before the workflow is pushed; the first
//! tick on a repository in github mode shows it before it starts any agent (on stderr as it
//! starts, in its output and in the job summary). Pure text from the configuration and the
//! issues given.
//!
//! Not for: reading GitHub (the caller passes the issues), or deciding what to run (`engine`).

use std::fmt::Write as _;

use crate::config::{AgentRole, Config};
use crate::model::{ExecutionMode, Issue, Mode, Role};

/// The issues the preview names: read from GitHub, or why they could not be.
pub enum Issues<'a> {
    /// The open issues with a backlog label.
    Read(&'a [Issue]),
    /// Tasks already in the state (the first tick imported them): `(id, title, issue)`.
    Tasks(&'a [(String, String, Option<u64>)]),
    /// Not read, and why (no token here, a local mode).
    Unread(String),
}

/// The preview, as Markdown that reads as plain text too.
pub fn text(config: &Config, issues: Issues<'_>) -> String {
    let mut out = String::from("What opentiger will do here (before any agent runs):\n\n");
    let labels = config
        .backlog
        .labels
        .iter()
        .map(|l| format!("`{l}`"))
        .collect::<Vec<_>>()
        .join(" or ");
    let trusted = config.backlog.trusted_associations.join(", ");
    let _ = writeln!(
        out,
        "- Takes: {}",
        match config.mode {
            Mode::Github => format!(
                "open issues labelled {labels} whose author is trusted ({trusted}), or that a person with write access labelled; and tasks planned from `{}` when it exists",
                config.requirement
            ),
            Mode::LocalGit | Mode::Direct => format!(
                "the tasks you add (`opentiger task add`), and tasks planned from `{}` when it exists",
                config.requirement
            ),
        }
    );
    match issues {
        Issues::Read([]) => {
            let _ = writeln!(out, "  - now: no open issue has the label yet");
        }
        Issues::Read(list) => {
            for issue in list.iter().take(MAX_LISTED) {
                let who = issue.author_association.as_str();
                let taken = if config.backlog.trusted_associations.iter().any(|a| a == who) {
                    "taken"
                } else {
                    "taken once a person with write access labels it"
                };
                let _ = writeln!(
                    out,
                    "  - #{} {:?} by @{} ({who}): {taken}",
                    issue.number,
                    crate::report::truncate(&issue.title, 60),
                    issue.author
                );
            }
            more(&mut out, list.len());
        }
        Issues::Tasks([]) => {
            let _ = writeln!(out, "  - now: no task yet");
        }
        Issues::Tasks(list) => {
            for (id, title, issue) in list.iter().take(MAX_LISTED) {
                let from = issue.map(|n| format!(" (issue #{n})")).unwrap_or_default();
                let _ = writeln!(
                    out,
                    "  - {id} {:?}{from}",
                    crate::report::truncate(title, 60)
                );
            }
            more(&mut out, list.len());
        }
        Issues::Unread(why) => {
            let _ = writeln!(out, "  - now: {why}");
        }
    }
    let _ = writeln!(out, "- Runs:");
    for (roles, agent) in agents(config) {
        let model = agent
            .model
            .as_deref()
            .map(|m| format!(", model {m}"))
            .unwrap_or_default();
        let program = agent
            .command
            .as_ref()
            .map(|c| format!(" `{}`", c.join(" ")))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  - {roles}: {}{program}{model}, at most {} min a run",
            crate::executor::kind_word(agent.executor),
            agent.timeout_minutes
        );
    }
    let b = &config.budget;
    let per_tick = b
        .per_tick_usd
        .map(|usd| format!(", ${usd:.2} a tick"))
        .unwrap_or_default();
    let _ = writeln!(
        out,
        "- Spends at most: ${:.2} a task (all its attempts), ${:.2} a day{per_tick}; {} agent run(s) a tick (budget.*, limits.max_runs_per_tick)",
        b.per_task_usd, b.per_day_usd, config.limits.max_runs_per_tick
    );
    let p = &config.policy;
    let _ = writeln!(
        out,
        "- May change: {} — never {}; at most {} files and {} lines a change (policy.*)",
        quoted(&p.allowed_paths),
        quoted(&p.denied_paths),
        p.max_changed_files,
        p.max_changed_lines
    );
    let _ = writeln!(out, "- Merges: {}", merges(config));
    let _ = writeln!(
        out,
        "- Waits for you: {}",
        match config.execution_mode {
            ExecutionMode::AlwaysExecute => {
                "only when it is stuck (a bound reached, a question); no task waits for approval (execution_mode: always-execute)"
            }
            ExecutionMode::Ask => "every new task, until you approve it (execution_mode: ask)",
            ExecutionMode::Decide => {
                "every high-risk task, until you approve it (execution_mode: decide)"
            }
        }
    );
    let _ = writeln!(
        out,
        "- Stop it: {}",
        match config.mode {
            Mode::Github => {
                "`/opentiger pause` on the dashboard issue (or `opentiger pause`) holds everything; `/opentiger stop` on a task's issue ends its running agent; removing the label drops an issue"
            }
            Mode::LocalGit | Mode::Direct => {
                "`opentiger pause` holds everything; `opentiger task stop ID` ends a running agent"
            }
        }
    );
    out
}

/// The most issues or tasks the preview names one by one.
const MAX_LISTED: usize = 20;

fn more(out: &mut String, len: usize) {
    if len > MAX_LISTED {
        let _ = writeln!(out, "  - and {} more", len - MAX_LISTED);
    }
}

fn quoted(globs: &[String]) -> String {
    if globs.is_empty() {
        return "nothing".to_string();
    }
    globs
        .iter()
        .map(|g| format!("`{g}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Each distinct agent in use, with the roles that run it.
fn agents(config: &Config) -> Vec<(String, crate::config::EffectiveAgent)> {
    let mut out: Vec<(String, crate::config::EffectiveAgent)> = Vec::new();
    let roles = [
        AgentRole::Task(Role::Worker),
        AgentRole::Task(Role::Tester),
        AgentRole::Task(Role::Docser),
        AgentRole::Task(Role::Research),
        AgentRole::Judge,
        AgentRole::Planner,
        AgentRole::Detector,
    ];
    for role in roles {
        let used = match role {
            AgentRole::Judge => config.agents.effective(role).review,
            AgentRole::Planner => config.planner.agent,
            AgentRole::Detector => config.scan.agent,
            AgentRole::Task(_) => true,
        };
        if !used {
            continue;
        }
        let mut agent = config.agents.effective(role);
        agent.config_key.clear();
        agent.command_at.clear();
        match out.iter_mut().find(|(_, a)| *a == agent) {
            Some((names, _)) => {
                names.push_str(", ");
                names.push_str(role.name());
            }
            None => out.push((role.name().to_string(), agent)),
        }
    }
    out
}

fn merges(config: &Config) -> String {
    let judge = if config.agents.effective(AgentRole::Judge).review {
        "once the judge approves"
    } else {
        "once its checks pass (no judge: agents.judge.review is false)"
    };
    match config.mode {
        Mode::Github => format!(
            "each change is a pull request into `{}`, merged {judge} and its CI (if any) passes{}",
            config.base_branch,
            match config.merge.review_window_minutes {
                Some(0) => String::new(),
                Some(n) => format!(", {n} min after it is approved (merge.review_window_minutes)"),
                None => ", after a 10 min review window when the repository has no CI".to_string(),
            }
        ),
        Mode::LocalGit => format!(
            "each change is a branch, merged into `{}` {judge}",
            config.base_branch
        ),
        Mode::Direct => "edits this checkout in place; nothing is merged".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preview_names_issues_agents_budget_and_paths() {
        let config = crate::config::load_str(
            "mode: github\nagents:\n  default:\n    executor: claude-code\n    model: claude-sonnet-4-5\n    timeout_minutes: 20\nbudget:\n  per_task_usd: 3\n",
            ".opentiger.yml",
        )
        .unwrap();
        let issue = |n: u64, who: crate::model::AuthorAssociation| Issue {
            number: n,
            title: format!("Issue {n}"),
            body: String::new(),
            labels: vec!["opentiger".into()],
            author: "ann".into(),
            author_association: who,
            state: "open".into(),
            updated_at: crate::time::Timestamp(0),
            html_url: String::new(),
            labelled_by: Vec::new(),
        };
        use crate::model::AuthorAssociation::{Contributor, Owner};
        let issues = [issue(3, Owner), issue(4, Contributor)];
        let text = text(&config, Issues::Read(&issues));
        for needle in [
            "- Takes: open issues labelled `opentiger` whose author is trusted (OWNER, MEMBER, COLLABORATOR)",
            "  - #3 \"Issue 3\" by @ann (OWNER): taken\n",
            "  - #4 \"Issue 4\" by @ann (CONTRIBUTOR): taken once a person with write access labels it\n",
            "  - worker, tester, docser, research, judge, planner: claude-code, model claude-sonnet-4-5, at most 20 min a run\n",
            "- Spends at most: $3.00 a task (all its attempts), $50.00 a day; 3 agent run(s) a tick",
            "- May change: `**` — never `.github/workflows/**`, `.opentiger.yml`",
            "- Merges: each change is a pull request into `main`",
            "- Waits for you: only when it is stuck",
            "`/opentiger stop` on a task's issue ends its running agent",
        ] {
            assert!(text.contains(needle), "{needle}\nnot in:\n{text}");
        }
        let unread = super::text(
            &config,
            Issues::Unread("set GITHUB_TOKEN to list them".into()),
        );
        assert!(
            unread.contains("  - now: set GITHUB_TOKEN to list them\n"),
            "{unread}"
        );
    }
}

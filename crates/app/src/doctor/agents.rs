//! The agent checks: for each set of roles that share an agent, and each fallback, can the tick
//! start it? The executor as the tick builds it, its program (on PATH, or a path in the
//! repository), opencode's model and, for the known CLIs, a key set for the runner (the agent gets
//! a placeholder) or a login of the CLI's own.
//! Not for: whether a program in the repository is committed on the base branch
//! (`doctor::files`), or which entry of a role's chain a tick runs (`engine::fallback`).

use std::path::{Path, PathBuf};

use super::{Check, Level, Vars};
use crate::config::{AgentRole, Config, EffectiveAgent, ExecutorKind};
use crate::executor;

/// Roles that share one agent set-up are checked (and reported) once.
fn groups(config: &Config) -> Vec<(EffectiveAgent, Vec<AgentRole>)> {
    let mut groups: Vec<(EffectiveAgent, Vec<AgentRole>)> = Vec::new();
    for role in AgentRole::ALL.into_iter().filter(|r| used(config, *r)) {
        let agent = config.agents.effective(role);
        let same = |a: &EffectiveAgent| {
            a.executor == agent.executor
                && a.command == agent.command
                && a.script == agent.script
                && a.env_passthrough == agent.env_passthrough
                && a.provider == agent.provider
        };
        match groups.iter_mut().find(|(a, _)| same(a)) {
            Some((_, roles)) => roles.push(role),
            None => groups.push((agent, vec![role])),
        }
    }
    groups
}

pub fn checks(config: &Config, repo: &Path, vars: Vars<'_>) -> Vec<Check> {
    let mut out = Vec::new();
    for (agent, roles) in groups(config) {
        let names: Vec<&str> = roles.iter().map(|r| r.name()).collect();
        let who = if roles.len() == AgentRole::ALL.len() {
            "all roles".to_string()
        } else {
            names.join(", ")
        };
        // The key to edit: `agents.default` when it is shared, else the role's own.
        let key = if roles.len() > 1 {
            "agents.default".to_string()
        } else {
            format!("agents.{}", names[0])
        };
        let kind = executor::kind_word(agent.executor);
        let (found, missing, key_problem) = problems(&agent, roles[0], &key, repo, vars);
        // A role whose agent cannot run here runs a fallback that can (issue 9); a key that is
        // not passed does not make the agent unavailable, so no fallback covers for it.
        let covered = !missing.is_empty()
            && roles.iter().all(|role| {
                config.agents.chain(*role)[1..]
                    .iter()
                    .any(|f| problems(f, *role, &f.config_key, repo, vars).1.is_empty())
            });
        // Without a usable agent the planner falls back to one task per acceptance criterion.
        let planner_only = roles == [AgentRole::Planner];
        if missing.is_empty() && key_problem.is_none() {
            out.push(Check::ok("agents", format!("{who}: {kind}{found}")));
        }
        // Issue 40: a known CLI looked up on PATH is what the workflow installs, and its key
        // what it passes: GitHub Actions provides them.
        let installed_by_workflow =
            executor::known_cli(agent.executor).is_some() && agent.command.is_none();
        let missing = missing.into_iter().map(|p| {
            let provided = installed_by_workflow && p.0.ends_with("is not on PATH");
            (p, covered, provided)
        });
        let key_problem = key_problem.map(|p| (p, false, true));
        for ((detail, fix), covered, provided) in missing.chain(key_problem) {
            let (level, detail) = if covered {
                (
                    Level::Warn,
                    format!("{who}: {kind}: {detail} (a fallback runs instead)"),
                )
            } else if planner_only {
                (
                    Level::Warn,
                    format!("{who}: {kind}: {detail} (the deterministic planner is used instead)"),
                )
            } else {
                (Level::Fail, format!("{who}: {kind}: {detail}"))
            };
            out.push(Check {
                level,
                name: "agents",
                detail,
                fix: Some(fix),
                actions_provides: provided,
            });
        }
    }
    out.extend(fallback_checks(config, repo, vars));
    out
}

/// Each fallback of the roles in use (issue 9), once per place it is configured: one that
/// cannot run is a warning (the role's own agent runs without it).
fn fallback_checks(config: &Config, repo: &Path, vars: Vars<'_>) -> Vec<Check> {
    let mut seen: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for role in AgentRole::ALL.into_iter().filter(|r| used(config, *r)) {
        for agent in config.agents.chain(role).into_iter().skip(1) {
            if seen.contains(&agent.config_key) {
                continue;
            }
            seen.push(agent.config_key.clone());
            let at = format!("{} ({})", agent.config_key, agent.executor_key());
            let (found, missing, key_problem) =
                problems(&agent, role, &agent.config_key, repo, vars);
            if missing.is_empty() && key_problem.is_none() {
                out.push(Check::ok("agents", format!("{at}{found}")));
            }
            for (detail, fix) in missing.into_iter().chain(key_problem) {
                out.push(Check::warn("agents", format!("{at}: {detail}"), fix));
            }
        }
    }
    out
}

/// Whether the tick uses a role's agent at all.
pub(super) fn used(config: &Config, role: AgentRole) -> bool {
    match role {
        AgentRole::Planner => config.planner.agent,
        AgentRole::Judge => config.agents.effective(role).review,
        AgentRole::Detector => config.scan.agent,
        AgentRole::Task(_) => true,
    }
}

/// A problem and its fix.
type Problem = (String, String);

/// What stands between one agent entry and a run: where its program was found, what makes it
/// unavailable (the tick then runs a fallback), and a CLI key it will not see. `key` is where to
/// fix it, e.g. `agents.default`.
fn problems(
    agent: &EffectiveAgent,
    role: AgentRole,
    key: &str,
    repo: &Path,
    vars: Vars<'_>,
) -> (String, Vec<Problem>, Option<Problem>) {
    let mut problems: Vec<Problem> = Vec::new();
    let mut found = String::new();
    // Building the executor as the tick does finds what the program checks below do not; a
    // missing program is said once, by those checks.
    let build_problem = || {
        executor::for_role(agent, role, repo).err().map(|e| {
            let text = e.to_string();
            let (detail, fix) = super::split_fix(&text);
            let fix = fix.unwrap_or("correct the configuration (`opentiger config schema`)");
            let detail = detail
                .strip_prefix(&format!("{}: ", agent.config_key))
                .unwrap_or(detail);
            (detail.to_string(), fix.to_string())
        })
    };
    match (agent.executor, executor::known_cli(agent.executor)) {
        (ExecutorKind::Command, _) => {
            if let Some(program) = agent.command.as_ref().and_then(|c| c.first()) {
                // Issue 51: the entry the program was written in, and the true cause.
                let at = &agent.command_at;
                match find_program(program, repo, vars("PATH").as_deref()) {
                    Ok(path) => found = format!(" ({})", path.display()),
                    Err(Missing::NotExecutable(why)) => problems.push((
                        why,
                        format!("chmod +x {program}  (then commit it: runs start from the base branch)"),
                    )),
                    Err(Missing::NotFound(why)) => problems.push((
                        why,
                        format!("install it, or correct {at}.command (a path with `/` is relative to the repository)"),
                    )),
                }
            }
        }
        (_, Some(cli)) => {
            let program = agent
                .command
                .as_ref()
                .and_then(|c| c.first())
                .map_or(cli.program, |p| p.as_str());
            match find_program(program, repo, vars("PATH").as_deref()) {
                Ok(path) => found = format!(" ({})", path.display()),
                Err(Missing::NotExecutable(why) | Missing::NotFound(why)) => problems.push((
                    why,
                    format!(
                        "{} (or set {key}.command to the program's path)",
                        cli.install
                    ),
                )),
            }
            if problems.is_empty() {
                problems.extend(build_problem());
            }
            // Issue 18: without a model opencode runs on its own hosted default, not yours.
            if agent.executor == ExecutorKind::Opencode && agent.model.is_none() {
                problems.push((
                    "no model is set: opencode would use its own hosted default provider, so the tick does not start it".to_string(),
                    format!("set {key}.model to provider/model, e.g. anthropic/claude-sonnet-4-5"),
                ));
            }
            return (found, problems, key_problem(cli, agent, key, vars));
        }
        (_, None) => {}
    }
    if problems.is_empty() {
        problems.extend(build_problem());
    }
    (found, problems, None)
}

/// A key the CLI can use must be set for the runner, which holds it (issue 37: the agent gets a
/// placeholder, opentiger's proxy the key): its provider's (issue 50), else its CLI's. A
/// provider under `providers:` is checked by `doctor::providers`.
fn key_problem(
    cli: &executor::Cli,
    agent: &EffectiveAgent,
    key: &str,
    vars: Vars<'_>,
) -> Option<(String, String)> {
    let names: Vec<&str> = match &agent.provider {
        Some(p) if !p.built_in => return None,
        Some(p) => p.keys.iter().map(String::as_str).collect(),
        None => cli.keys.to_vec(),
    };
    if names
        .iter()
        .any(|k| vars(k).is_some_and(|v| !v.trim().is_empty()))
    {
        return None;
    }
    // A login made by hand on this machine (`claude /login`, `codex login`) serves too: the
    // tick starts the CLI then (issue 18, `executor::missing_key`).
    let home = vars("HOME").map(std::path::PathBuf::from);
    if home.is_some_and(|h| cli.logins.iter().any(|l| h.join(l).is_file())) {
        return None;
    }
    let lookup = |k: &str| vars(k);
    let wanted = executor::wanted_key(cli, agent, &lookup).unwrap_or_else(|| names[0].to_string());
    Some((
        format!("none of {} is set: the agent cannot reach its model", names.join(", ")),
        format!(
            "export {wanted}=... for the runner (in Actions: `env: {wanted}: ${{{{ secrets.{wanted} }}}}` on the opentiger step); it stays with the runner, {key}'s agent gets a placeholder and opentiger's proxy puts the key back on its model API's requests"
        ),
    ))
}

/// Where `program` is: a path (with `/`, relative to the repository) or a name on `PATH`.
/// Why a program was not found: it is not there, or it is there and may not be executed.
enum Missing {
    NotFound(String),
    NotExecutable(String),
}

fn find_program(program: &str, repo: &Path, path_var: Option<&str>) -> Result<PathBuf, Missing> {
    if program.contains('/') {
        let path = if Path::new(program).is_absolute() {
            PathBuf::from(program)
        } else {
            repo.join(program)
        };
        if !path.is_file() {
            return Err(Missing::NotFound(format!(
                "`{program}` does not exist ({})",
                path.display()
            )));
        }
        if !is_executable(&path) {
            return Err(Missing::NotExecutable(format!(
                "`{program}` is not executable ({})",
                path.display()
            )));
        }
        return Ok(path);
    }
    path_var
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
        .map(|d| Path::new(d).join(program))
        .find(|p| p.is_file() && is_executable(p))
        .ok_or_else(|| Missing::NotFound(format!("`{program}` is not on PATH")))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.permissions().mode() & 0o111 != 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::load_str;

    fn lookup(pairs: Vec<(&'static str, String)>) -> impl Fn(&str) -> Option<String> {
        move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
    }

    fn program_dir(names: &[&str]) -> tempfile::TempDir {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        for name in names {
            let p = dir.path().join(name);
            std::fs::write(&p, "#!/bin/sh\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        dir
    }

    #[test]
    fn roles_sharing_an_agent_are_one_check() {
        let config = load_str(
            "agents:\n  default:\n    executor: scripted\n  judge:\n    executor: command\n    command: [\"./judge.sh\"]\n",
            "c.yml",
        )
        .unwrap();
        let repo = program_dir(&["judge.sh"]);
        let checks = checks(&config, repo.path(), &lookup(vec![]));
        let details: Vec<&str> = checks.iter().map(|c| c.detail.as_str()).collect();
        assert_eq!(checks.len(), 2, "{details:?}");
        assert!(
            details[0].starts_with("planner, worker, tester, docser, research: scripted"),
            "{details:?}"
        );
        assert!(details[1].starts_with("judge: command ("), "{details:?}");
        assert!(checks.iter().all(|c| c.level == Level::Ok));
    }

    #[test]
    fn a_missing_program_or_key_names_its_fix() {
        let bin = program_dir(&["my-agent"]);
        let path = bin.path().display().to_string();
        let repo = tempfile::tempdir().unwrap();
        // A command found on PATH; the same name missing.
        let config = load_str(
            "agents:\n  default:\n    executor: command\n    command: [\"my-agent\"]\n",
            "c.yml",
        )
        .unwrap();
        let found = checks(&config, repo.path(), &lookup(vec![("PATH", path.clone())]));
        assert!(found.iter().all(|c| c.level == Level::Ok), "{found:?}");
        let missing = checks(
            &config,
            repo.path(),
            &lookup(vec![("PATH", "/nonexistent".into())]),
        );
        assert_eq!(missing[0].level, Level::Fail);
        assert!(
            missing[0].detail.contains("`my-agent` is not on PATH"),
            "{missing:?}"
        );
        assert!(missing[0]
            .fix
            .as_deref()
            .unwrap_or("")
            .contains("agents.default.command"));

        // claude-code: its program, then its key, each with the fix.
        let config = load_str("agents:\n  default:\n    executor: claude-code\n", "c.yml").unwrap();
        let report = checks(
            &config,
            repo.path(),
            &lookup(vec![("PATH", "/nonexistent".into())]),
        );
        let text = format!("{report:?}");
        assert!(text.contains("`claude` is not on PATH"), "{text}");
        assert!(
            text.contains("npm install -g @anthropic-ai/claude-code"),
            "{text}"
        );
        assert!(
            text.contains("none of ANTHROPIC_API_KEY, CLAUDE_CODE_OAUTH_TOKEN is set"),
            "{text}"
        );

        // Issue 37: a key set for the runner serves, listed or not: the runner holds it.
        let env = lookup(vec![("OPENAI_API_KEY", "sk-secret".into())]);
        let agent_of = |yaml: &str| {
            load_str(yaml, "c.yml")
                .unwrap()
                .agents
                .effective(AgentRole::Task(crate::model::Role::Worker))
        };
        let codex = agent_of("agents:\n  default:\n    executor: codex\n");
        let problem = key_problem(
            executor::known_cli(ExecutorKind::Codex).unwrap(),
            &codex,
            "agents.default",
            &env,
        );
        assert_eq!(problem, None);

        // Issue 18: a login of the CLI's own under $HOME serves as its key, as in a tick.
        let cli = executor::known_cli(ExecutorKind::ClaudeCode).unwrap();
        let claude = agent_of("agents:\n  default:\n    executor: claude-code\n");
        let home = tempfile::tempdir().unwrap();
        let with_home = lookup(vec![("HOME", home.path().display().to_string())]);
        assert!(key_problem(cli, &claude, "agents.default", &with_home).is_some());
        std::fs::create_dir_all(home.path().join(".claude")).unwrap();
        std::fs::write(home.path().join(".claude/.credentials.json"), "{}").unwrap();
        assert_eq!(
            key_problem(cli, &claude, "agents.default", &with_home),
            None
        );

        // Issue 18: opencode without a model is not started; doctor says so.
        let config = load_str("agents:\n  default:\n    executor: opencode\n", "c.yml").unwrap();
        let report = checks(
            &config,
            repo.path(),
            &lookup(vec![("PATH", "/nonexistent".into())]),
        );
        let text = format!("{report:?}");
        assert!(
            text.contains("no model is set: opencode would use its own hosted default"),
            "{text}"
        );
        assert!(
            text.contains("set agents.default.model to provider/model"),
            "{text}"
        );
    }

    #[test]
    fn an_unusable_planner_alone_is_a_warning() {
        let config = load_str(
            "agents:\n  default:\n    executor: scripted\n  planner:\n    executor: command\n    command: [\"./nope.sh\"]\n",
            "c.yml",
        )
        .unwrap();
        let repo = tempfile::tempdir().unwrap();
        let report = checks(&config, repo.path(), &lookup(vec![]));
        let planner: Vec<&Check> = report
            .iter()
            .filter(|c| c.detail.starts_with("planner"))
            .collect();
        assert_eq!(planner.len(), 1, "{report:?}");
        assert_eq!(planner[0].level, Level::Warn);
        assert!(planner[0].detail.contains("deterministic planner"));
    }

    /// Issue 9: a missing program that a fallback covers is a warning; each fallback is checked
    /// once where it is configured; a key the agent will not see is no reason to fall back.
    #[test]
    fn fallbacks_are_checked_and_cover_a_missing_program() {
        let repo = tempfile::tempdir().unwrap();
        let run = |yaml: &str| -> Vec<(Level, String)> {
            let config = load_str(yaml, "c.yml").unwrap();
            checks(&config, repo.path(), &lookup(vec![]))
                .into_iter()
                .map(|c| (c.level, c.detail))
                .collect()
        };
        let covered = run("agents:\n  default:\n    executor: scripted\n  worker:\n    executor: command\n    command: [\"/nonexistent/agent\"]\n    fallbacks: [{command: [\"/bin/sh\"]}]\n");
        assert!(
            covered.contains(&(
                Level::Warn,
                // Research inherits the worker's agent and fallbacks (issue 28).
                "worker, research: command: `/nonexistent/agent` does not exist (/nonexistent/agent) (a fallback runs instead)".to_string()
            )),
            "{covered:?}"
        );
        assert!(
            covered.contains(&(
                Level::Ok,
                "agents.worker.fallbacks[0] (command:/bin/sh) (/bin/sh)".to_string()
            )),
            "{covered:?}"
        );

        let shared = run("agents:\n  default:\n    executor: scripted\n    fallbacks: [{executor: command, command: [\"/nonexistent/fb\"]}]\n");
        let fallbacks: Vec<_> = shared
            .iter()
            .filter(|(_, d)| d.starts_with("agents.default.fallbacks[0]"))
            .collect();
        assert_eq!(fallbacks.len(), 1, "once for every role: {shared:?}");
        assert_eq!(fallbacks[0].0, Level::Warn);
        assert!(
            fallbacks[0].1.contains("`/nonexistent/fb` does not exist"),
            "{shared:?}"
        );
        assert!(shared.iter().all(|(l, _)| *l != Level::Fail), "{shared:?}");

        let no_key = run("agents:\n  default:\n    executor: scripted\n  worker:\n    executor: codex\n    command: [\"/bin/sh\"]\n    fallbacks: [{executor: scripted}]\n");
        let worker: Vec<_> = no_key
            .iter()
            .filter(|(_, d)| d.starts_with("worker, research: codex"))
            .collect();
        assert_eq!(worker.len(), 1, "{no_key:?}");
        assert_eq!(worker[0].0, Level::Fail, "{no_key:?}");
    }
}

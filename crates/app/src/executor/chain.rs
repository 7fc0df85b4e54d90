//! Whether an agent entry can run here, as the tick's pre-claim check and the runner both ask it
//! for every executor of a role's chain (`agents.<role>.fallbacks`, issue 9): its program is
//! found, and a CLI is given a key or has a login (issue 18). Not for: which usable executor a
//! run takes (`engine::fallback`, via `runner::executors`), or what counts as a key or a login
//! (`executor::keys`).

use std::path::Path;

use super::{for_role, locate, missing_key, Executor, ExecutorError};
use crate::config::{AgentRole, EffectiveAgent, ExecutorKind};

/// The executor of one agent entry, ready to run: [`for_role`], and for `executor: command` its
/// program found too (on PATH, or relative to the repository when it has a `/`), so that a
/// missing program makes the entry unavailable before anything is claimed, like a missing CLI.
pub fn build(
    agent: &EffectiveAgent,
    role: AgentRole,
    repo: &Path,
) -> Result<Box<dyn Executor>, ExecutorError> {
    if agent.executor == ExecutorKind::Command {
        if let Some(program) = agent.command.as_ref().and_then(|c| c.first()) {
            let path_var = std::env::var("PATH").ok();
            if locate(program, path_var.as_deref(), repo).is_none() {
                return Err(ExecutorError::Unavailable(missing_program(
                    &agent.command_at,
                    program,
                    repo,
                )));
            }
        }
    }
    let exec = for_role(agent, role, repo)?;
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    if let Some(text) = missing_key(agent, |k| std::env::var(k).ok(), home.as_deref()) {
        return Err(ExecutorError::Misconfigured(text));
    }
    Ok(exec)
}

/// What is wrong with an agent's program that [`locate`] did not find, with the fix that can be
/// pasted: a file there that may not be executed is not a missing one (issue 51).
fn missing_program(key: &str, program: &str, repo: &Path) -> String {
    let path = repo.join(program);
    if program.contains('/') && path.is_file() {
        return format!(
            "{key}.command: `{program}` is not executable ({})\n  fix: chmod +x {program}  (then commit it: runs start from the base branch)",
            path.display()
        );
    }
    let looked = if program.contains('/') {
        format!("relative to {}", repo.display())
    } else {
        "on PATH".to_string()
    };
    format!(
        "{key}.command: `{program}` was not found ({looked})\n  fix: install it, or correct `{key}.command` (a path with `/` is relative to the repository)"
    )
}

/// Why no executor of a role's chain can run: the error itself when the role has no fallbacks,
/// else each executor's, in the order they were tried.
pub fn none_usable(role: AgentRole, chain: &[EffectiveAgent], errors: &[String]) -> String {
    if let [only] = errors {
        return only.clone();
    }
    let mut text = format!(
        "no executor of agents.{} can run here (tried in order):",
        role.name()
    );
    for (agent, error) in chain.iter().zip(errors) {
        text.push_str(&format!(
            "\n  - {}: {}",
            agent.executor_key(),
            error
                .lines()
                .map(str::trim_start)
                .collect::<Vec<_>>()
                .join("\n    ")
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Role;

    #[test]
    fn a_chain_that_cannot_run_names_every_executor() {
        let repo = tempfile::tempdir().unwrap();
        let yaml = "agents:\n  worker:\n    executor: command\n    command: [\"./missing.sh\"]\n    fallbacks:\n      - executor: codex\n        command: [\"./bin/codex\"]\n      - executor: command\n        command: [\"sh\"]\n";
        let config = crate::config::load_str(yaml, ".opentiger.yml").unwrap();
        let role = AgentRole::Task(Role::Worker);
        let chain = config.agents.chain(role);
        let built: Vec<_> = chain.iter().map(|a| build(a, role, repo.path())).collect();
        let errors: Vec<String> = built
            .iter()
            .filter_map(|b| b.as_ref().err().map(|e| e.to_string()))
            .collect();
        assert!(built[2].is_ok(), "sh is on PATH");
        assert_eq!(errors.len(), 2);
        assert!(
            errors[0]
                .starts_with("agents.worker.command: `./missing.sh` was not found (relative to "),
            "{}",
            errors[0]
        );
        assert!(
            errors[1].starts_with(
                "agents.worker.fallbacks[0].executor is `codex`, but its program `./bin/codex`"
            ),
            "{}",
            errors[1]
        );
        let text = none_usable(role, &chain[..2], &errors);
        assert!(
            text.starts_with("no executor of agents.worker can run here (tried in order):\n  - command:./missing.sh: agents.worker.command:"),
            "{text}"
        );
        assert!(
            text.contains("\n  - codex: agents.worker.fallbacks[0].executor is `codex`"),
            "{text}"
        );
        assert!(text.contains("\n    fix: install it (`npm install -g @openai/codex`), or set `agents.worker.fallbacks[0].command`"), "{text}");
        assert_eq!(
            none_usable(role, &chain[..1], &errors[..1]),
            errors[0],
            "no fallbacks: the error as it was"
        );
    }

    /// Issue 51: a program that is there but may not be executed is named as such, under the
    /// key the user wrote (`agents.default`, which every role inherits), with a fix to paste.
    #[test]
    fn a_program_without_its_execute_bit_is_named_under_the_key_written() {
        let repo = tempfile::tempdir().unwrap();
        std::fs::create_dir(repo.path().join("scripts")).unwrap();
        std::fs::write(repo.path().join("scripts/agent.sh"), "#!/bin/sh\n").unwrap();
        let yaml =
            "agents:\n  default:\n    executor: command\n    command: [\"./scripts/agent.sh\"]\n";
        let config = crate::config::load_str(yaml, ".opentiger.yml").unwrap();
        let role = AgentRole::Task(Role::Worker);
        let error = build(&config.agents.effective(role), role, repo.path())
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.starts_with("agents.default.command: `./scripts/agent.sh` is not executable ("),
            "{error}"
        );
        assert!(
            error.contains("\n  fix: chmod +x ./scripts/agent.sh  ("),
            "{error}"
        );
        // Missing altogether, written on the role: named there, as not found.
        let yaml =
            "agents:\n  worker:\n    executor: command\n    command: [\"./scripts/gone.sh\"]\n";
        let config = crate::config::load_str(yaml, ".opentiger.yml").unwrap();
        let error = build(&config.agents.effective(role), role, repo.path())
            .err()
            .unwrap()
            .to_string();
        assert!(
            error.starts_with(
                "agents.worker.command: `./scripts/gone.sh` was not found (relative to "
            ),
            "{error}"
        );
    }
}

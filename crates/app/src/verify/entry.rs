//! The configuration's verification commands, checked where they enter (config load) with the
//! parser and denied list the runner uses when a run ends ([`super::plan_commands`]), so a
//! command that cannot run is refused before any agent runs, not after it was paid for.
//! [`explain`] words a command's problem with its fix.
//! Not for: a task's own commands (`runner::task_problems`, with the same `explain`) or the
//! configuration's other keys (`config::load`; path patterns, `config::entry`).

use super::{check_commands, config_lists, PlanError};
use crate::config::Config;

/// `(key, message, fix)` of the first verification command of `config` that cannot run; given
/// to `config::load_checked` by the commands that load the configuration.
pub fn config_problem(config: &Config) -> Result<(), (String, String, String)> {
    let verify = &config.verify;
    for (key, commands, source) in config_lists(verify) {
        check_commands(
            commands,
            source,
            &format!("`{key}`"),
            &verify.denied_commands,
        )
        .map_err(|(i, e)| {
            let (message, fix) = explain(&e);
            (format!("{key}[{i}]"), message, fix)
        })?;
    }
    Ok(())
}

/// A command's problem for a config error: what is wrong, and the fix.
pub fn explain(e: &PlanError) -> (String, String) {
    match e {
        PlanError::Invalid { error, .. } => (
            error.to_string(),
            "write one program and its arguments per entry; a pipeline, redirect, `;` or \
             variable belongs in a script file in the repository, run as `./scripts/check.sh`"
                .to_string(),
        ),
        PlanError::Denied {
            command,
            entry,
            builtin,
            ..
        } => (
            format!("`{command}` is denied: it matches `{entry}`"),
            if *builtin {
                format!(
                    "remove it: `{entry}` is always denied (the runner, not the agent, pushes, \
                     and verification needs neither the network nor root)"
                )
            } else {
                format!("remove it, or remove `{entry}` from `verify.denied_commands`")
            },
        ),
        PlanError::InvalidGlob { error, .. } => (error.to_string(), error.problem.to_string()),
    }
}

//! The configuration's verification commands and path patterns, checked at load with the parsers
//! the runner uses when a run ends (`verify`, `policy`), so a command or path that cannot work is
//! refused before any agent runs, not after it has been paid for.
//!
//! Not for: the commands and paths of tasks (`task add`, plan files and issue imports check
//! those where they enter, with the same parsers).

use crate::policy::Glob;
use crate::verify::{self, PlanError};

/// `(key, message, fix)` of the first entry that cannot work.
pub(super) fn check(config: &super::Config) -> Result<(), (String, String, String)> {
    let verify = &config.verify;
    for (key, commands, source) in verify::config_lists(verify) {
        verify::check_commands(
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
    let mut globs: Vec<(String, &[String])> = vec![
        (
            "policy.allowed_paths".to_string(),
            &config.policy.allowed_paths,
        ),
        (
            "policy.denied_paths".to_string(),
            &config.policy.denied_paths,
        ),
    ];
    for (i, rule) in verify.when_changed.iter().enumerate() {
        globs.push((format!("verify.when_changed[{i}].paths"), &rule.paths));
    }
    for (key, patterns) in globs {
        for (i, pattern) in patterns.iter().enumerate() {
            if let Err(e) = Glob::new(pattern) {
                return Err((
                    format!("{key}[{i}]"),
                    format!("`{pattern}` is not a path pattern the policy can use"),
                    e.problem.to_string(),
                ));
            }
        }
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

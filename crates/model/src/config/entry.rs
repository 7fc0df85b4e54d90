//! The configuration's path patterns, checked at load with the matcher the runner's policy
//! uses (`policy::Glob`), so a pattern that cannot work is refused before any agent runs. The
//! verification commands are checked by `verify::config_problem`, which the loading commands
//! pass to [`super::load_checked`] (`verify` reads the configuration, so the configuration
//! cannot call it).
//!
//! Not for: the commands and paths of tasks (`task add`, plan files and issue imports check
//! those where they enter, with the same parsers).

use crate::policy::Glob;

/// `(key, message, fix)` of the first pattern that cannot work.
pub(super) fn check(config: &super::Config) -> Result<(), (String, String, String)> {
    let verify = &config.verify;
    let mut globs: Vec<(String, &[String])> = vec![
        (
            "policy.allowed_paths".to_string(),
            &config.policy.allowed_paths,
        ),
        (
            "policy.denied_paths".to_string(),
            &config.policy.denied_paths,
        ),
        ("policy.held_paths".to_string(), &config.policy.held_paths),
        (
            "policy.held_paths_except".to_string(),
            &config.policy.held_paths_except,
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

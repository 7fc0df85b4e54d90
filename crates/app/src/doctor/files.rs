//! Programs in the repository that runs need, checked on the base branch: runs start from a
//! worktree of `base_branch`, so a verification script that exists only in the working tree
//! (not committed) is missing where it runs. An agent program is run from the checkout, so an
//! uncommitted one works here but not in a CI checkout of the base branch.
//!
//! Not for: programs looked up on PATH (`agents.rs` checks those).

use std::path::Path;

use super::Check;
use crate::config::{AgentRole, Config};
use crate::git::Git;
use crate::model::Mode;

/// One check per repository program that is not on the base branch; one `ok` when all are.
pub fn checks(config: &Config, repo: &Path) -> Vec<Check> {
    let git = Git::new(repo);
    let base = &config.base_branch;
    let mut out = Vec::new();
    let mut seen = 0;
    for (key, program, in_worktree) in programs(config) {
        seen += 1;
        let rel = program.trim_start_matches("./");
        let on_base = git
            .try_run(&["cat-file", "-e", &format!("refs/heads/{base}:{rel}")])
            .ok()
            .flatten()
            .is_some();
        if on_base {
            continue;
        }
        let here = repo.join(rel).is_file();
        out.push(match (here, in_worktree, config.mode) {
            (false, _, _) => Check::fail(
                "programs",
                format!("`{program}` ({key}) does not exist in the repository"),
                format!("add it and commit it to `{base}`, or fix {key}"),
            ),
            (true, true, _) => Check::fail(
                "programs",
                format!(
                    "`{program}` ({key}) is in the working tree but not on `{base}`: runs work \
                     in a worktree of `{base}`, where it is missing"
                ),
                format!("commit it, runs start from `{base}`"),
            ),
            (true, false, Mode::Github) => Check::fail(
                "programs",
                format!(
                    "`{program}` ({key}) is in the working tree but not on `{base}`: the \
                     workflow's checkout of `{base}` will not have it"
                ),
                format!("commit it, runs start from `{base}`"),
            ),
            (true, false, Mode::LocalGit | Mode::Direct) => Check::warn(
                "programs",
                format!(
                    "`{program}` ({key}) is in the working tree but not on `{base}`: it runs \
                     from this checkout, but a fresh clone or CI will not have it"
                ),
                format!("commit it to `{base}`"),
            ),
        });
    }
    if out.is_empty() && seen > 0 {
        out.push(Check::ok(
            "programs",
            format!("the repository's programs that runs use are on `{base}`"),
        ));
    }
    out
}

/// Repository programs (relative, with a `/`) of the configuration: `(key, program, runs in
/// the worktree)`. Verification commands run in the run's worktree; agents from the checkout.
fn programs(config: &Config) -> Vec<(String, String, bool)> {
    let relative = |p: &str| p.contains('/') && !p.starts_with('/');
    let mut out: Vec<(String, String, bool)> = Vec::new();
    for (key, commands, _) in crate::verify::config_lists(&config.verify) {
        for (i, text) in commands.iter().enumerate() {
            let Ok(specs) = crate::verify::parse_command(text) else {
                continue; // the config check reports it
            };
            for spec in specs.into_iter().filter(|s| relative(&s.program)) {
                if !out.iter().any(|(_, p, _)| *p == spec.program) {
                    out.push((format!("{key}[{i}]"), spec.program, true));
                }
            }
        }
    }
    for role in AgentRole::ALL {
        for agent in config.agents.chain(role) {
            let program = agent.command.as_ref().and_then(|c| c.first()).cloned();
            if let Some(program) = program.filter(|p| relative(p)) {
                if !out.iter().any(|(_, p, _)| *p == program) {
                    out.push((format!("{}.command", agent.config_key), program, false));
                }
            }
        }
    }
    out
}

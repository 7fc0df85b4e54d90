//! The throw-away side of an eval: the configuration a clone's ticks get, the clone itself
//! (its base branch at the change's parent, no remote), and the trees the hidden tests run on.
//! The clone holds the history up to the parent and nothing later — an agent's workspace
//! borrows the clone's objects, and the change's own files (its tests, its code) must not be
//! among them. The user's repository is only read: a fetch from it into a new repository, and
//! for the change's own tree `read-tree` into a private index file.
//! Not for: the ticks (`eval::task`), or which files are hidden tests (`eval::change`).

use std::path::{Path, PathBuf};

use crate::config::{AgentConfig, Config, StoreKind};
use crate::failure::Failure;
use crate::git::Git;
use crate::model::Mode;

/// What the eval changes in a configuration for a clone: local-git mode with its state in a
/// file outside the clone's work tree (`state`), a per-task budget no larger than what the
/// eval's budget leaves (`per_task_usd`), and an agent program named by a relative path taken
/// from the user's repository (`source`) — the agent under evaluation is today's, which the
/// past commit may not hold. Pure.
pub fn for_clone(
    config: &Config,
    source: &Path,
    state: &Path,
    per_task_usd: Option<f64>,
) -> Config {
    let mut c = config.clone();
    c.mode = Mode::LocalGit;
    c.state.store = Some(StoreKind::File);
    c.state.path = state.display().to_string();
    if let Some(left) = per_task_usd {
        c.budget.per_task_usd = c.budget.per_task_usd.min(left.max(0.0));
    }
    // `./scripts/agent.sh` is a path in the repository; a bare `aider` is looked up on PATH.
    let program = |agent: &mut AgentConfig| {
        if let Some(program) = agent.command.as_mut().and_then(|argv| argv.first_mut()) {
            if program.contains('/') && Path::new(program.as_str()).is_relative() {
                *program = source.join(program.as_str()).display().to_string();
            }
        }
    };
    let anchor = |agent: &mut AgentConfig| {
        program(agent);
        if let Some(script) = agent.script.as_mut() {
            if Path::new(script.as_str()).is_relative() {
                *script = source.join(script.as_str()).display().to_string();
            }
        }
        agent.fallbacks.iter_mut().flatten().for_each(program);
    };
    let a = &mut c.agents;
    for agent in [
        &mut a.default,
        &mut a.planner,
        &mut a.worker,
        &mut a.tester,
        &mut a.docser,
        &mut a.judge,
        &mut a.research,
        &mut a.detector,
    ] {
        anchor(agent);
    }
    c
}

/// The configuration as YAML, as `config show` prints it.
pub fn config_text(config: &Config) -> Result<String, Failure> {
    serde_saphyr::to_string(config)
        .map_err(|e| Failure::tick(format!("eval: could not write the configuration: {e}")))
}

fn failed(what: &str, e: impl std::fmt::Display) -> Failure {
    Failure::tick(format!("eval: could not {what}: {e}"))
}

/// A new repository in `dir` holding `source`'s history up to `parent`, with `base` checked
/// out there; it has no remote.
pub fn make(source: &Path, dir: &Path, base: &str, parent: &str) -> Result<Git, Failure> {
    let from = source.display().to_string();
    let to = dir.display().to_string();
    Git::new(dir.parent().unwrap_or(dir))
        .run(&["init", "-q", &to])
        .map_err(|e| failed(&format!("make a repository in {to}"), e))?;
    let git = Git::new(dir);
    git.run(&["fetch", "-q", "--no-tags", &from, parent])
        .map_err(|e| failed(&format!("fetch {parent} from {from}"), e))?;
    git.run(&["checkout", "-q", "-B", base, parent])
        .map_err(|e| failed(&format!("check out {parent} as {base}"), e))?;
    Ok(git)
}

/// The files of `rev` of `source` written into `dir`, through an index file of our own (`index`,
/// outside `dir`): nothing of `source` is written.
pub fn tree_of_source(source: &Git, rev: &str, dir: &Path, index: &Path) -> Result<(), Failure> {
    let git = source.with_env("GIT_INDEX_FILE", &index.display().to_string());
    git.run(&["read-tree", rev])
        .map_err(|e| failed(&format!("read {rev}"), e))?;
    let prefix = format!("{}/", dir.display());
    git.run(&["checkout-index", "-a", "-f", &format!("--prefix={prefix}")])
        .map_err(|e| failed(&format!("write the files of {rev}"), e))?;
    let _ = std::fs::remove_file(index);
    Ok(())
}

/// A work tree of the clone at `rev`, in `dir`.
pub fn tree_at(clone: &Git, rev: &str, dir: &Path) -> Result<PathBuf, Failure> {
    let to = dir.display().to_string();
    clone
        .run(&["worktree", "add", "-q", "--detach", &to, rev])
        .map_err(|e| failed(&format!("check out {rev}"), e))?;
    Ok(dir.to_path_buf())
}

/// Puts the hidden tests into `tree` as `commit` has them (a file `commit` deleted is deleted),
/// read from the user's repository.
pub fn apply_hidden(
    source: &Git,
    commit: &str,
    hidden: &[String],
    tree: &Path,
) -> Result<(), Failure> {
    use std::os::unix::fs::PermissionsExt;
    for path in hidden {
        let target = tree.join(path);
        let listed = source
            .run(&["ls-tree", commit, "--", path])
            .map_err(|e| failed(&format!("read {path} at {commit}"), e))?;
        let Some((mode, _)) = listed.split_once(' ') else {
            match std::fs::remove_file(&target) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => return Err(failed(&format!("remove {path}"), e)),
            }
            continue;
        };
        // A submodule has no content here to put anywhere.
        if mode == "160000" {
            continue;
        }
        let bytes = source
            .run_bytes(&["cat-file", "blob", &format!("{commit}:{path}")])
            .map_err(|e| failed(&format!("read {path} at {commit}"), e))?;
        if let Some(dir) = target.parent() {
            std::fs::create_dir_all(dir).map_err(|e| failed(&format!("write {path}"), e))?;
        }
        // What the loop left at that path (a file, or a link) gives way to the test.
        if std::fs::symlink_metadata(&target).is_ok() {
            std::fs::remove_file(&target).map_err(|e| failed(&format!("replace {path}"), e))?;
        }
        if mode == "120000" {
            let link = String::from_utf8_lossy(&bytes).into_owned();
            std::os::unix::fs::symlink(link, &target)
                .map_err(|e| failed(&format!("link {path}"), e))?;
            continue;
        }
        std::fs::write(&target, bytes).map_err(|e| failed(&format!("write {path}"), e))?;
        let executable = mode == "100755";
        let perms = std::fs::Permissions::from_mode(if executable { 0o755 } else { 0o644 });
        std::fs::set_permissions(&target, perms)
            .map_err(|e| failed(&format!("set the mode of {path}"), e))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_gets_local_git_a_state_file_outside_and_todays_agent() {
        let mut config = Config {
            mode: Mode::Github,
            ..Config::default()
        };
        config.agents.default.command = Some(vec!["./scripts/agent.sh".into(), "-v".into()]);
        config.agents.judge.command = Some(vec!["/usr/bin/judge".into()]);
        config.agents.worker.command = Some(vec!["aider".into()]);
        config.agents.planner.script = Some("script.json".into());
        config.budget.per_task_usd = 5.0;
        let c = for_clone(
            &config,
            Path::new("/home/me/repo"),
            Path::new("/tmp/e/state.sqlite"),
            Some(2.0),
        );
        assert_eq!(c.mode, Mode::LocalGit);
        assert_eq!(c.state.store, Some(StoreKind::File));
        assert_eq!(c.state.path, "/tmp/e/state.sqlite");
        assert_eq!(c.budget.per_task_usd, 2.0);
        assert_eq!(
            c.agents.default.command.as_deref(),
            Some(&["/home/me/repo/./scripts/agent.sh".to_string(), "-v".into()][..])
        );
        assert_eq!(
            c.agents.judge.command.as_deref(),
            Some(&["/usr/bin/judge".to_string()][..])
        );
        assert_eq!(
            c.agents.worker.command.as_deref(),
            Some(&["aider".to_string()][..])
        );
        assert_eq!(
            c.agents.planner.script.as_deref(),
            Some("/home/me/repo/script.json")
        );
        let roomy = for_clone(&config, Path::new("/r"), Path::new("/s"), Some(50.0));
        assert_eq!(roomy.budget.per_task_usd, 5.0, "never more than configured");
    }

    #[test]
    fn the_configuration_text_loads_back_as_it_was() {
        let c = for_clone(
            &Config::default(),
            Path::new("/r"),
            Path::new("/s/state.sqlite"),
            None,
        );
        let text = config_text(&c).unwrap();
        let back = crate::config::load_str(&text, "eval.yml").unwrap();
        assert_eq!(back, c);
    }
}

//! Where a command works: the repository found from the current folder as git finds it (the
//! top of the work tree, `git rev-parse --show-toplevel`), unless `--repo` names one; and what a
//! command says when no `.opentiger.yml` is there, before it starts a state with the defaults.
//!
//! Not for: reading the configuration (`config::load`), or finding the top of the work tree
//! itself (`git::work_tree_top`, which takes no `git` process: a quiet tick stays cheap).

use std::path::{Path, PathBuf};

use super::Failure;
use crate::config::{ConfigSource, StoreKind};
use crate::tick::Context;

/// The repository a command without `--repo` works on: the work tree holding `cwd`, or the
/// one-line error saying there is none, with the fix (exit 2).
pub fn repository_of(cwd: &Path) -> Result<PathBuf, Failure> {
    crate::git::work_tree_top(cwd).ok_or_else(|| {
        Failure::usage(format!(
            "no git repository in {} or any folder above it: run opentiger inside your repository's folder, `git init` one here, or pass --repo DIR",
            cwd.display()
        ))
    })
}

/// Whether a command writes the state, for what it says about the built-in defaults.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    Read,
    /// `task add`, `tick`, `plan`: may start a new state.
    Write,
}

/// With no `.opentiger.yml`, a read says so; a write that would start a new state says which
/// defaults it uses and where the state will live, and when `interactive` (a person at a
/// terminal) refuses unless `yes` (`--yes`): a state started by mistake in the wrong place is
/// easy to miss.
pub fn confirm_defaults(
    ctx: &Context,
    access: Access,
    yes: bool,
    interactive: bool,
) -> Result<(), Failure> {
    match &ctx.config_source {
        ConfigSource::File(_) => return Ok(()),
        ConfigSource::Defaults => {}
    }
    let missing = ctx.repo.join(".opentiger.yml");
    if access == Access::Read {
        eprintln!(
            "note: no configuration: built-in defaults ({} does not exist)",
            missing.display()
        );
        return Ok(());
    }
    let (exists, place) = match ctx.config.store_kind() {
        StoreKind::File => {
            let path = ctx.state_path()?;
            (path.exists(), format!("in the file {}", path.display()))
        }
        StoreKind::Branch => {
            let state = ctx.state_ref();
            let git = crate::git::Git::new(&ctx.repo);
            let s = &ctx.config.state;
            let local = if s.branch.starts_with("refs/") {
                s.branch.clone()
            } else {
                format!("refs/heads/{}", s.branch)
            };
            let fetched = format!("refs/remotes/{}/{}", s.remote, s.branch);
            let exists = [local, fetched]
                .iter()
                .any(|r| git.resolve(r).ok().flatten().is_some());
            (exists, format!("on the branch {}", state.describe()))
        }
    };
    if exists {
        return Ok(());
    }
    let said = format!(
        "no configuration ({} does not exist): a new state with the built-in defaults — mode {}, base branch {}, the state {place}",
        missing.display(),
        ctx.config.mode,
        ctx.config.base_branch,
    );
    if !yes && interactive {
        return Err(Failure::usage(format!(
            "{said}\n  fix: `opentiger init` writes a configuration here (or run from the folder that has one, or pass --config FILE); --yes starts with the defaults anyway"
        )));
    }
    eprintln!("note: {said}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_state_with_the_defaults_is_refused_at_a_terminal_unless_yes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let out = std::process::Command::new("git")
            .args(["init", "-q", "-b", "main"])
            .current_dir(dir.path())
            .output()
            .expect("git init");
        assert!(out.status.success());
        let ctx = Context::load(&crate::tick::ContextOptions {
            repo: dir.path().to_path_buf(),
            ..Default::default()
        })
        .expect("defaults load");
        let refused =
            confirm_defaults(&ctx, Access::Write, false, true).expect_err("refused at a terminal");
        assert_eq!(refused.code, 2);
        for needle in ["mode github", "opentiger/state", "opentiger init", "--yes"] {
            assert!(
                refused.message.contains(needle),
                "{needle}: {}",
                refused.message
            );
        }
        confirm_defaults(&ctx, Access::Write, true, true).expect("--yes");
        confirm_defaults(&ctx, Access::Write, false, false).expect("no terminal: said, not asked");
        confirm_defaults(&ctx, Access::Read, false, true).expect("a read only says so");
        // A state that exists already is not a new one: nothing to confirm.
        let file = crate::tick::Context {
            config: crate::config::Config {
                mode: crate::model::Mode::LocalGit,
                ..ctx.config.clone()
            },
            ..ctx.clone()
        };
        let state = file.state_path().expect("a file store");
        std::fs::create_dir_all(state.parent().expect("a folder")).expect("mkdir");
        std::fs::write(&state, "").expect("write");
        confirm_defaults(&file, Access::Write, false, true).expect("the state exists");
    }

    #[test]
    fn the_top_of_the_work_tree_is_found_from_any_folder_in_it() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("repo");
        let deep = root.join("src/deep");
        std::fs::create_dir_all(root.join(".git")).expect("mkdir");
        std::fs::write(root.join(".git/HEAD"), "ref: refs/heads/main\n").expect("write");
        std::fs::create_dir_all(&deep).expect("mkdir");
        assert_eq!(crate::git::work_tree_top(&deep), Some(root.clone()));
        assert_eq!(crate::git::work_tree_top(&root), Some(root.clone()));
        // A linked worktree (or a submodule) inside: its own top, as git says.
        let linked = root.join("src/linked");
        std::fs::create_dir_all(linked.join("a")).expect("mkdir");
        let pointed = root.join(".git/worktrees/x");
        std::fs::create_dir_all(&pointed).expect("mkdir");
        std::fs::write(pointed.join("HEAD"), "ref: refs/heads/x\n").expect("write");
        std::fs::write(pointed.join("commondir"), "../..\n").expect("write");
        std::fs::write(
            linked.join(".git"),
            format!("gitdir: {}\n", pointed.display()),
        )
        .expect("write");
        assert_eq!(crate::git::work_tree_top(&linked.join("a")), Some(linked));
        // A `.git` that is neither is not a repository.
        let other = dir.path().join("other/sub");
        std::fs::create_dir_all(&other).expect("mkdir");
        std::fs::write(dir.path().join("other/.git"), "not a pointer").expect("write");
        assert_eq!(crate::git::work_tree_top(&other), None);
        let failure = repository_of(&other).expect_err("no repository");
        assert_eq!(failure.code, 2);
        assert!(
            !failure.message.contains('\n') && failure.message.contains("--repo DIR"),
            "{}",
            failure.message
        );
    }
}

//! The configuration files git reads, checked around each agent run.
//!
//! An agent runs as the runner's user, so it can write the repository's shared `.git/config`
//! (every worktree reads it), a worktree's `config.worktree`, the user's `~/.gitconfig` and any
//! file those include. A setting there — `core.fsmonitor`, a `filter.<name>.clean` driver, a
//! `remote.origin.url` — would make the runner's next git command run the agent's program or
//! send data where the agent chose. [`ConfigSnapshot::take`] keeps the bytes of each such file
//! before the agent starts; [`ConfigSnapshot::restore_changes`] afterwards puts back any file
//! that changed (or removes one that appeared) before the runner runs git again, and names the
//! keys that changed (never their values) for the policy violation.
//!
//! Not here: the `-c` overrides every runner git command carries (`git::HARDENING`).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use crate::git::{Git, GitError};

/// A file's bytes and permission bits.
type Kept = (Vec<u8>, u32);

/// The bytes of each configuration file before the agent ran (`None`: it did not exist).
#[derive(Debug)]
pub struct ConfigSnapshot {
    files: Vec<(PathBuf, Option<Kept>)>,
}

/// A configuration file the agent changed, put back as it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tampered {
    pub file: PathBuf,
    /// Keys whose values were added, changed or removed (lower-case section and name).
    pub keys: Vec<String>,
}

impl ConfigSnapshot {
    /// The files of the repository `worktree` belongs to, of the worktree itself, and of the
    /// user (`$HOME/.gitconfig`, `$XDG_CONFIG_HOME/git/config`), plus the files they include.
    pub fn take(worktree: &Git) -> Result<ConfigSnapshot, GitError> {
        let common = worktree.common_dir()?;
        let git_dir = absolute(worktree, &worktree.run(&["rev-parse", "--git-dir"])?);
        let mut paths = vec![
            common.join("config"),
            common.join("config.worktree"),
            git_dir.join("config"),
            git_dir.join("config.worktree"),
        ];
        if let Some(home) = std::env::var_os("HOME") {
            paths.push(Path::new(&home).join(".gitconfig"));
            paths.push(Path::new(&home).join(".config/git/config"));
        }
        if let Some(xdg) = std::env::var_os("XDG_CONFIG_HOME") {
            paths.push(Path::new(&xdg).join("git/config"));
        }
        let mut included = Vec::new();
        for path in &paths {
            included.extend(includes(worktree, path));
        }
        paths.extend(included);
        paths.sort();
        paths.dedup();
        let files = paths
            .into_iter()
            .map(|p| {
                let mode = std::fs::metadata(&p).map_or(0o644, |m| m.permissions().mode());
                let bytes = std::fs::read(&p).ok().map(|b| (b, mode));
                (p, bytes)
            })
            .collect();
        Ok(ConfigSnapshot { files })
    }

    /// Puts back every file that changed since [`ConfigSnapshot::take`] and says which keys
    /// changed in each. Empty: nothing changed.
    pub fn restore_changes(&self, git: &Git) -> Result<Vec<Tampered>, std::io::Error> {
        let mut tampered = Vec::new();
        for (path, before) in &self.files {
            let now = std::fs::read(path).ok();
            if now.as_ref() == before.as_ref().map(|(b, _)| b) {
                continue;
            }
            let old = before.as_ref().map(|(b, _)| b.as_slice());
            let keys = changed_keys(git, old, now.as_deref());
            match before {
                Some((bytes, mode)) => {
                    // Replace, never write through: the agent may have made it a symlink.
                    crate::scratch::write_private(path, bytes)?;
                    std::fs::set_permissions(path, std::fs::Permissions::from_mode(*mode))?;
                }
                None => std::fs::remove_file(path)?,
            }
            tampered.push(Tampered {
                file: path.clone(),
                keys,
            });
        }
        Ok(tampered)
    }
}

/// The policy violation's text: each file and its changed keys.
pub fn describe(tampered: &[Tampered]) -> String {
    let files: Vec<String> = tampered
        .iter()
        .map(|t| {
            let keys = if t.keys.is_empty() {
                "its content".to_string()
            } else {
                t.keys.join(", ")
            };
            format!("{} ({keys})", t.file.display())
        })
        .collect();
    format!(
        "policy_violation: the agent changed the git repository configuration, which was put back: {}",
        files.join("; ")
    )
}

fn absolute(git: &Git, path: &str) -> PathBuf {
    let p = PathBuf::from(path);
    if p.is_absolute() {
        p
    } else {
        git.dir().join(p)
    }
}

/// The files `path` includes (`include.path`, `includeIf.*.path`), read without following them.
fn includes(git: &Git, path: &Path) -> Vec<PathBuf> {
    let Ok(bytes) = std::fs::read(path) else {
        return Vec::new();
    };
    let base = path.parent().unwrap_or(Path::new("/"));
    entries(git, &bytes)
        .into_iter()
        .filter(|(k, _)| {
            k == "include.path" || (k.starts_with("includeif.") && k.ends_with(".path"))
        })
        .map(|(_, v)| {
            let v = match v.strip_prefix("~/") {
                Some(rest) => std::env::var_os("HOME")
                    .map_or_else(|| PathBuf::from(&v), |h| Path::new(&h).join(rest)),
                None => PathBuf::from(&v),
            };
            if v.is_absolute() {
                v
            } else {
                base.join(v)
            }
        })
        .collect()
}

/// The `key=value` entries of a configuration file's bytes, as git reads them (no includes).
fn entries(git: &Git, bytes: &[u8]) -> Vec<(String, String)> {
    let Ok(dir) = crate::scratch::private_dir("config") else {
        return Vec::new();
    };
    let file = dir.path().join("config");
    if crate::scratch::write_private(&file, bytes).is_err() {
        return Vec::new();
    }
    let file = file.display().to_string();
    let Ok(out) = git.run(&["config", "--file", &file, "--null", "--list"]) else {
        return Vec::new();
    };
    out.split('\0')
        .filter(|e| !e.is_empty())
        .map(|e| match e.split_once('\n') {
            Some((k, v)) => (k.to_string(), v.to_string()),
            None => (e.to_string(), String::new()),
        })
        .collect()
}

/// Keys whose set of values differs between two versions of a file.
fn changed_keys(git: &Git, before: Option<&[u8]>, now: Option<&[u8]>) -> Vec<String> {
    let before = before.map(|b| entries(git, b)).unwrap_or_default();
    let now = now.map(|b| entries(git, b)).unwrap_or_default();
    let mut keys: Vec<String> = before
        .iter()
        .filter(|e| !now.contains(e))
        .chain(now.iter().filter(|e| !before.contains(e)))
        .map(|(k, _)| k.clone())
        .collect();
    keys.sort();
    keys.dedup();
    keys
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::git::temp_repo as repo;

    #[test]
    fn an_unchanged_configuration_is_left_alone() {
        let (_dir, git) = repo();
        let snap = ConfigSnapshot::take(&git).unwrap();
        assert_eq!(snap.restore_changes(&git).unwrap(), vec![]);
    }

    #[test]
    fn changes_are_put_back_and_named_by_key() {
        let (dir, git) = repo();
        let config = dir.path().join(".git/config");
        let before = std::fs::read(&config).unwrap();
        let snap = ConfigSnapshot::take(&git).unwrap();
        let mut text = String::from_utf8(before.clone()).unwrap();
        text.push_str("[core]\n\tfsmonitor = /tmp/x.sh\n[filter \"Evil\"]\n\tclean = /tmp/x.sh\n");
        std::fs::write(&config, text).unwrap();
        std::fs::write(
            dir.path().join(".git/config.worktree"),
            "[core]\n\tpager = x\n",
        )
        .unwrap();
        let tampered = snap.restore_changes(&git).unwrap();
        assert_eq!(std::fs::read(&config).unwrap(), before);
        assert!(!dir.path().join(".git/config.worktree").exists());
        let keys: Vec<&str> = tampered
            .iter()
            .flat_map(|t| t.keys.iter().map(String::as_str))
            .collect();
        assert_eq!(keys, ["core.fsmonitor", "filter.Evil.clean", "core.pager"]);
        let text = describe(&tampered);
        assert!(
            text.contains("core.fsmonitor") && !text.contains("/tmp/x.sh"),
            "{text}"
        );
    }

    #[test]
    fn included_files_are_watched_too() {
        let (dir, git) = repo();
        let extra = dir.path().join("extra.cfg");
        std::fs::write(&extra, "[user]\n\tname = a\n").unwrap();
        git.run(&["config", "include.path", &extra.display().to_string()])
            .unwrap();
        let snap = ConfigSnapshot::take(&git).unwrap();
        std::fs::write(&extra, "[core]\n\tsshCommand = x\n").unwrap();
        let tampered = snap.restore_changes(&git).unwrap();
        assert_eq!(tampered.len(), 1);
        assert_eq!(tampered[0].keys, ["core.sshcommand", "user.name"]);
        assert_eq!(
            std::fs::read_to_string(&extra).unwrap(),
            "[user]\n\tname = a\n"
        );
    }
}

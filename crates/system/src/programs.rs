//! The programs the runner itself starts (git above all), found once, before any agent runs, in
//! folders an agent cannot have written.
//!
//! An agent runs as the runner's user. Anything it can write and the runner later executes
//! outside the agent's sandbox is a way out of it: a `git` planted in `~/.local/bin` (first on
//! `PATH` on GitHub's Ubuntu images) would be run by the runner's next git call, unconfined, with
//! the token at hand. So the runner resolves `git` to an absolute path at start, from the `PATH`
//! entries that are not under `$HOME`, the repository, or a temp folder (where worktrees and
//! scratch folders live), and gives git that same filtered `PATH` for the programs git starts
//! itself (`ssh`). A `git` found only in such places is refused, naming where it was found.
//!
//! `OPENTIGER_GIT` names the git program explicitly (for a git that lives only under `$HOME`,
//! such as a Nix profile); that choice is the user's, and `doctor` shows it.
//!
//! Not here: the agents' own programs (an agent CLI or a verification command runs inside the
//! agent's sandbox, found on the `PATH` it is given).

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The variable that names the git program explicitly.
pub const GIT_VAR: &str = "OPENTIGER_GIT";

/// The runner's programs, as resolved at start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Programs {
    /// The git the runner runs.
    pub git: PathBuf,
    /// How it was chosen, for `doctor`.
    pub git_source: GitSource,
    /// The `PATH` the runner gives its own git: the entries that are safe.
    pub path: String,
    /// The `PATH` entries left out, with why.
    pub skipped: Vec<(String, &'static str)>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GitSource {
    /// Found on `PATH` in a folder no agent writes.
    Path,
    /// Named by `OPENTIGER_GIT`.
    Variable,
}

static RESOLVED: OnceLock<Result<Programs, String>> = OnceLock::new();

/// Resolves the runner's programs for the repository at `repo`, once; later calls return the
/// first answer. `Err` is the message to show (git found only where an agent could write).
pub fn init(repo: &Path) -> Result<&'static Programs, String> {
    RESOLVED
        .get_or_init(|| resolve_here(Some(repo)))
        .as_ref()
        .map_err(Clone::clone)
}

/// The resolved programs; resolved now (without a repository to leave out) when `init` was not
/// called, as in unit tests.
pub fn get() -> Result<&'static Programs, String> {
    RESOLVED
        .get_or_init(|| resolve_here(None))
        .as_ref()
        .map_err(Clone::clone)
}

/// The git to run: the resolved one, or plain `git` (which then fails with git's own words
/// where a caller forgot `init`'s error).
pub fn git() -> PathBuf {
    get().map_or_else(|_| PathBuf::from("git"), |p| p.git.clone())
}

/// The `PATH` for the runner's git.
pub fn git_path_var() -> Option<String> {
    get().ok().map(|p| p.path.clone())
}

fn resolve_here(repo: Option<&Path>) -> Result<Programs, String> {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let mut unsafe_roots: Vec<(PathBuf, &'static str)> = Vec::new();
    if let Some(home) = home.filter(|h| h != Path::new("/")) {
        unsafe_roots.push((home, "under $HOME"));
    }
    if let Some(repo) = repo {
        unsafe_roots.push((repo.to_path_buf(), "inside the repository"));
    }
    for temp in temp_folders() {
        unsafe_roots.push((temp, "in a temp folder"));
    }
    // Each root also as the folder it links to, resolved once here (`/tmp` → `/private/tmp`).
    let real: Vec<(PathBuf, &'static str)> = unsafe_roots
        .iter()
        .map(|(root, why)| (canonical(root), *why))
        .filter(|real| !unsafe_roots.contains(real))
        .collect();
    unsafe_roots.extend(real);
    let path_var = std::env::var("PATH").unwrap_or_default();
    let named = std::env::var_os(GIT_VAR).map(PathBuf::from);
    resolve(&path_var, named.as_deref(), &unsafe_roots, |p| {
        is_executable(p).then(|| canonical(p))
    })
}

/// Every temp folder a process of the runner's user may write: `$TMPDIR`, `$RUNNER_TEMP`, and
/// the world-writable ones.
fn temp_folders() -> Vec<PathBuf> {
    let mut folders = vec![std::env::temp_dir()];
    folders.extend(std::env::var_os("RUNNER_TEMP").map(PathBuf::from));
    folders.extend(["/tmp", "/var/tmp", "/dev/shm"].map(PathBuf::from));
    folders
}

fn canonical(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Why `dir` (a `PATH` entry) is not a place to take the runner's programs from, if it is not.
/// A relative entry (empty means the current folder) is never safe; an absolute one is unsafe
/// when it, or the folder it links to, lies beneath one of `unsafe_roots` (given both as named
/// and as resolved).
pub fn unsafe_entry(dir: &str, unsafe_roots: &[(PathBuf, &'static str)]) -> Option<&'static str> {
    let path = Path::new(dir);
    if !path.is_absolute() {
        return Some("a relative entry");
    }
    let real = canonical(path);
    unsafe_roots
        .iter()
        .find(|(root, _)| path.starts_with(root) || real.starts_with(root))
        .map(|(_, why)| *why)
}

/// Resolves git on `path_var`, skipping unsafe entries; `executable` says whether a candidate
/// is an executable file (and gives its real path). Pure but for `executable`, for tests.
pub fn resolve(
    path_var: &str,
    named: Option<&Path>,
    unsafe_roots: &[(PathBuf, &'static str)],
    executable: impl Fn(&Path) -> Option<PathBuf>,
) -> Result<Programs, String> {
    let mut safe = Vec::new();
    let mut skipped = Vec::new();
    for dir in path_var.split(':') {
        match unsafe_entry(dir, unsafe_roots) {
            Some(why) => skipped.push((dir.to_string(), why)),
            None => safe.push(dir.to_string()),
        }
    }
    let path = safe.join(":");
    if let Some(named) = named {
        return match executable(named) {
            Some(git) if named.is_absolute() => Ok(Programs {
                git,
                git_source: GitSource::Variable,
                path,
                skipped,
            }),
            _ => Err(format!(
                "{GIT_VAR}={} is not an executable file given by its absolute path\n  fix: set {GIT_VAR} to the full path of git, or unset it",
                named.display()
            )),
        };
    }
    if let Some(git) = safe
        .iter()
        .find_map(|dir| executable(&Path::new(dir).join("git")))
    {
        return Ok(Programs {
            git,
            git_source: GitSource::Path,
            path,
            skipped,
        });
    }
    let refused: Vec<String> = skipped
        .iter()
        .filter(|(dir, _)| executable(&Path::new(dir).join("git")).is_some())
        .map(|(dir, why)| format!("{dir} ({why})"))
        .collect();
    Err(if refused.is_empty() {
        "git was not found on PATH\n  fix: install git (e.g. apt-get install git)".to_string()
    } else {
        format!(
            "git was found only where an agent could write it: {}; the runner does not run programs from there\n  fix: install git in a system folder (e.g. apt-get install git), or name it with {GIT_VAR}=/full/path/to/git",
            refused.join(", ")
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn roots() -> Vec<(PathBuf, &'static str)> {
        vec![
            (PathBuf::from("/home/runner"), "under $HOME"),
            (PathBuf::from("/work/repo"), "inside the repository"),
            (PathBuf::from("/tmp"), "in a temp folder"),
        ]
    }

    /// Only the listed files exist, and are their own real path.
    fn files(list: &'static [&'static str]) -> impl Fn(&Path) -> Option<PathBuf> {
        move |p: &Path| list.contains(&p.to_str()?).then(|| p.to_path_buf())
    }

    #[test]
    fn unsafe_entries_are_named() {
        let roots = roots();
        let cases: [(&str, Option<&str>); 7] = [
            ("/home/runner/.local/bin", Some("under $HOME")),
            ("/home/runner/.cargo/bin", Some("under $HOME")),
            (
                "/work/repo/node_modules/.bin",
                Some("inside the repository"),
            ),
            ("/tmp/opentiger.worktrees.1/x", Some("in a temp folder")),
            ("", Some("a relative entry")),
            ("bin", Some("a relative entry")),
            ("/usr/bin", None),
        ];
        for (dir, expected) in cases {
            assert_eq!(unsafe_entry(dir, &roots), expected, "{dir}");
        }
        assert_eq!(
            unsafe_entry("/home/runner2/bin", &roots),
            None,
            "a prefix is not a parent"
        );
    }

    #[test]
    fn git_is_taken_from_the_first_safe_entry_and_the_path_keeps_only_safe_ones() {
        let found = resolve(
            "/home/runner/.local/bin:/usr/local/bin:/usr/bin",
            None,
            &roots(),
            files(&["/home/runner/.local/bin/git", "/usr/bin/git"]),
        )
        .unwrap();
        assert_eq!(found.git, PathBuf::from("/usr/bin/git"));
        assert_eq!(found.git_source, GitSource::Path);
        assert_eq!(found.path, "/usr/local/bin:/usr/bin");
        assert_eq!(
            found.skipped,
            vec![("/home/runner/.local/bin".to_string(), "under $HOME")]
        );
    }

    #[test]
    fn a_git_found_only_where_an_agent_writes_is_refused_with_the_fix() {
        let err = resolve(
            "/home/runner/.local/bin:/usr/bin",
            None,
            &roots(),
            files(&["/home/runner/.local/bin/git"]),
        )
        .unwrap_err();
        assert!(
            err.contains("/home/runner/.local/bin (under $HOME)"),
            "{err}"
        );
        assert!(err.contains("OPENTIGER_GIT"), "{err}");
        let err = resolve("/usr/bin", None, &roots(), files(&[])).unwrap_err();
        assert!(err.contains("not found"), "{err}");
    }

    #[test]
    fn the_variable_names_git_explicitly_by_an_absolute_path() {
        let named = Path::new("/home/runner/.nix-profile/bin/git");
        let found = resolve(
            "/usr/bin",
            Some(named),
            &roots(),
            files(&["/home/runner/.nix-profile/bin/git"]),
        )
        .unwrap();
        assert_eq!(found.git, named);
        assert_eq!(found.git_source, GitSource::Variable);
        let err = resolve("/usr/bin", Some(Path::new("git")), &roots(), files(&[])).unwrap_err();
        assert!(err.contains("absolute path"), "{err}");
    }
}

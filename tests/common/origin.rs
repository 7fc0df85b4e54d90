//! A confined repository with an `origin` its ticks push to (local-git), as the threat-scan
//! tests use it: what reached the remote's `main`, and which refs it holds.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::unprivileged::Jail;
use super::{bare_origin, git, Setup};

/// A local-git repository with an `origin` the ticks push to, agents confined.
pub fn jail(setup: Setup) -> (Jail, PathBuf) {
    let jail = Jail::confined(setup);
    let origin = bare_origin(jail.g.tools_path());
    git(
        jail.g.path(),
        &["remote", "add", "origin", origin.to_str().unwrap()],
    );
    git(jail.g.path(), &["push", "-q", "origin", "main"]);
    (jail, origin)
}

/// `git` in a bare repository the unprivileged user owns.
pub fn in_origin(origin: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git")
        .args(["-c", "safe.directory=*", "-C"])
        .arg(origin)
        .args(args)
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

pub fn on_origin_main(origin: &Path, file: &str) -> bool {
    in_origin(origin, &["cat-file", "-e", &format!("main:{file}")]).is_some()
}

pub fn refs_of(origin: &Path) -> String {
    in_origin(origin, &["for-each-ref", "--format=%(refname)"]).unwrap_or_default()
}

/// The newest run of task `id`, as `task show --json` lists it.
pub fn run(jail: &Jail, id: &str) -> serde_json::Value {
    jail.runs(id)[0].clone()
}

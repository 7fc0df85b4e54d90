//! What a program needs from the host to run in a view of its own, besides the system folders:
//! its own file, the package it belongs to (an npm package, a Python virtual environment), the
//! interpreter its `#!` line names and that interpreter's `bin` and `lib`; and the toolchains a
//! run finds on its `PATH` or by its variables (the Rust toolchain: `RUSTUP_HOME`, and
//! `CARGO_HOME` without its `credentials.toml`).
//!
//! Not for: making the view (`mod.rs`, `child.rs`), or which folders a role gets
//! (`runner::launch`).

use std::io::Read;
use std::path::{Path, PathBuf};

/// The paths `executable` needs to run (read-only): itself, its package, its interpreter.
/// `path_var` is the run's `PATH` (for `#!/usr/bin/env node`).
pub fn program_paths(executable: &Path, path_var: Option<&str>) -> Vec<PathBuf> {
    let mut paths = vec![executable.to_path_buf()];
    let Ok(real) = std::fs::canonicalize(executable) else {
        return paths;
    };
    paths.extend(package_root(&real));
    if let Some(interpreter) = interpreter(&real, path_var) {
        paths.push(interpreter.clone());
        if let Ok(real) = std::fs::canonicalize(&interpreter) {
            paths.extend(package_root(&real));
            paths.extend(prefix_folders(&real));
        }
    }
    paths.extend(prefix_folders(&real));
    paths
}

/// The npm packages a file's package is installed with (the `node_modules` folder holding it:
/// a CLI's platform binary is a package of its own beside it) or the Python virtual environment
/// (the folder holding `pyvenv.cfg`, and the installation its `home` names) it belongs to.
fn package_root(real: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let ancestors: Vec<&Path> = real.ancestors().skip(1).take(8).collect();
    for dir in &ancestors {
        if dir.file_name().is_some_and(|n| n == "node_modules") {
            found.push(dir.to_path_buf());
            break;
        }
        let cfg = dir.join("pyvenv.cfg");
        if cfg.is_file() {
            found.push(dir.to_path_buf());
            let text = std::fs::read_to_string(&cfg).unwrap_or_default();
            let home = text.lines().find_map(|l| {
                let (key, value) = l.split_once('=')?;
                (key.trim() == "home").then(|| PathBuf::from(value.trim()))
            });
            if let Some(prefix) = home.as_deref().and_then(Path::parent) {
                found.push(prefix.to_path_buf());
            }
            break;
        }
    }
    found
}

/// `<prefix>/bin` and `<prefix>/lib` when `real` lies in a `bin` folder (an interpreter's
/// modules: node's global packages, Python's standard library).
fn prefix_folders(real: &Path) -> Vec<PathBuf> {
    let Some(bin) = real
        .parent()
        .filter(|b| b.file_name().is_some_and(|n| n == "bin"))
    else {
        return Vec::new();
    };
    let Some(prefix) = bin.parent() else {
        return Vec::new();
    };
    ["bin", "lib", "lib64"]
        .iter()
        .map(|d| prefix.join(d))
        .filter(|d| d.is_dir())
        .collect()
}

/// The interpreter a script's `#!` line names (through `env`, looked up on `path_var`).
fn interpreter(script: &Path, path_var: Option<&str>) -> Option<PathBuf> {
    let mut head = [0u8; 256];
    let n = std::fs::File::open(script).ok()?.read(&mut head).ok()?;
    let line = head[..n].strip_prefix(b"#!")?;
    let line = String::from_utf8_lossy(line.split(|b| *b == b'\n').next()?).into_owned();
    let mut words = line.split_whitespace();
    let first = PathBuf::from(words.next()?);
    if first.file_name().is_none_or(|n| n != "env") {
        return Some(first);
    }
    let name = words.find(|w| !w.starts_with('-') && !w.contains('='))?;
    if name.contains('/') {
        return Some(PathBuf::from(name));
    }
    path_var?
        .split(':')
        .filter(|d| d.starts_with('/'))
        .map(|d| Path::new(d).join(name))
        .find(|p| p.is_file())
}

/// The folders of `PATH` (absolute ones that exist, none beneath `hidden`: the runner's
/// repository; for npm's `node_modules/.bin`, the packages it links to; for a version manager's
/// `shims`, the manager's folder), and the Rust toolchain the runner has: `RUSTUP_HOME` whole, and of
/// `CARGO_HOME` its programs, registry, git checkouts and configuration — never its
/// `credentials.toml`. `lookup` reads the runner's variables; `home` is the runner's.
pub fn toolchain_paths(
    path_var: Option<&str>,
    hidden: &[&Path],
    home: Option<&Path>,
    lookup: impl Fn(&str) -> Option<String>,
) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = path_var
        .unwrap_or_default()
        .split(':')
        .map(PathBuf::from)
        .filter(|d| d.is_absolute() && d.is_dir())
        .filter(|d| !hidden.iter().any(|h| d.starts_with(h)))
        .collect();
    // `…/node_modules/.bin` holds links into the packages beside it.
    let packages: Vec<PathBuf> = paths
        .iter()
        .filter(|d| d.file_name().is_some_and(|n| n == ".bin"))
        .filter_map(|d| d.parent())
        .filter(|p| p.file_name().is_some_and(|n| n == "node_modules"))
        .map(Path::to_path_buf)
        .collect();
    paths.extend(packages);
    // A version manager's `shims` (pyenv, rbenv, asdf, mise) are scripts that run the manager
    // from the folder above them, where its versions are: that folder comes with them (never
    // the home itself, nor the runner's repository).
    let managers: Vec<PathBuf> = paths
        .iter()
        .filter(|d| d.file_name().is_some_and(|n| n == "shims"))
        .filter_map(|d| d.parent())
        .filter(|root| root.components().count() > 2 && Some(*root) != home)
        .filter(|root| !hidden.iter().any(|h| h.starts_with(root)))
        .map(Path::to_path_buf)
        .collect();
    paths.extend(managers);
    let named = |var: &str, default: &str| {
        lookup(var)
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(default)))
            .filter(|p| p.is_dir())
    };
    paths.extend(named("RUSTUP_HOME", ".rustup"));
    if let Some(cargo) = named("CARGO_HOME", ".cargo") {
        for part in ["bin", "registry", "git", "config.toml", "config"] {
            let path = cargo.join(part);
            if path.exists() {
                paths.push(path);
            }
        }
    }
    paths
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// pyenv's `python3` in `~/.pyenv/shims` is a script running `~/.pyenv/libexec/pyenv`,
    /// which runs a version in `~/.pyenv/versions`: the manager's folder comes with its shims;
    /// a `shims` folder right under the home or above the repository brings nothing more.
    #[test]
    fn a_version_manager_s_shims_bring_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        let home = d.join("home");
        let repo = d.join("work/repo");
        for folder in [".pyenv/shims", ".pyenv/libexec", "shims", "work/repo"] {
            let at = if folder == "work/repo" {
                d.join(folder)
            } else {
                home.join(folder)
            };
            std::fs::create_dir_all(at).unwrap();
        }
        std::fs::create_dir_all(d.join("work/shims")).unwrap();
        let path_var = format!(
            "{}:{}:{}",
            home.join(".pyenv/shims").display(),
            home.join("shims").display(),
            d.join("work/shims").display()
        );
        let paths = toolchain_paths(Some(&path_var), &[&repo], Some(&home), |_| None);
        assert!(paths.contains(&home.join(".pyenv")), "{paths:?}");
        assert!(!paths.contains(&home), "{paths:?}");
        assert!(!paths.contains(&d.join("work")), "{paths:?}");
    }

    #[test]
    fn a_cli_brings_its_packages_and_its_interpreter() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().canonicalize().unwrap();
        // An npm global install: bin/claude -> ../lib/node_modules/@anthropic-ai/claude-code/cli.js
        let package = d.join("lib/node_modules/@anthropic-ai/claude-code");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::create_dir_all(d.join("bin")).unwrap();
        std::fs::write(d.join("bin/node"), "").unwrap();
        std::fs::write(
            package.join("cli.js"),
            "#!/usr/bin/env node\nconsole.log(1)\n",
        )
        .unwrap();
        symlink(
            "../lib/node_modules/@anthropic-ai/claude-code/cli.js",
            d.join("bin/claude"),
        )
        .unwrap();
        let path_var = format!("/nonexistent:{}", d.join("bin").display());
        let paths = program_paths(&d.join("bin/claude"), Some(&path_var));
        for wanted in [
            d.join("bin/claude"),
            // The packages installed with it (its platform binary is one of them).
            d.join("lib/node_modules"),
            d.join("bin/node"),
            d.join("bin"),
            d.join("lib"),
        ] {
            assert!(
                paths.contains(&wanted),
                "{} not in {paths:?}",
                wanted.display()
            );
        }
        // A virtual environment: the venv, and the installation its `home` names.
        let venv = d.join("venvs/aider");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::write(venv.join("pyvenv.cfg"), "home = /opt/python3.12/bin\n").unwrap();
        std::fs::write(venv.join("bin/aider"), "#!/opt/python3.12/bin/python3\n").unwrap();
        let paths = program_paths(&venv.join("bin/aider"), None);
        for wanted in [
            venv.clone(),
            PathBuf::from("/opt/python3.12"),
            PathBuf::from("/opt/python3.12/bin/python3"),
        ] {
            assert!(
                paths.contains(&wanted),
                "{} not in {paths:?}",
                wanted.display()
            );
        }
    }

    #[test]
    fn the_toolchain_comes_without_cargo_s_credentials() {
        let home = tempfile::tempdir().unwrap();
        let h = home.path();
        for d in [
            ".cargo/bin",
            ".cargo/registry",
            ".rustup/toolchains",
            "repo/bin",
            "clis/node_modules/.bin",
        ] {
            std::fs::create_dir_all(h.join(d)).unwrap();
        }
        std::fs::write(h.join(".cargo/credentials.toml"), "token = \"x\"").unwrap();
        let path_var = format!(
            "{}:{}:relative:/nonexistent:{}",
            h.join(".cargo/bin").display(),
            h.join("repo/bin").display(),
            h.join("clis/node_modules/.bin").display()
        );
        let repo = h.join("repo");
        let paths = toolchain_paths(Some(&path_var), &[&repo], Some(h), |_| None);
        assert_eq!(
            paths,
            [
                h.join(".cargo/bin"),
                h.join("clis/node_modules/.bin"),
                h.join("clis/node_modules"),
                h.join(".rustup"),
                h.join(".cargo/bin"),
                h.join(".cargo/registry")
            ]
        );
        assert!(!paths.iter().any(|p| p.ends_with("credentials.toml")));
    }
}

//! The worked example of docs/eval.md, made by `scripts/eval-example.sh` in a temp folder, and
//! `opentiger eval` run on it.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

use super::common::Out;

/// The example made in a temp folder: the folder, and the repository in it.
pub struct Example {
    pub dir: tempfile::TempDir,
    pub repo: PathBuf,
}

impl Example {
    pub fn new() -> Example {
        let dir = tempfile::tempdir().unwrap();
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/eval-example.sh");
        let out = Command::new("sh")
            .arg(script)
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let repo = dir.path().join("mathlib");
        Example { dir, repo }
    }

    pub fn config(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_opentiger"));
        command
            .arg("--repo")
            .arg(&self.repo)
            .arg("eval")
            .args(args)
            .env_remove("OPENTIGER_CONFIG")
            .env_remove("OPENTIGER_NOW")
            .env_remove("GITHUB_STEP_SUMMARY");
        command
    }

    pub fn eval(&self, args: &[&str]) -> Out {
        self.command(args).output().unwrap().into()
    }

    /// The agent's calls so far: `worker NAME` and `judge TASK` lines.
    pub fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("shared/calls.log"))
            .unwrap_or_default()
            .lines()
            .map(String::from)
            .collect()
    }
}

impl Example {
    /// A configuration `name` made from `reproduce.yml` by `edit`.
    pub fn config_from(&self, name: &str, edit: impl Fn(&str) -> String) -> String {
        let text = std::fs::read_to_string(self.dir.path().join("reproduce.yml")).unwrap();
        let path = self.dir.path().join(name);
        std::fs::write(&path, edit(&text)).unwrap();
        path.display().to_string()
    }

    /// The shared folder the example's agent reads and writes.
    pub fn shared(&self) -> PathBuf {
        self.dir.path().join("shared")
    }
}

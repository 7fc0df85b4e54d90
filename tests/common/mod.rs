//! A throw-away repository and the real binary, for end-to-end tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub const NOW: &str = "2026-11-21T12:00:00Z";

pub struct TestRepo {
    pub dir: tempfile::TempDir,
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn ok(self) -> Out {
        assert_eq!(
            self.code, 0,
            "expected success\nstdout:\n{}\nstderr:\n{}",
            self.stdout, self.stderr
        );
        self
    }
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}):\n{}", self.stdout))
    }
}

impl TestRepo {
    /// An empty directory with a local-mode config.
    pub fn new() -> TestRepo {
        let repo = TestRepo::bare();
        repo.file(".opentiger.yml", "mode: local-git\n");
        repo
    }

    /// An empty directory, no config.
    pub fn bare() -> TestRepo {
        TestRepo {
            dir: tempfile::tempdir().expect("temp dir"),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn file(&self, rel: &str, text: &str) -> &TestRepo {
        let p = self.path().join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).expect("mkdir");
        }
        std::fs::write(p, text).expect("write");
        self
    }

    pub fn state_path(&self) -> PathBuf {
        self.path().join(".opentiger/state.sqlite")
    }

    /// Runs `opentiger --repo <dir> --now NOW <args>`.
    pub fn run(&self, args: &[&str]) -> Out {
        self.run_at(NOW, args)
    }

    pub fn run_at(&self, now: &str, args: &[&str]) -> Out {
        let out = Command::new(env!("CARGO_BIN_EXE_opentiger"))
            .arg("--repo")
            .arg(self.path())
            .arg("--now")
            .arg(now)
            .args(args)
            .env_remove("OPENTIGER_CONFIG")
            .env_remove("OPENTIGER_NOW")
            .env_remove("GITHUB_RUN_ID")
            .output()
            .expect("run opentiger");
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// `task add` and the new id.
    pub fn add(&self, args: &[&str]) -> String {
        let mut all = vec!["task", "add"];
        all.extend_from_slice(args);
        self.run(&all).ok().stdout.trim().to_string()
    }
}

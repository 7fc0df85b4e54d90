//! A throw-away repository and the real binary, for end-to-end tests.
#![allow(dead_code)]

pub mod fake_cli;
pub mod github;
pub mod local_model;
pub mod model_server;
pub mod origin;
pub mod peak;
pub mod real_clis;
pub mod real_model;
pub mod scripted;
pub mod unprivileged;

use std::path::{Path, PathBuf};
use std::process::Command;

pub const NOW: &str = "2026-11-21T12:00:00Z";

/// `dir`/my-project: a git repository with a README committed on `main`, as the docs' blocks
/// start from.
pub fn my_project(dir: &Path) -> PathBuf {
    let project = dir.join("my-project");
    std::fs::create_dir_all(&project).unwrap();
    std::fs::write(project.join("README.md"), "# my project\n").unwrap();
    git(&project, &["init", "-q", "-b", "main"]);
    git(&project, &["add", "-A"]);
    git(&project, &["commit", "-q", "-m", "initial"]);
    project
}

/// The shell block of `page` between `<!-- NAME:start -->` and `<!-- NAME:end -->`, as written
/// (README's first repository, docs/agents.md's local model).
pub fn marked_block(page: &str, name: &str) -> String {
    let start = page
        .find(&format!("<!-- {name}:start -->"))
        .unwrap_or_else(|| panic!("no {name}:start marker"));
    let end = page
        .find(&format!("<!-- {name}:end -->"))
        .unwrap_or_else(|| panic!("no {name}:end marker"));
    let body = page[start..end].split_once("```sh\n").expect("sh fence").1;
    body.rsplit_once("```")
        .expect("closing fence")
        .0
        .to_string()
}

pub struct TestRepo {
    pub dir: tempfile::TempDir,
}

pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl From<std::process::Output> for Out {
    fn from(out: std::process::Output) -> Out {
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }
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
        self.run_env(now, args, &[])
    }

    /// Runs `opentiger` with these variables set; the agents' keys of the test's own
    /// environment are never seen.
    pub fn run_env(&self, now: &str, args: &[&str], env: &[(&str, &str)]) -> Out {
        let mut command = Command::new(env!("CARGO_BIN_EXE_opentiger"));
        command
            .arg("--repo")
            .arg(self.path())
            .arg("--now")
            .arg(now)
            .args(args)
            .env_remove("OPENTIGER_CONFIG")
            .env_remove("OPENTIGER_NOW")
            .env_remove("GITHUB_RUN_ID")
            .env_remove("GITHUB_STEP_SUMMARY");
        for key in AGENT_KEYS {
            command.env_remove(key);
        }
        command
            .envs(env.iter().copied())
            .output()
            .expect("run opentiger")
            .into()
    }

    /// `task add` and the new id.
    pub fn add(&self, args: &[&str]) -> String {
        let mut all = vec!["task", "add"];
        all.extend_from_slice(args);
        self.run(&all).ok().stdout.trim().to_string()
    }
}

/// The variables that give an agent CLI its model.
pub const AGENT_KEYS: &[&str] = &[
    "ANTHROPIC_API_KEY",
    "CLAUDE_CODE_OAUTH_TOKEN",
    "OPENAI_API_KEY",
    "CODEX_API_KEY",
    "OPENROUTER_API_KEY",
    "GEMINI_API_KEY",
];

/// A git repository with one commit on `main`, a folder for agent scripts outside it, and a
/// config that runs `agent.sh` as every task agent and `judge.sh` as the judge.
pub struct GitRepo {
    pub repo: TestRepo,
    pub tools: tempfile::TempDir,
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args([
            // The attack suite's repositories belong to the unprivileged user the ticks run as.
            "-c",
            "safe.directory=*",
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Pieces of the test configuration (YAML lines, already indented for their place).
pub struct Setup {
    pub mode: &'static str,
    /// Lines under `agents.default` (4 spaces).
    pub default_agent: &'static str,
    /// Lines under `agents.worker` (4 spaces).
    pub worker: &'static str,
    /// Lines under `agents.planner` (4 spaces).
    pub planner: &'static str,
    /// Lines under `agents.judge` (4 spaces).
    pub judge: &'static str,
    /// Top-level lines.
    pub extra: &'static str,
}

impl Default for Setup {
    fn default() -> Self {
        Setup {
            mode: "local-git",
            default_agent: "",
            worker: "",
            planner: "",
            judge: "",
            extra: "",
        }
    }
}

impl GitRepo {
    pub fn with(setup: Setup) -> GitRepo {
        let repo = TestRepo::bare();
        let tools = tempfile::tempdir().expect("tools dir");
        repo.file("README.md", "# sample\n");
        repo.file(".gitignore", "/.opentiger/state.sqlite*\n");
        git(repo.path(), &["init", "-q", "-b", "main"]);
        git(repo.path(), &["add", "-A"]);
        git(repo.path(), &["commit", "-q", "-m", "initial"]);
        let g = GitRepo { repo, tools };
        g.judge("#!/bin/sh\necho '{\"verdict\": \"approve\", \"summary\": \"fine\"}' > \"$OPENTIGER_RESULT_FILE\"\n");
        g.planner("#!/bin/sh\necho '{\"tasks\": []}' > \"$OPENTIGER_RESULT_FILE\"\n");
        let config = format!(
            "mode: {mode}\nagents:\n  default:\n    executor: command\n    command: [\"{agent}\"]\n    timeout_minutes: 1\n{default}  worker:\n{worker}  planner:\n    command: [\"{planner_cmd}\"]\n{planner}  judge:\n    command: [\"{judge}\"]\n{judge_lines}retry:\n  cooldown_seconds: 60\n{extra}",
            mode = setup.mode,
            agent = g.tools.path().join("agent.sh").display(),
            judge = g.tools.path().join("judge.sh").display(),
            default = setup.default_agent,
            worker = setup.worker,
            planner_cmd = g.tools.path().join("planner.sh").display(),
            planner = setup.planner,
            judge_lines = setup.judge,
            extra = {
                let mut extra = if setup.extra.contains("sandbox:") {
                    setup.extra.to_string()
                } else {
                    // Test agents write to their tools folder: outside the Landlock sandbox.
                    format!("{}sandbox:\n  filesystem: none\n", setup.extra)
                };
                if !extra.contains("context:") {
                    // No host probe (about a second of this machine's tools per test): the
                    // tests of what the loop learned set their own `context:`.
                    extra.push_str("context:\n  host_chars: 0\n");
                }
                extra
            },
        );
        g.repo.file(".opentiger.yml", &config);
        g
    }

    /// A task agent whose first run records its pid in the tools folder (`agent.pid`; with
    /// `with_child`, also a background child's, `child.pid`) and hangs; later runs write
    /// `result.txt` at once. For tests that kill or interrupt a tick mid-run.
    pub fn agent_hanging_first(&self, with_child: bool) -> &GitRepo {
        let tools = self.tools_path().display().to_string();
        let child = if with_child {
            format!("sleep 300 & echo $! > {tools}/child.pid; ")
        } else {
            String::new()
        };
        self.agent(&format!(
            "#!/bin/sh\nif [ ! -f {tools}/first ]; then touch {tools}/first; {child}echo $$ > {tools}/agent.pid; sleep 120; fi\necho done > result.txt\n"
        ))
    }

    /// A linked worktree of the repository on a new branch `side`, in the tools folder.
    pub fn linked_worktree(&self) -> PathBuf {
        let linked = self.tools_path().join("linked");
        git(
            self.path(),
            &[
                "worktree",
                "add",
                "-q",
                linked.to_str().unwrap(),
                "-b",
                "side",
            ],
        );
        linked
    }

    /// Writes the task agent script.
    pub fn agent(&self, script: &str) -> &GitRepo {
        self.tool("agent.sh", script);
        self
    }

    pub fn planner(&self, script: &str) -> &GitRepo {
        self.tool("planner.sh", script);
        self
    }

    pub fn judge(&self, script: &str) -> &GitRepo {
        self.tool("judge.sh", script);
        self
    }

    fn tool(&self, name: &str, script: &str) {
        use std::os::unix::fs::PermissionsExt;
        let path = self.tools.path().join(name);
        std::fs::write(&path, script).expect("write script");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    }

    pub fn tools_path(&self) -> &Path {
        self.tools.path()
    }

    pub fn path(&self) -> &Path {
        self.repo.path()
    }

    pub fn main_log(&self) -> String {
        git(self.path(), &["log", "--format=%s", "main"])
    }

    pub fn file_on_main(&self, path: &str) -> Option<String> {
        let out = Command::new("git")
            .current_dir(self.path())
            .args(["-c", "safe.directory=*", "show", &format!("main:{path}")])
            .output()
            .ok()?;
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// A `tick -v` at `now`: its summary with the rules, moves and rounds tests look at
    /// (issue 51: the default summary is the plain one).
    pub fn tick(&self, now: &str) -> Out {
        self.repo.run_at(now, &["-v", "tick"])
    }

    /// A `tick -v` at `now` with these variables set (an agent's key).
    pub fn tick_env(&self, now: &str, env: &[(&str, &str)]) -> Out {
        self.repo.run_env(now, &["-v", "tick"], env)
    }

    /// The task's status as `status --json` shows it.
    pub fn task_json(&self, id: &str) -> serde_json::Value {
        let all = self.repo.run(&["status", "--json", "--all"]).ok().json();
        all["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["id"] == id)
            .cloned()
            .unwrap_or_else(|| panic!("no task {id} in {all}"))
    }

    /// Ticks every `step_minutes` from `start` until no task is active, at most `max` ticks.
    pub fn run_until_quiet(&self, start_minute: u32, step_minutes: u32, max: u32) -> Vec<Out> {
        let mut outs = Vec::new();
        for i in 0..max {
            let now = minute(start_minute + i * step_minutes);
            let out = self.tick(&now);
            assert_eq!(out.code, 0, "tick at {now}: {}\n{}", out.stdout, out.stderr);
            outs.push(out);
            let status = self.repo.run_at(&now, &["status", "--json"]).ok().json();
            if status["tasks"].as_array().unwrap().is_empty() {
                break;
            }
        }
        outs
    }
}

/// `2026-11-21T12:MM:00Z` plus hours as needed.
/// Turns the dashboard issue on in a test repository's `.opentiger.yml` (the github-mode test
/// set-ups write `report: dashboard_issue: false`).
#[allow(dead_code)]
pub fn enable_dashboard(clone: &Path) {
    let path = clone.join(".opentiger.yml");
    let config = std::fs::read_to_string(&path).unwrap();
    assert!(config.contains("dashboard_issue: false"), "{config}");
    std::fs::write(
        &path,
        config.replace("dashboard_issue: false", "dashboard_issue: true"),
    )
    .unwrap();
}

/// The pid a scripted agent wrote to `path` (`echo $$ > path`), waiting up to `tries` × 50 ms
/// for it: the shell creates the file before it writes, so a file that exists may still be empty.
#[allow(dead_code)]
pub fn wait_for_pid(path: &Path, tries: u32) -> Option<i32> {
    for _ in 0..tries {
        let pid = std::fs::read_to_string(path)
            .ok()
            .and_then(|text| text.trim().parse().ok());
        if pid.is_some() {
            return pid;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    None
}

/// Whether process `pid` exists and is not a zombie (its state, field 3 of `/proc/<pid>/stat`).
#[allow(dead_code)]
pub fn running(pid: i32) -> bool {
    u32::try_from(pid)
        .ok()
        .and_then(|pid| opentiger::reaper::stat_field::<char>(pid, 3))
        .is_some_and(|state| state != 'Z')
}

pub fn minute(m: u32) -> String {
    format!("2026-11-21T{:02}:{:02}:00Z", 12 + m / 60, m % 60)
}

/// A bare repository `origin.git` in `dir`, with `main` as its default branch.
pub fn bare_origin(dir: &Path) -> PathBuf {
    let origin = dir.join("origin.git");
    git(
        dir,
        &[
            "init",
            "-q",
            "--bare",
            "-b",
            "main",
            origin.to_str().unwrap(),
        ],
    );
    origin
}

/// `git clone origin to`.
pub fn clone(origin: &Path, to: &Path) {
    git(
        origin.parent().unwrap(),
        &[
            "clone",
            "-q",
            origin.to_str().unwrap(),
            to.to_str().unwrap(),
        ],
    );
}

/// Variables of a real GitHub Actions job or a developer's shell that would change the answers
/// of `init`, `doctor` and a tick.
pub const AMBIENT: &[&str] = &[
    "GITHUB_ACTIONS",
    "GITHUB_TOKEN",
    "OPENTIGER_GITHUB_TOKEN",
    "GH_TOKEN",
    "GITHUB_REPOSITORY",
    "GITHUB_API_URL",
    "ANTHROPIC_API_KEY",
    "OPENTIGER_CONFIG",
    "OPENTIGER_REPO",
    "OPENTIGER_NOW",
];

/// `opentiger --repo DIR ARGS` with exactly `env` on top of an environment without [`AMBIENT`].
pub fn opentiger_clean(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_opentiger"));
    cmd.arg("--repo").arg(dir).args(args);
    for name in AMBIENT {
        cmd.env_remove(name);
    }
    cmd.envs(env.iter().copied());
    Out::from(cmd.output().expect("run opentiger"))
}

/// The lines of a `doctor` report at `level` (`ok`, `warn`, `fail`, `here`).
pub fn lines_at(report: &str, level: &str) -> Vec<String> {
    report
        .lines()
        .filter(|l| l.starts_with(&format!("{level} ")))
        .map(String::from)
        .collect()
}

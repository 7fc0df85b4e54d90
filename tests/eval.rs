//! `opentiger eval` on the worked example of docs/eval.md (`scripts/eval-example.sh`): a Python
//! library whose history adds one function and its test per commit, an agent that writes each
//! function right (`reproduce.yml`) or plausibly wrong (`wrong.yml`), and a judge that approves
//! everything. Each test drives the real binary.

use crate::common;
use crate::eval_example as example;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{git, Out};
use example::Example;

fn tasks(config: &serde_json::Value) -> Vec<serde_json::Value> {
    config["tasks"].as_array().unwrap().clone()
}

fn commits(config: &serde_json::Value) -> Vec<String> {
    tasks(config)
        .iter()
        .map(|t| t["commit"].as_str().unwrap().to_string())
        .collect()
}

/// The issue's first check: an agent that reproduces each change resolves all of them, none a
/// wrong merge; the change with no test is left out, and says why.
#[test]
fn an_agent_that_reproduces_each_change_resolves_all_of_them() {
    let ex = Example::new();
    let reproduce = ex.config("reproduce.yml");
    let out = ex
        .eval(&["--last", "4", "--config", &reproduce, "--json"])
        .ok();
    let json = out.json();
    let config = &json["configs"][0];
    assert_eq!(config["config"], reproduce.as_str());
    let summary = &config["summary"];
    assert_eq!(summary["tasks"], 4, "{summary}");
    assert_eq!(summary["resolved"], 4, "{summary}");
    assert_eq!(summary["wrong_merges"], 0, "{summary}");
    assert_eq!(summary["cost_usd"], 0.0, "{summary}");
    for task in tasks(config) {
        assert_eq!(task["merged"], true, "{task}");
        assert_eq!(task["hidden_tests"], "pass", "{task}");
        assert_eq!(task["runs"], 1, "{task}");
        assert_eq!(task["cost_usd"], 0.0, "{task}");
        assert_eq!(task["weak_tests"], false, "{task}");
    }
    let titles: Vec<String> = tasks(config)
        .iter()
        .map(|t| t["title"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        titles,
        [
            "Add factorial(n)",
            "Add is_palindrome(text)",
            "Add mean(values)",
            "Add clamp(x, low, high)"
        ]
    );
    let skipped = json["skipped"].as_array().unwrap();
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0]["title"], "Say in the README where the tests are");
    assert!(skipped[0]["why"]
        .as_str()
        .unwrap()
        .contains("changes no test file"));
    // The agent never saw the hidden test: the merged function is its own, the test the change's.
    let log = json["eval_dir"].as_str().map(PathBuf::from).unwrap();
    let first = &tasks(config)[0];
    let merged = std::fs::read_to_string(
        log.join(first["logs"].as_str().unwrap())
            .join("tests-merged.txt"),
    )
    .unwrap();
    assert!(
        merged.contains("tests/test_factorial.py") && merged.contains("PASSED"),
        "{merged}"
    );
}

/// The issue's second check: an agent that writes a plausible but wrong change resolves none,
/// and each change the lenient judge approved counts as a wrong merge.
#[test]
fn a_plausible_but_wrong_change_approved_by_a_lenient_judge_is_a_wrong_merge() {
    let ex = Example::new();
    let out = ex
        .eval(&["--last", "3", "--config", &ex.config("wrong.yml"), "--json"])
        .ok();
    let json = out.json();
    let summary = &json["configs"][0]["summary"];
    assert_eq!(summary["tasks"], 3, "{summary}");
    assert_eq!(summary["resolved"], 0, "{summary}");
    assert_eq!(summary["wrong_merges"], 3, "{summary}");
    for task in tasks(&json["configs"][0]) {
        assert_eq!(task["merged"], true, "{task}");
        assert_eq!(task["hidden_tests"], "fail", "{task}");
        assert_eq!(task["wrong_merge"], true, "{task}");
        assert_eq!(task["reviews"], 1, "{task}");
        assert_eq!(task["refusals"], 0, "{task}");
    }
    // The judge saw each change once; the workers wrote the wrong versions.
    let calls = ex.calls();
    assert_eq!(
        calls.iter().filter(|c| c.starts_with("judge ")).count(),
        3,
        "{calls:?}"
    );
}

/// The issue's third check: two configurations run on the same tasks and are reported side by
/// side — two columns in the Markdown, two entries in the JSON, the picture with two points.
#[test]
fn two_configurations_are_reported_side_by_side_on_the_same_tasks() {
    let ex = Example::new();
    let out = ex
        .eval(&[
            "--last",
            "2",
            "--config",
            &ex.config("reproduce.yml"),
            "--config",
            &ex.config("wrong.yml"),
            "--jobs",
            "2",
        ])
        .ok();
    let md = out.stdout;
    assert!(md.contains("| | reproduce.yml | wrong.yml |"), "{md}");
    assert!(md.contains("| resolved | 2 (100%) | 0 (0%) |"), "{md}");
    assert!(
        md.contains("| wrong merges (approved, hidden tests fail) | 0 | 2 |"),
        "{md}"
    );
    assert!(
        md.contains("![cost per task against resolve rate](report.svg)"),
        "{md}"
    );
    assert!(
        out.stderr.contains("[4/4]"),
        "a progress line per task:\n{}",
        out.stderr
    );
    let dir = ex.repo.join(".git/opentiger/eval");
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("report.json")).unwrap()).unwrap();
    let configs = json["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 2);
    assert_eq!(commits(&configs[0]), commits(&configs[1]));
    assert_eq!(commits(&configs[0]).len(), 2);
    let svg = std::fs::read_to_string(dir.join("report.svg")).unwrap();
    assert_eq!(svg.matches("<circle").count(), 2, "{svg}");
    assert!(svg.contains("reproduce.yml (100%, $0.00)") && svg.contains("wrong.yml (0%, $0.00)"));
    assert_eq!(std::fs::read_to_string(dir.join("report.md")).unwrap(), md);
}

/// The issue's fourth check: Ctrl-C in the middle, and the same command again, finishes without
/// redoing a finished task.
#[test]
fn an_interrupted_eval_resumes_without_redoing_finished_tasks() {
    let ex = Example::new();
    let reproduce = ex.config("reproduce.yml");
    let args = ["--last", "3", "--config", reproduce.as_str(), "--json"];
    let mut child = ex
        .command(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut seen = Vec::new();
    for line in BufReader::new(stderr).lines() {
        let line = line.unwrap();
        if line.contains("[1/3]") && line.contains("resolved") {
            // SAFETY: kill has no memory effects; the pid is our own child's.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
        }
        seen.push(line);
    }
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(130), "{seen:#?}");
    let first = ex.calls();
    assert_eq!(
        first.iter().filter(|c| *c == "worker factorial").count(),
        1,
        "{first:?}"
    );
    let again = ex.eval(&args).ok();
    assert!(
        again.stderr.contains("done in an earlier eval, kept"),
        "{}",
        again.stderr
    );
    let summary = &again.json()["configs"][0]["summary"];
    assert_eq!(
        (summary["tasks"].clone(), summary["resolved"].clone()),
        (3.into(), 3.into())
    );
    let calls = ex.calls();
    for name in ["factorial", "is_palindrome", "mean"] {
        let runs = calls
            .iter()
            .filter(|c| **c == format!("worker {name}"))
            .count();
        // The task finished before the interrupt ran once; the one it cut short may have run
        // twice (its first run was thrown away); the last ran once.
        let expected = if name == "is_palindrome" {
            1..=2
        } else {
            1..=1
        };
        assert!(expected.contains(&runs), "{name}: {runs} run(s): {calls:?}");
    }
    // Nothing was left in progress.
    let work = ex.repo.join(".git/opentiger/eval/work");
    assert_eq!(std::fs::read_dir(work).unwrap().count(), 0);
}

/// Every file of the repository (its `.git` included) by path and content, but the eval's own
/// folder.
fn snapshot(repo: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    fn walk(dir: &Path, root: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(root).unwrap().to_path_buf();
            if rel.starts_with(".git/opentiger/eval") {
                continue;
            }
            if entry.file_type().unwrap().is_dir() {
                walk(&path, root, out);
            } else {
                out.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(repo, repo, &mut out);
    out
}

/// The issue's fifth check: the user's repository — work tree, branches, refs, git config, its
/// own state with a task in it — is byte for byte what it was; the eval ran with the
/// repository's own configuration, as it does without --config.
#[test]
fn the_users_repository_branches_and_state_are_unchanged() {
    let ex = Example::new();
    std::fs::copy(
        ex.dir.path().join("reproduce.yml"),
        ex.repo.join(".opentiger.yml"),
    )
    .unwrap();
    std::fs::write(
        ex.repo.join(".gitignore"),
        "__pycache__/\n/.opentiger/state.sqlite*\n",
    )
    .unwrap();
    git(&ex.repo, &["add", ".opentiger.yml", ".gitignore"]);
    git(&ex.repo, &["commit", "-q", "-m", "Set up opentiger"]);
    git(&ex.repo, &["branch", "feature", "HEAD~2"]);
    let added = Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .args(["--repo"])
        .arg(&ex.repo)
        .args([
            "task",
            "add",
            "--title",
            "Add cube(x)",
            "--goal",
            "cube(x) returns x**3",
        ])
        .output()
        .unwrap();
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );
    let state = ex.repo.join(".opentiger/state.sqlite");
    assert!(state.exists());
    let before = snapshot(&ex.repo);
    let out = ex.eval(&["--range", "HEAD~4..HEAD", "--json"]).ok();
    let json = out.json();
    assert!(
        json["configs"][0]["config"]
            .as_str()
            .unwrap()
            .ends_with(".opentiger.yml"),
        "{json}"
    );
    // The set-up commit changes no test: left out; the three before it are replayed.
    assert_eq!(json["configs"][0]["summary"]["resolved"], 3, "{json}");
    let after = snapshot(&ex.repo);
    let changed: Vec<&PathBuf> = before
        .keys()
        .chain(after.keys())
        .filter(|p| before.get(*p) != after.get(*p))
        .collect();
    assert!(changed.is_empty(), "the eval changed {changed:?}");
    assert_eq!(git(&ex.repo, &["branch", "--list"]), "feature\n* main");
    assert!(git(&ex.repo, &["remote"]).is_empty());
}

/// Usage mistakes are named with their fix before anything runs.
#[test]
fn usage_mistakes_are_refused_with_their_fix_before_anything_runs() {
    let ex = Example::new();
    let bare = ex.dir.path().join("bare.yml");
    std::fs::write(&bare, "mode: local-git\n").unwrap();
    let out = ex.eval(&["--config", bare.to_str().unwrap()]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("--test-command CMD"), "{}", out.stderr);
    let out = ex.eval(&["--range", "main", "--config", &ex.config("reproduce.yml")]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("give two revisions as A..B"),
        "{}",
        out.stderr
    );
    let reproduce = ex.config("reproduce.yml");
    let out = ex.eval(&["--config", &reproduce, "--config", &reproduce]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("are the same configuration"),
        "{}",
        out.stderr
    );
    assert!(ex.calls().is_empty());
}

/// In github mode with a token, the task of a squashed pull request's commit carries the
/// request's text and the text of the issue it closes, read from GitHub.
#[test]
fn in_github_mode_a_task_carries_its_pull_request_and_issue_text() {
    let ex = Example::new();
    let server = common::github::GithubServer::start("acme", "mathlib");
    let issue = server.add_issue(
        "cube is missing",
        "We need cube(x) for the volume report.",
        &[],
        "ada",
        "OWNER",
    );
    let pull = server.add_pull(
        "Add cube(x)",
        &format!("cube(x) returns x to the power three.\n\nFixes #{issue}"),
        "cube",
        "main",
        "ada",
    );
    let shared = ex.dir.path().join("shared");
    std::fs::write(
        shared.join("reproduce/cube.py"),
        "def cube(x):\n    \"\"\"Returns x to the power three.\"\"\"\n    return x ** 3\n",
    )
    .unwrap();
    let lib = ex.repo.join("mathlib.py");
    let mut text = std::fs::read_to_string(&lib).unwrap();
    text.push_str(
        "\n\ndef cube(x):\n    \"\"\"Returns x to the power three.\"\"\"\n    return x ** 3\n",
    );
    std::fs::write(&lib, text).unwrap();
    std::fs::write(
        ex.repo.join("tests/test_cube.py"),
        "import unittest\n\nfrom mathlib import cube\n\n\nclass CubeTest(unittest.TestCase):\n    def test_cubes(self):\n        self.assertEqual(cube(3), 27)\n",
    )
    .unwrap();
    git(&ex.repo, &["add", "-A"]);
    git(
        &ex.repo,
        &["commit", "-q", "-m", &format!("Add cube(x) (#{pull})")],
    );
    let github = std::fs::read_to_string(ex.dir.path().join("reproduce.yml"))
        .unwrap()
        .replace("mode: local-git", "mode: github");
    let config = ex.dir.path().join("github.yml");
    std::fs::write(&config, github).unwrap();
    let out: Out = ex
        .command(&[
            "--last",
            "1",
            "--config",
            config.to_str().unwrap(),
            "--json",
        ])
        .env("GITHUB_TOKEN", server.token())
        .env("GITHUB_API_URL", server.base_url())
        .env("GITHUB_REPOSITORY", "acme/mathlib")
        .output()
        .unwrap()
        .into();
    let json = out.ok().json();
    let task = &json["configs"][0]["tasks"][0];
    assert_eq!(task["title"], format!("Add cube(x) (#{pull})"));
    assert_eq!(task["hidden_tests"], "pass", "{task}");
    let shown = std::fs::read_to_string(
        PathBuf::from(json["eval_dir"].as_str().unwrap())
            .join(task["logs"].as_str().unwrap())
            .join("task-show.txt"),
    )
    .unwrap();
    for needle in [
        "The pull request #",
        "cube(x) returns x to the power three.",
        "cube is missing",
        "We need cube(x) for the volume report.",
    ] {
        assert!(
            shown.contains(needle),
            "`{needle}` not in the task:\n{shown}"
        );
    }
}

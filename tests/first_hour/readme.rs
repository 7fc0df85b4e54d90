//! README's "Your first repository" section run as written: by hand, and through the Action's
//! tick script.

use super::*;

/// The shell block of README's "Your first repository in 10 minutes", as written.
fn readme_first_repo() -> String {
    common::marked_block(include_str!("../../README.md"), "first-repo")
}

/// Runs `script` with bash in a folder holding `my-project` (a git repository with a commit on
/// `main`), `opentiger` on PATH; returns the project's path (kept in `dir`) and the output.
fn run_first_repo(dir: &Path, script: &str, env: &[(&str, String)]) -> Out {
    common::my_project(dir);
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_opentiger"), bin.join("opentiger")).unwrap();
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let out = Command::new("bash")
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(dir)
        .env("PATH", path)
        .envs([
            ("GIT_AUTHOR_NAME", "t"),
            ("GIT_AUTHOR_EMAIL", "t@t"),
            ("GIT_COMMITTER_NAME", "t"),
            ("GIT_COMMITTER_EMAIL", "t@t"),
        ])
        .envs(env.iter().map(|(k, v)| (*k, v.as_str())))
        .env_remove("OPENTIGER_REPO")
        .env_remove("OPENTIGER_CONFIG")
        .env_remove("OPENTIGER_NOW")
        .env_remove("GITHUB_RUN_ID")
        .env_remove("ANTHROPIC_API_KEY")
        .output()
        .expect("bash");
    Out::from(out)
}

/// Item 14: README's first-repository section, run verbatim (cwd = the repository, no
/// `--repo`), ends with the change merged into `main`.
#[test]
fn the_readme_first_repo_section_works_as_written() {
    let script = readme_first_repo();
    assert!(
        script.contains("opentiger init") && script.contains("opentiger tick"),
        "{script}"
    );
    let dir = tempfile::tempdir().unwrap();
    let out = run_first_repo(dir.path(), &script, &[]).ok();
    let project = dir.path().join("my-project");
    assert_eq!(
        git(&project, &["show", "main:HELLO.md"]),
        "Hello from opentiger",
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.trim_end().ends_with("Say hello"),
        "last commit:\n{}",
        out.stdout
    );
    assert!(out.stdout.contains("approved and merged"), "{}", out.stdout);
}

/// Item 14: the same section with each `opentiger tick` run by the GitHub Action's tick script
/// (which passes `--repo .`), as a workflow would.
#[test]
fn the_readme_first_repo_section_works_with_the_action_tick_script() {
    let tick_sh = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/action/tick.sh");
    let script: String = readme_first_repo()
        .lines()
        .map(|line| match line {
            "opentiger tick" => format!("bash {tick_sh}\n"),
            other => format!("{other}\n"),
        })
        .collect();
    // One tick: nothing outside is awaited, so it runs, reviews and merges (issue 38).
    assert_eq!(script.matches("tick.sh").count(), 1, "{script}");
    let dir = tempfile::tempdir().unwrap();
    let outputs = dir.path().join("github-output");
    let summary = dir.path().join("step-summary.md");
    let env = [
        ("OPENTIGER_BIN", env!("CARGO_BIN_EXE_opentiger").to_string()),
        ("GITHUB_OUTPUT", outputs.display().to_string()),
        ("GITHUB_STEP_SUMMARY", summary.display().to_string()),
    ];
    let out = run_first_repo(dir.path(), &script, &env).ok();
    let project = dir.path().join("my-project");
    assert_eq!(
        git(&project, &["show", "main:HELLO.md"]),
        "Hello from opentiger",
        "{}",
        out.stdout
    );
    let outputs = std::fs::read_to_string(&outputs).unwrap();
    assert!(outputs.contains("tasks-done=1"), "{outputs}");
    assert!(!outputs.contains("exit-code=1"), "{outputs}");
}

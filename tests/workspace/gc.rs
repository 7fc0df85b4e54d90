//! A person's `git gc --prune=now` while an agent runs and while the judge reviews: nothing the
//! run or the review needs is unreachable (the review's trial merge is kept under a ref of
//! ours until it is done), and the task lands.

use super::common::{git, minute, GitRepo, Setup};
use super::{ancestor, finish, slow_agent, slow_task, spawn_tick, wait_for};

#[test]
fn a_person_s_gc_during_a_run_and_during_its_review_breaks_neither() {
    // One step per tick (issue 38: the review does not fit after the run in a tick of 1
    // minute), so the test can act between the run and its review.
    let g = GitRepo::with(Setup {
        extra: "limits:\n  tick_minutes: 1\n",
        ..Setup::default()
    });
    slow_agent(&g);
    let tools = g.tools_path().display().to_string();
    g.judge(&format!(
        "#!/bin/sh\ntouch {tools}/judging\ni=0\nwhile [ ! -f {tools}/judge-go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\necho '{{\"verdict\": \"approve\", \"summary\": \"fine\"}}' > \"$OPENTIGER_RESULT_FILE\"\n"
    ));
    let id = slow_task(&g);
    let tick = spawn_tick(&g, &minute(0));
    wait_for(&g.tools_path().join("started"));
    // The base moves meanwhile, so the review's trial merge is a commit of its own.
    std::fs::write(g.path().join("person.txt"), "mine\n").unwrap();
    git(g.path(), &["add", "person.txt"]);
    git(g.path(), &["commit", "-q", "-m", "a person's commit"]);
    let mine = git(g.path(), &["rev-parse", "HEAD"]);
    git(g.path(), &["gc", "-q", "--prune=now"]);
    std::fs::write(g.tools_path().join("go"), "").unwrap();
    finish(tick);
    let tick = spawn_tick(&g, &minute(5));
    wait_for(&g.tools_path().join("judging"));
    let kept = git(
        g.path(),
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/opentiger/review",
        ],
    );
    assert_eq!(kept.lines().count(), 1, "the trial merge is kept: {kept}");
    git(g.path(), &["gc", "-q", "--prune=now"]);
    std::fs::write(g.tools_path().join("judge-go"), "").unwrap();
    let out = finish(tick);
    let task = g.task_json(&id);
    assert_eq!(task["status"], "done", "{task}\n{}", out.stdout);
    assert!(ancestor(&g, &mine, "main"));
    assert_eq!(g.file_on_main("task.txt").as_deref(), Some("task\n"));
    let left = git(g.path(), &["for-each-ref", "refs/opentiger/review"]);
    assert_eq!(left, "", "the review's ref is gone after it");
    git(g.path(), &["fsck", "--connectivity-only", "--no-dangling"]);
}

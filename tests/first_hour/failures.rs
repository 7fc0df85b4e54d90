//! Failures a newcomer meets on the second try: a retry starts from the current base, only
//! failures the agent can act on reach its prompt, and a failure shows its cause whole.

use super::*;

/// Item 4: a retry after a failure that left no agent work on the task's branch starts from
/// the current base, so the fix committed there meanwhile is in the next run; `task retry`
/// says which start the next run gets.
#[test]
fn a_retry_without_agent_work_starts_from_the_current_base() {
    let repo = repo_with_config("verify:\n  commands: [\"./check.sh\"]\n");
    let add = ["--now", NOW, "task", "add", "--title", "T", "--goal", "g"];
    let id = run_in(repo.path(), &add).ok().stdout.trim().to_string();
    let first = run_in(repo.path(), &["--now", &common::minute(0), "tick"]).ok();
    assert!(
        first.stdout.contains("check.sh"),
        "verification failed:\n{}",
        first.stdout
    );
    // The person fixes the cause on main, then retries.
    executable(
        &repo.path().join("check.sh"),
        "#!/bin/sh\ntest -s hello.txt\n",
    );
    git(repo.path(), &["add", "check.sh"]);
    git(repo.path(), &["commit", "-q", "-m", "add check.sh"]);
    let retry = run_in(
        repo.path(),
        &["--now", &common::minute(1), "task", "retry", &id],
    )
    .ok();
    assert!(
        retry.stdout.contains("starts from the current main"),
        "{}",
        retry.stdout
    );
    for m in [2, 3] {
        run_in(repo.path(), &["--now", &common::minute(m), "tick"]).ok();
    }
    assert_eq!(status_of(repo.path(), &[], &id), "done");
    assert_eq!(git(repo.path(), &["show", "main:hello.txt"]), "hello");
}

/// Item 5: a failure the agent cannot act on (a setup failure: here a verification script
/// missing from the repository) is not put into the next prompt as one to avoid repeating;
/// one it can act on (a failing test) is.
#[test]
fn only_failures_the_agent_can_act_on_reach_the_next_prompt() {
    let repo = repo_with_config("verify:\n  commands: [\"./check.sh\"]\n");
    let prompts = repo.path().join(".git/loot/prompts");
    std::fs::create_dir_all(&prompts).unwrap();
    executable(
        &repo.path().join("scripts/agent.sh"),
        &format!(
            "#!/bin/sh\ncat > {}/$OPENTIGER_RUN_ID.md\necho hello > hello.txt\n",
            prompts.display()
        ),
    );
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "agent saves prompts"]);
    let add = ["--now", NOW, "task", "add", "--title", "T", "--goal", "g"];
    let id = run_in(repo.path(), &add).ok().stdout.trim().to_string();
    run_in(repo.path(), &["--now", &common::minute(0), "tick"]).ok(); // setup: no check.sh
    executable(
        &repo.path().join("check.sh"),
        "#!/bin/sh\necho 'assertion failed: 1 == 2'\nexit 1\n",
    );
    git(repo.path(), &["add", "check.sh"]);
    git(repo.path(), &["commit", "-q", "-m", "add check.sh"]);
    run_in(
        repo.path(),
        &["--now", &common::minute(1), "task", "retry", &id],
    )
    .ok();
    run_in(repo.path(), &["--now", &common::minute(2), "tick"]).ok(); // a test failure
    run_in(
        repo.path(),
        &["--now", &common::minute(3), "task", "retry", &id],
    )
    .ok();
    run_in(repo.path(), &["--now", &common::minute(4), "tick"]).ok();
    let mut texts: Vec<(std::time::SystemTime, String)> = std::fs::read_dir(&prompts)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.metadata().unwrap().modified().unwrap(),
                std::fs::read_to_string(e.path()).unwrap(),
            )
        })
        .collect();
    texts.sort_by_key(|(at, _)| *at);
    assert_eq!(texts.len(), 3, "three runs");
    assert!(
        !texts[1].1.contains("Do not repeat"),
        "a setup failure is not the agent's:\n{}",
        texts[1].1
    );
    let third = &texts[2].1;
    assert!(
        third.contains("assertion failed"),
        "a test failure is shown:\n{third}"
    );
    assert!(
        !third.contains("No such file"),
        "the setup failure is not:\n{third}"
    );
}

/// Item 7: a failed verification shows the command's last lines (the cause) in `tick`, its
/// `--json` failures, `task show` and the job summary; a long path is cut in the middle, the
/// reason never.
#[test]
fn a_failure_shows_its_cause_not_a_cut_headline() {
    let deep = "tools/a-very-long-directory-name-for-checks/and-another-level-of-nesting/yet-another-folder";
    let check = format!("{deep}/run-the-whole-verification-suite.sh");
    let repo = repo_with_config(&format!(
        "verify:\n  commands: [\"{check} --offline --quiet\"]\n"
    ));
    let mut script = String::from("#!/bin/sh\n");
    for i in 0..40 {
        script.push_str(&format!("echo 'compiling crate number {i}'\n"));
    }
    script.push_str(
        "echo 'error[E0425]: cannot find value `the_real_cause` in this scope'\nexit 1\n",
    );
    executable(&repo.path().join(&check), &script);
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "add the check"]);
    let add = ["--now", NOW, "task", "add", "--title", "T", "--goal", "g"];
    let id = run_in(repo.path(), &add).ok().stdout.trim().to_string();
    let summary = repo.path().join(".git/step-summary.md");
    let summary_text = summary.display().to_string();
    let out = run_in_env(
        repo.path(),
        &["--now", NOW, "tick", "--json"],
        &[("GITHUB_STEP_SUMMARY", summary_text.as_str())],
    )
    .ok();
    let json = out.json();
    let failure = &json["failures"][0];
    let tail = failure["output_tail"].to_string();
    assert!(tail.contains("the_real_cause"), "{failure}");
    let message = failure["message"].as_str().unwrap();
    for part in [
        "Verification failed at tools/",
        "suite.sh --offline --quiet [config]:",
        "the_real_cause",
    ] {
        assert!(message.contains(part), "`{part}` missing: {failure}");
    }
    let lines = json["lines"].to_string();
    assert!(lines.contains("the_real_cause"), "tick lines: {lines}");
    assert!(
        !lines.contains("compiling crate number 3\\n"),
        "bounded: {lines}"
    );
    let text = std::fs::read_to_string(&summary).expect("job summary written");
    assert!(
        text.contains("cannot find value `the\\_real\\_cause`"),
        "job summary:\n{text}"
    );
    let show = run_in(repo.path(), &["--now", NOW, "task", "show", &id]).ok();
    assert!(
        show.stdout.contains("the_real_cause"),
        "task show:\n{}",
        show.stdout
    );
    assert!(
        show.stdout.contains("suite.sh --offline --quiet"),
        "{}",
        show.stdout
    );
}

//! `opentiger eval` where the loop does not merge: a change it cannot deliver, and a good change
//! the judge refuses — the judge's record counts the second.

use crate::common;
use crate::eval_example as example;

use std::os::unix::fs::PermissionsExt;

use example::Example;

fn only_task(out: common::Out) -> (serde_json::Value, serde_json::Value) {
    let json = out.ok().json();
    let config = json["configs"][0].clone();
    let tasks = config["tasks"].as_array().unwrap().clone();
    assert_eq!(tasks.len(), 1, "{config}");
    (config["summary"].clone(), tasks[0].clone())
}

/// A worker whose every change breaks the tests: retried, reworked, then the task waits on a
/// person, and the eval stops there (not at a bound) and says why it was not merged.
#[test]
fn a_change_the_loop_cannot_deliver_ends_unmerged_with_its_reason() {
    let ex = Example::new();
    let broken = ex.shared().join("broken");
    std::fs::create_dir_all(&broken).unwrap();
    std::fs::write(broken.join("factorial.py"), "def factorial(:\n").unwrap();
    let config = ex.config_from("broken.yml", |t| t.replace("\"reproduce\"]", "\"broken\"]"));
    let (summary, task) = only_task(ex.eval(&["--last", "1", "--config", &config, "--json"]));
    assert_eq!(summary["resolved"], 0, "{summary}");
    assert_eq!(summary["wrong_merges"], 0, "{summary}");
    assert_eq!(task["merged"], false, "{task}");
    assert_eq!(task["bound"], serde_json::Value::Null, "{task}");
    assert!(task["runs"].as_u64().unwrap() >= 2, "{task}");
    assert!(task["reworks"].as_u64().unwrap() >= 1, "{task}");
    let why = task["why_not"].as_str().unwrap();
    assert!(why.contains("Verification failed"), "{why}");
    // No run left a change: nothing to put the hidden tests on.
    assert_eq!(task["hidden_tests"], "none", "{task}");
    assert_eq!(task["tested"], "nothing", "{task}");
}

/// The reproducing worker with a judge that asks for changes every time: nothing is merged, but
/// the hidden tests pass on the last change, which the report counts against the judge.
#[test]
fn a_good_change_the_judge_refuses_is_counted_as_refused_yet_passing() {
    let ex = Example::new();
    let judge = ex.shared().join("refuse.sh");
    std::fs::write(
        &judge,
        "#!/bin/sh\necho '{\"verdict\": \"request_changes\", \"summary\": \"not convinced\", \"findings\": [\"prove it with more tests\"]}' > \"$OPENTIGER_RESULT_FILE\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&judge, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = ex.config_from("refusing.yml", |t| {
        t.replace(
            "agents:\n",
            &format!(
                "agents:\n  judge:\n    executor: command\n    command: [\"{}\"]\n",
                judge.display()
            ),
        )
    });
    let (summary, task) = only_task(ex.eval(&["--last", "1", "--config", &config, "--json"]));
    assert_eq!(task["merged"], false, "{task}");
    assert_eq!(task["hidden_tests"], "pass", "{task}");
    assert_eq!(task["tested"], "last_change", "{task}");
    assert_eq!(task["refused_passing"], true, "{task}");
    assert!(task["refusals"].as_u64().unwrap() >= 1, "{task}");
    assert_eq!(task["reviews"], task["refusals"], "{task}");
    assert_eq!(summary["refused_passing"], 1, "{summary}");
    assert_eq!(summary["resolved"], 0, "{summary}");
}

/// The agent's workspace borrows the clone's objects: the clone holds the history up to the
/// parent only, so neither the change's test nor its commit can be read there — while the
/// parent's files can (the twin showing the spy looks in the right place).
#[test]
fn the_agent_cannot_read_the_change_from_the_objects_it_borrows() {
    let ex = Example::new();
    let shared = ex.shared();
    let hidden = common::git(&ex.repo, &["rev-parse", "HEAD:tests/test_factorial.py"]);
    let change = common::git(&ex.repo, &["rev-parse", "HEAD"]);
    let seen = common::git(
        &ex.repo,
        &["rev-parse", "HEAD~1:tests/test_is_palindrome.py"],
    );
    let spy = shared.join("spy.sh");
    std::fs::write(
        &spy,
        format!(
            "#!/bin/sh\nif [ \"$OPENTIGER_ROLE\" = judge ]; then echo '{{\"verdict\": \"approve\", \"summary\": \"ok\"}}' > \"$OPENTIGER_RESULT_FILE\"; exit 0; fi\n\
             for o in {hidden} {change} {seen}; do\n  if git cat-file -e \"$o\" 2>/dev/null; then echo \"sees $o\"; else echo \"not $o\"; fi\ndone >> {log}\n",
            log = shared.join("spy.log").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&spy, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = ex.config_from("spy.yml", |t| {
        t.replace(
            &format!("[\"{}\", \"reproduce\"]", shared.join("agent.sh").display()),
            &format!("[\"{}\"]", spy.display()),
        )
    });
    ex.eval(&["--last", "1", "--config", &config, "--max-ticks", "1"])
        .ok();
    let log = std::fs::read_to_string(shared.join("spy.log")).unwrap();
    assert!(log.contains(&format!("sees {seen}")), "{log}");
    assert!(log.contains(&format!("not {hidden}")), "{log}");
    assert!(log.contains(&format!("not {change}")), "{log}");
}

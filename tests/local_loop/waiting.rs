//! Issue 49: what waits on a person says so, in the record: a merge a person's uncommitted file
//! holds, and a task depending on a family that waits on a person, are both flagged in
//! `status --json` with the person's step (the dependent naming the task it waits through), and
//! nothing is reviewed or run again while they wait.

use super::*;

/// The judge approves, and writes a line to `judged` in the tools folder each time it runs.
fn counting_judge(g: &GitRepo) {
    let log = g.tools_path().join("judged");
    g.judge(&format!(
        "#!/bin/sh\necho x >> {}\necho '{{\"verdict\": \"approve\", \"summary\": \"fine\"}}' > \"$OPENTIGER_RESULT_FILE\"\n",
        log.display()
    ));
}

fn reviews(g: &GitRepo) -> usize {
    std::fs::read_to_string(g.tools_path().join("judged"))
        .map(|t| t.lines().count())
        .unwrap_or(0)
}

fn person(task: &serde_json::Value) -> (String, Option<String>) {
    let p = &task["waiting_on_person"];
    assert!(p.is_object(), "not waiting on a person: {task}");
    (
        p["step"].as_str().unwrap().to_string(),
        p["via"].as_str().map(str::to_string),
    )
}

#[test]
fn a_merge_held_by_a_person_s_uncommitted_file_waits_on_them_and_spends_no_review() {
    let g = GitRepo::with(Setup::default());
    g.agent("#!/bin/sh\n[ \"$OPENTIGER_TASK_ID\" = held ] && echo task > task.txt\necho \"$OPENTIGER_TASK_ID\" > \"out-$OPENTIGER_TASK_ID.txt\"\n");
    counting_judge(&g);
    let held = g
        .repo
        .add(&["--title", "T", "--goal", "task.txt", "--id", "held"]);
    let after = g
        .repo
        .add(&["--title", "D", "--goal", "d", "--depends-on", &held]);
    std::fs::write(g.path().join("task.txt"), "my draft\n").unwrap();
    for m in [0, 5, 10] {
        let out = g.tick(&minute(m)).ok();
        assert!(!out.stdout.contains("[judge.review]"), "{}", out.stdout);
        let task = g.task_json(&held);
        assert_eq!(task["block_reason"], "awaiting_judge", "{task}");
        let (step, via) = person(&task);
        assert!(
            step.contains("commit or stash your uncommitted changes to task.txt"),
            "{step}"
        );
        assert_eq!(via, None);
        let (dependent, via) = person(&g.task_json(&after));
        assert_eq!((dependent, via.as_deref()), (step, Some(held.as_str())));
    }
    assert_eq!(
        reviews(&g),
        0,
        "no review spent while the person's file is in the way"
    );
    assert_eq!(g.task_json(&held)["attempts"], serde_json::json!({}));
    let status = g.repo.run_at(&minute(11), &["status"]).ok().stdout;
    assert!(
        status.contains("now:  waits on a person: commit or stash")
            && status.contains(&format!(
                "now:  waits on a person through {held}: commit or stash"
            )),
        "{status}"
    );
    assert_eq!(
        std::fs::read_to_string(g.path().join("task.txt")).unwrap(),
        "my draft\n",
        "the person's work is kept"
    );
    // They stash it: the next tick reviews once and merges, and the dependent runs.
    git(g.path(), &["stash", "push", "-q", "-u", "--", "task.txt"]);
    let out = g.tick(&minute(15)).ok();
    assert!(out.stdout.contains("approved and merged"), "{}", out.stdout);
    assert_eq!(reviews(&g), 2, "one review each: {}", out.stdout);
    assert_eq!(g.task_json(&held)["status"], "done");
    assert_eq!(g.task_json(&after)["status"], "done");
    assert!(g.task_json(&held)["waiting_on_person"].is_null());
}

#[test]
fn a_task_depending_on_a_family_waiting_on_a_person_is_flagged_with_the_step() {
    let g = GitRepo::with(Setup::default());
    // Changes nothing: the task fails, its rework fails the same way, and the family stops.
    g.agent("#!/bin/sh\ntrue\n");
    counting_judge(&g);
    let stuck = g
        .repo
        .add(&["--title", "A", "--goal", "a", "--id", "stuck"]);
    let after = g
        .repo
        .add(&["--title", "D", "--goal", "d", "--depends-on", &stuck]);
    for m in [0, 5, 10, 15] {
        g.tick(&minute(m)).ok();
    }
    let family = g.task_json(&stuck);
    assert_eq!(family["block_reason"], "needs_rework", "{family}");
    let (step, fix) = person(&family);
    let fix = fix.expect("the family waits through its rework");
    assert_eq!(g.task_json(&fix)["block_reason"], "awaiting_human");
    assert!(
        step.contains(&format!("`opentiger task retry {stuck}`")),
        "{step}"
    );
    let dependent = g.task_json(&after);
    assert_eq!(dependent["status"], "queued");
    assert_eq!(person(&dependent), (step.clone(), Some(fix.clone())));
    assert!(
        dependent["reason"]
            .as_str()
            .unwrap()
            .contains("which waits on a person"),
        "{dependent}"
    );
    // Nothing more is run or reviewed while they wait.
    let runs = |id: &str| {
        g.repo.run(&["task", "show", id, "--json"]).ok().json()["runs"]
            .as_array()
            .unwrap()
            .len()
    };
    let before = (runs(&stuck), runs(&fix));
    for m in [20, 30] {
        g.tick(&minute(m)).ok();
    }
    assert_eq!((runs(&stuck), runs(&fix)), before);
    assert_eq!(reviews(&g), 0);
    assert_eq!(runs(&after), 0);
}

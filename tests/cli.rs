//! The CLI end to end: the real binary on temp directories.

use crate::common;
#[path = "cli/config_errors.rs"]
mod config_errors;

use common::TestRepo;
use opentiger::model::{
    AgentId, BlockReason, FailureCode, Run, RunId, RunStatus, Task, TaskId, TaskState, TaskStatus,
    TickId,
};
use opentiger::store::{Store, TaskChanges, Writer};
use opentiger::time::Timestamp;

#[test]
fn config_show_and_schema() {
    let repo = TestRepo::new();
    repo.file(".opentiger.yml", "mode: local-git\nagents:\n  default:\n    executor: command\n    command: [\"./agent.sh\"]\n");
    let shown = repo.run(&["config", "show", "--json"]).ok().json();
    assert_eq!(shown["mode"], "local-git");
    assert_eq!(shown["state"]["store"], "file", "mode default resolved");
    assert_eq!(
        shown["agents"]["worker"]["executor"], "command",
        "inherited from default"
    );
    assert_eq!(shown["agents"]["worker"]["command"][0], "./agent.sh");
    let yaml = repo.run(&["config", "show"]).ok().stdout;
    assert!(yaml.contains("base_branch: main"), "{yaml}");
    let schema = repo.run(&["config", "schema"]).ok().json();
    assert_eq!(schema["type"], "object");
    assert!(schema["properties"]["limits"].is_object());
}

#[test]
fn local_backlog_add_list_show_retry_cancel() {
    let repo = TestRepo::new();
    let a = repo.add(&[
        "--title",
        "Set up CI",
        "--goal",
        "cargo test passes",
        "--command",
        "cargo test",
        "--priority",
        "5",
    ]);
    assert_eq!(a.len(), 12, "a 12-hex id: {a}");
    let b = repo.add(&[
        "--title",
        "Feature",
        "--goal",
        "adds x",
        "--depends-on",
        &a[..6],
    ]);
    let list = repo.run(&["task", "list"]).ok().stdout;
    assert!(
        list.contains(&a) && list.contains(&b) && list.contains("Set up CI"),
        "{list}"
    );

    let shown = repo.run(&["task", "show", &b, "--json"]).ok().json();
    assert_eq!(shown["task"]["dependencies"][0], a.as_str());
    assert!(
        shown["next_action"]
            .as_str()
            .unwrap()
            .contains(&format!("waits for {a}")),
        "{shown}"
    );
    assert_eq!(shown["events"][0]["kind"], "task.created");

    // Cancelling is a person's decision; the dependent then needs one too.
    repo.run(&["task", "cancel", &a]).ok();
    let refused = repo.run(&["task", "cancel", &a]);
    assert_eq!(refused.code, 2);
    assert!(
        refused.stderr.contains("already cancelled"),
        "{}",
        refused.stderr
    );
    let status = repo.run(&["status", "--json"]).ok().json();
    let dependent = status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == b.as_str())
        .unwrap()
        .clone();
    assert!(
        dependent["next_action"]
            .as_str()
            .unwrap()
            .contains("which was cancelled"),
        "{dependent}"
    );

    repo.run(&["task", "retry", &a]).ok();
    let shown = repo.run(&["task", "show", &a]).ok().stdout;
    assert!(shown.contains("state:    queued"), "{shown}");
    assert!(
        shown.contains("cancelled by a person") && shown.contains("retried by a person"),
        "{shown}"
    );
    let refused = repo.run(&["task", "retry", &a]);
    assert_eq!(refused.code, 2, "a queued task cannot be retried");
}

#[test]
fn bad_task_input_writes_nothing() {
    let repo = TestRepo::new();
    let a = repo.add(&["--title", "A", "--goal", "g"]);
    let before = std::fs::read(repo.state_path()).unwrap();
    repo.file(
        "cycle.json",
        r#"{"tasks": [
        {"key": "x", "title": "X", "goal": "g", "depends_on": ["y"]},
        {"key": "y", "title": "Y", "goal": "g", "depends_on": ["x"]}
    ]}"#,
    );
    let cycle = repo.path().join("cycle.json").display().to_string();
    let cases: &[(&[&str], &str)] = &[
        (
            &[
                "task",
                "add",
                "--title",
                "B",
                "--goal",
                "g",
                "--depends-on",
                "ffffffffffff",
            ],
            "task ffffffffffff not found",
        ),
        (
            &[
                "task",
                "add",
                "--title",
                "S",
                "--goal",
                "g",
                "--id",
                "s1",
                "--depends-on",
                "s1",
            ],
            "dependency cycle: s1 → s1",
        ),
        (
            &["task", "add", "--title", "D", "--goal", "g", "--id", &a],
            "already exists",
        ),
        (
            &["task", "add", "--from", &cycle],
            "dependency cycle: x → y → x",
        ),
        (
            &["task", "add", "--title", "", "--goal", "g"],
            "must not be empty",
        ),
        (
            &[
                "task", "add", "--title", "R", "--goal", "g", "--role", "boss",
            ],
            "invalid value 'boss'",
        ),
        (&["task", "show", "nope"], "task nope not found"),
    ];
    for (args, message) in cases {
        let out = repo.run(args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert!(
            out.stderr.contains(message),
            "{args:?}: `{message}` not in {}",
            out.stderr
        );
    }
    assert_eq!(
        std::fs::read(repo.state_path()).unwrap(),
        before,
        "state unchanged"
    );
}

#[test]
fn plan_files_add_a_graph() {
    let repo = TestRepo::new();
    repo.file(
        "plan.json",
        r#"{"tasks": [
        {"key": "base", "title": "Base", "goal": "g", "priority": 10},
        {"key": "api", "title": "API", "goal": "g", "depends_on": ["base"], "role": "tester"}
    ]}"#,
    );
    let plan = repo.path().join("plan.json").display().to_string();
    let out = repo.run(&["task", "add", "--from", &plan]).ok().stdout;
    let ids: Vec<&str> = out.lines().collect();
    assert_eq!(ids.len(), 2);
    let api = repo.run(&["task", "show", ids[1], "--json"]).ok().json();
    assert_eq!(api["task"]["dependencies"][0], ids[0]);
    assert_eq!(api["task"]["role"], "tester");
}

/// A state with tasks in every status, built through the library.
fn seeded(repo: &TestRepo) {
    let mut store = Store::open_file(&repo.state_path()).unwrap();
    let t0 = Timestamp::parse_rfc3339("2026-11-21T11:00:00Z").unwrap();
    let w = Writer {
        tick_id: None,
        actor: "test",
        now: t0,
    };
    let mk = |id: &str, title: &str| Task::new(TaskId::from(id), title, "goal", t0);
    let mut dep = mk("waiting", "Waits for setup");
    dep.dependencies = vec![TaskId::from("setup")];
    store
        .insert_tasks(
            &[
                mk("setup", "Set up the build"),
                dep,
                mk("running", "Long run"),
                mk("failing", "Flaky tests"),
                mk("quota", "Hit the quota"),
                mk("human", "Needs a decision"),
                mk("judge", "Ready for review"),
                mk("done", "Finished"),
                mk("gone", "Dropped"),
            ],
            w,
        )
        .unwrap();
    let tick = TickId::from("old-tick");
    let run = |id: &str, task: &str, status: RunStatus| {
        let t = mk(task, "");
        let mut r = Run::started(
            RunId::from(id),
            &t,
            AgentId::from("local:elsewhere:1"),
            tick.clone(),
            t0,
        );
        r.status = status;
        r
    };
    let mv = |store: &mut Store, id: &str, to: TaskState, changes: TaskChanges| {
        store
            .transition_task(&TaskId::from(id), to, "seeded", changes, w)
            .unwrap();
    };
    // running, with a live lease held by another agent: through a claim.
    mv(
        &mut store,
        "running",
        TaskState::RUNNING,
        TaskChanges::default(),
    );
    store
        .insert_run(&run("r-running", "running", RunStatus::Running))
        .unwrap();
    // failed with a test failure
    mv(
        &mut store,
        "failing",
        TaskState::RUNNING,
        TaskChanges::default(),
    );
    let mut failed = run("r-failing", "failing", RunStatus::Failed);
    failed.failure_code = Some(FailureCode::VerificationCommandFailed);
    failed.error = Some("Verification failed at cargo test [explicit]: assertion failed".into());
    store.insert_run(&failed).unwrap();
    mv(
        &mut store,
        "failing",
        TaskState::FAILED,
        TaskChanges::default(),
    );
    mv(
        &mut store,
        "quota",
        TaskState::RUNNING,
        TaskChanges::default(),
    );
    mv(
        &mut store,
        "quota",
        TaskState::blocked(BlockReason::QuotaWait),
        TaskChanges {
            attempts: None,
            next_attempt_at: Some(Some(
                Timestamp::parse_rfc3339("2026-11-21T12:40:00Z").unwrap(),
            )),
            needs_approval: None,
        },
    );
    mv(
        &mut store,
        "human",
        TaskState::blocked(BlockReason::AwaitingHuman),
        TaskChanges::default(),
    );
    mv(
        &mut store,
        "judge",
        TaskState::RUNNING,
        TaskChanges::default(),
    );
    store
        .insert_run(&run("r-judge", "judge", RunStatus::Success))
        .unwrap();
    mv(
        &mut store,
        "judge",
        TaskState::blocked(BlockReason::AwaitingJudge),
        TaskChanges::default(),
    );
    mv(
        &mut store,
        "done",
        TaskState::RUNNING,
        TaskChanges::default(),
    );
    mv(&mut store, "done", TaskState::DONE, TaskChanges::default());
    mv(
        &mut store,
        "gone",
        TaskState::CANCELLED,
        TaskChanges::default(),
    );
    assert_eq!(TaskStatus::ALL.len(), 6);
}

#[test]
fn dry_run_explains_every_decision_and_writes_nothing() {
    let repo = TestRepo::new();
    seeded(&repo);
    let before = std::fs::read(repo.state_path()).unwrap();
    // Issue 40: the preflight gates and scores are the engine's figures, shown with -v.
    let plain = repo.run(&["tick", "--dry-run"]).ok().stdout;
    assert!(
        !plain.contains("Preflight") && !plain.contains("score "),
        "{plain}"
    );
    assert!(plain.contains("Next: "), "{plain}");
    let text = repo.run(&["-v", "tick", "--dry-run"]).ok().stdout;
    for needle in [
        "Preflight S5",
        "[recovery.run_lost]",
        "running without a lease",
        "[recovery.retry_failed]",
        "test failure (test_failure): retry 1/3",
        "quota_wait: retry after 2026-11-21T12:40:00Z",
        "[judge.review]",
        "judge run r-judge",
        "waits on a person",
        "waits for setup",
        // Issue 38: the review and a run would not both end in limits.tick_minutes: this round
        // reviews, and says a later round (or tick) starts the run.
        "[dispatch.not_picked]",
        "more than the 20 min left of this tick (limits.tick_minutes)",
        "This is the tick's first round (its work may take 30 min)",
        "more rounds may follow",
    ] {
        assert!(text.contains(needle), "`{needle}` missing from:\n{text}");
    }
    // With time for a run after the review (default timeouts, a 90-minute tick), the claims
    // are in the first round, with their scores (-v).
    repo.file(
        ".opentiger.yml",
        "mode: local-git\nlimits:\n  tick_minutes: 90\n",
    );
    let roomy = repo.run(&["-v", "tick", "--dry-run"]).ok().stdout;
    assert!(
        roomy.contains("[dispatch.claim]") && roomy.contains("(score "),
        "{roomy}"
    );
    repo.file(".opentiger.yml", "mode: local-git\n");
    let json = repo.run(&["tick", "--dry-run", "--json"]).ok().json();
    assert!(json["decisions"].as_array().unwrap().len() >= 8);
    assert_eq!(json["more_rounds_may_follow"], true, "{json}");
    assert_eq!(json["bound_ms"], 30 * 60 * 1000, "{json}");
    assert_eq!(json["preflight"]["class"], "S5");
    assert_eq!(
        std::fs::read(repo.state_path()).unwrap(),
        before,
        "dry run wrote nothing"
    );
    let wal = repo.path().join(".opentiger/state.sqlite-journal");
    assert!(!wal.exists());
}

#[test]
fn status_shows_reason_and_next_action_for_every_active_task() {
    let repo = TestRepo::new();
    seeded(&repo);
    let status = repo.run(&["status", "--json"]).ok().json();
    let tasks = status["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 7, "active tasks only");
    for t in tasks {
        for key in [
            "id",
            "title",
            "status",
            "block_reason",
            "kind",
            "attempts",
            "pr",
            "next_action",
        ] {
            assert!(t.get(key).is_some(), "{key} missing in {t}");
        }
        assert!(!t["next_action"].as_str().unwrap().is_empty());
    }
    let quota = tasks.iter().find(|t| t["id"] == "quota").unwrap();
    assert_eq!(
        quota["next_action"],
        "quota_wait: retry after 2026-11-21T12:40:00Z (wait 0/12)"
    );
    assert!(status["runs"].as_array().unwrap().len() >= 3);
    assert!(status.get("last_tick").is_some());
    let all = repo.run(&["status", "--json", "--all"]).ok().json();
    assert_eq!(all["tasks"].as_array().unwrap().len(), 9);
    let text = repo.run(&["status"]).ok().stdout;
    assert!(text.contains("now:  quota_wait: retry after"), "{text}");
}

#[test]
fn broken_state_files_are_refused_cleanly() {
    let repo = TestRepo::new();
    repo.file(
        ".opentiger/state.sqlite",
        "this is not a database at all, it is plain text padding padding",
    );
    let out = repo.run(&["status"]);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("not a readable opentiger state file"),
        "{}",
        out.stderr
    );

    let newer = TestRepo::new();
    drop(Store::open_file(&newer.state_path()).unwrap());
    rusqlite::Connection::open(newer.state_path())
        .unwrap()
        .pragma_update(None, "user_version", 99)
        .unwrap();
    let before = std::fs::read(newer.state_path()).unwrap();
    for args in [
        &["status"][..],
        &["task", "add", "--title", "t", "--goal", "g"],
        &["tick", "--dry-run"],
    ] {
        let out = newer.run(args);
        assert_eq!(out.code, 2, "{args:?}");
        assert!(
            out.stderr
                .contains("written by a newer opentiger (schema 99"),
            "{}",
            out.stderr
        );
    }
    assert_eq!(std::fs::read(newer.state_path()).unwrap(), before);

    // issue 16 item 8: a state missing a table is refused before anything is claimed.
    let broken = TestRepo::new();
    broken.file(".gitignore", "/.opentiger/\n");
    common::git(broken.path(), &["init", "-q", "-b", "main"]);
    common::git(broken.path(), &["add", "-A"]);
    common::git(broken.path(), &["commit", "-q", "-m", "initial"]);
    broken.add(&["--title", "t", "--goal", "g"]);
    rusqlite::Connection::open(broken.state_path())
        .unwrap()
        .execute_batch("PRAGMA foreign_keys = OFF; DROP TABLE leases;")
        .unwrap();
    let before = std::fs::read(broken.state_path()).unwrap();
    let out = broken.run(&["tick"]);
    assert_eq!(out.code, 2, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr.contains("the table `leases` is missing"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read(broken.state_path()).unwrap(),
        before,
        "nothing claimed"
    );
}

#[test]
fn bad_flags_are_usage_errors() {
    let repo = TestRepo::new();
    let out = repo.run_at("yesterday", &["status"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("--now") && out.stderr.contains("RFC 3339"),
        "{}",
        out.stderr
    );
    assert_eq!(repo.run(&["frobnicate"]).code, 2);
    let missing = repo.run(&["--config", "nope.yml", "status"]);
    assert_eq!(missing.code, 2);
    assert!(missing.stderr.contains("nope.yml"), "{}", missing.stderr);
}

//! Issue 39: the prompts ask an agent only for what its CLI can do. aider cannot run commands
//! or write `$OPENTIGER_RESULT_FILE` (`no_commands`, no `result_file`): its prompt names the
//! goal and what binds the change (paths, the checks the runner runs), and asks the judge and
//! the planner for the JSON in the reply.

use super::*;

#[test]
fn an_agent_that_cannot_run_commands_or_write_files_is_not_asked_to() {
    let t = Templates::builtin().unwrap();
    let mut worker = WorkerPrompt {
        role: "worker".into(),
        title: "Add a line".into(),
        goal: "Add `hello` to notes.txt".into(),
        commands: vec!["./check.sh".into()],
        result_file: Some("/s/result.json".into()),
        ..WorkerPrompt::default()
    };
    let can = t.render_worker(&worker).unwrap();
    for part in [
        "Run them yourself",
        "$OPENTIGER_RESULT_FILE",
        "Do not run git commands",
    ] {
        assert!(can.contains(part), "{part:?} missing:\n{can}");
    }
    worker.no_commands = true;
    worker.result_file = None;
    let cannot = t.render_worker(&worker).unwrap();
    for part in [
        "Run them yourself",
        "OPENTIGER_RESULT_FILE",
        "git commands",
        "long-running",
    ] {
        assert!(!cannot.contains(part), "{part:?} asked of aider:\n{cannot}");
    }
    for part in ["the runner will run these commands", "- `./check.sh`"] {
        assert!(cannot.contains(part), "{part:?} missing:\n{cannot}");
    }
    // With nothing binding it: the title and the goal (SmolLM2-135M behind aider edits on
    // this, not on the long form, issue 39).
    worker.commands.clear();
    assert_eq!(
        t.render_worker(&worker).unwrap().trim_end(),
        "# Task: Add a line\n\n## Goal\n\nAdd `hello` to notes.txt"
    );
    assert!(!cannot.contains("\n\n\n"), "stray blank lines:\n{cannot}");

    let judge = JudgePrompt {
        title: "Add a line".into(),
        goal: "g".into(),
        diff: "+hello".into(),
        ..JudgePrompt::default()
    };
    let out = t.render_judge(&judge).unwrap();
    assert!(!out.contains("OPENTIGER_RESULT_FILE"), "{out}");
    assert!(out.contains("Answer with one JSON object of exactly this shape, on one line"));
    let planner = PlannerPrompt::default();
    let out = t.render_planner(&planner).unwrap();
    assert!(!out.contains("OPENTIGER_RESULT_FILE"), "{out}");
    assert!(
        out.contains("Answer with one JSON object of this shape"),
        "{out}"
    );
}

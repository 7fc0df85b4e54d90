//! The requirement's issue (planner approval in the thread): `approve`, `cancel` and `replan`
//! act on the whole plan; an approved planned task gets its issue first in github mode. Not
//! for: a task named there, decided as on its own thread (`verbs.rs`).

use super::*;

#[test]
fn on_the_requirement_s_issue_approve_cancel_and_replan_act_on_the_whole_plan() {
    let human = TaskState::blocked(BlockReason::AwaitingHuman);
    let held = |id: &str| with(id, human, None).with(|t| t.needs_approval = true);
    let mut w = world(vec![held("a"), held("b"), with("c", TaskState::DONE, None)]);
    for id in ["a", "b", "c"] {
        w.origins
            .insert(TaskId::from(id), Origin::Plan("p1".to_string()));
    }
    let plan = || Place::Plan {
        number: 3,
        tasks: ["a", "b", "c"].iter().map(|t| TaskId::from(*t)).collect(),
    };
    // Approve: every waiting task of the plan goes to get its issue first.
    let d = run(&w, "/opentiger approve", plan(), true, None);
    assert_eq!(d.outcome, Outcome::Done, "{d:?}");
    let linking = TaskState::blocked(BlockReason::IssueLinking);
    assert_eq!(
        moved_to(&d),
        [("a".to_string(), linking), ("b".to_string(), linking)]
    );
    // Cancel: all that can be; replan: the plan is made again.
    let d = run(&w, "/opentiger cancel", plan(), true, None);
    assert_eq!(moved_to(&d).len(), 2, "{d:?}");
    let d = run(&w, "/opentiger replan", plan(), true, None);
    assert!(
        matches!(d.effects.last(), Some(Effect::Replan { .. })),
        "{d:?}"
    );
    // Anything else names its task; a named task of the plan is decided as on its thread.
    let d = run(&w, "/opentiger retry", plan(), true, None);
    assert_eq!(d.outcome, Outcome::Refused);
    let d = run(&w, "/opentiger approve a", plan(), true, None);
    assert_eq!((d.outcome, moved_to(&d).len()), (Outcome::Done, 1));
    // Nothing waits any more: approve is refused.
    let w = world(vec![with("c", TaskState::DONE, None)]);
    let d = run(&w, "/opentiger approve", plan(), true, None);
    assert_eq!((d.outcome, d.effects.len()), (Outcome::Refused, 0));
}

/// An approved planned task in github mode gets its issue first, as an unheld one does; every
/// other approved task is queued.
#[test]
fn an_approved_planned_task_gets_its_issue_first_in_github_mode() {
    let linking = TaskState::blocked(BlockReason::IssueLinking);
    let mut with_issue = crate::engine::testkit::task("a");
    with_issue.issue_number = Some(4);
    let without = crate::engine::testkit::task("b");
    #[rustfmt::skip]
    let cases = [
        ("planned, github, no issue yet", &without, true, true, linking),
        ("planned, github, issue opened", &with_issue, true, true, TaskState::QUEUED),
        ("planned, local mode", &without, true, false, TaskState::QUEUED),
        ("not planned (imported or by hand)", &without, false, true, TaskState::QUEUED),
    ];
    for (name, task, planned, github, to) in cases {
        assert_eq!(approved_state(task, planned, github), to, "{name}");
    }
}

//! `replan` (issue 17): an issue's task afresh from its issue, a planned task's unstarted plan
//! cancelled and planned again. Not for: the planner's gate that then plans it
//! (`engine::planner_gate`).

use super::*;

#[test]
fn replan_makes_an_issue_task_afresh_from_its_issue_s_current_text() {
    let human = TaskState::blocked(BlockReason::AwaitingHuman);
    let issue = |open| Origin::Issue { number: 7, open };
    // (state, issue still listed, outcome, move, text re-read)
    let cases: Vec<(TaskState, bool, Outcome, Option<TaskState>, bool)> = vec![
        (human, true, Outcome::Done, Some(TaskState::QUEUED), true),
        (
            TaskState::FAILED,
            true,
            Outcome::Done,
            Some(TaskState::QUEUED),
            true,
        ),
        (
            TaskState::CANCELLED,
            true,
            Outcome::Done,
            Some(TaskState::QUEUED),
            true,
        ),
        (TaskState::QUEUED, true, Outcome::Done, None, true),
        (TaskState::RUNNING, true, Outcome::Refused, None, false),
        (TaskState::DONE, true, Outcome::Refused, None, false),
        (human, false, Outcome::Refused, None, false),
    ];
    for (state, open, outcome, to, respec) in cases {
        let mut w = world(vec![with("t1", state, Some(7))]);
        w.origins.insert(TaskId::from("t1"), issue(open));
        let d = run(&w, "/opentiger replan", on(7, &["t1"]), true, None);
        let label = format!("{state} open={open}");
        assert_eq!(d.outcome, outcome, "{label}: {d:?}");
        let moved = moved_to(&d);
        assert_eq!(moved.first().map(|m| m.1), to, "{label}");
        let reread = d.effects.iter().any(|e| {
            e == &Effect::Respec {
                task: TaskId::from("t1"),
                issue: 7,
            }
        });
        assert_eq!(reread, respec, "{label}");
        // Queued again afresh, as a retry would: budgets reset, approval given.
        for e in &d.effects {
            if let Effect::Move {
                reset_attempts,
                approved,
                ..
            } = e
            {
                assert!(*reset_attempts && *approved, "{label}: {e:?}");
            }
        }
    }
}

#[test]
fn replan_cancels_the_unstarted_tasks_of_a_plan_and_plans_again() {
    let human = BlockReason::AwaitingHuman;
    let plan = |id: &str| (TaskId::from(id), Origin::Plan("p1".to_string()));
    let mut w = world(vec![
        // The task commanded on: waits for approval.
        with("a", TaskState::blocked(human), Some(7)).with(|t| t.needs_approval = true),
        // Siblings: not started (queued, waiting for its issue) → cancelled.
        with("b", TaskState::QUEUED, None),
        with("c", TaskState::blocked(BlockReason::IssueLinking), None),
        // Started siblings keep their work: failed once and queued, running, done.
        with("d", TaskState::QUEUED, Some(9)).attempts(crate::model::AttemptKey::Test, 1),
        with("e", TaskState::RUNNING, Some(10)),
        with("f", TaskState::DONE, Some(11)),
        // Another plan's task, and a task added by hand.
        with("g", TaskState::QUEUED, None),
        with("h", TaskState::QUEUED, None),
    ]);
    w.origins.extend([
        plan("a"),
        plan("b"),
        plan("c"),
        plan("d"),
        plan("e"),
        plan("f"),
    ]);
    w.origins
        .insert(TaskId::from("g"), Origin::Plan("p0".to_string()));
    let d = run(&w, "/opentiger replan", on(7, &["a"]), true, None);
    assert_eq!(d.outcome, Outcome::Done, "{d:?}");
    let cancelled: Vec<String> = moved_to(&d)
        .into_iter()
        .inspect(|(_, to)| assert_eq!(*to, TaskState::CANCELLED))
        .map(|(id, _)| id)
        .collect();
    assert_eq!(cancelled, ["a", "b", "c"]);
    assert_eq!(
        d.effects.last(),
        Some(&Effect::Replan {
            plan: "p1".to_string()
        })
    );
    // A started task of the plan, commanded itself, is cancelled too; its siblings still.
    let d = run(&w, "/opentiger replan d", Place::Dashboard, true, None);
    let ids: Vec<String> = moved_to(&d).into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, ["a", "b", "c", "d"]);
    // Running: refused; done: the plan is made again, its unstarted siblings cancelled.
    let d = run(&w, "/opentiger replan e", Place::Dashboard, true, None);
    assert_eq!((d.outcome, d.effects.len()), (Outcome::Refused, 0));
    let d = run(&w, "/opentiger replan f", Place::Dashboard, true, None);
    assert_eq!(d.outcome, Outcome::Done);
    assert_eq!(moved_to(&d).len(), 3);
    // A task added by hand and a fix child have no plan to make again.
    let d = run(&w, "/opentiger replan h", Place::Dashboard, true, None);
    assert_eq!(d.outcome, Outcome::Refused);
    assert!(d.reply.unwrap_or_default().contains("added by hand"));
    let child =
        with("k", TaskState::FAILED, None).with(|t| t.parent_task_id = Some(TaskId::from("d")));
    w.tasks.insert(child.id.clone(), child);
    let d = run(&w, "/opentiger replan k", Place::Dashboard, true, None);
    assert!(
        d.reply
            .as_deref()
            .unwrap_or_default()
            .contains("replan `d`"),
        "{d:?}"
    );
}

//! The task verbs on a task's own thread: each moves the thread's task only when its state
//! allows; `budget` sets its limit and says what was spent. Not for: verbs with files of their
//! own (`hold`, `replan`, `retry`, `approve` of a held change).

use super::*;

#[test]
fn task_commands_move_the_thread_s_task_when_its_state_allows() {
    let human = TaskState::blocked(BlockReason::AwaitingHuman);
    let paused = TaskState::blocked(BlockReason::Paused);
    let mut approval = with("t2", human, Some(8));
    approval.needs_approval = true;
    let cases: Vec<(&str, TaskState, bool, Outcome, Option<TaskState>)> = vec![
        (
            "/opentiger retry",
            human,
            false,
            Outcome::Done,
            Some(TaskState::QUEUED),
        ),
        (
            "/opentiger retry",
            TaskState::FAILED,
            false,
            Outcome::Done,
            Some(TaskState::QUEUED),
        ),
        (
            "/opentiger retry",
            TaskState::RUNNING,
            false,
            Outcome::Refused,
            None,
        ),
        (
            "/opentiger retry",
            TaskState::DONE,
            false,
            Outcome::Refused,
            None,
        ),
        (
            "/opentiger cancel",
            TaskState::QUEUED,
            false,
            Outcome::Done,
            Some(TaskState::CANCELLED),
        ),
        (
            "/opentiger cancel",
            TaskState::RUNNING,
            false,
            Outcome::Refused,
            None,
        ),
        (
            "/opentiger cancel",
            TaskState::CANCELLED,
            false,
            Outcome::Refused,
            None,
        ),
        (
            "/opentiger approve",
            human,
            true,
            Outcome::Done,
            Some(TaskState::QUEUED),
        ),
        ("/opentiger approve", human, false, Outcome::Refused, None),
        (
            "/opentiger pause",
            TaskState::QUEUED,
            false,
            Outcome::Done,
            Some(paused),
        ),
        (
            "/opentiger pause",
            human,
            false,
            Outcome::Done,
            Some(paused),
        ),
        ("/opentiger pause", paused, false, Outcome::Refused, None),
        (
            "/opentiger pause",
            TaskState::RUNNING,
            false,
            Outcome::Refused,
            None,
        ),
        (
            "/opentiger resume",
            paused,
            false,
            Outcome::Done,
            Some(TaskState::QUEUED),
        ),
        (
            "/opentiger resume",
            TaskState::QUEUED,
            false,
            Outcome::Refused,
            None,
        ),
        ("/opentiger status", human, false, Outcome::Done, None),
        ("/opentiger help", human, false, Outcome::Done, None),
    ];
    for (body, state, needs_approval, outcome, to) in cases {
        let mut t = with("t1", state, Some(7));
        t.needs_approval = needs_approval;
        let w = world(vec![t]);
        let d = run(&w, body, on(7, &["t1"]), true, None);
        assert_eq!(d.outcome, outcome, "{body} on {state}: {d:?}");
        assert_eq!(
            moved_to(&d),
            to.map(|s| vec![("t1".to_string(), s)]).unwrap_or_default(),
            "{body} on {state}"
        );
        let reply = d.reply.unwrap_or_default();
        assert!(!reply.is_empty(), "{body}: one reply says what happened");
        if outcome == Outcome::Refused {
            assert!(reply.contains("nothing was changed"), "{reply}");
        }
    }
    // Every legal move the rules make is legal for the model too.
    for state in [
        human,
        paused,
        TaskState::QUEUED,
        TaskState::FAILED,
        TaskState::CANCELLED,
    ] {
        for body in [
            "/opentiger retry",
            "/opentiger cancel",
            "/opentiger pause",
            "/opentiger resume",
        ] {
            let w = world(vec![with("t1", state, Some(7)), approval.clone()]);
            for (_, to) in moved_to(&run(&w, body, on(7, &["t1"]), true, None)) {
                assert!(
                    crate::model::check_transition(state, to).is_ok(),
                    "{body}: {state} → {to}"
                );
            }
        }
    }
}

#[test]
fn budget_sets_the_task_s_limit_and_says_what_was_spent() {
    let mut w = world(vec![with("t1", TaskState::QUEUED, Some(7))]);
    w.spent.insert(TaskId("t1".into()), 6.0);
    let d = run(&w, "/opentiger budget 12", on(7, &["t1"]), true, None);
    assert_eq!(
        d.effects,
        vec![Effect::SetBudget {
            task: TaskId("t1".into()),
            usd: 12.0
        }]
    );
    let reply = d.reply.unwrap_or_default();
    assert!(
        reply.contains("$12.00") && reply.contains("was $5.00") && reply.contains("spent $6.00"),
        "{reply}"
    );
    let d = run(&w, "/opentiger budget 3", on(7, &["t1"]), true, None);
    assert!(d.reply.unwrap_or_default().contains("starts no new run"));
    for body in ["/opentiger budget -5", "/opentiger budget 1e308"] {
        let d = run(&w, body, on(7, &["t1"]), true, None);
        assert_eq!((d.outcome, d.effects.len()), (Outcome::Help, 0), "{body}");
        assert!(d.reply.unwrap_or_default().contains("nothing was changed"));
    }
}

/// Issue 51: `stop` asks the running task's run to stop (the tick running its agent ends
/// it); on a task that is not running it is refused, and `cancel` of a running task says
/// to stop it first.
#[test]
fn stop_asks_a_running_task_s_run_to_stop() {
    let w = world(vec![
        with("t1", TaskState::RUNNING, Some(7)),
        with("t2", TaskState::QUEUED, Some(8)),
    ]);
    let d = run(&w, "/opentiger stop", on(7, &["t1"]), true, None);
    assert_eq!(d.outcome, Outcome::Done);
    assert_eq!(
        d.effects,
        [Effect::Stop {
            task: TaskId::from("t1"),
            by: "@alice".into()
        }]
    );
    let reply = d.reply.unwrap();
    assert!(
        reply.starts_with("Stop asked by @alice: task `t1`'s run ends within 30 s"),
        "{reply}"
    );
    let d = run(&w, "/opentiger stop", on(8, &["t2"]), true, None);
    assert_eq!(d.outcome, Outcome::Refused);
    assert!(d.reply.unwrap().contains("is not running (it is queued)"));
    let d = run(&w, "/opentiger cancel", on(7, &["t1"]), true, None);
    assert_eq!(d.outcome, Outcome::Refused);
    assert!(d
        .reply
        .unwrap()
        .contains("`/opentiger stop` on its issue or PR"));
    assert!(help_text().contains("`/opentiger stop`"));
}

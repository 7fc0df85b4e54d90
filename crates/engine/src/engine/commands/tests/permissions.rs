//! Who may command, and on which thread: outsiders change nothing and are answered once per
//! thread; a task of another issue is named only on the dashboard. Not for: how permission is
//! learned (the tick asks GitHub).

use super::*;

#[test]
fn outsiders_change_nothing_and_are_answered_once_per_thread() {
    let w = world(vec![with("t1", TaskState::FAILED, Some(7))]);
    let d = run(&w, "/opentiger cancel", on(7, &["t1"]), false, None);
    assert_eq!(d.outcome, Outcome::NotAllowed);
    assert!(d.effects.is_empty());
    assert!(
        d.reply.as_deref().unwrap_or("").contains("write access"),
        "{d:?}"
    );
    let again = decide(
        &parse("/opentiger cancel").expect("command"),
        &Request {
            author: "mallory",
            allowed: false,
            refused_before: true,
            place: on(7, &["t1"]),
            tasks: &w.tasks,
            repo_paused_by: None,
            spent: &w.spent,
            budgets: &w.budgets,
            default_budget: 5.0,
            origins: &w.origins,
            now: crate::engine::testkit::NOW,
            checkbox: false,
            reports: &w.reports,
            last_runs: &w.last_runs,
        },
    );
    assert_eq!((again.effects.len(), again.reply), (0, None));
    // Not even help for a malformed command.
    let d = run(&w, "/opentiger budget -5", on(7, &["t1"]), false, None);
    assert_eq!((d.outcome, d.effects.len()), (Outcome::NotAllowed, 0));
}

#[test]
fn a_command_naming_a_task_of_another_issue_is_refused() {
    let w = world(vec![
        with("aaaa1111", TaskState::FAILED, Some(7)),
        with("bbbb2222", TaskState::FAILED, Some(8)),
    ]);
    let d = run(
        &w,
        "/opentiger retry bbbb2222",
        on(7, &["aaaa1111"]),
        true,
        None,
    );
    assert_eq!(d.outcome, Outcome::Refused);
    assert!(d.effects.is_empty());
    assert!(d
        .reply
        .unwrap_or_default()
        .contains("does not belong to #7"));
    // On the dashboard it must name one, and then it may.
    let d = run(&w, "/opentiger retry", Place::Dashboard, true, None);
    assert_eq!(d.outcome, Outcome::Refused);
    let d = run(&w, "/opentiger retry bbbb", Place::Dashboard, true, None);
    assert_eq!(
        moved_to(&d),
        vec![("bbbb2222".to_string(), TaskState::QUEUED)]
    );
    let d = run(&w, "/opentiger retry zzzz", Place::Dashboard, true, None);
    assert!(d.reply.unwrap_or_default().contains("No task `zzzz`"));
    // A thread without a task.
    let d = run(&w, "/opentiger retry", on(9, &[]), true, None);
    assert!(d
        .reply
        .unwrap_or_default()
        .contains("#9 has no opentiger task"));
}

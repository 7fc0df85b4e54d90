//! The dashboard issue: `pause`/`resume` of the repository, `approve all`, and the command it
//! recommends for each task waiting on a person. Not for: its checkboxes (`engine::checkboxes`).

use super::*;

#[test]
fn the_dashboard_pauses_resumes_and_approves_all() {
    let human = TaskState::blocked(BlockReason::AwaitingHuman);
    let mut a = with("a1", human, Some(7));
    a.needs_approval = true;
    let mut b = with("b1", human, Some(8));
    b.needs_approval = true;
    let c = with("c1", human, Some(9));
    let w = world(vec![a, b, c]);
    let d = run(&w, "/opentiger pause", Place::Dashboard, true, None);
    assert_eq!(d.effects, vec![Effect::PauseRepo]);
    assert!(d.reply.unwrap_or_default().contains("/opentiger resume"));
    let d = run(&w, "/opentiger pause", Place::Dashboard, true, Some("bob"));
    assert_eq!((d.outcome, d.effects.len()), (Outcome::Refused, 0));
    let d = run(&w, "/opentiger resume", Place::Dashboard, true, Some("bob"));
    assert_eq!(d.effects, vec![Effect::ResumeRepo]);
    let d = run(&w, "/opentiger resume", Place::Dashboard, true, None);
    assert_eq!(d.outcome, Outcome::Refused);
    let d = run(&w, "/opentiger approve all", Place::Dashboard, true, None);
    assert_eq!(
        moved_to(&d),
        vec![
            ("a1".to_string(), TaskState::QUEUED),
            ("b1".to_string(), TaskState::QUEUED)
        ]
    );
    let d = run(&w, "/opentiger approve all", on(7, &["a1"]), true, None);
    assert_eq!(d.outcome, Outcome::Refused);
}

#[test]
fn the_dashboard_recommends_one_command_per_waiting_task() {
    let human = TaskState::blocked(BlockReason::AwaitingHuman);
    let mut approval = with("t1", human, None);
    approval.needs_approval = true;
    let cases = [
        (approval, Some("/opentiger approve t1")),
        (with("t1", human, None), Some("/opentiger retry t1")),
        (
            with("t1", TaskState::blocked(BlockReason::Paused), None),
            Some("/opentiger resume t1"),
        ),
        (with("t1", TaskState::QUEUED, None), None),
        (
            with("t1", TaskState::blocked(BlockReason::AwaitingJudge), None),
            None,
        ),
    ];
    for (task, expected) in cases {
        assert_eq!(recommended(&task).as_deref(), expected, "{}", task.state());
        // Whatever it recommends parses as that command.
        if let Some(text) = recommended(&task) {
            assert!(matches!(parse(&text), Some(Parsed::Command(_))), "{text}");
        }
    }
}

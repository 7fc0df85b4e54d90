//! `approve` of a change the threat scan held (issue 36): exactly that change, optionally named
//! by its commit; another commit approves nothing. Not for: what the scan holds
//! (`engine::scan`'s tests).

use super::*;

/// Issue 36: a change the threat scan held is approved exactly (its commit, tree and start), on
/// the issue or the dashboard, optionally naming its commit; naming another commit approves
/// nothing; a task not holding one answers as before.
#[test]
fn approve_lets_out_exactly_the_held_change() {
    use crate::engine::scan::{held_change, HeldChange};
    let human = TaskState::blocked(BlockReason::AwaitingHuman);
    let t = with("t1", human, Some(7));
    let mut w = world(vec![t.clone()]);
    let held = HeldChange {
        head: "0123456789abcdef".into(),
        tree: "7ree".into(),
        start: "57a7".into(),
    };
    w.last_runs.insert(
        t.id.clone(),
        LastRun {
            id: RunId("r1".into()),
            made_change: false,
            changes_requested: false,
            held: Some(held.clone()),
        },
    );
    for line in [
        "/opentiger approve",
        "/opentiger approve 0123456",
        "/opentiger approve t1",
    ] {
        let said = run(&w, line, on(7, &["t1"]), true, None);
        assert!(
            matches!(said.effects.as_slice(), [Effect::ApproveChange { held: h, .. }] if *h == held),
            "{line}: {said:?}"
        );
        assert!(
            said.reply.unwrap_or_default().contains("0123456789"),
            "{line}"
        );
    }
    // Change A approved by name does not let change B out: another commit approves nothing.
    let said = run(&w, "/opentiger approve abcdef0", on(7, &["t1"]), true, None);
    assert_eq!(said.outcome, Outcome::Refused, "{said:?}");
    assert!(said.effects.is_empty());
    assert!(said.reply.unwrap_or_default().contains("0123456789"));
    // Not held: the ordinary answer; a commit named where nothing is held approves nothing.
    let plain = world(vec![t]);
    let said = run(&plain, "/opentiger approve", on(7, &["t1"]), true, None);
    assert_eq!(said.outcome, Outcome::Refused, "{said:?}");
    let said = run(
        &plain,
        "/opentiger approve 0123456",
        on(7, &["t1"]),
        true,
        None,
    );
    assert_eq!(said.outcome, Outcome::Refused, "{said:?}");
    assert!(said.reply.unwrap_or_default().contains("holds no change"));
    // Only a task waiting on a person.
    let queued = with("t1", TaskState::QUEUED, Some(7));
    let last_held = w.last_runs.values().next().and_then(|l| l.held.as_ref());
    assert_eq!(held_change(&queued, last_held), None);
}

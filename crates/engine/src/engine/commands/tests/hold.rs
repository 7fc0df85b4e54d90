//! `hold` and `release` (issue 26) on a task's issue or PR. Not for: what a hold does to the
//! merge (`engine::objection`'s tests).

use super::*;

/// Issue 26: `hold` and `release` on a task's issue or PR set and lift a hold of its merge;
/// elsewhere, or from someone who may not command, nothing.
#[test]
fn hold_and_release_act_on_the_thread_s_merge() {
    let w = world(vec![with(
        "a1",
        TaskState::blocked(BlockReason::AwaitingJudge),
        Some(7),
    )]);
    let hold = |thread: u64, by: Option<&str>| Effect::Hold {
        thread,
        by: by.map(String::from),
    };
    /// (command, where, allowed, outcome, effects, the reply says)
    type Case<'a> = (&'a str, Place, bool, Outcome, Vec<Effect>, &'a str);
    #[rustfmt::skip]
    let cases: Vec<Case> = vec![
        ("/opentiger hold",    on(9, &["a1"]),  true,  Outcome::Done,       vec![hold(9, Some("alice"))], "Held by @alice"),
        ("/opentiger release", on(9, &["a1"]),  true,  Outcome::Done,       vec![hold(9, None)],          "Released by @alice"),
        ("/opentiger unhold",  on(7, &["a1"]),  true,  Outcome::Done,       vec![hold(7, None)],          "Released"),
        ("/opentiger hold",    on(9, &["a1"]),  false, Outcome::NotAllowed, vec![],                       "only people with write access"),
        ("/opentiger hold",    on(5, &[]),      true,  Outcome::Refused,    vec![],                       "no opentiger task"),
        ("/opentiger hold",    Place::Dashboard, true, Outcome::Refused,    vec![],                       "not here"),
    ];
    for (body, place, allowed, outcome, effects, says) in cases {
        let d = run(&w, body, place.clone(), allowed, None);
        assert_eq!(
            (d.outcome, &d.effects),
            (outcome, &effects),
            "{body} on {place:?}"
        );
        let reply = d.reply.unwrap_or_default();
        assert!(reply.contains(says), "{body}: {reply}");
    }
}

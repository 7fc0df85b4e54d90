//! `retry` and `cancel`: the same answer from a comment as from `opentiger task`, and a retry
//! after the judge gave up asks the judge again (issue 35). Not for: which family member a retry
//! reaches (`retry.rs`'s own tests).

use super::*;

/// `opentiger task retry|cancel` call `retry_move` and `cancel_refusal`; the comment commands
/// must give the same answer for every state, so a person gets one rule wherever they ask.
#[test]
fn the_comment_commands_and_the_cli_agree_on_retry_and_cancel() {
    use crate::engine::testkit::{at, NOW};
    let mut states = vec![
        TaskState::QUEUED,
        TaskState::RUNNING,
        TaskState::DONE,
        TaskState::FAILED,
        TaskState::CANCELLED,
    ];
    states.extend(BlockReason::ALL.iter().map(|r| TaskState::blocked(*r)));
    for state in states {
        for cooldown in [None, Some(at(-5)), Some(at(30))] {
            let t = with("t1", state, Some(7)).with(|t| t.next_attempt_at = cooldown);
            let label = format!("{state} cooldown {cooldown:?}");
            let w = world(vec![t.clone()]);
            let retry = run(&w, "/opentiger retry", on(7, &["t1"]), true, None);
            match retry_move(&t, None, NOW) {
                Ok(RetryMove::Rejudge { .. }) => unreachable!("no run: nothing to judge"),
                Ok(RetryMove::Requeue) => {
                    assert_eq!(
                        moved_to(&retry),
                        [("t1".to_string(), TaskState::QUEUED)],
                        "{label}"
                    )
                }
                Ok(RetryMove::EndCooldown) => assert!(
                    matches!(retry.effects.as_slice(), [Effect::EndCooldown { .. }]),
                    "{label}: {retry:?}"
                ),
                Err(why) => {
                    assert_eq!(retry.outcome, Outcome::Refused, "{label}");
                    assert!(retry.reply.unwrap_or_default().starts_with(&why), "{label}");
                }
            }
            let cancel = run(&w, "/opentiger cancel", on(7, &["t1"]), true, None);
            match cancel_refusal(&t) {
                None => assert_eq!(
                    moved_to(&cancel),
                    [("t1".to_string(), TaskState::CANCELLED)],
                    "{label}"
                ),
                Some(why) => {
                    assert_eq!(cancel.outcome, Outcome::Refused, "{label}");
                    assert!(
                        cancel.reply.unwrap_or_default().starts_with(&why),
                        "{label}"
                    );
                }
            }
        }
    }
    // The cases that matter, spelled out.
    let cooling = with("t1", TaskState::QUEUED, None).with(|t| t.next_attempt_at = Some(at(30)));
    assert_eq!(retry_move(&cooling, None, NOW), Ok(RetryMove::EndCooldown));
    assert!(retry_move(&with("t1", TaskState::QUEUED, None), None, NOW).is_err());
    assert!(retry_move(&with("t1", TaskState::RUNNING, None), None, NOW).is_err());
    assert_eq!(
        retry_move(&with("t1", TaskState::FAILED, None), None, NOW),
        Ok(RetryMove::Requeue)
    );
    assert!(cancel_refusal(&with("t1", TaskState::RUNNING, None)).is_some());
    assert!(cancel_refusal(&with("t1", TaskState::FAILED, None)).is_none());
}

/// Issue 35: a retry after the judge gave up on a change asks the judge again and costs no
/// worker run; after changes were requested, or without a change, the task is worked on again.
#[test]
fn a_retry_after_the_judge_gave_up_asks_the_judge_again() {
    use crate::engine::testkit::NOW;
    let human = TaskState::blocked(BlockReason::AwaitingHuman);
    let last = |made_change, changes_requested| LastRun {
        id: RunId("r1".into()),
        made_change,
        changes_requested,
        held: None,
    };
    let rejudge = Ok(RetryMove::Rejudge {
        run: RunId("r1".into()),
    });
    #[rustfmt::skip]
    let cases: &[(TaskState, Option<LastRun>, Result<RetryMove, ()>)] = &[
        (human, Some(last(true, false)), rejudge.clone()),
        // Changes were asked for: the person fixed it, or wants it redone: worked on again.
        (human, Some(last(true, true)), Ok(RetryMove::Requeue)),
        // The run failed (a key, a policy): nothing to judge.
        (human, Some(last(false, false)), Ok(RetryMove::Requeue)),
        (human, None, Ok(RetryMove::Requeue)),
        // Only a task waiting on a person: a failed one is worked on again.
        (TaskState::FAILED, Some(last(true, false)), Ok(RetryMove::Requeue)),
        (TaskState::blocked(BlockReason::QuotaWait), Some(last(true, false)), Ok(RetryMove::Requeue)),
    ];
    for (state, last_run, want) in cases {
        let t = with("t1", *state, Some(7));
        let got = retry_move(&t, last_run.as_ref(), NOW).map_err(|_| ());
        assert_eq!(&got, want, "{state} {last_run:?}");
        // The comment command does the same.
        let mut w = world(vec![t.clone()]);
        if let Some(l) = last_run {
            w.last_runs.insert(t.id.clone(), l.clone());
        }
        let said = run(&w, "/opentiger retry", on(7, &["t1"]), true, None);
        match want {
            Ok(RetryMove::Rejudge { run }) => assert!(
                matches!(said.effects.as_slice(), [Effect::Rejudge { run: r, .. }] if r == run),
                "{said:?}"
            ),
            _ => assert!(
                !said
                    .effects
                    .iter()
                    .any(|e| matches!(e, Effect::Rejudge { .. })),
                "{said:?}"
            ),
        }
    }
}

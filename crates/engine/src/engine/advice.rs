//! A task's recorded reason as two things for people (issue 40): what happened, and what to do
//! about it. The engine writes a reason that hands a task to a person as "what happened", then
//! its advice after `. Fix: ` or `. Decide: `; `status` shows the first as `why:` and the
//! second as `next:`, so one paragraph is never printed twice.
//!
//! Not for: deciding anything; the words are only split where the engine put its advice.

use crate::model::Task;

/// Where the engine's advice starts in a reason: the earliest of the last `. Fix: ` and the
/// last `. Decide: ` (a fix is followed by the decision, never the other way round).
const MARKERS: [&str; 2] = [". Fix: ", ". Decide: "];

/// `reason` as (what happened, what to do), the advice without its leading `. `; `None` when
/// the reason gives no advice.
pub fn split(reason: &str) -> (&str, Option<&str>) {
    let at = MARKERS.iter().filter_map(|m| reason.rfind(m)).min();
    match at {
        Some(at) => (&reason[..at], Some(&reason[at + 2..])),
        None => (reason, None),
    }
}

/// What a person does for a task waiting on them: the reason's advice, else retrying or
/// cancelling it (approving it, when it waits for approval).
pub fn to_do(task: &Task) -> String {
    if let Some(todo) = task.status_reason.as_deref().and_then(|r| split(r).1) {
        // "waits on a person: Decide: …" says it twice.
        return todo.strip_prefix("Decide: ").unwrap_or(todo).to_string();
    }
    let id = &task.id;
    if task.needs_approval {
        return format!("`opentiger task approve {id}`, or `opentiger task cancel {id}`");
    }
    format!(
        "`opentiger task retry {id}` once the cause is dealt with, or `opentiger task cancel {id}`"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testkit::{task, TaskExt};
    use crate::model::BlockReason;

    #[test]
    fn reasons_split_where_the_advice_starts() {
        #[rustfmt::skip]
        let cases: &[(&str, &str, Option<&str>)] = &[
            ("budget", "budget", None),
            ("lost 3 times. Decide: `opentiger task retry a` or `opentiger task cancel a`",
                "lost 3 times", Some("Decide: `opentiger task retry a` or `opentiger task cancel a`")),
            ("the same failure; it stops here. Fix: fix the cause. Then `opentiger task retry a`",
                "the same failure; it stops here", Some("Fix: fix the cause. Then `opentiger task retry a`")),
            ("failed: x. Fix: the prompt. Decide: `opentiger task retry a`",
                "failed: x", Some("Fix: the prompt. Decide: `opentiger task retry a`")),
            // A `Decide:` inside the output quoted before ours is not ours.
            ("output said. Decide: now. Then. Decide: `opentiger task retry a`",
                "output said. Decide: now. Then", Some("Decide: `opentiger task retry a`")),
        ];
        for (reason, happened, todo) in cases {
            assert_eq!(split(reason), (*happened, *todo), "{reason}");
        }
    }

    #[test]
    fn a_task_without_advice_gets_its_commands() {
        let plain = task("a").blocked(BlockReason::AwaitingHuman).with(|t| {
            t.status_reason = Some("budget".into());
        });
        assert_eq!(
            to_do(&plain),
            "`opentiger task retry a` once the cause is dealt with, or `opentiger task cancel a`"
        );
        let approval = plain.clone().with(|t| t.needs_approval = true);
        assert!(to_do(&approval).starts_with("`opentiger task approve a`"));
        let advised = plain.with(|t| {
            t.status_reason = Some("lost. Decide: `opentiger task retry root`".into());
        });
        assert_eq!(to_do(&advised), "`opentiger task retry root`");
    }
}

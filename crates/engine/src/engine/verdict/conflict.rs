//! A change that conflicts with its base (DESIGN §8 "Conflicts"): a bounded number of
//! conflict-fix children on the same branch, then a bounded number of recreations from the base
//! on a new branch (the old PR closed), then a person — counted over the change's [`Lineage`].
//! Not for: merging the base and resolving the markers (`runner::work_conflicts`), the fields a
//! child inherits (`engine::followup`), or closing the old PR (`engine::recovery::review`).

use super::{hand_over, Lineage, VerdictDecision};
use crate::config::Config;
use crate::engine::followup::derived_child;
use crate::model::{BlockReason, Lane, Task, TaskKind, TaskState};
use crate::time::Timestamp;

/// The change cannot land as it is: a conflict fix on its branch while that budget lasts, then
/// the goal recreated from the base while that one lasts, then a person decides.
pub(super) fn conflict_recovery(
    task: &Task,
    lineage: &Lineage,
    why: &str,
    files: &[String],
    config: &Config,
    now: Timestamp,
) -> VerdictDecision {
    let limits = &config.limits;
    let (fixes, max_fixes) = (lineage.conflict_fixes, limits.max_conflict_autofix_attempts);
    if fixes < max_fixes {
        let mut child = derived_child(task, TaskKind::AutofixConflict, fixes + 1, max_fixes, now);
        child.parent_task_id = Some(lineage.root.clone());
        child.lane = Lane::ConflictRecovery;
        child.priority = task.priority.max(0) + 90;
        let mut notes = format!("The change cannot be merged: {why}.\n");
        for f in files {
            notes.push_str(&format!("- {f}\n"));
        }
        notes.push_str("The base branch has been merged into this branch and the conflicted files carry conflict markers. Resolve every conflict so both the base's changes and this change's goal are kept, and remove all markers.");
        child.notes = notes;
        return hand_over(
            task,
            lineage,
            child,
            format!(
                "{why}; conflict fix {{child}} ({}/{max_fixes}) merges the base into the branch",
                fixes + 1
            ),
        );
    }
    let (recreates, max_recreates) = (lineage.recreates, limits.max_recreate_attempts);
    if recreates < max_recreates {
        let mut child = derived_child(task, TaskKind::Recreate, recreates + 1, max_recreates, now);
        child.parent_task_id = Some(lineage.origin.clone());
        child.lane = Lane::ConflictRecovery;
        child.priority = task.priority.max(0) + 85;
        child.source_pr = None;
        child.notes = format!(
            "An earlier attempt at this goal could not be merged after {fixes} conflict fix(es): {why}. Implement the goal again from the current base branch; the earlier branch is abandoned."
        );
        // The goal's own task waits for the recreation; anything else of the old chain gives way.
        return hand_over(
            task,
            &Lineage {
                root: lineage.origin.clone(),
                ..lineage.clone()
            },
            child,
            format!(
                "{why}, still after {fixes} conflict fix(es); recreated from the base as {{child}} ({}/{max_recreates}), the old branch and PR abandoned",
                recreates + 1
            ),
        );
    }
    VerdictDecision {
        to: TaskState::blocked(BlockReason::AwaitingHuman),
        attempts: None,
        reason: format!(
            "{why}, still after {fixes} conflict fix(es) and {recreates} recreation(s) (limits {max_fixes} and {max_recreates}). Decide: resolve the conflict on the branch by hand and `opentiger task retry {id}`, or `opentiger task cancel {id}`",
            id = task.id
        ),
        create: None,
        rejudge: false,
        next_attempt_at: None,
        rebind_head: None,
    }
}

#[cfg(test)]
mod conflict_tests {
    use super::super::{decide_verdict, JudgeConclusion};
    use super::*;
    use crate::engine::followup::autofix_child;
    use crate::engine::testkit::{task, TaskExt, NOW};
    use crate::model::TaskId;
    use std::collections::BTreeMap;

    fn conflict() -> JudgeConclusion {
        JudgeConclusion::Conflict {
            base: "main".into(),
            files: vec!["src/lib.rs".into()],
        }
    }

    /// Every task of a small world, and the lineage of one of them as the store and the engine
    /// compute it.
    fn lineage_in(world: &[Task], judged: &Task) -> Lineage {
        let by_id: BTreeMap<TaskId, Task> =
            world.iter().map(|t| (t.id.clone(), t.clone())).collect();
        Lineage::of(
            judged,
            |id| by_id.get(id).cloned(),
            |parent, kind| {
                world
                    .iter()
                    .filter(|t| t.parent_task_id.as_ref() == Some(parent) && t.kind == kind)
                    .count() as u32
            },
        )
    }

    /// Conflicts escalate: conflict fixes on the branch, then a recreation from the base, then a
    /// person — and never more children than the limits allow.
    #[test]
    fn conflicts_escalate_to_fixes_then_a_recreation_then_a_person() {
        let config = Config::default(); // 2 conflict fixes, 1 recreation
        let origin = task("origin")
            .blocked(BlockReason::AwaitingJudge)
            .with(|t| t.title = "Add a greeting".into());
        let mut world = vec![origin.clone()];
        let judge_conflict = |world: &[Task], judged: &Task| {
            decide_verdict(
                judged,
                &conflict(),
                &lineage_in(world, judged),
                &config,
                NOW,
            )
        };
        // 1st conflict on the origin's own PR: fix 1/2 on the same branch, origin waits.
        let d = judge_conflict(&world, &origin);
        assert_eq!(d.to, TaskState::blocked(BlockReason::NeedsRework));
        let fix1 = d.create.expect("a conflict fix");
        assert_eq!(fix1.kind, TaskKind::AutofixConflict);
        assert_eq!(fix1.title, "Conflict fix 1/2: Add a greeting");
        assert_eq!(fix1.parent_task_id, Some(origin.id.clone()));
        assert_eq!(
            crate::model::task_branch(&fix1),
            crate::model::task_branch(&origin)
        );
        assert!(fix1.notes.contains("- src/lib.rs"), "{}", fix1.notes);
        world.push(fix1.clone());
        // The fix conflicts again: fix 2/2 of the origin, fix 1 gives way.
        let judged = fix1.clone().blocked(BlockReason::AwaitingJudge);
        let d = judge_conflict(&world, &judged);
        assert_eq!(d.to, TaskState::CANCELLED);
        let fix2 = d.create.expect("a second conflict fix");
        assert_eq!(fix2.title, "Conflict fix 2/2: Add a greeting");
        assert_eq!(fix2.parent_task_id, Some(origin.id.clone()));
        world.push(fix2.clone());
        // Fixes spent: the goal is recreated from the base, on a branch of its own.
        let judged = fix2.clone().blocked(BlockReason::AwaitingJudge);
        let d = judge_conflict(&world, &judged);
        assert_eq!(d.to, TaskState::CANCELLED);
        let recreate = d.create.expect("a recreation");
        assert_eq!(recreate.kind, TaskKind::Recreate);
        assert_eq!(recreate.title, "Recreate 1/1: Add a greeting");
        assert_eq!(recreate.parent_task_id, Some(origin.id.clone()));
        assert_eq!(recreate.source_pr, None, "a new PR");
        assert_ne!(
            crate::model::task_branch(&recreate),
            crate::model::task_branch(&origin)
        );
        assert!(d.reason.contains("recreated from the base"), "{}", d.reason);
        world.push(recreate.clone());
        // The recreation has its own conflict-fix budget...
        let judged = recreate.clone().blocked(BlockReason::AwaitingJudge);
        let lineage = lineage_in(&world, &judged);
        assert_eq!(
            (lineage.root.clone(), lineage.origin.clone()),
            (recreate.id.clone(), origin.id.clone())
        );
        let d = decide_verdict(&judged, &conflict(), &lineage, &config, NOW);
        assert_eq!(d.to, TaskState::blocked(BlockReason::NeedsRework));
        assert_eq!(
            d.create.map(|c| c.parent_task_id),
            Some(Some(recreate.id.clone()))
        );
        // ...but once that is spent too, the recreation budget of the goal is: a person decides.
        let spent = Lineage {
            conflict_fixes: 2,
            ..lineage
        };
        let d = decide_verdict(&judged, &conflict(), &spent, &config, NOW);
        assert_eq!(d.to, TaskState::blocked(BlockReason::AwaitingHuman));
        assert!(d.create.is_none());
        assert!(
            d.reason
                .contains("after 2 conflict fix(es) and 1 recreation(s)"),
            "{}",
            d.reason
        );
        assert!(d.reason.contains("opentiger task retry"), "{}", d.reason);
    }

    #[test]
    fn limits_of_zero_skip_straight_to_the_next_step() {
        let mut config = Config::default();
        config.limits.max_conflict_autofix_attempts = 0;
        let t = task("a").blocked(BlockReason::AwaitingJudge);
        let d = decide_verdict(&t, &conflict(), &Lineage::fresh(&t), &config, NOW);
        assert_eq!(d.create.map(|c| c.kind), Some(TaskKind::Recreate));
        assert_eq!(d.to, TaskState::blocked(BlockReason::NeedsRework));
        config.limits.max_recreate_attempts = 0;
        let d = decide_verdict(&t, &conflict(), &Lineage::fresh(&t), &config, NOW);
        assert_eq!(d.to, TaskState::blocked(BlockReason::AwaitingHuman));
    }

    #[test]
    fn follow_up_ids_are_stable_and_distinct() {
        let config = Config::default();
        let t = task("a").blocked(BlockReason::AwaitingJudge);
        let once = decide_verdict(&t, &conflict(), &Lineage::fresh(&t), &config, NOW);
        let again = decide_verdict(&t, &conflict(), &Lineage::fresh(&t), &config, NOW.plus(5));
        assert_eq!(
            once.create.as_ref().map(|c| &c.id),
            again.create.as_ref().map(|c| &c.id)
        );
        let fix = autofix_child(&t, "x", &[], 1, 3, NOW);
        assert_ne!(once.create.map(|c| c.id), Some(fix.id));
    }
}

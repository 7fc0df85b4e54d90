//! Table tests of what a judge's conclusion does to its task (`decide_verdict`), the chains
//! of follow-ups, the backoffs, and GitHub's refusals told apart.

mod conclusions {
    use super::super::*;
    use crate::engine::testkit::{task, TaskExt, NOW};

    #[test]
    fn conclusions_move_the_task() {
        let config = Config::default();
        let judged = || task("a").blocked(BlockReason::AwaitingJudge);
        let changes = JudgeConclusion::RequestChanges {
            summary: "tests missing".into(),
            findings: vec!["add a test for sub".into()],
        };
        let failed = JudgeConclusion::Failed {
            error: "judge agent exited 1".into(),
        };
        let cases: Vec<(&str, Task, JudgeConclusion, u32, TaskState, bool, &str)> = vec![
            (
                "merged",
                judged(),
                JudgeConclusion::Merged {
                    commit: "abcdef1234567".into(),
                },
                0,
                TaskState::DONE,
                false,
                "merged as abcdef1234",
            ),
            (
                "first request",
                judged(),
                changes.clone(),
                0,
                TaskState::blocked(BlockReason::NeedsRework),
                true,
                "(1/3) works on the same branch",
            ),
            (
                "third request",
                judged(),
                changes.clone(),
                2,
                TaskState::blocked(BlockReason::NeedsRework),
                true,
                "(3/3)",
            ),
            (
                "bound hit",
                judged(),
                changes.clone(),
                3,
                TaskState::blocked(BlockReason::AwaitingHuman),
                false,
                "after 3 AutoFix attempts (limit 3)",
            ),
            (
                "judge down",
                judged(),
                failed.clone(),
                0,
                TaskState::blocked(BlockReason::AwaitingJudge),
                false,
                "judge retry 1/3",
            ),
            (
                "judge down too often",
                judged().attempts(AttemptKey::Judge, 3),
                failed,
                0,
                TaskState::blocked(BlockReason::AwaitingHuman),
                false,
                "never an approval",
            ),
            (
                "merge race",
                judged(),
                JudgeConclusion::BaseMoved {
                    base: "main".into(),
                },
                0,
                TaskState::blocked(BlockReason::AwaitingJudge),
                false,
                "merge attempt 1/3",
            ),
            (
                "merge races bounded",
                judged().attempts(AttemptKey::Merge, 2),
                JudgeConclusion::BaseMoved {
                    base: "main".into(),
                },
                0,
                TaskState::blocked(BlockReason::NeedsRework),
                true,
                "moved under 3 merge attempts (limit 3); conflict fix",
            ),
            (
                "behind the base",
                judged(),
                JudgeConclusion::Updated {
                    head: "0123456789abcdef".into(),
                },
                0,
                TaskState::blocked(BlockReason::AwaitingJudge),
                false,
                "merged into the branch as 0123456789 (update 1/3)",
            ),
            (
                "held by people at the last look",
                judged(),
                JudgeConclusion::Held {
                    reason: "held by the label `do-not-merge`".into(),
                },
                0,
                TaskState::blocked(BlockReason::AwaitingJudge),
                false,
                "not merged: held by the label",
            ),
        ];
        for (name, t, conclusion, children, to, creates, reason) in cases {
            let lineage = Lineage {
                autofixes: children,
                ..Lineage::fresh(&t)
            };
            let d = decide_verdict(&t, &conclusion, &lineage, &config, NOW);
            assert_eq!(d.to, to, "{name}");
            assert_eq!(d.create.is_some(), creates, "{name}");
            assert!(d.reason.contains(reason), "{name}: {}", d.reason);
        }
    }

    #[test]
    fn autofix_children_carry_findings_and_are_deterministic() {
        let source = task("a");
        let a = autofix_child(&source, "tests missing", &["add a test".into()], 1, 3, NOW);
        let b = autofix_child(&source, "tests missing", &["add a test".into()], 1, 3, NOW);
        assert_eq!(a.id, b.id);
        assert_eq!(a.parent_task_id, Some(source.id.clone()));
        assert_eq!(a.kind, TaskKind::Autofix);
        assert!(a.notes.contains("- add a test"), "{}", a.notes);
        assert_eq!(a.title, "AutoFix 1/3: task a");
        assert_ne!(a.id, autofix_child(&source, "x", &[], 2, 3, NOW).id);
    }
}

mod chain_tests {
    use super::super::*;
    use crate::engine::testkit::{task, TaskExt, NOW};

    /// A fix whose own review asks for changes is superseded by the next fix of the same root:
    /// one branch and PR per change, one chain the root follows, one budget for all of it.
    #[test]
    fn a_fix_of_a_fix_hangs_off_the_root() {
        let config = Config::default();
        let root = task("root").with(|t| t.title = "Add a greeting".into());
        let first = autofix_child(&root, "tests red", &[], 1, 3, NOW);
        assert_eq!(first.title, "AutoFix 1/3: Add a greeting");
        let mut judged = first.clone();
        judged.status = crate::model::TaskStatus::Blocked;
        judged.block_reason = Some(BlockReason::AwaitingJudge);
        let conclusion = JudgeConclusion::RequestChanges {
            summary: "still red".into(),
            findings: vec!["fix test_sub".into()],
        };
        let chain = |autofixes| Lineage {
            root: root.id.clone(),
            origin: root.id.clone(),
            autofixes,
            conflict_fixes: 0,
            recreates: 0,
        };
        let d = decide_verdict(&judged, &conclusion, &chain(1), &config, NOW);
        let second = d.create.expect("a second fix");
        assert_eq!(second.parent_task_id, Some(root.id.clone()));
        assert_eq!(second.title, "AutoFix 2/3: Add a greeting");
        assert_eq!(d.to, TaskState::CANCELLED);
        assert!(
            d.reason.contains(&format!("superseded by {}", second.id)),
            "{}",
            d.reason
        );
        assert_eq!(
            crate::model::task_branch(&second),
            crate::model::task_branch(&first),
            "same branch, same PR"
        );
        // The budget is the root's: the third request after three fixes waits on a person.
        let d = decide_verdict(&judged, &conclusion, &chain(3), &config, NOW);
        assert_eq!(d.to, TaskState::blocked(BlockReason::AwaitingHuman));
        assert!(d.create.is_none());
    }
}

mod backoff_tests {
    use super::super::*;
    use crate::engine::testkit::{task, TaskExt, NOW};
    use crate::engine::tick_budget_spent;
    use crate::time::{HOUR, SECOND};

    #[test]
    fn a_spent_tick_budget_stops_further_runs() {
        let mut budget = crate::config::BudgetConfig::default();
        assert_eq!(tick_budget_spent(&budget, 1e9), None, "unset: no limit");
        budget.per_tick_usd = Some(0.0);
        assert_eq!(tick_budget_spent(&budget, 1e9), None, "0: off");
        budget.per_tick_usd = Some(1.0);
        assert_eq!(tick_budget_spent(&budget, 0.99), None);
        let why = tick_budget_spent(&budget, 1.5).expect("spent");
        assert!(
            why.contains("spent $1.50, budget.per_tick_usd is $1.00"),
            "{why}"
        );
    }

    #[test]
    fn retries_of_reviews_and_merges_back_off() {
        assert_eq!(doubling(30, 1), 30 * SECOND);
        assert_eq!(doubling(30, 2), 60 * SECOND);
        assert_eq!(doubling(30, 3), 120 * SECOND);
        assert_eq!(doubling(300, 40), 24 * HOUR, "capped");
        let config = Config::default();
        let failed = JudgeConclusion::Failed {
            error: "judge down".into(),
        };
        let waits: Vec<i64> = (0..3)
            .map(|used| {
                let t = task("a")
                    .blocked(BlockReason::AwaitingJudge)
                    .attempts(AttemptKey::Judge, used);
                let d = decide_verdict(&t, &failed, &Lineage::fresh(&t), &config, NOW);
                d.next_attempt_at.expect("a retry time").minus(NOW)
            })
            .collect();
        assert_eq!(waits, vec![300 * SECOND, 600 * SECOND, 1200 * SECOND]);
        // The judge's agent out of quota: the provider's hint decides the wait, on the quota
        // budget (the judge retry budget stays whole), bounded by retry.quota.max_waits.
        let quota = JudgeConclusion::Failed {
            error: "the judge agent hit a quota or rate limit: please retry in 600 seconds".into(),
        };
        let t = task("a").blocked(BlockReason::AwaitingJudge);
        let d = decide_verdict(&t, &quota, &Lineage::fresh(&t), &config, NOW);
        assert_eq!(d.to, TaskState::blocked(BlockReason::AwaitingJudge));
        assert!(d.rejudge);
        assert_eq!(
            d.next_attempt_at.map(|at| at.minus(NOW)),
            Some(600 * SECOND)
        );
        let used = d.attempts.expect("counted");
        assert_eq!(
            (used.get(AttemptKey::Quota), used.get(AttemptKey::Judge)),
            (1, 0)
        );
        let spent = t.clone().attempts(AttemptKey::Quota, 12);
        let d = decide_verdict(&spent, &quota, &Lineage::fresh(&spent), &config, NOW);
        assert_eq!(d.to, TaskState::blocked(BlockReason::AwaitingHuman));
        assert!(
            d.reason.contains("hit its quota 13 times (limit 12)"),
            "{}",
            d.reason
        );
        let moved = JudgeConclusion::BaseMoved {
            base: "main".into(),
        };
        let t = task("a")
            .blocked(BlockReason::AwaitingJudge)
            .attempts(AttemptKey::Merge, 1);
        let d = decide_verdict(&t, &moved, &Lineage::fresh(&t), &config, NOW);
        assert_eq!(d.next_attempt_at.map(|at| at.minus(NOW)), Some(60 * SECOND));
    }
}

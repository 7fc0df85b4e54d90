//! The eval's decisions, pure and table-tested: when the loop is done with a task (a state no
//! tick moves on by itself), the clock the ticks are told (so a cooldown costs no waiting),
//! what a task's outcome counts as (resolved, a wrong merge, a refusal of a good change), the
//! summary of a configuration, and what is left to run.
//! Not for: reading the state or running anything (`eval::task`), or printing (`eval::report`).

use crate::model::{BlockReason, TaskState, TaskStatus};
use crate::time::{Timestamp, MINUTE};

/// How the hidden tests went on the tree they were applied to.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HiddenTests {
    Pass,
    Fail,
    /// No tree to test (the loop delivered no change), or the change touched no test file.
    None,
}

impl HiddenTests {
    pub fn word(self) -> &'static str {
        match self {
            HiddenTests::Pass => "pass",
            HiddenTests::Fail => "fail",
            HiddenTests::None => "none",
        }
    }
}

/// Whether a tick would move a task in `state` on by itself. `None`: keep ticking; else why the
/// loop stops here (merged, or waiting on a person, or cancelled). A budget pause is final too:
/// nothing in an eval raises the budget.
pub fn settled(state: TaskState) -> Option<&'static str> {
    match (state.status, state.reason) {
        (TaskStatus::Done, _) => Some("merged"),
        (TaskStatus::Cancelled, _) => Some("cancelled"),
        (TaskStatus::Blocked, Some(BlockReason::AwaitingHuman)) => Some("waits on a person"),
        (TaskStatus::Blocked, Some(BlockReason::Paused)) => Some("paused by a budget"),
        (TaskStatus::Blocked, None) => Some("waits on a person"),
        (
            TaskStatus::Blocked,
            Some(
                BlockReason::AwaitingJudge
                | BlockReason::NeedsRework
                | BlockReason::QuotaWait
                | BlockReason::IssueLinking,
            ),
        ) => None,
        (TaskStatus::Queued | TaskStatus::Running | TaskStatus::Failed, _) => None,
    }
}

/// [`settled`] for a task and its AutoFix and rework tasks (`family`: the states of those not
/// done or cancelled): a task that follows its child is settled when nothing in its family
/// would move by itself and some of it waits on a person or a budget.
pub fn family_settled(root: TaskState, family: &[TaskState]) -> Option<&'static str> {
    if let Some(why) = settled(root) {
        return Some(why);
    }
    let follows = |s: &TaskState| {
        s.status == TaskStatus::Blocked && s.reason == Some(BlockReason::NeedsRework)
    };
    if !follows(&root) || !family.iter().all(|s| follows(s) || settled(*s).is_some()) {
        return None;
    }
    family.iter().find_map(|s| settled(*s))
}

/// The time the next tick is told: a minute on, or — when every active task waits for a later
/// time (a cooldown, a quota's reset) — that time, so an eval never sleeps through a backoff.
/// `waits` holds, per active task, the time it waits for (`None`: it can move now).
pub fn next_now(now: Timestamp, waits: &[Option<Timestamp>]) -> Timestamp {
    let step = now.plus(MINUTE);
    let mut soonest: Option<Timestamp> = None;
    for wait in waits {
        match wait.filter(|t| *t > step) {
            // One task that can move now: the next tick is only a minute away.
            None => return step,
            Some(t) => soonest = Some(soonest.map_or(t, |s| s.min(t))),
        }
    }
    soonest.unwrap_or(step)
}

/// What a task's outcome counts as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// Merged, and the hidden tests pass on what was merged (with no hidden test: the test
    /// command passes on it).
    pub resolved: bool,
    /// Merged, and the hidden tests fail on it: a bad change the loop let through.
    pub wrong_merge: bool,
    /// Not merged after the judge refused a change, yet the hidden tests pass on the loop's
    /// last change: a good change the judge turned away.
    pub refused_passing: bool,
}

/// `merged`; the hidden tests on the merged tree or, unmerged, on the last change; whether the
/// judge refused any change of the task; and, for a change with no hidden test, whether the
/// test command passed on the merged tree.
pub fn verdict(merged: bool, hidden: HiddenTests, refused: bool, plain_pass: bool) -> Verdict {
    match hidden {
        HiddenTests::Pass => Verdict {
            resolved: merged,
            wrong_merge: false,
            refused_passing: !merged && refused,
        },
        HiddenTests::Fail => Verdict {
            resolved: false,
            wrong_merge: merged,
            refused_passing: false,
        },
        HiddenTests::None => Verdict {
            resolved: merged && plain_pass,
            wrong_merge: merged && !plain_pass,
            refused_passing: false,
        },
    }
}

/// A configuration's figures over its tasks.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Summary {
    pub tasks: u32,
    pub resolved: u32,
    pub wrong_merges: u32,
    pub cost_usd: f64,
    pub merged: u32,
    /// Changes the judge refused whose hidden tests pass.
    pub refused_passing: u32,
    /// resolved / tasks, 0 with no task.
    pub resolve_rate: f64,
    pub cost_per_resolved_usd: Option<f64>,
    pub seconds_per_resolved: Option<f64>,
    pub runs: u32,
    pub reworks: u32,
    pub tokens: i64,
    pub seconds: f64,
    /// Tasks whose hidden tests already passed without the change: they tell little.
    pub weak_tests: u32,
}

/// One task's figures as [`summarise`] counts them.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Counted {
    pub merged: bool,
    pub verdict: Option<Verdict>,
    pub runs: u32,
    pub reworks: u32,
    pub tokens: i64,
    pub cost_usd: f64,
    pub seconds: f64,
    pub weak: bool,
}

pub fn summarise(tasks: &[Counted]) -> Summary {
    let mut s = Summary::default();
    for t in tasks {
        s.tasks += 1;
        let v = t.verdict.unwrap_or(Verdict {
            resolved: false,
            wrong_merge: false,
            refused_passing: false,
        });
        s.resolved += u32::from(v.resolved);
        s.wrong_merges += u32::from(v.wrong_merge);
        s.refused_passing += u32::from(v.refused_passing);
        s.merged += u32::from(t.merged);
        s.weak_tests += u32::from(t.weak);
        s.runs += t.runs;
        s.reworks += t.reworks;
        s.tokens += t.tokens;
        s.cost_usd += t.cost_usd;
        s.seconds += t.seconds;
    }
    if s.tasks > 0 {
        s.resolve_rate = f64::from(s.resolved) / f64::from(s.tasks);
    }
    if s.resolved > 0 {
        s.cost_per_resolved_usd = Some(s.cost_usd / f64::from(s.resolved));
        s.seconds_per_resolved = Some(s.seconds / f64::from(s.resolved));
    }
    s
}

/// Whether a task may start under `--budget-usd`: what was spent so far, plus what the running
/// tasks and this one may cost (`estimate` each: the mean of the finished ones), stays within.
pub fn fits_budget(budget: Option<f64>, spent: f64, running: usize, estimate: f64) -> bool {
    match budget {
        None => true,
        Some(limit) => {
            let ahead = estimate * (running as f64 + 1.0);
            spent < limit && spent + ahead <= limit
        }
    }
}

/// Seconds left, roughly: the mean time of the finished tasks times those left, over the jobs.
pub fn time_left(finished_seconds: &[f64], left: usize, jobs: usize) -> Option<f64> {
    if finished_seconds.is_empty() {
        return None;
    }
    let mean = finished_seconds.iter().sum::<f64>() / finished_seconds.len() as f64;
    Some(mean * left as f64 / jobs.max(1) as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_loop_is_done_with_a_task_only_where_no_tick_moves_it() {
        use BlockReason as B;
        use TaskStatus as S;
        for (status, reason, expected) in [
            (S::Done, None, Some("merged")),
            (S::Cancelled, None, Some("cancelled")),
            (
                S::Blocked,
                Some(B::AwaitingHuman),
                Some("waits on a person"),
            ),
            (S::Blocked, Some(B::Paused), Some("paused by a budget")),
            (S::Blocked, Some(B::AwaitingJudge), None),
            (S::Blocked, Some(B::NeedsRework), None),
            (S::Blocked, Some(B::QuotaWait), None),
            (S::Queued, None, None),
            (S::Running, None, None),
            (S::Failed, None, None),
        ] {
            assert_eq!(
                settled(TaskState::new(status, reason)),
                expected,
                "{status} {reason:?}"
            );
        }
    }

    #[test]
    fn a_task_following_its_child_is_settled_when_the_whole_family_is() {
        let follows = TaskState::new(TaskStatus::Blocked, Some(BlockReason::NeedsRework));
        let waits = TaskState::new(TaskStatus::Blocked, Some(BlockReason::AwaitingHuman));
        let queued = TaskState::new(TaskStatus::Queued, None);
        let judged = TaskState::new(TaskStatus::Blocked, Some(BlockReason::AwaitingJudge));
        for (root, family, expected) in [
            (follows, vec![follows, waits], Some("waits on a person")),
            (follows, vec![follows, queued], None),
            (follows, vec![follows, judged], None),
            (follows, vec![follows], None),
            (queued, vec![queued, waits], None),
            (waits, vec![waits], Some("waits on a person")),
        ] {
            assert_eq!(family_settled(root, &family), expected, "{root} {family:?}");
        }
    }

    #[test]
    fn the_clock_jumps_over_a_wait_only_when_everything_waits() {
        let t0 = Timestamp(1_000_000_000);
        let later = t0.plus(30 * MINUTE);
        let latest = t0.plus(90 * MINUTE);
        for (waits, expected) in [
            (vec![], t0.plus(MINUTE)),
            (vec![None], t0.plus(MINUTE)),
            (vec![Some(later)], later),
            (vec![Some(latest), Some(later)], later),
            (vec![Some(later), None], t0.plus(MINUTE)),
            // A wait within the minute is no wait.
            (vec![Some(t0.plus(10_000))], t0.plus(MINUTE)),
        ] {
            assert_eq!(next_now(t0, &waits), expected, "{waits:?}");
        }
    }

    #[test]
    fn an_outcome_counts_as_what_the_hidden_tests_say_of_it() {
        use HiddenTests::{Fail, None as NoTests, Pass};
        let v = |resolved, wrong_merge, refused_passing| Verdict {
            resolved,
            wrong_merge,
            refused_passing,
        };
        for (merged, hidden, refused, plain, expected) in [
            (true, Pass, false, false, v(true, false, false)),
            (true, Fail, false, false, v(false, true, false)),
            (false, Pass, true, false, v(false, false, true)),
            // Not merged for another reason than the judge (verification failed each time).
            (false, Pass, false, false, v(false, false, false)),
            (false, Fail, true, false, v(false, false, false)),
            (true, NoTests, false, true, v(true, false, false)),
            (true, NoTests, false, false, v(false, true, false)),
            (false, NoTests, true, true, v(false, false, false)),
        ] {
            assert_eq!(
                verdict(merged, hidden, refused, plain),
                expected,
                "{merged} {hidden:?} {refused} {plain}"
            );
        }
    }

    #[test]
    fn a_summary_counts_rates_and_costs_per_resolved_task() {
        let resolved = Counted {
            merged: true,
            verdict: Some(verdict(true, HiddenTests::Pass, false, false)),
            runs: 1,
            cost_usd: 0.5,
            seconds: 10.0,
            ..Counted::default()
        };
        let wrong = Counted {
            merged: true,
            verdict: Some(verdict(true, HiddenTests::Fail, false, false)),
            runs: 2,
            reworks: 1,
            cost_usd: 1.5,
            seconds: 30.0,
            weak: true,
            ..Counted::default()
        };
        let s = summarise(&[resolved, wrong]);
        assert_eq!(
            (s.tasks, s.resolved, s.wrong_merges, s.merged),
            (2, 1, 1, 2)
        );
        assert_eq!((s.runs, s.reworks, s.weak_tests), (3, 1, 1));
        assert!((s.resolve_rate - 0.5).abs() < 1e-9);
        assert_eq!(s.cost_per_resolved_usd, Some(2.0));
        assert_eq!(s.seconds_per_resolved, Some(40.0));
        let none = summarise(&[]);
        assert_eq!((none.resolve_rate, none.cost_per_resolved_usd), (0.0, None));
    }

    #[test]
    fn a_budget_leaves_room_for_what_runs() {
        for (budget, spent, running, estimate, fits) in [
            (None, 100.0, 3, 10.0, true),
            (Some(10.0), 0.0, 0, 0.0, true),
            (Some(10.0), 10.0, 0, 0.0, false),
            (Some(10.0), 4.0, 1, 3.0, true),
            (Some(10.0), 5.0, 1, 3.0, false),
        ] {
            assert_eq!(
                fits_budget(budget, spent, running, estimate),
                fits,
                "{budget:?} {spent} {running} {estimate}"
            );
        }
    }

    #[test]
    fn what_is_left_is_the_mean_time_over_the_jobs() {
        assert_eq!(time_left(&[], 4, 1), None);
        assert_eq!(time_left(&[10.0, 30.0], 4, 2), Some(40.0));
    }
}

//! What a person's `retry` and `cancel` do (`/opentiger retry|cancel` and `opentiger task
//! retry|cancel` alike): which move a retry makes, what may not be cancelled, and — issue 40 —
//! the family a person means: the task they know stands for the AutoFix or rework child that
//! waits in its stead, and cancelling it cancels the children working on it. Not for:
//! applying the move (the tick's, or `cli::task_moves`).

use std::collections::BTreeMap;

use crate::model::{BlockReason, RunId, Task, TaskId, TaskState, TaskStatus};
use crate::time::Timestamp;

/// What a person's retry does to a task (`/opentiger retry` and `opentiger task retry` alike).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RetryMove {
    /// Back to the queue, its attempt budgets afresh.
    Requeue,
    /// Queued already, but waiting on a cooldown: the wait ends and the budgets start afresh
    /// (issue 15).
    EndCooldown,
    /// The change is made and nothing asked for another one — the judge gave up on it (its
    /// agent failed or ran out of quota past its bounds) or the merge was refused: the judge
    /// is asked again about run `run`, its budgets afresh, and no worker runs (issue 35).
    Rejudge { run: RunId },
}

/// A task's latest run, as a retry looks at it (the shell reads it from the state).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LastRun {
    pub id: RunId,
    /// It succeeded with a change on the task's branch (a head commit).
    pub made_change: bool,
    /// A review of its head asked for changes (the judge's or the policy's).
    pub changes_requested: bool,
    /// The change the threat scan held back (issue 36): what an approval would let out.
    pub held: Option<crate::engine::scan::HeldChange>,
}

/// What a person's retry does, or why it is refused (shared with `opentiger task retry`).
/// `last` is the task's latest run.
pub fn retry_move(
    task: &Task,
    last: Option<&LastRun>,
    now: Timestamp,
) -> Result<RetryMove, String> {
    if task.status == TaskStatus::Queued && task.next_attempt_at.is_some_and(|at| at > now) {
        return Ok(RetryMove::EndCooldown);
    }
    if let (TaskStatus::Blocked, Some(BlockReason::AwaitingHuman), Some(last)) =
        (task.status, task.block_reason, last)
    {
        if last.made_change && !last.changes_requested {
            return Ok(RetryMove::Rejudge {
                run: last.id.clone(),
            });
        }
    }
    if retry_allowed(task) {
        return Ok(RetryMove::Requeue);
    }
    Err(format!(
        "Task `{}` is {}: only failed, cancelled or blocked (awaiting_human, paused, quota_wait, needs_rework) tasks, and queued ones waiting on a cooldown, can be retried",
        task.id,
        task.state()
    ))
}

/// A person may send a task back to the queue when it failed, was cancelled, or waits on a
/// person, a quota or its rework.
pub fn retry_allowed(task: &Task) -> bool {
    match task.status {
        TaskStatus::Failed | TaskStatus::Cancelled => true,
        TaskStatus::Blocked => matches!(
            task.block_reason,
            Some(
                BlockReason::AwaitingHuman
                    | BlockReason::Paused
                    | BlockReason::QuotaWait
                    | BlockReason::NeedsRework
            )
        ),
        TaskStatus::Queued | TaskStatus::Running | TaskStatus::Done => false,
    }
}

/// Why a task cannot be cancelled, if it cannot.
pub fn cancel_refusal(task: &Task) -> Option<String> {
    match task.status {
        TaskStatus::Done | TaskStatus::Cancelled => {
            Some(format!("Task `{}` is already {}", task.id, task.status))
        }
        TaskStatus::Running => Some(format!(
            "Task `{id}` is running: stop its run first (`opentiger task stop {id}`, or `/opentiger stop` on its issue or PR; it ends within 30 s), then cancel it",
            id = task.id
        )),
        TaskStatus::Queued | TaskStatus::Failed | TaskStatus::Blocked => None,
    }
}

/// The task a person's retry of `task` acts on (issue 40): `task` itself, or, while it follows
/// an AutoFix or rework child (`blocked(needs_rework)`), the member of its family that waits in
/// its stead — its newest child, followed down while each follows a child of its own. Retrying
/// the task a person knows thus retries the stuck rework, and the task follows it again.
pub fn retry_target<'a>(task: &'a Task, tasks: &'a BTreeMap<TaskId, Task>) -> &'a Task {
    let mut current = task;
    // Bounded by the number of tasks: a parent loop in damaged state cannot spin forever.
    for _ in 0..tasks.len() {
        if current.state() != TaskState::blocked(BlockReason::NeedsRework) {
            break;
        }
        match newest_child(&current.id, tasks) {
            Some(child) if !child.status.is_terminal() => current = child,
            _ => break,
        }
    }
    current
}

/// What cancelling `task` cancels (issue 40): the task and every descendant that is not
/// finished, children first, so no AutoFix or rework is left waiting for a person on a task
/// nobody wants any more. Empty when `task` may not be cancelled ([`cancel_refusal`]).
pub fn cancel_family(task: &Task, tasks: &BTreeMap<TaskId, Task>) -> Vec<TaskId> {
    if cancel_refusal(task).is_some() {
        return Vec::new();
    }
    let mut out = vec![task.id.clone()];
    let mut i = 0;
    while i < out.len() {
        let parent = out[i].clone();
        for child in tasks
            .values()
            .filter(|t| t.parent_task_id.as_ref() == Some(&parent))
        {
            if !out.contains(&child.id) && cancel_refusal(child).is_none() {
                out.push(child.id.clone());
            }
        }
        i += 1;
    }
    out.reverse();
    out
}

/// A task's newest AutoFix, rework or conflict-fix child, as recovery follows it.
fn newest_child<'a>(id: &TaskId, tasks: &'a BTreeMap<TaskId, Task>) -> Option<&'a Task> {
    tasks
        .values()
        .filter(|t| t.parent_task_id.as_ref() == Some(id))
        .max_by(|a, b| {
            a.created_at
                .cmp(&b.created_at)
                .then(a.rework_depth.cmp(&b.rework_depth))
        })
}

/// `/opentiger retry` of `task`: the move [`retry_move`] makes on the member of its family a
/// retry means ([`retry_target`]), and the reply that says which task moved.
pub(super) fn decide(task: &Task, req: &super::Request<'_>, by: &str) -> super::Decision {
    use super::{done, refuse, Effect};
    let target = retry_target(task, req.tasks);
    let (id, state) = (&target.id, target.state());
    // The task the person named follows the one that moves: the reply says so.
    let via = if target.id == task.id {
        String::new()
    } else {
        format!(" (the {} `{}` follows)", target.kind, task.id)
    };
    match retry_move(target, req.last_runs.get(id), req.now) {
        Err(why) if via.is_empty() => refuse(why),
        Err(why) => refuse(format!("Task `{}` follows `{id}`: {why}", task.id)),
        Ok(RetryMove::EndCooldown) => done(
            vec![Effect::EndCooldown {
                task: id.clone(),
                reason: format!("retried {by}: cooldown ended"),
            }],
            format!("Retried {by}: task `{id}`{via} is queued and its cooldown ended, so the next tick may start it; its attempt budgets start afresh."),
        ),
        Ok(RetryMove::Requeue) => done(
            vec![Effect::Move {
                task: id.clone(),
                to: TaskState::QUEUED,
                reset_attempts: true,
                approved: true,
                reason: format!("retried {by}"),
            }],
            format!("Retried {by}: task `{id}`{via} {state} → queued; its attempt budgets start afresh."),
        ),
        Ok(RetryMove::Rejudge { run }) => done(
            vec![Effect::Rejudge {
                task: id.clone(),
                run: run.clone(),
                reason: format!("retried {by}: the judge is asked again"),
            }],
            format!("Retried {by}: task `{id}`{via} {state} → blocked(awaiting_judge); the judge reviews run `{run}` again (no new worker run), its budgets afresh."),
        ),
    }
}

/// `/opentiger cancel` of `task`: it and the children working on it ([`cancel_family`]).
pub(super) fn decide_cancel(task: &Task, req: &super::Request<'_>, by: &str) -> super::Decision {
    use super::{done, plain_move, refuse};
    let (id, state) = (&task.id, task.state());
    if let Some(why) = cancel_refusal(task) {
        return refuse(why);
    }
    let family = cancel_family(task, req.tasks);
    let effects = family
        .iter()
        .map(|t| plain_move(t, TaskState::CANCELLED, format!("cancelled {by}")))
        .collect();
    let children = match family.len() {
        1 => String::new(),
        n => format!(" with the {} task(s) working on it", n - 1),
    };
    done(
        effects,
        format!("Cancelled {by}: task `{id}` {state} → cancelled{children}. `/opentiger retry` brings it back."),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testkit::{task, TaskExt};
    use crate::model::TaskKind;

    fn family(tasks: Vec<Task>) -> BTreeMap<TaskId, Task> {
        tasks.into_iter().map(|t| (t.id.clone(), t)).collect()
    }

    fn child(id: &str, parent: &str, minutes: i64) -> Task {
        task(id).with(|t| {
            t.kind = TaskKind::Rework;
            t.parent_task_id = Some(TaskId::from(parent));
            t.created_at = crate::engine::testkit::at(minutes);
        })
    }

    /// Issue 40: the task a person knows stands for the member of its family that waits.
    #[test]
    fn a_retry_of_the_task_a_person_knows_reaches_the_waiting_rework() {
        let follows = |id: &str| task(id).blocked(BlockReason::NeedsRework);
        let stuck = |t: Task| t.blocked(BlockReason::AwaitingHuman);
        #[rustfmt::skip]
        let cases: Vec<(&str, Vec<Task>, &str, &str)> = vec![
            ("a task without children is itself", vec![stuck(task("a"))], "a", "a"),
            ("the parent of a stuck rework: the rework", vec![follows("a"), stuck(child("w", "a", 1))], "a", "w"),
            ("the newest child", vec![follows("a"), child("old", "a", 1).status(TaskStatus::Cancelled), stuck(child("new", "a", 2))], "a", "new"),
            ("down the chain", vec![follows("a"), child("w1", "a", 1).blocked(BlockReason::NeedsRework), stuck(child("w2", "w1", 2))], "a", "w2"),
            ("a finished child: the parent itself", vec![follows("a"), child("w", "a", 1).status(TaskStatus::Done)], "a", "a"),
            ("the child named directly", vec![follows("a"), stuck(child("w", "a", 1))], "w", "w"),
        ];
        for (name, tasks, named, expected) in cases {
            let tasks = family(tasks);
            let target = retry_target(&tasks[&TaskId::from(named)], &tasks);
            assert_eq!(target.id.as_str(), expected, "{name}");
        }
    }

    #[test]
    fn a_cancel_takes_the_children_working_on_it_first() {
        let tasks = family(vec![
            task("a").blocked(BlockReason::NeedsRework),
            child("w1", "a", 1).blocked(BlockReason::NeedsRework),
            child("w2", "w1", 2).blocked(BlockReason::AwaitingHuman),
            child("done", "a", 0).status(TaskStatus::Done),
            task("other"),
        ]);
        let ids = |v: Vec<TaskId>| v.into_iter().map(|t| t.0).collect::<Vec<_>>();
        assert_eq!(
            ids(cancel_family(&tasks[&TaskId::from("a")], &tasks)),
            ["w2", "w1", "a"]
        );
        assert_eq!(
            ids(cancel_family(&tasks[&TaskId::from("w2")], &tasks)),
            ["w2"]
        );
        let running = task("r").status(TaskStatus::Running);
        assert!(cancel_family(&running, &tasks).is_empty());
    }
}

//! What waits on a person (issue 49), as a fact of the record: every active task that cannot
//! move until a person acts — itself (a question or a bound hit, a held change, a pause, its
//! own spent budget, people holding its PR's merge or an approval they must give, their
//! uncommitted work in its merge's way) or through a task it depends on or a fix it follows,
//! which then names that task — with the person's step: words and the command or the GitHub
//! action. Pure: the tasks and the plan's waits in, a map out; `status` (and `--json`), the
//! dashboard and the job summary show it.
//!
//! Not for: deciding the waits (recovery, dispatch and the PR gates do, and `recovery::review`
//! holds a review while a person's work is in its merge's way) or showing them (`report`).

use std::collections::BTreeMap;

use serde::Serialize;

use super::commands::{recommended, PREFIX};
use super::{Action, Decision};
use crate::model::{BlockReason, Mode, Task, TaskId, TaskState, TaskStatus};

/// What a person does for a task, and through which task when the wait is not its own.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct PersonStep {
    /// What to do: words, with the command (and in github mode the comment) that does it.
    pub step: String,
    /// The task that waits on the person itself, when this one waits through it: a task it
    /// depends on, or a fix it follows (and so on down to the one that waits).
    pub via: Option<TaskId>,
}

/// The rule of a review held while a person's uncommitted work is in its merge's way
/// (local-git, the base checked out in the repository).
pub const HELD_BY_CHECKOUT: &str = "judge.held_by_checkout";

/// The words a held review's wait starts with; its step follows them.
pub const ON_A_PERSON: &str = "waits on a person: ";

/// The wait of a review held while a person's uncommitted `files` in the checked-out `base`
/// are in its merge's way: what happened, then the person's step.
pub fn held_by_checkout(base: &str, files: &[String]) -> String {
    let mut shown = files.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
    if files.len() > 5 {
        shown.push_str(&format!(" and {} more", files.len() - 5));
    }
    format!(
        "{ON_A_PERSON}commit or stash your uncommitted changes to {shown} ({base} is checked out \
         in the repository, and merging would overwrite them); the next tick merges, with no \
         review spent meanwhile"
    )
}

/// Every task of `tasks` (as they are now) that waits on a person, with the step; `decisions`
/// are the plan's, whose waits say what holds a task now (its budget, people on its PR).
pub fn on_person(
    tasks: &[Task],
    decisions: &[Decision],
    mode: Mode,
) -> BTreeMap<TaskId, PersonStep> {
    let by_id: BTreeMap<&TaskId, &Task> = tasks.iter().map(|t| (&t.id, t)).collect();
    let mut found: BTreeMap<TaskId, PersonStep> = BTreeMap::new();
    for task in tasks.iter().filter(|t| !t.status.is_terminal()) {
        let waits = decisions.iter().filter(|d| {
            d.task_id.as_ref() == Some(&task.id) && matches!(d.action, Action::Wait { .. })
        });
        if let Some(step) = own_step(task, waits, mode) {
            found.insert(task.id.clone(), PersonStep { step, via: None });
        }
    }
    // Through others: a fix followed, a dependency not done; a chain is followed to its end,
    // one link a pass (a cycle of dependencies adds nothing: every link needs a found task).
    for _ in 0..tasks.len() {
        let mut added = false;
        for task in tasks.iter().filter(|t| !t.status.is_terminal()) {
            if found.contains_key(&task.id) {
                continue;
            }
            let through = match task.state() {
                s if s == TaskState::blocked(BlockReason::NeedsRework) => {
                    followed_child(tasks, &task.id).map(|c| c.id.clone())
                }
                _ => task
                    .dependencies
                    .iter()
                    .filter(|d| by_id.get(d).is_some_and(|t| t.status != TaskStatus::Done))
                    .find(|d| found.contains_key(*d))
                    .cloned(),
            };
            let Some(through) = through.filter(|t| found.contains_key(t)) else {
                continue;
            };
            let root = &found[&through];
            let step = PersonStep {
                step: root.step.clone(),
                via: Some(root.via.clone().unwrap_or(through)),
            };
            found.insert(task.id.clone(), step);
            added = true;
        }
        if !added {
            break;
        }
    }
    found
}

/// The child a task in `needs_rework` follows: its newest; of children made at the same
/// instant, one not cancelled, then the deeper rework.
pub fn followed_child<'a>(
    tasks: impl IntoIterator<Item = &'a Task>,
    id: &TaskId,
) -> Option<&'a Task> {
    tasks
        .into_iter()
        .filter(|t| t.parent_task_id.as_ref() == Some(id))
        .max_by(|a, b| {
            a.created_at
                .cmp(&b.created_at)
                .then((a.status != TaskStatus::Cancelled).cmp(&(b.status != TaskStatus::Cancelled)))
                .then(a.rework_depth.cmp(&b.rework_depth))
        })
}

/// The step of a task that waits on a person itself, from its state or the plan's wait.
fn own_step<'a>(
    task: &Task,
    mut waits: impl Iterator<Item = &'a Decision>,
    mode: Mode,
) -> Option<String> {
    let github = mode == Mode::Github;
    let id = &task.id;
    let on_github = |what: String| {
        if github {
            format!("; on GitHub: {what}")
        } else {
            String::new()
        }
    };
    match task.state() {
        s if s == TaskState::blocked(BlockReason::AwaitingHuman) => {
            let comment = recommended(task)
                .map(|c| on_github(format!("comment `{c}` on the dashboard issue")))
                .unwrap_or_default();
            return Some(format!(
                "{}{comment}",
                super::advice::to_do(task).trim_end_matches('.')
            ));
        }
        s if s == TaskState::blocked(BlockReason::Paused) => {
            return Some(format!(
                "resume it: `opentiger task retry {id}`{}",
                on_github(format!(
                    "comment `{PREFIX} resume {id}` on the dashboard issue"
                ))
            ));
        }
        _ => {}
    }
    waits.find_map(|d| {
        let after = |marker: &str| d.reason.split_once(marker).map(|(_, s)| s.to_string());
        match d.rule {
            super::dispatch::BUDGET_WAIT if matches!(d.action, Action::Wait { until: None }) => {
                Some(if github {
                    format!(
                        "raise its budget: comment `{PREFIX} budget <usd>` on its issue, or \
                         raise `budget.per_task_usd`; or `opentiger task cancel {id}`"
                    )
                } else {
                    format!(
                        "raise `budget.per_task_usd` in .opentiger.yml; or `opentiger task cancel {id}`"
                    )
                })
            }
            "dispatch.paused" => Some(format!(
                "resume the repository: `opentiger resume`{}",
                on_github(format!("comment `{PREFIX} resume` on the dashboard issue"))
            )),
            super::objection::HELD_RULE => {
                let pr = task.source_pr.map(|n| format!("PR #{n}")).unwrap_or_default();
                Some(format!(
                    "those holding {pr} let it go: {}",
                    after("not merged: ").unwrap_or_else(|| d.reason.clone())
                ))
            }
            "judge.awaiting_approval" => Some(format!(
                "a maintainer approves PR #{} on GitHub (merge.human_approval: required)",
                task.source_pr.unwrap_or_default()
            )),
            HELD_BY_CHECKOUT => after(ON_A_PERSON),
            _ => None,
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testkit::{at, task, TaskExt, NOW};
    use crate::model::{AttemptKey, TaskKind};

    fn wait(id: &str, rule: &'static str, reason: &str, until: bool) -> Decision {
        Decision {
            task_id: Some(TaskId::from(id)),
            rule,
            action: Action::Wait {
                until: until.then_some(at(60)),
            },
            reason: reason.to_string(),
            detail: None,
        }
    }

    fn child(id: &str, parent: &str) -> Task {
        task(id).with(|t| {
            t.kind = TaskKind::Autofix;
            t.parent_task_id = Some(TaskId::from(parent));
            t.created_at = NOW;
        })
    }

    /// Each case: the tasks, the plan's waits → for each task that waits on a person, a piece
    /// of its step and the task it waits through.
    #[test]
    fn who_waits_on_a_person_and_through_whom() {
        let stuck = || {
            task("s").blocked(BlockReason::AwaitingHuman).with(|t| {
                t.status_reason = Some(
                    "lost 3 times. Decide: `opentiger task retry s` or `opentiger task cancel s`"
                        .into(),
                )
            })
        };
        let held = wait(
            "c",
            HELD_BY_CHECKOUT,
            "waits on a person: commit or stash your changes to a.txt; the next tick merges",
            false,
        );
        type Case = (
            &'static str,
            Vec<Task>,
            Vec<Decision>,
            Mode,
            Vec<(&'static str, &'static str, Option<&'static str>)>,
        );
        #[rustfmt::skip]
        let cases: Vec<Case> = vec![
            ("a question", vec![stuck()], vec![], Mode::LocalGit,
                vec![("s", "`opentiger task retry s`", None)]),
            ("a question, on GitHub", vec![stuck()], vec![], Mode::Github,
                vec![("s", "comment `/opentiger retry s` on the dashboard issue", None)]),
            ("an approval", vec![task("a").blocked(BlockReason::AwaitingHuman).with(|t| t.needs_approval = true)], vec![], Mode::LocalGit,
                vec![("a", "`opentiger task approve a`", None)]),
            ("paused", vec![task("p").blocked(BlockReason::Paused)], vec![], Mode::LocalGit,
                vec![("p", "`opentiger task retry p`", None)]),
            ("a merge held by a checkout", vec![task("c").blocked(BlockReason::AwaitingJudge)], vec![held.clone()], Mode::LocalGit,
                vec![("c", "commit or stash your changes to a.txt", None)]),
            ("its own budget", vec![task("b")], vec![wait("b", "dispatch.budget", "queued: spent", false)], Mode::LocalGit,
                vec![("b", "budget.per_task_usd", None)]),
            ("the day's budget lifts itself", vec![task("b")], vec![wait("b", "dispatch.budget", "queued: today", true)], Mode::LocalGit,
                vec![]),
            ("the repository paused", vec![task("q")], vec![wait("q", "dispatch.paused", "queued: paused", false)], Mode::Github,
                vec![("q", "`/opentiger resume`", None)]),
            ("people hold the PR", vec![task("h").blocked(BlockReason::AwaitingJudge).with(|t| t.source_pr = Some(7))],
                vec![wait("h", "judge.held", "PR #7: CI green; not merged: held by @carol (to release: `/opentiger release`)", false)], Mode::Github,
                vec![("h", "held by @carol (to release: `/opentiger release`)", None)]),
            ("an approval required", vec![task("r").blocked(BlockReason::AwaitingJudge).with(|t| t.source_pr = Some(8))],
                vec![wait("r", "judge.awaiting_approval", "PR #8: waits", false)], Mode::Github,
                vec![("r", "approves PR #8", None)]),
            ("waiting on the loop is not waiting on a person", vec![task("w").blocked(BlockReason::AwaitingJudge), task("x")],
                vec![wait("w", "judge.checks_pending", "CI pending", true)], Mode::Github, vec![]),
            // Through others: a dependency, a fix followed, a chain of both.
            ("a dependency", vec![task("c").blocked(BlockReason::AwaitingJudge), task("d").deps(&["c"])], vec![held.clone()], Mode::LocalGit,
                vec![("c", "commit or stash", None), ("d", "commit or stash", Some("c"))]),
            ("a done dependency holds nothing", vec![stuck().status(TaskStatus::Done), task("d").deps(&["s"])], vec![], Mode::LocalGit,
                vec![]),
            ("a family whose fix waits", vec![task("f").blocked(BlockReason::NeedsRework), child("f1", "f").blocked(BlockReason::AwaitingHuman), task("d").deps(&["f"])],
                vec![], Mode::LocalGit,
                vec![("f", "`opentiger task retry f1`", Some("f1")), ("f1", "`opentiger task retry f1`", None), ("d", "`opentiger task retry f1`", Some("f1"))]),
            ("a chain of dependencies", vec![stuck(), task("d1").deps(&["s"]), task("d2").deps(&["d1"]), task("d3").deps(&["d2"])], vec![], Mode::LocalGit,
                vec![("s", "retry s", None), ("d1", "retry s", Some("s")), ("d2", "retry s", Some("s")), ("d3", "retry s", Some("s"))]),
            ("a cycle adds nothing", vec![task("y").deps(&["z"]), task("z").deps(&["y"])], vec![], Mode::LocalGit, vec![]),
            ("a fix that runs is no wait", vec![task("f").blocked(BlockReason::NeedsRework), child("f1", "f").attempts(AttemptKey::Judge, 1)],
                vec![], Mode::LocalGit, vec![]),
        ];
        for (name, tasks, decisions, mode, want) in cases {
            let got = on_person(&tasks, &decisions, mode);
            assert_eq!(got.len(), want.len(), "{name}: {got:?}");
            for (id, step, via) in want {
                let found = got
                    .get(&TaskId::from(id))
                    .unwrap_or_else(|| panic!("{name}: {id} not found in {got:?}"));
                assert!(found.step.contains(step), "{name}: {id}: {}", found.step);
                assert_eq!(found.via, via.map(TaskId::from), "{name}: {id}");
            }
        }
    }
}

//! Which task a command acts on: the one it names (an id or a prefix of at least four
//! characters, which must belong to the thread unless on the dashboard), else the thread's own.
//! Not for: what the command then does (`decide` and the verbs' files).

use std::collections::BTreeMap;

use super::{Command, Place, Request};
use crate::model::{Task, TaskId};

/// The task a command acts on: the one it names (which must belong to this thread, unless on
/// the dashboard), else the thread's own task (the newest still active, else the newest).
pub(super) fn pick_task<'a>(command: &Command, req: &Request<'a>) -> Result<&'a Task, String> {
    match (&command.task, &req.place) {
        (Some(word), place) => {
            let task = find_task(req.tasks, word)?;
            match place {
                Place::Dashboard => Ok(task),
                Place::Thread { tasks, .. } | Place::Plan { tasks, .. }
                    if tasks.contains(&task.id) =>
                {
                    Ok(task)
                }
                Place::Thread { number, .. } | Place::Plan { number, .. } => Err(format!(
                    "Task `{}` does not belong to #{number}: command it on its own issue, or on the dashboard issue",
                    task.id
                )),
            }
        }
        (None, Place::Plan { number, .. }) => Err(format!(
            "On #{number}, name the task: `/opentiger <command> <task-id>`"
        )),
        (None, Place::Dashboard) => Err(
            "On the dashboard issue, name the task: `/opentiger <command> <task-id>`".to_string(),
        ),
        (None, Place::Thread { number, tasks }) => {
            let mut own: Vec<&Task> = tasks.iter().filter_map(|t| req.tasks.get(t)).collect();
            own.sort_by_key(|t| (!t.status.is_terminal(), t.updated_at, t.id.clone()));
            own.last()
                .copied()
                .ok_or_else(|| format!("#{number} has no opentiger task"))
        }
    }
}

pub(super) fn find_task<'a>(
    tasks: &'a BTreeMap<TaskId, Task>,
    word: &str,
) -> Result<&'a Task, String> {
    if let Some(task) = tasks.get(&TaskId(word.to_string())) {
        return Ok(task);
    }
    let matching: Vec<&Task> = tasks
        .values()
        .filter(|t| t.id.as_str().starts_with(word))
        .collect();
    match matching.as_slice() {
        [one] if word.len() >= 4 => Ok(one),
        [] | [_] => Err(format!("No task `{word}`")),
        _ => Err(format!(
            "`{word}` names more than one task: give more of its id"
        )),
    }
}

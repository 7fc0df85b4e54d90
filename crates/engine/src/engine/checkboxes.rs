//! Dashboard checkboxes (issue 17, Renovate-style): under each task that waits on a person the
//! dashboard issue lists `- [ ] retry` / `- [ ] approve` / `- [ ] cancel`, only those its
//! state allows, the recommended one first. A person ticks one; the next tick acts on it once,
//! with the same rules as the comment commands (`engine::commands::decide`), and rewrites the
//! dashboard unticked.
//!
//! "Once" without a record: each box carries a key of the task's state when the box was
//! drawn (its id and `updated_at`). Acting moves the task, so its key changes, and a box still
//! ticked on a dashboard not yet rewritten (a tick killed in between) no longer matches and is
//! ignored. A tick killed before its state write acted on nothing, and the box still matches.
//!
//! Pure: which boxes a task gets, and what the ticked boxes of a dashboard body ask for.
//! Not for: reading ticked boxes and applying them (`tick::people::boxes`), drawing the
//! dashboard (`report::board`) or writing it (`tick::dashboard`).

use crate::model::{short_hash, Task, TaskId};

use super::commands::{self, Command, Parsed, Verb};

/// One checkbox as drawn on the dashboard.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Checkbox {
    /// `retry`, `approve` or `cancel`.
    pub verb: &'static str,
    pub recommended: bool,
    /// The hidden marker that says which task, which verb and which state the box is for.
    pub marker: String,
}

const OPEN: &str = "<!-- opentiger:box=";

/// The key of a task's state for its boxes: changes whenever the task moves.
pub fn state_key(task: &Task) -> String {
    short_hash(&["box", task.id.as_str(), &task.updated_at.0.to_string()])
}

/// The boxes of a task waiting on a person, recommended first; none for any other task.
pub fn boxes(task: &Task) -> Vec<Checkbox> {
    let recommended = commands::recommended(task);
    let Some(first) = recommended.as_deref() else {
        return Vec::new();
    };
    let first_verb = first
        .strip_prefix(commands::PREFIX)
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_default();
    let mut verbs: Vec<&'static str> = if commands::waits_approval(task) {
        vec!["approve", "cancel"]
    } else {
        vec!["retry", "cancel"]
    };
    verbs.retain(|v| match *v {
        "approve" => commands::waits_approval(task),
        "retry" => commands::retry_allowed(task),
        _ => commands::cancel_refusal(task).is_none(),
    });
    verbs.sort_by_key(|v| *v != first_verb);
    let key = state_key(task);
    verbs
        .into_iter()
        .map(|verb| Checkbox {
            verb,
            recommended: verb == first_verb,
            marker: format!("{OPEN}{}:{verb}:{key} -->", task.id),
        })
        .collect()
}

/// A ticked box read from the dashboard's body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Ticked {
    pub task: TaskId,
    pub verb: String,
    pub key: String,
}

/// The boxes ticked in a dashboard body (`- [x] …` or `* [X] …` carrying a box marker), in
/// the order they appear, each once.
pub fn ticked(body: &str) -> Vec<Ticked> {
    let mut found: Vec<Ticked> = Vec::new();
    for line in body.lines() {
        let line = line.trim_start();
        let rest = line
            .strip_prefix("- ")
            .or_else(|| line.strip_prefix("* "))
            .unwrap_or_default();
        if !(rest.starts_with("[x]") || rest.starts_with("[X]")) {
            continue;
        }
        let Some(inner) = rest
            .split(OPEN)
            .nth(1)
            .and_then(|m| m.split_once(" -->"))
            .map(|(inner, _)| inner)
        else {
            continue;
        };
        let mut parts = inner.split(':');
        let (Some(task), Some(verb), Some(key), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            continue;
        };
        let box_ = Ticked {
            task: TaskId(task.to_string()),
            verb: verb.to_string(),
            key: key.to_string(),
        };
        if !found.contains(&box_) {
            found.push(box_);
        }
    }
    found
}

/// What to do with one ticked box: the command it stands for, or why it is ignored.
pub fn command_of(ticked: &Ticked, task: Option<&Task>) -> Result<Parsed, String> {
    let Some(task) = task else {
        return Err(format!("no task `{}`", ticked.task));
    };
    if ticked.key != state_key(task) {
        return Err(format!(
            "task `{}` moved since its box was drawn (it is {} now)",
            task.id,
            task.state()
        ));
    }
    let verb = match ticked.verb.as_str() {
        "retry" => Verb::Retry,
        "approve" => Verb::Approve,
        "cancel" => Verb::Cancel,
        other => return Err(format!("`{other}` is not a checkbox")),
    };
    Ok(Parsed::Command(Command {
        verb,
        task: Some(task.id.to_string()),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testkit::{at, task, TaskExt};
    use crate::model::{BlockReason, TaskStatus};

    /// A box's verb and whether it is the recommended one.
    type Drawn = Vec<(&'static str, bool)>;

    fn verbs(t: &Task) -> Drawn {
        boxes(t).iter().map(|b| (b.verb, b.recommended)).collect()
    }

    #[test]
    fn a_waiting_task_gets_the_boxes_its_state_allows_recommended_first() {
        let stuck = task("t1").blocked(BlockReason::AwaitingHuman);
        let approval = stuck.clone().with(|t| t.needs_approval = true);
        let paused = task("t1").blocked(BlockReason::Paused);
        #[rustfmt::skip]
        let cases: Vec<(&str, Task, Drawn)> = vec![
            ("stuck", stuck, vec![("retry", true), ("cancel", false)]),
            ("approval", approval, vec![("approve", true), ("cancel", false)]),
            // `resume` is recommended, and it is not a box: none is marked.
            ("paused", paused, vec![("retry", false), ("cancel", false)]),
            ("queued", task("t1"), vec![]),
            ("failed", task("t1").status(TaskStatus::Failed), vec![]),
            ("awaiting the judge", task("t1").blocked(BlockReason::AwaitingJudge), vec![]),
        ];
        for (name, t, expected) in cases {
            assert_eq!(verbs(&t), expected, "{name}");
        }
    }

    #[test]
    fn ticked_boxes_are_read_and_act_only_while_their_task_has_not_moved() {
        let t = task("t1").blocked(BlockReason::AwaitingHuman);
        let drawn = boxes(&t);
        let body = format!(
            "# dashboard\n- **Add** (`t1`)\n  - [x] retry (recommended) {}\n  - [ ] cancel {}\n* [X] {}\n> - [x] quoted {}\n- [x] no marker\n",
            drawn[0].marker, drawn[1].marker, drawn[0].marker, "x"
        );
        let read = ticked(&body);
        assert_eq!(read.len(), 1, "{read:?}");
        assert_eq!(
            (read[0].task.as_str(), read[0].verb.as_str()),
            ("t1", "retry")
        );
        assert_eq!(
            command_of(&read[0], Some(&t)),
            Ok(Parsed::Command(Command {
                verb: Verb::Retry,
                task: Some("t1".to_string())
            }))
        );
        // The task moved (a killed tick acted, or a person did): the box is stale.
        let moved = t.clone().with(|t| t.updated_at = at(5));
        assert!(command_of(&read[0], Some(&moved))
            .unwrap_err()
            .contains("moved since"));
        assert!(command_of(&read[0], None).is_err());
        let forged = Ticked {
            verb: "replan".to_string(),
            ..read[0].clone()
        };
        assert!(command_of(&forged, Some(&t)).is_err());
    }
}

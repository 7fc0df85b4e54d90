//! `approve <n>` on a research task's issue (issue 28): proposal `n` of its latest report
//! becomes a worker task, which gets its own issue and then runs. The new task's id comes
//! from the research task and `n`, so approving twice (a comment and a box, two comments)
//! finds it and creates nothing: the reply says it is already approved. Not for: the
//! report's proposals themselves (`engine::research`) or the ticked boxes that ask this
//! (`tick::people`).

use super::{done, pick_task, refuse, Command, Decision, Effect, Place, Request};
use crate::engine::research::{proposal_task, proposal_task_id};
use crate::model::{Role, Task};

pub(super) fn decide(number: u32, command: &Command, req: &Request<'_>, by: &str) -> Decision {
    let research = match research_task(command, req) {
        Ok(task) => task,
        Err(why) => return refuse(why),
    };
    let id = &research.id;
    let Some(report) = req.reports.get(id) else {
        return refuse(format!("Research task `{id}` has no report yet"));
    };
    let count = report.proposals.len();
    let Some(proposal) = usize::try_from(number)
        .ok()
        .and_then(|n| n.checked_sub(1))
        .and_then(|i| report.proposals.get(i))
    else {
        return refuse(format!(
            "The report of research task `{id}` makes {count} proposal(s): there is no proposal {number}"
        ));
    };
    if let Some(existing) = req.tasks.get(&proposal_task_id(id, number)) {
        let issue = existing
            .issue_number
            .map(|n| format!(", #{n}"))
            .unwrap_or_default();
        return refuse(format!(
            "Proposal {number} of research task `{id}` is already approved (task `{}`{issue})",
            existing.id
        ));
    }
    // Comments are read in github mode only: the task gets its issue first.
    let task = proposal_task(research, number, proposal, true, by, req.now);
    let reply = format!(
        "Approved {by}: proposal {number} of research task `{id}` (\"{}\") is task `{}` now; its issue is opened next, then it runs.",
        proposal.title.replace('`', "'"),
        task.id
    );
    done(vec![Effect::AddTask(Box::new(task))], reply)
}

/// The research task the command means: the one it names, else the thread's newest.
fn research_task<'a>(command: &Command, req: &Request<'a>) -> Result<&'a Task, String> {
    let task = match (&command.task, &req.place) {
        (None, Place::Thread { number, tasks }) => tasks
            .iter()
            .filter_map(|t| req.tasks.get(t))
            .filter(|t| t.role == Role::Research)
            .max_by_key(|t| (t.updated_at, t.id.clone()))
            .ok_or_else(|| format!("#{number} has no research task whose proposals to approve"))?,
        _ => pick_task(command, req)?,
    };
    match task.role {
        Role::Research => Ok(task),
        Role::Worker | Role::Tester | Role::Docser => Err(format!(
            "Task `{}` is not a research task: `approve <n>` approves a research report's proposal n",
            task.id
        )),
    }
}

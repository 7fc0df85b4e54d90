//! `/opentiger hold` and `release` (issue 26): a person holds the merge of a task's PR,
//! whatever its review says, until they (or another maintainer) release it. The hold itself is
//! kept by the tick and read by `engine::objection`. Not for: parsing (`parse.rs`).

use super::{done, refuse, Decision, Effect, Place, Request, Verb};

/// `hold` / `release` on a task's issue or PR (issue 26): the merge of its PR waits while held,
/// whatever the judge concluded. Written by someone allowed to command (checked before).
pub(super) fn decide(verb: &Verb, req: &Request<'_>) -> Decision {
    let Place::Thread { number, tasks } = &req.place else {
        return refuse(
            "`hold` and `release` work on a task's issue or pull request, not here".to_string(),
        );
    };
    if tasks.is_empty() {
        return refuse(format!("#{number} has no opentiger task to hold"));
    }
    match verb {
        Verb::Hold => done(
            vec![Effect::Hold {
                thread: *number,
                by: Some(req.author.to_string()),
            }],
            format!(
                "Held by @{}: opentiger will not merge this task's pull request, whatever its review says, until a maintainer comments `/opentiger release` here.",
                req.author
            ),
        ),
        Verb::Release
        | Verb::Approve
        | Verb::ApproveAll
        | Verb::ApproveProposal(_)
        | Verb::Retry
        | Verb::Cancel
        | Verb::Stop
        | Verb::Pause
        | Verb::Resume
        | Verb::Budget(_)
        | Verb::Status
        | Verb::Replan
        | Verb::Help => done(
            vec![Effect::Hold {
                thread: *number,
                by: None,
            }],
            format!(
                "Released by @{}: no `/opentiger hold` holds this task's pull request any more; it is merged once its review and checks allow.",
                req.author
            ),
        ),
    }
}

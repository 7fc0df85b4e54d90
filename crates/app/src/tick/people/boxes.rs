//! github mode: ticked boxes, read as commands by a person with write access — only they and
//! opentiger can edit what opentiger wrote. The dashboard's boxes (issue 17 item 6: when the
//! backlog listing brings back opentiger's own dashboard issue changed, each ticked box's key,
//! `engine::checkboxes`, makes it act once; the report rewrites the dashboard unticked,
//! `TickSummary::dashboard_ticked`), and the boxes of a research report's comment (issue 28:
//! the comment feed brings it back when edited; each newly ticked box is `/opentiger approve
//! <n>` on its issue). Decided by the comment commands' rules and applied in the claim phase's
//! state write.
//!
//! Not for: the rules (`engine::checkboxes`, `engine::research`, `engine::commands`) or posting
//! the report whose boxes these are (`research.rs`).

use super::effects::{apply_effects, decide_on, Asked, Source};
use crate::engine::checkboxes::{command_of, ticked};
use crate::engine::commands::{Command, Outcome, Parsed, Place, Verb};
use crate::engine::research::{proposal_task_id, ReportComment};
use crate::model::Issue;
use crate::store::{Store, Writer};
use crate::tick::{Context, Failure};

/// Acts on the dashboard's ticked boxes; returns report lines.
pub fn dashboard_boxes(
    ctx: &Context,
    store: &mut Store,
    dashboard: &Issue,
    issues: &[Issue],
    writer: Writer<'_>,
) -> Result<Vec<String>, Failure> {
    let mut lines = Vec::new();
    for ticked in ticked(&dashboard.body) {
        let task = store.task(&ticked.task).ok();
        let what = format!("checkbox `{}` for task {}", ticked.verb, ticked.task);
        let parsed = match command_of(&ticked, task.as_ref()) {
            Ok(parsed) => parsed,
            Err(why) => {
                lines.push(format!("{what}: ignored, {why}"));
                continue;
            }
        };
        let source = Source {
            actor: "github:dashboard-checkbox".to_string(),
            author: "",
            url: &dashboard.html_url,
            nonce: dashboard.number,
        };
        let place = Place::Dashboard;
        lines.push(act_on_box(
            ctx, store, &parsed, place, &source, &what, issues, writer,
        )?);
    }
    Ok(lines)
}

/// A ticked box acted on as the command `parsed` at `place`, by a person with write access
/// (only they and opentiger can edit what opentiger wrote: the dashboard, a research report's
/// comment): decided by the comment commands' rules, applied, and said in one report line
/// that starts with `what`.
#[allow(clippy::too_many_arguments)]
fn act_on_box(
    ctx: &Context,
    store: &mut Store,
    parsed: &Parsed,
    place: Place,
    source: &Source<'_>,
    what: &str,
    issues: &[Issue],
    writer: Writer<'_>,
) -> Result<String, Failure> {
    let asked = Asked {
        author: "",
        allowed: true,
        refused_before: false,
        place,
        checkbox: true,
    };
    let decision = decide_on(ctx, store, parsed, asked, issues, writer.now)?;
    if let Err(e) = apply_effects(store, &decision.effects, source, issues, writer) {
        return Ok(format!("{what}: could not be done: {e}"));
    }
    let said = decision.reply.unwrap_or_default();
    Ok(match decision.outcome {
        Outcome::Done => format!("{what}: {said}"),
        Outcome::Refused | Outcome::NotAllowed | Outcome::Help => {
            format!("{what}: refused: {said}")
        }
    })
}

/// Acts on the newly ticked boxes of our report comments; returns report lines.
pub fn report_boxes(
    ctx: &Context,
    store: &mut Store,
    comments: &[ReportComment],
    issues: &[Issue],
    writer: Writer<'_>,
) -> Result<Vec<String>, Failure> {
    let mut lines = Vec::new();
    for comment in comments {
        for number in crate::engine::research::ticked(&comment.body) {
            // Approved already (by a box or a comment): its box reads ticked from now on.
            if store.task(&proposal_task_id(&comment.task, number)).is_ok() {
                continue;
            }
            let parsed = Parsed::Command(Command {
                verb: Verb::ApproveProposal(number),
                task: Some(comment.task.to_string()),
            });
            let place = Place::Thread {
                number: comment.thread,
                tasks: store.tasks_of_thread(comment.thread)?,
            };
            let source = Source {
                actor: "github:report-checkbox".to_string(),
                author: "",
                url: &comment.url,
                nonce: comment.thread,
            };
            let what = format!("box {number} of research task {}", comment.task);
            lines.push(act_on_box(
                ctx, store, &parsed, place, &source, &what, issues, writer,
            )?);
        }
    }
    Ok(lines)
}

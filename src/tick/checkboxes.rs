//! github mode: the dashboard's checkboxes (issue 17 item 6). When the backlog listing brings
//! back opentiger's own dashboard issue changed, each ticked box is decided with the comment
//! commands' rules (`engine::commands::decide`, on the dashboard, as a person with write
//! access: only they and opentiger can edit the issue opentiger opened) and applied in the
//! claim phase's state write. The box's key (`engine::checkboxes`) makes it act once; the
//! report rewrites the dashboard unticked (`TickSummary::dashboard_ticked`).

use super::commands::{apply_effects, decide_on, Asked, Source};
use super::{Context, Failure};
use crate::engine::checkboxes::{command_of, ticked};
use crate::engine::commands::{Outcome, Parsed, Place};
use crate::model::Issue;
use crate::store::{Store, Writer};

/// Acts on the dashboard's ticked boxes; returns report lines.
pub fn apply(
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
pub(super) fn act_on_box(
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

//! github mode: the dashboard's checkboxes (issue 17 item 6). When the backlog listing brings
//! back opentiger's own dashboard issue changed, each ticked box is decided with the comment
//! commands' rules (`engine::commands::decide`, on the dashboard, as a person with write
//! access: only they and opentiger can edit the issue opentiger opened) and applied in the
//! claim phase's state write. The box's key (`engine::checkboxes`) makes it act once; the
//! report rewrites the dashboard unticked (`TickSummary::dashboard_ticked`).

use super::commands::{apply_effects, decide_on, Asked, Source};
use super::{Context, Failure};
use crate::engine::checkboxes::{command_of, ticked};
use crate::engine::commands::{Outcome, Place};
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
        let asked = Asked {
            author: "",
            allowed: true,
            refused_before: false,
            place: Place::Dashboard,
            checkbox: true,
        };
        let decision = decide_on(ctx, store, &parsed, asked, issues, writer.now)?;
        let source = Source {
            actor: "github:dashboard-checkbox".to_string(),
            author: "",
            url: &dashboard.html_url,
            nonce: dashboard.number,
        };
        let outcome = match apply_effects(store, &decision.effects, &source, issues, writer) {
            Ok(()) => decision.outcome,
            Err(e) => {
                lines.push(format!("{what}: could not be done: {e}"));
                continue;
            }
        };
        let said = decision.reply.unwrap_or_default();
        match outcome {
            Outcome::Done => lines.push(format!("{what}: {said}")),
            Outcome::Refused | Outcome::NotAllowed | Outcome::Help => {
                lines.push(format!("{what}: refused: {said}"))
            }
        }
    }
    Ok(lines)
}

//! What `doctor` says of what the loop learned (issue 52): the host snapshot the last tick took
//! (and whether a tick would take it again), every program the checks name that the agents'
//! sandbox did not have, and each failure lesson in force with how to clear it. Read from the
//! state as the checkout holds it: no probe, no network.
//!
//! Not for: the rules (`engine::learned`), the words (`report::learned`).

use super::Check;
use crate::engine::learned::host::configured_programs;
use crate::report::learned::{host_line, lesson_views};
use crate::tick::{Context, ContextOptions};

/// The checks, or none when the state cannot be read here (the `state` check says why).
pub fn checks(options: &ContextOptions) -> Vec<Check> {
    let Ok(ctx) = Context::load(options) else {
        return Vec::new();
    };
    let Ok(learned) = ctx.read_fetched_store().and_then(|s| Ok(s.learned()?)) else {
        return Vec::new();
    };
    let host = learned.host.as_ref();
    let freshness = crate::tick::status::host_freshness(&ctx, host);
    let mut out = vec![Check::ok("host", host_line(host, freshness))];
    if let Some(h) = host {
        for program in configured_programs(&ctx.config) {
            if h.lacks(&program) {
                out.push(Check::warn(
                    "host",
                    format!("`{program}`, which the checks (`verify:`) run, was not found in the agents' sandbox"),
                    "install it where the runner runs (on the agents' PATH), or change the checks in .opentiger.yml to a tool the sandbox has",
                ));
            }
        }
    }
    for view in lesson_views(&learned.lessons, host, ctx.now, &ctx.config.context) {
        out.push(Check::warn(
            "lesson",
            format!(
                "{} ({}×, last {}): {}",
                view.id, view.count, view.last_seen, view.fact
            ),
            format!(
                "agents are told this until {} unless seen again; once its cause is fixed: `opentiger lessons clear {}`",
                view.expires_at, view.id
            ),
        ));
    }
    out
}

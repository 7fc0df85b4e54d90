//! `opentiger pause` / `opentiger resume` (issue 40): the repository-wide pause in every mode.
//! It is the state change the dashboard's `/opentiger pause` makes in github mode — recorded in
//! the state store (on the state branch there, in the state file locally): while it stands, a
//! tick claims no new run and starts no planner; runs under way finish and reviews go on.
//! Not for: honouring the pause (the engine's plan: `engine::dispatch::hold_for_pause`), or the
//! dashboard's command (`engine::commands`, read and applied by `tick::people`).

use super::{CmdResult, Context};
use crate::store::RepoPause;

/// Who pauses from this machine: the login name (as the dashboard names a commenter), else
/// `local`.
fn who() -> String {
    ["USER", "LOGNAME"]
        .iter()
        .find_map(|k| std::env::var(k).ok().filter(|v| !v.trim().is_empty()))
        .unwrap_or_else(|| "local".to_string())
}

pub fn pause(ctx: &Context, reason: Option<&str>) -> CmdResult {
    let line = ctx.write_state("pause", |store| {
        if let Some(p) = store.repo_pause()? {
            return Ok(format!(
                "already paused (by @{} since {}): nothing changed; `opentiger resume` lets work start again",
                p.by, p.at
            ));
        }
        store.set_repo_pause(Some(&RepoPause {
            by: who(),
            at: ctx.now,
            comment: Some(match reason {
                Some(why) => format!("opentiger pause: {why}"),
                None => "opentiger pause".to_string(),
            }),
        }))?;
        Ok(
            "paused: ticks claim no new run and start no planner; runs under way finish. `opentiger resume` lets work start again"
                .to_string(),
        )
    })?;
    outln!("{line}");
    Ok(())
}

pub fn resume(ctx: &Context) -> CmdResult {
    let line = ctx.write_state("resume", |store| {
        let Some(p) = store.repo_pause()? else {
            return Ok("not paused: nothing changed".to_string());
        };
        store.set_repo_pause(None)?;
        Ok(format!(
            "resumed (paused by @{} since {}): the next tick claims work again",
            p.by, p.at
        ))
    })?;
    outln!("{line}");
    Ok(())
}

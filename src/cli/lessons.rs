//! `opentiger lessons [--json]`: the host snapshot and the failure lessons in force (issue 52);
//! `opentiger lessons clear <id>|--all`: a person says a lesson no longer holds (its cause
//! fixed), so no agent is told it again. Not for: which lessons are in force or their words
//! (`engine::learned`, `report::learned`).

use clap::{Args, Subcommand};

use super::{CmdResult, Context, Failure};
use crate::report::learned::{host_line, lesson_views, lessons_text};
use crate::store::Cleared;

#[derive(Args, Debug)]
pub struct LessonsArgs {
    #[command(subcommand)]
    pub command: Option<LessonsCommand>,
    /// Machine-readable output.
    #[arg(long)]
    pub json: bool,
}

#[derive(Subcommand, Debug)]
pub enum LessonsCommand {
    /// Remove a lesson once its cause is fixed, by its id (or a unique prefix of 4 or more
    /// characters), or every one with --all.
    Clear {
        /// The lesson's id (`opentiger lessons` lists them), or a unique prefix of 4 or more
        /// characters.
        #[arg(required_unless_present = "all")]
        id: Option<String>,
        /// Every lesson.
        #[arg(long, conflicts_with = "id")]
        all: bool,
    },
}

impl LessonsArgs {
    /// Only `clear` writes the state.
    pub fn writes(&self) -> bool {
        self.command.is_some()
    }
}

pub fn run(ctx: &Context, args: &LessonsArgs) -> CmdResult {
    match &args.command {
        None => list(ctx, args.json),
        Some(LessonsCommand::Clear { id, .. }) => clear(ctx, id.as_deref()),
    }
}

fn list(ctx: &Context, json: bool) -> CmdResult {
    let store = ctx.read_store()?;
    let learned = store.learned()?;
    let host = learned.host.as_ref();
    let views = lesson_views(&learned.lessons, host, ctx.now, &ctx.config.context);
    let freshness = crate::tick::status::host_freshness(ctx, host);
    if json {
        let value = serde_json::json!({
            "host": host,
            "host_state": freshness.word(),
            "lessons": views,
        });
        let text =
            serde_json::to_string_pretty(&value).map_err(|e| Failure::tick(e.to_string()))?;
        outln!("{text}");
    } else {
        out!("{}", lessons_text(&host_line(host, freshness), &views));
    }
    Ok(())
}

fn clear(ctx: &Context, id: Option<&str>) -> CmdResult {
    let cleared = ctx.write_state("lessons clear", |store| Ok(store.clear_lessons(id)?))?;
    match cleared {
        Cleared::All(n) => outln!("cleared {n} lesson(s)"),
        Cleared::One(lesson) => outln!(
            "cleared lesson {}: {}",
            lesson.id,
            crate::engine::learned::inject::fact(&lesson.signature, None)
        ),
        Cleared::None => {
            return Err(Failure::usage(format!(
                "no lesson `{}`\n  fix: `opentiger lessons` lists the ids",
                id.unwrap_or_default()
            )))
        }
    }
    Ok(())
}

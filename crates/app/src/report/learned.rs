//! What the loop learned, for people (issue 52): the host snapshot in one line (`status -v`,
//! `doctor`, `opentiger lessons`) and the lessons in force, each with its id, how often and
//! when it was seen, when it expires, the fact it implies and how to clear it.
//!
//! Not for: which lessons are in force or what a fact says (`engine::learned`), reading the
//! state or probing (`tick`, `cli`).

use std::fmt::Write as _;

use serde::Serialize;

use crate::config::ContextConfig;
use crate::engine::learned::book::in_force;
use crate::engine::learned::host::Freshness;
use crate::engine::learned::inject::fact;
use crate::model::learned::{HostSnapshot, Lesson, Signature};
use crate::time::{Timestamp, HOUR};

/// One lesson in force, as `opentiger lessons --json` shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LessonView {
    pub id: String,
    pub kind: &'static str,
    pub signature: Signature,
    pub count: u32,
    pub first_seen: Timestamp,
    pub last_seen: Timestamp,
    /// When it ends unless it is seen again.
    pub expires_at: Timestamp,
    /// What it implies, as agents are told.
    pub fact: String,
}

/// The lessons in force at `now`, the most recently seen first.
pub fn lesson_views(
    lessons: &[Lesson],
    host: Option<&HostSnapshot>,
    now: Timestamp,
    context: &ContextConfig,
) -> Vec<LessonView> {
    let mut views: Vec<LessonView> = in_force(lessons, host, now, context)
        .into_iter()
        .map(|l| LessonView {
            kind: l.signature.kind(),
            fact: fact(&l.signature, host),
            expires_at: l.last_seen.plus(i64::from(context.lesson_ttl_hours) * HOUR),
            id: l.id,
            signature: l.signature,
            count: l.count,
            first_seen: l.first_seen,
            last_seen: l.last_seen,
        })
        .collect();
    views.sort_by(|a, b| b.last_seen.cmp(&a.last_seen).then(a.id.cmp(&b.id)));
    views
}

/// The snapshot in one line: `Debian GNU/Linux 12, Linux 6.8.0, x86_64; 9 tools found (node
/// 20.11.1, npm 10.2.4, …), 3 not (pnpm, yarn, go); taken … (fresh)`.
pub fn host_line(host: Option<&HostSnapshot>, freshness: Freshness) -> String {
    let Some(h) = host else {
        return "no host snapshot yet: the next tick that runs an agent probes its sandbox"
            .to_string();
    };
    let found: Vec<String> = h
        .tools
        .iter()
        .filter(|t| t.present)
        .map(|t| t.label())
        .collect();
    let missing: Vec<&str> = h
        .tools
        .iter()
        .filter(|t| !t.present)
        .map(|t| t.name.as_str())
        .collect();
    format!(
        "{}, {}, {}{}; {} tool(s) found ({}), {} not ({}); taken {} in {} ms ({})",
        h.os,
        h.kernel,
        h.arch,
        h.shell
            .as_deref()
            .map(|s| format!(", /bin/sh is {s}"))
            .unwrap_or_default(),
        found.len(),
        found.join(", "),
        missing.len(),
        missing.join(", "),
        h.taken_at,
        h.probe_ms,
        freshness.word()
    )
}

/// One line per lesson: `a1b2c3d4e5f6  missing_command  3×  last … (expires …): <fact>`.
pub fn lesson_lines(views: &[LessonView]) -> Vec<String> {
    views
        .iter()
        .map(|v| {
            format!(
                "{}  {}  {}×  last {} (expires {}): {}",
                v.id, v.kind, v.count, v.last_seen, v.expires_at, v.fact
            )
        })
        .collect()
}

/// `opentiger lessons` for people.
pub fn lessons_text(host: &str, views: &[LessonView]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Host: {host}");
    if views.is_empty() {
        let _ = writeln!(out, "Lessons: none in force");
        return out;
    }
    let _ = writeln!(out, "Lessons ({} in force, newest first):", views.len());
    for line in lesson_lines(views) {
        let _ = writeln!(out, "  {line}");
    }
    let _ = writeln!(
        out,
        "Clear one once its cause is fixed: `opentiger lessons clear <id>` (or `--all`); it also ends when a later run contradicts it."
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::learned::ToolFact;

    #[test]
    fn lessons_and_the_host_read_for_people() {
        let signature = Signature::MissingCommand {
            program: Some("pnpm".into()),
            command: "pnpm test".into(),
        };
        let lesson = Lesson {
            id: signature.id(),
            signature,
            count: 3,
            first_seen: Timestamp(0),
            last_seen: Timestamp(HOUR),
        };
        let context = ContextConfig::default();
        let expired = Lesson {
            last_seen: Timestamp(0),
            id: "old".into(),
            ..lesson.clone()
        };
        let views = lesson_views(
            &[expired, lesson.clone()],
            None,
            Timestamp(24 * HOUR),
            &context,
        );
        assert_eq!(views.len(), 1);
        assert_eq!(views[0].expires_at, Timestamp(25 * HOUR));
        let text = lessons_text("h", &views);
        assert!(
            text.contains(&format!("{}  missing_command  3×", lesson.id)),
            "{text}"
        );
        assert!(text.contains("pnpm is not installed in the sandbox (`pnpm test` cannot start)"));
        assert!(text.contains("`opentiger lessons clear <id>`"));
        assert!(lessons_text("h", &[]).contains("none in force"));

        let host = HostSnapshot {
            os: "Debian 12".into(),
            kernel: "Linux 6.8".into(),
            arch: "x86_64".into(),
            tools: vec![
                ToolFact {
                    name: "npm".into(),
                    present: true,
                    version: Some("10.2.4".into()),
                },
                ToolFact {
                    name: "pnpm".into(),
                    present: false,
                    version: None,
                },
            ],
            ..Default::default()
        };
        let line = host_line(Some(&host), Freshness::Fresh);
        assert!(
            line.starts_with(
                "Debian 12, Linux 6.8, x86_64; 1 tool(s) found (npm 10.2.4), 1 not (pnpm)"
            ),
            "{line}"
        );
        assert!(line.ends_with("(fresh)"));
        assert!(host_line(None, Freshness::Missing).starts_with("no host snapshot yet"));
    }
}

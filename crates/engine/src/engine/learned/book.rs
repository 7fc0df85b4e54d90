//! The repository's failure lessons as a small book (spec §1.13: at most 12, each living 24
//! hours): what one finished run teaches ([`observe`]: the classified signature of its failed
//! check, the hosts refused it, the commands that passed), and how the book changes with it
//! ([`learn`]: counted, contradicted, expired, bounded). [`in_force`] is what a prompt and
//! `opentiger lessons` read. Pure: `now` and the configuration come in as values.
//!
//! Not for: classifying one failure (`engine::classify::lesson`), what a prompt says of a
//! lesson (`inject.rs`), storing the book (`store::learned`).

use crate::config::{Config, ContextConfig};
use crate::engine::classify::lesson::{admit, lesson_of, program_of, refusal_lessons};
use crate::model::checks::CommandReport;
use crate::model::learned::{HostSnapshot, Lesson, Signature};
use crate::model::network::Refusal;
use crate::model::Task;
use crate::time::{Timestamp, HOUR};

/// What one finished run says about the host.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Observation {
    /// The signatures of its failure (its failed check's, the hosts refused it).
    pub failed: Vec<Signature>,
    /// The commands that passed: each contradicts what was learned of it.
    pub passed: Vec<String>,
}

/// Every command text a run of `task` may report: its own commands, `verify.commands`,
/// `verify.by_role` and `verify.when_changed`, each `&&` piece apart (as they run).
pub fn planned_texts(task: &Task, config: &Config) -> Vec<String> {
    let verify = &config.verify;
    task.commands
        .iter()
        .chain(&verify.commands)
        .chain(verify.by_role.values().flatten())
        .chain(verify.when_changed.iter().flat_map(|w| &w.commands))
        .flat_map(|c| c.split("&&").map(|p| p.trim().to_string()))
        .filter(|p| !p.is_empty())
        .collect()
}

/// What a run whose checks reported `reports` (in order, the failed one last) and whose agent
/// and checks were refused `refused` teaches: its failed check's signature, else the hosts
/// refused it. `planned`: the commands it may name
/// ([`planned_texts`]); `tools`: the programs the checks name. A run that succeeded teaches
/// only what passed.
pub fn observe(
    success: bool,
    reports: &[CommandReport],
    refused: &[Refusal],
    planned: &[String],
    tools: &[String],
) -> Observation {
    let passed = reports
        .iter()
        .filter(|r| r.passed())
        .map(|r| r.command.clone())
        .collect();
    if success {
        return Observation {
            failed: Vec::new(),
            passed,
        };
    }
    let mut failed: Vec<Signature> = reports
        .iter()
        .filter(|r| !r.passed())
        .filter_map(|r| lesson_of(r, tools))
        .filter_map(|s| admit(s, planned))
        .collect();
    // A refused host is the lesson when nothing else explains the failure: a check that failed
    // for a missing program may have been refused on its way (npm's update check) for nothing.
    if failed.is_empty() {
        failed = refusal_lessons(refused)
            .into_iter()
            .filter_map(|s| admit(s, planned))
            .collect();
    }
    Observation { failed, passed }
}

/// How the book changes: the lessons to write (new or counted again), the ids to remove.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BookChange {
    pub upsert: Vec<Lesson>,
    pub remove: Vec<String>,
}

impl BookChange {
    pub fn is_empty(&self) -> bool {
        self.upsert.is_empty() && self.remove.is_empty()
    }
}

/// The book after `seen` at `now`: expired and contradicted lessons go, each signature seen is
/// counted (or added), and past `context.max_lessons` the lessons seen longest ago go.
pub fn learn(
    book: &[Lesson],
    seen: &Observation,
    host: Option<&HostSnapshot>,
    now: Timestamp,
    context: &ContextConfig,
) -> BookChange {
    let mut change = BookChange::default();
    let mut kept: Vec<Lesson> = Vec::new();
    for lesson in book {
        if expired(lesson, now, context) || contradicted(lesson, &seen.passed, host) {
            change.remove.push(lesson.id.clone());
        } else {
            kept.push(lesson.clone());
        }
    }
    let mut counted: Vec<String> = Vec::new();
    for signature in &seen.failed {
        let id = signature.id();
        if counted.contains(&id) {
            continue;
        }
        counted.push(id.clone());
        match kept.iter_mut().find(|l| l.id == id) {
            Some(lesson) => {
                lesson.count = lesson.count.saturating_add(1);
                lesson.last_seen = now;
                change.upsert.push(lesson.clone());
            }
            None => {
                let lesson = Lesson {
                    id,
                    signature: signature.clone(),
                    count: 1,
                    first_seen: now,
                    last_seen: now,
                };
                kept.push(lesson.clone());
                change.upsert.push(lesson);
            }
        }
    }
    let max = usize::try_from(context.max_lessons).unwrap_or(usize::MAX);
    if kept.len() > max {
        // The most recently seen stay; among equals the most counted, then by id.
        kept.sort_by(|a, b| {
            b.last_seen
                .cmp(&a.last_seen)
                .then(b.count.cmp(&a.count))
                .then(a.id.cmp(&b.id))
        });
        for lesson in kept.drain(max..) {
            change.upsert.retain(|l| l.id != lesson.id);
            if book.iter().any(|l| l.id == lesson.id) {
                change.remove.push(lesson.id);
            }
        }
    }
    change
}

/// The lessons that hold at `now`: not expired, not contradicted by the snapshot.
pub fn in_force(
    book: &[Lesson],
    host: Option<&HostSnapshot>,
    now: Timestamp,
    context: &ContextConfig,
) -> Vec<Lesson> {
    book.iter()
        .filter(|l| !expired(l, now, context) && !contradicted(l, &[], host))
        .cloned()
        .collect()
}

/// spec §1.13: a lesson lives `context.lesson_ttl_hours` after it was last seen.
pub fn expired(lesson: &Lesson, now: Timestamp, context: &ContextConfig) -> bool {
    now.minus(lesson.last_seen) >= i64::from(context.lesson_ttl_hours) * HOUR
}

/// Whether a later fact says otherwise: its command passed since, or — a missing program —
/// a command of that program passed, or a snapshot taken after it found the program.
fn contradicted(lesson: &Lesson, passed: &[String], host: Option<&HostSnapshot>) -> bool {
    if lesson
        .signature
        .command()
        .is_some_and(|c| passed.iter().any(|p| p == c))
    {
        return true;
    }
    match &lesson.signature {
        Signature::MissingCommand {
            program: Some(program),
            ..
        } => {
            passed
                .iter()
                .any(|p| program_of(p).as_deref() == Some(program.as_str()))
                || host.is_some_and(|h| h.taken_at > lesson.last_seen && h.has(program))
        }
        Signature::MissingCommand { program: None, .. }
        | Signature::MissingScript { .. }
        | Signature::MissingDependencies { .. }
        | Signature::DaemonUnreachable { .. }
        | Signature::AuthOrEnvironment { .. }
        | Signature::NetworkRefused { .. } => false,
    }
}

#[cfg(test)]
#[path = "book_tests.rs"]
mod tests;

//! What a prompt carries of what the loop learned (spec §2.3: "Host Context" ≤ 550 characters,
//! "Failure Hints" ≤ 350, together ≤ 900; `context.*_chars`): the host section (the system,
//! then the tools the task's commands name, then the other tools found, then those not found)
//! and the failure hints (the lessons about the task's commands first, then about its
//! programs, then the host-wide ones; most counted first), each cut whole at an entry, so a
//! prompt never grows with the state. Every word here is opentiger's own or a lesson's
//! (already classified and checked): no failing program's output reaches a prompt this way.
//!
//! Not for: which lessons are in force (`book.rs`), rendering the prompt (`prompt`).

use crate::config::ContextConfig;
use crate::engine::classify::lesson::program_of;
use crate::model::learned::{
    HostSnapshot, Lesson, Mismatch, Signature, ALTERNATIVES, COMMON_TOOLS,
};

/// What a run's task will run: its commands as its checks plan them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Scope {
    pub commands: Vec<String>,
}

impl Scope {
    /// The programs its commands run, each once.
    pub fn programs(&self) -> Vec<String> {
        let mut out: Vec<String> = Vec::new();
        for p in self.commands.iter().filter_map(|c| program_of(c)) {
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }
}

/// The two sections of a prompt, each empty when there is nothing to say (or no room).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Sections {
    pub host: String,
    pub hints: String,
}

/// The sections of a worker's prompt (and a tester's, a docser's, an AutoFix's): the hints
/// first within `min(hints_chars, total_chars)`, the host in what the total leaves.
pub fn sections(
    host: Option<&HostSnapshot>,
    lessons: &[Lesson],
    scope: &Scope,
    context: &ContextConfig,
) -> Sections {
    let total = context.total_chars as usize;
    let hints = hints(
        lessons,
        host,
        scope,
        (context.hints_chars as usize).min(total),
    );
    let left = total.saturating_sub(hints.chars().count());
    // The programs the task runs, then those its lessons are about, lead the host's lists.
    let mut named = scope.programs();
    for lesson in ranked(lessons, scope) {
        if let Signature::MissingCommand {
            program: Some(p), ..
        } = &lesson.signature
        {
            if !named.contains(p) {
                named.push(p.clone());
            }
        }
    }
    let host = host.map_or_else(String::new, |h| {
        host_section(h, &named, (context.host_chars as usize).min(left))
    });
    Sections { host, hints }
}

/// The host section alone (the judge, the planner): `context.host_chars`, within the total.
pub fn host_only(host: Option<&HostSnapshot>, scope: &Scope, context: &ContextConfig) -> String {
    let budget = context.host_chars.min(context.total_chars) as usize;
    host.map_or_else(String::new, |h| host_section(h, &scope.programs(), budget))
}

/// The host section within `budget` characters: the system line, then the tools — `named`
/// first, then those found, then those not — whole entries only; empty when not even the
/// system line fits.
pub fn host_section(host: &HostSnapshot, named: &[String], budget: usize) -> String {
    let mut system = format!("System: {}, {}, {}", host.os, host.kernel, host.arch);
    if let Some(shell) = &host.shell {
        system.push_str(&format!("; /bin/sh is {shell}"));
    }
    system.push_str(". Probed inside your sandbox; no network but what the runner allows.");
    if system.chars().count() > budget {
        return String::new();
    }
    // Most useful first: what the task's commands run, then what is found, then what is not.
    let mut order: Vec<&str> = named.iter().map(String::as_str).collect();
    let rest = host.tools.iter().map(|t| t.name.as_str());
    let (found, missing): (Vec<&str>, Vec<&str>) = rest.partition(|t| host.has(t));
    for t in found.into_iter().chain(missing) {
        if !order.contains(&t) {
            order.push(t);
        }
    }
    let mut found: Vec<String> = Vec::new();
    let mut missing: Vec<String> = Vec::new();
    let mut text = system.clone();
    for name in order {
        let Some(tool) = host.tool(name) else {
            continue;
        };
        let (mut f, mut m) = (found.clone(), missing.clone());
        if tool.present {
            f.push(tool.label());
        } else {
            m.push(tool.name.clone());
        }
        let candidate = render_host(&system, &f, &m);
        if candidate.chars().count() > budget {
            break;
        }
        (found, missing, text) = (f, m, candidate);
    }
    text
}

fn render_host(system: &str, found: &[String], missing: &[String]) -> String {
    let mut out = system.to_string();
    if !found.is_empty() {
        out.push_str(&format!("\nInstalled: {}.", found.join(", ")));
    }
    if !missing.is_empty() {
        out.push_str(&format!(
            "\nNot installed or not working (do not use): {}.",
            missing.join(", ")
        ));
    }
    out
}

/// How much a lesson matters to a task: its command is one the task runs (3), it is about a
/// program the task runs (2), it is about the whole host (1); `None`: about another command.
fn relevance(lesson: &Lesson, scope: &Scope, programs: &[String]) -> Option<u8> {
    let sig = &lesson.signature;
    if sig
        .command()
        .is_some_and(|c| scope.commands.iter().any(|s| s == c))
    {
        return Some(3);
    }
    match sig {
        Signature::MissingCommand { program, command } => {
            let runs = |p: &str| programs.iter().any(|q| q == p);
            let about = program.as_deref().is_some_and(runs)
                || program_of(command).as_deref().is_some_and(runs);
            Some(if about { 2 } else { 1 })
        }
        Signature::NetworkRefused { .. } => Some(1),
        Signature::MissingScript { .. }
        | Signature::MissingDependencies { .. }
        | Signature::DaemonUnreachable { .. }
        | Signature::AuthOrEnvironment { .. } => None,
    }
}

/// The lessons that matter to `scope`, most useful first.
pub fn ranked<'a>(lessons: &'a [Lesson], scope: &Scope) -> Vec<&'a Lesson> {
    let programs = scope.programs();
    let mut scored: Vec<(u8, &Lesson)> = lessons
        .iter()
        .filter_map(|l| relevance(l, scope, &programs).map(|r| (r, l)))
        .collect();
    scored.sort_by(|(ra, a), (rb, b)| {
        rb.cmp(ra)
            .then(b.count.cmp(&a.count))
            .then(b.last_seen.cmp(&a.last_seen))
            .then(a.id.cmp(&b.id))
    });
    scored.into_iter().map(|(_, l)| l).collect()
}

/// The failure hints within `budget` characters, one line per lesson, whole lines only.
pub fn hints(
    lessons: &[Lesson],
    host: Option<&HostSnapshot>,
    scope: &Scope,
    budget: usize,
) -> String {
    let mut out = String::new();
    for lesson in ranked(lessons, scope) {
        let line = format!(
            "- {} (seen {}×)",
            fact(&lesson.signature, host),
            lesson.count
        );
        let sep = usize::from(!out.is_empty());
        if out.chars().count() + sep + line.chars().count() > budget {
            break;
        }
        if sep == 1 {
            out.push('\n');
        }
        out.push_str(&line);
    }
    out
}

/// The fact a signature implies, in opentiger's words: what is missing or refused, and what
/// the sandbox has instead.
pub fn fact(signature: &Signature, host: Option<&HostSnapshot>) -> String {
    match signature {
        Signature::MissingCommand {
            program: Some(p),
            command,
        } => {
            let how = if program_of(command).as_deref() == Some(p.as_str()) {
                format!("`{command}` cannot start")
            } else {
                format!("`{command}` runs it")
            };
            let instead = alternative(p, host)
                .map(|a| format!("; the sandbox has {a}: use that"))
                .unwrap_or_default();
            format!("{p} is not installed in the sandbox ({how}){instead}")
        }
        Signature::MissingCommand {
            program: None,
            command,
        } => format!("`{command}` runs a program that is not installed in the sandbox"),
        Signature::MissingScript { command } => {
            format!("`{command}` names a script, target or file that does not exist")
        }
        Signature::MissingDependencies { command } => {
            format!("`{command}` fails: its packages are not installed in the workspace")
        }
        Signature::DaemonUnreachable { command, service } => format!(
            "`{command}` needs {}, which the sandbox cannot reach",
            service.as_deref().unwrap_or("a service")
        ),
        Signature::AuthOrEnvironment { command, what } => match what {
            Mismatch::Auth => {
                format!("`{command}` is refused for credentials, which the sandbox does not hold")
            }
            Mismatch::Runtime => {
                format!("`{command}` needs another version of its runtime than the sandbox has")
            }
            Mismatch::Variable => {
                format!("`{command}` needs an environment variable the sandbox does not set")
            }
        },
        Signature::NetworkRefused { host: name, by } => {
            format!("the sandbox refuses `{name}` (for the {by}): work without it")
        }
    }
}

/// A tool of `program`'s group the snapshot found (`npm 10.2.4` for `pnpm`).
fn alternative(program: &str, host: Option<&HostSnapshot>) -> Option<String> {
    let host = host?;
    ALTERNATIVES
        .iter()
        .find(|group| group.contains(&program))?
        .iter()
        .filter(|t| **t != program)
        .find_map(|t| host.named(t))
}

/// The tools a snapshot or the lessons say are missing: the planner proposes no command of
/// these. The table's order, then the lessons'.
pub fn missing_tools(host: Option<&HostSnapshot>, lessons: &[Lesson]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    if let Some(h) = host {
        out.extend(
            h.tools
                .iter()
                .filter(|t| !t.present)
                .map(|t| t.name.clone()),
        );
    }
    for lesson in lessons {
        if let Signature::MissingCommand {
            program: Some(p), ..
        } = &lesson.signature
        {
            if !out.contains(p) && host.is_none_or(|h| !h.has(p)) {
                out.push(p.clone());
            }
        }
    }
    // Absent common tools are many; the planner needs the ones it would reach for.
    out.sort_by_key(|t| {
        COMMON_TOOLS
            .iter()
            .position(|c| c == t)
            .unwrap_or(usize::MAX)
    });
    out
}

#[cfg(test)]
#[path = "inject_tests.rs"]
mod tests;

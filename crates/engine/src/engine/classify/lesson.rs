//! The lesson a failed check teaches (issue 52): its classified signature — a program missing
//! from the sandbox, a missing script, dependencies not installed, a service out of reach, an
//! authentication or environment mismatch, a host the proxy refused. The verification
//! rules of [`super::verification`] are read first hand; the output is only ever *read*: what
//! a lesson holds is opentiger's own word for the failure, the command as its run's plan named
//! it (checked by [`admit`]), and a tool or service name from opentiger's own tables.
//!
//! Not for: keeping lessons, expiring or ranking them, or their wording in a prompt
//! (`engine::learned`); running the checks (`runner::checks`).

use super::verification::{
    is_missing_package_output, is_missing_tool_output, is_runtime_mismatch_output,
};
use super::*;
use crate::model::checks::{CommandReport, Unstarted};
use crate::model::learned::{Mismatch, Signature, COMMON_TOOLS, NAMED_TOOLS};
use crate::model::network::{host_name, Refusal};

/// The longest command a lesson names (a longer one is not a configuration's).
const COMMAND_MAX: usize = 200;
/// Hosts one run's refusals add as lessons, the checks' first: an agent choosing thousands of
/// names must not push every other lesson out.
const REFUSALS_PER_RUN: usize = 2;

/// The lesson of one command that failed, if its failure says something about the host.
/// `tools`: the programs whose names a lesson may take from the output besides
/// [`COMMON_TOOLS`] and [`NAMED_TOOLS`] (the programs the checks name).
pub fn lesson_of(report: &CommandReport, tools: &[String]) -> Option<Signature> {
    if report.passed() || report.timed_out {
        return None;
    }
    let command = report.command.clone();
    match report.unstarted {
        Some(Unstarted::NotFound | Unstarted::NotExecutable) => {
            return Some(match program_of(&command) {
                Some(program) => Signature::MissingCommand {
                    program: Some(program),
                    command,
                },
                // `./check.sh`: a file of the repository, not a tool of the host.
                None => Signature::MissingScript { command },
            });
        }
        Some(Unstarted::Other) => return None,
        None => {}
    }
    let out = report.tail.to_lowercase();
    if let Some(tool) = tool_not_found(&out, tools) {
        return Some(Signature::MissingCommand {
            program: Some(tool),
            command,
        });
    }
    match verification_failure_code(&command, &report.tail, None) {
        FailureCode::VerificationCommandMissingScript
        | FailureCode::VerificationCommandMissingMakeTarget => {
            Some(Signature::MissingScript { command })
        }
        FailureCode::SetupOrBootstrapIssue => Some(setup_lesson(&out, command)),
        _ => other_lesson(&out, command),
    }
}

/// What a setup failure (spec §3.2) says: a runtime of another version, packages not
/// installed, or a program missing that no table names.
fn setup_lesson(out: &str, command: String) -> Signature {
    if is_runtime_mismatch_output(out) {
        Signature::AuthOrEnvironment {
            command,
            what: Mismatch::Runtime,
        }
    } else if is_missing_tool_output(out)
        && !is_missing_package_output(out)
        && !contains_any(out, &["missing dependency", "cannot find dependency"])
    {
        Signature::MissingCommand {
            program: None,
            command,
        }
    } else {
        Signature::MissingDependencies { command }
    }
}

/// Services a check may need, by the words and ports their clients print when refused.
#[rustfmt::skip]
const SERVICES: &[(&str, &[&str])] = &[
    ("docker", &["docker daemon", "docker.sock", "dockerd"]),
    ("postgres", &[":5432", "postgres", "postgresql", "psql"]),
    ("mysql", &[":3306", "mysql", "mariadb"]),
    ("redis", &[":6379", "redis"]),
    ("mongodb", &[":27017", "mongodb", "mongo"]),
];

/// A check that ran and failed: a service refused, credentials refused, a runtime or variable
/// missing; a plain test failure teaches nothing about the host.
fn other_lesson(out: &str, command: String) -> Option<Signature> {
    #[rustfmt::skip]
    const REFUSED: &[&str] = &[
        "connection refused", "econnrefused", "could not connect to server",
        "cannot connect to the docker daemon", "is the docker daemon running",
        "is the server running",
    ];
    if contains_any(out, REFUSED) {
        let service = SERVICES
            .iter()
            .find(|(_, words)| words.iter().any(|w| out.contains(w)))
            .map(|(name, _)| (*name).to_string());
        return Some(Signature::DaemonUnreachable { command, service });
    }
    #[rustfmt::skip]
    const AUTH: &[&str] = &[
        "authentication failed", "authentication required", "401 unauthorized",
        "permission denied (publickey)", "could not read username", "invalid credentials",
        "not logged in", "login required", "e401", "bad credentials",
    ];
    if contains_any(out, AUTH) {
        return Some(Signature::AuthOrEnvironment {
            command,
            what: Mismatch::Auth,
        });
    }
    if is_runtime_mismatch_output(out) {
        return Some(Signature::AuthOrEnvironment {
            command,
            what: Mismatch::Runtime,
        });
    }
    let variable = (out.contains("environment variable") || out.contains("_url"))
        && contains_any(
            out,
            &[
                "not set",
                "is required",
                "is missing",
                "missing",
                "undefined",
            ],
        );
    variable.then_some(Signature::AuthOrEnvironment {
        command,
        what: Mismatch::Variable,
    })
}

/// A tool of [`COMMON_TOOLS`], [`NAMED_TOOLS`] or `tools` the output says was not found (`sh: 1: pnpm: not
/// found`, `bash: go: command not found`, `spawn yarn ENOENT`, `env: 'node': No such file`),
/// the one named first; its name as the table spells it.
fn tool_not_found(out: &str, tools: &[String]) -> Option<String> {
    let names = COMMON_TOOLS
        .iter()
        .chain(NAMED_TOOLS)
        .copied()
        .chain(tools.iter().map(String::as_str));
    let mut first: Option<(usize, &str)> = None;
    for tool in names {
        let tool_lower = tool.to_lowercase();
        let patterns = [
            format!("{tool_lower}: command not found"),
            format!("{tool_lower}: not found"),
            format!("command not found: {tool_lower}"),
            format!("spawn {tool_lower} enoent"),
            format!("'{tool_lower}': no such file or directory"),
            format!("{tool_lower}: no such file or directory"),
        ];
        for pattern in &patterns {
            let at = out.match_indices(pattern.as_str()).find_map(|(at, _)| {
                // `npm` is not found inside `pnpm: not found`.
                let name_at = at + pattern.find(tool_lower.as_str()).unwrap_or(0);
                let before = out[..name_at].chars().next_back();
                let bounded = before.is_none_or(|c| !(c.is_alphanumeric() || "_-.".contains(c)));
                bounded.then_some(at)
            });
            if let Some(at) = at {
                if first.is_none_or(|(seen, _)| at < seen) {
                    first = Some((at, tool));
                }
            }
        }
    }
    first.map(|(_, tool)| tool.to_string())
}

/// The lessons of the hosts the proxy refused a failed run (its checks' first), at most
/// [`REFUSALS_PER_RUN`]; the count of other hosts is not one.
pub fn refusal_lessons(refused: &[Refusal]) -> Vec<Signature> {
    // A CLI's own background traffic (issue 50) is no fact of the task's work.
    let mut named: Vec<&Refusal> = refused
        .iter()
        .filter(|r| !r.is_others() && r.own.is_none())
        .collect();
    named.sort_by_key(|r| r.by != "checks");
    named
        .into_iter()
        .take(REFUSALS_PER_RUN)
        .map(|r| Signature::NetworkRefused {
            host: host_name(&r.allow_entry()),
            by: r.by.clone(),
        })
        .collect()
}

/// `signature` as a lesson may hold it, or `None`: its command must be one the run's plan
/// named (`commands`), every name a program name, its host as the proxy writes hosts, its
/// allow list a key. What a result file (`apply`) says about a run is checked here too.
pub fn admit(signature: Signature, commands: &[String]) -> Option<Signature> {
    let planned = |c: &str| c.len() <= COMMAND_MAX && commands.iter().any(|p| p == c);
    let ok = match &signature {
        Signature::MissingCommand { program, command } => {
            planned(command) && program.as_deref().is_none_or(is_program_name)
        }
        Signature::MissingScript { command }
        | Signature::MissingDependencies { command }
        | Signature::AuthOrEnvironment { command, .. } => planned(command),
        Signature::DaemonUnreachable { command, service } => {
            planned(command) && service.as_deref().is_none_or(is_program_name)
        }
        Signature::NetworkRefused { host, by } => {
            *host == host_name(host)
                && !host.is_empty()
                && host.len() <= 120
                && !by.is_empty()
                && by.len() <= 24
                && by.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
        }
    };
    ok.then_some(signature)
}

/// The program a command runs, when it is a tool on `PATH` (a bare name): after leading
/// `KEY=value` words, unquoted. `None` for a path (`./check.sh`, a file of the repository).
pub fn program_of(command: &str) -> Option<String> {
    let word = command
        .split_whitespace()
        .find(|w| !is_assignment(w))?
        .trim_matches(|c| c == '"' || c == '\'');
    is_program_name(word).then(|| word.to_string())
}

/// `KEY=value`, as a command's leading words set variables.
fn is_assignment(word: &str) -> bool {
    word.split_once('=').is_some_and(|(key, _)| {
        !key.is_empty()
            && key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
            && !key.as_bytes()[0].is_ascii_digit()
    })
}

/// A program's bare name: letters, digits and `._+-`, at most 40, not starting with `-` or `.`.
pub fn is_program_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 40
        && !name.starts_with(['-', '.'])
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._+-".contains(&b))
}

#[cfg(test)]
#[path = "lesson_tests.rs"]
mod tests;

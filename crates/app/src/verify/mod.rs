//! Verification commands: which ones run after the agent exits, in what order, and what each one
//! is as argv (DESIGN §7; spec seeds/worker.md §7; spec §2.3.2 "Command list" and "Per command").
//!
//! The runner, not the agent, runs them: the task's own `commands`, then `verify.commands`, then
//! `verify.by_role.<role>`, then every `verify.when_changed` rule whose paths match a changed file.
//! Commands run without a shell ([`parse_command`]); denied commands ([`denied_by`]) are refused
//! when the plan is made, before anything runs.
//!
//! Not for: running the commands, timeouts or capturing output (the shell's job), nor deciding what
//! a failure means for the task (the engine's). Unlike the original (spec §8 item 16) there is no
//! "recovery" that skips a failed command: every planned command must pass. Pure: no I/O.
//!
//! Denied commands are a guard rail against an agent's or a planner's mistakes, not a sandbox: a
//! script in the repository can still do anything its user can.

mod entry;
mod parse;

use std::fmt;

use crate::config::VerifyConfig;
use crate::model::Role;
use crate::policy::{Glob, GlobError};

pub use entry::{config_problem, explain};
pub use parse::{parse_command, CommandError, Quote, ShellOperator};

/// One program to run, as argv plus extra environment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommandSpec {
    pub program: String,
    pub args: Vec<String>,
    /// From leading `KEY=value` words, in order.
    pub env: Vec<(String, String)>,
    /// The command as written (one `&&` piece of it), for messages.
    pub text: String,
}

/// The commands to run, in order; the first failure fails verification.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct VerifyPlan {
    pub commands: Vec<PlannedCommand>,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedCommand {
    pub spec: CommandSpec,
    pub source: CommandSource,
}

/// Where a planned command came from (spec §2.3.2 error text: `... [<source>]`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandSource {
    /// The task's own `commands`.
    Task,
    /// `verify.commands`.
    Config,
    /// `verify.by_role.<role>`.
    Role,
    /// A matching `verify.when_changed` rule.
    WhenChanged,
}

impl fmt::Display for CommandSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            CommandSource::Task => "task",
            CommandSource::Config => "config",
            CommandSource::Role => "role",
            CommandSource::WhenChanged => "when_changed",
        })
    }
}

/// Why no plan could be made. Every message names the command, where it is written and the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlanError {
    /// A command matches a denied command.
    Denied {
        /// The piece of the command that would have run.
        command: String,
        /// The denied entry it matched.
        entry: String,
        source: CommandSource,
        /// Where the command is written, for people: "`verify.commands` in .opentiger.yml".
        origin: String,
        /// `entry` is one of [`builtin_denied_commands`], not from `verify.denied_commands`.
        builtin: bool,
    },
    /// A command cannot be run without a shell.
    Invalid {
        command: String,
        source: CommandSource,
        origin: String,
        error: CommandError,
    },
    /// A `verify.when_changed` rule has a bad path pattern.
    InvalidGlob { rule: usize, error: GlobError },
}

impl fmt::Display for PlanError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlanError::Denied {
                command,
                entry,
                origin,
                builtin: true,
                ..
            } => write!(
                f,
                "verification command `{command}` (from {origin}) is denied: it matches `{entry}`, \
                 which is always denied (the runner, not the agent, pushes, and verification \
                 needs neither the network nor root); remove it from {origin}"
            ),
            PlanError::Denied {
                command,
                entry,
                origin,
                builtin: false,
                ..
            } => write!(
                f,
                "verification command `{command}` (from {origin}) is denied: it matches `{entry}` \
                 in `verify.denied_commands` of .opentiger.yml; remove it from {origin}, or \
                 remove `{entry}` from `verify.denied_commands`"
            ),
            PlanError::Invalid { origin, error, .. } => {
                write!(
                    f,
                    "verification command from {origin}: {error}; fix it there"
                )
            }
            PlanError::InvalidGlob { rule, error } => write!(
                f,
                "`verify.when_changed[{rule}].paths` in .opentiger.yml: {error}"
            ),
        }
    }
}

impl std::error::Error for PlanError {}

/// Commands always denied, on top of `verify.denied_commands`. Verification builds and tests; it
/// never needs root (`sudo`, `su`), the network (`curl`, `wget`, `ssh`, `scp`), to push or drop
/// work (the runner, not the agent, pushes; `git push`, `git reset --hard`), or anything that
/// wrecks the machine or the checkout (`rm -rf /`, `chmod 777`, `dd`, `mkfs`, `shutdown`).
pub fn builtin_denied_commands() -> Vec<String> {
    [
        "sudo",
        "su",
        "rm -rf /",
        "rm -rf ~",
        "chmod 777",
        "chmod -R 777",
        "git push",
        "git reset --hard",
        "curl",
        "wget",
        "ssh",
        "scp",
        "dd",
        "mkfs",
        "shutdown",
        "reboot",
    ]
    .map(String::from)
    .to_vec()
}

/// The first entry of `denied` that `spec` matches, if any. An entry is words split on
/// whitespace; it matches when the command's words start with them: `sudo` denies `sudo make`,
/// `rm -rf /` denies `rm -rf / --no-preserve-root` but not `rm -rf build`. The program is also
/// compared by file name, so `sudo` denies `/usr/bin/sudo` (an entry with a `/` in its program must
/// match exactly). Words are compared exactly: `rm -fr /` is not `rm -rf /`. Blank entries match
/// nothing.
pub fn denied_by(spec: &CommandSpec, denied: &[String]) -> Option<String> {
    denied
        .iter()
        .find(|entry| entry_matches(spec, entry))
        .cloned()
}

fn entry_matches(spec: &CommandSpec, entry: &str) -> bool {
    let mut words = entry.split_whitespace();
    let program = match words.next() {
        Some(program) => program,
        None => return false,
    };
    let file_name = spec.program.rsplit('/').next().unwrap_or(&spec.program);
    let program_matches =
        spec.program == program || (!program.contains('/') && file_name == program);
    let rest: Vec<&str> = words.collect();
    program_matches
        && rest.len() <= spec.args.len()
        && rest.iter().zip(&spec.args).all(|(want, arg)| want == arg)
}

/// The commands to run after a `role` task's agent changed `changed_paths`: the task's commands,
/// then `verify.commands`, then `verify.by_role[role]`, then each `verify.when_changed` rule with a
/// path glob matching a changed path. Each entry is split on `&&`; a command already planned
/// (same program, arguments and environment) is dropped, keeping the first.
pub fn plan_commands(
    task_commands: &[String],
    config: &VerifyConfig,
    role: Role,
    changed_paths: &[String],
) -> Result<VerifyPlan, PlanError> {
    let task_origin = "the task's `commands`".to_string();
    let config_origin = "`verify.commands` in .opentiger.yml".to_string();
    let role_origin = format!("`verify.by_role.{role}` in .opentiger.yml");
    let mut lists: Vec<(&[String], CommandSource, String)> = vec![
        (task_commands, CommandSource::Task, task_origin),
        (&config.commands, CommandSource::Config, config_origin),
    ];
    if let Some(commands) = config.by_role.get(&role) {
        lists.push((commands, CommandSource::Role, role_origin));
    }
    for (rule, when) in config.when_changed.iter().enumerate() {
        if rule_applies(&when.paths, changed_paths)
            .map_err(|error| PlanError::InvalidGlob { rule, error })?
        {
            let origin = format!("`verify.when_changed[{rule}].commands` in .opentiger.yml");
            lists.push((&when.commands, CommandSource::WhenChanged, origin));
        }
    }

    let mut plan = VerifyPlan::default();
    for (commands, source, origin) in lists {
        for text in commands {
            for spec in checked(text, source, &origin, &config.denied_commands)? {
                if !plan
                    .commands
                    .iter()
                    .any(|planned| same_command(&planned.spec, &spec))
                {
                    plan.commands.push(PlannedCommand { spec, source });
                }
            }
        }
    }
    Ok(plan)
}

/// One command as the runner plans it: parsed without a shell, each `&&` piece checked against
/// `verify.denied_commands` and the built-in denied commands.
fn checked(
    text: &str,
    source: CommandSource,
    origin: &str,
    denied: &[String],
) -> Result<Vec<CommandSpec>, PlanError> {
    let specs = parse_command(text).map_err(|error| PlanError::Invalid {
        command: text.to_string(),
        source,
        origin: origin.to_string(),
        error,
    })?;
    let builtin = builtin_denied_commands();
    for spec in &specs {
        let hit = match denied_by(spec, denied) {
            Some(entry) => Some((entry, false)),
            None => denied_by(spec, &builtin).map(|entry| (entry, true)),
        };
        if let Some((entry, builtin)) = hit {
            return Err(PlanError::Denied {
                command: spec.text.clone(),
                entry,
                source,
                origin: origin.to_string(),
                builtin,
            });
        }
    }
    Ok(specs)
}

/// Checks `commands` where they enter (config load, `task add`, a plan file) exactly as
/// [`plan_commands`] will when the run ends, so a command that cannot run is refused before any
/// agent runs. `origin` says where they are written; the error comes with the entry's index.
pub fn check_commands(
    commands: &[String],
    source: CommandSource,
    origin: &str,
    denied: &[String],
) -> Result<(), (usize, PlanError)> {
    for (i, text) in commands.iter().enumerate() {
        checked(text, source, origin, denied).map_err(|e| (i, e))?;
    }
    Ok(())
}

/// Every command list of `verify` that a run may plan, each with its config key and source:
/// `verify.commands`, each `verify.by_role.<role>`, each `verify.when_changed[i].commands`.
pub fn config_lists(config: &VerifyConfig) -> Vec<(String, &[String], CommandSource)> {
    let mut lists: Vec<(String, &[String], CommandSource)> = vec![(
        "verify.commands".to_string(),
        &config.commands,
        CommandSource::Config,
    )];
    for (role, commands) in &config.by_role {
        lists.push((
            format!("verify.by_role.{role}"),
            commands,
            CommandSource::Role,
        ));
    }
    for (i, rule) in config.when_changed.iter().enumerate() {
        lists.push((
            format!("verify.when_changed[{i}].commands"),
            &rule.commands,
            CommandSource::WhenChanged,
        ));
    }
    lists
}

/// Same program, arguments and environment: running it again would prove nothing new.
fn same_command(a: &CommandSpec, b: &CommandSpec) -> bool {
    a.program == b.program && a.args == b.args && a.env == b.env
}

/// Whether any changed path matches any of the rule's globs.
fn rule_applies(paths: &[String], changed_paths: &[String]) -> Result<bool, GlobError> {
    let globs = paths
        .iter()
        .map(|pattern| Glob::new(pattern))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(changed_paths
        .iter()
        .any(|path| globs.iter().any(|glob| glob.matches(path))))
}

#[cfg(test)]
mod tests;

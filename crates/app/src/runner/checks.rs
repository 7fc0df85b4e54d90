//! The checks the runner applies to a change, shared by the worker and the judge: the path
//! policy and the verification commands (what the change holds is `content.rs`). Same matcher,
//! same commands, both places (spec §8.14). Not for: what a failed check means for the task
//! (`engine::outcome`, `engine::verdict`).

use std::path::Path;
use std::time::Duration;

use crate::config::Config;
use crate::engine::classify::verification_failure_code;
use crate::git::NumstatEntry;
use crate::model::checks::{CommandReport, Unstarted};
use crate::model::{FailureCode, Role, Task};
use crate::policy::{self, ChangedFile, PathPolicy};
use crate::process::{self, ProcessSpec};
use crate::redact::Redactor;
use crate::verify::{self, PlanError};

/// A check that did not pass, with the failure code and a message for the next prompt.
#[derive(Clone, Debug, PartialEq)]
pub struct CheckFailure {
    pub code: FailureCode,
    pub message: String,
}

/// The allowed paths of a task: its own, else the docs defaults for docser, else the config's.
pub fn allowed_paths(task: &Task, config: &Config) -> Vec<String> {
    if !task.allowed_paths.is_empty() {
        return task.allowed_paths.clone();
    }
    match task.role {
        // spec §2.3.3: the docs agent edits documentation only.
        Role::Docser => ["docs/**", "*.md", "**/*.md"].map(String::from).to_vec(),
        // A research run changes nothing; the policy's paths bound what it reads as evidence.
        Role::Worker | Role::Tester | Role::Research => config.policy.allowed_paths.clone(),
    }
}

/// A task field whose entry cannot work.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskField {
    Commands,
    AllowedPaths,
}

/// One entry of a task that cannot work: which field, which entry, what is wrong and the fix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskProblem {
    pub field: TaskField,
    pub index: usize,
    pub message: String,
}

/// What would make this task's checks fail whatever the agent does, found before it runs: a
/// verification command the runner cannot plan (shell syntax, a denied command) and a path
/// pattern the policy cannot compile. The same parsers as [`run_verification`] and
/// [`check_policy`], so what passes here is what the runner accepts.
pub fn task_problems(task: &Task, config: &Config) -> Vec<TaskProblem> {
    let mut problems = Vec::new();
    for (index, text) in task.commands.iter().enumerate() {
        let single = std::slice::from_ref(text);
        if let Err((_, e)) = verify::check_commands(
            single,
            verify::CommandSource::Task,
            "the task's `commands`",
            &config.verify.denied_commands,
        ) {
            let (what, fix) = verify::explain(&e);
            problems.push(TaskProblem {
                field: TaskField::Commands,
                index,
                message: format!("{what}\n  fix: {fix}"),
            });
        }
    }
    for (index, pattern) in task.allowed_paths.iter().enumerate() {
        if let Err(e) = policy::Glob::new(pattern) {
            problems.push(TaskProblem {
                field: TaskField::AllowedPaths,
                index,
                message: format!(
                    "`{pattern}` is not a path pattern the policy can use\n  fix: {}",
                    e.problem
                ),
            });
        }
    }
    problems
}

/// Checks changed files against the policy (allowed/denied paths, size limits).
pub fn check_policy(
    task: &Task,
    config: &Config,
    changes: &[NumstatEntry],
) -> Result<(), CheckFailure> {
    let policy = PathPolicy::new(
        &allowed_paths(task, config),
        &config.policy.denied_paths,
        config.policy.max_changed_files,
        config.policy.max_changed_lines,
    )
    .map_err(|e| CheckFailure {
        code: FailureCode::PolicyViolation,
        message: format!("the path policy is invalid: {e}"),
    })?;
    let files: Vec<ChangedFile> = changes
        .iter()
        .map(|c| ChangedFile {
            path: c.path.clone(),
            added: c.added,
            removed: c.removed,
        })
        .collect();
    let violations = policy.check(&files);
    if violations.is_empty() {
        Ok(())
    } else {
        Err(CheckFailure {
            code: FailureCode::PolicyViolation,
            message: format!(
                "Policy violation: {}",
                policy::summary(&violations).replace('\n', "; ")
            ),
        })
    }
}

/// What the verification commands did: each command that ran, in order (the last one the
/// failure, if one failed), and the failure.
#[derive(Clone, Debug, Default)]
pub struct Verification {
    pub commands: Vec<CommandReport>,
    pub failure: Option<CheckFailure>,
    /// Hosts the proxy refused the commands (issue 37).
    pub refused: Vec<crate::model::network::Refusal>,
}

impl Verification {
    /// The commands that passed (all of them), or the failure.
    pub fn passed(&self) -> Result<Vec<String>, CheckFailure> {
        match &self.failure {
            Some(failure) => Err(failure.clone()),
            None => Ok(self.commands.iter().map(|c| c.command.clone()).collect()),
        }
    }

    fn failed(failure: CheckFailure) -> Verification {
        Verification {
            commands: Vec::new(),
            failure: Some(failure),
            refused: Vec::new(),
        }
    }
}

/// Runs the verification commands of a task in `cwd` (the run's workspace) in order, stopping
/// at the first failure; every command that ran is reported (issue 28: the check run lists
/// them).
pub fn run_verification(
    act: &super::Act<'_>,
    task: &Task,
    cwd: &Path,
    changes: &[NumstatEntry],
) -> Verification {
    let (config, redactor) = (act.config, act.redactor);
    let changed: Vec<String> = changes.iter().map(|c| c.path.clone()).collect();
    let plan = match verify::plan_commands(&task.commands, &config.verify, task.role, &changed) {
        Ok(plan) => plan,
        Err(e) => {
            let code = match &e {
                PlanError::Denied { .. } => FailureCode::PolicyViolation,
                PlanError::Invalid { .. } | PlanError::InvalidGlob { .. } => {
                    FailureCode::VerificationCommandUnsupportedFormat
                }
            };
            return Verification::failed(CheckFailure {
                code,
                message: e.to_string(),
            });
        }
    };
    let timeout = Duration::from_secs(u64::from(config.verify.timeout_seconds.max(1)));
    if plan.commands.is_empty() {
        return Verification::default();
    }
    let domain = match CheckDomain::new(config, cwd, act.repo) {
        Ok(domain) => domain,
        Err(message) => {
            return Verification::failed(CheckFailure {
                code: FailureCode::SetupOrBootstrapIssue,
                message,
            })
        }
    };
    let mut done = run_planned(&plan, &domain, cwd, timeout, redactor);
    done.refused = domain.door.close().refused;
    done
}

/// Runs `plan` in `cwd` as verification runs a task's checks — the checks' sandbox, private
/// home and network door, no shell, each command's timeout — for a tree no run made:
/// `opentiger eval`'s hidden tests on what the loop would have merged. `repo` is the runner's
/// repository (where the checks' process group is recorded).
pub fn run_commands_in(
    config: &Config,
    repo: &Path,
    cwd: &Path,
    plan: &verify::VerifyPlan,
    redactor: &Redactor,
) -> Verification {
    let timeout = Duration::from_secs(u64::from(config.verify.timeout_seconds.max(1)));
    let domain = match CheckDomain::new(config, cwd, repo) {
        Ok(domain) => domain,
        Err(message) => {
            return Verification::failed(CheckFailure {
                code: FailureCode::SetupOrBootstrapIssue,
                message,
            })
        }
    };
    let mut done = run_planned(plan, &domain, cwd, timeout, redactor);
    done.refused = domain.door.close().refused;
    done
}

/// Runs the planned commands in `domain`, stopping at the first failure.
fn run_planned(
    plan: &verify::VerifyPlan,
    domain: &CheckDomain,
    cwd: &Path,
    timeout: Duration,
    redactor: &Redactor,
) -> Verification {
    let mut done = Verification::default();
    let mut previous: Option<String> = None;
    let count = plan.commands.len();
    for (i, cmd) in plan.commands.iter().enumerate() {
        // Issue 40: the live view's line and heartbeat for each check.
        let (live, sentinel) = super::pulse::Watched::start(
            redactor.redact(&format!("check {}/{count} `{}`", i + 1, cmd.spec.text)),
            None,
            None,
        );
        let mut env = domain.env.clone();
        env.extend(cmd.spec.env.iter().cloned());
        let spec = ProcessSpec {
            program: cmd.spec.program.clone(),
            args: cmd.spec.args.clone(),
            cwd: cwd.to_path_buf(),
            env,
            stdin: None,
            timeout,
            tail_bytes: 8 * 1024,
            watch: None,
            // As an agent's: a tick killed while a check runs leaves its group for the next.
            group_record: domain.group_record.clone(),
            confine: Some(domain.confine.clone()),
            network: domain.door.netns(),
            sentinel,
        };
        // spec §2.3.2 error text: `Verification failed at <cmd> [<source>]: <output>`; the output
        // starts on its own line so the first line stays readable.
        let failure = |output: &str, code: FailureCode| {
            let shown = match output.trim() {
                "" => "stderr unavailable",
                text => text,
            };
            // One line when the command printed nothing: the headline then says how it
            // ended, and nothing is repeated under it (issue 40).
            let sep = if shown.starts_with("stderr unavailable") {
                " "
            } else {
                "\n"
            };
            CheckFailure {
                code,
                message: format!(
                    "Verification failed at {} [{}]:{sep}{}{}",
                    cmd.spec.text,
                    cmd.source,
                    redactor.excerpt(shown, 1200),
                    domain.denial_hint(output)
                ),
            }
        };
        let started = std::time::Instant::now();
        let ran = process::run(&spec);
        let mut report = CommandReport {
            command: redactor.redact(&cmd.spec.text),
            source: cmd.source.to_string(),
            exit: None,
            timed_out: false,
            duration_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
            tail: String::new(),
            unstarted: None,
        };
        let failed = match ran {
            Ok(out) => {
                report.exit = match out.status {
                    process::ExitStatusKind::Code(code) => Some(code),
                    _ => None,
                };
                report.timed_out = out.timed_out;
                report.duration_ms = u64::try_from(out.duration.as_millis()).unwrap_or(u64::MAX);
                report.tail = redactor.excerpt(out.output_tail.trim(), REPORTED_TAIL);
                if out.success() {
                    None
                } else if out.timed_out {
                    Some(failure(
                        &format!(
                            "timed out after {}s\n{}",
                            timeout.as_secs(),
                            out.output_tail
                        ),
                        FailureCode::TransientOrFlakyFailure,
                    ))
                } else {
                    let code = verification_failure_code(
                        &cmd.spec.text,
                        &out.output_tail,
                        previous.as_deref(),
                    );
                    Some(failure(&silent_end(&out), code))
                }
            }
            Err(e) => {
                report.tail = redactor.excerpt(&e.to_string(), REPORTED_TAIL);
                report.unstarted = Some(unstarted(&e));
                Some(failure(&e.to_string(), FailureCode::SetupOrBootstrapIssue))
            }
        };
        live.ended(&match (&failed, report.exit) {
            (None, _) => "passed".to_string(),
            (Some(_), _) if report.timed_out => "timed out".to_string(),
            (Some(_), Some(code)) => format!("failed (exit code {code})"),
            (Some(_), None) => "failed".to_string(),
        });
        done.commands.push(report);
        if failed.is_some() {
            done.failure = failed;
            return done;
        }
        previous = Some(cmd.spec.text.clone());
    }
    done
}

/// A failed command's output, or — when it printed nothing — how it ended (issue 40): the
/// spec's `stderr unavailable` with the exit code or signal after it, on the headline's line.
fn silent_end(out: &process::ProcessOutput) -> String {
    if !out.output_tail.trim().is_empty() {
        return out.output_tail.clone();
    }
    match out.status {
        process::ExitStatusKind::Code(code) => {
            format!("stderr unavailable (it exited with code {code} and printed nothing)")
        }
        process::ExitStatusKind::Signal(signal) => {
            format!("stderr unavailable (it was killed by signal {signal} and printed nothing)")
        }
        process::ExitStatusKind::TimedOut => "stderr unavailable (it timed out)".to_string(),
    }
}

/// How much of each command's output a report keeps (the check run shows it).
const REPORTED_TAIL: usize = 2000;

/// Why a command never started, as its report records it.
pub(super) fn unstarted(e: &process::ProcessError) -> Unstarted {
    match e {
        process::ProcessError::NotFound { .. } => Unstarted::NotFound,
        process::ProcessError::NotExecutable { .. } => Unstarted::NotExecutable,
        process::ProcessError::Spawn { source, .. }
            if source.kind() == std::io::ErrorKind::NotFound =>
        {
            Unstarted::NotFound
        }
        process::ProcessError::Spawn { .. } => Unstarted::Other,
    }
}

/// Where verification commands run. They run the repository's code, which the agent may just
/// have changed (a test, a `build.rs`, an npm `pretest`, a `Makefile`), so they start by the
/// agents' launch path (`launch::checks`) in a domain like the agent's: a scratch folder as
/// `TMPDIR`, a private `HOME`, its view (or the socket filter), Landlock letting them write the
/// workspace, those two folders and `sandbox.writable` — not the repository's `.git` — its
/// limits, and a network door of its own letting through `sandbox.network.allow.checks` only.
struct CheckDomain {
    door: crate::egress::Door,
    _scratch: crate::scratch::PrivateDir,
    env: Vec<(String, String)>,
    confine: std::sync::Arc<crate::sandbox::Confinement>,
    writable: Vec<std::path::PathBuf>,
    group_record: Option<std::path::PathBuf>,
}

impl CheckDomain {
    /// The domain of checks run in `cwd`, for the runner's own repository `repo`.
    fn new(config: &Config, cwd: &Path, repo: &Path) -> Result<CheckDomain, String> {
        let launched = super::launch::checks(config, cwd, repo)?;
        Ok(CheckDomain {
            door: launched.door,
            _scratch: launched.scratch,
            env: launched.env,
            confine: launched.confine,
            writable: launched.writable,
            group_record: launched.group_record,
        })
    }

    /// When a failed check's output says a write was refused outside what checks may write:
    /// which path, and the setting that allows it.
    fn denial_hint(&self, output: &str) -> String {
        if let Some(hit) = self.confine.take_hit() {
            return format!("\n  {}", hit.failure("the check"));
        }
        if self.confine.landlock.is_none() && self.confine.view.is_none() {
            return String::new();
        }
        match crate::sandbox::denied_write(output, &self.writable, self.confine.view.is_some()) {
            Some(path) => format!(
                "\n  the sandbox refused a write to {path} (checks write only their workspace, a scratch folder and a private home); if the check needs it, allow its folder: add to .opentiger.yml (into its `sandbox:` when it has one) `sandbox: {{writable: [\"{}\"]}}`",
                std::path::Path::new(&path)
                    .parent()
                    .map_or(path.clone(), |p| p.display().to_string())
            ),
            None => String::new(),
        }
    }
}

//! The command line: clap types, one short function per command that calls the library, and
//! printing. It decides nothing and nothing imports it; a tick itself is [`crate::tick`].
//!
//! Exit codes (DESIGN §11): 0 ok, 1 tick error, 2 usage/config error, 3 state conflict.
//! Not for: finding the repository (`cli::locate`), the error type that carries the exit code
//! (`failure`), or what `main.rs` does first (git's askpass, the token, the reaper).

/// `println!` for a command's output: a closed stdout (the reader quit early, as `| head -1`
/// does) ends the command quietly with exit 0 instead of a panic (exit 101).
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!("{}\n", format_args!($($arg)*)))?
    };
}

/// `print!` for a command's output; see [`outln!`].
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cli::write_stdout(format_args!($($arg)*))?
    };
}

mod config_cmd;
mod doctor;
mod eval;
mod init;
mod lessons;
mod locate;
mod pause;
mod plan;
mod status;
mod task;
mod task_moves;
mod tick;
mod work;

use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

pub use crate::failure::Failure;
use crate::tick::{Context, ContextOptions};

/// The help heading of the options every command takes, listed apart from its own.
const GLOBAL: &str = "Global options";

/// Global options that mean nothing to `demo` (it builds its own sample repository): left out
/// of its help and refused when given.
const NOT_FOR_DEMO: [&str; 3] = ["repo", "config", "mode"];

#[derive(Parser, Debug)]
#[command(
    name = "opentiger",
    version,
    about = "An autonomous coding loop for one repository, one tick at a time."
)]
pub struct Cli {
    /// Repository to work on [default: the repository holding the current folder, at the top
    /// of its work tree].
    #[arg(long, global = true, help_heading = GLOBAL, env = "OPENTIGER_REPO")]
    pub repo: Option<PathBuf>,
    /// With no .opentiger.yml, start a new state with the built-in defaults without asking
    /// (`task add`, `tick`, `plan` ask in an interactive terminal).
    #[arg(long, global = true, help_heading = GLOBAL)]
    pub yes: bool,
    /// Configuration file [default: <repo>/.opentiger.yml].
    #[arg(long, global = true, help_heading = GLOBAL, env = "OPENTIGER_CONFIG")]
    pub config: Option<PathBuf>,
    /// Override `mode` from the configuration.
    #[arg(long, global = true, help_heading = GLOBAL, value_parser = ["github", "local-git", "direct"])]
    pub mode: Option<String>,
    /// Pretend it is this time (RFC 3339), for tests and what-if questions.
    #[arg(long, global = true, help_heading = GLOBAL, env = "OPENTIGER_NOW")]
    pub now: Option<String>,
    /// More log output (-v info, -vv debug).
    #[arg(short, long, global = true, help_heading = GLOBAL, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors.
    #[arg(short, long, global = true, help_heading = GLOBAL)]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
    /// The repository as worked on: `--repo` made absolute, else the top of the work tree
    /// holding the current folder (set by [`main`]).
    #[arg(skip)]
    pub root: PathBuf,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Advance the loop by one step: recover, decide, claim, run, record.
    Tick(tick::TickArgs),
    /// Tasks, what each waits for, recent runs and the last tick.
    Status(status::StatusArgs),
    /// Turn the requirement document into tasks now (refused while a backlog exists).
    Plan(plan::PlanArgs),
    /// Pause the repository: ticks claim no new run and start no planner until `resume` (what
    /// runs finishes). In github mode, what `/opentiger pause` on the dashboard issue does.
    Pause(PauseArgs),
    /// Resume a paused repository: the next tick claims work again.
    Resume,
    /// The local backlog: add, list, show, retry, stop, cancel, approve tasks.
    #[command(subcommand)]
    Task(task::TaskCommand),
    /// What the loop learned about where its agents run: the host snapshot and the failure
    /// lessons agents are told; `lessons clear <id>|--all` removes one once its cause is fixed.
    Lessons(lessons::LessonsArgs),
    /// The effective configuration and its JSON Schema.
    #[command(subcommand)]
    Config(config_cmd::ConfigCommand),
    /// Run the whole loop on a built-in sample repository with the built-in scripted agent.
    Demo(DemoArgs),
    /// Work on one run a `tick --fan-out` claimed, and record it (a fan-out matrix job); with
    /// `--output DIR`, without a token: write the result to DIR for `apply`.
    Work(work::WorkArgs),
    /// Check and apply what `work --run ID --output DIR` wrote: push, open the PR, record.
    Apply(work::ApplyArgs),
    /// Write a commented .opentiger.yml and, in github mode, the GitHub Actions workflow.
    Init(init::InitArgs),
    /// Check that a tick can run here: config, git, agents, token, state; each problem with its fix.
    Doctor(doctor::DoctorArgs),
    /// Replay past changes of this repository through the whole loop in throw-away clones,
    /// with their tests hidden from the agent, and report what it would have delivered.
    Eval(eval::EvalArgs),
}

#[derive(clap::Args, Debug)]
pub struct PauseArgs {
    /// Why, kept with the pause (shown by `status`).
    #[arg(long)]
    pub reason: Option<String>,
}

#[derive(clap::Args, Debug)]
pub struct DemoArgs {
    /// Build the sample in this (new or empty) folder and keep it, instead of a temp folder.
    #[arg(long)]
    pub keep: Option<PathBuf>,
}

pub type CmdResult = Result<(), Failure>;

impl Cli {
    /// What a [`Context`] is loaded from: the repository and the global overrides.
    pub fn context_options(&self) -> ContextOptions {
        ContextOptions {
            repo: self.root.clone(),
            config: self.config.clone(),
            mode: self.mode.clone(),
            now: self.now.clone(),
        }
    }

    /// The configuration file's path as given or defaulted.
    pub fn config_path(&self) -> PathBuf {
        self.context_options().config_path()
    }
}

/// Writes command output. A reader that went away (`EPIPE`) is [`Failure::closed_stdout`]; any
/// other write error is a tick error.
pub(crate) fn write_stdout(args: std::fmt::Arguments<'_>) -> Result<(), Failure> {
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    match out.write_fmt(args).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Failure::closed_stdout()),
        Err(e) => Err(Failure::tick(format!("cannot write to stdout: {e}"))),
    }
}

/// The command line as clap builds it. `demo` gets hidden stand-ins for the global options
/// that mean nothing to it: a global option is not copied to a command that has its own, so
/// they stay out of `demo --help`, and `run` refuses them when given.
pub fn command() -> clap::Command {
    Cli::command().mut_subcommand("demo", |demo| {
        NOT_FOR_DEMO.into_iter().fold(demo, |demo, id| {
            let stand_in = clap::Arg::new(id).long(id).hide(true).num_args(1);
            demo.arg(match id {
                "mode" => stand_in,
                _ => stand_in.value_parser(clap::value_parser!(PathBuf)),
            })
        })
    })
}

/// Runs the CLI and returns the process exit code.
pub fn main() -> i32 {
    let parsed = command().try_get_matches().and_then(|matches| {
        if let Some(("demo", demo)) = matches.subcommand() {
            let given = NOT_FOR_DEMO
                .into_iter()
                .find(|id| demo.value_source(id) == Some(clap::parser::ValueSource::CommandLine));
            if let Some(id) = given {
                return Ok(Err(id));
            }
        }
        Cli::from_arg_matches(&matches).map(Ok)
    });
    let mut cli = match parsed {
        Ok(Ok(cli)) => cli,
        Ok(Err(id)) => {
            eprintln!(
                "error: --{id} does not apply to `demo`: it builds and runs its own sample repository\n  fix: leave out --{id} (`--keep DIR` keeps the sample)"
            );
            return 2;
        }
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => 0,
                _ => 2,
            };
        }
    };
    init_logging(cli.verbose, cli.quiet);
    // Before anything starts a program: the action's stop token leaves the environment.
    let stop_token = crate::live::take_stop_token();
    // Relative paths in the configuration (an agent's `./scripts/agent.sh`, the state file, the
    // requirement) are relative to the repository: made absolute once here, they stay right
    // whatever folder a program later runs in (a run's worktree, a scratch copy).
    cli.root = match root(&cli) {
        Ok(root) => root,
        Err(f) => {
            eprintln!("error: {}", f.message);
            return f.code;
        }
    };
    // Before any agent runs: the runner's own git, from a folder no agent can write
    // (`programs`). `doctor` reports a refusal among its checks instead of stopping here.
    if let Err(message) = crate::programs::init(&cli.root) {
        if !matches!(cli.command, Command::Doctor(_)) {
            eprintln!("error: {message}");
            return 2;
        }
    }
    match run(cli, stop_token) {
        Ok(()) => 0,
        Err(f) => {
            if !f.message.is_empty() {
                eprintln!("error: {}", f.message);
            }
            f.code
        }
    }
}

/// The repository a command works on: `--repo` as given (made absolute), else the top of the
/// work tree holding the current folder, as git finds it. Outside any repository that is an
/// error, except for the commands that need none (`demo`, `config schema`).
fn root(cli: &Cli) -> Result<PathBuf, Failure> {
    if let Some(repo) = &cli.repo {
        return std::path::absolute(repo)
            .map_err(|e| Failure::usage(format!("--repo {}: {e}", repo.display())));
    }
    let cwd = std::env::current_dir()
        .map_err(|e| Failure::usage(format!("cannot read the current folder: {e}")))?;
    let needs_none = matches!(
        &cli.command,
        Command::Demo(_) | Command::Config(config_cmd::ConfigCommand::Schema)
    );
    match locate::repository_of(&cwd) {
        Ok(root) => Ok(root),
        Err(_) if needs_none => Ok(cwd),
        Err(f) => Err(f),
    }
}

fn run(cli: Cli, stop_token: Option<String>) -> CmdResult {
    use locate::Access;
    // Loaded, and what it says when there is no `.opentiger.yml` (see `locate`).
    let context = |access: Access| -> Result<Context, Failure> {
        let ctx = Context::load(&cli.context_options())?;
        let interactive = std::io::IsTerminal::is_terminal(&std::io::stdin());
        locate::confirm_defaults(&ctx, access, cli.yes, interactive)?;
        Ok(ctx)
    };
    // Issue 40: commands that run agents and checks say so while they run (stderr), unless -q.
    let runs_agents = match &cli.command {
        Command::Tick(args) => !args.dry_run,
        Command::Work(_) | Command::Plan(_) | Command::Demo(_) => true,
        _ => false,
    };
    if runs_agents && !cli.quiet {
        let actions = std::env::var("GITHUB_ACTIONS").as_deref() == Ok("true");
        crate::live::init(actions, stop_token);
    }
    match &cli.command {
        Command::Config(cmd) => config_cmd::run(&cli, cmd),
        Command::Init(args) => init::run(&cli, args),
        Command::Doctor(args) => doctor::run(&cli, args),
        Command::Eval(args) => eval::run(&cli, args),
        Command::Tick(args) => {
            let access = if args.dry_run {
                Access::Read
            } else {
                Access::Write
            };
            tick::run(&context(access)?, args, cli.verbose > 0)
        }
        Command::Work(args) => work::run(&context(Access::Read)?, args),
        Command::Apply(args) => work::apply(&context(Access::Read)?, args),
        Command::Status(args) => status::run(&context(Access::Read)?, args, cli.verbose > 0),
        Command::Plan(args) => plan::run(&context(Access::Write)?, args),
        Command::Pause(args) => pause::pause(&context(Access::Write)?, args.reason.as_deref()),
        Command::Resume => pause::resume(&context(Access::Read)?),
        Command::Task(cmd) => {
            // Only adding can start a state: the other task commands need a task in one.
            use task::TaskCommand;
            let access = match cmd {
                TaskCommand::Add(_) => Access::Write,
                TaskCommand::List { .. }
                | TaskCommand::Show { .. }
                | TaskCommand::Retry { .. }
                | TaskCommand::Approve { .. }
                | TaskCommand::Stop { .. }
                | TaskCommand::Cancel { .. } => Access::Read,
            };
            task::run(&context(access)?, cmd, cli.verbose > 0)
        }
        Command::Lessons(args) => {
            let access = if args.writes() {
                Access::Write
            } else {
                Access::Read
            };
            lessons::run(&context(access)?, args)
        }
        Command::Demo(args) => {
            // Each piece as it happens: a tick's lines show before the next tick starts.
            let report = crate::demo::run(
                &Context::load(&cli.context_options())?,
                args.keep.as_deref(),
                &mut |text| write_stdout(format_args!("{text}")),
            )?;
            if report.converged {
                Ok(())
            } else {
                Err(Failure::tick(
                    "the demo did not converge: see the report above",
                ))
            }
        }
    }
}

fn init_logging(verbose: u8, quiet: bool) {
    let level = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, _) => "debug",
    };
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    // `OPENTIGER_LOG=debug` or `OPENTIGER_LOG=warn,opentiger::forge=debug`: a level, and levels
    // per module (a `Targets` filter: no regular expressions, so no regex crates to build).
    let filter = std::env::var("OPENTIGER_LOG")
        .ok()
        .and_then(|text| text.parse::<tracing_subscriber::filter::Targets>().ok())
        .unwrap_or_else(|| {
            level
                .parse()
                .expect("error, warn, info and debug are levels")
        });
    let _ = tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .with_writer(std::io::stderr)
                .with_target(false),
        )
        .with(filter)
        .try_init();
}

#[cfg(test)]
mod tests {
    /// Issue 15: `--help` describes every option of every command.
    #[test]
    fn every_option_has_a_description() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let id = arg.get_id().as_str();
                if arg.is_hide_set() || id == "help" || id == "version" {
                    continue;
                }
                if arg
                    .get_help()
                    .is_none_or(|h| h.to_string().trim().is_empty())
                {
                    missing.push(format!("{path} {id}"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(&super::command(), "opentiger", &mut missing);
        assert!(
            missing.is_empty(),
            "options without a description: {missing:#?}"
        );
    }
}

//! The command line: clap types, one short function per command that calls the library, and
//! printing. It decides nothing and nothing imports it; a tick itself is [`crate::tick`].
//!
//! Exit codes (DESIGN §11): 0 ok, 1 tick error, 2 usage/config error, 3 state conflict.

mod config_cmd;
mod doctor;
mod init;
mod plan;
mod status;
mod task;
mod tick;
mod work;

use std::path::PathBuf;

use clap::{Parser, Subcommand};

pub use crate::failure::Failure;
use crate::tick::{Context, ContextOptions};

#[derive(Parser, Debug)]
#[command(
    name = "opentiger",
    version,
    about = "An autonomous coding loop for one repository, one tick at a time."
)]
pub struct Cli {
    /// Repository to work on.
    #[arg(long, global = true, default_value = ".", env = "OPENTIGER_REPO")]
    pub repo: PathBuf,
    /// Configuration file [default: <repo>/.opentiger.yml].
    #[arg(long, global = true, env = "OPENTIGER_CONFIG")]
    pub config: Option<PathBuf>,
    /// Override `mode` from the configuration.
    #[arg(long, global = true, value_parser = ["github", "local-git", "direct"])]
    pub mode: Option<String>,
    /// Pretend it is this time (RFC 3339), for tests and what-if questions.
    #[arg(long, global = true, env = "OPENTIGER_NOW")]
    pub now: Option<String>,
    /// More log output (-v info, -vv debug).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors.
    #[arg(short, long, global = true)]
    pub quiet: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Advance the loop by one step: recover, decide, claim, run, record.
    Tick(tick::TickArgs),
    /// Tasks, what each waits for, recent runs and the last tick.
    Status(status::StatusArgs),
    /// Turn the requirement document into tasks now (refused while a backlog exists).
    Plan(plan::PlanArgs),
    /// The local backlog: add, list, show, retry, cancel, approve tasks.
    #[command(subcommand)]
    Task(task::TaskCommand),
    /// The effective configuration and its JSON Schema.
    #[command(subcommand)]
    Config(config_cmd::ConfigCommand),
    /// Run the whole loop on a built-in sample repository with the built-in scripted agent.
    Demo(DemoArgs),
    /// Work on one run a `tick --fan-out` claimed, and record it (a fan-out matrix job).
    Work(work::WorkArgs),
    /// Write a commented .opentiger.yml and, in github mode, the GitHub Actions workflow.
    Init(init::InitArgs),
    /// Check that a tick can run here: config, git, agents, token, state; each problem with its fix.
    Doctor(doctor::DoctorArgs),
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
            repo: self.repo.clone(),
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

/// Runs the CLI and returns the process exit code.
pub fn main() -> i32 {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return match e.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => 0,
                _ => 2,
            };
        }
    };
    init_logging(cli.verbose, cli.quiet);
    match run(cli) {
        Ok(()) => 0,
        Err(f) => {
            eprintln!("error: {}", f.message);
            f.code
        }
    }
}

fn run(cli: Cli) -> CmdResult {
    let context = || Context::load(&cli.context_options());
    match &cli.command {
        Command::Config(cmd) => config_cmd::run(&cli, cmd),
        Command::Init(args) => init::run(&cli, args),
        Command::Doctor(args) => doctor::run(&cli, args),
        Command::Tick(args) => tick::run(&context()?, args),
        Command::Work(args) => work::run(&context()?, args),
        Command::Status(args) => status::run(&context()?, args),
        Command::Plan(args) => plan::run(&context()?, args),
        Command::Task(cmd) => task::run(&context()?, cmd),
        Command::Demo(args) => {
            let report = crate::demo::run(&context()?, args.keep.as_deref())?;
            print!("{}", report.text);
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
    let filter = tracing_subscriber::EnvFilter::try_from_env("OPENTIGER_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .try_init();
}

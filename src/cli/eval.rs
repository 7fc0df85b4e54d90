//! `opentiger eval`: the arguments, and printing the report (Markdown, or `--json`). Progress
//! goes to stderr as it runs; an interrupted eval prints what it finished and exits 130 / 143.
//! Not for: the eval itself ([`crate::eval`]).

use std::path::PathBuf;

use clap::Args;

use super::{Cli, CmdResult, Failure};
use crate::eval::{self, Selection, TestCommand};

#[derive(Args, Debug)]
pub struct EvalArgs {
    /// Replay the last N first-parent commits of the base branch that change a test (a merged
    /// pull request is one such commit) [default: 10].
    #[arg(long, value_name = "N", conflicts_with_all = ["range", "commits"],
          value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub last: Option<u32>,
    /// Replay the first-parent commits of A..B.
    #[arg(long, value_name = "A..B", conflicts_with = "commits")]
    pub range: Option<String>,
    /// Replay the commits a file lists, one a line, each optionally followed by the task's text
    /// (which then replaces the commit message).
    #[arg(long, value_name = "FILE")]
    pub commits: Option<PathBuf>,
    /// A configuration to evaluate; repeat it to compare several side by side on the same
    /// changes [default: the repository's own, <repo>/.opentiger.yml].
    #[arg(long = "config", id = "config", value_name = "FILE", action = clap::ArgAction::Append)]
    pub configs: Vec<PathBuf>,
    /// Where the hidden tests are: path patterns of the files a change added or changed that
    /// are kept from the agent and decide the task (repeatable) [default: tests/**, test/**,
    /// spec/**, **/__tests__/**, **/test_*.*, **/*_test.*, **/*.test.*, **/*_spec.*,
    /// **/*.spec.*].
    #[arg(long = "tests", value_name = "GLOB")]
    pub tests: Vec<String>,
    /// The command that decides whether a task was resolved, run without a shell on the merged
    /// tree with the hidden tests on it [default: the configuration's verify.commands].
    #[arg(long, value_name = "CMD")]
    pub test_command: Option<String>,
    /// Start no task once the spend so far plus what the next may cost would pass this (USD);
    /// each task's budget.per_task_usd is held to what is left.
    #[arg(long, value_name = "USD")]
    pub budget_usd: Option<f64>,
    /// Replay at most this many changes (each with every configuration).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub max_tasks: Option<u32>,
    /// Tasks run at once, each in its own clone.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=32))]
    pub jobs: u32,
    /// Ticks one task gets before the eval stops it where it is.
    #[arg(long, value_name = "N", default_value_t = 30,
          value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub max_ticks: u32,
    /// Keep changes that touch no test file (resolved then means merged with the test command
    /// passing) instead of leaving them out.
    #[arg(long)]
    pub keep_untested: bool,
    /// The eval's folder: results, logs, reports [default: <git dir>/opentiger/eval].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Run every task again instead of reusing what an earlier eval finished.
    #[arg(long)]
    pub fresh: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
}

pub fn run(cli: &Cli, args: &EvalArgs) -> CmdResult {
    let selection = match (&args.range, &args.commits, args.last) {
        (Some(range), _, _) => Selection::Range(range.clone()),
        (None, Some(file), _) => Selection::Listing(file.clone()),
        (None, None, n) => Selection::Last(n.unwrap_or(10) as usize),
    };
    if let Some(budget) = args.budget_usd {
        if !(budget.is_finite() && budget > 0.0) {
            return Err(Failure::usage(format!(
                "--budget-usd {budget}: not a spend\n  fix: give a positive amount in USD, e.g. --budget-usd 20"
            )));
        }
    }
    let configs = if args.configs.is_empty() {
        vec![cli.config_path()]
    } else {
        args.configs.clone()
    };
    let options = eval::Options {
        repo: cli.root.clone(),
        selection,
        configs,
        tests: args.tests.clone(),
        test_command: match &args.test_command {
            Some(text) => TestCommand::Given(text.clone()),
            None => TestCommand::Configured,
        },
        budget_usd: args.budget_usd,
        max_tasks: args.max_tasks.map(|n| n as usize),
        jobs: args.jobs as usize,
        max_ticks: args.max_ticks,
        out: args.out.clone(),
        keep_untested: args.keep_untested,
        fresh: args.fresh,
        quiet: cli.quiet,
    };
    let evaluated = eval::run(&options)?;
    if args.json {
        outln!("{}", eval::report::json(&evaluated)?);
    } else {
        out!("{}", eval::report::markdown(&evaluated));
    }
    match evaluated.interrupted {
        Some(signal) => Err(Failure {
            code: signal.exit_code(),
            message: String::new(),
        }),
        None => Ok(()),
    }
}

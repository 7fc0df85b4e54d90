//! Opt-in: the real agent CLIs accept every flag the adapters pass.
//!
//! Ignored by default (it installs packages from npm and PyPI, a few hundred MB, several minutes):
//!
//! ```sh
//! OPENTIGER_REAL_CLI_TESTS=1 cargo test --test suite real_agent_clis:: -- --ignored --nocapture
//! ```
//!
//! `scripts/real-clis.sh` installs `@anthropic-ai/claude-code`, `@openai/codex` and `opencode-ai`
//! with npm and `aider-chat` with pip at the pinned versions (cached, see the README), then it runs
//! each adapter for a worker and for the judge, through `Executor::run`, with fake API keys and
//! the providers' addresses pointed at a closed local port: no model is reached, but each CLI
//! parses the exact command line the adapter builds. An unknown or misspelt flag makes the CLI's
//! argument parser complain, which the test looks for in the output; a bogus flag added on
//! purpose shows that the check catches one. opencode's parser ignores unknown flags, so there
//! every flag must be in its `--help`; for the others, flags missing from `--help` are only
//! printed (claude's `--max-turns` is accepted but not listed).

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::real_clis;
use opentiger::config::AgentRole;
use opentiger::executor::{
    aider, claude_code, codex, opencode, AdapterConfig, AgentRequest, AgentResult, Cli, Executor,
};
use opentiger::model::{Role, RunId, Task, TaskId};
use opentiger::time::Timestamp;

/// What argument parsers print for an argument they do not know.
const PARSER_ERRORS: &[&str] = &[
    "unknown option",         // commander (claude)
    "unexpected argument",    // clap (codex)
    "unrecognized arguments", // argparse (aider)
    "unknown argument",       // yargs (opencode)
    "invalid value",
    "invalid values:",
    "error: option",
];

fn run_adapter(exec: &dyn Executor, role: AgentRole, bins: &[PathBuf], dir: &Path) -> AgentResult {
    let workspace = dir.join("ws");
    let scratch = dir.join("scratch");
    let home = dir.join("home");
    for d in [&workspace, &scratch, &home] {
        std::fs::create_dir_all(d).unwrap();
    }
    let git = |args: &[&str]| {
        Command::new("git")
            .args(args)
            .current_dir(&workspace)
            .output()
            .unwrap()
    };
    git(&["init", "-q"]);
    std::fs::write(
        workspace.join("ops.py"),
        "def add(a, b):\n    return a + b\n",
    )
    .unwrap();
    git(&["add", "."]);
    git(&[
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "init",
    ]);
    let mut path: Vec<String> = bins.iter().map(|b| b.display().to_string()).collect();
    path.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(String::from));
    let closed = "http://127.0.0.1:9".to_string();
    let env = vec![
        ("PATH".to_string(), path.join(":")),
        ("HOME".to_string(), home.display().to_string()),
        (
            "ANTHROPIC_API_KEY".to_string(),
            "sk-ant-not-a-key".to_string(),
        ),
        ("OPENAI_API_KEY".to_string(), "sk-not-a-key".to_string()),
        ("ANTHROPIC_BASE_URL".to_string(), closed.clone()),
        ("ANTHROPIC_API_BASE".to_string(), closed.clone()),
        ("OPENAI_BASE_URL".to_string(), format!("{closed}/v1")),
        ("OPENAI_API_BASE".to_string(), format!("{closed}/v1")),
    ];
    let task = Task::new(TaskId::from("t1"), "Add subtraction", "sub()", Timestamp(0));
    let request = AgentRequest {
        role,
        task: &task,
        run_id: &RunId::from("r1"),
        workspace: &workspace,
        prompt: "Add a sub(a, b) function to ops.py.".to_string(),
        env,
        timeout: Duration::from_secs(20),
        attempt: 0,
        scratch: &scratch,
        group_record: None,
        confine: None,
        network: None,
        sentinel: None,
    };
    exec.run(&request).expect("the CLI starts")
}

fn parser_complaint(output: &str) -> Option<&'static str> {
    let lower = output.to_lowercase();
    PARSER_ERRORS.iter().copied().find(|p| lower.contains(p))
}

#[test]
#[ignore = "installs the real agent CLIs from npm and PyPI; set OPENTIGER_REAL_CLI_TESTS=1 and pass --ignored"]
fn real_clis_accept_every_flag_the_adapters_pass() {
    let Some(bins) = real_clis::install() else {
        return;
    };
    let temp = tempfile::tempdir().unwrap();
    let cases: [(&Cli, Option<&str>, &[&str]); 4] = [
        (&claude_code::CLI, Some("sonnet"), &["--help"]),
        (&codex::CLI, Some("gpt-5-codex"), &["exec", "--help"]),
        (
            &opencode::CLI,
            Some("anthropic/claude-sonnet-4-5"),
            &["run", "--help"],
        ),
        (
            &aider::CLI,
            Some("anthropic/claude-sonnet-4-5"),
            &["--help"],
        ),
    ];
    let mut failures = Vec::new();
    for (cli, model, help_args) in cases {
        let program = real_clis::program(&bins, cli.program);
        let help = Command::new(&program).args(help_args).output().unwrap();
        let help = String::from_utf8_lossy(&help.stdout).to_string()
            + &String::from_utf8_lossy(&help.stderr);
        for role in [AgentRole::Task(Role::Worker), AgentRole::Judge] {
            let mut config = AdapterConfig::new(cli, role);
            config.program = program.display().to_string();
            config.model = model.map(String::from);
            let dir = temp.path().join(format!("{}-{}", cli.kind, role.name()));
            let result = run_adapter(build(cli, config.clone()).as_ref(), role, &bins, &dir);
            eprintln!(
                "{} {}: exit {:?}, failure {:?}",
                cli.kind,
                role.name(),
                result.exit,
                result.failure.as_ref().map(|f| &f.kind)
            );
            let tail = &result.output_tail;
            let cut = tail.char_indices().rev().nth(400).map_or(0, |(i, _)| i);
            eprintln!("  output ends: {}", &tail[cut..].replace('\n', "\n  "));
            if let Some(complaint) = parser_complaint(&result.output_tail) {
                failures.push(format!(
                    "{} as {}: the CLI said `{complaint}`:\n{}",
                    cli.kind,
                    role.name(),
                    result.output_tail
                ));
            }
            let argv = args_of(cli, &config, &dir.join("scratch"));
            let unlisted: Vec<&String> = argv
                .iter()
                .filter(|a| a.starts_with("--") && !help.contains(a.as_str()))
                .collect();
            // yargs (opencode) ignores unknown flags, so its help is the check there.
            if !unlisted.is_empty() && cli.kind == "opencode" {
                failures.push(format!("{}: not in its --help: {unlisted:?}", cli.kind));
            } else if !unlisted.is_empty() {
                eprintln!(
                    "  note: accepted but not in `{} --help`: {unlisted:?}",
                    cli.program
                );
            }
        }
        // The check itself: a flag no CLI has must be caught.
        let mut bogus = AdapterConfig::new(cli, AgentRole::Task(Role::Worker));
        bogus.program = program.display().to_string();
        bogus.extra_args = match cli.kind {
            "codex" => vec!["exec".into(), "--opentiger-bogus-flag".into()],
            "opencode" => vec!["run".into(), "--opentiger-bogus-flag".into()],
            _ => vec!["--opentiger-bogus-flag".into()],
        };
        let dir = temp.path().join(format!("{}-bogus", cli.kind));
        let result = run_adapter(
            build(cli, bogus).as_ref(),
            AgentRole::Task(Role::Worker),
            &bins,
            &dir,
        );
        if parser_complaint(&result.output_tail).is_none() && cli.kind != "opencode" {
            failures.push(format!(
                "{}: a bogus flag went unnoticed; the check is blind:\n{}",
                cli.kind, result.output_tail
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

fn build(cli: &Cli, config: AdapterConfig) -> Box<dyn Executor> {
    match cli.kind {
        "claude-code" => Box::new(claude_code::ClaudeCode::new(config)),
        "codex" => Box::new(codex::Codex::new(config)),
        "opencode" => Box::new(opencode::Opencode::new(config)),
        _ => Box::new(aider::Aider::new(config)),
    }
}

fn args_of(cli: &Cli, config: &AdapterConfig, scratch: &Path) -> Vec<String> {
    match cli.kind {
        "claude-code" => claude_code::args(config, scratch),
        "codex" => codex::args(config, scratch),
        "opencode" => opencode::args(config),
        _ => aider::args(config, &scratch.join("prompt.md"), scratch),
    }
}

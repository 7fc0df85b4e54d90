//! `init`'s tests: the files it writes and the configuration it comments.

use super::*;
use crate::config::{load_str, StoreKind};

#[test]
fn every_mode_writes_a_config_the_loader_accepts() {
    for mode in [Mode::Github, Mode::LocalGit, Mode::Direct] {
        let text = config_text(mode, "trunk", None);
        let config =
            load_str(&text, ".opentiger.yml").unwrap_or_else(|e| panic!("{mode}: {e}\n{text}"));
        assert_eq!(config.mode, mode);
        assert_eq!(config.base_branch, "trunk");
        let expected_store = match mode {
            Mode::Github => StoreKind::Branch,
            Mode::LocalGit | Mode::Direct => StoreKind::File,
        };
        assert_eq!(config.store_kind(), expected_store, "{mode}");
        assert_eq!(config.backlog.labels, ["opentiger"]);
    }
}

/// `--agent-command`: the program is every role's agent, quoted as one argv word, and no
/// API key is passed to it.
#[test]
fn an_agent_command_is_written_as_the_default_agent() {
    use crate::config::{AgentRole, ExecutorKind};
    let text = config_text(Mode::LocalGit, "main", Some("./my agent \"x\".sh"));
    let config = load_str(&text, ".opentiger.yml").unwrap_or_else(|e| panic!("{e}\n{text}"));
    for role in AgentRole::ALL {
        let agent = config.agents.effective(role);
        assert_eq!(agent.executor, ExecutorKind::Command);
        assert_eq!(agent.command, Some(vec!["./my agent \"x\".sh".to_string()]));
        assert!(agent.env_passthrough.is_empty());
    }
}

#[test]
fn the_workflow_filters_on_the_backlog_label_the_config_names() {
    let config = load_str(&config_text(Mode::Github, "main", None), "c.yml").unwrap();
    for label in &config.backlog.labels {
        assert!(
            WORKFLOW.contains(&format!("github.event.label.name == '{label}'")),
            "the workflow's `if:` must let `{label}` labels through"
        );
    }
    assert!(WORKFLOW.contains("cancel-in-progress: false"));
}

/// The workflow `init` writes runs the release `init` came from: the action at this major
/// version of the repository Cargo.toml names, and `version:` this very release.
#[test]
fn the_workflow_pins_the_release_init_came_from() {
    use crate::release;
    assert!(
        WORKFLOW.contains(&format!(
            "\n  OPENTIGER_VERSION: {}\n",
            release::release_tag()
        )),
        "the example workflow's OPENTIGER_VERSION must be {} (Cargo.toml's version)",
        release::release_tag()
    );
    assert!(
        WORKFLOW.contains(&format!("uses: {}\n", release::action_reference())),
        "the example workflow must use {}",
        release::action_reference()
    );
    assert!(WORKFLOW.contains("version: ${{ env.OPENTIGER_VERSION }}"));
    assert!(!WORKFLOW.contains("@main"));
}

/// The agent CLI is installed at the version its adapter was tested against: the one the
/// fixtures were recorded with.
#[test]
fn the_workflows_pin_the_agent_cli_the_adapter_was_tested_against() {
    let fixtures = include_str!("../../../tests/fixtures/agents/README.md");
    let tested = fixtures
        .split("(claude ")
        .nth(1)
        .and_then(|rest| rest.split([',', ')']).next())
        .expect("the fixtures README names the claude version they were recorded with");
    let fanout = include_str!("../../../examples/workflows/opentiger-fanout.yml");
    for (name, text) in [
        ("opentiger.yml", WORKFLOW),
        ("opentiger-fanout.yml", fanout),
    ] {
        assert!(
            text.contains(&format!("\n  CLAUDE_CODE_VERSION: {tested}\n")),
            "{name} must pin claude-code {tested}"
        );
        for line in text.lines().filter(|l| l.contains("npm install")) {
            assert!(
                line.contains("@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION"),
                "{name}: {line}"
            );
        }
        assert!(
            text.contains("key: npm-claude-code-${{ env.CLAUDE_CODE_VERSION }}"),
            "{name} caches npm's downloads by that version"
        );
    }
}

/// Issue 47: every checkout of the workflow `init` writes, and of every example workflow,
/// leaves no token behind for an agent to read (`persist-credentials: false`).
#[test]
fn every_checkout_of_the_workflows_persists_no_credentials() {
    let examples = std::path::Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
        .join("examples/workflows");
    let mut workflows = vec![(WORKFLOW_PATH.to_string(), WORKFLOW.to_string())];
    for entry in std::fs::read_dir(&examples).expect("examples/workflows") {
        let path = entry.expect("an entry").path();
        let text = std::fs::read_to_string(&path).expect("a workflow");
        workflows.push((path.display().to_string(), text));
    }
    assert!(workflows.len() >= 3, "{workflows:?}");
    for (name, text) in workflows {
        let parsed: serde_json::Value =
            serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let jobs = parsed["jobs"].as_object().expect("jobs");
        let checkouts: Vec<&serde_json::Value> = jobs
            .values()
            .flat_map(|job| job["steps"].as_array().into_iter().flatten())
            .filter(|step| {
                step["uses"]
                    .as_str()
                    .is_some_and(|u| u.starts_with("actions/checkout@"))
            })
            .collect();
        assert!(!checkouts.is_empty(), "{name} checks out");
        for step in checkouts {
            assert_eq!(
                step["with"]["persist-credentials"],
                serde_json::Value::Bool(false),
                "{name}: {step}"
            );
        }
    }
}

/// Issue 17: a comment starts a job (which holds the repository's secrets) only when it is
/// a command from the owner, a member or a collaborator.
#[test]
fn the_workflow_starts_a_job_for_commands_of_trusted_authors_only() {
    let guard = WORKFLOW
        .split("(github.event_name == 'issue_comment' &&")
        .nth(1)
        .and_then(|rest| rest.split(")) ||").next())
        .expect("the `if:` has an issue_comment clause");
    assert!(
        guard.contains("startsWith(github.event.comment.body, '/opentiger')"),
        "{guard}"
    );
    assert!(
        guard.contains("github.event.comment.author_association"),
        "{guard}"
    );
    for trusted in ["\"OWNER\"", "\"MEMBER\"", "\"COLLABORATOR\""] {
        assert!(guard.contains(trusted), "{trusted} missing from {guard}");
    }
    for outsider in ["CONTRIBUTOR", "NONE", "FIRST_TIME"] {
        assert!(
            !guard.contains(outsider),
            "{outsider} must not start a job: {guard}"
        );
    }
}

/// Issue 49: every mistake one edit makes of the commented configuration `init` writes (a line
/// indented by one, its `:` dropped, an unclosed `[`, `{` or quote, a value starting with `@`,
/// a `: ` in a value, a tab, a list item among keys, the line cut in half) is named at a line of
/// the file with a key the user wrote — never a key the parser made up (`agents.judge.?`) —
/// and no syntax error gets a type's fix.
#[test]
fn one_edit_mistakes_of_the_initial_file_name_a_written_key_and_a_real_fix() {
    let text = config_text(Mode::Github, "main", None);
    let lines: Vec<&str> = text.lines().collect();
    let edits: [fn(&str) -> Vec<String>; 10] = [
        |l| vec![format!(" {l}")],
        |l| vec![l.replacen(':', "", 1)],
        |l| vec![format!("{l} [")],
        |l| vec![l.replacen(": ", ": \"", 1)],
        |l| vec![l.replacen(": ", ": @", 1)],
        |l| vec![format!("{l}: x")],
        |l| vec![format!("\t{}", l.trim_start())],
        |l| {
            let indent = l.len() - l.trim_start().len();
            vec![l.to_string(), format!("{}- item", " ".repeat(indent))]
        },
        |l| vec![l.replacen(": ", ": {", 1)],
        |l| vec![l.chars().take(l.chars().count() / 2).collect()],
    ];
    let mut errors = 0;
    for (i, line) in lines.iter().enumerate() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        for edit in edits {
            let mut changed: Vec<String> = lines.iter().map(|l| l.to_string()).collect();
            changed.splice(i..=i, edit(line));
            let file = changed.join("\n") + "\n";
            let Err(err) = load_str(&file, ".opentiger.yml") else {
                continue;
            };
            errors += 1;
            let said = err.to_string();
            assert!(!err.key.contains('?'), "{said}\nin:\n{file}");
            assert!(!err.fix.contains("right type"), "{said}\nin:\n{file}");
            assert!(
                err.line
                    .is_some_and(|l| l >= 1 && l as usize <= changed.len()),
                "{said}"
            );
            assert!(said.len() < 1200, "{said}");
        }
    }
    assert!(errors > 100, "only {errors} mistakes refused");
}

//! Tests of loading: defaults, links refused, each mistake named with its file, line, key and
//! fix, key lines found by indentation, the JSON Schema.

use super::*;
use crate::model::{Mode, Role};

/// Issue 36: the configuration is never read through a link.
#[test]
fn a_configuration_that_is_a_link_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("real.yml"), "mode: local-git\n").unwrap();
    let link = dir.path().join(".opentiger.yml");
    std::os::unix::fs::symlink(dir.path().join("real.yml"), &link).unwrap();
    let refused = load(&link, false).unwrap_err().to_string();
    assert!(refused.contains("symbolic link"), "{refused}");
    assert!(load(&dir.path().join("real.yml"), true).is_ok());
}

#[test]
fn empty_or_missing_means_defaults() {
    assert_eq!(load_str("", "x.yml").unwrap(), Config::default());
    assert_eq!(
        load_str("# only a comment\n", "x.yml").unwrap(),
        Config::default()
    );
    let missing = Path::new("/nonexistent/.opentiger.yml");
    let (config, source) = load(missing, false).unwrap();
    assert_eq!(config, Config::default());
    assert_eq!(source, ConfigSource::Defaults);
    let err = load(missing, true).unwrap_err();
    assert!(err.fix.contains("opentiger init"), "{err}");
}

#[test]
fn keys_override_defaults() {
    let config = load_str(
        "mode: local-git\nlimits:\n  max_runs_per_tick: 4\nagents:\n  worker:\n    count: 2\n",
        "c.yml",
    )
    .unwrap();
    assert_eq!(config.mode, Mode::LocalGit);
    assert_eq!(config.limits.max_runs_per_tick, 4);
    assert_eq!(config.limits.lease_minutes, 90);
    assert_eq!(config.role_slots(Role::Worker), 2);
    assert_eq!(config.role_slots(Role::Tester), 1);
}

#[test]
fn adapter_keys_are_inherited() {
    let config = load_str(
            "agents:\n  default:\n    max_turns: 40\n    pricing: {input_per_mtok: 1.25, output_per_mtok: 10}\n  judge:\n    max_turns: 8\n",
            "c.yml",
        )
        .unwrap();
    let worker = config.agents.effective(AgentRole::Task(Role::Worker));
    let judge = config.agents.effective(AgentRole::Judge);
    assert_eq!((worker.max_turns, judge.max_turns), (40, 8));
    let pricing = judge.pricing.expect("inherited from default");
    assert_eq!(
        (pricing.input_per_mtok, pricing.cached_input_per_mtok),
        (1.25, None)
    );
    let defaults = Config::default().agents.effective(AgentRole::Planner);
    assert_eq!(
        (defaults.max_turns, defaults.pricing),
        (crate::config::DEFAULT_MAX_TURNS, None)
    );
}

#[test]
fn bad_input_is_named_precisely() {
    let cases: &[(&str, Option<u64>, &str, &str, &str)] = &[
            // text, line, key, message contains, fix contains
            (
                "limits:\n  max_run_per_tick: 3\n",
                Some(2),
                "limits.max_run_per_tick",
                "unknown key `max_run_per_tick`",
                "did you mean `max_runs_per_tick`?",
            ),
            (
                "mdoe: github\n",
                Some(1),
                "mdoe",
                "unknown key `mdoe`",
                "did you mean `mode`?",
            ),
            (
                "mode: gihtub\n",
                Some(1),
                "mode",
                "`gihtub` is not an accepted value",
                "did you mean `github`?",
            ),
            (
                "limits:\n  lease_minutes: soon\n",
                Some(2),
                "limits.lease_minutes",
                "`soon` is not a whole number",
                "write a whole number",
            ),
            ("mode: [\n", Some(1), "mode", "", ""),
            (
                "agents:\n  worker:\n    executor: command\n",
                Some(3),
                "agents.worker.command",
                "needs the program",
                "argv list",
            ),
            (
                "agents:\n  default:\n    executor: codex\n  judge:\n    max_turns: 0\n",
                Some(5),
                "agents.judge.max_turns",
                "at least 1",
                "e.g. 100",
            ),
            (
                "agents:\n  worker:\n    pricing:\n      input_per_mtok: -1\n      output_per_mtok: 10\n",
                Some(4),
                "agents.worker.pricing.input_per_mtok",
                "-1 is not a price",
                "per million tokens",
            ),
            (
                "retry:\n  quota:\n    factor: 1\n",
                Some(3),
                "retry.quota.factor",
                "greater than 1",
                "use e.g. 2",
            ),
            (
                "policy:\n  allowed_paths: [\"../x\"]\n",
                Some(2),
                "policy.allowed_paths[0]",
                "is not a path pattern the policy can use",
                "relative",
            ),
            (
                "agents:\n  worker:\n    fallbacks:\n      - executor: codex\n      - executor: command\n        timeout_minutes: 1\n",
                Some(5),
                "agents.worker.fallbacks[1].command",
                "needs the program",
                "argv list",
            ),
            (
                "agents:\n  default:\n    fallbacks:\n    - executor: codex\n      timeout_minutes: 0\n",
                Some(5),
                "agents.default.fallbacks[0].timeout_minutes",
                "not a time limit",
                "in minutes",
            ),
            (
                "agents:\n  worker:\n    fallbacks:\n      - executor: codex\n        fallbacks: [{executor: aider}]\n",
                Some(5),
                "agents.worker.fallbacks[0].fallbacks",
                "cannot have fallbacks of its own",
                "list every executor in `agents.worker.fallbacks`",
            ),
            (
                "agents:\n  judge:\n    fallbacks:\n      - executor: codex\n        review: false\n",
                Some(5),
                "agents.judge.fallbacks[0].review",
                "belongs to the role",
                "set it as `agents.judge.review`",
            ),
            (
                "agents:\n  worker:\n    executor: codex\n    fallbacks:\n      - executor: aider\n      - timeout_minutes: 5\n",
                Some(6),
                "agents.worker.fallbacks[1]",
                "runs the same executor as `agents.worker` (`codex`)",
                "another executor or model",
            ),
            (
                "agents:\n  worker:\n    fallbacks:\n      - executor: codex\n        modle: o4-mini\n",
                Some(5),
                "agents.worker.fallbacks[0].modle",
                "unknown key `modle`",
                "did you mean `model`?",
            ),
            (
                "agents:\n  worker:\n    fallbacks: [{executor: codx}]\n",
                Some(3),
                "agents.worker.fallbacks[0].executor",
                "`codx` is not an accepted value",
                "did you mean `codex`?",
            ),
            (
                "escalation:\n  reasons:\n    stuk:\n      default: cancel\n",
                Some(3),
                "escalation.reasons.stuk",
                "unknown key `stuk`",
                "did you mean `stuck`?",
            ),
            (
                "escalation:\n  reasons:\n    stuck:\n      default: retry\n",
                Some(4),
                "escalation.reasons.stuck.default",
                "`retry` is not an accepted value",
                "use one of: cancel, retry_once, wait",
            ),
            (
                "escalation:\n  reasons:\n    approval:\n      default: retry_once\n",
                Some(4),
                "escalation.reasons.approval.default",
                "does not answer an approval question",
                "`cancel` or `wait`",
            ),
            (
                "mode: direct\nlimits: {}\nmode: github\n",
                Some(3),
                "mode",
                "`mode` appears twice",
                "merge the two `mode` sections",
            ),
        ];
    for (text, line, key, message, fix) in cases {
        let err = load_str(text, ".opentiger.yml").unwrap_err();
        assert_eq!(err.line, *line, "line for {text:?}: {err}");
        assert_eq!(err.key, *key, "key for {text:?}: {err}");
        assert!(err.message.contains(message), "message for {text:?}: {err}");
        assert!(err.fix.contains(fix), "fix for {text:?}: {err}");
        assert!(err.to_string().starts_with(".opentiger.yml:"), "{err}");
    }
}

#[test]
fn suggestions_need_closeness() {
    let keys: Vec<String> = ["mode", "merge", "limits"].map(String::from).to_vec();
    assert_eq!(did_you_mean("mdoe", &keys), Some("mode".to_string()));
    assert_eq!(did_you_mean("zzzzzzzz", &keys), None);
}

#[test]
fn key_lines_follow_indentation() {
    let text =
        "mode: github\nlimits:\n  # comment\n  lease_minutes: 3\nretry:\n  quota:\n    factor: 1\n";
    assert_eq!(line_of_key(text, "limits.lease_minutes"), Some(4));
    assert_eq!(line_of_key(text, "retry.quota.factor"), Some(7));
    assert_eq!(line_of_key(text, "merge.method"), None);
    assert_eq!(line_of_key(text, "limits.max_runs_per_tick"), Some(2));

    let lists = "agents:\n  worker:\n    fallbacks:\n      - executor: codex\n        env_passthrough:\n          - A\n      # a comment\n      - executor: command\n        command: [x]\n  judge:\n    fallbacks:\n    - model: m\n    - executor: aider\n  tester:\n    fallbacks: [{executor: codex}]\n";
    #[rustfmt::skip]
        let cases = [
            ("agents.worker.fallbacks[0].executor", Some(4)),
            ("agents.worker.fallbacks[0].env_passthrough", Some(5)),
            ("agents.worker.fallbacks[1]", Some(8)),
            ("agents.worker.fallbacks[1].command", Some(9)),
            ("agents.worker.fallbacks[1].model", Some(8)),
            ("agents.worker.fallbacks[2].command", Some(3)),
            ("agents.judge.fallbacks[1].executor", Some(13)),
            ("agents.judge.fallbacks[0].executor", Some(12)),
            ("agents.tester.fallbacks[0].executor", Some(15)),
        ];
    for (key, line) in cases {
        assert_eq!(line_of_key(lists, key), line, "{key}");
    }
}

#[test]
fn schema_lists_every_section() {
    let schema = schema_json();
    for key in [
        "mode", "state", "agents", "policy", "limits", "retry", "budget", "merge",
    ] {
        assert!(
            schema.contains(&format!("\"{key}\"")),
            "{key} missing from schema"
        );
    }
}

#[test]
fn home_files_and_writable_folders_are_checked_where_they_enter() {
    let cases = [
            ("agents:\n  worker:\n    home_files: [\"../.ssh/id_rsa\"]\n", Some("agents.worker.home_files[0]")),
            ("agents:\n  default:\n    home_files: [\"/etc/passwd\"]\n", Some("agents.default.home_files[0]")),
            ("agents:\n  judge:\n    fallbacks:\n      - executor: codex\n        home_files: [\".codex/\", \"\"]\n", Some("agents.judge.fallbacks[0].home_files[1]")),
            ("sandbox:\n  writable: [\"cache\"]\n", Some("sandbox.writable[0]")),
            ("sandbox:\n  writable: [\"/\"]\n", Some("sandbox.writable[0]")),
            ("sandbox:\n  readable: [\"opt/sdk\"]\n", Some("sandbox.readable[0]")),
            ("sandbox:\n  readable: [\"/\"]\n", Some("sandbox.readable[0]")),
            ("sandbox:\n  view: always\n", Some("sandbox.view")),
            ("sandbox:\n  view: namespace\n  readable: [\"/opt/sdk\"]\nlimits:\n  run:\n    memory_mb: 2048\nagents:\n  worker:\n    limits:\n      processes: 64\n", None),
            ("sandbox:\n  agent_home: shared\n", Some("sandbox.agent_home")),
            ("agents:\n  worker:\n    home_files: [\".claude.json\", \".codex/\"]\nsandbox:\n  agent_home: runner\n  writable: [\"/var/cache/x\"]\n", None),
        ];
    for (yaml, key) in cases {
        match (load_str(yaml, ".opentiger.yml"), key) {
            (Ok(_), None) => {}
            (Err(e), Some(key)) => assert_eq!(e.key, key, "{yaml}: {e}"),
            (Ok(_), Some(key)) => panic!("{yaml}: accepted, expected an error at {key}"),
            (Err(e), None) => panic!("{yaml}: {e}"),
        }
    }
}

/// Issue 47: an agent's limits are its own, key by key, over `agents.default`'s, over
/// `limits.run` (which the launch path applies to what no layer sets).
#[test]
fn an_agent_s_limits_inherit_key_by_key() {
    let config = load_str(
        "limits:\n  run:\n    memory_mb: 2048\nagents:\n  default:\n    limits:\n      memory_mb: 100\n      tmp_mb: 7\n  worker:\n    limits:\n      processes: 5\n      tmp_mb: 0\n",
        ".opentiger.yml",
    )
    .unwrap();
    assert_eq!(config.limits.run.memory_mb, 2048);
    assert_eq!(config.limits.run.file_mb, 4096, "the default");
    let worker = config
        .agents
        .effective(crate::config::AgentRole::Task(crate::model::Role::Worker));
    assert_eq!(
        worker.limits,
        crate::config::AgentLimits {
            memory_mb: Some(100),
            processes: Some(5),
            file_mb: None,
            tmp_mb: Some(0),
        }
    );
}

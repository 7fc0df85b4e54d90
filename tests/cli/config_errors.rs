//! A configuration that does not load, whatever the command: one message naming the file, the
//! line, the key and the fix, exit code 2, nothing written.

use super::common::TestRepo;

#[test]
fn config_errors_name_file_line_key_and_fix() {
    let cases: &[(&str, &[&str])] = &[
        (
            "limits:\n  max_run_per_tick: 3\n",
            &[
                ".opentiger.yml:2:",
                "`limits.max_run_per_tick`",
                "unknown key",
                "did you mean `max_runs_per_tick`?",
            ],
        ),
        (
            "mode: local-git\nbase_branch: [\n",
            &[".opentiger.yml:2:", "base_branch", "fix:"],
        ),
        (
            "limits:\n  lease_minutes: soon\n",
            &[
                ".opentiger.yml:2:",
                "`limits.lease_minutes`",
                "`soon` is not a whole number",
            ],
        ),
        (
            "mode: locl-git\n",
            &[".opentiger.yml:1:", "did you mean `local-git`?"],
        ),
    ];
    for (yaml, needles) in cases {
        let repo = TestRepo::bare();
        repo.file(".opentiger.yml", yaml);
        for args in [
            &["status"][..],
            &["tick", "--dry-run"],
            &["task", "list"],
            &["config", "show"],
        ] {
            let out = repo.run(args);
            assert_eq!(out.code, 2, "{yaml:?} {args:?}: {}", out.stderr);
            for needle in *needles {
                assert!(
                    out.stderr.contains(needle),
                    "{yaml:?}: `{needle}` not in\n{}",
                    out.stderr
                );
            }
            assert_eq!(
                out.stderr
                    .lines()
                    .filter(|l| l.starts_with("error:"))
                    .count(),
                1,
                "one message"
            );
            assert!(!out.stderr.contains("panicked"));
        }
        assert!(!repo.state_path().exists(), "nothing written for {yaml:?}");
    }
}

/// Issue 49: every command that reads the configuration exits 2 on a configuration error,
/// `doctor` included, and writes nothing.
#[test]
fn every_command_exits_2_on_a_configuration_error() {
    let repo = TestRepo::bare();
    repo.file(".opentiger.yml", "limits:\n  max_runs_per_tick: two\n");
    let out_dir = repo.path().join("out");
    let out = out_dir.to_str().unwrap();
    let commands: &[&[&str]] = &[
        &["tick"],
        &["tick", "--dry-run"],
        &["status"],
        &["status", "--json"],
        &["doctor"],
        &["plan"],
        &["pause"],
        &["resume"],
        &["task", "list"],
        &["task", "add", "--title", "t", "--goal", "g"],
        &["task", "show", "abc"],
        &["task", "retry", "abc"],
        &["task", "approve", "abc"],
        &["task", "cancel", "abc"],
        &["config", "show"],
        &["work", "--run", "abc"],
        &["work", "--run", "abc", "--output", out],
        &["apply", out],
    ];
    for args in commands {
        let run = repo.run(args);
        assert_eq!(run.code, 2, "{args:?}: {}\n{}", run.stdout, run.stderr);
        let said = format!("{}{}", run.stdout, run.stderr);
        assert!(said.contains(".opentiger.yml:2:"), "{args:?}: {said}");
        assert!(!said.contains("panicked"), "{args:?}: {said}");
    }
    assert!(!repo.state_path().exists(), "nothing written");
}

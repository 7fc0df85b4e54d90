use std::collections::BTreeMap;

use super::*;
use crate::config::WhenChanged;

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn parse_one(text: &str) -> CommandSpec {
    match parse_command(text).as_deref() {
        Ok([spec]) => spec.clone(),
        other => panic!("`{text}`: {other:?}"),
    }
}

type Parsed<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)]);

#[test]
fn parses_words_table() {
    #[rustfmt::skip]
    let cases: &[(&str, Parsed)] = &[
        ("cargo test", ("cargo", &["test"], &[])),
        ("  cargo   test\t--all  ", ("cargo", &["test", "--all"], &[])),
        ("cargo test -- --nocapture", ("cargo", &["test", "--", "--nocapture"], &[])),
        ("npm run \"test:unit\"", ("npm", &["run", "test:unit"], &[])),
        ("echo 'a && b'", ("echo", &["a && b"], &[])),
        ("echo \"a && b | c; d > e\"", ("echo", &["a && b | c; d > e"], &[])),
        ("echo '$(x) `y` $HOME |;<>&()'", ("echo", &["$(x) `y` $HOME |;<>&()"], &[])),
        ("echo 'it''s'", ("echo", &["its"], &[])),
        ("echo '' \"\"", ("echo", &["", ""], &[])),
        ("grep \"a \\\"b\\\" c\\\\d \\n\" f", ("grep", &["a \"b\" c\\d \\n", "f"], &[])),
        ("echo \"\\$(x) \\`y\\`\"", ("echo", &["$(x) `y`"], &[])),
        ("echo a\\ b \\&\\& \\| \\$HOME", ("echo", &["a b", "&&", "|", "$HOME"], &[])),
        ("echo pre'mid'\"post\"", ("echo", &["premidpost"], &[])),
        ("cargo test \\\n  --all", ("cargo", &["test", "--all"], &[])),
        ("echo $ a$1 cost$", ("echo", &["$", "a$1", "cost$"], &[])),
        ("rustfmt --check src/*.rs ~/x", ("rustfmt", &["--check", "src/*.rs", "~/x"], &[])),
        ("echo # not a comment", ("echo", &["#", "not", "a", "comment"], &[])),
        ("echo é", ("echo", &["é"], &[])),
        // Leading assignments are the environment; later ones are arguments.
        ("FOO=1 BAR=x cargo test", ("cargo", &["test"], &[("FOO", "1"), ("BAR", "x")])),
        ("FOO= cargo test", ("cargo", &["test"], &[("FOO", "")])),
        ("FOO=\"a b\" _x9='c=d' make", ("make", &[], &[("FOO", "a b"), ("_x9", "c=d")])),
        ("RUSTFLAGS=-Dwarnings cargo build", ("cargo", &["build"], &[("RUSTFLAGS", "-Dwarnings")])),
        ("cargo test FOO=1", ("cargo", &["test", "FOO=1"], &[])),
        ("\"FOO=1\" cargo", ("FOO=1", &["cargo"], &[])),
        ("F\\OO=1 cargo", ("FOO=1", &["cargo"], &[])),
        ("1FOO=x cargo", ("1FOO=x", &["cargo"], &[])),
        ("a-b=1 cargo", ("a-b=1", &["cargo"], &[])),
        ("=1 cargo", ("=1", &["cargo"], &[])),
        ("/usr/bin/env FOO=1 make", ("/usr/bin/env", &["FOO=1", "make"], &[])),
        ("./scripts/check.sh --fast", ("./scripts/check.sh", &["--fast"], &[])),
    ];
    for (text, (program, args, env)) in cases {
        let spec = parse_one(text);
        assert_eq!(spec.program, *program, "`{text}`");
        assert_eq!(spec.args, strings(args), "`{text}`");
        let env: Vec<(String, String)> = env
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        assert_eq!(spec.env, env, "`{text}`");
        assert_eq!(spec.text, text.trim(), "`{text}`");
    }
}

#[test]
fn splits_on_unquoted_and_table() {
    #[rustfmt::skip]
    let cases: &[(&str, &[(&str, &str)])] = &[
        ("cargo build && cargo test", &[("cargo build", "cargo"), ("cargo test", "cargo")]),
        ("make&&make check", &[("make", "make"), ("make check", "make")]),
        ("FOO=1 a && b 'x && y' && c", &[("FOO=1 a", "a"), ("b 'x && y'", "b"), ("c", "c")]),
        ("echo \"&&\"", &[("echo \"&&\"", "echo")]),
        ("echo \\&\\& ls", &[("echo \\&\\& ls", "echo")]),
    ];
    for (text, expected) in cases {
        let specs = match parse_command(text) {
            Ok(specs) => specs,
            Err(err) => panic!("`{text}`: {err}"),
        };
        let got: Vec<(&str, &str)> = specs
            .iter()
            .map(|s| (s.text.as_str(), s.program.as_str()))
            .collect();
        assert_eq!(&got, expected, "`{text}`");
    }
}

#[test]
fn rejects_table() {
    const OPS: &str = "Shell operators are not allowed";
    #[rustfmt::skip]
    let cases: &[(&str, &[&str])] = &[
        ("", &["empty"]),
        ("  \t ", &["empty"]),
        ("cargo test | tee log", &[OPS, "found `|`", "split into separate commands, or put the pipeline in a script file"]),
        ("cargo test |& tee log", &[OPS, "`|`"]),
        ("cargo test || true", &[OPS, "`||`", "script file"]),
        ("cargo build; cargo test", &[OPS, "`;`", "join them with `&&`"]),
        ("cargo build ;", &[OPS, "`;`"]),
        ("wc -l < file", &[OPS, "`<`", "redirection"]),
        ("cargo test > out.txt", &[OPS, "`>`", "redirection"]),
        ("cargo test >> out.txt", &[OPS, "`>`"]),
        ("cargo test 2>&1", &[OPS, "`>`"]),
        ("npm run dev &", &[OPS, "`&`", "foreground"]),
        ("a & b", &[OPS, "`&`"]),
        ("a &&& b", &[OPS, "`&`"]),
        ("echo \\&& ls", &[OPS, "`&`"]),
        ("echo `date`", &[OPS, "backtick"]),
        ("echo \"`date`\"", &[OPS, "backtick"]),
        ("echo $(date)", &[OPS, "`$(`", "write the value itself"]),
        ("echo \"x$(date)\"", &[OPS, "`$(`"]),
        ("echo $((1+1))", &[OPS, "`$(`"]),
        ("(make)", &[OPS, "parenthesis"]),
        ("make (x)", &[OPS, "parenthesis"]),
        ("cargo build\ncargo test", &[OPS, "line break", "separate commands"]),
        ("echo $HOME", &["`$HOME` would be expanded", "KEY=value"]),
        ("echo \"$HOME/x\"", &["`$HOME`"]),
        ("echo ${HOME}/x", &["`${HOME}`"]),
        ("echo $_x", &["`$_x`"]),
        ("echo 'abc", &["single (') quote is never closed"]),
        ("echo \"abc", &["double (\") quote is never closed"]),
        ("echo \"a\\\"", &["double"]),
        ("echo abc\\", &["escapes nothing"]),
        ("&& cargo test", &["`&&` with no command on one side"]),
        ("cargo test &&", &["`&&` with no command"]),
        ("a && && b", &["`&&` with no command"]),
        ("a &&   && b", &["`&&` with no command"]),
        ("FOO=1", &["names no program", "FOO=1 cargo test"]),
        ("FOO=1 BAR=2", &["names no program"]),
        ("\"\" cargo", &["names no program"]),
        ("cd sub && make", &["`cd` is a shell builtin; commands run without a shell (", "make -C dir"]),
        ("export FOO=1", &["`export` is a shell builtin", "leading `KEY=value` words"]),
        ("FOO=1 source env.sh", &["`source` is a shell builtin", "script file"]),
        (". ./env.sh", &["`.` is a shell builtin"]),
        ("make && set -e", &["`set` is a shell builtin"]),
    ];
    for (text, wanted) in cases {
        let err = match parse_command(text) {
            Ok(specs) => panic!("`{text}` parsed: {specs:?}"),
            Err(err) => err.to_string(),
        };
        for want in *wanted {
            assert!(err.contains(want), "`{text}`: `{err}` lacks `{want}`");
        }
        // Every message names the command, except the empty one.
        if !text.trim().is_empty() {
            assert!(
                err.contains(&format!("`{}`", text.trim())),
                "`{text}`: {err}"
            );
        }
    }
}

#[test]
fn rejects_every_builtin() {
    for builtin in [
        "cd", "source", ".", "export", "set", "unset", "alias", "eval", "exec", "exit", "ulimit",
        "umask", "shopt", "trap",
    ] {
        let text = format!("{builtin} x");
        match parse_command(&text) {
            Err(CommandError::Builtin { builtin: found, .. }) => assert_eq!(found, builtin),
            other => panic!("`{text}`: {other:?}"),
        }
    }
    // Only the program position counts, and only exact words.
    for text in ["echo cd", "cdk deploy", "./cd", "make set"] {
        assert!(parse_command(text).is_ok(), "`{text}`");
    }
}

#[test]
fn denied_by_table() {
    let builtin = builtin_denied_commands();
    let own = strings(&["make install", "  ", "", "bin/deploy", "git", "git push"]);
    #[rustfmt::skip]
    let cases: &[(&str, &[String], Option<&str>)] = &[
        ("sudo make", &builtin, Some("sudo")),
        ("/usr/bin/sudo make", &builtin, Some("sudo")),
        ("FOO=1 sudo make", &builtin, Some("sudo")),
        ("sudoku", &builtin, None),
        ("su -", &builtin, Some("su")),
        ("rm -rf /", &builtin, Some("rm -rf /")),
        ("rm -rf / --no-preserve-root", &builtin, Some("rm -rf /")),
        ("rm -rf ~", &builtin, Some("rm -rf ~")),
        ("rm -rf build", &builtin, None),
        ("rm -rf", &builtin, None),
        ("chmod 777 f", &builtin, Some("chmod 777")),
        ("chmod -R 777 .", &builtin, Some("chmod -R 777")),
        ("chmod 755 f", &builtin, None),
        ("git push origin main", &builtin, Some("git push")),
        ("git reset --hard HEAD~1", &builtin, Some("git reset --hard")),
        ("git reset --soft HEAD~1", &builtin, None),
        ("git status", &builtin, None),
        ("curl https://example.com", &builtin, Some("curl")),
        ("./tools/curl x", &builtin, Some("curl")),
        ("cargo test", &builtin, None),
        ("make install", &own, Some("make install")),
        ("make", &own, None),
        ("bin/deploy --prod", &own, Some("bin/deploy")),
        ("other/deploy", &own, None),
        ("deploy", &own, None),
        ("git push", &own, Some("git")),
        ("cargo test", &[], None),
    ];
    for (text, denied, expected) in cases {
        let spec = parse_one(text);
        assert_eq!(denied_by(&spec, denied).as_deref(), *expected, "`{text}`");
    }
}

#[test]
fn builtin_denied_commands_parse_and_deny_themselves() {
    let builtin = builtin_denied_commands();
    assert_eq!(builtin.len(), 16);
    for entry in &builtin {
        let spec = parse_one(entry);
        assert_eq!(denied_by(&spec, &builtin).as_deref(), Some(entry.as_str()));
    }
}

#[test]
fn command_source_display() {
    #[rustfmt::skip]
    let cases = [
        (CommandSource::Task, "task"), (CommandSource::Config, "config"),
        (CommandSource::Role, "role"), (CommandSource::WhenChanged, "when_changed"),
    ];
    for (source, text) in cases {
        assert_eq!(source.to_string(), text);
    }
}

fn config() -> VerifyConfig {
    let mut by_role = BTreeMap::new();
    by_role.insert(Role::Worker, strings(&["cargo clippy"]));
    by_role.insert(Role::Tester, strings(&["cargo test --doc"]));
    VerifyConfig {
        commands: strings(&["cargo test"]),
        by_role,
        when_changed: vec![
            WhenChanged {
                paths: strings(&["docs/**", "*.md"]),
                commands: strings(&["mdbook build docs"]),
            },
            WhenChanged {
                paths: strings(&["**/*.rs"]),
                commands: strings(&["cargo fmt --check"]),
            },
            WhenChanged {
                paths: vec![],
                commands: strings(&["never"]),
            },
        ],
        denied_commands: strings(&["make install"]),
        timeout_seconds: 300,
    }
}

/// A plan as (command text, source) pairs.
type Planned = Vec<(String, CommandSource)>;

/// Task commands, config, changed paths, and the substrings the error must contain.
type ErrorCase<'a> = (&'a [&'a str], VerifyConfig, &'a [&'a str], &'a [&'a str]);

fn planned(plan: &VerifyPlan) -> Planned {
    plan.commands
        .iter()
        .map(|c| (c.spec.text.clone(), c.source))
        .collect()
}

#[test]
fn plan_table() {
    use CommandSource::{Config, Role as R, Task, WhenChanged as W};
    let p = |items: &[(&str, CommandSource)]| -> Planned {
        items.iter().map(|(t, s)| (t.to_string(), *s)).collect()
    };
    #[rustfmt::skip]
    let cases: Vec<(&[&str], Role, &[&str], Planned)> = vec![
        // Order: task, config, role, when_changed (in rule order).
        (&["cargo build"], Role::Worker, &["src/lib.rs"],
            p(&[("cargo build", Task), ("cargo test", Config), ("cargo clippy", R), ("cargo fmt --check", W)])),
        (&[], Role::Tester, &["README.md", "src/a.rs"],
            p(&[("cargo test", Config), ("cargo test --doc", R), ("mdbook build docs", W), ("cargo fmt --check", W)])),
        (&[], Role::Docser, &["docs/x/y.md"], p(&[("cargo test", Config), ("mdbook build docs", W)])),
        // Anchored globs: `*.md` is the root only.
        (&[], Role::Docser, &["sub/README.md"], p(&[("cargo test", Config)])),
        (&[], Role::Docser, &[], p(&[("cargo test", Config)])),
        // Duplicates dropped, first kept, also inside `&&` chains and with other spacing.
        (&["cargo test", "cargo build && cargo  test", "cargo clippy"], Role::Worker, &[],
            p(&[("cargo test", Task), ("cargo build", Task), ("cargo clippy", Task)])),
        // A different environment is a different command.
        (&["FOO=1 cargo test"], Role::Docser, &[], p(&[("FOO=1 cargo test", Task), ("cargo test", Config)])),
    ];
    for (i, (task, role, changed, expected)) in cases.into_iter().enumerate() {
        match plan_commands(&strings(task), &config(), role, &strings(changed)) {
            Ok(plan) => assert_eq!(planned(&plan), expected, "case {i}"),
            Err(err) => panic!("case {i}: {err}"),
        }
    }
    let empty = plan_commands(&[], &VerifyConfig::default(), Role::Worker, &[]);
    assert_eq!(empty, Ok(VerifyPlan::default()));
}

#[test]
fn plan_errors_table() {
    let mut bad_role = config();
    bad_role
        .by_role
        .insert(Role::Worker, strings(&["cargo test | tee log"]));
    let mut pushing = config();
    pushing.commands = strings(&["cargo build && git push"]);
    let mut bad_glob = config();
    bad_glob.when_changed[1].paths = strings(&["/abs/**"]);
    let mut denied_rule = config();
    denied_rule.when_changed[1].commands = strings(&["sudo cargo fmt"]);
    #[rustfmt::skip]
    let cases: Vec<ErrorCase> = vec![
        (&["make install"], config(), &[],
            &["`make install` (from the task's `commands`) is denied", "`verify.denied_commands`"]),
        (&[], pushing, &[],
            &["`git push` (from `verify.commands` in .opentiger.yml)", "matches `git push`",
              "always denied", "the runner, not the agent, pushes"]),
        (&[], bad_role, &[],
            &["`verify.by_role.worker` in .opentiger.yml", "`cargo test | tee log`",
              "Shell operators are not allowed", "fix it there"]),
        (&[], bad_glob, &[], &["`verify.when_changed[1].paths`", "`/abs/**`", "leading `/`"]),
        (&[], denied_rule, &["src/a.rs"],
            &["`verify.when_changed[1].commands` in .opentiger.yml", "matches `sudo`"]),
        (&["cd x"], config(), &[], &["the task's `commands`", "`cd` is a shell builtin"]),
    ];
    for (i, (task, cfg, changed, wanted)) in cases.into_iter().enumerate() {
        let err = match plan_commands(&strings(task), &cfg, Role::Worker, &strings(changed)) {
            Ok(plan) => panic!("case {i} planned {plan:?}"),
            Err(err) => err.to_string(),
        };
        for want in wanted {
            assert!(err.contains(want), "case {i}: `{err}` lacks `{want}`");
        }
    }
}

#[test]
fn plan_errors_carry_the_source() {
    let mut cfg = config();
    cfg.commands = strings(&["curl x"]);
    match plan_commands(&[], &cfg, Role::Worker, &[]) {
        Err(PlanError::Denied {
            command,
            entry,
            source,
            builtin,
            ..
        }) => {
            assert_eq!(
                (command.as_str(), entry.as_str(), source, builtin),
                ("curl x", "curl", CommandSource::Config, true)
            );
        }
        other => panic!("{other:?}"),
    }
    match plan_commands(&strings(&["a;b"]), &cfg, Role::Worker, &[]) {
        Err(PlanError::Invalid {
            command,
            source,
            error,
            ..
        }) => {
            assert_eq!((command.as_str(), source), ("a;b", CommandSource::Task));
            assert!(matches!(
                error,
                CommandError::Operator {
                    operator: ShellOperator::Semicolon,
                    ..
                }
            ));
        }
        other => panic!("{other:?}"),
    }
}

//! The attack suite of issue 16: each case is a scripted agent on a real git repository, run by
//! the real binary with a canary token (`GITHUB_TOKEN`) and a passthrough key in its
//! environment. Each attack must fail to get the canary or to escape, and each attempt the
//! runner can see is reported as a policy violation. After every case the canary is looked for
//! in the state file, the tick's output (its log), the temp folder and whatever the agent
//! managed to collect.
//!
//! The ticks run as an unprivileged user from a shell holding the token, as on a hosted runner
//! (`common::unprivileged`); the escapes of issues 25 and 31 are `attacks_escape.rs`.

use crate::common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::unprivileged::{base64_of, Jail, CANARY};
use common::{bare_origin, git, minute, Out, Setup};

/// A key passed through to the agent (`env_passthrough`).
const API_KEY: &str = "sk-ant-api03-PASSTHROUGHkey0123456789abcdefghijk";

/// One repository under attack, with its own temp folder and a place the agent drops its loot.
struct Case {
    jail: Jail,
}

impl std::ops::Deref for Case {
    type Target = Jail;
    fn deref(&self) -> &Jail {
        &self.jail
    }
}

impl Case {
    fn new(setup: Setup) -> Case {
        Case {
            jail: Jail::new(setup),
        }
    }

    /// A case under Landlock, with a loot folder its agents may write (`Jail::confined`).
    fn confined() -> Case {
        Case {
            jail: Jail::confined(Setup {
                default_agent: "    env_passthrough: [ANTHROPIC_API_KEY]\n",
                ..Setup::default()
            }),
        }
    }

    /// A plain case: every agent gets the passthrough key.
    fn plain() -> Case {
        Case::new(Setup {
            default_agent: "    env_passthrough: [ANTHROPIC_API_KEY]\n",
            ..Setup::default()
        })
    }

    fn add_task(&self) -> String {
        self.jail
            .add_task(&["--title", "Attack", "--goal", "anything"])
    }

    /// One tick with the canary in the parent shell and the key in the environment.
    fn tick(&self, at: u32) -> Out {
        self.jail
            .run(&minute(at), &["tick"], &[("ANTHROPIC_API_KEY", API_KEY)])
    }

    /// The first run's failure code and error of the task.
    fn first_run(&self, id: &str) -> (String, String) {
        let runs = self.jail.runs(id);
        let run = &runs[0];
        (
            run["failure_code"].as_str().unwrap_or("").to_string(),
            run["error"].as_str().unwrap_or("").to_string(),
        )
    }

    /// Neither secret anywhere the runner writes, nor in what the agent collected.
    fn assert_no_leak(&self, out: &Out) {
        let base64 = base64_of(&format!("x-access-token:{CANARY}"));
        for secret in [CANARY, API_KEY, base64.as_str()] {
            assert!(
                !out.stdout.contains(secret) && !out.stderr.contains(secret),
                "the tick's output holds a secret:\n{}\n{}",
                out.stdout,
                out.stderr
            );
            for file in files_under(self.g.path()).chain(files_under(self.tmp.path())) {
                if file.starts_with(self.g.path().join(".git/objects")) {
                    continue; // compressed; what reached a branch is checked by content below
                }
                let bytes = std::fs::read(&file).unwrap_or_default();
                assert!(
                    !contains(&bytes, secret.as_bytes()),
                    "{} holds a secret",
                    file.display()
                );
            }
            // The agent is given the passthrough key; only the forge token must stay out of reach.
            if let (Ok(loot), false) = (std::fs::read(&self.loot), secret == API_KEY) {
                assert!(
                    !contains(&loot, secret.as_bytes()),
                    "the agent got a secret: {}",
                    String::from_utf8_lossy(&loot)
                );
            }
        }
        let all = git(self.g.path(), &["log", "--all", "-p", "--format=%B"]);
        assert!(!all.contains(CANARY) && !all.contains(API_KEY), "{all}");
    }

    fn common_config(&self) -> String {
        std::fs::read_to_string(self.g.path().join(".git/config")).expect("config")
    }
}

fn files_under(dir: &Path) -> impl Iterator<Item = PathBuf> {
    let mut stack = vec![dir.to_path_buf()];
    let mut files = Vec::new();
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let Ok(kind) = entry.file_type() else {
                continue;
            };
            if kind.is_dir() {
                stack.push(entry.path());
            } else if kind.is_file() {
                files.push(entry.path());
            }
        }
    }
    files.into_iter()
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// A script that writes the environment it runs with, and its parent's, to the loot file.
fn thief(case: &Case) -> PathBuf {
    let path = case.g.tools_path().join("x.sh");
    let script = format!(
        "#!/bin/sh\necho ran >> {loot}\nenv >> {loot}\ncat /proc/$PPID/environ >> {loot} 2>/dev/null\ncat\nexit 0\n",
        loot = case.loot.display()
    );
    std::fs::write(&path, script).expect("thief");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

/// An agent that writes `lines` into its own repository's config (the one `git` finds in its
/// workspace) and tries the runner's by its path, then changes a file.
fn config_attack(case: &Case, lines: &[String]) {
    let runner = case.g.path().join(".git/config");
    let mut script = String::from("#!/bin/sh\nOWN=\"$(git rev-parse --git-common-dir)/config\"\n");
    for line in lines {
        script.push_str(&format!("git config --file \"$OWN\" {line}\n"));
        script.push_str(&format!(
            "git config --file {} {line} 2>/dev/null\n",
            runner.display()
        ));
    }
    script.push_str("echo changed > changed.txt\n");
    case.g.agent(&script);
}

/// Issue 35: what an agent writes into git configuration is never run by the runner, whatever
/// it names: its own repository is never read by the runner's git, and the runner's is out of
/// its reach (Landlock). The run lands as any other, the runner's configuration is as it was,
/// and nothing reached the loot folder.
fn run_config_attack(case: Case, lines: &[String], with_origin: bool) {
    if with_origin {
        let origin = bare_origin(case.g.tools_path());
        git(
            case.g.path(),
            &["remote", "add", "origin", origin.to_str().unwrap()],
        );
        git(case.g.path(), &["push", "-q", "origin", "main"]);
    }
    let before = case.common_config();
    config_attack(&case, lines);
    let id = case.add_task();
    let out = case.tick(0);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let (code, error) = case.first_run(&id);
    assert_eq!(code, "", "the run is an ordinary one: {error}");
    assert_eq!(case.common_config(), before, "the runner's configuration");
    assert!(
        !case.loot_text().contains("ran"),
        "the runner ran the agent's program: {}",
        case.loot_text()
    );
    // The tick's next round (issue 38) runs git again for the judge's merge: still nothing of
    // the agent's.
    assert!(out.stdout.contains("approved and merged"), "{}", out.stdout);
    case.assert_no_leak(&out);
}

#[test]
fn fsmonitor_in_the_agent_s_config_is_never_run() {
    let case = Case::confined();
    let x = thief(&case);
    let lines = [format!("core.fsmonitor {}", x.display())];
    run_config_attack(case, &lines, false);
}

#[test]
fn hooks_path_in_the_agent_s_config_is_never_run() {
    let case = Case::confined();
    let x = thief(&case);
    let hooks = case.g.tools_path().join("hooks");
    std::fs::create_dir_all(&hooks).unwrap();
    for hook in [
        "pre-commit",
        "post-commit",
        "post-checkout",
        "reference-transaction",
    ] {
        std::fs::copy(&x, hooks.join(hook)).unwrap();
    }
    let lines = [format!("core.hooksPath {}", hooks.display())];
    run_config_attack(case, &lines, false);
}

#[test]
fn ssh_command_and_remote_url_in_the_agent_s_config_change_nothing() {
    run_config_attack(
        Case::confined(),
        &[
            "core.sshCommand /bin/false".to_string(),
            "remote.origin.url ssh://example.invalid/x.git".to_string(),
        ],
        true,
    );
}

#[test]
fn a_credential_helper_in_the_agent_s_config_is_never_run() {
    run_config_attack(
        Case::confined(),
        &["credential.helper '!cat /proc/self/environ'".to_string()],
        true,
    );
}

/// A filter and a textconv named by the agent's `.gitattributes`, defined in its own config
/// (and, attempted, the runner's): the bytes land as written, no program of the agent's runs.
#[test]
fn a_filter_in_the_agent_s_config_is_never_run() {
    let case = Case::confined();
    let x = thief(&case);
    let before = case.common_config();
    let runner = case.g.path().join(".git/config");
    case.g.agent(&format!(
        "#!/bin/sh\nfor CONF in \"$(git rev-parse --git-common-dir)/config\" {runner}; do\n  git config --file \"$CONF\" filter.evil.clean {x} 2>/dev/null\n  git config --file \"$CONF\" filter.evil.smudge {x} 2>/dev/null\n  git config --file \"$CONF\" diff.evil.textconv {x} 2>/dev/null\ndone\necho '* filter=evil diff=evil' > .gitattributes\necho changed > changed.txt\n",
        x = x.display(),
        runner = runner.display()
    ));
    let id = case.add_task();
    let out = case.tick(0);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (code, error) = case.first_run(&id);
    assert_eq!(code, "", "{error}");
    assert_eq!(case.common_config(), before);
    let later = case.tick(10);
    assert_eq!(later.code, 0, "{}", later.stderr);
    assert_eq!(
        case.g.file_on_main("changed.txt").as_deref(),
        Some("changed\n"),
        "the bytes as the agent wrote them: {}",
        later.stdout
    );
    assert!(
        !case.loot_text().contains("ran"),
        "the filter ran: {}",
        case.loot_text()
    );
    case.assert_no_leak(&out);
    case.assert_no_leak(&later);
}

#[test]
fn the_runner_environment_cannot_be_read_through_proc() {
    // Under Landlock: a process of the runner's user outside any sandbox reads the step shell's
    // environment, token and all (the twin below shows the loot channel works).
    let case = Case {
        jail: Jail::confined(Setup {
            default_agent: "    env_passthrough: [ANTHROPIC_API_KEY]\n",
            ..Setup::default()
        }),
    };
    case.g.agent(&format!(
        "#!/bin/sh\necho \"run $OPENTIGER_RUN_ID\" >> {loot}\ncat /proc/$PPID/environ >> {loot} 2>/dev/null\nfor f in /proc/*/environ; do cat \"$f\" >> {loot} 2>/dev/null; done\ncat /proc/$PPID/cmdline >> {loot} 2>/dev/null\necho x > x.txt\n",
        loot = case.loot.display()
    ));
    let id = case.add_task();
    let out = case.tick(0);
    assert_eq!(out.code, 0, "{}", out.stderr);
    case.assert_no_leak(&out);
    // The twin: what the agent may read (its own run id) reached the loot.
    let run_id = case.runs(&id)[0]["id"].as_str().unwrap().to_string();
    assert!(
        case.loot_text().contains(&format!("run {run_id}")),
        "{}",
        case.loot_text()
    );
}

#[test]
fn an_extraheader_left_by_the_checkout_is_not_there_for_the_agent() {
    let case = Case::plain();
    let header = format!(
        "AUTHORIZATION: basic {}",
        base64_of(&format!("x-access-token:{CANARY}"))
    );
    git(
        case.g.path(),
        &["config", "http.https://github.com/.extraheader", &header],
    );
    case.g.agent(&format!(
        "#!/bin/sh\ncat \"$(git rev-parse --git-common-dir)/config\" >> {loot}\ngit config --get-regexp 'http\\..*' >> {loot}\necho x > x.txt\n",
        loot = case.loot.display()
    ));
    case.add_task();
    let out = case.tick(0);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let loot = std::fs::read_to_string(&case.loot).unwrap_or_default();
    assert!(!loot.contains("extraheader"), "{loot}");
    // Put back for the job's later steps once the tick ended; nowhere else.
    let key = "http.https://github.com/.extraheader";
    assert_eq!(git(case.g.path(), &["config", key]), header);
    git(case.g.path(), &["config", "--unset", key]);
    case.assert_no_leak(&out);
}

fn result_file_attack(script: &str, what: &str) {
    let case = Case::plain();
    case.g.agent(script);
    let id = case.add_task();
    let started = Instant::now();
    let out = case.tick(0);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(started.elapsed() < Duration::from_secs(50));
    let (code, error) = case.first_run(&id);
    assert_eq!(code, "policy_violation", "{error}");
    assert!(
        error.contains("result file") && error.contains(what),
        "{error}"
    );
    case.assert_no_leak(&out);
}

#[test]
fn a_result_file_linked_to_dev_zero_is_refused_not_read() {
    result_file_attack(
        "#!/bin/sh\necho x > x.txt\nln -s /dev/zero \"$OPENTIGER_RESULT_FILE\"\n",
        "symbolic link",
    );
}

#[test]
fn a_result_file_that_is_a_fifo_is_refused_without_blocking() {
    result_file_attack(
        "#!/bin/sh\necho x > x.txt\nmkfifo \"$OPENTIGER_RESULT_FILE\"\n",
        "not a regular file",
    );
}

#[test]
fn a_huge_result_file_is_refused() {
    result_file_attack(
        "#!/bin/sh\necho x > x.txt\nhead -c 2000000 /dev/zero | tr '\\0' ' ' > \"$OPENTIGER_RESULT_FILE\"\n",
        "1 MiB",
    );
}

#[test]
fn symlinks_out_of_the_tree_are_a_policy_violation() {
    for target in ["/etc/passwd", "../../..", "../../outside.txt"] {
        let case = Case::plain();
        case.g.agent(&format!(
            "#!/bin/sh\nmkdir -p out\nln -s {target} out/link\necho x > x.txt\n"
        ));
        let id = case.add_task();
        let out = case.tick(0);
        assert_eq!(out.code, 0, "{}", out.stderr);
        let (code, error) = case.first_run(&id);
        assert_eq!(code, "policy_violation", "{target}: {error}");
        assert!(
            error.contains("out/link") && error.contains("outside"),
            "{error}"
        );
        assert!(case.g.file_on_main("out/link").is_none());
        case.assert_no_leak(&out);
    }
}

#[test]
fn a_symlink_inside_the_allowed_paths_is_fine() {
    let case = Case::plain();
    case.g
        .agent("#!/bin/sh\nmkdir -p out\necho x > out/x.txt\nln -s x.txt out/link\n");
    let id = case.add_task();
    let out = case.tick(0);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (code, error) = case.first_run(&id);
    assert_eq!(code, "", "{error}");
}

#[test]
fn a_committed_passthrough_key_is_a_policy_violation_naming_the_line() {
    let case = Case::plain();
    case.g
        .agent("#!/bin/sh\nprintf 'a = 1\\nkey = %s\\n' \"$ANTHROPIC_API_KEY\" > settings.toml\n");
    let id = case.add_task();
    let out = case.tick(0);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (code, error) = case.first_run(&id);
    assert_eq!(code, "policy_violation", "{error}");
    assert!(error.contains("settings.toml:2"), "{error}");
    assert!(case.g.file_on_main("settings.toml").is_none());
    case.assert_no_leak(&out);
}

#[test]
fn a_passthrough_key_inside_a_binary_file_is_a_policy_violation() {
    let case = Case::plain();
    case.g.agent(
        "#!/bin/sh\nprintf '\\000\\001\\377PNG\\000%s\\000\\002' \"$ANTHROPIC_API_KEY\" > logo.bin\n",
    );
    let id = case.add_task();
    let out = case.tick(0);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (code, error) = case.first_run(&id);
    assert_eq!(code, "policy_violation", "{error}");
    assert!(error.contains("logo.bin:1"), "{error}");
    assert!(case.g.file_on_main("logo.bin").is_none());
    case.assert_no_leak(&out);
}

#[test]
fn a_committed_token_shape_is_a_policy_violation() {
    let case = Case::plain();
    case.g.agent(
        "#!/bin/sh\nprintf 'x\\n-----BEGIN OPENSSH PRIVATE KEY-----\\nabc\\n' > notes.txt\n",
    );
    let id = case.add_task();
    let out = case.tick(0);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (code, error) = case.first_run(&id);
    assert_eq!(code, "policy_violation", "{error}");
    assert!(
        error.contains("notes.txt:2") && error.contains("private key"),
        "{error}"
    );
}

#[test]
fn a_judge_echoing_the_key_leaves_no_trace_of_it() {
    let case = Case::plain();
    case.g.agent(
        "#!/bin/sh\necho x > x.txt\necho \"{\\\"summary\\\": \\\"done with $ANTHROPIC_API_KEY and $GITHUB_TOKEN\\\"}\" > \"$OPENTIGER_RESULT_FILE\"\n",
    );
    case.g.judge(
        "#!/bin/sh\necho \"my key is $ANTHROPIC_API_KEY\" >&2\necho \"{\\\"verdict\\\": \\\"request_changes\\\", \\\"summary\\\": \\\"key $ANTHROPIC_API_KEY\\\", \\\"findings\\\": [\\\"found $ANTHROPIC_API_KEY here\\\"]}\" > \"$OPENTIGER_RESULT_FILE\"\n",
    );
    case.add_task();
    // The run and its review are rounds of one tick (issue 38); the next tick reviews again.
    let first = case.tick(0);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert!(first.stdout.contains("request"), "{}", first.stdout);
    case.assert_no_leak(&first);
    let second = case.tick(5);
    assert_eq!(second.code, 0, "{}", second.stderr);
    case.assert_no_leak(&second);
    let state = std::fs::read(case.g.repo.state_path()).unwrap();
    assert!(
        contains(&state, b"[REDACTED"),
        "the finding was kept, redacted"
    );
}

#[test]
fn temp_files_are_private_and_leftovers_of_killed_ticks_are_removed() {
    let case = Case::plain();
    let modes = case.g.tools_path().join("modes.txt");
    case.g.agent(&format!(
        "#!/bin/sh\nstat -c '%a %n' \"$(dirname \"$OPENTIGER_PROMPT_FILE\")\" \"$OPENTIGER_PROMPT_FILE\" > {}\necho x > x.txt\n",
        modes.display()
    ));
    // What a killed tick left: a scratch folder of a process that is gone.
    let leftover = case.tmp.path().join("opentiger-999999999-abc123");
    std::fs::create_dir_all(&leftover).unwrap();
    std::fs::write(leftover.join("prompt.md"), "old prompt").unwrap();
    case.add_task();
    let out = case.tick(0);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let modes = std::fs::read_to_string(&modes).unwrap();
    let mut lines = modes.lines();
    assert!(lines.next().unwrap().starts_with("700 "), "{modes}");
    assert!(lines.next().unwrap().starts_with("600 "), "{modes}");
    assert!(!leftover.exists(), "the leftover is removed");
    let left: Vec<_> = std::fs::read_dir(case.tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn landlock_keeps_the_agent_writing_inside_its_workspace() {
    if opentiger::sandbox::landlock::abi_version().is_none() {
        eprintln!("no Landlock on this kernel: nothing to check");
        return;
    }
    let case = Case::new(Setup {
        default_agent: "    env_passthrough: [ANTHROPIC_API_KEY]\n",
        extra: "sandbox:\n  filesystem: landlock\n",
        ..Setup::default()
    });
    let escape = case.g.tools_path().join("escape.txt");
    case.g.agent(&format!(
        "#!/bin/sh\necho out > {escape} 2>/dev/null\necho in > inside.txt\necho tmp > \"$TMPDIR/scratch.txt\"\n",
        escape = escape.display()
    ));
    let id = case.add_task();
    let out = case.tick(0);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (code, error) = case.first_run(&id);
    assert_eq!(code, "", "{error}");
    assert!(!escape.exists(), "the agent wrote outside its workspace");
    case.assert_no_leak(&out);
}

#[test]
fn sandbox_require_refuses_to_run_an_agent_unconfined() {
    let case = Case::new(Setup {
        extra: "sandbox:\n  filesystem: none\n  require: true\n",
        ..Setup::default()
    });
    let ran = case.g.tools_path().join("ran");
    case.g.agent(&format!(
        "#!/bin/sh\ntouch {}\necho x > x.txt\n",
        ran.display()
    ));
    let id = case.add_task();
    let out = case.tick(0);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let (_, error) = case.first_run(&id);
    assert!(error.contains("sandbox.require"), "{error}");
    assert!(!ran.exists(), "the agent was not started");
}

//! Issue 40, "a newcomer finds their way", end to end with the real binary: the task graph,
//! local control (pause, resume, approval of tasks added by hand), plain words in `status`, a
//! stuck rework retried through the task a person knows, a check that fails silently, and the
//! live view of a tick (a line when an agent starts, a heartbeat while it runs, folds in
//! GitHub Actions, nothing with `-q`).

use crate::common;

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{git, minute, TestRepo, NOW};

/// `m` minutes after NOW, past midnight too.
fn later(m: u32) -> String {
    let total = 12 * 60 + m;
    let (day, hour, min) = (21 + total / 1440, (total % 1440) / 60, total % 60);
    format!("2026-11-{day:02}T{hour:02}:{min:02}:00Z")
}

fn executable(path: &Path, text: &str) {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).expect("mkdir");
    }
    std::fs::write(path, text).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

/// A local-git repository whose agent is `scripts/agent.sh` (`agent` its body), with `extra`
/// configuration, committed on `main`.
fn repo(agent: &str, extra: &str) -> TestRepo {
    let repo = TestRepo::bare();
    repo.file(".gitignore", "/.opentiger/state.sqlite*\n");
    repo.file(
        ".opentiger.yml",
        &format!(
            "mode: local-git\nagents:\n  default:\n    executor: command\n    command: [\"./scripts/agent.sh\"]\n    timeout_minutes: 2\n  judge:\n    review: false\n{extra}"
        ),
    );
    executable(&repo.path().join("scripts/agent.sh"), agent);
    git(repo.path(), &["init", "-q", "-b", "main"]);
    git(repo.path(), &["add", "-A"]);
    git(repo.path(), &["commit", "-q", "-m", "initial"]);
    repo
}

const WRITES: &str = "#!/bin/sh\necho hello >> hello.txt\n";

fn state_of(repo: &TestRepo, id: &str) -> String {
    let shown = repo.run(&["task", "show", id, "--json"]).ok().json();
    let task = &shown["task"];
    match task["block_reason"].as_str() {
        Some(reason) => format!("{}({reason})", task["status"].as_str().unwrap_or("")),
        None => task["status"].as_str().unwrap_or("").to_string(),
    }
}

/// `status --graph` prints the Mermaid graph: each task a node with its state's colour, the
/// dependency an edge; `status` and `task list` name every unmet dependency.
#[test]
fn the_task_graph_and_every_unmet_dependency() {
    let repo = repo(WRITES, "");
    let a = repo.add(&["--title", "Parse \"input\" <fast>", "--goal", "g"]);
    let b = repo.add(&["--title", "Second", "--goal", "g"]);
    let c = repo.add(&[
        "--title",
        "Uses both",
        "--goal",
        "g",
        "--depends-on",
        &a,
        "--depends-on",
        &b,
    ]);
    let graph = repo.run(&["status", "--graph"]).ok().stdout;
    assert!(graph.starts_with("flowchart LR\n"), "{graph}");
    let node = |id: &str| {
        graph
            .lines()
            .find(|l| l.contains(&format!("\"{}:", &id[..8])))
            .unwrap_or_else(|| panic!("no node for {id}:\n{graph}"))
            .trim()
            .split('[')
            .next()
            .unwrap()
            .to_string()
    };
    let (na, nb, nc) = (node(&a), node(&b), node(&c));
    for edge in [format!("{na} --> {nc}"), format!("{nb} --> {nc}")] {
        assert!(graph.lines().any(|l| l.trim() == edge), "{edge}:\n{graph}");
    }
    assert!(
        graph.contains("Parse #34;input#34; #60;fast#62;"),
        "escaped title:\n{graph}"
    );
    assert!(graph.contains(":::queued") && graph.contains("classDef queued"));
    let status = repo.run(&["status"]).ok().stdout;
    let waits = status
        .lines()
        .find(|l| l.contains("waits for 2 dependencies: "))
        .unwrap_or_else(|| panic!("{status}"));
    let list = repo.run(&["task", "list"]).ok().stdout;
    let after = list
        .lines()
        .find(|l| l.trim_start().starts_with("after: "))
        .unwrap_or_else(|| panic!("{list}"));
    for dep in [&a, &b] {
        assert!(waits.contains(&format!("{dep} (queued)")), "{waits}");
        assert!(after.contains(&format!("{dep} (queued)")), "{after}");
    }
    // The dashboard draws the same graph, fenced.
    let board = repo.run(&["status", "--markdown"]).ok().stdout;
    assert!(
        board.contains("## Task graph\n\n```mermaid\nflowchart LR\n"),
        "{board}"
    );
    assert!(board.contains("## Queued (3)"), "{board}");
}

/// In local-git mode, after `pause` a tick starts no run; after `resume` it does.
#[test]
fn pause_and_resume_in_local_git_mode() {
    let repo = repo(WRITES, "");
    let id = repo.add(&["--title", "Hello", "--goal", "g"]);
    let paused = repo.run(&["pause", "--reason", "lunch"]).ok().stdout;
    assert!(paused.starts_with("paused:"), "{paused}");
    let again = repo.run(&["pause"]).ok().stdout;
    assert!(again.starts_with("already paused"), "{again}");
    let status = repo.run(&["status"]).ok().stdout;
    assert!(status.contains("Paused: by @"), "{status}");
    assert!(status.contains("Resume: `opentiger resume`"), "{status}");
    let tick = repo.run_at(&minute(1), &["tick"]).ok().stdout;
    assert!(tick.contains(": nothing to do"), "{tick}");
    assert!(tick.contains("the repository is paused by @"), "{tick}");
    assert_eq!(state_of(&repo, &id), "queued");
    let resumed = repo.run_at(&minute(2), &["resume"]).ok().stdout;
    assert!(resumed.starts_with("resumed"), "{resumed}");
    let tick = repo.run_at(&minute(3), &["tick"]).ok().stdout;
    assert!(tick.contains(": ran 1 agent"), "{tick}");
    assert_ne!(state_of(&repo, &id), "queued");
    let not = repo.run_at(&minute(4), &["resume"]).ok().stdout;
    assert!(not.starts_with("not paused"), "{not}");
}

/// With `execution_mode: ask` a task added by hand waits until `task approve`; `--approve`
/// approves it as it is added. `decide` holds a high-risk one.
#[test]
fn execution_mode_holds_tasks_added_by_hand() {
    let repo = repo(WRITES, "execution_mode: ask\n");
    let help = repo.run(&["task", "add", "--help"]).ok().stdout;
    let help = help.split_whitespace().collect::<Vec<_>>().join(" ");
    for says in [
        "With `execution_mode: ask` every new task waits for approval",
        "--approve",
        "it is queued at once instead of waiting for `opentiger task approve`",
    ] {
        assert!(help.contains(says), "{says}:\n{help}");
    }
    let held = repo
        .run(&["task", "add", "--title", "Held", "--goal", "g"])
        .ok();
    let held_id = held.stdout.trim().to_string();
    assert!(
        held.stderr.contains("waits for approval"),
        "{}",
        held.stderr
    );
    let approved = repo.add(&["--title", "Mine", "--goal", "g", "--approve"]);
    assert_eq!(state_of(&repo, &held_id), "blocked(awaiting_human)");
    assert_eq!(state_of(&repo, &approved), "queued");
    let status = repo.run(&["status"]).ok().stdout;
    assert!(
        status.contains(&format!(
            "now:  waits on a person: `opentiger task approve {held_id}`"
        )),
        "{status}"
    );
    repo.run_at(&minute(1), &["tick"]).ok();
    assert_eq!(state_of(&repo, &held_id), "blocked(awaiting_human)");
    repo.run_at(&minute(2), &["task", "approve", &held_id]).ok();
    assert_eq!(state_of(&repo, &held_id), "queued");

    let decide = self::repo(WRITES, "execution_mode: decide\n");
    let risky = decide.add(&["--title", "Risky", "--goal", "g", "--risk", "high"]);
    let plain = decide.add(&["--title", "Plain", "--goal", "g"]);
    assert_eq!(state_of(&decide, &risky), "blocked(awaiting_human)");
    assert_eq!(state_of(&decide, &plain), "queued");
}

/// A check that fails printing nothing says its exit code, once; a stuck rework is retried
/// through the task a person knows, and then no longer waits; `status` says what happened as
/// `why:` and what to do as `next:`, never the same words twice; scores only with `-v`.
#[test]
fn plain_words_for_a_stuck_family() {
    let repo = repo(
        WRITES,
        "verify:\n  commands: [\"false\"]\nlimits:\n  max_rework_depth: 1\n",
    );
    let id = repo.add(&["--title", "Hello", "--goal", "g"]);
    let first = repo.run_at(&later(0), &["tick"]).ok().stdout;
    assert!(
        first.contains(
            "Verification failed at false [config]: stderr unavailable (it exited with code 1 and printed nothing)"
        ),
        "{first}"
    );
    assert!(!first.contains("| stderr unavailable"), "{first}");
    assert!(!first.contains("score "), "{first}");
    // Retried, then reworked, until the rework waits on a person.
    for step in 1..12 {
        repo.run_at(&later(step * 120), &["tick"]).ok();
    }
    let now = later(12 * 120);
    let list = repo.run_at(&now, &["task", "list", "--json"]).ok().json();
    let tasks = list.as_array().unwrap();
    let child = tasks
        .iter()
        .find(|t| t["parent_task_id"].as_str() == Some(id.as_str()))
        .unwrap_or_else(|| panic!("no rework: {list:#}"));
    let child_id = child["id"].as_str().unwrap().to_string();
    assert_eq!(state_of(&repo, &child_id), "blocked(awaiting_human)");
    assert_eq!(state_of(&repo, &id), "blocked(needs_rework)");
    let status = repo.run_at(&now, &["status"]).ok().stdout;
    let lines: Vec<&str> = status.lines().map(str::trim).collect();
    for (i, line) in lines.iter().enumerate() {
        if let Some(why) = line.strip_prefix("why:") {
            let after = lines[i + 1];
            let next = after
                .strip_prefix("next:")
                .or_else(|| after.strip_prefix("now:"))
                .unwrap_or(after);
            assert!(
                !next.contains(why.trim()) && !why.contains(next.trim()),
                "the same words twice:\n{status}"
            );
        }
    }
    assert!(
        status.contains(&format!("`opentiger task retry {id}` retries it")),
        "the parent names itself:\n{status}"
    );
    assert!(
        status.contains(&format!(
            "Then `opentiger task retry {id}` (it retries this rework"
        )),
        "the rework names the task a person knows:\n{status}"
    );
    let retried = repo.run_at(&now, &["task", "retry", &id]).ok().stdout;
    assert!(
        retried.starts_with(&format!(
            "{child_id} (the rework {id} follows): blocked(awaiting_human) → queued"
        )),
        "{retried}"
    );
    assert_eq!(state_of(&repo, &child_id), "queued");
    let status = repo.run_at(&now, &["status"]).ok().stdout;
    assert!(!status.contains("waits on a person"), "{status}");
    let verbose = repo.run_at(&now, &["-v", "status"]).ok().stdout;
    assert!(verbose.contains("(score "), "{verbose}");
}

/// A line from a running tick, and when it came.
struct Heard {
    line: String,
    at: Duration,
}

/// Starts a tick and reads its stderr as it streams: every line with when it came, until the
/// tick ends (or `limit` passes).
fn listen(
    repo: &TestRepo,
    now: &str,
    args: &[&str],
    env: &[(&str, &str)],
    limit: Duration,
) -> Vec<Heard> {
    let start = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .arg("--repo")
        .arg(repo.path())
        .args(["--now", now])
        .args(args)
        .env_remove("OPENTIGER_CONFIG")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("GITHUB_STEP_SUMMARY")
        .envs(env.iter().copied())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn opentiger");
    let (tx, rx) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().expect("stderr");
    std::thread::spawn(move || {
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if tx
                .send(Heard {
                    line,
                    at: start.elapsed(),
                })
                .is_err()
            {
                break;
            }
        }
    });
    let mut heard = Vec::new();
    while let Ok(h) = rx.recv_timeout(limit.saturating_sub(start.elapsed())) {
        heard.push(h);
    }
    let _ = child.kill();
    assert!(child.wait().expect("wait").success() || start.elapsed() >= limit);
    heard
}

/// The check of the issue: a tick with a 40-second agent prints its start line and a
/// heartbeat within its first 35 seconds, then its end, in that order.
#[test]
fn a_long_agent_has_a_start_line_and_a_heartbeat_within_35_seconds() {
    let repo = repo(
        "#!/bin/sh\necho thinking\nsleep 20\necho hello > hello.txt\necho still\nsleep 20\n",
        "",
    );
    repo.add(&["--title", "Slow", "--goal", "g"]);
    let heard = listen(&repo, NOW, &["tick"], &[], Duration::from_secs(120));
    let find = |needle: &str| {
        heard
            .iter()
            .position(|h| h.line.contains(needle))
            .unwrap_or_else(|| {
                let all: Vec<&str> = heard.iter().map(|h| h.line.as_str()).collect();
                panic!("`{needle}` not heard: {all:#?}")
            })
    };
    let run = find("opentiger: run ");
    let started = find("worker agent command:./scripts/agent.sh: started");
    let beat = find("worker agent command:./scripts/agent.sh: running for ");
    let ended = find("worker agent command:./scripts/agent.sh: finished after");
    assert!(run < started && started < beat && beat < ended);
    assert!(
        heard[beat]
            .line
            .ends_with(", 2 output line(s), 1 file(s) changed in its workspace"),
        "{}",
        heard[beat].line
    );
    assert!(
        heard[beat].at <= Duration::from_secs(35),
        "the heartbeat came after {:?}",
        heard[beat].at
    );
}

/// In GitHub Actions each run is a fold, its group line framed by the action's stop token;
/// with `-q` the live view says nothing.
#[test]
fn runs_fold_in_actions_and_quiet_is_silent() {
    let repo = repo(WRITES, "");
    repo.add(&["--title", "Fold %0A::error::me", "--goal", "g"]);
    let env = [
        ("GITHUB_ACTIONS", "true"),
        ("OPENTIGER_ACTIONS_STOP_TOKEN", "tok42"),
    ];
    let heard = listen(&repo, NOW, &["tick"], &env, Duration::from_secs(120));
    let lines: Vec<&str> = heard.iter().map(|h| h.line.as_str()).collect();
    let group = lines
        .iter()
        .position(|l| l.starts_with("::group::run "))
        .unwrap_or_else(|| panic!("no fold: {lines:#?}"));
    assert_eq!(lines[group - 1], "::tok42::", "{lines:#?}");
    assert_eq!(lines[group + 1], "::stop-commands::tok42", "{lines:#?}");
    assert!(lines[group].contains("Fold %250A::error::me"), "{lines:#?}");
    // Its own fold's end (the host probe, issue 52, may have a fold of its own before it).
    let end = group
        + lines[group..]
            .iter()
            .position(|l| *l == "::endgroup::")
            .unwrap_or_else(|| panic!("not closed: {lines:#?}"));
    assert!(group < end && lines[end - 1] == "::tok42::", "{lines:#?}");
    assert!(lines[group..end].iter().any(|l| l.ends_with(": started")));

    let quiet = self::repo(WRITES, "");
    quiet.add(&["--title", "Hush", "--goal", "g"]);
    let out = quiet.run(&["-q", "tick"]).ok();
    assert!(out.stdout.contains(": ran 1 agent"), "{}", out.stdout);
    assert!(!out.stderr.contains("opentiger:"), "{}", out.stderr);
}

/// In github mode `opentiger pause` makes the change `/opentiger pause` on the dashboard makes:
/// on the state branch, so the next tick (in another checkout, as in Actions) claims nothing;
/// `opentiger resume` lets it claim again.
#[test]
fn pause_and_resume_in_github_mode_act_on_the_state_branch() {
    use common::github::{opentiger_against, GithubServer};
    let dir = tempfile::tempdir().unwrap();
    let origin = common::bare_origin(dir.path());
    let (here, ci) = (dir.path().join("here"), dir.path().join("ci"));
    common::clone(&origin, &here);
    executable(&dir.path().join("agent.sh"), WRITES);
    std::fs::write(
        here.join(".opentiger.yml"),
        format!(
            "mode: github\nagents:\n  default:\n    executor: command\n    command: [\"{}\"]\n    timeout_minutes: 1\n  judge:\n    review: false\nreport:\n  dashboard_issue: false\n",
            dir.path().join("agent.sh").display()
        ),
    )
    .unwrap();
    git(&here, &["add", "-A"]);
    git(&here, &["commit", "-q", "-m", "initial"]);
    git(&here, &["push", "-q", "origin", "main"]);
    common::clone(&origin, &ci);
    let server = GithubServer::start("acme", "widgets").with_git(&origin);
    let run = |repo: &Path, now: &str, args: &[&str]| {
        server.set_now(now);
        let out = opentiger_against(&server, repo, now)
            .args(args)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{args:?}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let paused = run(&here, "2026-11-21T12:00:00Z", &["pause"]);
    assert!(paused.starts_with("paused:"), "{paused}");
    server.add_issue("First", "Please.", &["opentiger"], "acme", "OWNER");
    let tick = run(&ci, "2026-11-21T12:05:00Z", &["tick"]);
    assert!(!tick.contains(" ran "), "{tick}");
    assert!(tick.contains("the repository is paused by @"), "{tick}");
    let status = run(&ci, "2026-11-21T12:06:00Z", &["status"]);
    assert!(
        status.contains(
            "Resume: `opentiger resume`, or comment `/opentiger resume` on the dashboard issue"
        ),
        "{status}"
    );
    run(&here, "2026-11-21T12:07:00Z", &["resume"]);
    let tick = run(&ci, "2026-11-21T12:10:00Z", &["tick"]);
    assert!(tick.contains(": ran 1 agent"), "{tick}");
}

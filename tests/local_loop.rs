//! The whole loop locally (local-git and direct modes) with shell-script agents written by the
//! tests, driving the real binary.

#[path = "local_loop/budgets.rs"]
mod budgets;
use crate::common;
#[path = "local_loop/lessons.rs"]
mod lessons;
#[path = "local_loop/waiting.rs"]
mod waiting;

use common::{git, minute, running, GitRepo, Setup};

/// An agent that writes `out-<task id>.txt` with the task id in it.
const WRITE_OUT: &str = "#!/bin/sh\necho \"$OPENTIGER_TASK_ID\" > \"out-$OPENTIGER_TASK_ID.txt\"\necho '{\"summary\": \"wrote a file\", \"cost_usd\": 0.01}' > \"$OPENTIGER_RESULT_FILE\"\n";

#[test]
fn three_tasks_with_a_dependency_are_all_merged() {
    let g = GitRepo::with(Setup::default());
    g.agent(WRITE_OUT);
    let a = g.repo.add(&[
        "--title",
        "First",
        "--goal",
        "write out-a",
        "--id",
        "a",
        "--command",
        "test -s out-a.txt",
        "--priority",
        "1",
    ]);
    let b = g.repo.add(&[
        "--title",
        "Second",
        "--goal",
        "write out-b",
        "--id",
        "b",
        "--depends-on",
        &a,
        "--priority",
        "9",
    ]);
    let c = g
        .repo
        .add(&["--title", "Third", "--goal", "write out-c", "--id", "c"]);
    g.run_until_quiet(0, 6, 12);
    for id in [&a, &b, &c] {
        assert_eq!(g.task_json(id)["status"], "done", "{id}");
        assert_eq!(
            g.file_on_main(&format!("out-{id}.txt")).as_deref(),
            Some(format!("{id}\n").as_str())
        );
    }
    let log = g.main_log();
    let pos = |t: &str| {
        log.lines()
            .position(|l| l.contains(t))
            .unwrap_or_else(|| panic!("{t} not merged:\n{log}"))
    };
    assert!(
        pos("Second") < pos("First"),
        "Second merged after First (log is newest first):\n{log}"
    );
    assert_eq!(log.lines().count(), 4, "one commit per task:\n{log}");
    // No leftover worktrees or task branches.
    let branches = git(g.path(), &["branch", "--list", "opentiger/*"]);
    assert!(branches.is_empty(), "{branches}");
}

#[test]
fn a_verification_failure_is_retried_with_the_failure_in_the_prompt() {
    let g = GitRepo::with(Setup::default());
    let tools = g.tools_path().display().to_string();
    g.agent(&format!(
        "#!/bin/sh\ncat > {tools}/prompt-$$.md\nif [ -f {tools}/tried ]; then echo good > value.txt; else echo bad > value.txt; touch {tools}/tried; fi\n"
    ));
    let id = g.repo.add(&[
        "--title",
        "Make it good",
        "--goal",
        "value.txt says good",
        "--command",
        "grep -q good value.txt",
    ]);
    let first = g.tick(&minute(0));
    assert!(
        first.stdout.contains("running → failed"),
        "{}",
        first.stdout
    );
    let task = g.task_json(&id);
    assert_eq!(task["status"], "failed");
    let second = g.tick(&minute(5));
    assert!(second.stdout.contains("retry 1/3"), "{}", second.stdout);
    g.run_until_quiet(10, 5, 6);
    assert_eq!(g.task_json(&id)["status"], "done");
    assert_eq!(g.file_on_main("value.txt").as_deref(), Some("good\n"));
    // The second attempt was told why the first failed.
    let prompts: Vec<String> = std::fs::read_dir(g.tools_path())
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with("prompt-"))
        .map(|e| std::fs::read_to_string(e.path()).unwrap())
        .collect();
    assert_eq!(prompts.len(), 2);
    assert!(
        prompts
            .iter()
            .any(|p| p.contains("Earlier attempts that failed")
                && p.contains("Verification failed at grep -q good value.txt")),
        "{prompts:?}"
    );
}

#[test]
fn policy_violations_name_the_paths_and_never_reach_main() {
    let g = GitRepo::with(Setup::default());
    g.agent("#!/bin/sh\nmkdir -p src secrets .github/workflows\necho ok > src/ok.txt\necho key > secrets/x\necho 'on: push' > .github/workflows/x.yml\n");
    let id = g.repo.add(&[
        "--title",
        "Touch src",
        "--goal",
        "src/ok.txt exists",
        "--allowed-path",
        "src/**",
    ]);
    let out = g.tick(&minute(0));
    assert!(out.stdout.contains("running → failed"), "{}", out.stdout);
    let shown = g.repo.run(&["task", "show", &id, "--json"]).ok().json();
    let error = shown["runs"][0]["error"].as_str().unwrap().to_string();
    assert_eq!(shown["runs"][0]["failure_code"], "policy_violation");
    assert!(
        error.contains("change outside allowed paths: secrets/x"),
        "{error}"
    );
    assert!(
        error.contains("change to denied path: .github/workflows/x.yml"),
        "{error}"
    );
    assert!(!error.contains("src/ok.txt"), "{error}");
    assert!(g.file_on_main("secrets/x").is_none());
    // The policy budget (3) runs out, then a rework child, then a person: never a loop.
    g.run_until_quiet(5, 6, 30);
    let status = g
        .repo
        .run_at(&minute(300), &["status", "--json", "--all"])
        .ok()
        .json();
    let tasks = status["tasks"].as_array().unwrap();
    assert!(
        tasks.iter().any(|t| t["block_reason"] == "awaiting_human"),
        "{status}"
    );
    assert!(tasks.len() <= 3, "bounded rework chain: {status}");
}

#[test]
fn a_quota_message_waits_for_the_backoff_then_succeeds() {
    let g = GitRepo::with(Setup::default());
    let tools = g.tools_path().display().to_string();
    g.agent(&format!(
        "#!/bin/sh\nif [ ! -f {tools}/quota ]; then touch {tools}/quota; echo 'Error: 429 Too Many Requests. Please retry in 600s' >&2; exit 1; fi\necho fine > fine.txt\n"
    ));
    let id = g
        .repo
        .add(&["--title", "After quota", "--goal", "fine.txt"]);
    g.tick(&minute(0));
    let task = g.task_json(&id);
    assert_eq!(
        (task["status"].as_str(), task["block_reason"].as_str()),
        (Some("blocked"), Some("quota_wait")),
        "{task}"
    );
    assert_eq!(
        task["next_action"],
        "quota_wait: retry after 2026-11-21T12:10:00Z (wait 1/12)"
    );
    let early = g.tick(&minute(5));
    assert!(
        !early.stdout.contains("claim"),
        "not before the backoff: {}",
        early.stdout
    );
    assert_eq!(g.task_json(&id)["block_reason"], "quota_wait");
    let later = g.tick(&minute(11));
    assert!(
        later.stdout.contains("quota_wait_retry")
            && later.stdout.contains("blocked(awaiting_judge)"),
        "{}",
        later.stdout
    );
    g.run_until_quiet(12, 5, 4);
    assert_eq!(g.task_json(&id)["status"], "done");
}

#[test]
fn a_hanging_agent_is_killed_with_its_children() {
    let g = GitRepo::with(Setup {
        worker: "    timeout_minutes: 0.03\n",
        ..Setup::default()
    });
    let pidfile = g.tools_path().join("child.pid");
    g.agent(&format!(
        "#!/bin/sh\nsleep 300 &\necho $! > {}\nsleep 300\n",
        pidfile.display()
    ));
    let id = g.repo.add(&["--title", "Hang", "--goal", "never finishes"]);
    let started = std::time::Instant::now();
    let out = g.tick(&minute(0));
    assert!(started.elapsed().as_secs() < 60, "killed at the timeout");
    assert!(out.stdout.contains("running → failed"), "{}", out.stdout);
    let shown = g.repo.run(&["task", "show", &id, "--json"]).ok().json();
    assert!(
        shown["runs"][0]["error"]
            .as_str()
            .unwrap()
            .contains("timed out"),
        "{shown}"
    );
    let pid = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .to_string();
    assert!(
        !running(pid.parse().unwrap()),
        "the agent's child {pid} survived"
    );
}

#[test]
fn agents_see_only_the_variables_they_are_given() {
    let g = GitRepo::with(Setup {
        default_agent: "    env_passthrough: [MY_KEY, GITHUB_TOKEN]\n",
        ..Setup::default()
    });
    let dump = g.tools_path().join("env.txt");
    g.agent(&format!(
        "#!/bin/sh\nenv > {}\necho x > x.txt\n",
        dump.display()
    ));
    g.repo.add(&["--title", "Env", "--goal", "dump env"]);
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .args([
            "--repo",
            g.path().to_str().unwrap(),
            "--now",
            &minute(0),
            "tick",
        ])
        .env("MY_KEY", "visible-value")
        .env("SECRET_X", "hidden-value")
        .env("GITHUB_TOKEN", "ghp_abcdefghijklmnopqrstuvwxyz0123456789")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let env = std::fs::read_to_string(&dump).unwrap();
    let names: Vec<&str> = env
        .lines()
        .filter_map(|l| l.split_once('=').map(|(k, _)| k))
        .collect();
    assert!(env.contains("MY_KEY=visible-value"), "{env}");
    for name in &names {
        // Issue 37: and the way out, opentiger's proxy.
        let proxy = [
            "HTTP_PROXY",
            "HTTPS_PROXY",
            "ALL_PROXY",
            "NO_PROXY",
            "http_proxy",
            "https_proxy",
            "all_proxy",
            "no_proxy",
        ];
        let allowed = name.starts_with("OPENTIGER_")
            || proxy.contains(name)
            || ["PATH", "HOME", "TMPDIR", "MY_KEY", "PWD", "SHLVL", "_"].contains(name);
        assert!(allowed, "the agent saw {name}:\n{env}");
    }
    assert!(
        !env.contains("hidden-value") && !env.contains("ghp_"),
        "{env}"
    );
}

#[test]
fn a_killed_tick_is_recovered_exactly_once() {
    let g = GitRepo::with(Setup::default());
    // First run: announce itself and hang; later runs finish at once.
    g.agent_hanging_first(false);
    let id = g
        .repo
        .add(&["--title", "Survive a kill", "--goal", "result.txt"]);
    let pidfile = tick_killed_while_the_agent_runs(&g);
    // The job is gone, and its agent with it (in CI the runner machine goes away).
    let agent: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    kill_group(agent);
    assert_eq!(g.task_json(&id)["status"], "running");
    // The holder is dead: the next tick reclaims at once, without waiting for the lease.
    let out = g.tick(&minute(1));
    assert!(
        out.stdout.contains("recovery.lease_reclaimed") && out.stdout.contains("has ended"),
        "{}",
        out.stdout
    );
    g.run_until_quiet(2, 5, 4);
    let shown = g.repo.run(&["task", "show", &id, "--json"]).ok().json();
    assert_eq!(shown["task"]["status"], "done");
    let runs = shown["runs"].as_array().unwrap();
    let statuses: Vec<&str> = runs.iter().map(|r| r["status"].as_str().unwrap()).collect();
    assert_eq!(
        statuses,
        ["success", "cancelled"],
        "exactly one more run: {runs:?}"
    );
    assert_eq!(
        g.main_log()
            .lines()
            .filter(|l| l.contains("Survive a kill"))
            .count(),
        1
    );
}

/// issue 16 item 7: what an agent started lives in its process group; a SIGKILLed tick cannot
/// kill it, so the next tick on the host does, before the task is claimed again (else two
/// agents work on one task at once). The agent itself dies with the tick (PR_SET_PDEATHSIG).
#[test]
fn agents_left_by_a_killed_tick_die_before_their_task_is_claimed_again() {
    let g = GitRepo::with(Setup::default());
    g.agent_hanging_first(true);
    g.repo.add(&["--title", "Orphans", "--goal", "result.txt"]);
    tick_killed_while_the_agent_runs(&g);
    let read_pid = |name: &str| -> i32 {
        std::fs::read_to_string(g.tools_path().join(name))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let grandchild = read_pid("child.pid");
    assert!(
        running(grandchild),
        "the grandchild outlives the killed tick"
    );
    let out = g.tick(&minute(1));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(!running(grandchild), "the next tick killed it");
    assert!(
        !running(read_pid("agent.pid")),
        "the agent died with its tick"
    );
}

/// SIGKILL to the agent's process group (it leads one). Never 0, 1 or negative: those would hit
/// this process's group or every process.
fn kill_group(pid: i32) {
    assert!(pid > 1, "refusing to signal pid {pid}");
    // SAFETY: kill has no memory effects; a negative pid addresses the group `pid` leads.
    unsafe {
        libc::kill(-pid, libc::SIGKILL);
    }
}

#[test]
fn direct_mode_edits_in_place_and_still_enforces_policy() {
    // One step per tick (runs take 1 min: issue 38's rounds stop after the first), so the
    // rollback can be looked at before the rework runs.
    let g = GitRepo::with(Setup {
        mode: "direct",
        extra: "limits:\n  tick_minutes: 1\n",
        ..Setup::default()
    });
    let tools = g.tools_path().display().to_string();
    g.agent(&format!(
        "#!/bin/sh\nif [ -f {tools}/second ]; then echo '# better' > README.md; else touch {tools}/second; echo '# changed' > README.md; echo key > .env; fi\n"
    ));
    let id = g
        .repo
        .add(&["--title", "Edit README", "--goal", "README says better"]);
    g.tick(&minute(0));
    // The first attempt also wrote .env: refused, and rolled back.
    let shown = g.repo.run(&["task", "show", &id, "--json"]).ok().json();
    assert_eq!(shown["runs"][0]["failure_code"], "policy_violation");
    assert_eq!(
        std::fs::read_to_string(g.path().join("README.md")).unwrap(),
        "# sample\n",
        "rolled back"
    );
    assert!(!g.path().join(".env").exists(), "rolled back");
    g.tick(&minute(6));
    g.tick(&minute(12));
    assert_eq!(g.task_json(&id)["status"], "done");
    assert_eq!(
        std::fs::read_to_string(g.path().join("README.md")).unwrap(),
        "# better\n"
    );
    assert_eq!(
        g.main_log().lines().count(),
        1,
        "direct mode does not commit"
    );
}

#[test]
fn a_missing_agent_program_is_a_clear_error_before_anything_is_claimed() {
    let g = GitRepo::with(Setup {
        worker: "    command: [\"no-such-agent-cli\"]\n",
        ..Setup::default()
    });
    let id = g.repo.add(&["--title", "T", "--goal", "g"]);
    let out = g.tick(&minute(0));
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(
        out.stderr.contains("`no-such-agent-cli` was not found"),
        "{}",
        out.stderr
    );
    assert_eq!(g.task_json(&id)["status"], "queued", "nothing claimed");
}

#[test]
fn work_and_merges_whose_record_was_lost_are_adopted_not_redone() {
    // One step per tick (issue 38: the review does not fit after the run), so the merge can be
    // made by hand before the tick that would record it.
    let g = GitRepo::with(Setup {
        extra: "limits:\n  tick_minutes: 1\n",
        ..Setup::default()
    });
    // The agent changes nothing: only earlier, unrecorded work can make this task succeed.
    g.agent("#!/bin/sh\ntrue\n");
    let id = g.repo.add(&[
        "--title",
        "Lost record",
        "--goal",
        "lost.txt",
        "--id",
        "lostrecord1",
    ]);
    // A killed run committed its work on the task branch, but its outcome never reached the state.
    let branch = "opentiger/task-lostreco";
    git(g.path(), &["checkout", "-q", "-b", branch]);
    std::fs::write(g.path().join("lost.txt"), "work\n").unwrap();
    git(g.path(), &["add", "lost.txt"]);
    git(
        g.path(),
        &[
            "commit",
            "-q",
            "-m",
            "[opentiger] Lost record",
            "-m",
            &format!("Task: {id}\nRun: gone"),
        ],
    );
    git(g.path(), &["checkout", "-q", "main"]);
    let out = g.tick(&minute(0));
    assert!(
        out.stdout.contains("running → blocked(awaiting_judge)"),
        "adopted, not 'no changes': {}",
        out.stdout
    );
    let shown = g.repo.run(&["task", "show", &id, "--json"]).ok().json();
    assert!(
        shown["runs"][0]["summary"]
            .as_str()
            .unwrap()
            .contains("adopted"),
        "{shown}"
    );

    // Now the merge happened but its record was lost: main already has the task's commit.
    let head = git(g.path(), &["rev-parse", branch]);
    git(g.path(), &["merge", "-q", "--ff-only", &head]);
    let before = g.main_log();
    let out = g.tick(&minute(5));
    assert!(out.stdout.contains("approved and merged"), "{}", out.stdout);
    assert_eq!(g.task_json(&id)["status"], "done");
    assert_eq!(g.main_log(), before, "merged once, not twice");
}

/// issue 9: an agent cut short (here: killed at its timeout) leaves its work in progress
/// committed to the task branch; the next attempt starts from it instead of from scratch.
#[test]
fn work_of_an_agent_cut_short_is_kept_for_the_next_attempt() {
    let g = GitRepo::with(Setup {
        worker: "    timeout_minutes: 0.03\n",
        ..Setup::default()
    });
    let tools = g.tools_path().display().to_string();
    g.agent(&format!(
        "#!/bin/sh\nif [ ! -f {tools}/first ]; then touch {tools}/first; echo half > part1.txt; exec sleep 30; fi\ntest -f part1.txt && echo resumed > {tools}/resumed\necho rest > part2.txt\n"
    ));
    let id = g.repo.add(&[
        "--title",
        "Two parts",
        "--goal",
        "part1.txt and part2.txt",
        "--command",
        "test -f part1.txt",
        "--command",
        "test -f part2.txt",
    ]);
    let first = g.tick(&minute(0));
    assert!(
        first.stdout.contains("running → failed"),
        "{}",
        first.stdout
    );
    let shown = g.repo.run(&["task", "show", &id]).ok().stdout;
    assert!(
        shown.contains("timed out") && shown.contains("its work in progress is committed"),
        "{shown}"
    );
    let branch = git(
        g.path(),
        &[
            "branch",
            "--list",
            "--format=%(refname:short)",
            "opentiger/*",
        ],
    );
    let wip = git(g.path(), &["log", "--format=%s", branch.trim()]);
    assert!(wip.starts_with("[opentiger] WIP: Two parts"), "{wip}");
    g.run_until_quiet(10, 5, 8);
    assert_eq!(g.task_json(&id)["status"], "done");
    assert!(
        g.tools_path().join("resumed").exists(),
        "the second attempt found the first one's work"
    );
    assert_eq!(g.file_on_main("part1.txt").as_deref(), Some("half\n"));
    assert_eq!(g.file_on_main("part2.txt").as_deref(), Some("rest\n"));
}

/// A tick at minute 0, SIGKILLed (no cleanup at all) once its agent wrote `agent.pid` into the
/// tools folder; returns that file.
fn tick_killed_while_the_agent_runs(g: &GitRepo) -> std::path::PathBuf {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .args([
            "--repo",
            g.path().to_str().unwrap(),
            "--now",
            &minute(0),
            "tick",
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pidfile = g.tools_path().join("agent.pid");
    assert!(
        common::wait_for_pid(&pidfile, 200).is_some(),
        "the agent never started"
    );
    child.kill().unwrap();
    child.wait().unwrap();
    pidfile
}

//! Issue 29, tried as a new user would: the repository found from any folder in it, a clear
//! error outside one, and an interrupt (Ctrl-C, a cancelled Actions job) as a clean stop.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{git, minute, running, GitRepo, Out, Setup, NOW};

/// The binary run in `cwd` with no `--repo`, as a person types it.
fn run_in(cwd: &Path, args: &[&str]) -> Out {
    Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .current_dir(cwd)
        .args(["--now", NOW])
        .args(args)
        .env_remove("OPENTIGER_REPO")
        .env_remove("OPENTIGER_CONFIG")
        .env_remove("OPENTIGER_NOW")
        .env_remove("GITHUB_RUN_ID")
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdin(Stdio::null())
        .output()
        .expect("run opentiger")
        .into()
}

fn branches(repo: &Path) -> String {
    git(repo, &["for-each-ref", "--format=%(refname)"])
}

/// Item 1: from a subfolder, `task add` lands in the state the root's `.opentiger.yml` names,
/// creating no branch; `status` there sees it.
#[test]
fn from_a_subfolder_task_add_lands_in_the_root_state() {
    let g = GitRepo::with(Setup::default());
    git(g.path(), &["add", "-A"]);
    git(g.path(), &["commit", "-q", "-m", "config"]);
    let sub = g.path().join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    let refs = branches(g.path());
    let from_sub = run_in(
        &sub,
        &["task", "add", "--title", "From below", "--goal", "g"],
    )
    .ok();
    let id = from_sub.stdout.trim().to_string();
    assert!(
        !from_sub.stderr.contains("no configuration"),
        "{}",
        from_sub.stderr
    );
    let from_root = g.repo.add(&["--title", "From the top", "--goal", "g"]);
    let listed = g.repo.run(&["task", "list", "--json"]).ok().json();
    let ids: Vec<&str> = listed
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert!(
        ids.contains(&id.as_str()) && ids.contains(&from_root.as_str()),
        "{listed}"
    );
    assert_eq!(branches(g.path()), refs, "no new branch");
    assert!(
        !sub.join(".opentiger").exists(),
        "no state in the subfolder"
    );
    let status = run_in(&sub, &["status", "--json"]).ok().json();
    assert_eq!(status["tasks"].as_array().unwrap().len(), 2, "{status}");
    // A linked worktree is a work tree of its own, as git sees it: its own top folder.
    let linked = g.linked_worktree();
    std::fs::create_dir_all(linked.join("src/deep")).unwrap();
    let shown = run_in(&linked.join("src/deep"), &["config", "show", "--json"]).ok();
    assert_eq!(shown.json()["mode"], "local-git", "{}", shown.stderr);
}

/// Item 1: outside a repository every command says so in one line with the fix, exit 2; the
/// commands that need no repository still work.
#[test]
fn outside_a_repository_every_command_says_so() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        &["status"][..],
        &["tick"],
        &["tick", "--dry-run"],
        &["task", "add", "--title", "t", "--goal", "g"],
        &["task", "list"],
        &["plan"],
        &["doctor"],
        &["init"],
        &["config", "show"],
    ] {
        let out = run_in(dir.path(), args);
        assert_eq!(out.code, 2, "{args:?}: {}", out.stderr);
        assert_eq!(
            out.stderr.trim().lines().count(),
            1,
            "{args:?}: one line:\n{}",
            out.stderr
        );
        assert!(
            out.stderr.contains("no git repository") && out.stderr.contains("--repo DIR"),
            "{args:?}: {}",
            out.stderr
        );
    }
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "nothing written"
    );
    run_in(dir.path(), &["config", "schema"]).ok();
}

/// Item 1: a write command that starts a state with the built-in defaults says which and where;
/// a read command just says it uses them.
#[test]
fn without_a_configuration_the_defaults_are_named() {
    let g = GitRepo::with(Setup::default());
    std::fs::remove_file(g.path().join(".opentiger.yml")).unwrap();
    let read = run_in(g.path(), &["task", "list"]).ok();
    assert!(
        read.stderr.contains("no configuration: built-in defaults"),
        "{}",
        read.stderr
    );
    let added = run_in(g.path(), &["task", "add", "--title", "t", "--goal", "g"]).ok();
    assert!(
        added.stderr.contains("mode github") && added.stderr.contains("opentiger/state"),
        "which defaults, and where the state lives: {}",
        added.stderr
    );
}

/// Item 2: SIGINT (then SIGTERM) during a slow agent: the agent's group ends, the run is
/// cancelled, the task queued again, the state saved, exit 130 (143); the next tick runs the
/// task without counting a lost run.
#[test]
fn an_interrupt_is_a_clean_stop() {
    for (signal, code) in [(libc::SIGINT, 130), (libc::SIGTERM, 143)] {
        let g = GitRepo::with(Setup::default());
        // First run: a child that ignores nothing, its pid, and a long wait; later runs finish.
        g.agent_hanging_first(true);
        let id = g.repo.add(&["--title", "Slow", "--goal", "result.txt"]);
        let (status, out) =
            interrupted_while_the_agent_runs(&g, &["--now", &minute(0), "tick"], signal);
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(status.code(), Some(code), "{stdout}\n{stderr}");
        assert!(
            stdout.contains("cancelled: interrupted by") && stdout.contains("state saved"),
            "says what it did:\n{stdout}"
        );
        for name in ["agent.pid", "child.pid"] {
            let pid: i32 = std::fs::read_to_string(g.tools_path().join(name))
                .unwrap()
                .trim()
                .parse()
                .unwrap();
            assert!(!running(pid), "{name} {pid} still runs");
        }
        let shown = g.repo.run(&["task", "show", &id, "--json"]).ok().json();
        assert_eq!(shown["task"]["status"], "queued", "{shown}");
        // Issue 49: `status` shows the tick as interrupted, not as ok.
        let name = if signal == libc::SIGINT {
            "SIGINT"
        } else {
            "SIGTERM"
        };
        let said = g.repo.run(&["status"]).ok().stdout;
        assert!(said.contains(&format!("(interrupted by {name})")), "{said}");
        let runs = shown["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 1, "{runs:?}");
        assert_eq!(runs[0]["status"], "cancelled");
        let attempts = &shown["task"]["attempts"];
        assert!(
            attempts.is_null() || attempts.as_object().is_some_and(|a| a.is_empty()),
            "no budget counted: {attempts}"
        );
        let worktrees = git(g.path(), &["worktree", "list"]);
        assert_eq!(
            worktrees.lines().count(),
            1,
            "worktree removed: {worktrees}"
        );
        // The next tick runs it: nothing was lost, no budget spent.
        let next = g.tick(&minute(1));
        assert_eq!(next.code, 0, "{}", next.stderr);
        assert!(
            !next.stdout.contains("lease_reclaimed") && !next.stdout.contains("run_lost"),
            "{}",
            next.stdout
        );
        g.run_until_quiet(2, 5, 4);
        let shown = g.repo.run(&["task", "show", &id, "--json"]).ok().json();
        assert_eq!(shown["task"]["status"], "done", "{shown}");
        assert_eq!(
            shown["task"]["attempts"]["lease"].as_u64().unwrap_or(0),
            0,
            "{shown}"
        );
    }
}

/// `work --run ID` of a fan-out, interrupted while its agent runs: the run is cancelled and the
/// task queued again, as in a tick.
#[test]
fn an_interrupted_fan_out_job_queues_its_task_again() {
    let g = GitRepo::with(Setup::default());
    g.agent_hanging_first(false);
    let id = g.repo.add(&["--title", "Slow", "--goal", "result.txt"]);
    let claim = g
        .repo
        .run_at(&minute(0), &["tick", "--fan-out", "1", "--json"])
        .ok()
        .json();
    let run = claim["matrix"]["include"][0]["run"]
        .as_str()
        .unwrap_or_else(|| panic!("{claim}"))
        .to_string();
    let (status, out) = interrupted_while_the_agent_runs(
        &g,
        &["--now", &minute(1), "work", "--run", &run],
        libc::SIGTERM,
    );
    assert_eq!(
        status.code(),
        Some(143),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shown = g.repo.run(&["task", "show", &id, "--json"]).ok().json();
    assert_eq!(shown["task"]["status"], "queued", "{shown}");
    assert_eq!(shown["runs"][0]["status"], "cancelled", "{shown}");
}

/// Runs `opentiger --repo <g> <args>` until the agent wrote `agent.pid` into the tools folder,
/// sends it `signal`, and waits (bounded) for it to end.
fn interrupted_while_the_agent_runs(
    g: &GitRepo,
    args: &[&str],
    signal: libc::c_int,
) -> (std::process::ExitStatus, std::process::Output) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .arg("--repo")
        .arg(g.path())
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pidfile = g.tools_path().join("agent.pid");
    for _ in 0..400 {
        if pidfile.exists() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(pidfile.exists(), "the agent never started");
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill has no memory effects; the pid is our own child's.
    unsafe { libc::kill(pid, signal) };
    // Bounded: the grace period is seconds, the agent's sleep minutes.
    let mut status = None;
    for _ in 0..600 {
        status = child.try_wait().unwrap();
        if status.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let Some(status) = status else {
        let _ = child.kill();
        panic!("{args:?} did not stop after the signal");
    };
    (status, child.wait_with_output().unwrap())
}

/// Item 4: a quiet tick on the file store starts at most one `git` process (the base branch's
/// tip); whether this is a repository and where its git folder is are read from the files.
#[test]
fn a_quiet_tick_on_the_file_store_starts_at_most_one_git() {
    let g = GitRepo::with(Setup::default());
    g.tick(&minute(0)); // the first tick writes the heartbeat
    let real = std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| Path::new(d).join("git"))
        .find(|p| p.is_file())
        .expect("git on PATH");
    let shims = tempfile::tempdir().unwrap();
    let log = shims.path().join("calls");
    let shim = shims.path().join("git");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\necho \"$*\" >> {}\nexec {} \"$@\"\n",
            log.display(),
            real.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Named explicitly: the runner takes no program from a temp folder found on PATH
    // (`programs`), so the counting shim is handed over as OPENTIGER_GIT.
    let shim_path = shim.display().to_string();
    let quiet = g.tick_env(&minute(1), &[("OPENTIGER_GIT", shim_path.as_str())]);
    assert_eq!(quiet.code, 0, "{}", quiet.stderr);
    assert!(quiet.stdout.contains("0 decision(s)"), "{}", quiet.stdout);
    let calls = std::fs::read_to_string(&log).unwrap_or_default();
    // Exactly the one question the files cannot answer (also proof the shim counts).
    assert_eq!(calls.lines().count(), 1, "git processes:\n{calls}");
    assert!(
        calls.contains("rev-parse --verify --quiet refs/heads/main"),
        "{calls}"
    );
    // The answers read from the files are git's own, in a repository and a linked worktree.
    let linked = g.linked_worktree();
    for dir in [g.path(), linked.as_path()] {
        let ours = opentiger::git::Git::new(dir).common_dir().unwrap();
        let theirs = dir.join(git(dir, &["rev-parse", "--git-common-dir"]));
        assert_eq!(
            ours.canonicalize().unwrap(),
            theirs.canonicalize().unwrap(),
            "{}",
            dir.display()
        );
        assert!(opentiger::git::Git::is_repository(dir));
    }
}

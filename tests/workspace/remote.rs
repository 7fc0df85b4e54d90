//! With a remote: a run's commit its tick never pushed is pushed by whoever meets it next — the
//! next run (a tick killed between its commit and its push, by a git that never returns from
//! the push) or the judge (a branch missing on the remote) — and the task lands there.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::common::{bare_origin, git, minute, GitRepo, Setup};
use super::{finish, wait_for};

/// A repository with an `origin` it pushes to; the origin's path.
fn with_origin(g: &GitRepo) -> PathBuf {
    let origin = bare_origin(g.tools_path());
    git(
        g.path(),
        &["remote", "add", "origin", origin.to_str().unwrap()],
    );
    git(g.path(), &["push", "-q", "origin", "main"]);
    origin
}

/// `path` on the origin's `main`.
fn on_origin(origin: &Path, path: &str) -> Option<String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(origin)
        .args(["show", &format!("main:{path}")])
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A tick killed after committing a run's change to the task branch, while its git pushes it
/// (a git that blocks on that push): the next run finds the commit, pushes it, and the task
/// lands on the remote within a few ticks.
#[test]
fn a_tick_killed_between_commit_and_push_still_lands_on_the_remote() {
    let g = GitRepo::with(Setup::default());
    let origin = with_origin(&g);
    g.agent("#!/bin/sh\necho done > result.txt\n");
    let id = g
        .repo
        .add(&["--title", "Killed in the push", "--goal", "result.txt"]);
    let real = which_git();
    let tools = g.tools_path().display().to_string();
    let shim = g.tools_path().join("git-shim");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\ncase \"$*\" in\n  *\" push \"*refs/heads/opentiger/task-*)\n    if mkdir {tools}/push-blocked 2>/dev/null; then echo $$ > {tools}/push.pid; exec sleep 300; fi;;\nesac\nexec {real} \"$@\"\n",
            real = real.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let mut tick = Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .args([
            "--repo",
            g.path().to_str().unwrap(),
            "--now",
            &minute(0),
            "tick",
        ])
        .env("OPENTIGER_GIT", &shim)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pidfile = g.tools_path().join("push.pid");
    wait_for(&pidfile);
    // The tick dies as a cancelled job's would, in the middle of its push.
    tick.kill().unwrap();
    tick.wait().unwrap();
    let push: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // SAFETY: kill has no memory effects; the pid is the blocked push's.
    unsafe { libc::kill(push, libc::SIGKILL) };
    let branch = format!("refs/heads/{}", task_branch(&g, &id));
    assert!(
        Command::new("git")
            .current_dir(g.path())
            .args(["rev-parse", "--verify", "-q", &branch])
            .status()
            .unwrap()
            .success(),
        "the twin: the dead tick committed to the task branch"
    );
    assert!(on_origin(&origin, "result.txt").is_none());

    let outs = g.run_until_quiet(10, 10, 6);
    let log: Vec<String> = outs.iter().map(|o| o.stdout.clone()).collect();
    assert_eq!(g.task_json(&id)["status"], "done", "{log:#?}");
    assert_eq!(
        on_origin(&origin, "result.txt").as_deref(),
        Some("done\n"),
        "{log:#?}"
    );
}

/// A run recorded with its head, whose branch is not on the remote (deleted there, or never
/// pushed): the judge publishes it and reviews it, never fails on "branch … is gone".
#[test]
fn the_judge_publishes_a_run_s_branch_missing_on_the_remote() {
    // One step per tick (issue 38: the review does not fit after the run in a tick of 1
    // minute), so the test can act between the run and its review.
    let g = GitRepo::with(Setup {
        extra: "limits:\n  tick_minutes: 1\n",
        ..Setup::default()
    });
    let origin = with_origin(&g);
    g.agent("#!/bin/sh\necho task > task.txt\n");
    let id = g.repo.add(&["--title", "T", "--goal", "task.txt"]);
    finish(super::spawn_tick(&g, &minute(0)));
    assert_eq!(g.task_json(&id)["block_reason"], "awaiting_judge");
    let branch = task_branch(&g, &id);
    git(
        &origin,
        &["update-ref", "-d", &format!("refs/heads/{branch}")],
    );
    let out = finish(super::spawn_tick(&g, &minute(5)));
    let task = g.task_json(&id);
    assert_eq!(task["status"], "done", "{task}\n{}", out.stdout);
    assert!(!out.stdout.contains("is gone"), "{}", out.stdout);
    assert_eq!(on_origin(&origin, "task.txt").as_deref(), Some("task\n"));
}

/// The branch of the task's runs, as `task show` records it.
fn task_branch(g: &GitRepo, id: &str) -> String {
    let shown = g.repo.run(&["task", "show", id, "--json"]).ok().json();
    shown["runs"][0]["branch"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| format!("opentiger/task-{}", &id[..id.len().min(8)]))
}

/// The git on `PATH` (the shim hands every other call to it).
fn which_git() -> PathBuf {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| Path::new(d).join("git"))
        .find(|p| p.is_file())
        .expect("git on PATH")
}

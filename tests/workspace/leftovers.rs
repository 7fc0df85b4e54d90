//! Nothing is left behind: what the runner's own git started is ended before the runner goes
//! on (before its next push), and a workspace holding a very large number of entries is
//! removed with its run.

use std::path::PathBuf;

use super::common::{git, minute, GitRepo, Setup};
use super::ticks_leaving_no_temp;

/// A git (named by `OPENTIGER_GIT`) that leaves a long-lived process behind when the runner
/// commits (`commit-tree`), as a background `gc` or a daemon of someone's configuration would:
/// it is gone before the runner's push, and after the tick.
#[test]
fn what_the_runner_s_git_leaves_running_is_ended_before_its_push() {
    // One step per tick (issue 38: the review does not fit after the run in a tick of 1
    // minute), so the test can act between the run and its review.
    let g = GitRepo::with(Setup {
        extra: "limits:\n  tick_minutes: 1\n",
        ..Setup::default()
    });
    let origin = super::common::bare_origin(g.tools_path());
    git(
        g.path(),
        &["remote", "add", "origin", origin.to_str().unwrap()],
    );
    git(g.path(), &["push", "-q", "origin", "main"]);
    g.agent("#!/bin/sh\necho task > task.txt\n");
    let id = g.repo.add(&["--title", "T", "--goal", "task.txt"]);
    let tools = g.tools_path().display().to_string();
    let lingerer = g.tools_path().join("left-by-git.sh");
    std::fs::write(&lingerer, "while :; do sleep 0.05; done\n").unwrap();
    let shim = g.tools_path().join("git-shim");
    std::fs::write(
        &shim,
        format!(
            "#!/bin/sh\nif [ -f {tools}/left.pid ] && grep -q left-by-git /proc/$(cat {tools}/left.pid)/cmdline 2>/dev/null; then echo \"alive during: $*\" >> {tools}/calls; fi\ncase \" $* \" in\n  *\" commit-tree \"*) if mkdir {tools}/left 2>/dev/null; then setsid sh {lingerer} </dev/null >/dev/null 2>&1 & echo $! > {tools}/left.pid; fi;;\nesac\necho \"ran: $*\" >> {tools}/calls\nexec {real} \"$@\"\n",
            lingerer = lingerer.display(),
            real = which_git().display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&shim, std::fs::Permissions::from_mode(0o755)).unwrap();
    let shim_path = shim.display().to_string();
    let out = g.tick_env(&minute(0), &[("OPENTIGER_GIT", shim_path.as_str())]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let calls = std::fs::read_to_string(g.tools_path().join("calls")).unwrap_or_default();
    assert!(
        g.tools_path().join("left").exists() && calls.contains(" commit-tree "),
        "the twin: the runner's git left it:\n{calls}"
    );
    let pushes: Vec<&str> = calls.lines().filter(|l| l.contains(" push ")).collect();
    assert!(!pushes.is_empty(), "{calls}");
    assert!(
        !calls
            .lines()
            .any(|l| l.starts_with("alive during:") && l.contains(" push ")),
        "alive while the runner pushed:\n{calls}"
    );
    let alive = std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter_map(|e| std::fs::read(e.path().join("cmdline")).ok())
        .any(|c| String::from_utf8_lossy(&c).contains(&lingerer.display().to_string()));
    assert!(!alive, "it outlived the tick");
    assert_eq!(g.task_json(&id)["block_reason"], "awaiting_judge");
}

/// An agent leaves 200,000 empty files (links to one, in a folder `.gitignore` leaves out, so the change is
/// one file): nothing of its run is left in the temp folder after the tick, and it lands.
#[test]
fn a_workspace_of_200k_entries_is_removed() {
    let g = GitRepo::with(Setup::default());
    std::fs::write(
        g.path().join(".gitignore"),
        "/.opentiger/state.sqlite*\n/many/\n",
    )
    .unwrap();
    git(g.path(), &["commit", "-q", "-am", "leave many/ out"]);
    // Links to one empty file: an entry each, made fast (no inode to allocate).
    g.agent("#!/bin/sh\npython3 -c \"import os\nos.makedirs('many')\nopen('many/empty', 'w').close()\nfor d in range(20):\n    os.makedirs(f'many/{d}')\n    for i in range(10000):\n        os.link('many/empty', f'many/{d}/{i}')\"\necho many > many.txt\n");
    let id = g.repo.add(&["--title", "Many", "--goal", "many.txt"]);
    ticks_leaving_no_temp(&g, 3);
    let task = g.task_json(&id);
    assert_eq!(task["status"], "done", "{task}");
    assert_eq!(g.file_on_main("many.txt").as_deref(), Some("many\n"));
}

/// The git on `PATH` (the shim hands every call to it).
fn which_git() -> PathBuf {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|d| std::path::Path::new(d).join("git"))
        .find(|p| p.is_file())
        .expect("git on PATH")
}

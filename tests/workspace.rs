//! Issue 35, end to end in local-git mode: the agent's workspace is its own, so nothing a
//! person does in the repository while an agent runs is undone, a change the runner committed
//! but never pushed still lands, a judge that gave up is asked again without a worker run, a
//! person's uncommitted work is never overwritten by a merge, and whatever an agent leaves in
//! its workspace goes with it.

use crate::common;
#[path = "workspace/gc.rs"]
mod gc;
#[path = "workspace/leftovers.rs"]
mod leftovers;
#[path = "workspace/remote.rs"]
mod remote;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{bare_origin, git, minute, GitRepo, Out, Setup};

/// A worker that, for a task whose prompt says SLOW, says it started (`started` in the tools
/// folder) and waits for `go` before it writes `task.txt`; any other task writes its own file.
fn slow_agent(g: &GitRepo) {
    let tools = g.tools_path().display().to_string();
    g.agent(&format!(
        "#!/bin/sh\nif grep -q SLOW \"$OPENTIGER_PROMPT_FILE\"; then\n  touch {tools}/started\n  i=0\n  while [ ! -f {tools}/go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done\n  echo task > task.txt\nelse\n  echo \"$OPENTIGER_TASK_ID\" > \"other-$OPENTIGER_TASK_ID.txt\"\nfi\n"
    ));
}

/// A tick at `now`, started in the background.
fn spawn_tick(g: &GitRepo, now: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .args(["--repo", g.path().to_str().unwrap(), "--now", now, "tick"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the tick")
}

/// Waits until `file` exists (at most a minute).
fn wait_for(file: &Path) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while !file.exists() {
        assert!(
            Instant::now() < deadline,
            "{} never appeared",
            file.display()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn finish(child: Child) -> Out {
    let out: Out = child.wait_with_output().expect("the tick").into();
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    out
}

fn ancestor(g: &GitRepo, commit: &str, of: &str) -> bool {
    Command::new("git")
        .current_dir(g.path())
        .args(["merge-base", "--is-ancestor", commit, of])
        .status()
        .unwrap()
        .success()
}

fn slow_task(g: &GitRepo) -> String {
    g.repo
        .add(&["--title", "SLOW task", "--goal", "task.txt says task"])
}

/// A person works in the repository — a commit on `main`, a branch, tags, a note, a stash,
/// `pack-refs`, a fetch, `opentiger task add` with the state on a branch — while an agent
/// runs: all of it is still there afterwards, nothing they had is left staged, and the task
/// lands on top of their commit.
#[test]
fn a_person_s_work_during_a_run_is_never_undone() {
    let g = GitRepo::with(Setup {
        extra: "state:\n  store: branch\n",
        ..Setup::default()
    });
    slow_agent(&g);
    let upstream = bare_origin(g.tools_path());
    git(
        g.path(),
        &["remote", "add", "upstream", upstream.to_str().unwrap()],
    );
    git(g.path(), &["push", "-q", "upstream", "main"]);
    let first = slow_task(&g);
    let tick = spawn_tick(&g, &minute(0));
    wait_for(&g.tools_path().join("started"));

    std::fs::write(g.path().join("person.txt"), "mine\n").unwrap();
    git(g.path(), &["add", "person.txt"]);
    git(g.path(), &["commit", "-q", "-m", "a person's commit"]);
    let mine = git(g.path(), &["rev-parse", "HEAD"]);
    git(g.path(), &["branch", "feature"]);
    git(g.path(), &["tag", "light"]);
    git(g.path(), &["tag", "-a", "annotated", "-m", "a tag"]);
    git(g.path(), &["notes", "add", "-m", "a note", "HEAD"]);
    std::fs::write(g.path().join("README.md"), "# stashed edit\n").unwrap();
    git(g.path(), &["stash", "-q"]);
    git(g.path(), &["pack-refs", "--all"]);
    git(g.path(), &["fetch", "-q", "upstream"]);
    let second = g.repo.add(&["--title", "Second", "--goal", "another file"]);
    std::fs::write(g.tools_path().join("go"), "").unwrap();
    let out = finish(tick);

    assert!(ancestor(&g, &mine, "main"), "{}", out.stdout);
    for name in [
        "refs/heads/feature",
        "refs/tags/light",
        "refs/tags/annotated",
        "refs/notes/commits",
        "refs/stash",
        "refs/remotes/upstream/main",
    ] {
        git(g.path(), &["rev-parse", "--verify", "-q", name]);
    }
    assert!(
        git(g.path(), &["log", "-g", "--format=%gs", "feature"]).contains("branch: Created"),
        "the new branch's reflog"
    );
    assert_eq!(git(g.path(), &["diff", "--cached", "--name-only"]), "");
    assert_eq!(
        git(g.path(), &["status", "--porcelain", "--untracked-files=no"]),
        ""
    );
    let status = g
        .repo
        .run_at(&minute(1), &["status", "--json", "--all"])
        .ok()
        .json();
    assert!(
        status["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["id"] == second),
        "the task added during the tick: {status}"
    );
    let run = &g.repo.run(&["task", "show", &first, "--json"]).ok().json()["runs"][0];
    assert_eq!(run["status"], "success", "{run}");

    g.run_until_quiet(5, 5, 6);
    assert_eq!(g.task_json(&first)["status"], "done");
    assert_eq!(g.file_on_main("task.txt").as_deref(), Some("task\n"));
    assert_eq!(g.file_on_main("person.txt").as_deref(), Some("mine\n"));
    assert!(ancestor(&g, &mine, "main"));
    git(g.path(), &["stash", "pop", "-q"]);
    assert_eq!(
        std::fs::read_to_string(g.path().join("README.md")).unwrap(),
        "# stashed edit\n",
        "the person's stash is theirs"
    );
}

/// A person commits to the very file the task changes while the agent runs: their commit stays
/// in `main`'s history, the conflict is resolved by a conflict fix, and the task converges.
#[test]
fn a_person_s_commit_to_the_task_s_own_file_stays_and_the_task_converges() {
    let g = GitRepo::with(Setup::default());
    slow_agent(&g);
    let id = slow_task(&g);
    let tick = spawn_tick(&g, &minute(0));
    wait_for(&g.tools_path().join("started"));
    std::fs::write(g.path().join("task.txt"), "person\n").unwrap();
    git(g.path(), &["add", "task.txt"]);
    git(g.path(), &["commit", "-q", "-m", "the person's task.txt"]);
    let mine = git(g.path(), &["rev-parse", "HEAD"]);
    std::fs::write(g.tools_path().join("go"), "").unwrap();
    finish(tick);
    let outs = g.run_until_quiet(5, 5, 10);
    let log: Vec<String> = outs.iter().map(|o| o.stdout.clone()).collect();
    assert_eq!(g.task_json(&id)["status"], "done", "{log:#?}");
    assert!(ancestor(&g, &mine, "main"), "{log:#?}");
    assert_eq!(g.file_on_main("task.txt").as_deref(), Some("task\n"));
}

/// A person's uncommitted edit to the file a task changes, in the checked-out base: the merge
/// waits and names the file (no judge retry spent, their edit untouched); once they commit it
/// elsewhere or stash it, the next tick merges.
#[test]
fn a_merge_waits_for_a_person_s_uncommitted_work_in_its_way() {
    // A review window (issue 38): the first tick runs and approves, the merge waits for the
    // tick after it — which finds the person's work in its way.
    let g = GitRepo::with(Setup {
        extra: "merge:\n  review_window_minutes: 5\n",
        ..Setup::default()
    });
    g.agent("#!/bin/sh\necho task > task.txt\n");
    let id = g.repo.add(&["--title", "T", "--goal", "task.txt"]);
    let out = g.tick(&minute(0)).ok();
    // These tests run agents with `sandbox.filesystem: none`: the tick says what that risks.
    assert!(
        out.stdout
            .contains("agents run unconfined: sandbox.filesystem is none")
            && out.stdout.contains("the runner's repository and its .git"),
        "{}",
        out.stdout
    );
    std::fs::write(g.path().join("task.txt"), "my draft\n").unwrap();
    let out = g.tick(&minute(5)).ok();
    assert!(
        out.stdout.contains("uncommitted changes to task.txt"),
        "{}",
        out.stdout
    );
    let task = g.task_json(&id);
    assert_eq!(task["block_reason"], "awaiting_judge", "{task}");
    assert_eq!(
        task["attempts"],
        serde_json::json!({}),
        "no retry spent: {task}"
    );
    assert_eq!(
        std::fs::read_to_string(g.path().join("task.txt")).unwrap(),
        "my draft\n"
    );
    assert!(g.file_on_main("task.txt").is_none());
    git(g.path(), &["stash", "push", "-q", "-u", "--", "task.txt"]);
    let out = g.tick(&minute(10)).ok();
    assert!(out.stdout.contains("approved and merged"), "{}", out.stdout);
    assert_eq!(g.task_json(&id)["status"], "done");
}

/// The judge's agent fails past its retries: the task waits on a person. Their `task retry`
/// asks the judge again — no new worker run — and the change merges.
#[test]
fn a_retry_after_the_judge_gave_up_asks_the_judge_and_runs_no_worker() {
    let g = GitRepo::with(Setup::default());
    g.agent("#!/bin/sh\necho task > task.txt\n");
    g.judge("#!/bin/sh\necho 'the judge is down' >&2\nexit 1\n");
    let id = g.repo.add(&["--title", "T", "--goal", "task.txt"]);
    for i in 0..12 {
        g.tick(&minute(i * 10)).ok();
        if g.task_json(&id)["block_reason"] == "awaiting_human" {
            break;
        }
    }
    let task = g.task_json(&id);
    assert_eq!(task["block_reason"], "awaiting_human", "{task}");
    g.judge("#!/bin/sh\necho '{\"verdict\": \"approve\", \"summary\": \"fine\"}' > \"$OPENTIGER_RESULT_FILE\"\n");
    let said = g.repo.run_at(&minute(200), &["task", "retry", &id]).ok();
    assert!(said.stdout.contains("awaiting_judge"), "{}", said.stdout);
    let out = g.tick(&minute(201)).ok();
    assert!(out.stdout.contains("approved and merged"), "{}", out.stdout);
    let shown = g.repo.run(&["task", "show", &id, "--json"]).ok().json();
    assert_eq!(
        shown["runs"].as_array().unwrap().len(),
        1,
        "one worker run: {shown}"
    );
}

/// `ticks` ticks, ten minutes apart, each with a temp folder of its own (`TMPDIR`) that must
/// be empty after it: nothing of a run is left behind.
fn ticks_leaving_no_temp(g: &GitRepo, ticks: u32) {
    let tmp = tempfile::tempdir().unwrap();
    let env = [("TMPDIR", tmp.path().to_str().unwrap())];
    for i in 0..ticks {
        let out = g.tick_env(&minute(i * 10), &env);
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        let left: Vec<PathBuf> = std::fs::read_dir(tmp.path())
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert!(left.is_empty(), "left behind after tick {i}: {left:?}");
    }
}

/// An agent leaves a tree 3,000 levels deep and folders it closed: nothing of its run is left
/// in the temp folder after the tick, and the next task lands.
#[test]
fn a_workspace_an_agent_made_hard_to_remove_is_removed() {
    let g = GitRepo::with(Setup::default());
    g.agent("#!/bin/sh\nif grep -q DEEP \"$OPENTIGER_PROMPT_FILE\"; then\n  python3 -c \"import os\nfor i in range(3000):\n    os.mkdir('d'); os.chdir('d')\nopen('leaf', 'w').write('x')\"\n  mkdir -p closed/inner && echo x > closed/inner/f && chmod 000 closed/inner closed\n  echo deep > deep.txt\nelse\n  echo plain > plain.txt\nfi\n");
    g.repo.add(&["--title", "DEEP", "--goal", "deep"]);
    let plain = g.repo.add(&["--title", "Plain", "--goal", "plain.txt"]);
    ticks_leaving_no_temp(&g, 6);
    assert_eq!(g.task_json(&plain)["status"], "done");
    assert_eq!(g.file_on_main("plain.txt").as_deref(), Some("plain\n"));
}

/// A `gitdir:` file in a new folder (git walks into it and lists no `.git`): the run is a
/// policy violation naming it, and nothing of the folder reaches `main`.
#[test]
fn a_git_file_in_a_new_folder_is_a_policy_violation_naming_it() {
    let g = GitRepo::with(Setup::default());
    g.agent("#!/bin/sh\nmkdir lib\necho 'gitdir: /nowhere' > lib/.git\necho x > lib/a.txt\n");
    let id = g.repo.add(&["--title", "T", "--goal", "lib"]);
    g.tick(&minute(0)).ok();
    let shown = g.repo.run(&["task", "show", &id, "--json"]).ok().json();
    let run = &shown["runs"][0];
    assert_eq!(run["failure_code"], "policy_violation", "{shown}");
    assert!(
        run["error"]
            .as_str()
            .is_some_and(|e| e.contains("lib/.git is a git repository")),
        "{run}"
    );
    assert!(g.file_on_main("lib/a.txt").is_none());
}

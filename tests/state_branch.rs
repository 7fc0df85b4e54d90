//! The state on a git ref: compare-and-swap saves, bounded history, shared state across clones,
//! and concurrent ticks in separate clones of one origin.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::{bare_origin, clone, git};
use opentiger::statebranch::{Loaded, SaveError, StateRef};

fn save(state: &StateRef, loaded: &Loaded, text: &str) -> Result<(), SaveError> {
    state
        .save(loaded, text.as_bytes(), "# summary\n", "test save")
        .map(|_| ())
}

#[test]
fn a_local_ref_is_a_compare_and_swap() {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    let state = StateRef::new(dir.path(), "refs/opentiger/state", "origin", 100);
    assert_eq!(state.remote, None);
    let empty = state.load().unwrap();
    assert_eq!((empty.commit.as_deref(), empty.bytes.len()), (None, 0));
    save(&state, &empty, "one").unwrap();
    let first = state.load().unwrap();
    assert_eq!(first.bytes, b"one");
    // A save based on an old load loses.
    assert!(matches!(
        save(&state, &empty, "stale"),
        Err(SaveError::Conflict(_))
    ));
    save(&state, &first, "two").unwrap();
    assert_eq!(state.load().unwrap().bytes, b"two");
    // No branch was created and nothing was checked out.
    assert_eq!(git(dir.path(), &["branch", "--list"]), "");
}

#[test]
fn clones_of_one_origin_share_the_state_and_race_safely() {
    let dir = tempfile::tempdir().unwrap();
    let origin = bare_origin(dir.path());
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    clone(&origin, &a);
    clone(&origin, &b);
    let sa = StateRef::new(&a, "opentiger/state", "origin", 100);
    let sb = StateRef::new(&b, "opentiger/state", "origin", 100);
    assert_eq!(sa.remote.as_deref(), Some("origin"));
    let la = sa.load().unwrap();
    let lb = sb.load().unwrap();
    save(&sa, &la, "from a").unwrap();
    // b decided on the state before a's save: its push is rejected, nothing is lost.
    assert!(matches!(
        save(&sb, &lb, "from b"),
        Err(SaveError::Conflict(_))
    ));
    let lb = sb.load().unwrap();
    assert_eq!(lb.bytes, b"from a");
    save(&sb, &lb, "from b").unwrap();
    assert_eq!(sa.load().unwrap().bytes, b"from b");
}

#[test]
fn history_is_squashed_past_keep_commits() {
    let dir = tempfile::tempdir().unwrap();
    let origin = bare_origin(dir.path());
    let a = dir.path().join("a");
    clone(&origin, &a);
    // Three times keep_commits: squashed twice on the way (at 20 and at 40 commits). Each save
    // is a fetch and a push, so a small bound keeps the test short.
    let state = StateRef::new(&a, "opentiger/state", "origin", 20);
    // 60 saves of a state about the size of a fresh database, each a little different.
    let mut body = vec![0u8; 120 * 1024];
    for i in 0..60u32 {
        let at = (i as usize * 7919) % body.len();
        body[at] = (i % 251) as u8;
        body[..4].copy_from_slice(&i.to_le_bytes());
        let loaded = state.load().unwrap();
        state.save(&loaded, &body, "# s\n", "save").unwrap();
    }
    let len = state.history_len().unwrap();
    assert!(len <= 20, "history bounded by keep_commits: {len}");
    assert_eq!(&state.load().unwrap().bytes[..4], &59u32.to_le_bytes());
    // After the server's own housekeeping the squashed-away history is gone.
    git(&origin, &["gc", "-q", "--prune=now"]);
    let size = dir_size(&origin);
    assert!(size < 2 * 1024 * 1024, "origin stays small: {size} bytes");
}

fn dir_size(path: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(path).unwrap().flatten() {
        let meta = entry.metadata().unwrap();
        total += if meta.is_dir() {
            dir_size(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

/// A local-git repository whose state and code live on a bare `origin`, and clones of it.
struct Origin {
    dir: tempfile::TempDir,
    origin: PathBuf,
}

impl Origin {
    fn new(config: &str, agent: &str) -> Origin {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let origin = bare_origin(dir.path());
        let seed = dir.path().join("seed");
        clone(&origin, &seed);
        let agent_path = dir.path().join("agent.sh");
        // `@DIR@` in the script is the test's folder (agents run in worktrees, not in the clone).
        std::fs::write(
            &agent_path,
            agent.replace("@DIR@", &dir.path().display().to_string()),
        )
        .unwrap();
        std::fs::set_permissions(&agent_path, std::fs::Permissions::from_mode(0o755)).unwrap();
        let config = format!(
            "mode: local-git\nsandbox:\n  filesystem: none\nstate:\n  store: branch\nagents:\n  default:\n    executor: command\n    command: [\"{}\"]\n    timeout_minutes: 1\n  judge:\n    review: false\n{config}",
            agent_path.display()
        );
        std::fs::write(seed.join(".opentiger.yml"), config).unwrap();
        std::fs::write(seed.join("README.md"), "# shared\n").unwrap();
        git(&seed, &["add", "-A"]);
        git(&seed, &["commit", "-q", "-m", "initial"]);
        git(&seed, &["push", "-q", "origin", "main"]);
        Origin { dir, origin }
    }

    fn clone(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        clone(&self.origin, &path);
        path
    }

    fn file_on_main(&self, path: &str) -> Option<String> {
        let out = Command::new("git")
            .current_dir(&self.origin)
            .args(["show", &format!("main:{path}")])
            .output()
            .unwrap();
        out.status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
    }
}

fn opentiger(repo: &Path, args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .arg("--repo")
        .arg(repo)
        .args(args)
        .env_remove("GITHUB_RUN_ID")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .unwrap()
}

fn status(repo: &Path) -> serde_json::Value {
    let out = opentiger(repo, &["status", "--json", "--all"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn every_clone_sees_one_state_and_a_killed_claim_is_recovered_once() {
    let o = Origin::new("", "#!/bin/sh\nif [ -f @DIR@/hang-once ]; then rm @DIR@/hang-once; echo $$ > @DIR@/agent.pid; sleep 120; fi\necho done > done.txt\n");
    let (a, b) = (o.clone("a"), o.clone("b"));
    let add = opentiger(
        &a,
        &[
            "task", "add", "--title", "Shared", "--goal", "done.txt", "--id", "shared",
        ],
    );
    assert!(
        add.status.success(),
        "{}",
        String::from_utf8_lossy(&add.stderr)
    );
    // b sees what a added: the state is on origin, not in a's clone.
    assert_eq!(status(&b)["tasks"][0]["id"], "shared");
    assert!(
        !a.join(".opentiger").exists(),
        "no state file in the work tree"
    );

    // a's tick claims (and pushes the claim), then is killed while its agent hangs.
    std::fs::write(o.dir.path().join("hang-once"), "").unwrap();
    let mut tick = Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .arg("--repo")
        .arg(&a)
        .args(["--now", "2026-11-21T12:00:00Z", "tick"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pidfile = o.dir.path().join("agent.pid");
    assert!(
        common::wait_for_pid(&pidfile, 200).is_some(),
        "the agent never started"
    );
    tick.kill().unwrap();
    tick.wait().unwrap();
    let agent: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(agent > 1);
    unsafe {
        libc::kill(-agent, libc::SIGKILL);
    }
    assert_eq!(
        status(&b)["tasks"][0]["status"],
        "running",
        "the claim was saved before the work"
    );

    // From the other clone, after the lease expired: reclaimed and done, once.
    for minute in ["13:31", "13:32", "13:33"] {
        let out = opentiger(&b, &["--now", &format!("2026-11-21T{minute}:00Z"), "tick"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let shown = opentiger(&b, &["task", "show", "shared", "--json"]);
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    assert_eq!(shown["task"]["status"], "done", "{shown}");
    let statuses: Vec<&str> = shown["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["success", "cancelled"]);
    assert_eq!(o.file_on_main("done.txt").as_deref(), Some("done\n"));
}

/// Eight clones tick at once until the 40 tasks are done: no task is claimed or run twice, each
/// is merged once. Bounded by the number of ticks (`TICKS_PER_CLONE`), not by the clock.
#[test]
fn concurrent_ticks_in_eight_clones_run_every_task_exactly_once() {
    const TASKS: usize = 40;
    const CLONES: usize = 8;
    let o = Origin::new(
        // A review that lost every merge race to the other clones is retried after the cooldown:
        // keep it short, this test is about never claiming twice, not about waiting.
        "  worker:\n    count: 8\nlimits:\n  max_runs_per_tick: 1\nretry:\n  cooldown_seconds: 1\n",
        "#!/bin/sh\nsleep 0.$(( $$ % 3 ))\nmkdir -p out\necho \"$OPENTIGER_TASK_ID\" > \"out/$OPENTIGER_TASK_ID.txt\"\n",
    );
    let clones: Vec<PathBuf> = (0..CLONES).map(|i| o.clone(&format!("c{i}"))).collect();
    let plan: Vec<serde_json::Value> = (0..TASKS)
        .map(|i| serde_json::json!({"key": format!("t{i}"), "title": format!("Task {i}"), "goal": format!("out/t{i}"), "allowed_paths": ["out/**"]}))
        .collect();
    let plan_file = o.dir.path().join("plan.json");
    std::fs::write(&plan_file, serde_json::json!({ "tasks": plan }).to_string()).unwrap();
    let added = opentiger(
        &clones[0],
        &["task", "add", "--from", plan_file.to_str().unwrap()],
    );
    assert!(
        added.status.success(),
        "{}",
        String::from_utf8_lossy(&added.stderr)
    );

    // Bounded by ticks, not by the clock (a loaded machine is slower, not wrong): a clone
    // whose tick found nothing to do ticks again only once another clone's tick has done
    // something (or when none is ticking: a review's cooldown may have passed), so idle
    // ticks follow the work done instead of the time it takes.
    let progress = std::sync::Arc::new(Progress::default());
    let workers: Vec<_> = clones
        .iter()
        .cloned()
        .map(|repo| {
            let progress = progress.clone();
            std::thread::spawn(move || {
                let mut ticks = Ticks::default();
                while ticks.all() < TICKS_PER_CLONE {
                    let seen = progress.start();
                    let out = opentiger(&repo, &["tick"]);
                    let code = out.status.code();
                    let worked = code == Some(0)
                        && !String::from_utf8_lossy(&out.stdout).contains("nothing to do");
                    // Before any panic: a clone waiting for this one must not wait forever.
                    progress.end(worked);
                    assert!(
                        matches!(code, Some(0 | 3)),
                        "tick failed ({code:?}): {}",
                        String::from_utf8_lossy(&out.stderr)
                    );
                    ticks.count(code, worked);
                    let s = status(&repo);
                    if s["tasks"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .all(|t| t["status"] == "done")
                    {
                        return ticks;
                    }
                    if !worked {
                        progress.wait_after(seen);
                    }
                }
                panic!(
                    "{} ticks in {} and the tasks are not done: {ticks:?}",
                    ticks.all(),
                    repo.display()
                );
            })
        })
        .collect();
    let ticks: Vec<Ticks> = workers.into_iter().map(|w| w.join().unwrap()).collect();
    let conflicts: usize = ticks.iter().map(|t| t.conflicts).sum();

    let final_status = status(&clones[3]);
    let tasks = final_status["tasks"].as_array().unwrap();
    let extra: Vec<String> = tasks
        .iter()
        .filter(|t| t["kind"] != "feature" || t["status"] != "done")
        .map(|t| {
            format!(
                "{} {} {} {}: {}",
                t["id"], t["kind"], t["status"], t["title"], t["reason"]
            )
        })
        .collect();
    assert_eq!(
        tasks.len(),
        TASKS,
        "tasks beyond the plan or not done: {extra:#?}"
    );
    assert!(
        tasks.iter().all(|t| t["status"] == "done"),
        "{final_status}"
    );
    for t in tasks {
        let id = t["id"].as_str().unwrap();
        let shown: serde_json::Value =
            serde_json::from_slice(&opentiger(&clones[0], &["task", "show", id, "--json"]).stdout)
                .unwrap();
        let runs = shown["runs"].as_array().unwrap();
        assert_eq!(runs.len(), 1, "task {id} ran once: {runs:?}");
        assert_eq!(runs[0]["status"], "success");
        assert_eq!(
            o.file_on_main(&format!("out/{id}.txt")).as_deref(),
            Some(format!("{id}\n").as_str()),
            "{id} on main"
        );
    }
    eprintln!("8 clones, 40 tasks: ticks per clone {ticks:?}; {conflicts} state conflicts exhausted retries (tolerated, retried by the next tick)");
}

/// At most this many ticks per clone: a clone's share of the 40 runs and reviews, each tick
/// that lost a save or a merge race, and one idle tick per tick of the others that did
/// something, with room to spare.
const TICKS_PER_CLONE: usize = 100;

/// What one clone's ticks did.
#[derive(Debug, Default)]
struct Ticks {
    worked: usize,
    idle: usize,
    /// Ticks whose save lost the race to other clones' saves more times than it retries (exit 3).
    conflicts: usize,
}

impl Ticks {
    fn all(&self) -> usize {
        self.worked + self.idle + self.conflicts
    }

    fn count(&mut self, code: Option<i32>, worked: bool) {
        match (code, worked) {
            (Some(3), _) => self.conflicts += 1,
            (_, true) => self.worked += 1,
            _ => self.idle += 1,
        }
    }
}

/// The clones' ticks that did something so far, and how many clones are ticking now.
#[derive(Default)]
struct Progress {
    state: std::sync::Mutex<(u64, usize)>,
    changed: std::sync::Condvar,
}

impl Progress {
    /// A tick starts: the number of ticks that had done something before it.
    fn start(&self) -> u64 {
        let mut state = self.state.lock().unwrap();
        state.1 += 1;
        state.0
    }

    /// A tick ended, having done something or not.
    fn end(&self, worked: bool) {
        let mut state = self.state.lock().unwrap();
        state.1 -= 1;
        if worked {
            state.0 += 1;
        }
        self.changed.notify_all();
    }

    /// Waits until a tick did something since `seen`, or until no clone is ticking.
    fn wait_after(&self, seen: u64) {
        let state = self.state.lock().unwrap();
        let _state = self
            .changed
            .wait_while(state, |(worked, ticking)| *worked == seen && *ticking > 0)
            .unwrap();
    }
}

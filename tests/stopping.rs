//! Issue 49: a signal never breaks the record, and a runner's death is counted once. The real
//! binary's ticks are sent SIGINT or SIGTERM to their process group (a terminal's Ctrl-C, a
//! `kill` of the group) while they save the state, and killed (SIGKILL) while they hold three
//! runs. The agents write what they did into the tools folder, a `sandbox.writable` folder.

#[path = "stopping/at_once.rs"]
mod at_once;
use crate::common;

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{git, minute, GitRepo, Out, Setup};

/// A test repository whose agents may write the tools folder, with `extra` top-level lines.
fn repo(extra: &str, worker: &'static str) -> GitRepo {
    let g = GitRepo::with(Setup {
        worker,
        ..Setup::default()
    });
    let config = std::fs::read_to_string(g.path().join(".opentiger.yml")).unwrap();
    let config = config.replace(
        "sandbox:\n  filesystem: none\n",
        &format!(
            "sandbox:\n  writable: [\"{}\"]\n{extra}",
            g.tools_path().display()
        ),
    );
    g.repo.file(".opentiger.yml", &config);
    g
}

/// `opentiger --repo <g> --now <now> tick` leading a process group of its own, as a tick run
/// from a terminal leads the foreground group.
fn start_tick(g: &GitRepo, now: &str) -> Child {
    Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .arg("--repo")
        .arg(g.path())
        .args(["--now", now, "tick"])
        .env_remove("GITHUB_RUN_ID")
        .env_remove("GITHUB_STEP_SUMMARY")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("start a tick")
}

/// Waits (bounded) until `file` exists; the tick's output if it never does.
fn wait_for(file: &Path, tick: &mut Child) {
    let until = Instant::now() + Duration::from_secs(60);
    while !file.exists() {
        if Instant::now() > until || tick.try_wait().ok().flatten().is_some() {
            let _ = tick.kill();
            let out: Out = tick_output(tick);
            panic!(
                "{} never appeared\n{}\n{}",
                file.display(),
                out.stdout,
                out.stderr
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn tick_output(tick: &mut Child) -> Out {
    let child = std::mem::replace(
        tick,
        Command::new("true").spawn().expect("a placeholder child"),
    );
    child.wait_with_output().expect("the tick's output").into()
}

/// Signals the process group `tick` leads.
fn signal_group(tick: &Child, signal: libc::c_int) {
    let pgid = tick.id() as libc::pid_t;
    // SAFETY: kill has no memory effects; a negative pid addresses the tick's process group.
    assert_eq!(unsafe { libc::kill(-pgid, signal) }, 0);
}

/// Processes (zombies aside) whose command line or working folder names `dir`.
fn running_in(dir: &Path) -> Vec<String> {
    let dir = dir.to_string_lossy().to_string();
    let me = std::process::id().to_string();
    std::fs::read_dir("/proc")
        .unwrap()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .chars()
                .all(|c| c.is_ascii_digit())
        })
        .filter(|e| e.file_name().to_string_lossy() != me)
        .filter_map(|e| {
            let proc = e.path();
            let stat = std::fs::read_to_string(proc.join("stat")).ok()?;
            if stat.rsplit(") ").next()?.starts_with('Z') {
                return None;
            }
            let cmdline = std::fs::read(proc.join("cmdline")).ok()?;
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            let cwd = std::fs::read_link(proc.join("cwd"))
                .map(|p| p.to_string_lossy().to_string())
                .unwrap_or_default();
            (cmdline.contains(&dir) || cwd.starts_with(&dir))
                .then(|| format!("{cmdline} (in {cwd})"))
        })
        .collect()
}

/// Nothing the tick started runs on (a killed process may take a moment to go).
fn nothing_left(dirs: &[&Path]) {
    let mut left = Vec::new();
    for _ in 0..50 {
        left = dirs.iter().flat_map(|d| running_in(d)).collect();
        if left.is_empty() {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("still running after the tick: {left:#?}");
}

/// How many times the agent started for `task`, and how many of those finished.
fn agent_runs(tools: &Path, task: &str) -> (usize, usize) {
    let log = std::fs::read_to_string(tools.join("runs")).unwrap_or_default();
    let count = |what: &str| {
        log.lines()
            .filter(|l| *l == format!("{what} {task}"))
            .count()
    };
    (count("start"), count("end"))
}

/// The lost runs `task show` counts against `task`.
fn lost_runs(g: &GitRepo, task: &str) -> u64 {
    let shown = g.repo.run(&["task", "show", task, "--json"]).ok().json();
    shown["task"]["attempts"]["lease"].as_u64().unwrap_or(0)
}

/// Adds a task titled `title` at `now`; its id.
fn add_task(g: &GitRepo, now: &str, title: &str) -> String {
    g.repo
        .run_at(now, &["task", "add", "--title", title, "--goal", "a file"])
        .ok()
        .stdout
        .trim()
        .to_string()
}

/// A repository whose state is on a branch of an `origin` that holds a state push while asked
/// to ([`holding_origin`]); its agent logs each start and end in the tools folder and, with
/// `arm`, asks for the next state push to be held (the one that records its run).
fn saving_repo(arm: bool) -> GitRepo {
    let g = repo("state:\n  store: branch\n", "");
    let t = g.tools_path().display().to_string();
    let arm = if arm {
        format!("touch {t}/armed\n")
    } else {
        String::new()
    };
    g.agent(&format!(
        "#!/bin/sh\necho \"start $OPENTIGER_TASK_ID\" >> {t}/runs\necho done > \"out-$OPENTIGER_TASK_ID.txt\"\necho \"end $OPENTIGER_TASK_ID\" >> {t}/runs\n{arm}"
    ));
    holding_origin(&g);
    g
}

/// Gives `g` an `origin` (in the tools folder) whose state pushes are held while the file
/// `armed` exists: the first such push removes it, touches `saving` and waits (at most 30 s)
/// until the test writes `release`.
fn holding_origin(g: &GitRepo) {
    let tools = g.tools_path();
    let t = tools.display();
    let origin = common::bare_origin(tools);
    let hook = origin.join("hooks/pre-receive");
    std::fs::write(
        &hook,
        format!(
            "#!/bin/sh\ninput=$(cat)\ncase \"$input\" in *refs/heads/opentiger/state*)\n  if [ -f {t}/armed ]; then\n    rm -f {t}/armed; touch {t}/saving; i=0\n    while [ ! -f {t}/release ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done\n    rm -f {t}/release {t}/saving\n  fi;;\nesac\nexit 0\n"
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    git(
        g.path(),
        &["remote", "add", "origin", origin.to_str().unwrap()],
    );
    git(g.path(), &["push", "-q", "origin", "main"]);
}

/// SIGINT and SIGTERM to the tick's process group while it pushes the record of a finished
/// run, six times each: the save finishes, the tick exits 130 or 143 saying the state is
/// saved, nothing it started runs on, no lost run is counted, and no finished run runs again.
#[test]
fn a_signal_during_a_state_save_never_breaks_the_record() {
    // The state's remote holds the first push of the state after a run finished until the
    // test lets it go: the signal lands while the tick's own git pushes its record.
    let g = saving_repo(true);
    let tools = g.tools_path().to_path_buf();
    let mut tasks = Vec::new();
    let trials = [
        (libc::SIGINT, 130, "SIGINT"),
        (libc::SIGTERM, 143, "SIGTERM"),
    ];
    for (n, (signal, code, name)) in trials.iter().flat_map(|t| [*t; 6]).enumerate() {
        let now = minute(n as u32 * 10);
        let id = add_task(&g, &now, &format!("Trial {n}"));
        let mut tick = start_tick(&g, &now);
        wait_for(&tools.join("saving"), &mut tick);
        signal_group(&tick, signal);
        std::thread::sleep(Duration::from_millis(300));
        std::fs::write(tools.join("release"), "").unwrap();
        let out = tick_output(&mut tick);
        assert_eq!(
            out.code, code,
            "trial {n} ({name}):\n{}\n{}",
            out.stdout, out.stderr
        );
        assert!(
            out.stdout.contains(&format!("interrupted by {name}"))
                && out.stdout.contains("state saved"),
            "trial {n}: {}",
            out.stdout
        );
        assert!(!out.stderr.contains("failed:"), "trial {n}: {}", out.stderr);
        nothing_left(&[g.path(), &tools]);
        // The record was saved: the run is recorded, its task waits for the judge.
        let shown = g.repo.run(&["task", "show", &id, "--json"]).ok().json();
        assert_eq!(shown["runs"][0]["status"], "success", "trial {n}: {shown}");
        assert_eq!(lost_runs(&g, &id), 0, "trial {n}: {shown}");
        tasks.push(id);
    }
    // Twice, fast: the tick exits at once and ends its push (nothing of it runs on); the
    // finished run it was recording is recorded by the next tick from what it kept.
    let now = minute(150);
    let id = add_task(&g, &now, "Twice");
    let mut tick = start_tick(&g, &now);
    wait_for(&tools.join("saving"), &mut tick);
    signal_group(&tick, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(200));
    signal_group(&tick, libc::SIGINT);
    let out = tick_output(&mut tick);
    assert_eq!(out.code, 130, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("interrupted again"), "{}", out.stderr);
    let _ = std::fs::remove_file(tools.join("saving"));
    nothing_left(&[g.path(), &tools]);
    let next = g.tick(&minute(155));
    assert!(
        next.stdout.contains("left unsaved when it ended") && !next.stdout.contains("run_lost"),
        "{}",
        next.stdout
    );
    tasks.push(id);
    // The next ticks review and merge them all: no run is lost, none runs again.
    let outs = g.run_until_quiet(200, 5, 30);
    for out in &outs {
        assert!(
            !out.stdout.contains("run_lost") && !out.stdout.contains("lease_reclaimed"),
            "{}",
            out.stdout
        );
    }
    for id in &tasks {
        assert_eq!(g.task_json(id)["status"], "done", "{id}");
        assert_eq!(agent_runs(&tools, id), (1, 1), "{id}: its run ran again");
        assert_eq!(lost_runs(&g, id), 0, "{id}");
    }
}

/// A tick killed outright (SIGKILL to its group, as a cancelled job's end) while it pushes its
/// claim, a push that lands after it died: the next tick finds the claimed run, which never
/// started, in what the dead tick kept and queues it again with no lost run counted; the agent
/// runs once.
#[test]
fn a_claim_whose_tick_died_while_saving_it_costs_nothing() {
    let g = saving_repo(false);
    let tools = g.tools_path().to_path_buf();
    let now = minute(0);
    let id = add_task(&g, &now, "Claimed");
    // The tick's first state push is its claim.
    std::fs::write(tools.join("armed"), "").unwrap();
    let mut tick = start_tick(&g, &now);
    wait_for(&tools.join("saving"), &mut tick);
    signal_group(&tick, libc::SIGKILL);
    let _ = tick_output(&mut tick);
    // The push goes on without the tick (its receiving end is the remote's) and lands.
    std::fs::write(tools.join("release"), "").unwrap();
    nothing_left(&[g.path(), &tools]);
    assert_eq!(g.task_json(&id)["status"], "running", "the claim landed");
    let next = g.tick(&minute(5));
    assert_eq!(next.code, 0, "{}", next.stderr);
    assert!(
        next.stdout.contains("left unsaved when it ended")
            && next.stdout.contains("not started: its tick ended first")
            && !next.stdout.contains("requeue_lost"),
        "{}",
        next.stdout
    );
    g.run_until_quiet(10, 5, 30);
    assert_eq!(g.task_json(&id)["status"], "done");
    assert_eq!(agent_runs(&tools, &id), (1, 1));
    assert_eq!(lost_runs(&g, &id), 0);
}

/// The agent of `repo`: logs each start and end in the tools folder and hangs on the run whose
/// number (counted over the whole test) is in `hang-at`, after touching `hung`.
fn hanging_agent(g: &GitRepo) {
    let t = g.tools_path().display();
    g.agent(&format!(
        "#!/bin/sh\necho \"start $OPENTIGER_TASK_ID\" >> {t}/runs\nn=$(grep -c '^start' {t}/runs)\nif [ \"$n\" = \"$(cat {t}/hang-at 2>/dev/null)\" ]; then touch {t}/hung; sleep 120; fi\necho done > \"out-$OPENTIGER_TASK_ID.txt\"\necho \"end $OPENTIGER_TASK_ID\" >> {t}/runs\n"
    ));
}

/// Three tasks, and a repository whose ticks claim and hold all three at once.
fn three_held() -> (GitRepo, Vec<String>) {
    let g = repo("limits:\n  max_runs_per_tick: 3\n", "    count: 3\n");
    hanging_agent(&g);
    let ids = (0..3)
        .map(|i| add_task(&g, &minute(0), &format!("Held {i}")))
        .collect();
    (g, ids)
}

/// Starts a tick at `now` whose `nth` agent run hangs, and kills its process group (SIGKILL)
/// once it does, checking it held three runs then.
fn kill_during_run(g: &GitRepo, now: &str, nth: usize) {
    let tools = g.tools_path();
    let started = std::fs::read_to_string(tools.join("runs"))
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("start"))
        .count();
    std::fs::write(tools.join("hang-at"), (started + nth).to_string()).unwrap();
    let _ = std::fs::remove_file(tools.join("hung"));
    let mut tick = start_tick(g, now);
    wait_for(&tools.join("hung"), &mut tick);
    let status = g
        .repo
        .run_at(now, &["status", "--json", "--all"])
        .ok()
        .json();
    let running = status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["status"] == "running")
        .count();
    assert_eq!(running, 3, "the tick holds three runs: {status}");
    signal_group(&tick, libc::SIGKILL);
    let _ = tick_output(&mut tick);
}

/// A tick holding three runs killed (SIGKILL, as a cancelled job or a lost machine ends it)
/// four times, each time while its first agent runs and with nothing left of its record of
/// which run that was (the machine is gone): each death counts one lost run, against the task
/// it has cost least so far, and all three tasks land without waiting on a person.
#[test]
fn a_tick_holding_three_runs_killed_four_times_lands_all_three() {
    let (g, ids) = three_held();
    let unsaved = g.path().join(".git/opentiger/unsaved");
    for kill in 0..4u32 {
        kill_during_run(&g, &minute(kill * 10 + 1), 1);
        // A lost machine takes its disk along.
        let _ = std::fs::remove_dir_all(&unsaved);
        let next = g
            .repo
            .run_at(&minute(kill * 10 + 5), &["tick", "--dry-run"])
            .ok();
        assert_eq!(
            next.stdout.matches("[recovery.requeue_lost]").count(),
            1,
            "kill {kill}: one death, one lost run:\n{}",
            next.stdout
        );
        assert_eq!(
            next.stdout
                .matches("recovery.requeue_lost_with_runner")
                .count(),
            2,
            "kill {kill}: the other two go back free:\n{}",
            next.stdout
        );
    }
    std::fs::write(g.tools_path().join("hang-at"), "0").unwrap();
    let outs = g.run_until_quiet(60, 5, 30);
    let said: String = outs.iter().map(|o| o.stdout.clone()).collect();
    let lost: Vec<u64> = ids.iter().map(|id| lost_runs(&g, id)).collect();
    assert_eq!(lost.iter().sum::<u64>(), 4, "{lost:?}\n{said}");
    assert!(
        lost.iter().all(|n| *n <= 2),
        "counted against the least lost: {lost:?}"
    );
    for id in &ids {
        let task = g.task_json(id);
        assert_eq!(task["status"], "done", "{id}: {task}\n{said}");
    }
    assert!(!said.contains("awaiting_human"), "{said}");
    nothing_left(&[g.path(), g.tools_path()]);
}

/// A tick holding three runs killed while its second agent runs, on a machine that stays: the
/// next tick records the first run, which finished (never run again), queues the third, which
/// never started, with nothing counted, and counts one lost run, against the second.
#[test]
fn a_killed_ticks_finished_run_is_recorded_not_run_again() {
    let (g, ids) = three_held();
    kill_during_run(&g, &minute(1), 2);
    let log = std::fs::read_to_string(g.tools_path().join("runs")).unwrap();
    let task_of = |line: usize| {
        log.lines()
            .nth(line)
            .unwrap()
            .split_once(' ')
            .unwrap()
            .1
            .to_string()
    };
    let (finished, hung) = (task_of(0), task_of(2));
    assert_eq!(
        log.lines().nth(1),
        Some(format!("end {finished}").as_str()),
        "{log}"
    );
    std::fs::write(g.tools_path().join("hang-at"), "0").unwrap();
    let next = g.tick(&minute(5));
    assert_eq!(next.code, 0, "{}", next.stderr);
    assert!(
        next.stdout
            .contains("left unsaved when it ended (2 item(s))"),
        "{}",
        next.stdout
    );
    for id in &ids {
        let lost = lost_runs(&g, id);
        assert_eq!(lost, u64::from(*id == hung), "{id}: {}", next.stdout);
    }
    g.run_until_quiet(10, 5, 30);
    for id in &ids {
        assert_eq!(g.task_json(id)["status"], "done", "{id}");
    }
    assert_eq!(
        agent_runs(g.tools_path(), &finished),
        (1, 1),
        "run again:\n{log}"
    );
    nothing_left(&[g.path(), g.tools_path()]);
}

//! Issue 38, a tick goes on while nothing outside is awaited, end to end: against the GitHub
//! stand-in with a scripted worker and an approving scripted judge, a labelled issue becomes a
//! merged PR in one tick (no CI, no review window); with the window, the first tick after it
//! merges and a person's request for changes inside it is heard; with CI required, the tick
//! that CI's completion starts merges. In local-git mode the same, a chain of three dependent
//! tasks in one tick or over several when `limits.tick_minutes` is short (no round started
//! that cannot end in time), and a tick killed or interrupted in a later round keeps what its
//! earlier rounds did.

use crate::common;

use std::process::{Command, Stdio};

use common::scripted::{self, owners_issue, prompts, set_config};
use common::{git, minute, running, GitRepo, Setup};

/// A github-mode tick at `now` with `$GITHUB_STEP_SUMMARY`: its output and its job summary.
fn tick_with_summary(s: &scripted::Setup, now: &str) -> (String, String) {
    let summary = s.dir.path().join(format!("summary-{now}.md"));
    let out = common::github::opentiger_against(&s.server, &s.clone, now)
        .args(["-v", "tick"])
        .env("PROMPTS", s.dir.path().join("prompts"))
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    let stdout = common::github::tick_output(out, now);
    (
        stdout,
        std::fs::read_to_string(&summary).unwrap_or_default(),
    )
}

fn merged(s: &scripted::Setup, pr: u64) -> bool {
    s.server.pull(pr).unwrap().merged
}

/// The headers of a tick's rounds (`tick -v`): (round, its bound in minutes, the minutes left).
fn rounds_of(out: &str) -> Vec<(u32, f64, f64)> {
    out.lines()
        .filter_map(|l| {
            let rest = l.trim().strip_prefix("[round ")?;
            let (n, rest) = rest.split_once("] its work may take ")?;
            let (bound, rest) = rest.split_once(" min of the ")?;
            let (left, _) = rest.split_once(" min left:")?;
            Some((n.parse().ok()?, bound.parse().ok()?, left.parse().ok()?))
        })
        .collect()
}

#[test]
fn without_ci_or_a_window_a_labelled_issue_is_merged_by_one_tick() {
    let s = scripted::setup();
    set_config(&s, "merge:\n  review_window_minutes: 0\n");
    let issue = owners_issue(&s, "Greeting", "CREATE hello.txt");
    let (out, summary) = tick_with_summary(&s, "2026-11-21T12:00:00Z");
    let pr = s.server.pulls()[0].number;
    assert!(merged(&s, pr), "{out}");
    assert_eq!(s.server.issue(issue).unwrap().state, "closed");
    assert!(
        scripted::files_on_main(&s)
            .lines()
            .any(|f| f == "hello.txt"),
        "{out}"
    );
    // The output and the job summary show the rounds: the run, then the review and merge.
    assert!(out.contains("1 run(s), 1 review(s) in 2 rounds"), "{out}");
    assert_eq!(
        rounds_of(&out).iter().map(|r| r.0).collect::<Vec<_>>(),
        [1, 2],
        "{out}"
    );
    assert!(out.contains("min left: reviewed 1, merged 1"), "{out}");
    assert!(summary.contains("in 2 rounds"), "{summary}");
    // The job summary is for people (issue 51): what happened, no rounds arithmetic.
    assert!(summary.contains("review: approved and merged"), "{summary}");
    assert!(!summary.contains("[round "), "{summary}");
    // Nothing is left for a later tick, and a quiet one still costs a few 304s.
    scripted::tick(&s, "2026-11-21T12:05:00Z");
    s.server.reset_counts();
    scripted::tick(&s, "2026-11-21T12:10:00Z");
    let requests = s.server.requests();
    assert!(requests.len() <= 3, "{requests:?}");
    assert!(
        requests.iter().all(|r| r.conditional && r.status == 304),
        "{requests:?}"
    );
}

#[test]
fn with_a_review_window_the_first_tick_after_it_merges_without_a_second_review() {
    let s = scripted::setup();
    let issue = owners_issue(&s, "Greeting", "CREATE hello.txt");
    let out = scripted::tick(&s, "2026-11-21T12:00:00Z");
    let pr = s.server.pulls()[0].number;
    assert!(!merged(&s, pr), "{out}");
    assert!(
        out.contains("merges after the review window, at 2026-11-21T12:10:00Z"),
        "{out}"
    );
    // A named wait, visible in status, that spends no judge retry or merge attempt.
    let task = scripted::tasks(&s)
        .into_iter()
        .find(|t| t["issue"] == issue)
        .unwrap();
    assert_eq!(task["block_reason"], "awaiting_judge", "{task}");
    assert!(
        task["next_action"]
            .as_str()
            .unwrap()
            .contains("approved by the judge; merges after the review window, at 12:10:00Z"),
        "{task}"
    );
    assert_eq!(task["attempts"], serde_json::json!({}), "{task}");
    let dry = scripted::opentiger(&s, "2026-11-21T12:05:00Z", &["tick", "--dry-run"]);
    let dry = String::from_utf8_lossy(&dry.stdout);
    assert!(dry.contains("[merge.review_window]"), "{dry}");
    let out = scripted::tick(&s, "2026-11-21T12:05:00Z");
    assert!(!merged(&s, pr), "{out}");
    // The first tick after the window merges what the judge approved, asking it nothing again.
    let out = scripted::tick(&s, "2026-11-21T12:10:00Z");
    assert!(merged(&s, pr), "{out}");
    assert!(out.contains("approved and merged"), "{out}");
    assert_eq!(prompts(&s, "judge").len(), 1, "one review, then the merge");
    let verdicts: Vec<String> = s
        .server
        .comments(pr)
        .into_iter()
        .map(|c| c.body)
        .filter(|b| b.contains("opentiger:verdict"))
        .collect();
    assert_eq!(verdicts.len(), 1, "edited in place: {verdicts:?}");
    assert!(verdicts[0].contains("merged as"), "{verdicts:?}");
}

#[test]
fn a_persons_request_for_changes_inside_the_window_is_heard() {
    let s = scripted::setup();
    s.server.set_permission("carol", "write");
    let n = owners_issue(&s, "Notes", "WRITE notes.txt draft\n");
    scripted::tick(&s, "2026-11-21T12:00:00Z");
    let pr = s.server.pulls()[0].clone();
    assert!(!pr.merged);
    s.server.advance(180);
    s.server.add_review(
        pr.number,
        "carol",
        "CHANGES_REQUESTED",
        "Not draft: WRITE notes.txt final",
        &[],
    );
    let out = scripted::tick(&s, "2026-11-21T12:10:00Z");
    assert!(!merged(&s, pr.number), "{out}");
    assert!(out.contains("@carol requested changes"), "{out}");
    // Her words reached the AutoFix, which the same tick ran on the PR's branch.
    let fix = scripted::worker_prompt_for(&s, n)
        .into_iter()
        .find(|p| p.contains("AutoFix"))
        .expect("the AutoFix ran");
    assert!(
        scripted::fenced(&fix, "comments by trusted people").contains("WRITE notes.txt final"),
        "{fix}"
    );
}

#[test]
fn with_ci_required_the_tick_that_ci_completion_starts_merges() {
    let s = scripted::setup();
    set_config(&s, "merge:\n  required_checks: [test]\n");
    owners_issue(&s, "Greeting", "CREATE hello.txt");
    // The labelled issue's tick: the change is pushed; the next round reads CI on its head and
    // finds it not started yet: waiting for CI is the outside, the tick ends.
    let out = scripted::tick(&s, "2026-11-21T12:00:00Z");
    let pr = s.server.pulls()[0].clone();
    assert!(!pr.merged, "{out}");
    assert!(out.contains("1 run(s), 0 review(s)"), "{out}");
    assert!(prompts(&s, "judge").is_empty(), "{out}");
    // CI completes (a check_suite event starts a tick): reviewed and merged in that tick.
    s.server
        .set_check_runs(&pr.head_sha, &[("test", "completed", Some("success"))]);
    let out = scripted::tick(&s, "2026-11-21T12:12:00Z");
    assert!(merged(&s, pr.number), "{out}");
    assert!(out.contains("PR #2: checks success"), "{out}");
}

/// The agent of the local tests: it writes `<task id>.txt`.
const WRITES_ITS_FILE: &str =
    "#!/bin/sh\necho \"$OPENTIGER_TASK_ID\" > \"$OPENTIGER_TASK_ID.txt\"\n";

/// Three tasks, each depending on the one before, each to write its file and checked by a
/// command (a run and a review may each take 1 min of agent + 10 min of checks).
fn chain(g: &GitRepo) -> [String; 3] {
    let mut ids: Vec<String> = Vec::new();
    for name in ["a", "b", "c"] {
        let mut args = vec![
            "--title".to_string(),
            format!("Write {name}"),
            "--goal".to_string(),
            format!("{name}.txt"),
            "--id".to_string(),
            name.to_string(),
            "--command".to_string(),
            format!("test -f {name}.txt"),
        ];
        if let Some(before) = ids.last() {
            args.extend(["--depends-on".to_string(), before.clone()]);
        }
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        ids.push(g.repo.add(&args));
    }
    [ids[0].clone(), ids[1].clone(), ids[2].clone()]
}

#[test]
fn a_chain_of_three_lands_in_one_local_tick_when_time_allows() {
    let g = GitRepo::with(Setup {
        extra: "limits:\n  tick_minutes: 70\n",
        ..Setup::default()
    });
    g.agent(WRITES_ITS_FILE);
    let ids = chain(&g);
    let out = g.tick(&minute(0));
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains("3 run(s), 3 review(s) in 6 rounds"),
        "{}",
        out.stdout
    );
    for id in &ids {
        assert_eq!(g.task_json(id)["status"], "done", "{}", out.stdout);
    }
    let log = g.main_log();
    assert!(
        log.starts_with("[opentiger] Write c\n[opentiger] Write b\n[opentiger] Write a"),
        "{log}"
    );
    // Each round fitted in what was left: 6 rounds of 11 minutes in 70.
    let rounds = rounds_of(&out.stdout);
    assert_eq!(rounds.len(), 6, "{}", out.stdout);
    assert!(
        rounds.iter().all(|(_, bound, left)| bound <= left),
        "{rounds:?}"
    );
    // The next tick has nothing to do.
    let quiet = g.tick(&minute(1));
    assert!(quiet.stdout.contains("0 decision(s)"), "{}", quiet.stdout);
}

#[test]
fn a_short_tick_spreads_the_chain_over_several_and_starts_no_round_it_cannot_end() {
    // 25 minutes: a run (11 min) and its review (11 min) fit; a third step would not.
    let g = GitRepo::with(Setup {
        extra: "limits:\n  tick_minutes: 25\n",
        ..Setup::default()
    });
    g.agent(WRITES_ITS_FILE);
    let ids = chain(&g);
    let mut ticks = 0;
    for m in 0..6 {
        let out = g.tick(&minute(m));
        assert_eq!(out.code, 0, "{}", out.stderr);
        ticks += 1;
        let rounds = rounds_of(&out.stdout);
        assert_eq!(rounds.len(), 2, "a run, then its review: {}", out.stdout);
        for (n, bound, left) in &rounds {
            assert!(
                bound <= left,
                "round {n} could not end in time:\n{}",
                out.stdout
            );
        }
        if g.task_json(&ids[2])["status"] == "done" {
            break;
        }
        assert!(
            out.stdout.contains(
                "no further round: the next step does not fit in the tick's time (its run may take 11 min"
            ),
            "{}",
            out.stdout
        );
    }
    assert_eq!(ticks, 3, "one task a tick");
    for id in &ids {
        assert_eq!(g.task_json(id)["status"], "done");
    }
}

#[test]
fn local_git_merges_in_one_tick_and_a_window_waits_for_the_tick_after_it() {
    let g = GitRepo::with(Setup::default());
    g.agent(WRITES_ITS_FILE);
    let now = g
        .repo
        .add(&["--title", "Now", "--goal", "g", "--id", "now"]);
    let out = g.tick(&minute(0));
    assert!(out.stdout.contains("in 2 rounds"), "{}", out.stdout);
    assert_eq!(g.task_json(&now)["status"], "done");
    assert!(g.file_on_main(&format!("{now}.txt")).is_some());

    // With a window: approved at once, merged by the first tick after it; a person's cancel
    // inside it is heard.
    let config = std::fs::read_to_string(g.path().join(".opentiger.yml")).unwrap();
    std::fs::write(
        g.path().join(".opentiger.yml"),
        format!("{config}merge:\n  review_window_minutes: 10\n"),
    )
    .unwrap();
    let later = g
        .repo
        .add(&["--title", "Later", "--goal", "g", "--id", "later"]);
    let out = g.tick(&minute(20));
    let task = g.task_json(&later);
    assert_eq!(task["block_reason"], "awaiting_judge", "{}", out.stdout);
    assert!(
        task["next_action"].as_str().unwrap().contains(&format!(
            "merges after the review window, at 12:30:00Z (merge.review_window_minutes = 10): `opentiger task cancel {later}`"
        )),
        "{task}"
    );
    g.tick(&minute(25));
    assert!(g.file_on_main(&format!("{later}.txt")).is_none());
    let out = g.tick(&minute(30));
    assert!(out.stdout.contains("approved and merged"), "{}", out.stdout);
    assert_eq!(g.task_json(&later)["status"], "done");

    let held = g
        .repo
        .add(&["--title", "Held", "--goal", "g", "--id", "held"]);
    g.tick(&minute(40));
    g.repo.run_at(&minute(45), &["task", "cancel", &held]).ok();
    let out = g.tick(&minute(50));
    assert_eq!(g.task_json(&held)["status"], "cancelled", "{}", out.stdout);
    assert!(
        g.file_on_main(&format!("{held}.txt")).is_none(),
        "not merged"
    );
}

/// An agent that hangs (recording its pid) when it works on task `b`, the first time.
fn hanging_on_b(g: &GitRepo) {
    let tools = g.tools_path().display().to_string();
    g.agent(&format!(
        "#!/bin/sh\nif [ \"$OPENTIGER_TASK_ID\" = b ] && [ ! -f {tools}/first ]; then touch {tools}/first; echo $$ > {tools}/agent.pid; sleep 120; fi\necho \"$OPENTIGER_TASK_ID\" > \"$OPENTIGER_TASK_ID.txt\"\n"
    ));
}

/// Starts a tick and waits for the hanging agent to record its pid.
fn tick_until_b_hangs(g: &GitRepo) -> std::process::Child {
    let child = Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .arg("--repo")
        .arg(g.path())
        .args(["--now", &minute(0), "tick"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pidfile = g.tools_path().join("agent.pid");
    assert!(
        common::wait_for_pid(&pidfile, 600).is_some(),
        "b's run never started"
    );
    child
}

#[test]
fn a_tick_killed_in_its_third_round_keeps_the_first_two() {
    let g = GitRepo::with(Setup::default());
    hanging_on_b(&g);
    let ids = chain(&g);
    let mut child = tick_until_b_hangs(&g);
    // Round 3 runs b: rounds 1 (a's run) and 2 (its review and merge) are saved.
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(g.task_json(&ids[0])["status"], "done");
    assert!(g.file_on_main("a.txt").is_some());
    assert_eq!(g.task_json(&ids[1])["status"], "running");
    // The next tick reclaims b (its holder is gone) and finishes the chain.
    g.run_until_quiet(1, 5, 4);
    for id in &ids {
        assert_eq!(g.task_json(id)["status"], "done");
    }
    let agent: i32 = std::fs::read_to_string(g.tools_path().join("agent.pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert!(!running(agent), "the killed tick's agent was ended");
}

#[test]
fn an_interrupt_starts_no_further_round() {
    let g = GitRepo::with(Setup::default());
    hanging_on_b(&g);
    let ids = chain(&g);
    let child = tick_until_b_hangs(&g);
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: kill has no memory effects; the pid is our own child's.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(143), "{stdout}");
    assert!(
        stdout.contains("interrupted by SIGTERM: nothing new started"),
        "{stdout}"
    );
    assert_eq!(g.task_json(&ids[0])["status"], "done", "{stdout}");
    assert_eq!(g.task_json(&ids[1])["status"], "queued", "{stdout}");
    let c = g.repo.run(&["task", "show", &ids[2], "--json"]).ok().json();
    assert!(
        c["runs"].as_array().unwrap().is_empty(),
        "c never started: {c}"
    );
    assert_eq!(git(g.path(), &["worktree", "list"]).lines().count(), 1);
}

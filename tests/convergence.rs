//! The convergence suite of issue 27: starvation scenarios driven with the real binary in
//! local-git mode, each converging within the bound README "Fair queue" documents:
//! a never-run task starts within ⌈(F + 1) / R⌉ ticks (`F` other families with queued work when
//! it was queued, `R` runs per tick), and a misbehaving family pays for at most 3 runs.

use crate::common;

use common::{minute, GitRepo, Out, Setup};

/// An agent that acts on its prompt: a task whose text says `MISBEHAVE-<how>` misbehaves that
/// way every time (the attacks of tests/attacks.rs), any other writes a file named after it.
const AGENT: &str = r#"#!/bin/sh
P="$OPENTIGER_PROMPT_FILE"
if grep -q MISBEHAVE-symlink "$P"; then
  mkdir -p out && ln -s /etc/passwd out/link && echo x > x.txt
elif grep -q MISBEHAVE-secret "$P"; then
  printf 'x\n-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n' > notes.txt
elif grep -q MISBEHAVE-fifo "$P"; then
  echo x > x.txt && mkfifo "$OPENTIGER_RESULT_FILE"
elif grep -q MISBEHAVE-nested "$P"; then
  mkdir -p vendor/x && git -C vendor/x init -q && echo changed > changed.txt
else
  echo "$OPENTIGER_TASK_ID" > "out-$OPENTIGER_TASK_ID.txt"
  echo '{"summary": "wrote a file", "cost_usd": 0.01}' > "$OPENTIGER_RESULT_FILE"
fi
"#;

const KINDS: [&str; 4] = ["symlink", "secret", "fifo", "nested"];

/// `task add` at a given time (`--now`), so creation and ticks share one clock.
fn add_at(g: &GitRepo, now: &str, id: &str, title: &str, extra: &[&str]) -> String {
    let mut args = vec!["task", "add", "--id", id, "--title", title, "--goal", title];
    args.extend_from_slice(extra);
    g.repo.run_at(now, &args).ok().stdout.trim().to_string()
}

fn tick(g: &GitRepo, n: u32) -> Out {
    let now = minute(n * 2);
    let out = g.tick(&now);
    assert_eq!(out.code, 0, "tick at {now}: {}\n{}", out.stdout, out.stderr);
    out
}

fn status(g: &GitRepo, n: u32) -> serde_json::Value {
    g.repo
        .run_at(&minute(n * 2), &["status", "--json", "--all"])
        .ok()
        .json()
}

fn find<'a>(status: &'a serde_json::Value, id: &str) -> &'a serde_json::Value {
    status["tasks"]
        .as_array()
        .expect("tasks")
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no task {id}: {status}"))
}

/// Issue 27's report: eight tasks whose agent misbehaves, one plain task added last, ten runs a
/// tick allowed but one worker. The plain task starts within the bound (9 ticks), each
/// misbehaving family stops at a person after at most 3 paid runs (here 2: the run and one
/// rework naming the violation), and the tick says why fewer runs started than allowed.
#[test]
fn eight_misbehaving_tasks_do_not_starve_a_plain_one() {
    let g = GitRepo::with(Setup {
        extra: "limits:\n  max_runs_per_tick: 10\n",
        ..Setup::default()
    });
    g.agent(AGENT);
    let mut bad = Vec::new();
    for i in 0..8u32 {
        let kind = KINDS[i as usize % KINDS.len()];
        let at = format!("2026-11-21T11:{:02}:00Z", i);
        bad.push(add_at(
            &g,
            &at,
            &format!("bad{i}"),
            &format!("MISBEHAVE-{kind} {i}"),
            &[],
        ));
    }
    let plain = add_at(&g, "2026-11-21T11:30:00Z", "plain", "Plain work", &[]);

    // Before any tick: one worker, ten runs allowed: status says what holds the rest back.
    let before = status(&g, 0);
    let held = before["held_back"].as_str().unwrap_or_default();
    assert!(
        held.contains("started 1 of limits.max_runs_per_tick = 10")
            && held.contains("agents.worker.count"),
        "{before}"
    );
    let plain_hold = &find(&before, &plain)["held_back"];
    assert_eq!(plain_hold["kind"], "role_slots", "{plain_hold}");
    assert!(
        plain_hold["fix"]
            .as_str()
            .unwrap_or_default()
            .contains("raise agents.worker.count"),
        "{plain_hold}"
    );

    let text = g.repo.run_at(&minute(0), &["status"]).ok().stdout;
    assert!(
        text.contains(
            "Concurrency (the next tick's forecast): started 1 of limits.max_runs_per_tick = 10"
        ) && text.contains("raise agents.worker.count"),
        "{text}"
    );

    let bound = 9; // ⌈(8 + 1) / 1⌉
    let mut plain_started = None;
    let mut first = None;
    for n in 0..60 {
        let out = tick(&g, n);
        if n == 0 {
            first = Some(out.stdout.clone());
        }
        let now = status(&g, n);
        let runs = find(&now, &plain)["family"]["paid_runs"]
            .as_u64()
            .unwrap_or(0);
        if plain_started.is_none() && runs > 0 {
            plain_started = Some(n + 1);
        }
        let settled = find(&now, &plain)["status"] == "done"
            && bad.iter().all(|id| {
                let family = now["tasks"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .filter(|t| t["family"]["family"] == id.as_str())
                    .collect::<Vec<_>>();
                family.iter().any(|t| t["block_reason"] == "awaiting_human")
            });
        if settled {
            break;
        }
    }
    let first = first.expect("a first tick");
    assert!(
        first.contains("dispatch.held_back") && first.contains("raise agents.worker.count"),
        "the tick says why one run of ten started:\n{first}"
    );
    let started = plain_started.expect("the plain task started");
    eprintln!("plain task started at tick {started} (bound {bound})");
    assert!(
        started <= bound,
        "plain started at tick {started}, bound {bound}"
    );

    let end = status(&g, 60);
    assert_eq!(find(&end, &plain)["status"], "done", "{end}");
    let text = g.repo.run_at(&minute(120), &["-v", "status"]).ok().stdout;
    assert!(
        text.contains("runs: 2 counted against its family's bound"),
        "{text}"
    );
    for id in &bad {
        let family: Vec<&serde_json::Value> = end["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|t| t["family"]["family"] == id.as_str())
            .collect();
        let paid = family[0]["family"]["paid_runs"].as_u64().unwrap();
        eprintln!("{id}: {paid} paid run(s) over {} task(s)", family.len());
        assert!(paid <= 3, "{id}: {paid} paid runs: {family:#?}");
        let stopped = family
            .iter()
            .find(|t| t["block_reason"] == "awaiting_human")
            .unwrap_or_else(|| panic!("{id} never reached a person: {family:#?}"));
        // Issue 40: what happened as the reason, what to do as its advice.
        let why = stopped["reason"].as_str().unwrap_or_default();
        let advice = stopped["advice"].as_str().unwrap_or_default();
        assert!(
            why.contains("a policy violation is not retried as it is")
                && advice.contains("Fix: ")
                && advice.contains("opentiger task retry"),
            "{id}: {why} / {advice}"
        );
    }
    // The rework's notes (its prompt) name the violation precisely.
    let family: Vec<&serde_json::Value> = end["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["family"]["family"] == bad[0].as_str())
        .collect();
    let rework = family
        .iter()
        .find(|t| t["kind"] == "rework")
        .unwrap_or_else(|| panic!("no rework: {family:#?}"));
    let shown = g
        .repo
        .run(&["task", "show", "--json", rework["id"].as_str().unwrap()])
        .ok()
        .json();
    let notes = shown["task"]["notes"].as_str().unwrap_or_default();
    assert!(
        notes.contains("symbolic link out/link points outside the worktree"),
        "{notes}"
    );
    assert!(
        shown["family"]["paid_runs"].as_u64().unwrap() <= 3,
        "{shown}"
    );
    assert!(
        g.repo
            .run(&["task", "show", &bad[0]])
            .ok()
            .stdout
            .contains("paid run(s)"),
        "task show counts the family's runs"
    );
    assert!(g.file_on_main("out/link").is_none());
    assert!(g.file_on_main("notes.txt").is_none());
}

/// A long dependency chain while new issues keep arriving, one run a tick (the defaults): the
/// chain's links were queued before every new issue, so each starts as soon as its dependency
/// is done and the chain converges within its bound (`CHAIN` links, each a run and a review:
/// 2 ticks a link); every new issue starts within ⌈(F + 1) / 1⌉ ticks of its arrival, `F` the
/// families with queued work when it arrived.
#[test]
fn a_long_chain_converges_while_new_issues_keep_arriving() {
    const CHAIN: u32 = 6;
    const STREAM: u32 = 8;
    let g = GitRepo::with(Setup::default());
    g.agent(AGENT);
    let mut chain: Vec<String> = Vec::new();
    for i in 0..CHAIN {
        let at = format!("2026-11-21T11:{:02}:00Z", i);
        let deps: Vec<&str> = match chain.last() {
            Some(prev) => vec!["--depends-on", prev.as_str()],
            None => vec![],
        };
        chain.push(add_at(
            &g,
            &at,
            &format!("link{i}"),
            &format!("Link {i}"),
            &deps,
        ));
    }
    // (id, tick it arrived, families with queued work then)
    let mut stream: Vec<(String, u32, u32)> = Vec::new();
    let mut started: std::collections::BTreeMap<String, u32> = Default::default();
    let mut chain_done_at = None;
    for n in 0..60 {
        if n < STREAM {
            let before = status(&g, n);
            let mut families: Vec<String> = before["tasks"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|t| t["status"] == "queued")
                .map(|t| t["family"]["family"].as_str().unwrap_or("").to_string())
                .collect();
            families.sort();
            families.dedup();
            let id = add_at(
                &g,
                &minute(n * 2),
                &format!("new{n}"),
                &format!("New issue {n}"),
                &[],
            );
            stream.push((id, n, families.len() as u32));
        }
        tick(&g, n);
        let now = status(&g, n);
        for t in now["tasks"].as_array().unwrap() {
            let id = t["id"].as_str().unwrap().to_string();
            if t["family"]["paid_runs"].as_u64().unwrap_or(0) > 0 {
                started.entry(id).or_insert(n);
            }
        }
        if chain_done_at.is_none() && chain.iter().all(|id| find(&now, id)["status"] == "done") {
            chain_done_at = Some(n + 1);
        }
        let all_done = now["tasks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|t| t["status"] == "done");
        if n >= STREAM && all_done {
            break;
        }
    }
    let chain_bound = 2 * CHAIN + 1;
    let done_at = chain_done_at.expect("the chain converged");
    eprintln!("chain of {CHAIN} done at tick {done_at} (bound {chain_bound})");
    assert!(
        done_at <= chain_bound,
        "chain done at tick {done_at}, bound {chain_bound}"
    );
    for (id, arrived, ahead) in &stream {
        let at = started
            .get(id)
            .unwrap_or_else(|| panic!("{id} never started"));
        let waited = at - arrived + 1;
        eprintln!("{id}: arrived at tick {arrived} with {ahead} families queued, started after {waited} tick(s)");
        assert!(
            waited <= ahead + 1,
            "{id} waited {waited} ticks, bound {}",
            ahead + 1
        );
    }
    let end = status(&g, 60);
    for t in end["tasks"].as_array().unwrap() {
        assert_eq!(t["status"], "done", "{t}");
    }
}

//! One past change replayed: a throw-away clone at the change's parent, the task made from its
//! message added there, and the real `opentiger tick` run in it again and again — agent,
//! checks, judge, rework and AutoFix as configured, in the sandbox and behind the proxy as in
//! any tick — until the task settles or a bound is hit; then what the clone's state says (runs,
//! reworks, reviews, tokens, spend) and what the hidden tests say of the result.
//!
//! The ticks are told the time (`--now`): a minute apart, or straight to the end of a cooldown
//! or a quota wait when every task waits for one, so an eval never sleeps through a backoff.
//! Not for: choosing changes (`eval::change`), running several (`eval`), or the rules
//! (`eval::rules`).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::failure::Failure;
use crate::git::Git;
use crate::model::{BlockReason, Task, TaskStatus};
use crate::process::{self, ProcessSpec};
use crate::store::{Store, TaskFilter};
use crate::time::Timestamp;

use super::accept::{Acceptance, Tree};
use super::change::Change;
use super::results::{EvalDir, TaskResult};
use super::rules::{self, HiddenTests};

/// Ticks in a row that start nothing, with nothing to wait for, before the eval gives up.
const IDLE_TICKS: u32 = 3;

/// What one task needs.
pub struct Job<'a> {
    /// The user's repository (read only).
    pub source: &'a Path,
    pub change: &'a Change,
    /// The configuration under evaluation, as the clone gets it (state path aside).
    pub config: &'a Config,
    pub key: &'a str,
    pub eval: &'a EvalDir,
    pub plan: &'a crate::verify::VerifyPlan,
    pub redactor: &'a crate::redact::Redactor,
    pub max_ticks: u32,
    pub per_task_usd: Option<f64>,
    /// The opentiger binary the ticks run.
    pub exe: &'a Path,
}

/// How a task ended for the eval.
pub enum Ended {
    Finished(Box<TaskResult>),
    /// The hidden tests fail on the change itself: nothing could pass them.
    Invalid(String),
    /// Ctrl-C or SIGTERM: nothing is kept, the next eval runs it again.
    Interrupted,
}

fn failed(what: &str, e: impl std::fmt::Display) -> Failure {
    Failure::tick(format!("eval: could not {what}: {e}"))
}

/// The folders of one task's work (removed at its end) and logs (kept).
struct Place {
    work: PathBuf,
    logs: PathBuf,
    clone: PathBuf,
    config: PathBuf,
    state: PathBuf,
}

pub fn run(job: &Job<'_>) -> Result<Ended, Failure> {
    let short = &job.change.commit[..12.min(job.change.commit.len())];
    let work = job.eval.work().join(format!("{}-{short}", job.key));
    let logs = job.eval.task_dir(job.key, &job.change.commit);
    for dir in [&work, &logs] {
        if dir.exists() {
            std::fs::remove_dir_all(dir).map_err(|e| failed("clear an earlier attempt", e))?;
        }
        std::fs::create_dir_all(dir).map_err(|e| failed("make the task's folder", e))?;
    }
    let place = Place {
        clone: work.join("repo"),
        config: work.join("config.yml"),
        state: work.join("state.sqlite"),
        work,
        logs,
    };
    let ended = replay(job, &place);
    // The clone goes whatever happened; the logs stay.
    let _ = std::fs::remove_dir_all(&place.work);
    // An interrupt also stops the hidden tests, whose failure then says nothing.
    if crate::process::interrupt::requested().is_some() {
        return Ok(Ended::Interrupted);
    }
    ended
}

fn replay(job: &Job<'_>, place: &Place) -> Result<Ended, Failure> {
    let started = Instant::now();
    let change = job.change;
    let config = super::clone::for_clone(job.config, job.source, &place.state, job.per_task_usd);
    std::fs::write(&place.config, super::clone::config_text(&config)?)
        .map_err(|e| failed("write the clone's configuration", e))?;
    let clone = super::clone::make(
        job.source,
        &place.clone,
        &config.base_branch,
        &change.parent,
    )?;
    let source = Git::new(job.source);
    let accept = Acceptance {
        source: &source,
        clone: &clone,
        config: &config,
        plan: job.plan,
        redactor: job.redactor,
        commit: &change.commit,
        hidden: &change.hidden,
        logs: &place.logs,
    };
    let mut weak = false;
    if !change.hidden.is_empty() {
        if !accept.run_on(
            Tree::Change,
            &place.work.join("at-change"),
            "tests-at-change",
        )? {
            return Ok(Ended::Invalid(
                "its hidden tests fail on the change itself (see tests-at-change.txt in its logs)"
                    .into(),
            ));
        }
        weak = accept.run_on(
            Tree::Clone(&change.parent),
            &place.work.join("at-parent"),
            "tests-at-parent",
        )?;
    }
    let mut now = Timestamp::now();
    let added = opentiger(
        job,
        place,
        now,
        &[
            "task",
            "add",
            "--title",
            &change.title,
            "--goal",
            &change.goal,
            "--approve",
        ],
        "task-add",
    )?;
    let Some(out) = added else {
        return Ok(Ended::Interrupted);
    };
    let id = crate::model::TaskId(out.trim().to_string());
    let mut ticks = 0;
    let mut idle = 0;
    let mut bound = None;
    let root = loop {
        if ticks >= job.max_ticks {
            bound = Some(format!("stopped after --max-ticks {}", job.max_ticks));
            break read_task(&place.state, &id)?;
        }
        ticks += 1;
        let Some(out) = opentiger(
            job,
            place,
            now,
            &["tick", "--json"],
            &format!("tick-{ticks:02}"),
        )?
        else {
            return Ok(Ended::Interrupted);
        };
        let store = Store::open_read_only(&place.state)?;
        let root = store.task(&id)?;
        let active = store.list_tasks(&TaskFilter::default())?;
        let family: Vec<_> = active.iter().map(Task::state).collect();
        if rules::family_settled(root.state(), &family).is_some() {
            break root;
        }
        let waits = waits_of(&active);
        let next = rules::next_now(now, &waits);
        let did_something = serde_json::from_str::<serde_json::Value>(&out)
            .ok()
            .is_some_and(|j| {
                ["runs", "reviews", "merged"]
                    .iter()
                    .any(|k| j[k].as_u64() > Some(0))
            });
        idle = if did_something || next > now.plus(crate::time::MINUTE) {
            0
        } else {
            idle + 1
        };
        if idle >= IDLE_TICKS {
            bound = Some(format!(
                "stopped: {IDLE_TICKS} ticks in a row started nothing ({})",
                root.status_reason.as_deref().unwrap_or("no reason given")
            ));
            break root;
        }
        now = next;
    };
    // The task as `task show` tells it, for whoever reads the logs.
    if opentiger(
        job,
        place,
        now,
        &["task", "show", id.as_str(), "--json"],
        "task-show",
    )?
    .is_none()
    {
        return Ok(Ended::Interrupted);
    }
    let facts = facts_of(&place.state)?;
    let merged = root.status == TaskStatus::Done;
    let outcome = |passed: bool| {
        if passed {
            HiddenTests::Pass
        } else {
            HiddenTests::Fail
        }
    };
    let merged_tree = Tree::Clone(&config.base_branch);
    let (hidden, tested) = if change.hidden.is_empty() {
        (HiddenTests::None, "nothing")
    } else if merged {
        let passed = accept.run_on(merged_tree, &place.work.join("merged"), "tests-merged")?;
        (outcome(passed), "merged")
    } else {
        match last_change(&clone, &facts.heads) {
            Some(head) => {
                let last = Tree::Clone(&head);
                let passed = accept.run_on(last, &place.work.join("last"), "tests-last-change")?;
                (outcome(passed), "last_change")
            }
            None => (HiddenTests::None, "nothing"),
        }
    };
    // A change with no hidden test: the test command alone, on what was merged.
    let plain = change.hidden.is_empty()
        && merged
        && accept.run_on(
            Tree::Clone(&config.base_branch),
            &place.work.join("merged"),
            "tests-merged",
        )?;
    let verdict = rules::verdict(merged, hidden, facts.refusals > 0, plain);
    let result = TaskResult {
        commit: change.commit.clone(),
        parent: change.parent.clone(),
        title: change.title.clone(),
        merged,
        why_not: (!merged).then(|| {
            format!(
                "{}: {}",
                root.state(),
                root.status_reason.as_deref().unwrap_or("no reason given")
            )
        }),
        state: root.state().to_string(),
        hidden_tests: hidden,
        tested: tested.to_string(),
        hidden_test_files: change.hidden.clone(),
        weak_tests: weak,
        resolved: verdict.resolved,
        wrong_merge: verdict.wrong_merge,
        refused_passing: verdict.refused_passing,
        runs: facts.runs,
        reworks: facts.tasks.saturating_sub(1),
        reviews: facts.reviews,
        refusals: facts.refusals,
        tokens: facts.tokens,
        cost_usd: facts.cost_usd,
        seconds: started.elapsed().as_secs_f64(),
        ticks,
        logs: place
            .logs
            .strip_prefix(&job.eval.root)
            .unwrap_or(&place.logs)
            .display()
            .to_string(),
        bound,
    };
    Ok(Ended::Finished(Box::new(result)))
}

/// Per task that a tick could move, the time it waits for (`None`: it can move now). A task
/// that follows its rework child waits on that child, which is in the list itself.
fn waits_of(active: &[Task]) -> Vec<Option<Timestamp>> {
    active
        .iter()
        .filter(|t| {
            !(t.status == TaskStatus::Blocked && t.block_reason == Some(BlockReason::NeedsRework))
        })
        .map(|t| t.next_attempt_at)
        .collect()
}

fn read_task(state: &Path, id: &crate::model::TaskId) -> Result<Task, Failure> {
    Ok(Store::open_read_only(state)?.task(id)?)
}

/// What the clone's state says of the task and its children.
struct Facts {
    tasks: u32,
    runs: u32,
    reviews: u32,
    refusals: u32,
    tokens: i64,
    cost_usd: f64,
    /// The heads the runs left, newest first.
    heads: Vec<String>,
}

fn facts_of(state: &Path) -> Result<Facts, Failure> {
    let store = Store::open_read_only(state)?;
    let tasks = store.list_tasks(&TaskFilter {
        status: None,
        include_terminal: true,
    })?;
    let runs = store.recent_runs(100_000)?;
    let (mut reviews, mut refusals) = (0, 0);
    // The judge's and other reviews' tokens, as the proxy metered them (runs keep their own).
    let mut review_tokens = 0;
    for task in &tasks {
        for row in store.agent_spend_of(&task.id, 100_000)? {
            let t = row.metered.map(|m| m.total()).unwrap_or_default();
            review_tokens += i64::try_from(t.input + t.output).unwrap_or(i64::MAX);
        }
        for event in store.events_of(&task.id, 100_000)? {
            if event.kind != "judge.concluded" {
                continue;
            }
            reviews += 1;
            match event.payload["verdict"].as_str() {
                Some("approve") | None => {}
                Some(_) => refusals += 1,
            }
        }
    }
    let mut by_time: Vec<_> = runs.iter().collect();
    by_time.sort_by_key(|r| std::cmp::Reverse(r.started_at));
    Ok(Facts {
        tasks: u32::try_from(tasks.len()).unwrap_or(u32::MAX),
        runs: u32::try_from(runs.len()).unwrap_or(u32::MAX),
        reviews,
        refusals,
        tokens: runs
            .iter()
            .map(|r| r.input_tokens + r.output_tokens)
            .sum::<i64>()
            + review_tokens,
        cost_usd: store.spend_by_role()?.values().sum(),
        heads: by_time.iter().filter_map(|r| r.head_sha.clone()).collect(),
    })
}

/// The newest head a run left that the clone still has.
fn last_change(clone: &Git, heads: &[String]) -> Option<String> {
    heads
        .iter()
        .find_map(|head| clone.resolve(&format!("{head}^{{commit}}")).ok().flatten())
}

/// Runs `opentiger --repo <clone> --config <its config> --now <now> ARGS` to its end, its output
/// kept in the task's logs as `<name>.txt`. `None`: the eval was interrupted meanwhile (the
/// tick was stopped as Ctrl-C stops one, its run recorded as cancelled, in a clone that goes).
fn opentiger(
    job: &Job<'_>,
    place: &Place,
    now: Timestamp,
    args: &[&str],
    name: &str,
) -> Result<Option<String>, Failure> {
    let mut argv: Vec<String> = vec![
        "--repo".into(),
        place.clone.display().to_string(),
        "--config".into(),
        place.config.display().to_string(),
        "--now".into(),
        now.to_string(),
        "--yes".into(),
    ];
    argv.extend(args.iter().map(|a| a.to_string()));
    // The tick is bounded by its own configuration; the margin covers the final save.
    let minutes = u64::from(job.config.limits.tick_minutes.max(60)) + 10;
    let spec = ProcessSpec {
        program: job.exe.display().to_string(),
        args: argv,
        cwd: place.clone.clone(),
        env: child_env(),
        stdin: None,
        timeout: Duration::from_secs(minutes * 60),
        tail_bytes: 512 * 1024,
        watch: None,
        group_record: None,
        confine: None,
        network: None,
        sentinel: None,
    };
    let out = process::run(&spec).map_err(|e| failed("run opentiger in the clone", e))?;
    let log = format!(
        "$ opentiger {}\nexit: {:?}\n\n[stdout]\n{}\n[stderr]\n{}\n",
        args.join(" "),
        out.status,
        job.redactor.redact(&out.stdout_tail),
        job.redactor.redact(&out.stderr_tail)
    );
    std::fs::write(place.logs.join(format!("{name}.txt")), log)
        .map_err(|e| failed("write the tick's log", e))?;
    if crate::process::interrupt::requested().is_some() {
        return Ok(None);
    }
    if args.first() == Some(&"task") && !out.success() {
        return Err(Failure::tick(format!(
            "eval: `opentiger task {}` failed in the clone of {}: {}",
            args.get(1).unwrap_or(&""),
            job.change.commit,
            job.redactor.excerpt(out.stderr_tail.trim(), 600)
        )));
    }
    Ok(Some(out.stdout_tail))
}

/// The ticks' environment: this process's, less what would point them at the user's
/// repository, configuration or time, or make them write the job's summary and outputs.
fn child_env() -> Vec<(String, String)> {
    const LEFT_OUT: [&str; 7] = [
        "OPENTIGER_REPO",
        "OPENTIGER_CONFIG",
        "OPENTIGER_NOW",
        "GITHUB_ACTIONS",
        "GITHUB_STEP_SUMMARY",
        "GITHUB_OUTPUT",
        "GITHUB_ENV",
    ];
    std::env::vars()
        .filter(|(k, _)| !LEFT_OUT.contains(&k.as_str()))
        .collect()
}

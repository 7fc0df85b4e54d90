//! What a tick did but has not saved yet (issue 49): the round's claimed runs (kept before the
//! claim's own save), the one whose agent is running, and each finished run's, review's and
//! planner run's result, kept in a file of the runner's repository
//! (`.git/opentiger/unsaved/<pid>-<start>.json`) from the moment it is known until the round's
//! record is saved.
//!
//! A tick that dies before that save (killed, a second Ctrl-C, a save cut short) leaves the
//! file. The next tick on this repository, once the file's process is gone, records what it
//! holds in its claim, as the dead tick would have (under its holder's name, so only where that
//! holder still holds the lease): a finished run is recorded — never run again because its
//! record was cut; a claimed run whose agent never started goes back to the queue with nothing
//! counted; so does the run an interrupt ended at once (the interrupt's note, written by
//! `process::interrupt` next to the file). Only the run whose agent was running when the tick
//! died is left to recovery, which counts it as a lost run: a runner's death is counted once,
//! against the run it was on (`engine::recovery`).
//!
//! The file is the runner's own, out of every agent's reach (the runner's `.git`), and holds
//! what the record stores: texts already redacted. A file that cannot be read is set aside with
//! a warning: it costs at most the reruns it would have saved.
//!
//! Not for: recording itself (`record::record_one`), or what the leases of a tick that left no
//! file mean (`engine::recovery`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::claim::{Claimed, Work};
use super::done::Done;
use super::record::{record_one, RecordedLines};
use super::{Context, Failure};
use crate::engine::outcome::RunOutcome;
use crate::model::{RunId, RunStatus, TaskId, TickId};
use crate::runner::judge::JudgeResult;
use crate::runner::planner::PlanResult;
use crate::runner::work::WorkResult;
use crate::store::{Store, Writer};

/// The largest file read back (a round's results; far above what one holds).
const MAX_FILE: u64 = 64 * 1024 * 1024;

/// One round of a tick as far as it got.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Round {
    /// Who the tick records as, and its id.
    agent_id: String,
    tick_id: String,
    /// The runs this round claimed and runs itself: (task, run).
    claimed: Vec<(TaskId, RunId)>,
    /// The runs whose agent started.
    started: Vec<RunId>,
    /// What finished, in order.
    finished: Vec<Entry>,
}

/// A finished piece of work whose record a save may still cut.
#[derive(Debug, Serialize, Deserialize)]
enum Entry {
    Work(TaskId, RunId, WorkResult),
    Interrupted(TaskId, RunId, WorkResult, String),
    /// A run a person stopped (issue 51): who asked, and when.
    Stopped(TaskId, RunId, WorkResult, String, crate::time::Timestamp),
    Review(TaskId, RunId, JudgeResult),
    Plan(PlanResult),
}

impl Entry {
    fn of(done: &Done) -> Option<Entry> {
        Some(match done {
            Done::Work(task, run, result) => Entry::Work(task.clone(), run.clone(), result.clone()),
            Done::Interrupted(task, run, result, why) => {
                Entry::Interrupted(task.clone(), run.clone(), result.clone(), why.clone())
            }
            Done::Stopped(task, run, result, request) => Entry::Stopped(
                task.clone(),
                run.clone(),
                result.clone(),
                request.by.clone(),
                request.at,
            ),
            Done::Review(task, run, result) => {
                Entry::Review(task.clone(), run.clone(), result.clone())
            }
            Done::Plan(plan) => Entry::Plan(plan.clone()),
            // GitHub effects are found again by their markers; an unstarted run is `claimed`.
            Done::Issue(..)
            | Done::PullClosed(..)
            | Done::CiHealed(..)
            | Done::Retargeted(..)
            // A snapshot lost with its tick is taken again by the next one.
            | Done::HostProbed(_)
            | Done::Unstarted(..) => return None,
        })
    }

    fn into_done(self) -> Done {
        match self {
            Entry::Work(task, run, result) => Done::Work(task, run, result),
            Entry::Interrupted(task, run, result, why) => Done::Interrupted(task, run, result, why),
            Entry::Stopped(task, run, result, by, at) => {
                Done::Stopped(task, run, result, crate::store::StopRequest { by, at })
            }
            Entry::Review(task, run, result) => Done::Review(task, run, result),
            Entry::Plan(plan) => Done::Plan(plan),
        }
    }
}

/// This tick's file: written as the round goes, removed once its record is saved.
pub(super) struct Unsaved {
    /// `None` when the repository's git folder could not be found: nothing is kept.
    path: Option<PathBuf>,
    round: Round,
}

impl Unsaved {
    /// The file of this process in `ctx`'s repository; the interrupt's note goes next to it.
    pub(super) fn open(ctx: &Context) -> Unsaved {
        let me = std::process::id();
        let path = folder(&ctx.repo)
            .map(|dir| dir.join(format!("{me}-{}.json", start_time(me).unwrap_or(0))));
        crate::process::interrupt::note_stop_in(path.as_deref().map(note_of));
        Unsaved {
            path,
            round: Round {
                agent_id: ctx.agent_id.to_string(),
                tick_id: ctx.tick_id.to_string(),
                ..Round::default()
            },
        }
    }

    /// A round's claim is about to be saved: these are the runs it claims and will run itself
    /// (none for a fan-out: its work jobs run them). Kept before the save, so a tick that dies
    /// while saving it leaves nothing claimed it cannot account for; a claim the save never
    /// made is nothing to the next tick (its runs are not running under this holder).
    pub(super) fn begin(&mut self, claimed: &Claimed, fan_out: bool) {
        self.round.claimed = if fan_out {
            Vec::new()
        } else {
            claimed
                .work
                .iter()
                .filter_map(|work| match work {
                    Work::Run { task, run_id, .. } => Some((task.id.clone(), run_id.clone())),
                    _ => None,
                })
                .collect()
        };
        self.round.started.clear();
        self.round.finished.clear();
        if self.round.claimed.is_empty() {
            self.remove();
        } else {
            self.write();
        }
    }

    /// The agent of `run` is about to start.
    pub(super) fn started(&mut self, run: &RunId) {
        self.round.started.push(run.clone());
        self.write();
    }

    /// Something finished; kept when a cut save would lose it.
    pub(super) fn finished(&mut self, done: &Done) {
        if let Some(entry) = Entry::of(done) {
            self.round.finished.push(entry);
            self.write();
        }
    }

    /// The round's record is saved: nothing is left to keep.
    pub(super) fn saved(&mut self) {
        self.round.claimed.clear();
        self.round.started.clear();
        self.round.finished.clear();
        self.remove();
    }

    fn remove(&self) {
        if let Some(path) = &self.path {
            let _ = std::fs::remove_file(path);
        }
    }

    fn write(&self) {
        let Some(path) = &self.path else {
            return;
        };
        let written = serde_json::to_vec(&self.round)
            .map_err(std::io::Error::other)
            .and_then(|bytes| write_atomically(path, &bytes));
        if let Err(e) = written {
            tracing::warn!(
                "could not keep the round's results in {}: {e}",
                path.display()
            );
        }
    }
}

/// What the dead ticks' files held, recorded into the state by [`replay`].
#[derive(Default)]
pub(super) struct Replayed {
    pub(super) lines: Vec<String>,
    /// The files to remove once the state holding what they said is saved.
    files: Vec<PathBuf>,
}

impl Replayed {
    /// The state holding what the files said is saved: they go.
    pub(super) fn forget(self) {
        for file in self.files {
            let _ = std::fs::remove_file(note_of(&file));
            let _ = std::fs::remove_file(next_of(&file));
            let _ = std::fs::remove_file(file);
        }
    }
}

/// Records what the ticks that died on this repository left unsaved (see the module
/// documentation). Changes only the state: run again on fresh state when a save loses a race.
pub(super) fn replay(ctx: &Context, store: &mut Store) -> Result<Replayed, Failure> {
    let mut replayed = Replayed::default();
    let Some(dir) = folder(&ctx.repo) else {
        return Ok(replayed);
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Ok(replayed);
    };
    for file in files_of_the_dead(entries.flatten().map(|e| e.path())) {
        match read(&file) {
            Ok(Some(round)) => {
                let note = std::fs::read_to_string(note_of(&file)).ok();
                let stopped_by = note.as_deref().map(str::trim);
                replay_round(ctx, store, round, stopped_by, &mut replayed)?;
            }
            Ok(None) => {}
            Err(e) => tracing::warn!(
                "set aside {}, a dead tick's unsaved results that cannot be read: {e}",
                file.display()
            ),
        }
        replayed.files.push(file);
    }
    Ok(replayed)
}

/// The files of the processes that ended, each once and named by its `.json`, among `paths`
/// (the folder's): a note alone is an interrupt that came before its process had anything to
/// keep, a `.json.next` alone a process that died writing its first.
fn files_of_the_dead(paths: impl Iterator<Item = PathBuf>) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = paths
        .filter_map(|p| match p.extension()?.to_str()? {
            "json" | "stopped" => Some(p.with_extension("json")),
            "next" => Some(p.with_extension("")),
            _ => None,
        })
        .filter(|p| !owner_alive(p))
        .collect();
    files.sort();
    files.dedup();
    files
}

/// Records one dead tick's round, as that tick.
fn replay_round(
    ctx: &Context,
    store: &mut Store,
    round: Round,
    stopped_by: Option<&str>,
    replayed: &mut Replayed,
) -> Result<(), Failure> {
    let tick = TickId(round.tick_id.clone());
    let writer = Writer {
        tick_id: Some(&tick),
        actor: &round.agent_id,
        now: ctx.now,
    };
    let leased = store.leased_tasks()?;
    let running = |store: &Store, run: &RunId| -> Result<bool, Failure> {
        Ok(store
            .run(run)?
            .is_some_and(|r| r.status == RunStatus::Running))
    };
    let mut out = RecordedLines::default();
    let mut todo: Vec<Done> = Vec::new();
    let mut finished_runs: Vec<RunId> = Vec::new();
    for entry in round.finished {
        let keep = match &entry {
            Entry::Work(task, run, _)
            | Entry::Interrupted(task, run, ..)
            | Entry::Stopped(task, run, ..) => {
                finished_runs.push(run.clone());
                running(store, run)? && leased.contains(&(task.clone(), run.clone()))
            }
            Entry::Review(task, run, _) => leased.contains(&(task.clone(), run.clone())),
            Entry::Plan(plan) => !store.has_plan(&plan.record.id)?,
        };
        if keep {
            todo.push(entry.into_done());
        }
    }
    for (task, run) in round.claimed {
        if finished_runs.contains(&run)
            || !running(store, &run)?
            || !leased.contains(&(task.clone(), run.clone()))
        {
            continue;
        }
        if !round.started.contains(&run) {
            todo.push(Done::Unstarted(
                task,
                run,
                "not started: its tick ended first (queued again, nothing counted)".into(),
            ));
        } else if let Some(signal) = stopped_by {
            let why = format!(
                "cancelled: interrupted by {signal} (its tick exited at once; queued again)"
            );
            todo.push(Done::Interrupted(task, run, stopped(&why), why));
        }
        // Else its agent was running when the tick died: recovery counts it as a lost run.
    }
    if todo.is_empty() {
        return Ok(());
    }
    for item in &todo {
        record_one(ctx, store, item, writer, &mut out)?;
    }
    replayed.lines.push(format!(
        "recorded what tick {} left unsaved when it ended ({} item(s)):",
        round.tick_id,
        todo.len()
    ));
    replayed
        .lines
        .extend(out.lines.into_iter().map(|l| format!("  {l}")));
    Ok(())
}

/// The result of a run an interrupt ended with its tick: nothing but why.
fn stopped(why: &str) -> WorkResult {
    WorkResult {
        outcome: RunOutcome {
            success: false,
            failure_code: None,
            message: why.to_string(),
            no_changes: false,
        },
        record: crate::store::RunRecord {
            error: Some(why.to_string()),
            ..Default::default()
        },
    }
}

/// Where the files of the repository `repo` live: its common git folder's
/// `opentiger/unsaved/`, read from the runner's own files (never a workspace's).
fn folder(repo: &Path) -> Option<PathBuf> {
    let common = crate::git::Git::new(repo).common_dir().ok()?;
    Some(common.join("opentiger").join("unsaved"))
}

/// The interrupt's note next to a file: the signal that ended its tick at once.
fn note_of(file: &Path) -> PathBuf {
    file.with_extension("stopped")
}

/// Where the next version of a file is written before it takes the file's place.
fn next_of(file: &Path) -> PathBuf {
    file.with_extension("json.next")
}

/// Whether the process that wrote `file` (`<pid>-<start time>.json`) still runs.
fn owner_alive(file: &Path) -> bool {
    let Some((pid, start)) = file
        .file_stem()
        .and_then(|s| s.to_str())
        .and_then(|s| s.split_once('-'))
        .and_then(|(pid, start)| Some((pid.parse::<u32>().ok()?, start.parse::<u64>().ok()?)))
    else {
        return false;
    };
    let zombie = crate::reaper::stat_field::<char>(pid, 3) == Some('Z');
    !zombie && start_time(pid) == Some(start)
}

/// The start time of a process (clock ticks since boot), from `/proc/<pid>/stat`.
fn start_time(pid: u32) -> Option<u64> {
    crate::reaper::stat_field(pid, 22)
}

/// The round a file holds; `None` when there is no file.
fn read(file: &Path) -> Result<Option<Round>, String> {
    match crate::bounded::read_regular(file, MAX_FILE, "64 MiB").map_err(|e| e.to_string())? {
        Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| e.to_string()),
        None => Ok(None),
    }
}

/// Writes `bytes` to `path` whole or not at all: a tick killed while writing leaves the last
/// complete version.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    let next = next_of(path);
    crate::scratch::write_private(&next, bytes)?;
    std::fs::rename(&next, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::verdict::JudgeConclusion;
    use crate::model::{PlanRecord, PlanStatus, Task, Verdict};
    use crate::store::{AgentSpend, JudgementRow, RunRecord};
    use crate::time::Timestamp;

    /// Every kind of result a round keeps comes back from its file as it went in.
    #[test]
    fn a_round_comes_back_from_its_file_whole() {
        let work = WorkResult {
            outcome: RunOutcome {
                success: true,
                failure_code: None,
                message: "wrote it".into(),
                no_changes: false,
            },
            record: RunRecord {
                executor: Some("command:agent.sh".into()),
                cost_usd: 0.25,
                head_sha: Some("a".repeat(40)),
                pr_number: Some(7),
                ..Default::default()
            },
        };
        let review = JudgeResult {
            conclusion: JudgeConclusion::Merged {
                commit: "b".repeat(40),
            },
            judgement: Some(JudgementRow {
                head_sha: "a".repeat(40),
                verdict: Verdict::Approve,
                summary: "fine".into(),
                findings: vec!["none".into()],
                criteria: Vec::new(),
            }),
            verification: Vec::new(),
            spend: Some(Box::new(AgentSpend {
                role: "judge".into(),
                cost_usd: 0.1,
                ..Default::default()
            })),
        };
        let plan = PlanResult {
            record: PlanRecord {
                id: "p".into(),
                signature: "s".into(),
                requirement_hash: "h".into(),
                base_head: "c".repeat(40),
                status: PlanStatus::Created,
                source: "fallback".into(),
                task_count: 1,
                errors: Vec::new(),
                created_at: Timestamp(5),
            },
            tasks: vec![Task::new(TaskId::from("t"), "title", "goal", Timestamp(1))],
            spend: None,
        };
        let round = Round {
            agent_id: "local:box:1".into(),
            tick_id: "tick".into(),
            claimed: vec![(TaskId::from("t"), RunId::from("r"))],
            started: vec![RunId::from("r")],
            finished: vec![
                Entry::Work(TaskId::from("t"), RunId::from("r"), work.clone()),
                Entry::Interrupted(TaskId::from("t"), RunId::from("r"), work, "why".into()),
                Entry::Review(TaskId::from("t"), RunId::from("r"), review),
                Entry::Plan(plan),
            ],
        };
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("unsaved").join("1-2.json");
        write_atomically(&file, &serde_json::to_vec(&round).unwrap()).unwrap();
        let back = read(&file).unwrap().expect("the file");
        assert_eq!(
            serde_json::to_value(&back).unwrap(),
            serde_json::to_value(&round).unwrap()
        );
        assert!(read(&dir.path().join("none.json")).unwrap().is_none());
    }

    /// Only the files of processes that ended are replayed: a pid alone is not enough, its
    /// start time must match too (a pid is reused).
    #[test]
    fn only_the_files_of_ended_processes_are_replayed() {
        let me = std::process::id();
        let start = start_time(me).expect("our own start time");
        let dir = Path::new("/x");
        assert!(owner_alive(&dir.join(format!("{me}-{start}.json"))));
        // Its note, its next version, its file: one file; a live process's and others' none.
        let dead = format!("{me}-{}", start + 1);
        let names = [
            format!("{dead}.stopped"),
            format!("{dead}.json.next"),
            format!("{dead}.json"),
            format!("{me}-{start}.json"),
            format!("{me}-{start}.stopped"),
            "notes.txt".to_string(),
        ];
        assert_eq!(
            files_of_the_dead(names.iter().map(|n| dir.join(n))),
            vec![dir.join(format!("{dead}.json"))]
        );
        for dead in [
            format!("{me}-{}.json", start + 1),
            "4194304-1.json".to_string(),
            "garbage.json".to_string(),
            format!("{me}.json"),
        ] {
            assert!(!owner_alive(&dir.join(&dead)), "{dead}");
        }
    }
}

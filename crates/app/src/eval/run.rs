//! An eval from start to end: the configurations loaded, the changes picked, every (change,
//! configuration) task run — the finished ones of an earlier eval reused, up to `--jobs` at a
//! time, none started past `--budget-usd` — with a line on stderr as each starts and ends and an
//! estimate of what is left; then the report, written to the eval's folder.
//! Not for: one task (`eval::task`), the rules (`eval::rules`), or the report's text
//! (`eval::report`).

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::config::Config;
use crate::failure::Failure;
use crate::git::Git;
use crate::process::interrupt;
use crate::tick::{Context, ContextOptions};

use super::accept::TestCommand;
use super::change::{self, Change, Selection, Skipped};
use super::results::{self, ConfigReport, EvalDir, Evaluated, TaskResult};
use super::rules::{self, Counted, Summary};
use super::task::{self, Ended, Job};

/// What `opentiger eval` was asked.
#[derive(Clone, Debug)]
pub struct Options {
    pub repo: PathBuf,
    pub selection: Selection,
    /// The configurations to compare (at least one).
    pub configs: Vec<PathBuf>,
    pub tests: Vec<String>,
    pub test_command: TestCommand,
    pub budget_usd: Option<f64>,
    pub max_tasks: Option<usize>,
    pub jobs: usize,
    pub max_ticks: u32,
    pub out: Option<PathBuf>,
    pub keep_untested: bool,
    /// Run every task again, whatever an earlier eval left.
    pub fresh: bool,
    /// Print no progress.
    pub quiet: bool,
}

/// A configuration under evaluation.
struct Candidate {
    given: PathBuf,
    label: String,
    key: String,
    config: Config,
    redactor: crate::redact::Redactor,
}

fn load(repo: &Path, path: &Path, opts: &Options) -> Result<Candidate, Failure> {
    let ctx = Context::load(&ContextOptions {
        repo: repo.to_path_buf(),
        config: Some(path.to_path_buf()),
        mode: None,
        now: None,
    })?;
    let keyed = super::clone::for_clone(&ctx.config, repo, Path::new("state.sqlite"), None);
    let command = match &opts.test_command {
        TestCommand::Given(text) => Some(text.as_str()),
        TestCommand::Configured => None,
    };
    let key = results::key(
        &super::clone::config_text(&keyed)?,
        &opts.tests,
        command,
        &opts.max_ticks.to_string(),
    );
    // Nothing would decide a task: said before anything runs.
    opts.test_command
        .plan(&ctx.config, &[])
        .map_err(|f| Failure {
            message: format!("--config {}: {}", path.display(), f.message),
            ..f
        })?;
    Ok(Candidate {
        given: path.to_path_buf(),
        label: String::new(),
        key,
        redactor: ctx.redactor(),
        config: ctx.config,
    })
}

/// Short names for the columns: the file names, or the paths where two files share a name.
fn labels(paths: &[PathBuf]) -> Vec<String> {
    let names: Vec<String> = paths
        .iter()
        .map(|p| {
            p.file_name().map_or_else(
                || p.display().to_string(),
                |n| n.to_string_lossy().into_owned(),
            )
        })
        .collect();
    names
        .iter()
        .zip(paths)
        .map(|(name, path)| {
            if names.iter().filter(|n| *n == name).count() > 1 {
                path.display().to_string()
            } else {
                name.clone()
            }
        })
        .collect()
}

/// The shared count of what ran, for the budget and the progress lines.
#[derive(Default)]
struct Progress {
    next: usize,
    running: usize,
    spent: f64,
    costs: Vec<f64>,
    seconds: Vec<f64>,
    left: usize,
    stopped: Option<String>,
    ended: BTreeMap<(usize, usize), Ended>,
}

pub fn run(opts: &Options) -> Result<Evaluated, Failure> {
    // Ticks run side by side, each its own subreaper: a sweep here would end the others.
    crate::reaper::stand_down();
    interrupt::install();
    let mut candidates = opts
        .configs
        .iter()
        .map(|p| load(&opts.repo, p, opts))
        .collect::<Result<Vec<_>, _>>()?;
    for (c, label) in candidates.iter_mut().zip(labels(&opts.configs)) {
        c.label = label;
    }
    for (i, c) in candidates.iter().enumerate() {
        if let Some(same) = candidates[..i].iter().find(|o| o.key == c.key) {
            return Err(Failure::usage(format!(
                "--config {} and --config {} are the same configuration: their columns would be the same tasks run twice\n  fix: give each configuration once",
                same.given.display(),
                c.given.display()
            )));
        }
    }
    let first = &candidates[0].config;
    let globs = change::test_globs(&opts.tests)?;
    let linked = (first.mode == crate::model::Mode::Github)
        .then(super::linked::Linked::from_env)
        .flatten();
    let (mut changes, skipped) = change::pick(
        &opts.repo,
        &first.base_branch,
        &opts.selection,
        &globs,
        opts.keep_untested,
        linked.as_ref(),
    )?;
    if let Some(n) = opts.max_tasks {
        changes.truncate(n);
    }
    let eval = EvalDir {
        root: match &opts.out {
            Some(dir) => std::path::absolute(dir)?,
            None => Git::new(&opts.repo)
                .common_dir()
                .map_err(|e| Failure::usage(format!("eval: {e}")))?
                .join("opentiger")
                .join("eval"),
        },
    };
    std::fs::create_dir_all(&eval.root)?;
    let _lock = crate::tick::FileLock::acquire(&eval.root.join("eval"))?;
    // What a killed eval left in progress: its clones only; its finished tasks are kept.
    if eval.work().exists() {
        std::fs::remove_dir_all(eval.work())?;
    }
    for c in &candidates {
        let dir = eval.config_dir(&c.key);
        std::fs::create_dir_all(&dir)?;
        let shown = super::clone::for_clone(&c.config, &opts.repo, Path::new("state.sqlite"), None);
        std::fs::write(dir.join("config.yml"), super::clone::config_text(&shown)?)?;
    }
    let exe = std::env::current_exe()
        .map_err(|e| Failure::tick(format!("eval: cannot find the opentiger binary: {e}")))?;
    let items: Vec<(usize, usize)> = (0..changes.len())
        .flat_map(|ch| (0..candidates.len()).map(move |c| (ch, c)))
        .collect();
    let mut progress = Progress::default();
    for &(ch, c) in &items {
        let finished = (!opts.fresh)
            .then(|| eval.finished(&candidates[c].key, &changes[ch].commit))
            .flatten();
        if let Some(result) = finished {
            note(
                opts,
                &format!(
                    "{} with {}: done in an earlier eval, kept",
                    short(&result.commit),
                    candidates[c].label
                ),
            );
            progress.costs.push(result.cost_usd);
            progress.ended.insert((ch, c), ended_of(result));
        }
    }
    progress.left = items.len() - progress.ended.len();
    let shared = Mutex::new(progress);
    let env = Env {
        opts,
        candidates: &candidates,
        changes: &changes,
        items: &items,
        eval: &eval,
        exe: &exe,
        shared: &shared,
    };
    std::thread::scope(|scope| {
        let workers: Vec<_> = (0..opts.jobs.max(1))
            .map(|_| scope.spawn(|| env.work()))
            .collect();
        workers
            .into_iter()
            .map(|w| {
                w.join()
                    .unwrap_or_else(|_| Err(Failure::tick("eval: a worker thread panicked")))
            })
            .collect::<Result<Vec<()>, Failure>>()
    })?;
    let progress = shared
        .into_inner()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    let interrupted = interrupt::requested();
    let stopped = match interrupted {
        Some(signal) => Some(format!(
            "interrupted by {}: run the same command again to finish (finished tasks are kept)",
            signal.name()
        )),
        None => progress.stopped,
    };
    let mut evaluated = Evaluated {
        configs: Vec::new(),
        skipped,
        eval_dir: eval.root.clone(),
        stopped,
        interrupted,
    };
    for (c, candidate) in candidates.iter().enumerate() {
        let mut report = ConfigReport {
            config: candidate.given.display().to_string(),
            label: candidate.label.clone(),
            key: candidate.key.clone(),
            summary: Summary::default(),
            tasks: Vec::new(),
            invalid: Vec::new(),
            not_run: Vec::new(),
        };
        for (ch, change) in changes.iter().enumerate() {
            match progress.ended.get(&(ch, c)) {
                Some(Ended::Finished(result)) => report.tasks.push((**result).clone()),
                Some(Ended::Invalid(why)) => report.invalid.push(Skipped {
                    commit: change.commit.clone(),
                    title: change.title.clone(),
                    why: why.clone(),
                }),
                Some(Ended::Interrupted) | None => report.not_run.push(change.commit.clone()),
            }
        }
        report.summary = rules::summarise(&report.tasks.iter().map(counted).collect::<Vec<_>>());
        evaluated.configs.push(report);
    }
    super::report::write_files(&evaluated)?;
    Ok(evaluated)
}

/// A result read back: an invalid change is kept as one, so it is not tested again.
fn ended_of(result: TaskResult) -> Ended {
    match result.bound.as_deref() {
        Some(why) if result.state == "invalid" => Ended::Invalid(why.to_string()),
        _ => Ended::Finished(Box::new(result)),
    }
}

pub(super) fn counted(r: &TaskResult) -> Counted {
    Counted {
        merged: r.merged,
        verdict: Some(rules::Verdict {
            resolved: r.resolved,
            wrong_merge: r.wrong_merge,
            refused_passing: r.refused_passing,
        }),
        runs: r.runs,
        reworks: r.reworks,
        tokens: r.tokens,
        cost_usd: r.cost_usd,
        seconds: r.seconds,
        weak: r.weak_tests,
    }
}

fn short(commit: &str) -> &str {
    &commit[..12.min(commit.len())]
}

/// A progress line on stderr; a closed stderr only loses the line.
fn note(opts: &Options, line: &str) {
    if !opts.quiet {
        let _ = writeln!(std::io::stderr(), "eval: {line}");
    }
}

/// What the worker threads share.
struct Env<'a> {
    opts: &'a Options,
    candidates: &'a [Candidate],
    changes: &'a [Change],
    items: &'a [(usize, usize)],
    eval: &'a EvalDir,
    exe: &'a Path,
    shared: &'a Mutex<Progress>,
}

impl Env<'_> {
    fn lock(&self) -> std::sync::MutexGuard<'_, Progress> {
        self.shared
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Takes the next task not yet done, while the budget and no interrupt say stop.
    fn take(&self) -> Option<(usize, usize, usize, Option<f64>)> {
        let mut p = self.lock();
        if interrupt::requested().is_some() || p.stopped.is_some() {
            return None;
        }
        while p.next < self.items.len() && p.ended.contains_key(&self.items[p.next]) {
            p.next += 1;
        }
        if p.next >= self.items.len() {
            return None;
        }
        let estimate = if p.costs.is_empty() {
            0.0
        } else {
            p.costs.iter().sum::<f64>() / p.costs.len() as f64
        };
        if !rules::fits_budget(self.opts.budget_usd, p.spent, p.running, estimate) {
            p.stopped = Some(format!(
                "--budget-usd {:.2}: ${:.2} spent, and the next task may cost about ${estimate:.2}",
                self.opts.budget_usd.unwrap_or_default(),
                p.spent
            ));
            return None;
        }
        let per_task = self
            .opts
            .budget_usd
            .map(|b| b - p.spent - estimate * p.running as f64);
        let index = p.next;
        let (ch, c) = self.items[index];
        p.next += 1;
        p.running += 1;
        Some((index, ch, c, per_task))
    }

    fn work(&self) -> Result<(), Failure> {
        while let Some((index, ch, c, per_task)) = self.take() {
            let (change, candidate) = (&self.changes[ch], &self.candidates[c]);
            let name = format!(
                "[{}/{}] {} \"{}\" with {}",
                index + 1,
                self.items.len(),
                short(&change.commit),
                crate::report::truncate(&change.title, 60),
                candidate.label
            );
            note(self.opts, &format!("{name}: started"));
            let ended = self
                .opts
                .test_command
                .plan(&candidate.config, &change.paths)
                .and_then(|plan| {
                    task::run(&Job {
                        source: &self.opts.repo,
                        change,
                        config: &candidate.config,
                        key: &candidate.key,
                        eval: self.eval,
                        plan: &plan,
                        redactor: &candidate.redactor,
                        max_ticks: self.opts.max_ticks,
                        per_task_usd: per_task,
                        exe: self.exe,
                    })
                });
            let mut p = self.lock();
            p.running -= 1;
            let ended = match ended {
                Ok(ended) => ended,
                Err(f) => {
                    p.stopped = Some(format!("{name}: {}", f.message));
                    return Err(f);
                }
            };
            let line = match &ended {
                Ended::Finished(r) => {
                    self.eval.save(&candidate.key, r)?;
                    p.spent += r.cost_usd;
                    p.costs.push(r.cost_usd);
                    p.seconds.push(r.seconds);
                    p.left -= 1;
                    format!("{name}: {}", super::report::one_line(r))
                }
                Ended::Invalid(why) => {
                    self.eval.save(
                        &candidate.key,
                        &invalid(change, why, self.eval, &candidate.key),
                    )?;
                    p.left -= 1;
                    format!("{name}: left out: {why}")
                }
                Ended::Interrupted => format!("{name}: interrupted, not kept"),
            };
            let left = match rules::time_left(&p.seconds, p.left, self.opts.jobs) {
                Some(secs) if p.left > 0 => format!(
                    "; {} left, about {}",
                    p.left,
                    crate::time::human_span((secs * 1000.0) as i64)
                ),
                _ if p.left > 0 => format!("; {} left", p.left),
                _ => String::new(),
            };
            note(self.opts, &format!("{line}{left}"));
            p.ended.insert((ch, c), ended);
        }
        Ok(())
    }
}

/// An invalid change as a stored result, so a rerun does not test it again.
fn invalid(change: &Change, why: &str, eval: &EvalDir, key: &str) -> TaskResult {
    let logs = eval.task_dir(key, &change.commit);
    TaskResult {
        commit: change.commit.clone(),
        parent: change.parent.clone(),
        title: change.title.clone(),
        merged: false,
        why_not: Some(why.to_string()),
        state: "invalid".into(),
        hidden_tests: rules::HiddenTests::None,
        tested: "nothing".into(),
        hidden_test_files: change.hidden.clone(),
        weak_tests: false,
        resolved: false,
        wrong_merge: false,
        refused_passing: false,
        runs: 0,
        reworks: 0,
        reviews: 0,
        refusals: 0,
        tokens: 0,
        cost_usd: 0.0,
        seconds: 0.0,
        ticks: 0,
        logs: logs
            .strip_prefix(&eval.root)
            .unwrap_or(&logs)
            .display()
            .to_string(),
        bound: Some(why.to_string()),
    }
}

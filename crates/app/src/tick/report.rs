//! What a tick reports: its summary (text for people, `--json` for the GitHub Action), and
//! after the tick the job summary and the dashboard issue.
//!
//! Issue 51: the summary's lines are one log, and a line that starts with `[` (a rule's label:
//! `[dispatch.claim] …`, `[round 2] …`, `[spend] …`) is a detail — claims and leases, rounds
//! arithmetic, metering — shown with `-v` and in `--json` only. The default text, the demo, the
//! job summary and the dashboard show the rest: each task, what ran, what it cost, what is next.
//!
//! Not for: the text of the board (`report::board`, `super::status`) or finding and writing the
//! dashboard issue (`super::dashboard`).

use super::dashboard;
use super::Context;
use crate::forge::github::GithubClient;
use crate::model::{BlockReason, Mode, TaskState, TaskStatus};

/// What one tick did.
#[derive(Default)]
pub struct TickSummary {
    pub tick_id: String,
    /// GitHub requests made (github mode).
    pub requests: u32,
    pub decisions: usize,
    pub lines: Vec<String>,
    /// Runs claimed by this tick: started here, or with `--fan-out` listed in the matrix.
    pub claimed: usize,
    /// Runs this tick started (none with `--fan-out`; a run a spent tick budget sent back to the
    /// queue is not started).
    pub started: usize,
    pub judged: usize,
    pub stray: usize,
    /// `--fan-out`: the claimed runs, for work jobs (`{"task", "run"}` each).
    pub matrix: Option<Vec<serde_json::Value>>,
    /// Today's spend after this tick and the daily budget, when the tick ran anything.
    pub spend_today: Option<(f64, f64)>,
    /// Tasks this tick's runs and reviews finished (`done`).
    pub tasks_done: usize,
    /// Pull requests opened for a task for the first time (github mode).
    pub prs_opened: usize,
    /// Pull requests updated in place by a later run of the same change (github mode).
    pub prs_updated: usize,
    /// Reviews that merged their change (the PR in github mode, the base branch locally).
    pub merged: usize,
    /// What the agents of this tick's runs reported spending, in USD.
    pub spend_usd: f64,
    /// Runs that failed, one entry each (the GitHub Action turns them into annotations).
    pub failures: Vec<RunFailure>,
    /// A person ticked a dashboard checkbox (github mode): the dashboard is rewritten unticked.
    pub dashboard_ticked: bool,
    /// Rounds the tick recorded (issue 38): 0 for a quiet tick, 1 for a tick that did one step.
    pub rounds: usize,
    /// The first tick on a repository in github mode (issue 51): what opentiger will do here
    /// (`preview`), said before any agent starts.
    pub preview: Option<String>,
}

/// A run of this tick that failed, and where that left its task.
#[derive(Clone, Debug, serde::Serialize)]
pub struct RunFailure {
    pub task_id: String,
    pub title: String,
    pub failure_code: Option<&'static str>,
    pub message: String,
    /// The last lines of the failing command's output (redacted, bounded): the cause.
    pub output_tail: Vec<String>,
    /// The task's state after the failure, e.g. `queued` (retried) or `blocked(awaiting_human)`.
    pub task_state: String,
}

/// Whether a summary line is a detail, shown with `-v` only (see the module doc).
pub fn is_detail(line: &str) -> bool {
    line.trim_start().starts_with('[')
}

/// What a task's new state means for the person reading the tick (issue 51).
pub fn next_words(to: TaskState) -> &'static str {
    match (to.status, to.reason) {
        (TaskStatus::Queued, _) => "queued again",
        (TaskStatus::Running, _) => "running",
        (TaskStatus::Done, _) => "done",
        (TaskStatus::Failed, _) => "failed",
        (TaskStatus::Cancelled, _) => "cancelled",
        (TaskStatus::Blocked, Some(BlockReason::AwaitingJudge)) => "waits for its review",
        (TaskStatus::Blocked, Some(BlockReason::NeedsRework)) => "waits for its fix",
        (TaskStatus::Blocked, Some(BlockReason::QuotaWait)) => "waits for its agent's quota",
        (TaskStatus::Blocked, Some(BlockReason::IssueLinking)) => "waits for its issue",
        (TaskStatus::Blocked, Some(BlockReason::AwaitingHuman) | None) => "waits for you",
        (TaskStatus::Blocked, Some(BlockReason::Paused)) => "paused",
    }
}

impl TickSummary {
    /// The lines a person reads without `-v` (no detail lines).
    pub fn plain_lines(&self) -> Vec<&String> {
        self.lines.iter().filter(|l| !is_detail(l)).collect()
    }

    /// The summary for people; `verbose` (`-v`) adds the details.
    pub fn text(&self, verbose: bool) -> String {
        let rounds = if self.rounds > 1 && verbose {
            format!(" in {} rounds", self.rounds)
        } else {
            String::new()
        };
        let mut out = if verbose {
            format!(
                "tick {}: {} decision(s), {} run(s), {} review(s){rounds}\n",
                self.tick_id, self.decisions, self.started, self.judged
            )
        } else {
            format!("tick {}: {}\n", self.tick_id, self.headline())
        };
        if let Some(preview) = &self.preview {
            let mut lines = preview.lines();
            if let Some(first) = lines.next() {
                out.push_str(&format!("  First tick on this repository. {first}\n"));
            }
            for line in lines {
                out.push_str(&format!("  {line}\n"));
            }
        }
        let shown: Vec<&String> = if verbose {
            self.lines.iter().collect()
        } else {
            self.plain_lines()
        };
        for line in shown {
            out.push_str(&format!("  {line}\n"));
        }
        if let Some(matrix) = &self.matrix {
            out.push_str(&format!(
                "  matrix: {} ({} claimed for work jobs)\n",
                serde_json::json!({ "include": matrix }),
                matrix.len()
            ));
        }
        if let Some((today, budget)) = self.spend_today {
            out.push_str(&format!(
                "  spent: ${:.2} this tick, ${today:.2} today of ${budget:.2} a day (budget.per_day_usd)\n",
                self.spend_usd
            ));
        }
        out
    }

    /// What the tick did, in a few words: `ran 1 agent, reviewed 1, merged 1`.
    fn headline(&self) -> String {
        let mut did = Vec::new();
        let plural =
            |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
        if self.started > 0 {
            did.push(format!("ran {}", plural(self.started, "agent", "agents")));
        }
        if self.judged > 0 {
            did.push(format!(
                "reviewed {}",
                plural(self.judged, "change", "changes")
            ));
        }
        if self.merged > 0 {
            did.push(format!("merged {}", self.merged));
        }
        if self.tasks_done > 0 {
            did.push(format!("{} done", plural(self.tasks_done, "task", "tasks")));
        }
        if did.is_empty() {
            return if self.decisions > 0 {
                "no agent ran".to_string()
            } else {
                "nothing to do".to_string()
            };
        }
        did.join(", ")
    }

    fn lines_for_report(&self) -> crate::report::board::TickLines {
        crate::report::board::TickLines {
            id: self.tick_id.clone(),
            decisions: self.decisions,
            runs: self.started,
            reviews: self.judged,
            rounds: (self.rounds > 1).then_some(self.rounds),
            spent: self.spend_today.map(|_| format!("${:.2}", self.spend_usd)),
            lines: self.plain_lines().into_iter().cloned().collect(),
        }
    }

    pub fn to_json(&self) -> serde_json::Value {
        serde_json::json!({
            "tick_id": self.tick_id, "decisions": self.decisions, "runs": self.started,
            "claimed": self.matrix.as_ref().map_or(0, Vec::len),
            "reviews": self.judged, "stray_outcomes": self.stray, "lines": self.lines,
            "github_requests": self.requests,
            "matrix": self.matrix.as_ref().map(|m| serde_json::json!({ "include": m })),
            "spent_today_usd": self.spend_today.map(|(today, _)| today),
            "tasks_done": self.tasks_done, "prs_opened": self.prs_opened,
            "prs_updated": self.prs_updated, "merged": self.merged,
            "spend_usd": self.spend_usd, "failures": self.failures, "rounds": self.rounds,
            "peak_memory_kib": peak_memory_kib(),
        })
    }
}

/// After a tick: the job summary (GitHub Actions) and, in github mode after a tick that changed
/// something, the dashboard issue. Visibility only: a failure here is a warning, never lost state.
pub fn report_tick(ctx: &Context, summary: &TickSummary) {
    let step_summary = std::env::var_os("GITHUB_STEP_SUMMARY")
        .filter(|p| !p.is_empty() && ctx.config.report.job_summary);
    // A ticked checkbox is answered by rewriting the dashboard unticked, busy or not.
    let busy = summary.decisions > 0
        || summary.claimed > 0
        || summary.judged > 0
        || summary.dashboard_ticked;
    let dashboard = ctx.config.mode == Mode::Github && ctx.config.report.dashboard_issue && busy;
    if step_summary.is_none() && !dashboard {
        return;
    }
    let rendered = ctx
        .read_store()
        .and_then(|store| super::status::board(ctx, &store, Some(summary.lines_for_report())));
    let (board, job_summary) = match rendered {
        Ok(r) => r,
        Err(e) => {
            tracing::warn!(
                "could not render the job summary and dashboard: {}",
                e.message
            );
            return;
        }
    };
    if let (Some(path), Some(mut text)) = (step_summary, job_summary) {
        use std::io::Write as _;
        if let Some(preview) = &summary.preview {
            text.push_str(&format!("\n### First tick on this repository\n\n{preview}"));
        }
        text.push_str(&crate::sandbox::summary_markdown(&ctx.config));
        let written = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .and_then(|mut f| f.write_all(text.as_bytes()));
        if let Err(e) = written {
            tracing::warn!("could not append to $GITHUB_STEP_SUMMARY: {e}");
        }
    }
    if dashboard {
        let updated = GithubClient::from_env(None, crate::credentials::lookup)
            .map_err(|e| e.to_string())
            .and_then(|client| {
                dashboard::update_dashboard(&client, ctx, &board).map_err(|e| e.to_string())
            });
        match updated {
            Ok(dashboard::DashboardWrite::Updated(n)) => {
                tracing::info!("dashboard issue #{n} updated")
            }
            Ok(dashboard::DashboardWrite::Opened(n, login)) => {
                tracing::info!("dashboard issue #{n} opened");
                // Its checkboxes are believed only in an issue opentiger opened itself.
                if let Err(e) = super::people::remember_self(ctx, &login) {
                    tracing::warn!("could not remember who opentiger posts as: {}", e.message);
                }
            }
            Ok(dashboard::DashboardWrite::Unchanged) => {}
            Err(e) => tracing::warn!("could not update the dashboard issue: {e}"),
        }
    }
}

/// This process's peak resident memory (Linux), for `tick --json` and the benchmarks.
fn peak_memory_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 51: the default text keeps the plain lines and says what happened in words; `-v`
    /// keeps every line and the counts.
    #[test]
    fn the_plain_text_leaves_the_details_to_v() {
        let summary = TickSummary {
            tick_id: "t1".into(),
            decisions: 2,
            started: 1,
            judged: 1,
            merged: 1,
            tasks_done: 1,
            rounds: 2,
            lines: vec![
                "[dispatch.claim] a: claim and run (run r1): as worker; lease until 13:30".into(),
                "a \"A\": worker ran; waits for its review".into(),
                "[round 2] its work may take 10 min of the 49 min left: reviewed 1".into(),
                "a \"A\": review: approved and merged as abc".into(),
            ],
            ..TickSummary::default()
        };
        assert_eq!(
            summary.text(false),
            "tick t1: ran 1 agent, reviewed 1 change, merged 1, 1 task done\n  a \"A\": worker ran; waits for its review\n  a \"A\": review: approved and merged as abc\n"
        );
        let verbose = summary.text(true);
        assert!(verbose.starts_with("tick t1: 2 decision(s), 1 run(s), 1 review(s) in 2 rounds\n"));
        assert_eq!(verbose.lines().count(), 5);
        let idle = TickSummary::default();
        assert_eq!(idle.text(false), "tick : nothing to do\n");
        assert_eq!(
            next_words(TaskState::blocked(BlockReason::AwaitingHuman)),
            "waits for you"
        );
        assert_eq!(next_words(TaskState::QUEUED), "queued again");
    }
}

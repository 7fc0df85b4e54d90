//! What a tick reports: its summary (text for people, `--json` for the GitHub Action), and
//! after the tick the job summary and the dashboard issue.
//!
//! Not for: the text of the board (`report::board`, `super::status`) or finding and writing the
//! dashboard issue (`super::dashboard`).

use super::dashboard;
use super::Context;
use crate::forge::github::GithubClient;
use crate::model::Mode;

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

impl TickSummary {
    pub fn text(&self) -> String {
        let rounds = if self.rounds > 1 {
            format!(" in {} rounds", self.rounds)
        } else {
            String::new()
        };
        let mut out = format!(
            "tick {}: {} decision(s), {} run(s), {} review(s){rounds}\n",
            self.tick_id, self.decisions, self.started, self.judged
        );
        for line in &self.lines {
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
                "  spend: ${:.2} this tick, ${today:.2} today of budget.per_day_usd ${budget:.2}\n",
                self.spend_usd
            ));
        }
        out
    }

    fn lines_for_report(&self) -> crate::report::board::TickLines {
        crate::report::board::TickLines {
            id: self.tick_id.clone(),
            decisions: self.decisions,
            runs: self.started,
            reviews: self.judged,
            rounds: (self.rounds > 1).then_some(self.rounds),
            spent: self.spend_today.map(|_| format!("${:.2}", self.spend_usd)),
            lines: self.lines.clone(),
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

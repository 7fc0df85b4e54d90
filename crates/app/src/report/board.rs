//! The job summary and the dashboard issue's text (DESIGN §9): what a tick did, what waits on a
//! person and what each active task waits for, PRs and their CI, spend, the last tick; from the
//! same [`StatusView`] as `status`, through the `summary.md.hbs` and `dashboard.md.hbs` templates.
//! Text from issues goes through [`plain`]: one line, no mentions, HTML or links.
//! Not for: gathering the view (`tick::status`), or finding and editing the dashboard issue and
//! writing the job summary (`tick::dashboard`, `tick::report`).

use serde::Serialize;

use super::{StatusView, TaskStatusView};
use crate::prompt::{PromptError, TemplateName, Templates};

/// What the dashboard issue carries, to be found again: never change it.
pub const DASHBOARD_MARKER: &str = "<!-- opentiger:dashboard -->";

/// Data of `dashboard.md.hbs`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct BoardView {
    pub now: String,
    pub mode: String,
    pub last_tick: String,
    /// `queued 2, done 5`.
    pub counts: String,
    pub spend: String,
    /// Tasks waiting on a person's decision.
    pub humans: Vec<TaskLine>,
    pub humans_count: usize,
    pub active_count: usize,
    /// Other active tasks (all of the four lists below, in the view's order).
    pub active: Vec<TaskLine>,
    /// Active tasks by their state (issue 40: each state its own section): running,
    /// blocked on the loop (the judge, a rework, a quota, an issue), failed and about to be
    /// retried, queued.
    pub running: Vec<TaskLine>,
    pub waiting: Vec<TaskLine>,
    pub failed: Vec<TaskLine>,
    pub queued: Vec<TaskLine>,
    /// The task graph as a fenced Mermaid block (`report::graph`), when there is a task.
    pub graph: Option<String>,
    /// Done or cancelled tasks in the view (newest first, a few).
    pub finished: Vec<TaskLine>,
    /// Backlog issues not imported, and why.
    pub ignored: Vec<String>,
    /// Agent executors parked on a quota (their fallbacks run meanwhile).
    pub parked: Vec<String>,
    /// Who paused the repository and how to resume it.
    pub paused: Option<String>,
    /// Which checks PRs must pass, or that there is no CI (github mode).
    pub ci: Option<String>,
    /// The last tick against the schedule.
    pub heartbeat: Option<String>,
    /// What held queued tasks back when fewer runs start than the tick allows (issue 27).
    pub concurrency: Option<String>,
    /// Hosts opentiger's proxy refused, with the line that would allow each (issue 37).
    pub refused: Vec<String>,
}

/// One task, for people.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TaskLine {
    pub id: String,
    pub title: String,
    pub state: String,
    /// The lifecycle phase word (`model::Phase`).
    pub phase: String,
    pub reason: String,
    /// What the reason advises (issue 40), shown beside the comment command that answers it.
    pub advice: Option<String>,
    pub next: String,
    pub pr: Option<u64>,
    pub checks: Option<String>,
    /// The recommended comment command (github mode), e.g. `/opentiger retry <id>`.
    pub command: Option<String>,
    /// What a person does for it, when it waits on one (issue 49).
    pub person: Option<String>,
    /// The task that waits on the person, when this one waits through it.
    pub via: Option<String>,
    /// Its checkboxes (github mode), recommended first.
    pub boxes: Vec<crate::engine::checkboxes::Checkbox>,
}

/// Data of `summary.md.hbs`: the tick and the rendered board.
#[derive(Clone, Debug, Default, Serialize)]
pub struct SummaryView {
    pub tick: TickLines,
    pub board: String,
}

/// What one tick did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct TickLines {
    pub id: String,
    pub decisions: usize,
    pub runs: usize,
    pub reviews: usize,
    /// How many rounds the tick had, when more than one (issue 38).
    pub rounds: Option<usize>,
    /// `$0.42`, when the tick ran anything.
    pub spent: Option<String>,
    pub lines: Vec<String>,
}

/// Finished tasks shown on the board.
const FINISHED_SHOWN: usize = 10;

impl BoardView {
    pub fn of(view: &StatusView, mode: &str) -> BoardView {
        let github = mode == "github";
        let mut board = BoardView {
            now: view.now.to_string(),
            mode: mode.to_string(),
            // Issue 49: a tick that was interrupted says so.
            last_tick: view.last_tick.as_ref().map_or("never".to_string(), |t| {
                let how = match t.outcome.as_deref() {
                    Some("ok") => String::new(),
                    Some(other) => format!(" ({})", plain(other)),
                    None => " (unfinished)".to_string(),
                };
                format!("{} by {}{how}", t.started_at, plain(&t.agent_id))
            }),
            counts: if view.counts.is_empty() {
                "none".to_string()
            } else {
                view.counts
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            spend: view.spend.line(),
            parked: view.parked_executors.iter().map(|l| plain(l)).collect(),
            paused: view.paused.as_deref().map(plain),
            ci: view.ci.as_deref().map(plain),
            heartbeat: view.heartbeat.as_deref().map(plain),
            concurrency: view.held_back.as_deref().map(plain),
            // Made of a host as data (`model::network::host_name`: letters, digits and `.-:[]`
            // only, in a code span) and our words: shown as they are, so the line stays
            // copyable; ten names and a count per task's list at most.
            refused: view.refused.clone(),
            ignored: view
                .ignored_issues
                .iter()
                .map(|i| {
                    plain(&format!(
                        "#{}: {}",
                        i["issue"],
                        i["reason"].as_str().unwrap_or_default()
                    ))
                })
                .collect(),
            ..BoardView::default()
        };
        let mut finished: Vec<&TaskStatusView> = Vec::new();
        for task in &view.tasks {
            let mut line = TaskLine::of(task);
            if !github {
                line.command = None;
                line.boxes.clear();
            }
            match (task.status.as_str(), task.waits_on_person) {
                ("done" | "cancelled", _) => finished.push(task),
                (_, true) => board.humans.push(line),
                (status, false) => {
                    let list = match status {
                        "running" => &mut board.running,
                        "failed" => &mut board.failed,
                        "queued" => &mut board.queued,
                        _ => &mut board.waiting,
                    };
                    list.push(line.clone());
                    board.active.push(line);
                }
            }
        }
        board.humans_count = board.humans.len();
        board.active_count = board.active.len();
        finished.sort_by_key(|t| std::cmp::Reverse(t.updated_at));
        board.finished = finished
            .into_iter()
            .take(FINISHED_SHOWN)
            .map(TaskLine::of)
            .collect();
        board
    }
}

impl TaskLine {
    fn of(task: &TaskStatusView) -> TaskLine {
        let state = match &task.block_reason {
            Some(reason) => format!("{}({reason})", task.status),
            None => task.status.clone(),
        };
        TaskLine {
            id: task.id.clone(),
            title: plain(&task.title),
            state,
            phase: task.phase.clone(),
            reason: plain(task.reason.as_deref().unwrap_or("")),
            advice: task.advice.as_deref().map(plain),
            next: plain(&task.next_action),
            pr: task.pr,
            checks: task.checks.clone(),
            command: task.command.clone(),
            person: task.waiting_on_person.as_ref().map(|p| plain(&p.step)),
            via: task
                .waiting_on_person
                .as_ref()
                .and_then(|p| p.via.as_deref())
                .map(plain),
            boxes: task.boxes.clone(),
        }
    }
}

/// Renders the dashboard (with its marker last) and, given a tick, the job summary around it.
pub fn render(
    templates: &Templates,
    board: &BoardView,
    tick: Option<TickLines>,
) -> Result<(String, Option<String>), PromptError> {
    let dashboard = format!(
        "{}\n{DASHBOARD_MARKER}\n",
        templates
            .render_report(TemplateName::Dashboard, board)?
            .trim_end()
    );
    let summary = match tick {
        Some(tick) => Some(templates.render_report(
            TemplateName::Summary,
            &SummaryView {
                tick: TickLines {
                    lines: tick.lines.iter().map(|l| plain(l)).collect(),
                    ..tick
                },
                board: dashboard.replace(DASHBOARD_MARKER, ""),
            },
        )?),
        None => None,
    };
    Ok((dashboard, summary))
}

/// Text made safe for a markdown list item: one line, no HTML, no links or images, no mentions.
pub fn plain(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut out = String::with_capacity(one_line.len());
    for c in one_line.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '[' | ']' | '!' | '*' | '_' | '|' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            // A zero-width space after `@` keeps `@someone` from notifying them.
            '@' => out.push_str("@\u{200B}"),
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::SpendView;
    use crate::time::Timestamp;

    fn task(id: &str, status: &str, block: Option<&str>, title: &str) -> TaskStatusView {
        TaskStatusView {
            id: id.into(),
            title: title.into(),
            status: status.into(),
            block_reason: block.map(String::from),
            phase: crate::model::phase_of(
                status.parse().unwrap(),
                block.map(|b| b.parse().unwrap()),
                crate::model::PhaseFacts {
                    attempted: false,
                    over_budget: false,
                    held_by_people: false,
                    report: crate::model::IssueReport::NotKept,
                },
            )
            .to_string(),
            kind: "feature".into(),
            role: "worker".into(),
            priority: 0,
            attempts: Default::default(),
            pr: None,
            checks: None,
            issue: None,
            dependencies: vec![],
            parent: None,
            reason: Some(format!("why {id}")),
            advice: None,
            findings: vec![],
            next_action: format!("next for {id}"),
            now: Some(format!("next for {id}")),
            next_tick: None,
            next_detail: None,
            next_attempt_at: None,
            updated_at: Timestamp(0),
            waits_on_person: matches!(block, Some("awaiting_human" | "paused")),
            waiting_on_person: matches!(block, Some("awaiting_human" | "paused")).then(|| {
                crate::report::PersonView {
                    step: format!("`opentiger task retry {id}`"),
                    via: None,
                }
            }),
            command: None,
            boxes: vec![],
            held_back: None,
            family: None,
        }
    }

    #[test]
    fn the_board_sorts_tasks_by_who_acts_next_and_defuses_issue_text() {
        let view = StatusView {
            now: Timestamp::parse_rfc3339("2026-11-21T12:00:00Z").unwrap(),
            counts: [("queued".to_string(), 1), ("blocked".to_string(), 2)]
                .into_iter()
                .collect(),
            preflight: String::new(),
            next: String::new(),
            tasks: vec![
                task(
                    "a",
                    "queued",
                    None,
                    "Fix <script> for @alice ![x](http://e/x.png)",
                ),
                TaskStatusView {
                    command: Some("/opentiger retry b".into()),
                    advice: Some("Fix: the <b>cause</b>. Then retry".into()),
                    boxes: vec![
                        crate::engine::checkboxes::Checkbox {
                            verb: "retry",
                            recommended: true,
                            marker: "<!-- opentiger:box=b:retry:k1 -->".into(),
                        },
                        crate::engine::checkboxes::Checkbox {
                            verb: "cancel",
                            recommended: false,
                            marker: "<!-- opentiger:box=b:cancel:k1 -->".into(),
                        },
                    ],
                    ..task("b", "blocked", Some("awaiting_human"), "Decide")
                },
                TaskStatusView {
                    pr: Some(7),
                    checks: Some("pending".into()),
                    ..task("c", "blocked", Some("awaiting_judge"), "Review me")
                },
                task("d", "done", None, "Old"),
                task("e", "failed", None, "Broke"),
                task("f", "running", None, "Busy"),
            ],
            runs: vec![],
            last_tick: None,
            ignored_issues: vec![serde_json::json!({"issue": 9, "reason": "opened by @eve"})],
            spend: SpendView {
                today_usd: 1.5,
                per_day_usd: 50.0,
                per_task_usd: 5.0,
                per_tick_usd: None,
                by_role: [("judge".to_string(), 0.25), ("worker".to_string(), 1.25)]
                    .into_iter()
                    .collect(),
            },
            parked_executors: vec!["claude-code waits on quota until 12:40".into()],
            paused: None,
            ci: Some("no CI configured: merged on opentiger's own verification".into()),
            heartbeat: Some("the last scheduled tick was 3h ago, expected every 30 min".into()),
            held_back: Some(
                "started 1 of limits.max_runs_per_tick = 4: 2 queued task(s) held back".into(),
            ),
            refused: vec![
                "task b: `evil.example:443` refused for the worker; to allow it, add to .opentiger.yml (into its `sandbox:` when it has one): `sandbox: {network: {allow: {worker: [\"evil.example\"]}}}`".into(),
            ],
            host: None,
            lessons: vec![],
        };
        let mut board = BoardView::of(&view, "github");
        board.graph = Some("```mermaid\nflowchart LR\n  t0[\"a\"]:::queued\n```\n".into());
        assert_eq!(board.humans.len(), 1);
        assert_eq!(board.active.len(), 4);
        assert_eq!(board.finished.len(), 1);
        let templates = Templates::builtin().unwrap();
        let tick = TickLines {
            id: "t1".into(),
            decisions: 2,
            runs: 1,
            reviews: 0,
            rounds: Some(2),
            spent: Some("$0.40".into()),
            lines: vec!["a \"Fix\": queued → running".into()],
        };
        let (dashboard, summary) = render(&templates, &board, Some(tick)).unwrap();
        for needle in [
            "## Waiting on a person (1)",
            "- **Decide** (`b`, awaiting_feedback: blocked(awaiting_human)): why b\n  - Fix: the &lt;b&gt;cause&lt;/b&gt;. Then retry\n  - [ ] retry (recommended) <!-- opentiger:box=b:retry:k1 -->\n  - [ ] cancel <!-- opentiger:box=b:cancel:k1 -->\n  - decide: tick a box, or comment `/opentiger retry b` here (recommended)",
            "**Review me** (`c`, verifying: blocked(awaiting_judge)) · PR #7, CI pending",
            // Issue 40: each state its own section, the failed and the queued apart.
            "## Running (1)\n\n- **Busy** (`f`, ",
            "## Waiting on the loop (1)\n\n- **Review me**",
            "## Failed (1)\n\n- **Broke** (`e`, blocked: failed): why e — next: next for e",
            "## Queued (1)\n\n- **Fix &lt;script&gt; for @\u{200B}alice",
            "## Task graph\n\n```mermaid\nflowchart LR\n  t0[\"a\"]:::queued\n```",
            "$1.50 today of $50.00 per day",
            "by role: judge $0.25, worker $1.25",
            "## Recently finished",
            "#9: opened by @\u{200B}eve",
            "**Agents parked on a quota:** claude-code waits on quota until 12:40",
            "**Concurrency (the next tick's forecast):** started 1 of limits.max\\_runs\\_per\\_tick = 4: 2 queued task(s) held back",
            DASHBOARD_MARKER,
        ] {
            assert!(
                dashboard.contains(needle),
                "`{needle}` not in:\n{dashboard}"
            );
        }
        assert!(
            !dashboard.contains("<script>") && !dashboard.contains("![x]"),
            "{dashboard}"
        );
        assert!(!dashboard.contains("@alice"), "{dashboard}");
        let summary = summary.unwrap();
        assert!(summary.contains("## opentiger tick `t1`"), "{summary}");
        assert!(
            summary.contains("2 decision(s), 1 run(s), 0 review(s) in 2 rounds · spent $0.40"),
            "{summary}"
        );
        assert!(
            summary.contains("- a \"Fix\": queued → running"),
            "{summary}"
        );
        assert!(summary.contains("## Waiting on a person (1)"), "{summary}");
        assert!(!summary.contains(DASHBOARD_MARKER));
        // Issue 37: a refused host, with the line that allows it, in both.
        for text in [&dashboard, &summary] {
            assert!(text.contains("## Hosts refused"), "{text}");
            assert!(
                text.contains("sandbox: {network: {allow: {worker: [\"evil.example\"]}}}"),
                "{text}"
            );
        }
    }
}

#[cfg(test)]
mod who_acts_tests {
    use crate::engine::testkit::{plan_with, snapshot, task};
    use crate::model::{PhaseFacts, TaskId};

    /// A task held for its own spent budget waits on a person (the `budget` command); one held
    /// for the day's budget waits for midnight, not for anybody.
    #[test]
    fn a_task_over_its_own_budget_waits_on_a_person_and_the_day_s_budget_on_nobody() {
        let cases = [
            ("own budget spent", 0.0, 6.0, true),
            ("the day's budget spent", 60.0, 1.0, false),
            ("under both", 1.0, 1.0, false),
        ];
        for (name, today, spent, waits) in cases {
            let mut snap = snapshot(vec![task("a")], vec![], vec![]);
            snap.observations.spend.today_usd = today;
            snap.observations
                .spend
                .by_family
                .insert(TaskId("a".into()), spent);
            let mut config = crate::config::Config::default();
            config.budget.per_day_usd = 50.0;
            config.budget.per_task_usd = 5.0;
            let plan = plan_with(&snap, &config);
            let a = &snap.tasks[0];
            let view = crate::report::task_view(a, &plan, a.phase(PhaseFacts::of(a)));
            assert_eq!(view.waits_on_person, waits, "{name}");
            let command = view.command.unwrap_or_default();
            assert_eq!(
                command == "/opentiger budget <usd> a",
                waits,
                "{name}: {command}"
            );
        }
    }

    /// Issue 49: a task that depends on one waiting on a person waits on that person too:
    /// flagged with the step and the task it waits through, in `status` and under "Waiting on
    /// a person" on the dashboard (and so the job summary); an interrupted tick says so.
    #[test]
    fn a_dependent_of_a_task_waiting_on_a_person_shows_the_step_and_through_whom() {
        use crate::engine::testkit::TaskExt;
        use crate::model::BlockReason;
        use crate::report::{status_text, task_view, SpendView, StatusView};
        let stuck = task("c").blocked(BlockReason::AwaitingHuman).with(|t| {
            t.status_reason = Some(
                "lost 3 times. Decide: `opentiger task retry c` or `opentiger task cancel c`"
                    .into(),
            )
        });
        let snap = snapshot(vec![stuck, task("d").deps(&["c"])], vec![], vec![]);
        let plan = plan_with(&snap, &crate::config::Config::default());
        let tasks: Vec<_> = snap
            .tasks
            .iter()
            .map(|t| task_view(t, &plan, t.phase(PhaseFacts::of(t))))
            .collect();
        let d = &tasks[1];
        let person = d.waiting_on_person.clone().expect("d waits on a person");
        assert_eq!(person.via.as_deref(), Some("c"), "{d:?}");
        assert!(person.step.contains("`opentiger task retry c`"), "{d:?}");
        assert_eq!(
            d.reason.as_deref(),
            Some("depends on c, which waits on a person")
        );
        assert!(d
            .now
            .as_deref()
            .unwrap()
            .starts_with("waits on a person through c: "));
        let view = StatusView {
            now: plan.now,
            counts: Default::default(),
            preflight: String::new(),
            next: String::new(),
            tasks,
            runs: vec![],
            last_tick: Some(crate::store::TickRecord {
                id: "t1".into(),
                agent_id: "local:box:1".into(),
                started_at: plan.now,
                finished_at: Some(plan.now),
                outcome: Some("interrupted by SIGINT".into()),
                summary: serde_json::json!({}),
            }),
            ignored_issues: vec![],
            spend: SpendView {
                today_usd: 0.0,
                per_day_usd: 50.0,
                per_task_usd: 5.0,
                per_tick_usd: None,
                by_role: Default::default(),
            },
            parked_executors: vec![],
            paused: None,
            ci: None,
            heartbeat: None,
            held_back: None,
            refused: vec![],
            host: None,
            lessons: vec![],
        };
        let text = status_text(&view, false);
        assert!(text.contains("(interrupted by SIGINT)"), "{text}");
        assert!(
            text.contains("now:  waits on a person through c: `opentiger task retry c`"),
            "{text}"
        );
        let board = super::BoardView::of(&view, "local-git");
        assert_eq!(board.humans.len(), 2, "{:?}", board.humans);
        assert!(board.last_tick.ends_with("(interrupted by SIGINT)"));
        let templates = crate::prompt::Templates::builtin().unwrap();
        let (dashboard, _) = super::render(&templates, &board, None).unwrap();
        assert!(
            dashboard.contains("waits on a person through `c`: `opentiger task retry c`"),
            "{dashboard}"
        );
    }
}

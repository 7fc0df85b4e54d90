//! `task show`'s text: the task, why it is where it is, what happens next, every check that runs
//! on its change and where it comes from, its runs and events, the judge's reviews with what each
//! spent and was refused, and its family's paid runs. Rendering only.
//! Not for: reading those from the state and the plan (`cli::task`), or the command list the
//! runner runs (`verify::plan_commands`, whose order `checks_of` follows).

use std::fmt::Write as _;

use crate::model::{Event, Phase, Run, Task};

/// `task show`'s text with the family's paid runs after the attempts line (issue 27).
pub fn with_family(text: &str, family: &crate::store::FamilyRuns) -> String {
    let line = format!(
        "  family:   {} ({} task(s)): {} paid run(s)\n",
        family.family, family.tasks, family.paid_runs
    );
    after_attempts(text, &line)
}

/// `task show`'s text with `line` after its attempts line (at the end without one).
pub fn after_attempts(text: &str, line: &str) -> String {
    match text.find("  attempts: ") {
        Some(at) => {
            let end = text[at..].find('\n').map_or(text.len(), |n| at + n + 1);
            format!("{}{line}{}", &text[..end], &text[end..])
        }
        None => format!("{text}{line}"),
    }
}

/// `$0.42 (metered: …; the CLI reported $0.00)`, when anything was spent or metered.
pub fn spend_line(
    cost: f64,
    reported: f64,
    metered: Option<&crate::model::network::Metering>,
) -> Option<String> {
    match metered {
        Some(m) => Some(format!(
            "${cost:.4} ({}; the CLI reported ${reported:.4})",
            m.line()
        )),
        None if cost > 0.0 => Some(format!("${cost:.4} as the CLI reported (nothing metered)")),
        None => None,
    }
}

/// `task show`'s text with the judge's reviews of the task: what each spent and was refused.
pub fn with_reviews(text: &str, reviews: &[crate::store::AgentSpendRow]) -> String {
    if reviews.is_empty() {
        return text.to_string();
    }
    let mut out = text.to_string();
    let _ = writeln!(out, "Reviews (newest first):");
    for r in reviews {
        let spend = spend_line(r.cost_usd, r.reported_cost_usd, r.metered.as_ref())
            .unwrap_or_else(|| "$0".to_string());
        let _ = writeln!(
            out,
            "  {} {} of run {}: {spend}",
            r.at,
            r.role,
            r.run_id.as_deref().unwrap_or("-")
        );
        for refusal in &r.refused {
            let _ = writeln!(out, "      refused: {}", refusal.line());
        }
    }
    out
}

pub fn task_text(task: &Task, phase: Phase, next: &str, runs: &[Run], events: &[Event]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Task {}: {}", task.id, task.title);
    let _ = writeln!(out, "  state:    {}", task.state());
    let _ = writeln!(out, "  phase:    {phase}");
    if let Some(r) = &task.status_reason {
        let _ = writeln!(out, "  why:      {r}");
    }
    let _ = writeln!(out, "  next:     {next}");
    let _ = writeln!(
        out,
        "  kind:     {}   role: {}   lane: {}   priority: {}   risk: {}",
        task.kind, task.role, task.lane, task.priority, task.risk
    );
    let _ = writeln!(out, "  goal:     {}", task.goal);
    let list = |v: &[String]| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.join(", ")
        }
    };
    let _ = writeln!(out, "  paths:    {}", list(&task.allowed_paths));
    let _ = writeln!(out, "  commands: {}", list(&task.commands));
    let deps: Vec<String> = task.dependencies.iter().map(|d| d.to_string()).collect();
    let _ = writeln!(out, "  depends:  {}", list(&deps));
    if let Some(p) = &task.parent_task_id {
        let _ = writeln!(out, "  parent:   {p} (rework depth {})", task.rework_depth);
    }
    let _ = writeln!(out, "  attempts: {}", task.attempts.summary());
    if let Some(at) = task.next_attempt_at {
        let _ = writeln!(out, "  not before: {at}");
    }
    if !task.notes.is_empty() {
        let _ = writeln!(
            out,
            "  notes:    {}",
            task.notes.replace('\n', "\n            ")
        );
    }
    let _ = writeln!(
        out,
        "  created:  {}   updated: {}",
        task.created_at, task.updated_at
    );
    if !runs.is_empty() {
        let _ = writeln!(out, "Runs (newest first):");
        for r in runs {
            let _ = writeln!(
                out,
                "  {} {:<9} by {} at {}{}{}",
                r.id,
                r.status,
                r.agent_id,
                r.started_at,
                r.executor
                    .as_deref()
                    .map(|e| format!(" on {e}"))
                    .unwrap_or_default(),
                r.error
                    .as_deref()
                    .map(|e| format!(": {}", crate::model::excerpt::headline(e)))
                    .unwrap_or_default()
            );
            if let Some(line) = spend_line(r.cost_usd, r.reported_cost_usd, r.metered.as_ref()) {
                let _ = writeln!(out, "      spend: {line}");
            }
            for refusal in &r.refused {
                let _ = writeln!(out, "      refused: {}", refusal.line());
            }
        }
        // The newest failure's last output lines: the cause (issue 15); a held change's
        // findings whole, each on its line (issue 48).
        if let Some(error) = runs.iter().find_map(|r| r.error.as_deref()) {
            let findings = crate::model::excerpt::findings(error);
            if findings.is_empty() {
                for line in crate::model::excerpt::tail(error) {
                    let _ = writeln!(out, "      | {line}");
                }
            } else {
                let _ = writeln!(out, "      findings:");
                for line in findings {
                    let _ = writeln!(out, "      - {line}");
                }
            }
        }
    }
    if !events.is_empty() {
        let _ = writeln!(out, "Events:");
        for e in events {
            let moved = match (&e.from_state, &e.to_state) {
                (Some(f), Some(t)) => format!("{f} → {t}: "),
                (None, Some(t)) => format!("→ {t}: "),
                _ => String::new(),
            };
            let _ = writeln!(
                out,
                "  {} {:<16} {}{} [{}]",
                e.at, e.kind, moved, e.reason, e.actor
            );
        }
    }
    out
}

/// One check that runs on a task's change (issue 39): the command, and where it comes from.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct CheckLine {
    pub command: String,
    /// `the task's commands`, `verify.commands`, `verify.by_role.worker`,
    /// `verify.when_changed[0], when a change touches web/**`.
    pub from: String,
}

/// Every check the runner runs on the task's change (and the judge again before it merges), in
/// the order they run: the task's commands, `verify.commands`, `verify.by_role.<role>`, then
/// each `verify.when_changed` rule, which runs only when the change touches its paths.
pub fn checks_of(task: &Task, verify: &crate::config::VerifyConfig) -> Vec<CheckLine> {
    let line = |command: &String, from: String| CheckLine {
        command: command.clone(),
        from,
    };
    let mut lines: Vec<CheckLine> = task
        .commands
        .iter()
        .map(|c| line(c, "the task's commands".to_string()))
        .collect();
    lines.extend(
        verify
            .commands
            .iter()
            .map(|c| line(c, "verify.commands".to_string())),
    );
    if let Some(commands) = verify.by_role.get(&task.role) {
        let from = format!("verify.by_role.{}", task.role);
        lines.extend(commands.iter().map(|c| line(c, from.clone())));
    }
    for (i, rule) in verify.when_changed.iter().enumerate() {
        let from = format!(
            "verify.when_changed[{i}], when a change touches {}",
            rule.paths.join(" or ")
        );
        lines.extend(rule.commands.iter().map(|c| line(c, from.clone())));
    }
    lines
}

/// `text` (of [`task_text`]) with its `commands:` line replaced by every check and its source.
pub fn with_checks(text: &str, checks: &[CheckLine]) -> String {
    let block = if checks.is_empty() {
        "  checks:   - (none: a reviewer judges the change)\n".to_string()
    } else {
        let width = checks.iter().map(|c| c.command.len()).max().unwrap_or(0);
        let mut block = String::new();
        for (i, c) in checks.iter().enumerate() {
            let lead = if i == 0 {
                "  checks:   "
            } else {
                "            "
            };
            let _ = writeln!(block, "{lead}{:<width$}  ({})", c.command, c.from);
        }
        block
    };
    let mut out = String::new();
    for l in text.split_inclusive('\n') {
        if l.starts_with("  commands: ") {
            out.push_str(&block);
        } else {
            out.push_str(l);
        }
    }
    out
}

#[cfg(test)]
mod checks_tests {
    use super::*;
    use crate::config::{VerifyConfig, WhenChanged};

    #[test]
    fn every_check_is_listed_with_where_it_comes_from() {
        let mut task = Task::new(
            crate::model::TaskId::from("t1"),
            "Add sub",
            "sub()",
            crate::time::Timestamp(0),
        );
        task.commands = vec!["./check.sh".into()];
        let mut verify = VerifyConfig {
            commands: vec!["cargo test".into()],
            ..VerifyConfig::default()
        };
        verify
            .by_role
            .insert(crate::model::Role::Worker, vec!["cargo clippy".into()]);
        verify
            .by_role
            .insert(crate::model::Role::Tester, vec!["not mine".into()]);
        verify.when_changed.push(WhenChanged {
            paths: vec!["web/**".into(), "*.js".into()],
            commands: vec!["npm test".into()],
        });
        let checks = checks_of(&task, &verify);
        let text = with_checks("Task t1\n  commands: ./check.sh\n  depends:  -\n", &checks);
        assert_eq!(
            text,
            "Task t1\n\
             \x20 checks:   ./check.sh    (the task's commands)\n\
             \x20           cargo test    (verify.commands)\n\
             \x20           cargo clippy  (verify.by_role.worker)\n\
             \x20           npm test      (verify.when_changed[0], when a change touches web/** or *.js)\n\
             \x20 depends:  -\n"
        );
        let none = with_checks("  commands: -\n", &[]);
        assert_eq!(none, "  checks:   - (none: a reviewer judges the change)\n");
    }
}

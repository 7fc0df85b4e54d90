//! The plan comment (issue 17, planner approval in the thread): the latest plan of the
//! requirement as ONE comment on the requirement's issue — each task with where it may change
//! things and how it is checked, the task graph, and the commands that approve, cancel or replan
//! it. Rendering only.
//! Not for: posting it and editing it in place (`tick::plan_thread`), or acting on those commands
//! (`engine::commands::plan`).

use super::board::plain;
use crate::engine::commands::waits_approval;
use crate::model::Task;

/// The comment for plan `plan` made from `requirement` (a path), its tasks as they are now.
pub fn plan_comment(plan: &str, requirement: &str, tasks: &[Task], budget_usd: f64) -> String {
    let waiting = tasks.iter().filter(|t| waits_approval(t)).count();
    let code = crate::engine::escalation::code_list;
    let mut out = format!(
        "**opentiger planned {} task(s)** from `{}` (plan `{plan}`).\n\n| task | role | may change | checks | now |\n|---|---|---|---|---|\n",
        tasks.len(),
        requirement.replace('`', "'")
    );
    for task in tasks {
        let now = if waits_approval(task) {
            "waits for approval".to_string()
        } else {
            task.state().to_string()
        };
        out.push_str(&format!(
            "| **{}** (`{}`) | {} | {} | {} | {now} |\n",
            plain(&task.title),
            task.id,
            task.role,
            code(&task.allowed_paths, "the policy's paths"),
            code(&task.commands, "`verify.commands`"),
        ));
    }
    out.push('\n');
    // Issue 40: the plan as a picture, its dependencies as arrows.
    if let Some(graph) = super::graph::fenced(tasks) {
        out.push_str(&graph);
        out.push('\n');
    }
    if waiting > 0 {
        out.push_str(&format!(
            "{waiting} task(s) wait for your approval; no issue is opened and nothing runs before it.\n\n\
             → **approve (recommended)**: comment `/opentiger approve` here. Each task gets its issue, then runs; each may spend up to ${budget_usd:.2}.\n\n\
             → **cancel**: comment `/opentiger cancel` here. None of them runs.\n\n\
             → **replan**: comment `/opentiger replan` here. The planner plans the requirement again (this comment shows the new plan)."
        ));
    } else {
        out.push_str("Nothing of this plan waits for approval.");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testkit::{task, TaskExt};
    use crate::model::{BlockReason, TaskStatus};

    #[test]
    fn the_plan_lists_its_tasks_and_the_commands_while_one_waits() {
        let held = |id: &str| {
            task(id).blocked(BlockReason::AwaitingHuman).with(|t| {
                t.needs_approval = true;
                t.title = format!("Do {id} for @alice");
                t.allowed_paths = vec!["src/**".into()];
            })
        };
        let after = |id: &str, dep: &str| held(id).with(|t| t.dependencies = vec![dep.into()]);
        let text = plan_comment(
            "p1",
            "docs/requirement.md",
            &[held("a"), after("b", "a")],
            5.0,
        );
        for needle in [
            "**opentiger planned 2 task(s)** from `docs/requirement.md` (plan `p1`)",
            "| **Do a for @\u{200B}alice** (`a`) | worker | `src/**` | `verify.commands` | waits for approval |",
            "2 task(s) wait for your approval",
            "→ **approve (recommended)**: comment `/opentiger approve` here",
            "`/opentiger cancel`",
            "`/opentiger replan`",
            // Issue 40: the plan's tasks as a graph, the dependency an arrow.
            "```mermaid\nflowchart LR\n  t0[\"a: Do a for #64;alice<br>blocked#40;awaiting_human#41;<br>waits for you\"]:::person\n",
            "  t0 --> t1\n",
        ] {
            assert!(text.contains(needle), "{needle} not in:\n{text}");
        }
        let approved = held("a").with(|t| {
            t.status = TaskStatus::Blocked;
            t.block_reason = Some(BlockReason::IssueLinking);
            t.needs_approval = false;
        });
        let text = plan_comment("p1", "docs/requirement.md", &[approved], 5.0);
        assert!(text.contains("blocked(issue_linking)"), "{text}");
        assert!(
            text.contains("Nothing of this plan waits for approval."),
            "{text}"
        );
        assert!(!text.contains("/opentiger approve"), "{text}");
    }
}

//! Commands on the requirement's issue (issue 17, planner approval in the thread): there the
//! latest plan waits for approval as one comment, and `approve`, `cancel`, `replan` and
//! `status` without a task act on the whole plan. Approving a planned task sends it to
//! `blocked(issue_linking)`: its issue is opened first, then it runs (DESIGN §9, spec §2.1
//! step 10). A named task (`/opentiger retry <id>`) is decided as on its own thread. Not for:
//! showing the plan (`report::plan`, `tick::plan_thread`).

use super::{done, plain_move, refuse, replan, waits_approval, Decision, Effect, Request, Verb};
use crate::model::{BlockReason, Task, TaskId, TaskState};

pub(super) fn decide(
    verb: &Verb,
    req: &Request<'_>,
    number: u64,
    plan: &[TaskId],
    by: &str,
) -> Decision {
    let mut tasks: Vec<&Task> = plan.iter().filter_map(|id| req.tasks.get(id)).collect();
    tasks.sort_by(|a, b| a.id.cmp(&b.id));
    let ids = |list: &[&Task]| {
        list.iter()
            .map(|t| format!("`{}`", t.id))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let Some(first) = tasks.first() else {
        return refuse(format!("#{number} shows no plan with tasks"));
    };
    match verb {
        Verb::Approve => {
            let waiting: Vec<&Task> = tasks.iter().copied().filter(|t| waits_approval(t)).collect();
            if waiting.is_empty() {
                return refuse("No task of this plan waits for approval".to_string());
            }
            let effects = waiting
                .iter()
                .map(|t| Effect::Move {
                    task: t.id.clone(),
                    to: TaskState::blocked(BlockReason::IssueLinking),
                    reset_attempts: false,
                    approved: true,
                    reason: format!("plan approved {by}: its issue is opened, then it runs"),
                })
                .collect();
            done(
                effects,
                format!(
                    "Approved {by}: {} task(s) of the plan ({}); each gets its issue next, then runs.",
                    waiting.len(),
                    ids(&waiting)
                ),
            )
        }
        Verb::Cancel => {
            let open: Vec<&Task> = tasks
                .iter()
                .copied()
                .filter(|t| super::cancel_refusal(t).is_none())
                .collect();
            if open.is_empty() {
                return refuse("No task of this plan can be cancelled".to_string());
            }
            let effects = open
                .iter()
                .map(|t| plain_move(&t.id, TaskState::CANCELLED, format!("plan cancelled {by}")))
                .collect();
            done(
                effects,
                format!(
                    "Cancelled {by}: {} task(s) of the plan ({}). `/opentiger replan` here plans the requirement again.",
                    open.len(),
                    ids(&open)
                ),
            )
        }
        Verb::Replan => replan::decide(first, req, by),
        Verb::Status => Decision {
            outcome: super::Outcome::Done,
            effects: Vec::new(),
            reply: Some(
                tasks
                    .iter()
                    .map(|t| format!("- `{}` ({}): {}", t.id, t.title, t.state()))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
        },
        Verb::Retry
        | Verb::Stop
        | Verb::Pause
        | Verb::Resume
        | Verb::Budget(_)
        | Verb::Help
        | Verb::ApproveAll
        | Verb::ApproveProposal(_)
        | Verb::Hold
        | Verb::Release => {
            refuse(format!(
                "On #{number}, `approve`, `cancel`, `replan` and `status` act on the whole plan; for anything else name the task (`/opentiger retry <task-id>`)"
            ))
        }
    }
}

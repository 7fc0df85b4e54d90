//! Phase 1 of a tick, **claim** (DESIGN §3 step 4), under the state lock: the checks that must
//! hold before anything is claimed, then load → `engine::plan` → `Store::apply_plan`, and the
//! list of work the act phase will do. Only state changes here: on a state branch this may run
//! again on fresher state after a lost race.
//!
//! Not for: running anything slow (agents, git work, the network) — that is [`super::act`].

use super::{Context, Failure, PlanInputs};
use crate::config::AgentRole;
use crate::executor;
use crate::git::Git;
use crate::model::{Mode, Run, RunId, Task, TaskId, TaskKind};
use crate::prompt::JudgeFeedback;
use crate::runner::planner::{run_planner, PlanRequest, PlanResult};
use crate::runner::Act;
use crate::store::{Store, Writer};

/// Checks that must hold before anything is claimed: a claim that cannot run only burns the
/// task's retry budget.
pub(super) fn preflight_checks(ctx: &Context) -> Result<(), Failure> {
    let config = &ctx.config;
    // First: outside a repository, the missing remote would be a misleading cause.
    if !Git::is_repository(&ctx.repo) {
        return Err(Failure::usage(format!(
            "{} is not a git repository\n  fix: run `git init` and commit, or point --repo at a repository",
            ctx.repo.display()
        )));
    }
    match config.mode {
        Mode::Github => {
            let branches = crate::workspace::Branches::new(&Git::new(&ctx.repo), &config.remote);
            if branches.remote.is_none() {
                return Err(Failure::usage(format!(
                    "{}: `mode: github` pushes task branches to the remote `{}`, which {} does not have\n  fix: run in a clone of the repository (actions/checkout), or set `remote:`",
                    ctx.config_source,
                    config.remote,
                    ctx.repo.display()
                )));
            }
            // Issue 36: never push a head with a token that starts CI when scan.ci says not to.
            if let Some(why) = crate::credentials::missing_push_token(config) {
                return Err(Failure::usage(format!("{}: {why}", ctx.config_source)));
            }
        }
        Mode::LocalGit | Mode::Direct => {}
    }
    let git = Git::new(&ctx.repo);
    if git
        .resolve(&format!("refs/heads/{}", config.base_branch))
        .map_err(|e| Failure::tick(e.to_string()))?
        .is_none()
    {
        return Err(Failure::usage(format!(
            "{}: base branch `{}` does not exist in {}\n  fix: set `base_branch` to an existing branch (and make sure it has a commit)",
            ctx.config_source,
            config.base_branch,
            ctx.repo.display()
        )));
    }
    Ok(())
}

/// The agents this plan would start must be runnable: a claim that cannot run only burns the
/// task's retry budget. Checked before anything is applied.
pub(super) fn check_agents(
    ctx: &Context,
    snapshot: &crate::engine::Snapshot,
    plan: &crate::engine::Plan,
) -> Result<(), Failure> {
    let mut roles = Vec::new();
    for d in &plan.decisions {
        let role = match &d.action {
            crate::engine::Action::Claim { .. } => d
                .task_id
                .as_ref()
                .and_then(|id| snapshot.tasks.iter().find(|t| &t.id == id))
                .map(|t| AgentRole::Task(t.role)),
            crate::engine::Action::Judge { .. }
                if ctx.config.agents.effective(AgentRole::Judge).review =>
            {
                Some(AgentRole::Judge)
            }
            _ => None,
        };
        if let Some(role) = role.filter(|r| !roles.contains(r)) {
            roles.push(role);
        }
    }
    // A role may run when any executor of its chain can (issue 9 fallbacks).
    for role in roles {
        let chain = ctx.config.agents.chain(role);
        let mut errors = Vec::new();
        for agent in &chain {
            match executor::build(agent, role, &ctx.repo) {
                Ok(_) => break,
                Err(e) => errors.push(e.to_string()),
            }
        }
        if errors.len() == chain.len() {
            let why = executor::none_usable(role, &chain, &errors);
            return Err(Failure::usage(format!("{}: {why}", ctx.config_source)));
        }
    }
    Ok(())
}

/// A claimed piece of work, with what the act phase needs to know about it.
pub(super) enum Work {
    Run {
        task: Task,
        run_id: RunId,
        brief: Box<crate::runner::Brief>,
    },
    Review {
        task: Task,
        run: Box<Run>,
        reviews: u32,
        issue: Option<Box<crate::model::IssueSpec>>,
        approved_by: Vec<String>,
        /// github mode: what is read again just before the merge (issue 26).
        last_word: Option<super::people::LastWordCheck>,
        /// Issue 36 (`scan.ci: after-review`): reviewed before any CI ran on the head.
        before_ci: bool,
        /// Issue 36: the judge approved this head before CI ran (what it said): CI passed since,
        /// so it is merged without a second review.
        approved_before: Option<String>,
        /// The review window is open until then: approve, but do not merge (issue 38).
        merge_after: Option<crate::time::Timestamp>,
    },
    Plan(Box<PlanWork>),
    /// Open the GitHub issue mirroring a planned task.
    OpenIssue(Task),
    /// Close a PR whose goal is recreated: (task, PR, the recreating task).
    ClosePull(TaskId, u64, TaskId),
    /// Comment on a PR whose CI never started (and dispatch its CI once).
    HealCi(crate::store::HealCi),
    /// Point a PR at the base branch: (task, PR, base).
    RetargetPull(TaskId, u64, String),
}

/// What a planner run needs, read under the lock in the claim phase.
pub struct PlanWork {
    pub requirement: String,
    pub inputs: PlanInputs,
    pub existing: Vec<Task>,
    pub feedback: Vec<JudgeFeedback>,
}

impl PlanWork {
    /// Gathers the planner's inputs from the state and the repository.
    pub fn gather(ctx: &Context, store: &Store) -> Result<Option<PlanWork>, Failure> {
        let Some(requirement) = ctx.requirement_text().filter(|t| !t.trim().is_empty()) else {
            return Ok(None);
        };
        let inputs = ctx.plan_inputs(&requirement, store)?;
        let existing = store.list_tasks(&crate::store::TaskFilter::default())?;
        let feedback = store
            .recent_feedback(5)?
            .into_iter()
            .map(|f| JudgeFeedback {
                task_title: f.task_title,
                verdict: f.verdict,
                summary: f.summary,
                findings: f.findings,
            })
            .collect();
        Ok(Some(PlanWork {
            requirement,
            inputs,
            existing,
            feedback,
        }))
    }

    pub fn run(&self, act: &Act<'_>, now: crate::time::Timestamp) -> PlanResult {
        run_planner(
            act,
            &PlanRequest {
                requirement: &self.requirement,
                requirement_hash: &self.inputs.requirement_hash,
                base_head: &self.inputs.base_head,
                signature: &self.inputs.signature,
                agent: self.inputs.agent,
                existing: &self.existing,
                feedback: self.feedback.clone(),
                now,
            },
        )
    }
}

/// What the claim phase hands to the act phase.
pub(super) struct Claimed {
    /// The last heartbeat is an hour old (or missing): record one even if the tick is quiet.
    pub(super) heartbeat_due: bool,
    pub(super) decisions: usize,
    pub(super) lines: Vec<String>,
    pub(super) work: Vec<Work>,
    /// Executors parked on a quota, as the plan saw them: runs choose their executor with them.
    pub(super) executor_waits: crate::engine::fallback::ExecutorWaits,
    /// What a merge's verdict says about CI when there is none to wait for.
    pub(super) ci_note: Option<&'static str>,
    /// The longest this round's work may take (issue 38).
    pub(super) bound_ms: crate::time::Millis,
    /// The families of the tasks whose runs were claimed (issue 38: they had their turn).
    pub(super) families: Vec<TaskId>,
    /// The host snapshot and lessons as the state holds them (issue 52), for the prompts.
    pub(super) learned: crate::model::learned::Learned,
}

pub(super) fn claim(ctx: &Context, store: &mut Store) -> Result<Claimed, Failure> {
    let (snapshot, plan) = ctx.plan(store)?;
    claim_plan(ctx, store, &snapshot, &plan)
}

/// Applies a plan already made on this store (a round after the first, issue 38), and lists
/// the work it claimed.
pub(super) fn claim_plan(
    ctx: &Context,
    store: &mut Store,
    snapshot: &crate::engine::Snapshot,
    plan: &crate::engine::Plan,
) -> Result<Claimed, Failure> {
    let writer = Writer {
        tick_id: Some(&ctx.tick_id),
        actor: ctx.agent_id.as_str(),
        now: ctx.now,
    };
    check_agents(ctx, snapshot, plan)?;
    let mut lines = Vec::new();
    let mut decisions = 0;
    for d in plan.decisions.iter().filter(|d| d.writes()) {
        decisions += 1;
        let task = d
            .task_id
            .as_ref()
            .map(|id| format!("{id}: "))
            .unwrap_or_default();
        lines.push(format!(
            "[{}] {task}{}",
            d.rule,
            crate::report::describe_action(d)
        ));
        // Issue 51: a task's move, in words (claims and reviews say what ran when recorded).
        if let (crate::engine::Action::Transition { to, .. }, Some(id)) = (&d.action, &d.task_id) {
            let title = snapshot
                .tasks
                .iter()
                .find(|t| &t.id == id)
                .map(|t| format!(" {:?}", crate::report::truncate(&t.title, 50)))
                .unwrap_or_default();
            lines.push(format!(
                "{id}{title}: {}: {}",
                super::report::next_words(*to),
                d.reason
            ));
        }
    }
    lines.extend(crate::report::why_idle(plan, &snapshot.tasks));
    // Issue 27: fewer runs than the tick allows say what held the rest back.
    lines.extend(
        plan.held_back()
            .map(|l| format!("[{}] {l}", crate::engine::HELD_BACK)),
    );
    let applied = store.apply_plan(plan, writer)?;
    let mut work = Vec::new();
    for (task_id, run_id) in &applied.claims {
        let task = store.task(task_id)?;
        let brief = Box::new(crate::runner::Brief::read(store, &task, run_id)?);
        work.push(Work::Run {
            task,
            run_id: run_id.clone(),
            brief,
        });
    }
    for (task_id, run_id, before_ci) in &applied.judge {
        let task = store.task(task_id)?;
        let Some(run) = store.run(run_id)? else {
            continue;
        };
        let root = match (task.kind, &task.parent_task_id) {
            (TaskKind::Autofix | TaskKind::AutofixConflict, Some(parent)) => parent.clone(),
            _ => task.id.clone(),
        };
        let reviews = store.reviews_of_lineage(&root)?;
        let issue = match task.issue_number {
            Some(n) => store.issue_spec(n)?.map(Box::new),
            None => None,
        };
        let last_word = match run.pr_number {
            Some(pr) => Some(super::people::LastWordCheck::read(store, &task, pr)?),
            None => None,
        };
        let head = run.head_sha.clone().unwrap_or_default();
        let approved_by = last_word
            .as_ref()
            .map(|l| l.approved_by(ctx, &head))
            .unwrap_or_default();
        // An approval of this very head stands (issue 36: reviewed before CI ran, CI passed
        // since; issue 38: approved inside the review window, which has passed): the merge
        // asks no agent again.
        let approved_before = match run.head_sha.as_deref() {
            Some(head) if !before_ci => store.judge_approval(run_id, head)?,
            _ => None,
        };
        let merge_after = plan.decisions.iter().find_map(|d| match &d.action {
            crate::engine::Action::Judge {
                run_id: judged,
                merge_after,
                ..
            } if judged == run_id => *merge_after,
            _ => None,
        });
        work.push(Work::Review {
            task,
            run: Box::new(run),
            reviews,
            issue,
            approved_by,
            last_word,
            before_ci: *before_ci,
            approved_before,
            merge_after,
        });
    }
    if applied.start_planner {
        if let Some(plan) = PlanWork::gather(ctx, store)? {
            work.push(Work::Plan(Box::new(plan)));
        }
    }
    for task_id in &applied.open_issues {
        work.push(Work::OpenIssue(store.task(task_id)?));
    }
    for (task_id, pr, by) in &applied.close_pulls {
        work.push(Work::ClosePull(task_id.clone(), *pr, by.clone()));
    }
    for heal in &applied.heal_ci {
        work.push(Work::HealCi(heal.clone()));
    }
    for (task, pr, base) in &applied.retarget_pulls {
        work.push(Work::RetargetPull(task.clone(), *pr, base.clone()));
    }
    let heartbeat_due = store
        .last_tick()?
        .is_none_or(|t| ctx.now.minus(t.started_at) >= crate::time::HOUR);
    let tasks: std::collections::BTreeMap<TaskId, Task> = snapshot
        .tasks
        .iter()
        .map(|t| (t.id.clone(), t.clone()))
        .collect();
    let families = applied
        .claims
        .iter()
        .map(|(task_id, _)| crate::engine::fairness::family_of(&tasks, task_id))
        .collect();
    Ok(Claimed {
        heartbeat_due,
        decisions,
        lines,
        work,
        bound_ms: plan.bound_ms,
        families,
        executor_waits: snapshot.observations.executor_waits.clone(),
        learned: store.learned()?,
        ci_note: (snapshot.observations.expected_checks.source
            == crate::engine::gate::ExpectedSource::Nothing
            && ctx.config.merge.require_checks)
            .then_some(crate::engine::gate::NO_CI_NOTE),
    })
}

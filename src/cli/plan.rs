//! `opentiger plan [--force]`: turn the requirement into tasks now. Refused while any backlog
//! exists (the spec's 409: planning comes after the backlog, startup-patterns.md "Planner
//! Startup Guard"); the same requirement and base are not planned twice unless `--force`.
//! Not for: gathering the inputs and running the planner agent (`tick::claim`'s `PlanWork`,
//! `runner::planner`), validating its plan (`planner`), or when a tick plans on its own
//! (`engine::planner_gate`).

use clap::Args;

use super::{CmdResult, Context, Failure};
use crate::engine::PreflightInputs;
use crate::model::PlanStatus;
use crate::prompt::Templates;
use crate::store::{TaskFilter, Writer};
use crate::tick::{plan_line, PlanWork};

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// Plan even if this requirement and base were planned before, or the planner failed on them.
    #[arg(long)]
    pub force: bool,
}

pub fn run(ctx: &Context, args: &PlanArgs) -> CmdResult {
    let executor_waits;
    let learned;
    let mut work = {
        let store = ctx.read_store()?;
        learned = store.learned()?;
        let active = store.list_tasks(&TaskFilter::default())?;
        let observations = ctx.observations(&store)?;
        executor_waits = observations.executor_waits.clone();
        let inputs = PreflightInputs::from_tasks(active.iter(), &observations);
        if inputs.i() || inputs.p() || inputs.l() {
            return Err(Failure::usage(format!(
                "not planning: a backlog exists ({} local task(s), {} awaiting the judge, {} backlog issue(s), {} open PR(s))\n  fix: let the loop finish them (`opentiger tick`), or cancel them; planning comes after the backlog",
                inputs.local_backlog,
                inputs.pending_judge,
                inputs.issue_backlog,
                inputs.open_prs
            )));
        }
        let Some(work) = PlanWork::gather(ctx, &store)? else {
            return Err(Failure::usage(format!(
                "{}: the requirement file is missing or empty\n  fix: write it (Goal, Acceptance Criteria, Allowed Paths, ...) or set `requirement:` in .opentiger.yml",
                ctx.repo.join(&ctx.config.requirement).display()
            )));
        };
        if !args.force {
            let history = store.plan_history(Some(&work.inputs.signature))?;
            if let Some(last) = history
                .last_created
                .filter(|p| p.signature == work.inputs.signature)
            {
                outln!(
                    "Already planned: plan {} at {} created {} task(s) from this requirement and base. `--force` plans again.",
                    last.id, last.created_at, last.task_count
                );
                return Ok(());
            }
        }
        work
    };
    if args.force {
        work.inputs.signature =
            crate::model::short_hash(&["forced", &work.inputs.signature, &ctx.now.0.to_string()]);
    }
    if work.inputs.agent && !crate::git::Git::is_repository(&ctx.repo) {
        return Err(Failure::usage(format!(
            "{} is not a git repository: the planner agent works on the base branch",
            ctx.repo.display()
        )));
    }
    let templates = Templates::load(&ctx.repo).map_err(|e| Failure::usage(e.to_string()))?;
    let redactor = ctx.redactor();
    let probed = crate::tick::learned::refresh(ctx, &learned);
    let learned = crate::tick::learned::with_host(learned, probed.as_ref());
    let act = ctx.act(&templates, &redactor, &executor_waits, &learned);
    let plan = work.run(&act, ctx.now);
    let writer = Writer {
        tick_id: Some(&ctx.tick_id),
        actor: ctx.agent_id.as_str(),
        now: ctx.now,
    };
    let recorded = ctx.write_state("plan", |store| {
        if let Some(snapshot) = &probed {
            store.save_host_snapshot(snapshot)?;
        }
        if let Some(spend) = &plan.spend {
            store.record_agent_spend(spend, writer)?;
        }
        Ok(store.record_plan(&plan.record, &plan.tasks, writer)?)
    })?;
    outln!("{}", plan_line(&plan));
    if !recorded {
        outln!("(planned meanwhile by another command: nothing created)");
    }
    match plan.record.status {
        PlanStatus::Created => Ok(()),
        PlanStatus::Rejected | PlanStatus::Failed => Err(Failure::tick(format!(
            "the plan was not created; `opentiger status` shows it, and the next attempt is made by `opentiger plan` or a tick after {} minutes",
            ctx.config.planner.replan_interval_minutes
        ))),
    }
}

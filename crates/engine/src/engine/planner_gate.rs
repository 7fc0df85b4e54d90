//! The replan gate (spec §2.5 "shouldTriggerReplan", startup-patterns.md): whether the planner
//! runs in this plan — inputs changed since the last plan, the interval passed, failures on
//! these inputs within their bound, and (issue 38) not yet run in this tick and able to end
//! before the tick's deadline.
//!
//! Not for: running the planner or reading the requirement (the shell does; the signature of
//! its inputs arrives as an observation).

use super::{Action, PreflightInputs, Working};

/// The replan gate (spec §2.5 "shouldTriggerReplan", startup-patterns.md): the preflight allows
/// planning; plan only if the inputs changed since the last plan (no-diff guard, permanent here
/// instead of a 10-minute window), the interval passed, and failures on these inputs are within
/// their bound.
pub(super) fn planner_gate(w: &mut Working<'_>, inputs: &PreflightInputs) {
    let plans = &w.snapshot.plans;
    let Some(signature) = w.snapshot.observations.plan_signature.clone() else {
        return;
    };
    let config = &w.config.planner;
    if let Some(last) = plans
        .last_created
        .as_ref()
        .filter(|p| p.signature == signature)
    {
        let reason = format!(
            "no_diff: requirement and base unchanged since plan {} at {} ({} task(s)); nothing new to plan",
            last.id, last.created_at, last.task_count
        );
        w.decide(
            None,
            "planner.no_diff",
            Action::Wait { until: None },
            reason,
        );
        return;
    }
    if plans.failures_for >= config.max_failed_attempts {
        let errors = plans
            .last_attempt
            .as_ref()
            .map(|p| p.errors.join("; "))
            .unwrap_or_default();
        let reason = format!(
            "the planner failed {} times on this requirement (limit {}): {errors}. Decide: fix the requirement or the planner agent, then `opentiger plan --force`",
            plans.failures_for, config.max_failed_attempts
        );
        w.decide(None, "planner.failed", Action::Wait { until: None }, reason);
        return;
    }
    let interval = i64::from(config.replan_interval_minutes) * crate::time::MINUTE;
    if let Some(next) = plans
        .last_attempt
        .as_ref()
        .map(|p| p.created_at.plus(interval))
        .filter(|t| *t > w.now)
    {
        let reason = format!(
            "replan interval: the last planner run was less than {} minutes ago; next after {next}",
            config.replan_interval_minutes
        );
        w.decide(
            None,
            "planner.interval",
            Action::Wait { until: Some(next) },
            reason,
        );
        return;
    }
    // Issue 38: the planner runs at most once per tick, and only when it can end in time.
    if w.snapshot.observations.tick.planned {
        let reason = "the planner ran in an earlier round of this tick: its tasks are planned;                       nothing new to plan until the next tick"
            .to_string();
        w.decide(
            None,
            "planner.ran_this_tick",
            Action::Wait { until: None },
            reason,
        );
        return;
    }
    if let Err(too_long) = w.take_time(super::rounds::planner_bound(w.config)) {
        let reason = format!(
            "{}; {}",
            too_long.text("the planner"),
            super::rounds::TooLong::FIX
        );
        w.decide(
            None,
            super::rounds::TIME_RULE,
            Action::Wait { until: None },
            reason,
        );
        return;
    }
    w.decide(
        None,
        "preflight.start_planner",
        Action::StartPlanner,
        format!("requirement present and no backlog ({}), inputs changed since the last plan: plan new tasks", inputs.flags()),
    );
}

//! The judge agent's review of a change (DESIGN §8): its prompt with the diff against the base
//! and the worker's summary as data, the checks that passed and what the threat scan found, the
//! agent started by the launch path (`launch.rs`) in the review's workspace, which it reads but
//! may not write, behind its own proxy,
//! and its answer read as a verdict, findings and a word per acceptance criterion — redacted,
//! and held by the threat scan when it speaks to agents.
//!
//! Not here: merging and checking the change before the review, and what the verdict leads to
//! (`judge.rs`, `judge_merge.rs`); reading the answer's JSON (`verdict_answer.rs`).

use super::{parse_criteria, parse_verdict, Review, ReviewBrief, Trace};
use crate::config::AgentRole;
use crate::engine::import::acceptance_criteria;
use crate::executor;
use crate::model::{CriterionCheck, Run, Task};
use crate::runner::Act;
use crate::workspace::{diff_text, Workspace};

/// Asks the judge agent; `Err` when it could not give a verdict (never read as approval). What
/// it spent goes into `trace`.
#[allow(clippy::too_many_arguments)]
pub(super) fn review(
    act: &Act<'_>,
    task: &Task,
    run: &Run,
    ws: &Workspace,
    (base_head, merged): (&str, &str),
    (verified, findings): (&[String], &[crate::scan::Finding]),
    asked: ReviewBrief<'_>,
    trace: &mut Trace,
) -> Result<Review, String> {
    let chosen = crate::runner::executors::choose(act, AgentRole::Judge)?;
    let (agent, exec) = (&chosen.agent, &chosen.exec);
    let diff = diff_text(ws.repo(), base_head, merged, 60_000).map_err(|e| e.to_string())?;
    let scratch = ws.scratch();
    let prompt = crate::runner::prompts::judge(
        act,
        task,
        asked.issue,
        (verified, findings),
        (&diff, run.summary.as_deref().unwrap_or_default()),
        (
            &scratch.join("result.json"),
            executor::abilities(agent.executor),
        ),
    )
    .map_err(|f| f.message)?;
    // The reviewer reads its workspace; what it does there is never read back.
    let launch = crate::runner::launch::AgentLaunch::of(
        act,
        AgentRole::Judge,
        &chosen,
        crate::runner::launch::Folders {
            workspace: &ws.path,
            writes: false,
            run_folder: ws.run_folder(),
            scratch: &scratch,
        },
        vec![
            ("OPENTIGER_ROLE", "judge".to_string()),
            ("OPENTIGER_TASK_ID", task.id.to_string()),
            ("OPENTIGER_RUN_ID", run.id.to_string()),
            ("OPENTIGER_WORKSPACE", ws.path.display().to_string()),
        ],
    );
    let ran = crate::runner::launch::run_agent(
        launch,
        exec.as_ref(),
        (task, &run.id),
        prompt,
        asked.reviews_so_far,
    )
    .map_err(|f| f.message)?;
    let seen = ran.net;
    let spend = trace.spend(task, run);
    spend.executor = Some(chosen.label.clone());
    crate::runner::network::account_agent(spend, &seen.traffic, &ran.result);
    let result = ran.result.map_err(|e| e.to_string())?;
    if let (Some(hit), false) = (&ran.limit, result.exit == executor::AgentExit::Finished) {
        return Err(hit.failure("the judge agent"));
    }
    let stopped = seen.stop.as_ref().map(|(_, why)| why.as_str());
    crate::runner::agent::gave_no_answer("judge", &result, stopped, agent, act.redactor)?;
    let value = result.result.ok_or_else(|| {
        result
            .result_error
            .unwrap_or_else(|| crate::runner::verdict_answer::missing(result.summary.as_deref()))
    })?;
    // The judge's words are stored, posted and printed: no secret it echoed goes with them.
    let value = act.redactor.redact_json(value);
    let (verdict, summary, findings) = parse_verdict(&value)?;
    // Issue 36: the judge's words are posted and become the next agent's brief: words aimed at
    // agents, or hidden text, make the review fail (never an approval).
    if act.config.scan.rules {
        let mut scanner = crate::scan::Scanner::new(act.redactor.values());
        scanner.text("the judge's summary", &summary);
        for finding in &findings {
            scanner.text("the judge's findings", finding);
        }
        let flagged = scanner.findings();
        if !flagged.is_empty() {
            return Err(format!(
                "the judge's review was held by the threat scan: {}",
                crate::scan::summary(&flagged)
            ));
        }
    }
    let items = asked
        .issue
        .map(|spec| acceptance_criteria(&spec.body))
        .unwrap_or_default();
    let answers = parse_criteria(&value);
    let criteria = items
        .into_iter()
        .enumerate()
        .map(|(i, item)| {
            let answer = answers.iter().find(|(n, _, _)| *n == i + 1);
            CriterionCheck {
                item,
                met: answer.map(|(_, met, _)| *met),
                reason: answer
                    .map(|(_, _, why)| act.redactor.excerpt(why, 300))
                    .unwrap_or_default(),
            }
        })
        .collect();
    Ok(Review {
        verdict,
        summary,
        findings,
        criteria,
    })
}

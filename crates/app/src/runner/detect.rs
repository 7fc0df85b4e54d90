//! The threat scan's detection agent (issue 36, `scan.agent: true`): asked about a change before
//! it leaves the job, with its own prompt (`templates/detector.md.hbs`) fencing the change and the
//! agent's texts as data, in an empty folder (no repository, nothing to run), confined, behind its
//! own network door. A `flagged` answer holds the change like a rule's finding; so does one that
//! cannot be read (never a pass). Its spend is the run's. Not for: the rules' scan (`scan`, fed by
//! `runner::content`) or what a hold does to the task (`engine::scan`, `runner::work_held`).

use super::checks::CheckFailure;
use super::Act;
use crate::config::AgentRole;
use crate::executor::AgentExit;
use crate::model::{FailureCode, RunId, Task};
use crate::scan::{Finding, Rule};
use crate::store::RunRecord;

/// Asks the detection agent about the change `from..to` of the runner's repository and the
/// agent's `texts`; the findings it flags (empty: clean).
pub(super) fn detect(
    act: &Act<'_>,
    task: &Task,
    run_id: &RunId,
    (from, to): (&str, &str),
    texts: &[(&str, &str)],
    record: &mut RunRecord,
) -> Result<Vec<Finding>, CheckFailure> {
    let failed = |message: String| CheckFailure {
        code: FailureCode::SetupOrBootstrapIssue,
        message: format!("the threat scan's detection agent: {message}"),
    };
    let role = AgentRole::Detector;
    let chosen = super::executors::choose(act, role).map_err(|e| failed(e.message))?;
    let exec = &chosen.exec;
    let repo = crate::git::Git::new(act.repo);
    let diff =
        crate::workspace::diff_text(&repo, from, to, 60_000).map_err(|e| failed(e.to_string()))?;
    let folder = crate::scratch::private_dir("detect").map_err(|e| failed(e.to_string()))?;
    let (empty, scratch) = (folder.path().join("work"), folder.path().join("tmp"));
    for dir in [&empty, &scratch] {
        std::fs::create_dir(dir).map_err(|e| failed(e.to_string()))?;
    }
    let result_file = scratch.join("result.json");
    let data = crate::prompt::DetectorPrompt {
        diff: act.redactor.redact(&diff),
        texts: texts
            .iter()
            .filter(|(_, text)| !text.trim().is_empty())
            .map(|(place, text)| crate::prompt::PlacedText {
                place: place.to_string(),
                text: act.redactor.redact(text),
            })
            .collect(),
        result_file: Some(result_file.display().to_string()),
    };
    let prompt = act
        .templates
        .render_detector(&data)
        .map_err(|e| failed(e.to_string()))?;
    let launch = super::launch::AgentLaunch::of(
        act,
        role,
        &chosen,
        super::launch::Folders {
            workspace: &empty,
            writes: false,
            run_folder: folder.path(),
            scratch: &scratch,
        },
        vec![
            ("OPENTIGER_ROLE", "detector".to_string()),
            ("OPENTIGER_TASK_ID", task.id.to_string()),
            ("OPENTIGER_RUN_ID", run_id.to_string()),
            ("OPENTIGER_WORKSPACE", empty.display().to_string()),
        ],
    );
    let ran = super::launch::run_agent(launch, exec.as_ref(), (task, run_id), prompt, 0)
        .map_err(|f| failed(f.message))?;
    let seen = ran.net;
    let (usd, tokens) = super::network::reported(&ran.result);
    add_spend(record, &seen.traffic, usd, tokens);
    let result = ran.result.map_err(|e| failed(e.to_string()))?;
    if let (Some(hit), false) = (&ran.limit, result.exit == AgentExit::Finished) {
        return Err(failed(hit.failure("it")));
    }
    if let Some((_, why)) = seen.stop {
        return Err(failed(format!(
            "stopped: {}",
            act.redactor.excerpt(&why, 300)
        )));
    }
    if result.exit != AgentExit::Finished || result.failure.is_some() {
        let why = result
            .failure
            .as_ref()
            .map_or_else(|| format!("{:?}", result.exit), |f| f.message.clone());
        return Err(failed(format!(
            "it did not answer ({}); the change is not let out unseen",
            act.redactor.excerpt(&why, 300)
        )));
    }
    let value = result.result.ok_or_else(|| {
        failed(
            result
                .result_error
                .unwrap_or_else(|| "it wrote no answer to $OPENTIGER_RESULT_FILE".to_string()),
        )
    })?;
    parse_answer(&act.redactor.redact_json(value)).map_err(failed)
}

/// `{"verdict": "clean" | "flagged", "findings": [{"place": "...", "why": "..."}]}`: the
/// findings of a `flagged` answer (a flagged answer with none still holds the change).
fn parse_answer(value: &serde_json::Value) -> Result<Vec<Finding>, String> {
    let verdict = value
        .get("verdict")
        .and_then(|v| v.as_str())
        .ok_or("its answer has no \"verdict\" (\"clean\" or \"flagged\")")?;
    match verdict {
        "clean" => Ok(Vec::new()),
        "flagged" => {
            let mut findings: Vec<Finding> = value
                .get("findings")
                .and_then(|f| f.as_array())
                .into_iter()
                .flatten()
                .take(20)
                .map(|f| {
                    let text = |key: &str| {
                        f.get(key)
                            .and_then(|v| v.as_str())
                            .unwrap_or("")
                            .lines()
                            .next()
                            .unwrap_or("")
                            .chars()
                            .take(200)
                            .collect::<String>()
                    };
                    Finding {
                        place: format!("the detection agent on {}", text("place")),
                        line: None,
                        rule: Rule::Flagged,
                        detail: text("why"),
                    }
                })
                .collect();
            if findings.is_empty() {
                findings.push(Finding {
                    place: "the detection agent".to_string(),
                    line: None,
                    rule: Rule::Flagged,
                    detail: "flagged the change without saying where".to_string(),
                });
            }
            Ok(findings)
        }
        other => Err(format!(
            "its verdict is {other:?}, not \"clean\" or \"flagged\""
        )),
    }
}

/// The detection agent's spend is the run's: added to what the run's own agent spent.
fn add_spend(
    record: &mut RunRecord,
    traffic: &crate::egress::Traffic,
    reported_usd: f64,
    reported_tokens: (i64, i64),
) {
    crate::model::network::merge_refusals(&mut record.refused, &traffic.refused);
    let metered = &traffic.metering;
    record.reported_cost_usd += reported_usd;
    record.cost_usd += reported_usd.max(metered.usd);
    let total = metered.total();
    let clamp = |n: u64| i64::try_from(n).unwrap_or(i64::MAX);
    record.input_tokens += reported_tokens.0.max(clamp(total.input));
    record.output_tokens += reported_tokens.1.max(clamp(total.output));
    if !metered.is_empty() {
        record
            .metered
            .get_or_insert_with(Default::default)
            .add(metered);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_read_strictly() {
        let clean = serde_json::json!({"verdict": "clean", "findings": []});
        assert_eq!(parse_answer(&clean), Ok(Vec::new()));
        let flagged = serde_json::json!({"verdict": "flagged", "findings": [{"place": "build.rs:3", "why": "downloads a binary at build time\nand runs it"}]});
        let found = parse_answer(&flagged).unwrap();
        assert_eq!(found.len(), 1);
        assert_eq!(
            found[0].to_string(),
            "the detection agent on build.rs:3: downloads a binary at build time"
        );
        let bare = serde_json::json!({"verdict": "flagged"});
        assert_eq!(
            parse_answer(&bare).unwrap().len(),
            1,
            "flagged without findings still holds"
        );
        for broken in [
            serde_json::json!({}),
            serde_json::json!({"verdict": "approve"}),
        ] {
            assert!(parse_answer(&broken).is_err(), "{broken}");
        }
    }
}

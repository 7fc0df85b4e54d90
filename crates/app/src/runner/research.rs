//! A research run (issue 28): the agent answers the task's issue with a report, read-only. It
//! works in a workspace of the base commit (no branch is made, nothing is committed or
//! pushed), confined so that it may write only its scratch folder and private home
//! (`runner::read_only_domain`); a change found in its workspace afterwards fails the run. Then its report
//! and result file are read with bounds, checked (`engine::research::check_report`),
//! redacted, capped, and its `path:line` evidence linked to the base commit in github mode.
//!
//! Not for: posting the report or approving proposals (`tick::people`), or deciding what
//! the outcome does to the task (`engine::outcome`).

use std::collections::BTreeSet;
use std::path::Path;

use super::agent::{run_agent_with, setup, AgentJob, WorkResult};
use super::checks::CheckFailure;
use super::{Act, Brief, Delivery};
use crate::engine::import::acceptance_criteria;
use crate::engine::research::{self, Answer, CriterionRef};
use crate::git::Git;
use crate::model::{FailureCode, Mode, Proposal, ResearchReport, RunId, Task};
use crate::store::RunRecord;
use crate::workspace::{Branches, Workspace};

/// The most of `report.md` read; the comment holds far less ([`research::REPORT_CAP`]).
const REPORT_MAX: u64 = 256 * 1024;

/// What the agent left in its scratch folder.
struct Written {
    report: Option<String>,
    result: Option<serde_json::Value>,
    summary: Option<String>,
}

/// Runs one claimed research task (`runner::work::run_task` records a failure as any run's:
/// retried under the task's budget).
pub(super) fn research(
    act: &Act<'_>,
    task: &Task,
    run_id: &RunId,
    brief: &Brief,
    record: &mut RunRecord,
) -> Result<WorkResult, CheckFailure> {
    let git = Git::new(act.repo);
    let base = &act.config.base_branch;
    let base_ref = match act.config.mode {
        // Direct mode works in the checkout itself: its commit is the base.
        Mode::Direct => "HEAD".to_string(),
        Mode::LocalGit | Mode::Github => {
            let branches = Branches::new(&git, &act.config.remote);
            if act.delivery == Delivery::Push {
                branches.refresh(&[base]).map_err(setup)?;
            }
            branches.tracking(base)
        }
    };
    let sha = git
        .run(&["rev-parse", "--verify", &format!("{base_ref}^{{commit}}")])
        .map_err(setup)?;
    let ws = Workspace::open_detached(&git, &format!("research-{}", task.id.short()), &sha)
        .map_err(setup)?;
    record.start_sha = Some(sha.clone());
    let result = (|| {
        let job = AgentJob {
            act,
            task,
            run_id,
            brief,
            ws: &ws,
            writes_workspace: false,
        };
        let sections = super::prompts::context_sections(act, task);
        record.prompt = Some(super::prompts::size_of("", &sections));
        let written = run_agent_with(
            &job,
            record,
            |scratch, can| {
                if !can.writes_result_file {
                    return Err(cannot_write_a_report());
                }
                let report = scratch.join("report.md");
                let result = scratch.join("result.json");
                let prompt = super::prompts::research(
                    act,
                    task,
                    brief,
                    (&sha, &sections),
                    (&report, &result),
                )?;
                let env = vec![("OPENTIGER_REPORT_FILE", report.display().to_string())];
                Ok((prompt, env))
            },
            |result, scratch| {
                Ok(Written {
                    report: read_report(&scratch.join("report.md"))?,
                    result: result.result.clone(),
                    summary: result.summary.clone(),
                })
            },
        )?;
        unchanged(&ws, act.config)?;
        report_of(act, task, run_id, brief, &sha, written, record)
    })();
    drop(ws);
    result
}

/// A research run's agent must write its report and result to files outside the workspace;
/// aider only edits the files of its chat and answers. Refused before it starts (nothing spent),
/// as a configuration a person fixes: retrying would fail the same way.
fn cannot_write_a_report() -> CheckFailure {
    CheckFailure {
        code: FailureCode::AgentConfig,
        message: "a research run needs an agent that writes its report to a file, and aider only edits the repository's files\n  fix: set `agents.research.executor` to claude-code, codex or opencode in .opentiger.yml".to_string(),
    }
}

/// `report.md` as text: a regular file only, within [`REPORT_MAX`].
fn read_report(path: &Path) -> Result<Option<String>, CheckFailure> {
    match crate::bounded::read_regular(path, REPORT_MAX, "256 KiB") {
        Ok(bytes) => Ok(bytes.map(|b| String::from_utf8_lossy(&b).into_owned())),
        Err(refused) => Err(CheckFailure {
            code: FailureCode::PolicyViolation,
            message: format!("policy_violation: the research report.md {refused}"),
        }),
    }
}

/// The workspace is read-only to the agent: where the sandbox could not make it so, a change
/// found after the run still fails it.
fn unchanged(ws: &Workspace, config: &crate::config::Config) -> Result<(), CheckFailure> {
    let change = super::agent::import(ws, config)?;
    if change.is_empty() {
        return Ok(());
    }
    let changed: Vec<&str> = change
        .changes
        .iter()
        .take(10)
        .map(|c| c.path.as_str())
        .collect();
    Err(CheckFailure {
        code: FailureCode::PolicyViolation,
        message: format!(
            "policy_violation: the research agent changed its read-only workspace: {}",
            changed.join(", ")
        ),
    })
}

/// The run's report, checked, redacted, linked and capped, as the run's success.
fn report_of(
    act: &Act<'_>,
    task: &Task,
    run_id: &RunId,
    brief: &Brief,
    sha: &str,
    written: Written,
    record: &mut RunRecord,
) -> Result<WorkResult, CheckFailure> {
    let value = written
        .result
        .map(|v| act.redactor.redact_json(v))
        .unwrap_or(serde_json::Value::Null);
    let criteria = brief
        .issue
        .as_ref()
        .map(|spec| acceptance_criteria(&spec.body))
        .unwrap_or_default();
    let checks = research::check_report(written.report.as_deref(), &criteria, &answers(&value))
        .map_err(|message| CheckFailure {
            code: FailureCode::ModelOrUnknownFailure,
            message,
        })?;
    // Issue 36: the report is posted; what in it speaks to agents or hides text holds it.
    if act.config.scan.rules {
        let mut scanner = crate::scan::Scanner::new(act.redactor.values());
        scanner.text(
            "the research report",
            written.report.as_deref().unwrap_or_default(),
        );
        let findings = scanner.findings();
        if !findings.is_empty() {
            return Err(CheckFailure {
                code: FailureCode::ThreatFlagged,
                message: format!(
                    "the research report was held by the threat scan and not posted: {}",
                    crate::scan::summary(&findings)
                ),
            });
        }
    }
    let mut body = act
        .redactor
        .redact(written.report.as_deref().unwrap_or_default());
    if let Some(blob) = blob_base(act, sha) {
        let existing = existing_paths(act.repo, sha, &research::evidence_paths(&body))?;
        body = research::link_evidence(&body, &blob, &existing);
    }
    let mut body = research::cap(body.trim_end(), research::REPORT_CAP);
    let (proposals, left_out) = research::cap_proposals(proposals(&value));
    if left_out > 0 {
        body.push_str(&format!(
            "\n\n({left_out} more proposal(s) were left out: at most {} are kept.)",
            research::MAX_PROPOSALS
        ));
    }
    let summary = value
        .get("summary")
        .and_then(|s| s.as_str())
        .map(String::from)
        .or(written.summary)
        .unwrap_or_else(|| "research report written".to_string());
    let summary = act.redactor.excerpt(&summary, 500);
    let message = format!(
        "{summary} ({} criteria answered, {} proposal(s))",
        checks.len(),
        proposals.len()
    );
    record.summary = Some(summary);
    record.research = Some(ResearchReport {
        task_id: task.id.clone(),
        run_id: run_id.to_string(),
        base_sha: sha.to_string(),
        body,
        criteria: checks,
        proposals,
    });
    Ok(WorkResult::succeeded(message, true, record))
}

/// The result file's `criteria`: `{"criterion": <number or text>, "met": bool|null, "answer"}`
/// (the judge's `item` and `reason` are read too).
fn answers(value: &serde_json::Value) -> Vec<Answer> {
    let Some(list) = value.get("criteria").and_then(|c| c.as_array()) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|entry| {
            let key = entry.get("criterion").or_else(|| entry.get("item"))?;
            let criterion = match key {
                serde_json::Value::Number(n) => {
                    CriterionRef::Number(usize::try_from(n.as_u64()?).ok()?)
                }
                serde_json::Value::String(s) => match s.trim().parse::<usize>() {
                    Ok(n) => CriterionRef::Number(n),
                    Err(_) => CriterionRef::Text(s.clone()),
                },
                _ => return None,
            };
            let text = entry.get("answer").or_else(|| entry.get("reason"));
            Some(Answer {
                criterion,
                met: entry.get("met").and_then(|m| m.as_bool()),
                answer: text.and_then(|a| a.as_str()).unwrap_or("").to_string(),
            })
        })
        .collect()
}

/// The result file's `proposals`: `[{"title", "goal"}]`; entries without a title are dropped.
fn proposals(value: &serde_json::Value) -> Vec<Proposal> {
    let Some(list) = value.get("proposals").and_then(|p| p.as_array()) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|p| {
            Some(Proposal {
                title: p.get("title")?.as_str()?.to_string(),
                goal: p
                    .get("goal")
                    .and_then(|g| g.as_str())
                    .unwrap_or("")
                    .to_string(),
            })
        })
        .collect()
}

/// Where evidence links point in github mode: the repository's files at `sha` on the web
/// (`GITHUB_SERVER_URL`, else github.com, and `GITHUB_REPOSITORY`); `None` in local modes.
fn blob_base(act: &Act<'_>, sha: &str) -> Option<String> {
    if act.config.mode != Mode::Github {
        return None;
    }
    let repository = std::env::var("GITHUB_REPOSITORY").ok()?;
    let server = std::env::var("GITHUB_SERVER_URL")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "https://github.com".to_string());
    Some(format!(
        "{}/{repository}/blob/{sha}",
        server.trim_end_matches('/')
    ))
}

/// Which of `paths` are files of commit `sha`: one `git cat-file --batch-check` for all.
fn existing_paths(
    repo: &Path,
    sha: &str,
    paths: &[String],
) -> Result<BTreeSet<String>, CheckFailure> {
    // A path with a newline cannot be asked on one line; it names no file of ours anyway.
    let asked: Vec<&String> = paths.iter().filter(|p| !p.contains('\n')).collect();
    if asked.is_empty() {
        return Ok(BTreeSet::new());
    }
    let input: String = asked.iter().map(|p| format!("{sha}:{p}\n")).collect();
    let out = Git::new(repo)
        .run_with_input(
            &["cat-file", "--batch-check=%(objecttype)"],
            input.as_bytes(),
        )
        .map_err(setup)?;
    Ok(asked
        .into_iter()
        .zip(out.lines())
        .filter(|(_, answer)| *answer == "blob")
        .map(|(path, _)| path.clone())
        .collect())
}

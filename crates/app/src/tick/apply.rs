//! `opentiger apply DIR`: the half of the "safe outputs" split (DESIGN §10) that holds the
//! token. It takes what `work --run ID --output DIR` wrote in a job without one, trusts none of
//! it, and checks before anything: the run is a fan-out claim still waiting (already recorded:
//! nothing to do), the record names the run's task, the commit it started from is where the
//! task branch (or else the base branch) is on the remote, the bundle carries exactly the task
//! branch at the record's head on top of that start, every file it brings is within the size
//! limits (from git's object headers, before any content is read), it adds or moves no
//! submodule, and the change passes the path policy, the symbolic-link rule, the secret scan and
//! the threat scan's rules again (a change people approved after the scan held it passes as that
//! change, once). Then it takes the run's lease over, pushes the task branch, opens or updates
//! the PR (the idempotent publish path of every run) and records the outcome. A change that
//! fails a check is recorded as a `policy_violation` of the run (`threat_flagged` when held),
//! and nothing is pushed.
//!
//! Not for: running an agent — verification commands or the threat scan's detection agent:
//! the work job did, and this job, which holds the token, runs nothing a model drives; its
//! verdict on them is taken as recorded, and the judge reviews the PR as always.

use std::path::Path;

use super::act::publish_run;
use super::work::{record_work, take_over, waiting, Waiting, WorkDone};
use super::{Context, Failure};
use crate::forge::github::GithubClient;
use crate::git::Git;
use crate::model::{FailureCode, Mode, RunId, Task};
use crate::runner::work::WorkResult;
use crate::runner::{check_content, check_policy, CheckFailure};
use crate::safe_output::{self, Output};
use crate::workspace::{changed_files, task_branch, Branches};

/// Where a verified bundle's head is kept until it is pushed.
const APPLIED_REF: &str = "refs/opentiger/applied";

/// Applies a result folder of `work --output`: verified, pushed, published, recorded. Returns
/// the run the folder is for and what was done.
pub fn apply_output(ctx: &Context, dir: &Path) -> Result<(RunId, WorkDone), Failure> {
    let output = safe_output::read(dir).map_err(|e| Failure::usage(e.to_string()))?;
    let run_id = RunId(output.record.run_id.clone());
    let store = ctx.read_store()?;
    let task_id = match waiting(&run_id, store.fan_out_claim(&run_id, ctx.now)?)? {
        Waiting::Ready(task) => task,
        Waiting::Recorded(status) => return Ok((run_id, WorkDone::AlreadyRecorded(status))),
    };
    let task = store.task(&task_id)?;
    // Issue 36: what people approved after the threat scan held it (what the work job says
    // it used is not taken from it).
    let approved = store.approved_changes(&task_id)?;
    drop(store);
    let git = Git::new(&ctx.repo);
    let branches = Branches::new(&git, &ctx.config.remote)
        .pushing_heads_with(crate::credentials::Token::for_heads(&ctx.config));
    if branches.remote.is_none() {
        return Err(Failure::usage(format!(
            "`apply` pushes the task branch to the remote `{}`, which this repository does not have\n  fix: run it in a clone of the repository (`remote:` in .opentiger.yml names the remote)",
            ctx.config.remote
        )));
    }
    let forge = match ctx.config.mode {
        Mode::Github => Some(
            GithubClient::from_env(None, crate::credentials::lookup)
                .map_err(|e| Failure::usage(e.to_string()))?,
        ),
        Mode::LocalGit | Mode::Direct => None,
    };
    if let Some(why) = crate::credentials::missing_push_token(&ctx.config) {
        return Err(Failure::usage(format!("{}: {why}", ctx.config_source)));
    }
    let redactor = ctx.redactor();
    let branch = task_branch(&task);
    let mut held_record = crate::store::RunRecord::default();
    let checked = output
        .record
        .to_result(&branch, &redactor)
        .map_err(|e| violation(format!("the result record is not usable: {e}")))
        .and_then(|mut result| {
            let held = result.record.held.take();
            result.record.used_approval = None;
            if result.outcome.failure_code == Some(FailureCode::ThreatFlagged) {
                // Issue 36: held in the work job, which sent no bundle (the change leaves no
                // job): nothing to push. The change is named as the work job's record names it
                // (its findings taken as recorded, like its verification); a person's approval
                // lets out only a later change with exactly that start and tree, scanned here.
                result.record.held = held.filter(|h| {
                    [&h.head, &h.tree, &h.start]
                        .iter()
                        .all(|sha| sha.len() == 40 && sha.chars().all(|c| c.is_ascii_hexdigit()))
                });
                return Ok(result);
            }
            let findings = verify(ctx, &task, &branches, &output, &run_id)?;
            let (Some(head), Some(start)) = (output.record.head_sha(), output.record.start_sha())
            else {
                return Ok(result);
            };
            if findings.is_empty() {
                return Ok(result);
            }
            // Issue 36: exactly the change a person approved after it was held goes out, once;
            // anything else is held, pushed nowhere.
            let tree = git.run(&["rev-parse", &format!("{head}^{{tree}}")]);
            let covered = tree
                .ok()
                .and_then(|tree| crate::engine::scan::approval_for(&approved, start, &tree));
            match covered {
                Some(approval) => {
                    result.record.used_approval = Some(approval.head.clone());
                    Ok(result)
                }
                None => Err(crate::runner::work::hold(
                    &git,
                    &task,
                    (start, head),
                    &findings,
                    &mut held_record,
                )),
            }
        });
    let mut verified = checked.is_ok();
    let mut result = checked.unwrap_or_else(|refused| {
        // What the work job spent is kept; its change is not.
        let mut record = output
            .record
            .to_result(&branch, &redactor)
            .map(|r| r.record)
            .unwrap_or_default();
        record.held = None;
        record.used_approval = None;
        if refused.code == FailureCode::ThreatFlagged {
            record.head_sha = held_record.head_sha.take();
            record.held = held_record.held.take();
        } else {
            record.head_sha = None;
        }
        record.branch = Some(branch.clone());
        WorkResult::failed(refused.code, refused.message, record)
    });

    let task_id = match take_over(ctx, &run_id)? {
        Waiting::Ready(task) => task,
        Waiting::Recorded(status) => return Ok((run_id, WorkDone::AlreadyRecorded(status))),
    };
    let new_commit = result.record.head_sha.is_some() && output.bundle.is_some();
    if verified && new_commit {
        if let Err(e) = push(&git, &branches, &branch, &result) {
            verified = false;
            let message =
                format!("branch_diverged_requires_recreate: could not push {branch}: {e}");
            result.record.head_sha = None;
            result = WorkResult::failed(
                FailureCode::BranchDivergedRequiresRecreate,
                message,
                result.record,
            );
        }
    }
    let _ = git.try_run(&["update-ref", "-d", APPLIED_REF]);
    if let (Some(client), true) = (
        &forge,
        verified && result.outcome.success && result.record.head_sha.is_some(),
    ) {
        publish_run(ctx, client, &task, &run_id, &mut result);
    }
    let done = record_work(ctx, &task_id, &run_id, &result, None, None)?;
    super::people::post_after_work(ctx, forge.as_ref(), &task);
    Ok((run_id, done))
}

fn violation(message: String) -> CheckFailure {
    CheckFailure {
        code: FailureCode::PolicyViolation,
        message: format!("Policy violation: the work job's result was refused: {message}"),
    }
}

/// Puts the task branch where the verified bundle's head is and pushes it (no force).
fn push(
    git: &Git,
    branches: &Branches,
    branch: &str,
    result: &WorkResult,
) -> Result<(), crate::git::GitError> {
    let head = result.record.head_sha.as_deref().unwrap_or_default();
    git.run(&["update-ref", &format!("refs/heads/{branch}"), head])?;
    branches.publish(branch)
}

/// Every check of a work job's result before anything of it is pushed.
fn verify(
    ctx: &Context,
    task: &Task,
    branches: &Branches,
    output: &Output,
    run_id: &RunId,
) -> Result<Vec<crate::scan::Finding>, CheckFailure> {
    let record = &output.record;
    if record.task_id != task.id.as_str() {
        return Err(violation(format!(
            "the record names task {}, but run {run_id} is task {}",
            record.task_id, task.id
        )));
    }
    // A research report only from a research task's run, naming that task and run; a
    // research run commits nothing (issue 28).
    let research = record.run.research.as_ref();
    let is_research = task.kind == crate::model::TaskKind::Research;
    if research.is_some_and(|r| !is_research || r.task_id != task.id || r.run_id != run_id.as_str())
    {
        return Err(violation(format!(
            "the record carries a research report that is not run {run_id}'s of research task {}",
            task.id
        )));
    }
    if is_research && record.head_sha().is_some() {
        return Err(violation("a research run never commits".to_string()));
    }
    let Some(head) = record.head_sha() else {
        // Nothing committed: a failure (or a change-less success) to record as it is.
        return Ok(Vec::new());
    };
    let branch = task_branch(task);
    let git = Git::new(&ctx.repo);
    let setup = |e: crate::git::GitError| CheckFailure {
        code: FailureCode::ExecutionFailed,
        message: format!("runner error: {e}"),
    };
    branches
        .refresh(&[&ctx.config.base_branch, &branch])
        .map_err(setup)?;
    let start = record
        .start_sha()
        .ok_or_else(|| violation("a head without the commit it started from".to_string()))?;
    let is_ancestor = |older: &str, newer: &str| -> Result<bool, CheckFailure> {
        Ok(git
            .try_run(&["merge-base", "--is-ancestor", older, newer])
            .map_err(setup)?
            .is_some())
    };
    let known = |sha: &str| -> Result<bool, CheckFailure> {
        Ok(git
            .try_run(&["cat-file", "-e", &format!("{sha}^{{commit}}")])
            .map_err(setup)?
            .is_some())
    };
    // The start is the task branch as published, else a commit of the base branch.
    match branches.head(&branch).map_err(setup)? {
        Some(tip) if tip != start => {
            return Err(violation(format!(
                "it started from {start}, but {branch} is at {tip} on the remote"
            )))
        }
        Some(_) => {}
        None => {
            let base = branches.tracking(&ctx.config.base_branch);
            if !known(start)? || !is_ancestor(start, &base)? {
                return Err(violation(format!(
                    "it started from {start}, which is not a commit of `{}`",
                    ctx.config.base_branch
                )));
            }
        }
    }
    let Some((bundle, header)) = &output.bundle else {
        if head == start {
            return Ok(Vec::new()); // nothing new: the branch already holds the head
        }
        return Err(violation(format!(
            "its head {head} is new, but there is no {}",
            safe_output::BUNDLE_FILE
        )));
    };
    let expected = format!("refs/heads/{branch}");
    if header.heads.len() != 1 || header.heads[0] != (head.to_string(), expected.clone()) {
        let carried: Vec<String> = header
            .heads
            .iter()
            .map(|(sha, name)| format!("{name} at {sha}"))
            .collect();
        return Err(violation(format!(
            "the bundle must carry {expected} at {head} alone; it carries {}",
            carried.join(", ")
        )));
    }
    if !header.prerequisites.iter().any(|p| p == start) {
        return Err(violation(format!(
            "the bundle does not build on {start}, the commit the run started from"
        )));
    }
    for p in &header.prerequisites {
        if !known(p)? || !is_ancestor(p, start)? {
            return Err(violation(format!(
                "the bundle builds on {p}, which is not in the history of {start}"
            )));
        }
    }
    let bundle_text = bundle.display().to_string();
    // Issue 36: git streams blobs over this size instead of holding them whole while it reads
    // the bundle, so a forged one costs memory by what it says, not by what it unpacks to.
    let stream_over = format!(
        "core.bigFileThreshold={}",
        ctx.config.policy.max_file_bytes.clamp(1 << 20, 64 << 20)
    );
    git.try_run(&[
        "-c",
        &stream_over,
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        &bundle_text,
        &format!("+{expected}:{APPLIED_REF}"),
    ])
    .map_err(setup)?
    .ok_or_else(|| violation("the bundle could not be read by git".to_string()))?;
    let fetched = git.resolve(APPLIED_REF).map_err(setup)?;
    if fetched.as_deref() != Some(head) || !is_ancestor(start, head)? {
        return Err(violation(format!(
            "the bundle's head is not {head} on top of {start}"
        )));
    }
    // Issue 36: sizes from the object headers before any content is read.
    let sizes = crate::workspace::sizes_between(&git, start, head).map_err(setup)?;
    let policy = &ctx.config.policy;
    let too_large =
        crate::policy::size_violations(&sizes, policy.max_file_bytes, policy.max_change_bytes);
    if !too_large.is_empty() {
        return Err(violation(
            crate::policy::summary(&too_large).replace('\n', "; "),
        ));
    }
    // A submodule added or pointed elsewhere by any commit of the change (so in the change as
    // well): the workspace's import never makes one, so a bundle carrying one was made by hand.
    let commits = git
        .run(&["rev-list", &format!("{start}..{head}")])
        .map_err(setup)?;
    let mut gitlinks = Vec::new();
    for commit in commits.lines() {
        let parent = format!("{commit}^");
        gitlinks.extend(crate::workspace::gitlinks_between(&git, &parent, commit).map_err(setup)?);
    }
    gitlinks.sort();
    gitlinks.dedup();
    if !gitlinks.is_empty() {
        return Err(violation(format!(
            "the change adds or moves a submodule (a gitlink): {}; a run never changes submodules",
            gitlinks.join(", ")
        )));
    }
    // The change itself, checked again: paths, links, secrets.
    let changes = changed_files(&git, start, head).map_err(setup)?;
    check_policy(task, &ctx.config, &changes)?;
    let redactor = ctx.redactor();
    let links = crate::workspace::links_between(&git, start, head).map_err(setup)?;
    let summary = output.record.run.summary.clone().unwrap_or_default();
    // Issue 48: the bundle's commit messages leave the job with it: scanned like the PR body.
    let mut messages = git
        .run(&["log", "--format=%B", &format!("{start}..{head}")])
        .map_err(setup)?;
    if messages.len() > 64 * 1024 {
        let mut cut = 64 * 1024;
        while !messages.is_char_boundary(cut) {
            cut -= 1;
        }
        messages.truncate(cut);
    }
    let texts = [
        ("the PR body", summary.as_str()),
        ("the commit messages", messages.as_str()),
    ];
    check_content(
        task,
        &ctx.config,
        &git,
        &[start, head],
        &links,
        &redactor,
        &texts,
    )
    .and_then(|findings| {
        // Each commit's own additions too: a secret added and removed again would still be
        // pushed in the history.
        for commit in commits.lines() {
            let parent = format!("{commit}^");
            check_content(
                task,
                &ctx.config,
                &git,
                &[&parent, commit],
                &[],
                &redactor,
                &[],
            )?;
        }
        Ok(findings)
    })
}

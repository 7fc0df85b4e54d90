//! The judge (DESIGN §8, spec §2.4): merge the base into the task branch's head in the runner's
//! repository (no work tree: `workspace::merge_with`), check the result again in a workspace of
//! its own (policy, verification — the same checks as the worker), ask the judge agent for a
//! review there when configured, and on approval merge: into the base branch (local-git) or the
//! pull request through the forge, bound to the reviewed head (github; CI gates it earlier).
//! Nothing the judge agent does in its workspace is read back.
//!
//! Not here: asking the agent (`judge_review.rs`), the merge's last steps (`judge_merge.rs`),
//! the refs a review keeps (`judge_refs.rs`), and what a conclusion does to the task
//! (`engine::verdict`, applied by `tick/record`).

use super::checks;
pub use super::verdict_answer::{parse_criteria, parse_verdict};
use super::Act;
use crate::config::AgentRole;
use crate::engine::verdict::JudgeConclusion;
use crate::git::{Git, GitError};
use crate::model::checks::CommandReport;
use crate::model::{CriterionCheck, Run, Task, TaskKind, Verdict};
use crate::store::JudgementRow;
use crate::workspace::{changed_files, links_between, Branches, Merge, Workspace};

#[path = "judge_merge.rs"]
mod merge;
#[path = "judge_refs.rs"]
mod refs;
#[path = "judge_review.rs"]
mod review;
pub use merge::PullMerger;
use merge::{conflict, merge_commit, merge_pull};
use refs::{merged_before, unpublished, KeptMerge};
use review::review;

// The trial merge with the base is a commit of its own, never on the task branch: the verdict
// stays bound to the head the worker produced.

/// A conclusion and the verdict row to store with it (kept until it is: `tick::unsaved`).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct JudgeResult {
    pub conclusion: JudgeConclusion,
    pub judgement: Option<JudgementRow>,
    /// The verification commands as they ran on the head merged with the base (issue 28).
    pub verification: Vec<CommandReport>,
    /// What the judge agent spent, what the proxy metered and refused for it and the checks
    /// (issue 37), when an agent or check ran.
    pub spend: Option<Box<crate::store::AgentSpend>>,
}

/// What a review left on the side: the verification commands as they ran, and what the agent
/// and the checks spent and were refused (issue 37).
#[derive(Default)]
struct Trace {
    commands: Vec<CommandReport>,
    spend: Option<crate::store::AgentSpend>,
}

impl Trace {
    fn spend(&mut self, task: &Task, run: &Run) -> &mut crate::store::AgentSpend {
        self.spend.get_or_insert_with(|| crate::store::AgentSpend {
            role: "judge".to_string(),
            task_id: Some(task.id.clone()),
            run_id: Some(run.id.clone()),
            ..Default::default()
        })
    }
}

/// What a review is asked in the light of: how many reviews the change had so far, and the issue
/// it answers (the judge checks the change against its acceptance criteria).
#[derive(Clone, Copy, Debug, Default)]
pub struct ReviewBrief<'a> {
    pub reviews_so_far: u32,
    pub issue: Option<&'a crate::model::IssueSpec>,
    /// Trusted people who approved the reviewed head; with `merge.human_approval: required`
    /// their approval replaces the judge agent's review.
    pub approved_by: &'a [String],
    /// Issue 36 (`scan.ci: after-review`): no CI ran on the head yet, so an approval is
    /// recorded and not merged.
    pub before_ci: bool,
    /// Issue 36: what the judge said approving this very head before CI ran; CI passed since,
    /// so it is not reviewed again.
    pub approved_before: Option<&'a str>,
    /// Issue 38: the review window is open until then: an approval is recorded, the merge
    /// waits for the first tick after it.
    pub merge_after: Option<crate::time::Timestamp>,
}

pub fn judge_run(
    act: &Act<'_>,
    task: &Task,
    run: &Run,
    asked: ReviewBrief<'_>,
    merger: Option<&dyn PullMerger>,
) -> JudgeResult {
    let mut trace = Trace::default();
    match judge(act, task, run, asked, merger, &mut trace) {
        Ok(mut r) => {
            r.verification = trace.commands;
            r.spend = trace.spend.map(Box::new);
            merge::recorded_once(asked, &mut r);
            r
        }
        Err(e) => JudgeResult {
            spend: trace.spend.map(Box::new),
            verification: Vec::new(),
            conclusion: JudgeConclusion::Failed {
                error: act.redactor.excerpt(&e.to_string(), 500),
            },
            judgement: None,
        },
    }
}

/// What a review said: the verdict, why, what to fix, and the answer per acceptance criterion.
#[derive(Clone, Debug)]
pub struct Review {
    pub verdict: Verdict,
    pub summary: String,
    pub findings: Vec<String>,
    pub criteria: Vec<CriterionCheck>,
}

impl Review {
    pub(super) fn row(&self, head: &str) -> JudgementRow {
        JudgementRow {
            head_sha: head.to_string(),
            verdict: self.verdict,
            summary: self.summary.clone(),
            findings: self.findings.clone(),
            criteria: self.criteria.clone(),
        }
    }
}

fn request_changes(head: &str, summary: String, findings: Vec<String>) -> JudgeResult {
    JudgeResult {
        spend: None,
        verification: Vec::new(),
        judgement: Some(JudgementRow {
            head_sha: head.to_string(),
            verdict: Verdict::RequestChanges,
            summary: summary.clone(),
            findings: findings.clone(),
            criteria: Vec::new(),
        }),
        conclusion: JudgeConclusion::RequestChanges { summary, findings },
    }
}

/// Tries of the merge within one review when the base moves under it (another clone merged
/// first); after these the review concludes `BaseMoved` and the merge is retried later.
const MERGE_RACES: u32 = 5;

fn judge(
    act: &Act<'_>,
    task: &Task,
    run: &Run,
    asked: ReviewBrief<'_>,
    merger: Option<&dyn PullMerger>,
    trace: &mut Trace,
) -> Result<JudgeResult, GitError> {
    let repo = Git::new(act.repo);
    let base = &act.config.base_branch;
    let branches = Branches::new(&repo, &act.config.remote)
        .pushing_heads_with(crate::credentials::Token::for_heads(act.config));
    let failed = |error: String| {
        Ok(JudgeResult {
            spend: None,
            verification: Vec::new(),
            conclusion: JudgeConclusion::Failed { error },
            judgement: None,
        })
    };
    let Some(branch) = run.branch.clone() else {
        return failed(format!("run {} recorded no branch", run.id));
    };
    let mut reviewed: Option<Review> = None;
    for _ in 0..MERGE_RACES {
        branches.refresh(&[base, &branch])?;
        // Merged already by an earlier review whose outcome was never recorded (its tick died):
        // adopt that merge instead of merging twice.
        if let Some(commit) = merged_before(&repo, &branches.tracking(base), task)? {
            if act.config.merge.delete_branch && task.kind != TaskKind::PrReview {
                branches.delete(&branch);
            }
            return Ok(JudgeResult {
                spend: None,
                verification: Vec::new(),
                conclusion: JudgeConclusion::Merged { commit },
                judgement: None,
            });
        }
        let head = match branches.head(&branch)? {
            Some(head) => head,
            // The run's commit is on the local branch but was never published (its tick died
            // between the commit and the push): the judge publishes it, never fails on it.
            None if unpublished(&repo, &branches, &branch, run)? => {
                branches
                    .publish(&branch)
                    .and_then(|()| branches.refresh(&[&branch]))?;
                continue;
            }
            None => return failed(format!("branch {branch} is gone")),
        };
        // DESIGN §4: a verdict is bound to the head it judged; a newer push is judged on its own.
        if let Some(expected) = run.head_sha.as_ref().filter(|e| **e != head) {
            return failed(format!(
                "branch {branch} moved from {expected} to {head} after the run"
            ));
        }
        let base_head = branches
            .head(base)?
            .ok_or_else(|| missing_base(&repo, base))?;
        let trial = crate::workspace::merge_with(
            &repo,
            &head,
            &base_head,
            &format!("Merge {base} into {branch}"),
        )?;
        let merged = match trial {
            Merge::Clean { commit } => commit,
            Merge::Conflict { files, .. } => return Ok(conflict(base, &head, files)),
        };
        // A person's uncommitted work in the way of the merge (local-git, the base checked out
        // here): the merge waits for them, before anything is spent on a review.
        if let Some(held) = checkout_in_the_way(&branches, base, &base_head, &merged)? {
            return Ok(held);
        }
        let kept = KeptMerge::keep(&repo, &run.id, &merged)?;
        let ws = Workspace::open_detached(&repo, "review", &merged)?;
        let attempt = try_merge(
            act,
            task,
            run,
            &ws,
            (&base_head, &head, &merged),
            (&mut reviewed, trace),
            asked,
            (&branches, merger),
        );
        drop(ws);
        drop(kept);
        match attempt? {
            Attempt::Concluded(result) => {
                // A person's branch is theirs to delete.
                if matches!(result.conclusion, JudgeConclusion::Merged { .. })
                    && act.config.merge.delete_branch
                    && task.kind != TaskKind::PrReview
                {
                    branches.delete(&branch);
                }
                return Ok(result);
            }
            Attempt::BaseMoved => continue,
        }
    }
    failed(format!(
        "{base} kept moving while merging ({MERGE_RACES} tries): another tick merged first"
    ))
}

enum Attempt {
    Concluded(JudgeResult),
    /// The base moved between reading and merging: try again on the new base.
    BaseMoved,
}

/// One try: check the head merged with the base (`merged`, in `ws`), review it (once; the
/// verdict is kept across tries), and advance the base.
#[allow(clippy::too_many_arguments)]
fn try_merge(
    act: &Act<'_>,
    task: &Task,
    run: &Run,
    ws: &Workspace,
    (base_head, head, merged): (&str, &str, &str),
    (reviewed, trace): (&mut Option<Review>, &mut Trace),
    asked: ReviewBrief<'_>,
    (branches, merger): (&Branches, Option<&dyn PullMerger>),
) -> Result<Attempt, GitError> {
    let base = &act.config.base_branch;
    let done = |r: JudgeResult| Ok(Attempt::Concluded(r));
    let repo = ws.repo();
    let merged = merged.to_string();
    let changes = changed_files(repo, base_head, &merged)?;
    let links = links_between(repo, base_head, &merged)?;
    // The threat scan held or passed the change before it was pushed; here only what refuses
    // a change (links, secrets) counts, and what it finds is named to the judge (issue 48).
    let summary = run.summary.clone().unwrap_or_default();
    let texts = [("the worker's summary (the PR body)", summary.as_str())];
    let content = || {
        super::check_content(
            task,
            act.config,
            repo,
            &[base_head, &merged],
            &links,
            act.redactor,
            &texts,
        )
    };
    let scanned = checks::check_policy(task, act.config, &changes).and_then(|()| content());
    let findings = match scanned {
        Ok(findings) => findings,
        Err(f) => {
            let findings = f
                .message
                .trim_start_matches("Policy violation: ")
                .split("; ")
                .map(String::from)
                .collect();
            return done(request_changes(
                head,
                "the change breaks the path policy".to_string(),
                findings,
            ));
        }
    };
    let verification = checks::run_verification(act, task, &ws.path, &changes);
    trace.commands = verification.commands.clone();
    if !verification.refused.is_empty() {
        let refused = &mut trace.spend(task, run).refused;
        crate::model::network::merge_refusals(refused, &verification.refused);
    }
    let verified = match verification.passed() {
        Ok(passed) => passed,
        Err(f) => {
            return done(request_changes(
                head,
                format!("verification fails on the change merged with {base}"),
                vec![f.message],
            ))
        }
    };
    // github mode: a PR behind the base is brought up to date first (the merge just checked),
    // so CI runs on what would land; the review comes after, on that head.
    let behind = repo
        .try_run(&["merge-base", "--is-ancestor", base_head, head])?
        .is_none();
    let ours = task.kind != TaskKind::PrReview;
    if let (true, Some(_), true, true, Some(branch)) = (
        behind,
        merger,
        act.config.merge.update_when_behind,
        ours,
        run.branch.as_deref(),
    ) {
        if !branches.advance(branch, head, &merged)? {
            return done(JudgeResult {
                spend: None,
                verification: Vec::new(),
                conclusion: JudgeConclusion::Failed {
                    error: format!("{branch} moved while the base was merged into it"),
                },
                judgement: None,
            });
        }
        return done(JudgeResult {
            spend: None,
            verification: Vec::new(),
            conclusion: JudgeConclusion::Updated { head: merged },
            judgement: None,
        });
    }
    if reviewed.is_none() {
        let judge_agent = act.config.agents.effective(AgentRole::Judge);
        *reviewed = Some(if let Some(settled) = merge::settled(act, asked) {
            settled
        } else if judge_agent.review {
            match review(
                act,
                task,
                run,
                ws,
                (base_head, &merged),
                (&verified, &findings),
                asked,
                trace,
            ) {
                Ok(v) => v,
                Err(error) => {
                    return done(JudgeResult {
                        spend: None,
                        verification: Vec::new(),
                        conclusion: JudgeConclusion::Failed { error },
                        judgement: None,
                    })
                }
            }
        } else {
            Review {
                verdict: Verdict::Approve,
                summary: "checks passed (no agent review configured)".to_string(),
                findings: Vec::new(),
                criteria: Vec::new(),
            }
        });
    }
    let Some(review) = reviewed.clone() else {
        return done(JudgeResult {
            spend: None,
            verification: Vec::new(),
            conclusion: JudgeConclusion::Failed {
                error: "no review".to_string(),
            },
            judgement: None,
        });
    };
    if review.verdict == Verdict::RequestChanges {
        return done(JudgeResult {
            spend: None,
            verification: Vec::new(),
            judgement: Some(review.row(head)),
            conclusion: JudgeConclusion::RequestChanges {
                summary: review.summary,
                findings: review.findings,
            },
        });
    }
    if !ours && !act.config.backlog.merge_imported_prs {
        return done(JudgeResult {
            spend: None,
            verification: Vec::new(),
            judgement: Some(review.row(head)),
            conclusion: JudgeConclusion::Approved {
                summary: review.summary,
            },
        });
    }
    if let Some(kept) = merge::window_open(asked, head, &review) {
        return done(kept);
    }
    if let Some(merger) = merger {
        return done(merge_pull(merger, task, run, head, review, asked.before_ci));
    }
    let commit = merge_commit(act, repo, task, base_head, &merged)?;
    if let Some(held) = checkout_in_the_way(branches, base, base_head, &commit)? {
        return done(held);
    }
    if !branches.advance(base, base_head, &commit)? {
        return Ok(Attempt::BaseMoved);
    }
    done(JudgeResult {
        spend: None,
        verification: Vec::new(),
        judgement: Some(review.row(head)),
        conclusion: JudgeConclusion::Merged { commit },
    })
}

/// Issue 35: in local-git mode with the base checked out in the repository, a person's
/// uncommitted changes (or untracked files) that moving the base to `new` would overwrite hold
/// the merge — named, no judge retry spent, the person's files never touched.
fn checkout_in_the_way(
    branches: &Branches,
    base: &str,
    old: &str,
    new: &str,
) -> Result<Option<JudgeResult>, GitError> {
    let files = branches.in_the_way(base, old, new)?;
    if files.is_empty() {
        return Ok(None);
    }
    let shown = files
        .iter()
        .take(10)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    Ok(Some(JudgeResult {
 spend: None,
        verification: Vec::new(),
        conclusion: JudgeConclusion::Held {
            reason: format!(
                "{base} is checked out in the repository with uncommitted changes to {shown}, which the merge would overwrite: commit or stash them, and the next tick merges"
            ),
        },
        judgement: None,
    }))
}

fn missing_base(repo: &Git, base: &str) -> GitError {
    GitError {
        dir: repo.dir().display().to_string(),
        args: format!("rev-parse refs/heads/{base}"),
        code: None,
        detail: format!(
            "the base branch `{base}` does not exist: set `base_branch` in .opentiger.yml"
        ),
    }
}

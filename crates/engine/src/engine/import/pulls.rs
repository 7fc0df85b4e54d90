//! Open pull requests people opened, imported for review (`backlog.import_open_prs`; DESIGN §8,
//! issue 7 item 6). Pure: decides, per open PR, to review its head, to give up the review of an
//! older head, or to skip it with a reason.
//!
//! Each head of a PR is one `pr_review` task, created waiting for the judge with one successful
//! run that stands for the head (no agent works on it: nothing is ever pushed to a person's
//! branch). A new push makes a new task; the review of the old head, if still waiting, gives way.
//! Like issues, the PR's text reaches no trusted field except its title.
//!
//! Not for: listing the open PRs and writing what is decided (`tick::observe`), or the review
//! itself (`runner::judge`, then `engine::verdict`).

use crate::config::BacklogConfig;
use crate::model::PullRequest;
use crate::model::{
    short_hash, AgentId, BlockReason, Lane, Role, Run, RunId, RunStatus, Task, TaskId, TaskKind,
    TaskStatus, TickId,
};
use crate::time::Timestamp;

/// What happens to one open PR.
#[derive(Clone, Debug, PartialEq)]
pub enum PullImport {
    /// Review this head: a new task and the run that stands for the head.
    Review {
        task: Box<Task>,
        run: Box<Run>,
        reason: String,
    },
    /// A waiting review of an older head of the PR: cancelled, the new head is reviewed instead.
    Supersede { task_id: TaskId, reason: String },
    /// Not reviewed, and why.
    Skip { pr: u64, reason: String },
}

/// The review task of one head of one PR: deciding twice gives the same id.
pub fn review_task_id(pr: u64, head_sha: &str) -> TaskId {
    TaskId(short_hash(&["pr_review", &pr.to_string(), head_sha]))
}

/// `open_prs`: the repository's open PRs; `reviews`: the `pr_review` tasks that exist (any
/// status); `base`: the branch the judge merges into.
pub fn import_pulls(
    open_prs: &[PullRequest],
    reviews: &[Task],
    config: &BacklogConfig,
    base: &str,
    now: Timestamp,
) -> Vec<PullImport> {
    let mut out = Vec::new();
    if !config.import_open_prs {
        return out;
    }
    for pr in open_prs {
        // The bot's own PRs belong to their tasks.
        if pr.body.contains("<!-- opentiger:task=") {
            continue;
        }
        if let Some(reason) = skip_reason(pr, config, base) {
            out.push(PullImport::Skip {
                pr: pr.number,
                reason,
            });
            continue;
        }
        let id = review_task_id(pr.number, &pr.head_sha);
        for old in reviews.iter().filter(|t| {
            t.source_pr == Some(pr.number)
                && t.id != id
                && matches!(
                    t.status,
                    TaskStatus::Queued | TaskStatus::Blocked | TaskStatus::Failed
                )
        }) {
            out.push(PullImport::Supersede {
                task_id: old.id.clone(),
                reason: format!(
                    "PR #{} has a new head {}: that head is reviewed instead",
                    pr.number,
                    short(&pr.head_sha)
                ),
            });
        }
        if reviews.iter().any(|t| t.id == id) {
            continue;
        }
        let (task, run) = review_task(pr, id, now);
        let reason = format!(
            "review PR #{} by @{} at {} as task {}",
            pr.number,
            pr.author,
            short(&pr.head_sha),
            task.id
        );
        out.push(PullImport::Review {
            task: Box::new(task),
            run: Box::new(run),
            reason,
        });
    }
    out
}

fn skip_reason(pr: &PullRequest, config: &BacklogConfig, base: &str) -> Option<String> {
    let trusted = config
        .trusted_associations
        .iter()
        .any(|t| t.eq_ignore_ascii_case(&pr.author_association));
    if pr.state != "open" {
        Some("is not open".to_string())
    } else if pr.draft {
        Some("is a draft".to_string())
    } else if !trusted {
        Some(format!(
            "opened by @{} ({}), who is not trusted: review it by hand",
            pr.author, pr.author_association
        ))
    } else if pr.from_fork {
        Some("comes from a fork: its branch cannot be fetched from this repository".to_string())
    } else if pr.base_ref != base {
        Some(format!("targets {}, not {base}", pr.base_ref))
    } else {
        None
    }
}

fn review_task(pr: &PullRequest, id: TaskId, now: Timestamp) -> (Task, Run) {
    let n = pr.number;
    let title = match pr.title.trim() {
        "" => format!("Review PR #{n}"),
        t => format!("Review PR #{n}: {t}"),
    };
    let goal = format!(
        "Review pull request #{n} by @{}: decide whether its change can be merged.",
        pr.author
    );
    let mut task = Task::new(id.clone(), &title, &goal, now);
    task.kind = TaskKind::PrReview;
    task.role = Role::Worker;
    task.lane = Lane::Feature;
    task.status = TaskStatus::Blocked;
    task.block_reason = Some(BlockReason::AwaitingJudge);
    task.status_reason = Some(format!(
        "imported for review at head {}",
        short(&pr.head_sha)
    ));
    task.source_pr = Some(n);
    task.notes = format!("Imported from open PR #{n} ({}).", pr.html_url);
    let run = Run {
        status: RunStatus::Success,
        finished_at: Some(now),
        branch: Some(pr.head_ref.clone()),
        head_sha: Some(pr.head_sha.clone()),
        pr_number: Some(n),
        summary: Some(format!("PR #{n} at {}", short(&pr.head_sha))),
        ..Run::started(
            RunId(short_hash(&["pr_review_run", id.as_str()])),
            &task,
            AgentId(format!("github:{}", pr.author)),
            TickId(String::new()),
            now,
        )
    };
    (task, run)
}

fn short(sha: &str) -> &str {
    sha.get(..10).unwrap_or(sha)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pr(n: u64, head: &str) -> PullRequest {
        PullRequest {
            number: n,
            title: format!("Change {n}"),
            body: "please merge".into(),
            head_ref: format!("feature-{n}"),
            head_sha: head.into(),
            base_ref: "main".into(),
            state: "open".into(),
            merged: false,
            author: "bob".into(),
            html_url: format!("https://example.test/pull/{n}"),
            updated_at: Timestamp(0),
            author_association: "COLLABORATOR".into(),
            draft: false,
            from_fork: false,
            labels: Vec::new(),
        }
    }

    fn on() -> BacklogConfig {
        BacklogConfig {
            import_open_prs: true,
            ..BacklogConfig::default()
        }
    }

    fn kinds(out: &[PullImport]) -> Vec<String> {
        out.iter()
            .map(|d| match d {
                PullImport::Review { task, .. } => format!("review #{}", task.source_pr.unwrap()),
                PullImport::Supersede { task_id, .. } => format!("supersede {task_id}"),
                PullImport::Skip { pr, reason } => format!("skip #{pr}: {reason}"),
            })
            .collect()
    }

    #[test]
    fn which_prs_are_reviewed() {
        let now = Timestamp(5);
        let ours = PullRequest {
            body: "x <!-- opentiger:task=abc run=r -->".into(),
            ..pr(1, "a1")
        };
        let cases: Vec<(&str, PullRequest, &str)> = vec![
            ("a collaborator's PR", pr(2, "b1"), "review #2"),
            ("ours", ours, ""),
            (
                "draft",
                PullRequest {
                    draft: true,
                    ..pr(3, "c1")
                },
                "skip #3: is a draft",
            ),
            (
                "outsider",
                PullRequest {
                    author_association: "NONE".into(),
                    ..pr(4, "d1")
                },
                "skip #4: opened by @bob (NONE), who is not trusted",
            ),
            (
                "fork",
                PullRequest {
                    from_fork: true,
                    ..pr(5, "e1")
                },
                "skip #5: comes from a fork",
            ),
            (
                "other base",
                PullRequest {
                    base_ref: "release".into(),
                    ..pr(6, "f1")
                },
                "skip #6: targets release, not main",
            ),
        ];
        for (name, p, expect) in cases {
            let out = kinds(&import_pulls(&[p], &[], &on(), "main", now));
            assert!(out.join(" | ").starts_with(expect), "{name}: {out:?}");
            assert_eq!(out.is_empty(), expect.is_empty(), "{name}: {out:?}");
        }
        // Off by default: nothing at all.
        assert!(
            import_pulls(&[pr(2, "b1")], &[], &BacklogConfig::default(), "main", now).is_empty()
        );
    }

    #[test]
    fn one_review_per_head_and_a_new_head_supersedes_the_waiting_one() {
        let now = Timestamp(5);
        let first = import_pulls(&[pr(7, "aaa")], &[], &on(), "main", now);
        let PullImport::Review { task, run, .. } = &first[0] else {
            panic!("{first:?}")
        };
        assert_eq!(task.kind, TaskKind::PrReview);
        assert_eq!(
            task.state(),
            crate::model::TaskState::blocked(BlockReason::AwaitingJudge)
        );
        assert_eq!(task.title, "Review PR #7: Change 7");
        assert!(
            !task.goal.contains("please merge"),
            "the body is not trusted text"
        );
        assert_eq!(run.status, RunStatus::Success);
        assert_eq!(run.head_sha.as_deref(), Some("aaa"));
        assert_eq!(run.branch.as_deref(), Some("feature-7"));
        assert_eq!(run.pr_number, Some(7));
        // Seen again: nothing new.
        let existing = vec![(**task).clone()];
        assert!(import_pulls(&[pr(7, "aaa")], &existing, &on(), "main", now).is_empty());
        // Pushed to: the waiting review gives way to the new head's.
        let out = kinds(&import_pulls(
            &[pr(7, "bbb")],
            &existing,
            &on(),
            "main",
            now,
        ));
        assert_eq!(
            out,
            vec![format!("supersede {}", task.id), "review #7".to_string()]
        );
        // A finished review is history, not superseded.
        let done = vec![Task {
            status: TaskStatus::Done,
            block_reason: None,
            ..(**task).clone()
        }];
        let out = kinds(&import_pulls(&[pr(7, "bbb")], &done, &on(), "main", now));
        assert_eq!(out, vec!["review #7".to_string()]);
    }
}

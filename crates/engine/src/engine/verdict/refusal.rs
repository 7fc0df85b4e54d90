//! GitHub's refusal to merge an approved PR, told apart: the base moved, the head moved, a
//! conflict, or a rule of the repository a bot cannot satisfy. Part of [`super`]. Not for: the
//! merge call that got it (`runner::judge_merge`) or what each conclusion does to the task
//! (`super::decide_verdict`).

use super::JudgeConclusion;

/// What GitHub's refusal to merge an approved PR (405) means: the base moved under it (merge
/// again later), the PR conflicts with the base (conflict recovery), or a rule of the repository
/// a bot cannot satisfy (branch protection: a person decides).
pub fn merge_refusal(pr: u64, message: &str) -> JudgeConclusion {
    let m = message.to_ascii_lowercase();
    if m.contains("base branch was modified") || m.contains("not up to date") {
        JudgeConclusion::BaseMoved {
            base: "the base branch".to_string(),
        }
    } else if m.contains("head branch was modified") {
        JudgeConclusion::Failed {
            error: format!("PR #{pr} head moved while merging: reviewed again"),
        }
    } else if m.contains("not mergeable") || m.contains("conflict") {
        JudgeConclusion::Conflict {
            base: "the base branch".to_string(),
            files: Vec::new(),
        }
    } else {
        JudgeConclusion::Refused {
            reason: format!("GitHub refuses to merge PR #{pr}: {message}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merge_refusals_are_told_apart() {
        let cases: &[(&str, &str)] = &[
            (
                "Base branch was modified. Review and try the merge again.",
                "base moved",
            ),
            (
                "Head branch is not up to date with the base branch",
                "base moved",
            ),
            (
                "Head branch was modified. Review and try the merge again.",
                "failed",
            ),
            ("Pull Request is not mergeable", "conflict"),
            ("Merge conflict", "conflict"),
            (
                "At least 1 approving review is required by reviewers with write access.",
                "refused",
            ),
            ("Required status check \"build\" is expected.", "refused"),
        ];
        for (message, expect) in cases {
            let got = match merge_refusal(7, message) {
                JudgeConclusion::BaseMoved { .. } => "base moved",
                JudgeConclusion::Failed { .. } => "failed",
                JudgeConclusion::Conflict { .. } => "conflict",
                JudgeConclusion::Refused { reason } => {
                    assert!(reason.contains(message), "{reason}");
                    "refused"
                }
                other => panic!("{message}: {other:?}"),
            };
            assert_eq!(got, *expect, "{message}");
        }
    }
}

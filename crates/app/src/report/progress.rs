//! The progress comment of a task (issue 14 item 6, the seed's reporting envelope) and the
//! acceptance checklist shown in it and in the PR body (item 2). Pure rendering from plain
//! values. Text from others (the issue's criteria, the judge's reasons, run summaries) goes
//! through [`plain`]: one line, no HTML, no links or images, no `@` notifications.
//! Not for: gathering the values and editing the one comment and the PR body in place
//! (`tick::progress`).

use std::fmt::Write as _;

use super::board::plain;
use crate::model::{CriterionCheck, Phase};

/// The markers around the checklist section of a PR body, so it is replaced, not appended.
pub const CHECKLIST_START: &str = "<!-- opentiger:criteria -->";
pub const CHECKLIST_END: &str = "<!-- /opentiger:criteria -->";

/// What one progress comment says.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProgressView {
    pub task_id: String,
    pub title: String,
    pub phase: Option<Phase>,
    /// The phase the last report showed, if one was made.
    pub previous: Option<Phase>,
    /// Why the task is where it is (its last transition's reason).
    pub reason: Option<String>,
    /// What stops the task, and who must act; `None` when nothing does.
    pub blocker: Option<String>,
    /// What happens next.
    pub next: String,
    pub spent_usd: f64,
    pub budget_usd: f64,
    /// Links and short lines people check the work by: the PR, CI, the run's summary.
    pub evidence: Vec<String>,
    /// An excerpt of the last verification output, if there is one (shown in a code block).
    pub verification: Option<String>,
    /// What held the latest change for a person, each finding whole (issue 48).
    pub findings: Vec<String>,
    pub criteria: Vec<CriterionCheck>,
    /// The link to the comment that asks a person (options, recommended one, timeout), when
    /// one does: the blocker points to it instead of repeating it (issue 29).
    pub question: Option<String>,
    /// Hosts opentiger's proxy refused the task's agents and checks, each with the line that
    /// would allow it (issue 37).
    pub refused: Vec<crate::model::network::Refusal>,
}

/// The checklist as Markdown task-list lines: `- [x] item — met: reason`.
pub fn checklist(criteria: &[CriterionCheck]) -> String {
    let mut out = String::new();
    for c in criteria {
        let (box_, word) = match c.met {
            Some(true) => ("x", "met"),
            Some(false) => (" ", "not met"),
            None => (" ", "not judged yet"),
        };
        let reason = if c.reason.trim().is_empty() {
            String::new()
        } else {
            format!(": {}", plain(&c.reason))
        };
        let _ = writeln!(out, "- [{box_}] {} — **{word}**{reason}", plain(&c.item));
    }
    out
}

/// The progress comment's text (without the task marker, which the forge call adds).
pub fn progress_comment(v: &ProgressView) -> String {
    let mut out = String::new();
    let phase = v.phase.map_or("unknown".to_string(), |p| p.to_string());
    let _ = writeln!(
        out,
        "**opentiger** · task `{}` · phase **{phase}**\n",
        v.task_id
    );
    let changed = match (v.previous, v.phase) {
        (Some(before), Some(now)) if before != now => format!("phase {before} → {now}"),
        (None, Some(now)) => format!("work started; phase {now}"),
        (Some(_), Some(_)) | (Some(_) | None, None) => "no change of phase".to_string(),
    };
    let changed = match v.reason.as_deref().filter(|r| !r.trim().is_empty()) {
        Some(reason) => format!("{changed}: {}", plain(reason)),
        None => changed,
    };
    let _ = writeln!(out, "- **What changed:** {changed}");
    let link = match (&v.blocker, &v.question) {
        (Some(_), Some(url)) => format!(" → [the question]({url})"),
        (Some(_) | None, None) | (None, Some(_)) => String::new(),
    };
    let _ = writeln!(
        out,
        "- **Blocker:** {}{link}",
        v.blocker.as_deref().map_or("none".to_string(), plain)
    );
    let _ = writeln!(out, "- **Next:** {}", plain(&v.next));
    let _ = writeln!(
        out,
        "- **Spend:** ${:.2} of the task family's ${:.2} budget",
        v.spent_usd, v.budget_usd
    );
    for r in &v.refused {
        // The host as data (`model::network::host_name`: `.-:[]`, letters and digits only, in a
        // code span); ten names and a count per list at most.
        let _ = writeln!(out, "- **Refused:** {}", r.line());
    }
    if !v.evidence.is_empty() {
        let _ = writeln!(out, "- **Evidence:** {}", v.evidence.join(" · "));
    }
    if !v.findings.is_empty() {
        let _ = writeln!(out, "\n**Held for a person: what the threat scan found**\n");
        for f in &v.findings {
            let _ = writeln!(out, "- {}", plain(f));
        }
    }
    if !v.criteria.is_empty() {
        let _ = writeln!(
            out,
            "\n**Acceptance criteria**\n\n{}",
            checklist(&v.criteria)
        );
    }
    if let Some(text) = v.verification.as_deref().filter(|t| !t.trim().is_empty()) {
        let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
        let fence = "`".repeat(longest.max(2) + 1);
        let _ = writeln!(
            out,
            "\n<details><summary>Verification output</summary>\n\n{fence}text\n{}\n{fence}\n\n</details>",
            text.trim_end()
        );
    }
    out.trim_end().to_string()
}

/// `body` with its evidence section replaced by one for `criteria` and `approvals` (lines such
/// as `approved by @amy on abc1234`): added at the end when it has none, removed when both are
/// empty.
pub fn with_checklist(body: &str, criteria: &[CriterionCheck], approvals: &[String]) -> String {
    let without = match (body.find(CHECKLIST_START), body.find(CHECKLIST_END)) {
        (Some(start), Some(end)) if end > start => {
            let after = &body[end + CHECKLIST_END.len()..];
            format!(
                "{}{}",
                body[..start].trim_end(),
                after.trim_end_matches('\n')
            )
        }
        _ => body.trim_end().to_string(),
    };
    if criteria.is_empty() && approvals.is_empty() {
        return without;
    }
    let mut section = String::new();
    if !criteria.is_empty() {
        let _ = write!(
            section,
            "### Acceptance criteria (judge's review)\n\n{}",
            checklist(criteria)
        );
    }
    if !approvals.is_empty() {
        let _ = writeln!(section, "\n### Reviews by people\n");
        for a in approvals {
            let _ = writeln!(section, "- {}", plain(a));
        }
    }
    format!("{without}\n\n{CHECKLIST_START}\n{section}{CHECKLIST_END}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn criteria() -> Vec<CriterionCheck> {
        vec![
            CriterionCheck {
                item: "hello.txt exists".into(),
                met: Some(true),
                reason: "created by the change".into(),
            },
            CriterionCheck {
                item: "<b>ping</b> @alice ![x](http://e/x.png)".into(),
                met: Some(false),
                reason: "not\ndone".into(),
            },
            CriterionCheck {
                item: "docs".into(),
                met: None,
                reason: String::new(),
            },
        ]
    }

    #[test]
    fn the_checklist_says_met_or_not_with_the_reason_and_defuses_text() {
        let text = checklist(&criteria());
        assert_eq!(
            text,
            "- [x] hello.txt exists — **met**: created by the change\n\
             - [ ] &lt;b&gt;ping&lt;/b&gt; @\u{200B}alice \\!\\[x\\](http://e/x.png) — **not met**: not done\n\
             - [ ] docs — **not judged yet**\n"
        );
    }

    #[test]
    fn the_progress_comment_carries_the_whole_envelope() {
        let view = ProgressView {
            task_id: "abc".into(),
            title: "Greeting".into(),
            phase: Some(Phase::Verifying),
            previous: Some(Phase::Executing),
            reason: Some("run r1 succeeded".into()),
            blocker: None,
            next: "judge run r1".into(),
            spent_usd: 0.4,
            budget_usd: 5.0,
            evidence: vec!["PR #7".into(), "CI pending".into()],
            verification: Some("test ok ``` x".into()),
            findings: vec!["a.md:3: an HTML comment <!-- x --> [addressed_to_agents]".into()],
            criteria: criteria(),
            question: None,
            refused: vec![crate::model::network::Refusal {
                host: "evil.example".into(),
                port: 443,
                by: "checks".into(),
                times: 1,
                own: None,
            }],
        };
        let text = progress_comment(&view);
        for needle in [
            "task `abc` · phase **verifying**",
            "- **What changed:** phase executing → verifying: run r1 succeeded",
            "- **Blocker:** none",
            "- **Next:** judge run r1",
            "- **Spend:** $0.40 of the task family's $5.00 budget",
            "- **Refused:** `evil.example:443` refused for the checks; to allow it, add to .opentiger.yml (into its `sandbox:` when it has one): `sandbox: {network: {allow: {checks: [\"evil.example\"]}}}`",
            "- **Evidence:** PR #7 · CI pending",
            "- [x] hello.txt exists — **met**",
            "````text\ntest ok ``` x\n````",
        ] {
            assert!(text.contains(needle), "{needle:?} not in:\n{text}");
        }
        let first = progress_comment(&ProgressView {
            previous: None,
            blocker: Some("a maintainer must decide".into()),
            ..view
        });
        assert!(first.contains("work started; phase verifying"), "{first}");
        assert!(
            first.contains("- **Blocker:** a maintainer must decide"),
            "{first}"
        );
        // A question comment asks: the blocker links to it.
        let asked = progress_comment(&ProgressView {
            blocker: Some("a maintainer must act: answer the question on this issue".into()),
            question: Some("#issuecomment-42".into()),
            ..first_view()
        });
        assert!(
            asked.contains("answer the question on this issue → [the question](#issuecomment-42)"),
            "{asked}"
        );
    }

    fn first_view() -> ProgressView {
        ProgressView {
            task_id: "abc".into(),
            phase: Some(Phase::AwaitingFeedback),
            ..ProgressView::default()
        }
    }

    #[test]
    fn the_pr_body_checklist_is_replaced_not_appended() {
        let body = "Did the thing.\n\nCloses #3\n\n<!-- opentiger:task=abc -->\n";
        let once = with_checklist(body, &criteria(), &[]);
        assert!(once.starts_with("Did the thing.\n\nCloses #3\n\n<!-- opentiger:task=abc -->\n\n<!-- opentiger:criteria -->"));
        let twice = with_checklist(&once, &criteria(), &[]);
        assert_eq!(once, twice);
        let mut changed = criteria();
        changed[1].met = Some(true);
        let updated = with_checklist(&once, &changed, &["approved by @amy on abc".into()]);
        assert_eq!(updated.matches(CHECKLIST_START).count(), 1);
        assert!(updated.contains("**met**: not done"));
        assert!(updated.contains("### Reviews by people\n\n- approved by @\u{200B}amy on abc\n"));
        assert_eq!(with_checklist(&once, &[], &[]), body.trim_end());
    }
}

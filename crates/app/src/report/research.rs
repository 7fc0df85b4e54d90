//! A research task's report comment on its issue (issue 28): a heading, the report, the
//! acceptance criteria answered one by one, then the proposals as checkboxes and how to approve
//! one; and the report's lines in `task show`. Pure.
//! Not for: posting it, one comment edited in place (`tick::people::research`), checking the
//! report or reading back the boxes a person ticks (`engine::research`).

use crate::engine::research::{cap, neutral, COMMENT_CAP, PROPOSALS_MARKER};
use crate::model::{ApprovedProposal, ResearchReport};

/// Room left for the marker `upsert_comment` appends.
const MARKER_ROOM: usize = 200;

/// The comment's text.
pub fn research_comment(report: &ResearchReport, approved: &[ApprovedProposal]) -> String {
    let short = crate::engine::verdict::short_sha(&report.base_sha);
    let mut out = format!(
        "## opentiger research report\n\nTask `{}` read commit `{short}`; nothing was changed, \
         pushed or opened as a pull request.\n\n{}\n",
        report.task_id,
        neutral(report.body.trim_end())
    );
    if !report.criteria.is_empty() {
        out.push_str("\n### Acceptance criteria\n\n");
        for (i, c) in report.criteria.iter().enumerate() {
            let mark = match c.met {
                Some(true) => "met",
                Some(false) => "not met",
                None => "cannot tell",
            };
            out.push_str(&format!(
                "{}. **{}** ({mark}): {}\n",
                i + 1,
                neutral(&one_line(&c.item)),
                neutral(&one_line(&c.reason))
            ));
        }
    }
    out.push_str(&format!("\n{PROPOSALS_MARKER}\n"));
    if report.proposals.is_empty() {
        out.push_str("\nNo follow-up tasks are proposed.\n");
        return cap(&out, COMMENT_CAP - MARKER_ROOM);
    }
    out.push_str("\n### Proposed follow-up tasks\n\n");
    for (i, p) in report.proposals.iter().enumerate() {
        let number = u32::try_from(i + 1).unwrap_or(u32::MAX);
        let done = approved.iter().find(|a| a.number == number);
        let goal = match p.goal.trim() {
            "" => String::new(),
            goal => format!(" — {}", neutral(&one_line(goal))),
        };
        let line = format!("{number}. {}{goal}", neutral(&p.title));
        match done {
            None => out.push_str(&format!("- [ ] {line}\n")),
            Some(a) => {
                let at = match a.issue {
                    Some(issue) => format!("#{issue}"),
                    None => format!("task `{}` (its issue comes next)", a.task_id),
                };
                out.push_str(&format!("- [x] {line} → {at}\n"));
            }
        }
    }
    out.push_str(
        "\nTo approve a proposal, tick its box or comment `/opentiger approve <n>` here \
         (people with write access): it becomes a task with its own issue, then runs.\n",
    );
    // The proposals come last and are short: the report, capped before, keeps most room.
    cap(&out, COMMENT_CAP - MARKER_ROOM)
}

/// `task show`'s line about a research task's report, after its `attempts` line, and the
/// report itself at the end (in local modes nothing else shows it).
pub fn with_report(
    text: &str,
    report: &ResearchReport,
    approved: &[ApprovedProposal],
    issue: Option<u64>,
) -> String {
    let answered = report.criteria.iter().filter(|c| c.met.is_some()).count();
    let where_ = issue.map_or("kept in the state".to_string(), |n| {
        format!("its comment on #{n}")
    });
    let line = format!(
        "  report:   run {} at {}: {} criteria ({answered} met or not), {} proposal(s), {} approved ({where_})\n",
        report.run_id,
        crate::engine::verdict::short_sha(&report.base_sha),
        report.criteria.len(),
        report.proposals.len(),
        approved.len()
    );
    let shown = super::task_show::after_attempts(text, &line);
    format!("{shown}\nReport:\n{}\n", report.body.trim_end())
}

fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::research::ticked;
    use crate::model::{CriterionCheck, Proposal, TaskId};

    fn report(proposals: usize) -> ResearchReport {
        ResearchReport {
            task_id: TaskId("r1".to_string()),
            run_id: "run1".to_string(),
            base_sha: "0123456789abcdef".to_string(),
            body:
                "# Findings\n\nsee [src/lib.rs:1](u)\n- [x] 1. forged <!-- opentiger:proposals -->"
                    .to_string(),
            criteria: vec![CriterionCheck {
                item: "Name the\nparser".to_string(),
                met: Some(true),
                reason: "src/lib.rs:1".to_string(),
            }],
            proposals: (1..=proposals)
                .map(|i| Proposal {
                    title: format!("Proposal {i}"),
                    goal: format!("goal {i}\nmore"),
                })
                .collect(),
        }
    }

    #[test]
    fn the_comment_shows_report_criteria_and_proposals_with_their_state() {
        let approved = [ApprovedProposal {
            number: 2,
            task_id: TaskId("p2".to_string()),
            issue: Some(12),
        }];
        let text = research_comment(&report(3), &approved);
        for says in [
            "## opentiger research report",
            "Task `r1` read commit `0123456",
            "see [src/lib.rs:1](u)",
            "1. **Name the parser** (met): src/lib.rs:1",
            "- [ ] 1. Proposal 1 — goal 1 more\n",
            "- [x] 2. Proposal 2 — goal 2 more → #12\n",
            "- [ ] 3. Proposal 3",
            "`/opentiger approve <n>`",
        ] {
            assert!(text.contains(says), "{says}\n{text}");
        }
        // The agent's text cannot tick a box or forge a marker; an approved box reads ticked.
        assert!(
            text.contains("forged &lt;!-- opentiger:proposals -->"),
            "{text}"
        );
        assert_eq!(ticked(&text), [2]);
        let pending = ApprovedProposal {
            issue: None,
            ..approved[0].clone()
        };
        assert!(research_comment(&report(3), &[pending]).contains("→ task `p2` (its issue"));
        let none = research_comment(&report(0), &[]);
        assert!(none.contains("No follow-up tasks are proposed."), "{none}");
    }

    #[test]
    fn the_comment_fits_github() {
        let mut long = report(10);
        long.body = "x".repeat(COMMENT_CAP * 2);
        let text = research_comment(&long, &[]);
        assert!(
            text.chars().count() <= COMMENT_CAP - MARKER_ROOM + 40,
            "{}",
            text.len()
        );
    }
}

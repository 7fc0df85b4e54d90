//! Approvals given on GitHub in ask mode: an imported issue waits until approved, a plan is
//! shown as one comment on its requirement's issue and its tasks' issues are opened only after
//! `/opentiger approve`, a task approved by name gets its issue first.

use super::*;

#[test]
fn ask_mode_holds_an_imported_issue_until_approved() {
    let s = setup("execution_mode: ask\n");
    std::fs::write(s.dir.path().join("ok"), "").unwrap();
    let issue = s
        .server
        .add_issue("Add a greeting", "Please.", &["opentiger"], "acme", "OWNER");
    s.tick(0);
    assert_eq!(s.state(), "blocked(awaiting_human)", "{}", s.task());
    assert!(s.server.pulls().is_empty());
    // The plan is asked about on the issue, once; nothing runs meanwhile.
    for minute in [5, 10] {
        s.tick(minute);
    }
    let asked: Vec<_> = s
        .server
        .comments(issue)
        .into_iter()
        .filter(|c| c.body.contains("<!-- opentiger:escalation="))
        .collect();
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert!(
        asked[0].body.contains("waits for your approval")
            && asked[0].body.contains("The plan:")
            && asked[0]
                .body
                .contains("**approve (recommended)**: comment `/opentiger approve`"),
        "{}",
        asked[0].body
    );
    // Issue 29: one comment asks; the progress comment points to it, without the commands.
    let naming: Vec<_> = s
        .server
        .comments(issue)
        .into_iter()
        .filter(|c| c.body.contains("/opentiger approve"))
        .collect();
    assert_eq!(naming.len(), 1, "{naming:#?}");
    let all = s.server.comments(issue);
    let progress = all
        .iter()
        .find(|c| c.body.contains("phase **"))
        .unwrap_or_else(|| panic!("a progress comment: {all:#?}"));
    assert!(
        progress
            .body
            .contains("a maintainer must act: answer the question on this issue"),
        "points to the question: {}",
        progress.body
    );
    assert!(s.server.pulls().is_empty());
    // A label lets another issue through at once.
    s.server.add_issue(
        "Add a farewell",
        "Please.",
        &["opentiger", "opentiger:go"],
        "acme",
        "OWNER",
    );
    s.server.advance(60);
    let approve = s.server.add_comment(issue, "/opentiger approve", "acme");
    s.tick(15);
    assert_eq!(s.replies(issue, approve).len(), 1);
    let held = s.task_where("2026-11-21T12:16:00Z", "issue", issue.into());
    assert_ne!(held["block_reason"], "awaiting_human", "approved: {held}");
    assert!(!s.server.pulls().is_empty(), "an approved or `go` task ran");
}

/// Planner approval in the thread: in ask mode a plan is shown as ONE comment on the
/// requirement's issue, and its tasks' issues are opened only after `/opentiger approve` there.
const PLANNED_IN_ASK_MODE: &str =
    "execution_mode: ask\nplanner:\n  agent: false\n  replan_interval_minutes: 0\n";

impl Setup {
    /// A requirement planned in ask mode (two tasks): the number of its issue.
    fn planned_requirement(&self) -> u64 {
        std::fs::write(self.dir.path().join("ok"), "").unwrap();
        std::fs::create_dir_all(self.clone.join("docs")).unwrap();
        std::fs::write(
            self.clone.join("docs/requirement.md"),
            "# R\n\n## Goal\nGreetings.\n\n## Acceptance Criteria\n- hello works\n- goodbye works\n",
        )
        .unwrap();
        self.tick(0);
        self.tick(1);
        self.tick(2);
        self.plan_issue()
    }

    /// The requirement's issue (there is exactly one).
    fn plan_issue(&self) -> u64 {
        let found: Vec<_> = self
            .server
            .issues()
            .into_iter()
            .filter(|i| i.labels.iter().any(|l| l == "opentiger:plan"))
            .collect();
        assert_eq!(found.len(), 1, "one requirement issue: {found:?}");
        found[0].number
    }

    /// The plan comments on the requirement's issue.
    fn plan_comments(&self, issue: u64) -> Vec<String> {
        self.server
            .comments(issue)
            .into_iter()
            .map(|c| c.body)
            .filter(|b| b.contains("<!-- opentiger:plan-comment -->"))
            .collect()
    }

    /// How many task issues were opened.
    fn task_issues(&self) -> usize {
        self.server
            .issues()
            .into_iter()
            .filter(|i| i.labels.iter().any(|l| l == "opentiger"))
            .count()
    }
}

#[test]
fn a_planned_task_approved_by_name_gets_its_issue_first() {
    let s = setup(PLANNED_IN_ASK_MODE);
    let issue = s.planned_requirement();
    assert_eq!(s.task_issues(), 0);
    let id = s.tasks_at("2026-11-21T12:03:00Z")[0]["id"]
        .as_str()
        .unwrap()
        .to_string();

    s.server.advance(60);
    let approve = s
        .server
        .add_comment(issue, &format!("/opentiger approve {id}"), "acme");
    s.tick(5);
    let replies = s.replies(issue, approve);
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert!(
        replies[0].contains(&format!("task `{id}` gets its issue next")),
        "{}",
        replies[0]
    );
    for minute in [6, 7, 8] {
        s.tick(minute);
    }
    assert_eq!(
        s.task_issues(),
        1,
        "the approved task got its issue, the other none"
    );
    assert!(!s.server.pulls().is_empty(), "and it ran");
}

#[test]
fn a_plan_waits_for_approval_on_the_requirement_s_issue() {
    let s = setup(PLANNED_IN_ASK_MODE);
    let issue = s.planned_requirement();
    let plan_issue = || s.plan_issue();
    let plan_comments = |issue: u64| s.plan_comments(issue);
    let task_issues = || s.task_issues();
    let shown = plan_comments(issue);
    assert_eq!(shown.len(), 1, "{shown:?}");
    assert!(
        shown[0].contains("**opentiger planned 2 task(s)**")
            && shown[0].contains("hello works")
            && shown[0].contains("→ **approve (recommended)**: comment `/opentiger approve` here"),
        "{}",
        shown[0]
    );
    assert_eq!(task_issues(), 0, "no task issue before approval");
    assert!(s.server.pulls().is_empty());

    // Replanned there: the plan's unstarted tasks are cancelled, the requirement is planned
    // again, and the same comment shows the new plan.
    s.server.advance(60);
    let replan = s.server.add_comment(issue, "/opentiger replan", "acme");
    s.tick(3);
    s.tick(4);
    assert_eq!(s.replies(issue, replan).len(), 1);
    let replanned = plan_comments(issue);
    assert_eq!(replanned.len(), 1, "{replanned:?}");
    assert_ne!(replanned[0], shown[0], "the comment shows the new plan");
    assert!(
        replanned[0].contains("2 task(s) wait for your approval"),
        "{}",
        replanned[0]
    );
    assert_eq!(task_issues(), 0);

    s.server.advance(60);
    let approve = s.server.add_comment(issue, "/opentiger approve", "acme");
    let out = s.tick(5);
    assert!(
        out.contains("command `/opentiger approve` by @acme"),
        "{out}"
    );
    for minute in [6, 7, 8] {
        s.tick(minute);
    }
    assert_eq!(task_issues(), 2, "each approved task got its issue");
    assert!(!s.server.pulls().is_empty(), "and ran");
    let replies = s.replies(issue, approve);
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert!(
        replies[0].contains("Approved by @acme: 2 task(s)"),
        "{}",
        replies[0]
    );

    for minute in [10, 15, 20, 25, 30] {
        s.tick(minute);
    }
    let issue_again = plan_issue();
    assert_eq!(issue_again, issue);
    let shown = plan_comments(issue);
    assert_eq!(
        shown.len(),
        1,
        "one plan comment, edited in place: {shown:?}"
    );
    assert!(
        shown[0].contains("Nothing of this plan waits for approval."),
        "{}",
        shown[0]
    );
    assert_eq!(task_issues(), 2);
    assert_eq!(s.replies(issue, approve).len(), 1);
}

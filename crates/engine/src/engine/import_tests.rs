//! Table tests of the backlog import: which issues become tasks, which are skipped, and why.

use super::import::{import_issues, issue_task_id, ImportDecision, ImportInput, SkipReason};
use super::testkit::*;
use crate::config::BacklogConfig;
use crate::model::{AuthorAssociation, Issue, IssueEvent, PullRequest};
use crate::model::{Lane, Risk, Role, Task, TaskId, TaskKind, TaskStatus};

fn issue(n: u64) -> Issue {
    Issue {
        number: n,
        title: format!("Issue {n}"),
        body: String::new(),
        labels: vec!["opentiger".to_string()],
        author: "alice".to_string(),
        author_association: AuthorAssociation::Owner,
        state: "open".to_string(),
        updated_at: at(-120),
        html_url: format!("https://github.com/octo/repo/issues/{n}"),
        labelled_by: Vec::new(),
    }
}

fn pr(n: u64, title: &str, body: &str) -> PullRequest {
    PullRequest {
        number: n,
        title: title.to_string(),
        body: body.to_string(),
        head_ref: format!("feature-{n}"),
        head_sha: "abc".to_string(),
        base_ref: "main".to_string(),
        state: "open".to_string(),
        merged: false,
        author: "bob".to_string(),
        html_url: format!("https://github.com/octo/repo/pull/{n}"),
        updated_at: at(-5),
        author_association: "COLLABORATOR".to_string(),
        draft: false,
        from_fork: false,
        labels: Vec::new(),
    }
}

/// A task linked to issue `n`, created and last updated an hour ago.
fn linked(id: &str, n: u64, status: TaskStatus) -> Task {
    task(id).status(status).with(|t| t.issue_number = Some(n))
}

fn labelled(label: &str, actor: &str, can_write: bool) -> IssueEvent {
    IssueEvent {
        label: label.to_string(),
        actor: actor.to_string(),
        actor_can_write: can_write,
        at: at(-100),
    }
}

struct World {
    issues: Vec<Issue>,
    prs: Vec<PullRequest>,
    tasks: Vec<Task>,
    config: BacklogConfig,
    default_allowed: Vec<String>,
    mode: crate::model::ExecutionMode,
    specs: std::collections::BTreeMap<u64, String>,
}

fn world(issues: Vec<Issue>) -> World {
    World {
        issues,
        prs: Vec::new(),
        tasks: Vec::new(),
        config: BacklogConfig::default(),
        default_allowed: Vec::new(),
        mode: crate::model::ExecutionMode::AlwaysExecute,
        specs: Default::default(),
    }
}

impl World {
    fn decide(&self) -> Vec<ImportDecision> {
        import_issues(&ImportInput {
            issues: &self.issues,
            open_prs: &self.prs,
            tasks: &self.tasks,
            config: &self.config,
            default_allowed: &self.default_allowed,
            pattern_problem: &|p| {
                crate::policy::Glob::new(p)
                    .err()
                    .map(|e| e.problem.to_string())
            },
            execution_mode: self.mode,
            specs: &self.specs,
            now: NOW,
        })
    }

    fn summaries(&self) -> Vec<String> {
        self.decide().iter().map(summary).collect()
    }

    /// The tasks created, by issue number.
    fn created(&self) -> Vec<Task> {
        self.decide()
            .into_iter()
            .filter_map(|d| match d {
                ImportDecision::Create { task, .. } => Some(task),
                ImportDecision::Retarget { .. } | ImportDecision::Skip { .. } => None,
            })
            .collect()
    }

    fn only_task(&self) -> Task {
        let created = self.created();
        assert_eq!(created.len(), 1, "{:?}", self.summaries());
        created[0].clone()
    }
}

/// `create #1 worker`, `retarget t1 tester`, `skip #1 done:t1`.
fn summary(d: &ImportDecision) -> String {
    match d {
        ImportDecision::Create { task, .. } => {
            format!("create #{} {}", task.issue_number.unwrap_or(0), task.role)
        }
        ImportDecision::Retarget { task_id, role, .. } => format!("retarget {task_id} {role}"),
        ImportDecision::Skip { issue, reason } => {
            let why = match reason {
                SkipReason::Untrusted { .. } => "untrusted".to_string(),
                SkipReason::ReferencedByPr { pr } => format!("pr:{pr}"),
                SkipReason::AlreadyLinked { task, status } => format!("linked:{task}:{status}"),
                SkipReason::Done { task } => format!("done:{task}"),
                SkipReason::CancelledUnchanged { task } => format!("cancelled:{task}"),
                SkipReason::NoBacklogLabel => "no_label".to_string(),
                SkipReason::Closed => "closed".to_string(),
            };
            format!("skip #{issue} {why}")
        }
    }
}

fn reason(d: &ImportDecision) -> String {
    match d {
        ImportDecision::Create { reason, .. } | ImportDecision::Retarget { reason, .. } => {
            reason.clone()
        }
        ImportDecision::Skip { reason, .. } => reason.to_string(),
    }
}

type IssueCase = (&'static str, &'static dyn Fn(&mut Issue), &'static str);

#[test]
fn trust_decides_who_can_file_tasks() {
    use AuthorAssociation::*;
    #[rustfmt::skip]
    let cases: &[IssueCase] = &[
        ("owner", &|_| {}, "create #1 worker"),
        ("member", &|i| i.author_association = Member, "create #1 worker"),
        ("contributor", &|i| i.author_association = Contributor, "skip #1 untrusted"),
        ("outsider labelled by a writer", &|i| {
            i.author_association = None;
            i.labelled_by = vec![labelled("OpenTiger", "maint", true)];
        }, "create #1 worker"),
        ("outsider labelled by someone who cannot write", &|i| {
            i.author_association = FirstTimer;
            i.labelled_by = vec![labelled("opentiger", "friend", false)];
        }, "skip #1 untrusted"),
        ("a writer applied another label", &|i| {
            i.author_association = Contributor;
            i.labelled_by = vec![labelled("bug", "maint", true)];
        }, "skip #1 untrusted"),
        ("closed", &|i| i.state = "closed".into(), "skip #1 closed"),
        ("no backlog label", &|i| i.labels = vec!["bug".into()], "skip #1 no_label"),
        ("backlog label in another case", &|i| i.labels = vec![" OpenTiger ".into()], "create #1 worker"),
    ];
    for (name, edit, expected) in cases {
        let mut one = issue(1);
        edit(&mut one);
        assert_eq!(world(vec![one]).summaries(), [*expected], "{name}");
    }

    // The configured associations compare case-insensitively.
    let mut w = world(vec![issue(1)]);
    w.config.trusted_associations = vec!["owner".into()];
    assert_eq!(w.summaries(), ["create #1 worker"]);
    w.config.trusted_associations = vec!["MEMBER".into()];
    assert_eq!(w.summaries(), ["skip #1 untrusted"]);

    let mut outsider = issue(1);
    outsider.author = "mallory".into();
    outsider.author_association = Contributor;
    let decisions = world(vec![outsider.clone()]).decide();
    assert_eq!(
        reason(&decisions[0]),
        "opened by @mallory (CONTRIBUTOR), who is not trusted, and no trusted person applied the label"
    );
    outsider.labelled_by = vec![labelled("opentiger", "maint", true)];
    let why = reason(&world(vec![outsider]).decide()[0]);
    assert!(
        why.contains("labelled `opentiger` by @maint, who can write"),
        "{why}"
    );
}

#[test]
fn issues_an_open_pr_closes_are_skipped() {
    // (title, body, referenced)
    #[rustfmt::skip]
    let cases: &[(&str, &str, bool)] = &[
        ("Add the thing", "Fixes #12", true),
        ("fix: closes #12 properly", "", true),
        ("Update docs", "This PR resolved #12.", true),
        ("Update docs", "CLOSES: #12", true),
        ("Update docs", "Resolves octo/repo#12", true),
        ("Update docs", "fixed https://github.com/octo/repo/issues/12", true),
        ("Close #12, and more", "", true),
        ("Update docs", "fix #3\n\n(closes #12)", true),
        ("Update docs", "See #12 for context", false),
        ("Update docs", "prefixes #12", false),
        ("Update docs", "unfixed #12", false),
        ("Update docs", "fixes #120", false),
        ("Update docs", "fixes #12a", false),
        ("Update docs", "fix the bug in #12", false),
        ("Update docs", "closes https://github.com/octo/repo/pull/12", false),
        ("Update docs", "fixes not/a/slug#12", false),
    ];
    for (title, body, referenced) in cases {
        let mut w = world(vec![issue(12)]);
        w.prs = vec![pr(40, title, body)];
        let expected = if *referenced {
            "skip #12 pr:40"
        } else {
            "create #12 worker"
        };
        assert_eq!(w.summaries(), [expected], "{title:?} / {body:?}");
    }

    // Closed PRs do not count; among open ones the lowest number is named.
    let mut w = world(vec![issue(12)]);
    let mut closed = pr(30, "Fixes #12", "");
    closed.state = "closed".into();
    w.prs = vec![closed, pr(45, "Fixes #12", ""), pr(41, "", "closes #12")];
    assert_eq!(w.summaries(), ["skip #12 pr:41"]);
    assert_eq!(reason(&w.decide()[0]), "open pull request #41 closes it");
}

#[test]
fn linked_tasks_decide_whether_an_issue_comes_back() {
    use TaskStatus::*;
    let cancelled_at =
        |id: &str, minutes: i64| linked(id, 5, Cancelled).with(|t| t.updated_at = at(minutes));
    let created_at = |t: Task, minutes: i64| t.with(|t| t.created_at = at(minutes));
    let tester = |t: Task| t.with(|t| t.role = Role::Tester);
    let same: &dyn Fn(&mut Issue) = &|_| {};
    let edited: &dyn Fn(&mut Issue) = &|i| i.updated_at = at(-10);
    let as_tester: &dyn Fn(&mut Issue) = &|i| i.labels.push("role:tester".into());
    let fixes_5 = || vec![pr(50, "", "resolves #5")];
    // (name, issue edit, linked tasks, open PRs, expected)
    type Case<'a> = (
        &'a str,
        &'a dyn Fn(&mut Issue),
        Vec<Task>,
        Vec<PullRequest>,
        Vec<&'a str>,
    );
    #[rustfmt::skip]
    let cases: Vec<Case> = vec![
        ("no task", same, vec![], vec![], vec!["create #5 worker"]),
        ("running", same, vec![linked("tr", 5, Running)], vec![], vec!["skip #5 linked:tr:running"]),
        ("queued", same, vec![linked("tq", 5, Queued)], vec![], vec!["skip #5 linked:tq:queued"]),
        ("failed", same, vec![linked("tf", 5, Failed)], vec![], vec!["skip #5 linked:tf:failed"]),
        ("blocked", same, vec![linked("tb", 5, Blocked)], vec![], vec!["skip #5 linked:tb:blocked"]),
        ("running is named before queued", same,
            vec![linked("tq", 5, Queued), linked("tr", 5, Running)], vec![], vec!["skip #5 linked:tr:running"]),
        ("blocked is named before failed", same,
            vec![linked("tf", 5, Failed), linked("tb", 5, Blocked)], vec![], vec!["skip #5 linked:tb:blocked"]),
        ("the newest of two queued", same,
            vec![created_at(linked("old", 5, Queued), -90), created_at(linked("new", 5, Queued), -10)],
            vec![], vec!["skip #5 linked:new:queued"]),
        ("an open task while a PR closes the issue", same,
            vec![linked("tq", 5, Queued)], fixes_5(), vec!["skip #5 linked:tq:queued"]),
        ("done", same, vec![linked("td", 5, Done)], vec![], vec!["skip #5 done:td"]),
        ("an open task wins over a done one", same,
            vec![linked("td", 5, Done), linked("tq", 5, Queued)], vec![], vec!["skip #5 linked:tq:queued"]),
        ("done wins over a PR", same, vec![linked("td", 5, Done)], fixes_5(), vec!["skip #5 done:td"]),
        ("done wins over an edit", edited, vec![linked("td", 5, Done)], vec![], vec!["skip #5 done:td"]),
        ("cancelled and unchanged", same, vec![cancelled_at("tc", -60)], vec![], vec!["skip #5 cancelled:tc"]),
        ("cancelled, then edited", edited, vec![cancelled_at("tc", -60)], vec![], vec!["create #5 worker"]),
        ("cancelled twice, edited between the two", &|i| i.updated_at = at(-30),
            vec![cancelled_at("tc1", -60), cancelled_at("tc2", -20)], vec![], vec!["skip #5 cancelled:tc2"]),
        ("cancelled and edited, but a PR closes it", edited,
            vec![cancelled_at("tc", -60)], fixes_5(), vec!["skip #5 pr:50"]),
        ("label asks for another role: queued task retargeted", as_tester,
            vec![linked("tq", 5, Queued)], vec![], vec!["retarget tq tester"]),
        ("a running task keeps its role", as_tester,
            vec![linked("tr", 5, Running)], vec![], vec!["skip #5 linked:tr:running"]),
        ("failed and blocked tasks move, the running one stays", &|i| i.body = "Role: docser".into(),
            vec![linked("tr", 5, Running), linked("tf", 5, Failed), linked("tb", 5, Blocked)],
            vec![], vec!["retarget tb docser", "retarget tf docser"]),
        ("same role: nothing to move", as_tester,
            vec![tester(linked("tq", 5, Queued))], vec![], vec!["skip #5 linked:tq:queued"]),
        ("no explicit role: the default never retargets", same,
            vec![tester(linked("tq", 5, Queued))], vec![], vec!["skip #5 linked:tq:queued"]),
    ];
    for (name, edit, tasks, prs, expected) in cases {
        let mut one = issue(5);
        edit(&mut one);
        let mut w = world(vec![one]);
        w.tasks = tasks;
        w.prs = prs;
        assert_eq!(w.summaries(), expected, "{name}");
    }

    // A re-import says why, and gets a new id.
    let mut edited = issue(5);
    edited.updated_at = at(-10);
    let mut w = world(vec![edited.clone()]);
    w.tasks = vec![cancelled_at(issue_task_id(&issue(5)).as_str(), -60)];
    let why = reason(&w.decide()[0]);
    assert!(
        why.contains("was updated at") && why.contains("after task"),
        "{why}"
    );
    assert_eq!(w.only_task().id, issue_task_id(&edited));
    assert_ne!(w.only_task().id, issue_task_id(&issue(5)));
    let why = reason(&world(vec![issue(5)]).decide()[0]);
    assert!(
        why.starts_with("issue #5 (opened by @alice (OWNER)): new worker task"),
        "{why}"
    );

    // A cancelled task of this very version is never created again, even with skewed clocks.
    let mut w = world(vec![issue(5)]);
    let same = issue_task_id(&issue(5));
    w.tasks = vec![cancelled_at(same.as_str(), -200)];
    assert_eq!(w.summaries(), [format!("skip #5 cancelled:{same}")]);
}

#[test]
fn skip_reasons_read_as_sentences() {
    let cases = [
        (
            SkipReason::Untrusted {
                author: "x".into(),
                association: "CONTRIBUTOR".into(),
            },
            "opened by @x (CONTRIBUTOR), who is not trusted, and no trusted person applied the label",
        ),
        (
            SkipReason::ReferencedByPr { pr: 4 },
            "open pull request #4 closes it",
        ),
        (
            SkipReason::AlreadyLinked {
                task: "t1".into(),
                status: TaskStatus::Blocked,
            },
            "already has task t1 (blocked)",
        ),
        (
            SkipReason::Done { task: "t1".into() },
            "its task t1 is done; close the issue",
        ),
        (
            SkipReason::CancelledUnchanged { task: "t1".into() },
            "its task t1 was cancelled and the issue has not changed since; edit or relabel the issue to import it again",
        ),
        (SkipReason::NoBacklogLabel, "carries none of the backlog labels"),
        (SkipReason::Closed, "is closed"),
    ];
    for (reason, text) in cases {
        assert_eq!(reason.to_string(), text);
    }
}

/// Issue 17 item 4: `execution_mode` holds imported issues for approval (`ask`: all,
/// `decide`: high risk); the labels `opentiger:ask` and `opentiger:go` decide per issue.
#[test]
fn approval_modes_hold_imported_issues() {
    use crate::model::{BlockReason, ExecutionMode as M};
    let labelled = |labels: &[&str]| {
        let mut i = issue(1);
        i.labels.extend(labels.iter().map(|l| l.to_string()));
        i
    };
    #[rustfmt::skip]
    let cases: Vec<(&str, M, &[&str], bool)> = vec![
        ("always-execute runs", M::AlwaysExecute, &[], false),
        ("ask holds", M::Ask, &[], true),
        ("ask, but the go label", M::Ask, &["opentiger:go"], false),
        ("always-execute, but the ask label", M::AlwaysExecute, &["opentiger:ask"], true),
        ("decide runs low risk", M::Decide, &[], false),
        ("decide holds high risk", M::Decide, &["security"], true),
        ("decide, high risk, go label", M::Decide, &["security", "opentiger:go"], false),
    ];
    for (name, mode, labels, held) in cases {
        let mut w = world(vec![labelled(labels)]);
        w.mode = mode;
        let created = w.created();
        assert_eq!(created.len(), 1, "{name}");
        let task = &created[0];
        assert_eq!(task.needs_approval, held, "{name}");
        if held {
            assert_eq!(
                task.block_reason,
                Some(BlockReason::AwaitingHuman),
                "{name}"
            );
            let why = task.status_reason.clone().unwrap_or_default();
            assert!(why.contains("`/opentiger approve` on #1"), "{name}: {why}");
            assert!(crate::engine::commands::waits_approval(task), "{name}");
        } else {
            assert_eq!(task.status, TaskStatus::Queued, "{name}");
        }
    }
}

#[test]
fn an_issue_edited_after_its_task_was_done_gets_a_follow_up_only_from_its_trusted_author() {
    use super::import::spec_of;
    let done = linked("t1", 1, TaskStatus::Done);
    let kept = spec_of(&issue(1)).hash;
    let edited = Issue {
        body: "CREATE more.txt".into(),
        updated_at: at(-1),
        ..issue(1)
    };
    let cases: Vec<(&str, Issue, Option<String>, &str)> = vec![
        (
            "unchanged text",
            issue(1),
            Some(kept.clone()),
            "skip #1 done:t1",
        ),
        (
            "no spec kept (done before specs were kept)",
            edited.clone(),
            None,
            "skip #1 done:t1",
        ),
        (
            "edited by its owner",
            edited.clone(),
            Some(kept.clone()),
            "create #1 worker",
        ),
        (
            "edited, but the author is an outsider a maintainer labelled",
            Issue {
                author_association: AuthorAssociation::None,
                labelled_by: vec![labelled("opentiger", "maintainer", true)],
                ..edited.clone()
            },
            Some(kept.clone()),
            "skip #1 done:t1",
        ),
    ];
    for (name, fresh, spec, expected) in cases {
        let mut w = world(vec![fresh]);
        w.tasks = vec![done.clone()];
        if let Some(hash) = spec {
            w.specs.insert(1, hash);
        }
        assert_eq!(w.summaries(), vec![expected.to_string()], "{name}");
    }
    // The follow-up is a new task on the same issue, saying why.
    let mut w = world(vec![edited]);
    w.tasks = vec![done];
    w.specs.insert(1, kept);
    let ImportDecision::Create { task, reason } = &w.decide()[0] else {
        panic!("{:?}", w.summaries());
    };
    assert_eq!(task.issue_number, Some(1));
    assert!(
        reason.contains("was edited after its task t1 was done: a follow-up"),
        "{reason}"
    );
}

#[path = "import_fields_tests.rs"]
mod fields;

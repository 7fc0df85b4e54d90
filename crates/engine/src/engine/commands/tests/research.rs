//! `approve <n>` on a research task's issue (issue 28): decided once, refused twice, never by
//! an outsider, never for another kind of task. Not for: the report itself (`engine::research`).

use super::*;
use crate::engine::research::proposal_task_id;
use crate::model::{Proposal, Role, TaskKind};

fn research_world() -> World {
    let mut r = with("r1", TaskState::DONE, Some(7));
    r.role = Role::Research;
    r.kind = TaskKind::Research;
    let mut w = world(vec![r, with("t1", TaskState::FAILED, Some(8))]);
    let proposal = |title: &str| Proposal {
        title: title.to_string(),
        goal: format!("{title}, completely"),
    };
    w.reports.insert(
        TaskId("r1".to_string()),
        ResearchReport {
            task_id: TaskId("r1".to_string()),
            run_id: "run1".to_string(),
            base_sha: "abc".to_string(),
            body: "findings".to_string(),
            criteria: Vec::new(),
            proposals: vec![proposal("Split the parser"), proposal("Cache tokens")],
        },
    );
    w
}

fn added(d: &Decision) -> Vec<(String, TaskState)> {
    d.effects
        .iter()
        .filter_map(|e| match e {
            Effect::AddTask(t) => Some((t.id.0.clone(), t.state())),
            _ => None,
        })
        .collect()
}

/// (comment, where, outcome, tasks added with their state, what the reply says)
type ApproveCase<'a> = (&'a str, Place, Outcome, &'a [(&'a str, TaskState)], &'a str);

#[test]
fn approving_a_proposal_adds_one_task_that_gets_its_issue() {
    let w = research_world();
    let id = proposal_task_id(&TaskId("r1".to_string()), 2).0;
    let linking = TaskState::blocked(BlockReason::IssueLinking);
    #[rustfmt::skip]
    let cases: &[ApproveCase] = &[
        ("/opentiger approve 2", on(7, &["r1"]), Outcome::Done, &[(&id, linking)],
            "Approved by @alice: proposal 2 of research task `r1` (\"Cache tokens\")"),
        ("/opentiger approve 2 r1", Place::Dashboard, Outcome::Done, &[(&id, linking)], "proposal 2"),
        ("/opentiger approve 3", on(7, &["r1"]), Outcome::Refused, &[],
            "makes 2 proposal(s): there is no proposal 3"),
        ("/opentiger approve 0", on(7, &["r1"]), Outcome::Refused, &[], "there is no proposal 0"),
        ("/opentiger approve 1", on(8, &["t1"]), Outcome::Refused, &[], "#8 has no research task"),
        ("/opentiger approve 1 t1", Place::Dashboard, Outcome::Refused, &[], "`t1` is not a research task"),
        ("/opentiger approve 1", Place::Dashboard, Outcome::Refused, &[], "name the task"),
    ];
    for (body, place, outcome, tasks, says) in cases {
        let d = run(&w, body, place.clone(), true, None);
        assert_eq!(d.outcome, *outcome, "{body}: {d:?}");
        let expected: Vec<(String, TaskState)> =
            tasks.iter().map(|(t, s)| (t.to_string(), *s)).collect();
        assert_eq!(added(&d), expected, "{body}");
        assert!(
            d.reply.as_deref().unwrap_or("").contains(says),
            "{body}: {d:?}"
        );
    }
    // An outsider changes nothing.
    let d = run(&w, "/opentiger approve 1", on(7, &["r1"]), false, None);
    assert_eq!((d.outcome, added(&d)), (Outcome::NotAllowed, Vec::new()));
}

#[test]
fn a_proposal_approved_once_is_not_approved_again() {
    let mut w = research_world();
    let d = run(&w, "/opentiger approve 1", on(7, &["r1"]), true, None);
    let Some(Effect::AddTask(task)) = d.effects.first() else {
        panic!("{d:?}");
    };
    let mut task = (**task).clone();
    assert_eq!(task.goal, "Split the parser, completely");
    task.issue_number = Some(12);
    w.tasks.insert(task.id.clone(), task.clone());
    let again = run(&w, "/opentiger approve 1", on(7, &["r1"]), true, None);
    assert_eq!(again.outcome, Outcome::Refused);
    assert!(added(&again).is_empty());
    let reply = again.reply.unwrap_or_default();
    assert!(reply.contains("already approved"), "{reply}");
    assert!(
        reply.contains(&format!("task `{}`, #12", task.id)),
        "{reply}"
    );
    // A report not written yet approves nothing.
    w.reports.clear();
    let none = run(&w, "/opentiger approve 2", on(7, &["r1"]), true, None);
    assert!(none.reply.unwrap_or_default().contains("has no report yet"));
}

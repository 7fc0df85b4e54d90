use std::collections::BTreeMap;

use super::*;
use crate::engine::testkit::{task, TaskExt};

fn cmd(verb: Verb, task: Option<&str>) -> Option<Parsed> {
    Some(Parsed::Command(Command {
        verb,
        task: task.map(String::from),
    }))
}

fn malformed(body: &str) -> bool {
    matches!(parse(body), Some(Parsed::Malformed { .. }))
}

#[test]
fn a_command_is_a_line_of_its_own_outside_quotes_and_code() {
    let cases: &[(&str, Option<Parsed>)] = &[
        ("/opentiger retry", cmd(Verb::Retry, None)),
        ("  /opentiger   Retry  ", cmd(Verb::Retry, None)),
        (
            "Looks good.\n/opentiger approve\nthanks",
            cmd(Verb::Approve, None),
        ),
        ("/opentiger approve all", cmd(Verb::ApproveAll, None)),
        // Issue 28: a research proposal by its number; four characters name a task.
        ("/opentiger approve 2", cmd(Verb::ApproveProposal(2), None)),
        (
            "/opentiger approve 10 t1",
            cmd(Verb::ApproveProposal(10), Some("t1")),
        ),
        ("/opentiger approve 1234", cmd(Verb::Approve, Some("1234"))),
        ("/opentiger approve t1", cmd(Verb::Approve, Some("t1"))),
        (
            "/opentiger cancel 0123abcd4567",
            cmd(Verb::Cancel, Some("0123abcd4567")),
        ),
        ("/opentiger pause", cmd(Verb::Pause, None)),
        ("/opentiger hold", cmd(Verb::Hold, None)),
        ("/opentiger release", cmd(Verb::Release, None)),
        ("/opentiger unhold", cmd(Verb::Release, None)),
        (
            "/opentiger resume #abc123",
            cmd(Verb::Resume, Some("abc123")),
        ),
        ("/opentiger budget 10", cmd(Verb::Budget(10.0), None)),
        (
            "/opentiger budget $7.50 t1",
            cmd(Verb::Budget(7.5), Some("t1")),
        ),
        ("/opentiger status", cmd(Verb::Status, None)),
        ("/opentiger", cmd(Verb::Help, None)),
        ("/opentiger help", cmd(Verb::Help, None)),
        // The first command counts (the comment id keys one command).
        (
            "/opentiger retry\n/opentiger cancel",
            cmd(Verb::Retry, None),
        ),
        // Not commands: quoted, fenced, indented, inline, another word.
        ("> /opentiger retry", None),
        ("> > /opentiger cancel", None),
        ("```\n/opentiger cancel\n```", None),
        ("~~~text\n/opentiger cancel\n~~~", None),
        ("```\n```\n/opentiger retry", cmd(Verb::Retry, None)),
        ("    /opentiger cancel", None),
        ("\t/opentiger cancel", None),
        ("try `/opentiger retry` later", None),
        ("please /opentiger retry", None),
        ("/opentigers retry", None),
        ("/opentiger-bot retry", None),
        ("", None),
    ];
    for (body, expected) in cases {
        assert_eq!(&parse(body), expected, "{body:?}");
    }
}

#[test]
fn malformed_commands_and_budgets_out_of_range_are_refused() {
    for body in [
        "/opentiger frobnicate",
        "/opentiger budget",
        "/opentiger budget -5",
        "/opentiger budget 0",
        "/opentiger budget 1e308",
        "/opentiger budget 1001",
        "/opentiger budget NaN",
        "/opentiger budget inf",
        "/opentiger budget 1.2.3",
        "/opentiger budget 5usd",
        "/opentiger retry a b",
        "/opentiger retry ../etc",
        "/opentiger help me",
    ] {
        assert!(
            malformed(body),
            "{body:?} should be malformed: {:?}",
            parse(body)
        );
    }
    match parse("/opentiger budget 1e308") {
        Some(Parsed::Malformed { why, .. }) => assert!(why.contains("not an amount"), "{why}"),
        other => panic!("{other:?}"),
    }
    match parse("/opentiger budget 5000") {
        Some(Parsed::Malformed { why, .. }) => assert!(why.contains("above $1000"), "{why}"),
        other => panic!("{other:?}"),
    }
}

struct World {
    tasks: BTreeMap<TaskId, Task>,
    spent: BTreeMap<TaskId, f64>,
    budgets: BTreeMap<TaskId, f64>,
    origins: BTreeMap<TaskId, Origin>,
    reports: BTreeMap<TaskId, ResearchReport>,
    last_runs: BTreeMap<TaskId, LastRun>,
}

fn world(tasks: Vec<Task>) -> World {
    World {
        tasks: tasks.into_iter().map(|t| (t.id.clone(), t)).collect(),
        spent: BTreeMap::new(),
        budgets: BTreeMap::new(),
        origins: BTreeMap::new(),
        reports: BTreeMap::new(),
        last_runs: BTreeMap::new(),
    }
}

fn with(id: &str, state: TaskState, issue: Option<u64>) -> Task {
    let mut t = task(id);
    t.status = state.status;
    t.block_reason = state.reason;
    t.issue_number = issue;
    t
}

fn on(number: u64, tasks: &[&str]) -> Place {
    Place::Thread {
        number,
        tasks: tasks.iter().map(|t| TaskId(t.to_string())).collect(),
    }
}

fn run(w: &World, body: &str, place: Place, allowed: bool, paused: Option<&str>) -> Decision {
    let parsed = parse(body).expect("a command");
    decide(
        &parsed,
        &Request {
            author: "alice",
            allowed,
            refused_before: false,
            place,
            tasks: &w.tasks,
            repo_paused_by: paused,
            spent: &w.spent,
            budgets: &w.budgets,
            default_budget: 5.0,
            origins: &w.origins,
            now: crate::engine::testkit::NOW,
            checkbox: false,
            reports: &w.reports,
            last_runs: &w.last_runs,
        },
    )
}

fn moved_to(d: &Decision) -> Vec<(String, TaskState)> {
    d.effects
        .iter()
        .filter_map(|e| match e {
            Effect::Move { task, to, .. } => Some((task.0.clone(), *to)),
            _ => None,
        })
        .collect()
}

#[test]
fn task_commands_move_the_thread_s_task_when_its_state_allows() {
    let human = TaskState::blocked(BlockReason::AwaitingHuman);
    let paused = TaskState::blocked(BlockReason::Paused);
    let mut approval = with("t2", human, Some(8));
    approval.needs_approval = true;
    let cases: Vec<(&str, TaskState, bool, Outcome, Option<TaskState>)> = vec![
        (
            "/opentiger retry",
            human,
            false,
            Outcome::Done,
            Some(TaskState::QUEUED),
        ),
        (
            "/opentiger retry",
            TaskState::FAILED,
            false,
            Outcome::Done,
            Some(TaskState::QUEUED),
        ),
        (
            "/opentiger retry",
            TaskState::RUNNING,
            false,
            Outcome::Refused,
            None,
        ),
        (
            "/opentiger retry",
            TaskState::DONE,
            false,
            Outcome::Refused,
            None,
        ),
        (
            "/opentiger cancel",
            TaskState::QUEUED,
            false,
            Outcome::Done,
            Some(TaskState::CANCELLED),
        ),
        (
            "/opentiger cancel",
            TaskState::RUNNING,
            false,
            Outcome::Refused,
            None,
        ),
        (
            "/opentiger cancel",
            TaskState::CANCELLED,
            false,
            Outcome::Refused,
            None,
        ),
        (
            "/opentiger approve",
            human,
            true,
            Outcome::Done,
            Some(TaskState::QUEUED),
        ),
        ("/opentiger approve", human, false, Outcome::Refused, None),
        (
            "/opentiger pause",
            TaskState::QUEUED,
            false,
            Outcome::Done,
            Some(paused),
        ),
        (
            "/opentiger pause",
            human,
            false,
            Outcome::Done,
            Some(paused),
        ),
        ("/opentiger pause", paused, false, Outcome::Refused, None),
        (
            "/opentiger pause",
            TaskState::RUNNING,
            false,
            Outcome::Refused,
            None,
        ),
        (
            "/opentiger resume",
            paused,
            false,
            Outcome::Done,
            Some(TaskState::QUEUED),
        ),
        (
            "/opentiger resume",
            TaskState::QUEUED,
            false,
            Outcome::Refused,
            None,
        ),
        ("/opentiger status", human, false, Outcome::Done, None),
        ("/opentiger help", human, false, Outcome::Done, None),
    ];
    for (body, state, needs_approval, outcome, to) in cases {
        let mut t = with("t1", state, Some(7));
        t.needs_approval = needs_approval;
        let w = world(vec![t]);
        let d = run(&w, body, on(7, &["t1"]), true, None);
        assert_eq!(d.outcome, outcome, "{body} on {state}: {d:?}");
        assert_eq!(
            moved_to(&d),
            to.map(|s| vec![("t1".to_string(), s)]).unwrap_or_default(),
            "{body} on {state}"
        );
        let reply = d.reply.unwrap_or_default();
        assert!(!reply.is_empty(), "{body}: one reply says what happened");
        if outcome == Outcome::Refused {
            assert!(reply.contains("nothing was changed"), "{reply}");
        }
    }
    // Every legal move the rules make is legal for the model too.
    for state in [
        human,
        paused,
        TaskState::QUEUED,
        TaskState::FAILED,
        TaskState::CANCELLED,
    ] {
        for body in [
            "/opentiger retry",
            "/opentiger cancel",
            "/opentiger pause",
            "/opentiger resume",
        ] {
            let w = world(vec![with("t1", state, Some(7)), approval.clone()]);
            for (_, to) in moved_to(&run(&w, body, on(7, &["t1"]), true, None)) {
                assert!(
                    crate::model::check_transition(state, to).is_ok(),
                    "{body}: {state} → {to}"
                );
            }
        }
    }
}

#[test]
fn outsiders_change_nothing_and_are_answered_once_per_thread() {
    let w = world(vec![with("t1", TaskState::FAILED, Some(7))]);
    let d = run(&w, "/opentiger cancel", on(7, &["t1"]), false, None);
    assert_eq!(d.outcome, Outcome::NotAllowed);
    assert!(d.effects.is_empty());
    assert!(
        d.reply.as_deref().unwrap_or("").contains("write access"),
        "{d:?}"
    );
    let again = decide(
        &parse("/opentiger cancel").expect("command"),
        &Request {
            author: "mallory",
            allowed: false,
            refused_before: true,
            place: on(7, &["t1"]),
            tasks: &w.tasks,
            repo_paused_by: None,
            spent: &w.spent,
            budgets: &w.budgets,
            default_budget: 5.0,
            origins: &w.origins,
            now: crate::engine::testkit::NOW,
            checkbox: false,
            reports: &w.reports,
            last_runs: &w.last_runs,
        },
    );
    assert_eq!((again.effects.len(), again.reply), (0, None));
    // Not even help for a malformed command.
    let d = run(&w, "/opentiger budget -5", on(7, &["t1"]), false, None);
    assert_eq!((d.outcome, d.effects.len()), (Outcome::NotAllowed, 0));
}

#[test]
fn a_command_naming_a_task_of_another_issue_is_refused() {
    let w = world(vec![
        with("aaaa1111", TaskState::FAILED, Some(7)),
        with("bbbb2222", TaskState::FAILED, Some(8)),
    ]);
    let d = run(
        &w,
        "/opentiger retry bbbb2222",
        on(7, &["aaaa1111"]),
        true,
        None,
    );
    assert_eq!(d.outcome, Outcome::Refused);
    assert!(d.effects.is_empty());
    assert!(d
        .reply
        .unwrap_or_default()
        .contains("does not belong to #7"));
    // On the dashboard it must name one, and then it may.
    let d = run(&w, "/opentiger retry", Place::Dashboard, true, None);
    assert_eq!(d.outcome, Outcome::Refused);
    let d = run(&w, "/opentiger retry bbbb", Place::Dashboard, true, None);
    assert_eq!(
        moved_to(&d),
        vec![("bbbb2222".to_string(), TaskState::QUEUED)]
    );
    let d = run(&w, "/opentiger retry zzzz", Place::Dashboard, true, None);
    assert!(d.reply.unwrap_or_default().contains("No task `zzzz`"));
    // A thread without a task.
    let d = run(&w, "/opentiger retry", on(9, &[]), true, None);
    assert!(d
        .reply
        .unwrap_or_default()
        .contains("#9 has no opentiger task"));
}

#[test]
fn the_dashboard_pauses_resumes_and_approves_all() {
    let human = TaskState::blocked(BlockReason::AwaitingHuman);
    let mut a = with("a1", human, Some(7));
    a.needs_approval = true;
    let mut b = with("b1", human, Some(8));
    b.needs_approval = true;
    let c = with("c1", human, Some(9));
    let w = world(vec![a, b, c]);
    let d = run(&w, "/opentiger pause", Place::Dashboard, true, None);
    assert_eq!(d.effects, vec![Effect::PauseRepo]);
    assert!(d.reply.unwrap_or_default().contains("/opentiger resume"));
    let d = run(&w, "/opentiger pause", Place::Dashboard, true, Some("bob"));
    assert_eq!((d.outcome, d.effects.len()), (Outcome::Refused, 0));
    let d = run(&w, "/opentiger resume", Place::Dashboard, true, Some("bob"));
    assert_eq!(d.effects, vec![Effect::ResumeRepo]);
    let d = run(&w, "/opentiger resume", Place::Dashboard, true, None);
    assert_eq!(d.outcome, Outcome::Refused);
    let d = run(&w, "/opentiger approve all", Place::Dashboard, true, None);
    assert_eq!(
        moved_to(&d),
        vec![
            ("a1".to_string(), TaskState::QUEUED),
            ("b1".to_string(), TaskState::QUEUED)
        ]
    );
    let d = run(&w, "/opentiger approve all", on(7, &["a1"]), true, None);
    assert_eq!(d.outcome, Outcome::Refused);
}

/// Issue 26: `hold` and `release` on a task's issue or PR set and lift a hold of its merge;
/// elsewhere, or from someone who may not command, nothing.
#[test]
fn hold_and_release_act_on_the_thread_s_merge() {
    let w = world(vec![with(
        "a1",
        TaskState::blocked(BlockReason::AwaitingJudge),
        Some(7),
    )]);
    let hold = |thread: u64, by: Option<&str>| Effect::Hold {
        thread,
        by: by.map(String::from),
    };
    /// (command, where, allowed, outcome, effects, the reply says)
    type Case<'a> = (&'a str, Place, bool, Outcome, Vec<Effect>, &'a str);
    #[rustfmt::skip]
    let cases: Vec<Case> = vec![
        ("/opentiger hold",    on(9, &["a1"]),  true,  Outcome::Done,       vec![hold(9, Some("alice"))], "Held by @alice"),
        ("/opentiger release", on(9, &["a1"]),  true,  Outcome::Done,       vec![hold(9, None)],          "Released by @alice"),
        ("/opentiger unhold",  on(7, &["a1"]),  true,  Outcome::Done,       vec![hold(7, None)],          "Released"),
        ("/opentiger hold",    on(9, &["a1"]),  false, Outcome::NotAllowed, vec![],                       "only people with write access"),
        ("/opentiger hold",    on(5, &[]),      true,  Outcome::Refused,    vec![],                       "no opentiger task"),
        ("/opentiger hold",    Place::Dashboard, true, Outcome::Refused,    vec![],                       "not here"),
    ];
    for (body, place, allowed, outcome, effects, says) in cases {
        let d = run(&w, body, place.clone(), allowed, None);
        assert_eq!(
            (d.outcome, &d.effects),
            (outcome, &effects),
            "{body} on {place:?}"
        );
        let reply = d.reply.unwrap_or_default();
        assert!(reply.contains(says), "{body}: {reply}");
    }
}

#[test]
fn budget_sets_the_task_s_limit_and_says_what_was_spent() {
    let mut w = world(vec![with("t1", TaskState::QUEUED, Some(7))]);
    w.spent.insert(TaskId("t1".into()), 6.0);
    let d = run(&w, "/opentiger budget 12", on(7, &["t1"]), true, None);
    assert_eq!(
        d.effects,
        vec![Effect::SetBudget {
            task: TaskId("t1".into()),
            usd: 12.0
        }]
    );
    let reply = d.reply.unwrap_or_default();
    assert!(
        reply.contains("$12.00") && reply.contains("was $5.00") && reply.contains("spent $6.00"),
        "{reply}"
    );
    let d = run(&w, "/opentiger budget 3", on(7, &["t1"]), true, None);
    assert!(d.reply.unwrap_or_default().contains("starts no new run"));
    for body in ["/opentiger budget -5", "/opentiger budget 1e308"] {
        let d = run(&w, body, on(7, &["t1"]), true, None);
        assert_eq!((d.outcome, d.effects.len()), (Outcome::Help, 0), "{body}");
        assert!(d.reply.unwrap_or_default().contains("nothing was changed"));
    }
}

#[test]
fn the_dashboard_recommends_one_command_per_waiting_task() {
    let human = TaskState::blocked(BlockReason::AwaitingHuman);
    let mut approval = with("t1", human, None);
    approval.needs_approval = true;
    let cases = [
        (approval, Some("/opentiger approve t1")),
        (with("t1", human, None), Some("/opentiger retry t1")),
        (
            with("t1", TaskState::blocked(BlockReason::Paused), None),
            Some("/opentiger resume t1"),
        ),
        (with("t1", TaskState::QUEUED, None), None),
        (
            with("t1", TaskState::blocked(BlockReason::AwaitingJudge), None),
            None,
        ),
    ];
    for (task, expected) in cases {
        assert_eq!(recommended(&task).as_deref(), expected, "{}", task.state());
        // Whatever it recommends parses as that command.
        if let Some(text) = recommended(&task) {
            assert!(matches!(parse(&text), Some(Parsed::Command(_))), "{text}");
        }
    }
}

#[test]
fn replan_makes_an_issue_task_afresh_from_its_issue_s_current_text() {
    let human = TaskState::blocked(BlockReason::AwaitingHuman);
    let issue = |open| Origin::Issue { number: 7, open };
    // (state, issue still listed, outcome, move, text re-read)
    let cases: Vec<(TaskState, bool, Outcome, Option<TaskState>, bool)> = vec![
        (human, true, Outcome::Done, Some(TaskState::QUEUED), true),
        (
            TaskState::FAILED,
            true,
            Outcome::Done,
            Some(TaskState::QUEUED),
            true,
        ),
        (
            TaskState::CANCELLED,
            true,
            Outcome::Done,
            Some(TaskState::QUEUED),
            true,
        ),
        (TaskState::QUEUED, true, Outcome::Done, None, true),
        (TaskState::RUNNING, true, Outcome::Refused, None, false),
        (TaskState::DONE, true, Outcome::Refused, None, false),
        (human, false, Outcome::Refused, None, false),
    ];
    for (state, open, outcome, to, respec) in cases {
        let mut w = world(vec![with("t1", state, Some(7))]);
        w.origins.insert(TaskId::from("t1"), issue(open));
        let d = run(&w, "/opentiger replan", on(7, &["t1"]), true, None);
        let label = format!("{state} open={open}");
        assert_eq!(d.outcome, outcome, "{label}: {d:?}");
        let moved = moved_to(&d);
        assert_eq!(moved.first().map(|m| m.1), to, "{label}");
        let reread = d.effects.iter().any(|e| {
            e == &Effect::Respec {
                task: TaskId::from("t1"),
                issue: 7,
            }
        });
        assert_eq!(reread, respec, "{label}");
        // Queued again afresh, as a retry would: budgets reset, approval given.
        for e in &d.effects {
            if let Effect::Move {
                reset_attempts,
                approved,
                ..
            } = e
            {
                assert!(*reset_attempts && *approved, "{label}: {e:?}");
            }
        }
    }
}

#[test]
fn replan_cancels_the_unstarted_tasks_of_a_plan_and_plans_again() {
    let human = BlockReason::AwaitingHuman;
    let plan = |id: &str| (TaskId::from(id), Origin::Plan("p1".to_string()));
    let mut w = world(vec![
        // The task commanded on: waits for approval.
        with("a", TaskState::blocked(human), Some(7)).with(|t| t.needs_approval = true),
        // Siblings: not started (queued, waiting for its issue) → cancelled.
        with("b", TaskState::QUEUED, None),
        with("c", TaskState::blocked(BlockReason::IssueLinking), None),
        // Started siblings keep their work: failed once and queued, running, done.
        with("d", TaskState::QUEUED, Some(9)).attempts(crate::model::AttemptKey::Test, 1),
        with("e", TaskState::RUNNING, Some(10)),
        with("f", TaskState::DONE, Some(11)),
        // Another plan's task, and a task added by hand.
        with("g", TaskState::QUEUED, None),
        with("h", TaskState::QUEUED, None),
    ]);
    w.origins.extend([
        plan("a"),
        plan("b"),
        plan("c"),
        plan("d"),
        plan("e"),
        plan("f"),
    ]);
    w.origins
        .insert(TaskId::from("g"), Origin::Plan("p0".to_string()));
    let d = run(&w, "/opentiger replan", on(7, &["a"]), true, None);
    assert_eq!(d.outcome, Outcome::Done, "{d:?}");
    let cancelled: Vec<String> = moved_to(&d)
        .into_iter()
        .inspect(|(_, to)| assert_eq!(*to, TaskState::CANCELLED))
        .map(|(id, _)| id)
        .collect();
    assert_eq!(cancelled, ["a", "b", "c"]);
    assert_eq!(
        d.effects.last(),
        Some(&Effect::Replan {
            plan: "p1".to_string()
        })
    );
    // A started task of the plan, commanded itself, is cancelled too; its siblings still.
    let d = run(&w, "/opentiger replan d", Place::Dashboard, true, None);
    let ids: Vec<String> = moved_to(&d).into_iter().map(|(id, _)| id).collect();
    assert_eq!(ids, ["a", "b", "c", "d"]);
    // Running: refused; done: the plan is made again, its unstarted siblings cancelled.
    let d = run(&w, "/opentiger replan e", Place::Dashboard, true, None);
    assert_eq!((d.outcome, d.effects.len()), (Outcome::Refused, 0));
    let d = run(&w, "/opentiger replan f", Place::Dashboard, true, None);
    assert_eq!(d.outcome, Outcome::Done);
    assert_eq!(moved_to(&d).len(), 3);
    // A task added by hand and a fix child have no plan to make again.
    let d = run(&w, "/opentiger replan h", Place::Dashboard, true, None);
    assert_eq!(d.outcome, Outcome::Refused);
    assert!(d.reply.unwrap_or_default().contains("added by hand"));
    let child =
        with("k", TaskState::FAILED, None).with(|t| t.parent_task_id = Some(TaskId::from("d")));
    w.tasks.insert(child.id.clone(), child);
    let d = run(&w, "/opentiger replan k", Place::Dashboard, true, None);
    assert!(
        d.reply
            .as_deref()
            .unwrap_or_default()
            .contains("replan `d`"),
        "{d:?}"
    );
}

/// `opentiger task retry|cancel` call `retry_move` and `cancel_refusal`; the comment commands
/// must give the same answer for every state, so a person gets one rule wherever they ask.
#[test]
fn the_comment_commands_and_the_cli_agree_on_retry_and_cancel() {
    use crate::engine::testkit::{at, NOW};
    let mut states = vec![
        TaskState::QUEUED,
        TaskState::RUNNING,
        TaskState::DONE,
        TaskState::FAILED,
        TaskState::CANCELLED,
    ];
    states.extend(BlockReason::ALL.iter().map(|r| TaskState::blocked(*r)));
    for state in states {
        for cooldown in [None, Some(at(-5)), Some(at(30))] {
            let t = with("t1", state, Some(7)).with(|t| t.next_attempt_at = cooldown);
            let label = format!("{state} cooldown {cooldown:?}");
            let w = world(vec![t.clone()]);
            let retry = run(&w, "/opentiger retry", on(7, &["t1"]), true, None);
            match retry_move(&t, None, NOW) {
                Ok(RetryMove::Rejudge { .. }) => unreachable!("no run: nothing to judge"),
                Ok(RetryMove::Requeue) => {
                    assert_eq!(
                        moved_to(&retry),
                        [("t1".to_string(), TaskState::QUEUED)],
                        "{label}"
                    )
                }
                Ok(RetryMove::EndCooldown) => assert!(
                    matches!(retry.effects.as_slice(), [Effect::EndCooldown { .. }]),
                    "{label}: {retry:?}"
                ),
                Err(why) => {
                    assert_eq!(retry.outcome, Outcome::Refused, "{label}");
                    assert!(retry.reply.unwrap_or_default().starts_with(&why), "{label}");
                }
            }
            let cancel = run(&w, "/opentiger cancel", on(7, &["t1"]), true, None);
            match cancel_refusal(&t) {
                None => assert_eq!(
                    moved_to(&cancel),
                    [("t1".to_string(), TaskState::CANCELLED)],
                    "{label}"
                ),
                Some(why) => {
                    assert_eq!(cancel.outcome, Outcome::Refused, "{label}");
                    assert!(
                        cancel.reply.unwrap_or_default().starts_with(&why),
                        "{label}"
                    );
                }
            }
        }
    }
    // The cases that matter, spelled out.
    let cooling = with("t1", TaskState::QUEUED, None).with(|t| t.next_attempt_at = Some(at(30)));
    assert_eq!(retry_move(&cooling, None, NOW), Ok(RetryMove::EndCooldown));
    assert!(retry_move(&with("t1", TaskState::QUEUED, None), None, NOW).is_err());
    assert!(retry_move(&with("t1", TaskState::RUNNING, None), None, NOW).is_err());
    assert_eq!(
        retry_move(&with("t1", TaskState::FAILED, None), None, NOW),
        Ok(RetryMove::Requeue)
    );
    assert!(cancel_refusal(&with("t1", TaskState::RUNNING, None)).is_some());
    assert!(cancel_refusal(&with("t1", TaskState::FAILED, None)).is_none());
}

#[test]
fn on_the_requirement_s_issue_approve_cancel_and_replan_act_on_the_whole_plan() {
    let human = TaskState::blocked(BlockReason::AwaitingHuman);
    let held = |id: &str| with(id, human, None).with(|t| t.needs_approval = true);
    let mut w = world(vec![held("a"), held("b"), with("c", TaskState::DONE, None)]);
    for id in ["a", "b", "c"] {
        w.origins
            .insert(TaskId::from(id), Origin::Plan("p1".to_string()));
    }
    let plan = || Place::Plan {
        number: 3,
        tasks: ["a", "b", "c"].iter().map(|t| TaskId::from(*t)).collect(),
    };
    // Approve: every waiting task of the plan goes to get its issue first.
    let d = run(&w, "/opentiger approve", plan(), true, None);
    assert_eq!(d.outcome, Outcome::Done, "{d:?}");
    let linking = TaskState::blocked(BlockReason::IssueLinking);
    assert_eq!(
        moved_to(&d),
        [("a".to_string(), linking), ("b".to_string(), linking)]
    );
    // Cancel: all that can be; replan: the plan is made again.
    let d = run(&w, "/opentiger cancel", plan(), true, None);
    assert_eq!(moved_to(&d).len(), 2, "{d:?}");
    let d = run(&w, "/opentiger replan", plan(), true, None);
    assert!(
        matches!(d.effects.last(), Some(Effect::Replan { .. })),
        "{d:?}"
    );
    // Anything else names its task; a named task of the plan is decided as on its thread.
    let d = run(&w, "/opentiger retry", plan(), true, None);
    assert_eq!(d.outcome, Outcome::Refused);
    let d = run(&w, "/opentiger approve a", plan(), true, None);
    assert_eq!((d.outcome, moved_to(&d).len()), (Outcome::Done, 1));
    // Nothing waits any more: approve is refused.
    let w = world(vec![with("c", TaskState::DONE, None)]);
    let d = run(&w, "/opentiger approve", plan(), true, None);
    assert_eq!((d.outcome, d.effects.len()), (Outcome::Refused, 0));
}

/// An approved planned task in github mode gets its issue first, as an unheld one does; every
/// other approved task is queued.
#[test]
fn an_approved_planned_task_gets_its_issue_first_in_github_mode() {
    let linking = TaskState::blocked(BlockReason::IssueLinking);
    let mut with_issue = crate::engine::testkit::task("a");
    with_issue.issue_number = Some(4);
    let without = crate::engine::testkit::task("b");
    #[rustfmt::skip]
    let cases = [
        ("planned, github, no issue yet", &without, true, true, linking),
        ("planned, github, issue opened", &with_issue, true, true, TaskState::QUEUED),
        ("planned, local mode", &without, true, false, TaskState::QUEUED),
        ("not planned (imported or by hand)", &without, false, true, TaskState::QUEUED),
    ];
    for (name, task, planned, github, to) in cases {
        assert_eq!(super::approved_state(task, planned, github), to, "{name}");
    }
}

#[path = "commands_held_tests.rs"]
mod held_tests;
#[path = "commands_research_tests.rs"]
mod research;

/// Issue 35: a retry after the judge gave up on a change asks the judge again and costs no
/// worker run; after changes were requested, or without a change, the task is worked on again.
#[test]
fn a_retry_after_the_judge_gave_up_asks_the_judge_again() {
    use crate::engine::testkit::NOW;
    let human = TaskState::blocked(BlockReason::AwaitingHuman);
    let last = |made_change, changes_requested| LastRun {
        id: RunId("r1".into()),
        made_change,
        changes_requested,
        held: None,
    };
    let rejudge = Ok(RetryMove::Rejudge {
        run: RunId("r1".into()),
    });
    #[rustfmt::skip]
    let cases: &[(TaskState, Option<LastRun>, Result<RetryMove, ()>)] = &[
        (human, Some(last(true, false)), rejudge.clone()),
        // Changes were asked for: the person fixed it, or wants it redone: worked on again.
        (human, Some(last(true, true)), Ok(RetryMove::Requeue)),
        // The run failed (a key, a policy): nothing to judge.
        (human, Some(last(false, false)), Ok(RetryMove::Requeue)),
        (human, None, Ok(RetryMove::Requeue)),
        // Only a task waiting on a person: a failed one is worked on again.
        (TaskState::FAILED, Some(last(true, false)), Ok(RetryMove::Requeue)),
        (TaskState::blocked(BlockReason::QuotaWait), Some(last(true, false)), Ok(RetryMove::Requeue)),
    ];
    for (state, last_run, want) in cases {
        let t = with("t1", *state, Some(7));
        let got = retry_move(&t, last_run.as_ref(), NOW).map_err(|_| ());
        assert_eq!(&got, want, "{state} {last_run:?}");
        // The comment command does the same.
        let mut w = world(vec![t.clone()]);
        if let Some(l) = last_run {
            w.last_runs.insert(t.id.clone(), l.clone());
        }
        let said = run(&w, "/opentiger retry", on(7, &["t1"]), true, None);
        match want {
            Ok(RetryMove::Rejudge { run }) => assert!(
                matches!(said.effects.as_slice(), [Effect::Rejudge { run: r, .. }] if r == run),
                "{said:?}"
            ),
            _ => assert!(
                !said
                    .effects
                    .iter()
                    .any(|e| matches!(e, Effect::Rejudge { .. })),
                "{said:?}"
            ),
        }
    }
}

use super::*;
use crate::engine::testkit::{at, task, TaskExt};
use crate::model::TaskStatus;

fn config(hours: u32, default: EscalationDefault) -> EscalationConfig {
    EscalationConfig {
        comment: true,
        timeout_hours: hours,
        default,
        reasons: Default::default(),
    }
}

fn rule(default: EscalationDefault, hours: u32) -> Settings {
    Settings {
        hours,
        default,
        key: "escalation.default".to_string(),
    }
}

fn stuck(id: &str) -> Task {
    task(id).blocked(BlockReason::AwaitingHuman).with(|t| {
        t.issue_number = Some(7);
        t.status_reason = Some("retry budget for test failures spent (3/3)".into());
    })
}

fn open(id: &str, question: &str, opened_minutes_ago: i64, body: &str) -> Open {
    Open {
        task_id: TaskId(id.into()),
        question: question.into(),
        opened_at: at(-opened_minutes_ago),
        resolved: false,
        body: body.into(),
    }
}

fn run(tasks: &[Task], open: &[Open], retried: bool, config: &EscalationConfig) -> Vec<Step> {
    escalate(
        tasks,
        open,
        Estimate {
            budget_usd: 5.0,
            typical_usd: Some(1.25),
        },
        &|t: &Task| t.issue_number,
        &|_: &TaskId, _: Question| retried,
        config,
        at(0),
    )
}

fn kinds(steps: &[Step]) -> Vec<String> {
    steps
        .iter()
        .map(|s| match s {
            Step::Ask {
                task_id, question, ..
            } => format!("ask {task_id} {}", question.word()),
            Step::Close { task_id, question } => format!("close {task_id} {question}"),
            Step::Default { task_id, to, .. } => format!("default {task_id} {to}"),
        })
        .collect()
}

#[test]
fn one_question_per_task_restated_only_when_the_facts_change() {
    let wait = config(24, EscalationDefault::Wait);
    let t = stuck("t1");
    let first = run(std::slice::from_ref(&t), &[], false, &wait);
    assert_eq!(kinds(&first), vec!["ask t1 stuck"]);
    let Step::Ask { body, thread, .. } = &first[0] else {
        panic!("{first:?}")
    };
    assert_eq!(*thread, 7);
    // The same facts: nothing to do. New facts: the same question restated (edited in place).
    let asked = open("t1", "stuck", 60, body);
    assert!(run(
        std::slice::from_ref(&t),
        std::slice::from_ref(&asked),
        false,
        &wait
    )
    .is_empty());
    let changed = t
        .clone()
        .with(|t| t.status_reason = Some("merge conflicts (3/3)".into()));
    let again = run(&[changed], std::slice::from_ref(&asked), false, &wait);
    assert_eq!(kinds(&again), vec!["ask t1 stuck"]);
    let Step::Ask { opened_at, .. } = &again[0] else {
        panic!()
    };
    assert_eq!(
        *opened_at,
        at(-60),
        "restating keeps the time it was first asked"
    );
    // Answered (the task moved on): closed. No thread (local task): never asked.
    let moved = t
        .clone()
        .status(TaskStatus::Queued)
        .with(|t| t.block_reason = None);
    assert_eq!(
        kinds(&run(&[moved], &[asked], false, &wait)),
        vec!["close t1 stuck"]
    );
    let local = stuck("t2").with(|t| t.issue_number = None);
    assert!(run(&[local], &[], false, &wait).is_empty());
    // Approval is its own question.
    let approval = stuck("t3").with(|t| t.needs_approval = true);
    assert_eq!(
        kinds(&run(&[approval], &[], false, &wait)),
        vec!["ask t3 approval"]
    );
}

#[test]
fn the_question_leads_with_the_recommended_option_and_says_what_silence_does() {
    let t = stuck("t1");
    let estimate = Estimate {
        budget_usd: 5.0,
        typical_usd: Some(1.25),
    };
    let body = question_text(
        &t,
        Question::Stuck,
        &rule(EscalationDefault::Cancel, 24),
        at(24 * 60),
        estimate,
    );
    let retry = body
        .find("**retry (recommended)**")
        .expect("retry first, marked");
    let cancel = body.find("**cancel**").expect("cancel offered");
    assert!(retry < cancel, "{body}");
    for needle in [
        "`/opentiger retry`",
        "`/opentiger cancel`",
        "`/opentiger pause`",
        "retry budget for test failures spent (3/3)",
        "If nobody answers within 24h, the task is cancelled at 2026-11-22T12:00:00Z",
        "<!-- opentiger:escalation=t1:stuck -->",
    ] {
        assert!(body.contains(needle), "{needle} missing:\n{body}");
    }
    let planned = t.clone().with(|t| {
        t.allowed_paths = vec!["src/**".into()];
        t.commands = vec!["cargo test".into()];
    });
    let body = question_text(
        &planned,
        Question::Approval,
        &rule(EscalationDefault::Wait, 24),
        at(0),
        estimate,
    );
    assert!(
        body.contains("**approve (recommended)**: comment `/opentiger approve`"),
        "{body}"
    );
    assert!(
        body.contains("changes `src/**`; the runner then checks `cargo test`")
            && body.contains(
                "up to $5.00 over all attempts; finished tasks here spent $1.25 on average"
            ),
        "{body}"
    );
    assert!(
        body.contains("If nobody answers, it keeps waiting for a person."),
        "{body}"
    );
}

#[test]
fn defaults_fall_due_after_the_timeout() {
    let t = stuck("t1");
    let asked = |minutes| open("t1", "stuck", minutes, "old");
    #[rustfmt::skip]
    let cases: Vec<(&str, EscalationConfig, i64, bool, Vec<&str>)> = vec![
        ("before the timeout: asked", config(24, EscalationDefault::Cancel), 23 * 60, false, vec!["ask t1 stuck"]),
        ("cancel at the timeout", config(24, EscalationDefault::Cancel), 24 * 60, false, vec!["default t1 cancelled"]),
        ("retry once", config(24, EscalationDefault::RetryOnce), 25 * 60, false, vec!["default t1 queued"]),
        ("retry once, already retried: wait", config(24, EscalationDefault::RetryOnce), 25 * 60, true, vec!["ask t1 stuck"]),
        ("wait never moves it", config(24, EscalationDefault::Wait), 99 * 60, false, vec!["ask t1 stuck"]),
        ("timeout 0: never", config(0, EscalationDefault::Cancel), 99 * 60, false, vec!["ask t1 stuck"]),
    ];
    for (name, config, minutes, retried, expected) in cases {
        let steps = run(
            std::slice::from_ref(&t),
            &[asked(minutes)],
            retried,
            &config,
        );
        assert_eq!(kinds(&steps), expected, "{name}");
        for step in &steps {
            if let Step::Default { to, reason, .. } = step {
                assert!(
                    crate::model::check_transition(t.state(), *to).is_ok(),
                    "{name}"
                );
                assert!(reason.contains("no answer in 24h"), "{name}: {reason}");
            }
        }
    }
    // An approval is never retried by default (a retry does not answer it).
    let approval = stuck("t1").with(|t| t.needs_approval = true);
    let steps = run(
        &[approval],
        &[open("t1", "approval", 25 * 60, "old")],
        false,
        &config(24, EscalationDefault::RetryOnce),
    );
    assert_eq!(kinds(&steps), vec!["ask t1 approval"]);
}

#[test]
fn each_question_has_its_own_timeout_and_default_else_the_global_ones() {
    use crate::config::{EscalationReasons, EscalationRule};
    let per_question = |approval: EscalationRule, stuck: EscalationRule| EscalationConfig {
        reasons: EscalationReasons { approval, stuck },
        ..config(24, EscalationDefault::Wait)
    };
    let set = |hours: Option<u32>, default: Option<EscalationDefault>| EscalationRule {
        timeout_hours: hours,
        default,
    };
    let stuck_task = stuck("t1");
    let approval_task = stuck("t2").with(|t| t.needs_approval = true);
    #[rustfmt::skip]
    let cases: Vec<(&str, EscalationConfig, i64, Vec<&str>)> = vec![
        ("nothing set: global wait", per_question(set(None, None), set(None, None)), 30 * 60, vec![]),
        ("stuck cancels after its 2h", per_question(set(None, None), set(Some(2), Some(EscalationDefault::Cancel))), 3 * 60, vec!["default t1 cancelled"]),
        ("stuck's own default, global 24h: not yet", per_question(set(None, None), set(None, Some(EscalationDefault::Cancel))), 3 * 60, vec![]),
        ("stuck's own default, global 24h: due", per_question(set(None, None), set(None, Some(EscalationDefault::Cancel))), 25 * 60, vec!["default t1 cancelled"]),
        ("approval cancels after 1h, stuck waits", per_question(set(Some(1), Some(EscalationDefault::Cancel)), set(None, None)), 2 * 60, vec!["default t2 cancelled"]),
        ("approval never times out (0)", per_question(set(Some(0), Some(EscalationDefault::Cancel)), set(None, None)), 99 * 60, vec![]),
    ];
    for (name, config, minutes, expected) in cases {
        let steps = run(
            &[stuck_task.clone(), approval_task.clone()],
            &[
                open("t1", "stuck", minutes, "old"),
                open("t2", "approval", minutes, "old"),
            ],
            false,
            &config,
        );
        let defaults: Vec<String> = kinds(&steps)
            .into_iter()
            .filter(|k| k.starts_with("default"))
            .collect();
        assert_eq!(defaults, expected, "{name}");
    }
    // The question and the record name the setting that chose the default.
    let config = per_question(
        set(None, None),
        set(Some(2), Some(EscalationDefault::Cancel)),
    );
    let steps = run(std::slice::from_ref(&stuck_task), &[], false, &config);
    let Some(Step::Ask { body, .. }) = steps.first() else {
        panic!("{steps:?}")
    };
    assert!(
        body.contains("If nobody answers within 2h, the task is cancelled at")
            && body.contains("(`escalation.reasons.stuck.default`)"),
        "{body}"
    );
    let steps = run(
        std::slice::from_ref(&stuck_task),
        &[open("t1", "stuck", 3 * 60, "old")],
        false,
        &config,
    );
    let Some(Step::Default { reason, .. }) = steps.first() else {
        panic!("{steps:?}")
    };
    assert_eq!(
        reason,
        "no answer in 2h: cancelled (escalation.reasons.stuck.default)"
    );
}

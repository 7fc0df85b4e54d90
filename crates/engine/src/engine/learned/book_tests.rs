//! The book of lessons as tables: what a run teaches, counting, contradiction, expiry, bound.

use super::*;
use crate::engine::learned::lesson;
use crate::model::checks::Unstarted;
use crate::model::learned::ToolFact;

const DAY: i64 = 24 * HOUR;

fn report(command: &str, exit: Option<i32>, tail: &str) -> CommandReport {
    CommandReport {
        command: command.to_string(),
        source: "config".to_string(),
        exit,
        tail: tail.to_string(),
        unstarted: exit.is_none().then_some(Unstarted::NotFound),
        ..Default::default()
    }
}

fn pnpm_missing() -> Signature {
    Signature::MissingCommand {
        program: Some("pnpm".into()),
        command: "pnpm test".into(),
    }
}

fn seen(failed: Vec<Signature>, passed: &[&str]) -> Observation {
    Observation {
        failed,
        passed: passed.iter().map(|p| p.to_string()).collect(),
    }
}

#[test]
fn a_run_teaches_its_failed_check_and_what_passed() {
    let planned = vec!["npm run lint".to_string(), "pnpm test".to_string()];
    let reports = [
        report("npm run lint", Some(0), ""),
        report("pnpm test", None, ""),
    ];
    let refused = [Refusal {
        host: "registry.npmjs.org".into(),
        port: 443,
        by: "checks".into(),
        times: 2,
        own: None,
    }];
    let failed = observe(false, &reports, &refused, &planned, &[]);
    // The missing program explains the failure; the refusal on its way is not a lesson.
    assert_eq!(failed.failed, vec![pnpm_missing()]);
    assert_eq!(failed.passed, ["npm run lint"]);
    // A failure nothing else explains: the refused host is the lesson.
    let plain = [report(
        "npm test",
        Some(1),
        "request to https://registry.npmjs.org/x failed",
    )];
    assert_eq!(
        observe(false, &plain, &refused, &planned, &[]).failed,
        vec![Signature::NetworkRefused {
            host: "registry.npmjs.org".into(),
            by: "checks".into()
        }]
    );
    // A check the plan did not name (a result file's word) teaches nothing.
    let odd = observe(
        false,
        &[report("pnpm test", None, "")],
        &[],
        &["npm test".into()],
        &[],
    );
    assert!(odd.failed.is_empty());
    // A successful run: only what passed.
    let ok = observe(true, &reports[..1], &refused, &planned, &[]);
    assert_eq!(ok, seen(vec![], &["npm run lint"]));
}

#[test]
fn the_book_counts_contradicts_expires_and_stays_bounded() {
    let context = ContextConfig::default();
    let now = Timestamp(10 * DAY);
    let script = Signature::MissingScript {
        command: "npm run e2e".into(),
    };
    let old = lesson(script.clone(), 4, 10 * DAY - DAY);
    let known = lesson(pnpm_missing(), 2, 10 * DAY - HOUR);
    #[rustfmt::skip]
    type Case<'a> = (&'a str, Vec<Lesson>, Observation, Vec<(Signature, u32)>, Vec<&'a Lesson>);
    let cases: Vec<Case> = vec![
        (
            "a new signature",
            vec![],
            seen(vec![pnpm_missing()], &[]),
            vec![(pnpm_missing(), 1)],
            vec![],
        ),
        (
            "seen again: counted",
            vec![known.clone()],
            seen(vec![pnpm_missing()], &[]),
            vec![(pnpm_missing(), 3)],
            vec![],
        ),
        (
            "twice in one run: counted once",
            vec![],
            seen(vec![pnpm_missing(), pnpm_missing()], &[]),
            vec![(pnpm_missing(), 1)],
            vec![],
        ),
        (
            "its command passed since",
            vec![known.clone()],
            seen(vec![], &["pnpm test"]),
            vec![],
            vec![&known],
        ),
        (
            "a command of its program passed",
            vec![known.clone()],
            seen(vec![], &["pnpm lint"]),
            vec![],
            vec![&known],
        ),
        (
            "another command passed",
            vec![known.clone()],
            seen(vec![], &["npm test"]),
            vec![],
            vec![],
        ),
        (
            "older than its time to live",
            vec![old.clone()],
            seen(vec![], &[]),
            vec![],
            vec![&old],
        ),
    ];
    for (name, book, observation, upsert, removed) in cases {
        let change = learn(&book, &observation, None, now, &context);
        let got: Vec<(Signature, u32)> = change
            .upsert
            .iter()
            .map(|l| (l.signature.clone(), l.count))
            .collect();
        assert_eq!(got, upsert, "{name}");
        let removed: Vec<String> = removed.iter().map(|l| l.id.clone()).collect();
        assert_eq!(change.remove, removed, "{name}");
        assert!(change.upsert.iter().all(|l| l.last_seen == now), "{name}");
    }
    // A snapshot taken after the lesson that finds the program contradicts it.
    let host = HostSnapshot {
        taken_at: Timestamp(10 * DAY - 1),
        tools: vec![ToolFact {
            name: "pnpm".into(),
            present: true,
            version: Some("9.1.0".into()),
        }],
        ..Default::default()
    };
    let change = learn(
        std::slice::from_ref(&known),
        &seen(vec![], &[]),
        Some(&host),
        now,
        &context,
    );
    assert_eq!(change.remove, std::slice::from_ref(&known.id));
    assert!(in_force(std::slice::from_ref(&known), Some(&host), now, &context).is_empty());
    let older_host = HostSnapshot {
        taken_at: Timestamp(0),
        ..host
    };
    assert_eq!(
        in_force(
            std::slice::from_ref(&known),
            Some(&older_host),
            now,
            &context
        ),
        [known]
    );
}

#[test]
fn lessons_expire_after_their_time_to_live() {
    let context = ContextConfig {
        lesson_ttl_hours: 6,
        ..ContextConfig::default()
    };
    let book = [lesson(pnpm_missing(), 1, 0)];
    #[rustfmt::skip]
    let cases = [(0, true), (6 * HOUR - 1, true), (6 * HOUR, false), (30 * DAY, false)];
    for (at, holds) in cases {
        assert_eq!(
            !in_force(&book, None, Timestamp(at), &context).is_empty(),
            holds,
            "at {at}"
        );
    }
}

#[test]
fn five_hundred_failures_leave_at_most_twelve_lessons_the_newest() {
    let context = ContextConfig::default();
    let mut book: Vec<Lesson> = Vec::new();
    for i in 0..500i64 {
        let signature = Signature::MissingScript {
            command: format!("npm run job-{}", i % 40),
        };
        let change = learn(
            &book,
            &seen(vec![signature], &[]),
            None,
            Timestamp(i * 1000),
            &context,
        );
        book.retain(|l| !change.remove.contains(&l.id));
        for l in change.upsert {
            book.retain(|b| b.id != l.id);
            book.push(l);
        }
        assert!(book.len() <= 12, "{} lessons after {i}", book.len());
    }
    assert_eq!(book.len(), 12);
    // The twelve seen last: failures 488..499, jobs 8..19.
    let mut commands: Vec<String> = book
        .iter()
        .filter_map(|l| l.signature.command().map(str::to_string))
        .collect();
    commands.sort();
    let mut expected: Vec<String> = (8..20).map(|j| format!("npm run job-{j}")).collect();
    expected.sort();
    assert_eq!(commands, expected);
}

#[test]
fn planned_texts_split_chains_as_they_run() {
    let mut config = Config::default();
    config.verify.commands = vec!["npm ci && npm test".into()];
    let mut task = Task::new("t".into(), "T", "g", Timestamp(0));
    task.commands = vec!["make lint".into()];
    assert_eq!(
        planned_texts(&task, &config),
        ["make lint", "npm ci", "npm test"]
    );
}

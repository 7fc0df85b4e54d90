//! Reading a comment's command line (`parse`): a line of its own outside quotes and code;
//! what is malformed, and budgets out of range. Not for: what a command does.

use super::*;

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

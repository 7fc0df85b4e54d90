//! Tables for `research`: the report check, proposals, evidence links and ticked boxes.

use std::collections::BTreeSet;

use super::*;
use crate::engine::testkit::{task, NOW};
use crate::model::{BlockReason, Proposal, TaskId, TaskState};

fn answer(criterion: CriterionRef, met: Option<bool>, text: &str) -> Answer {
    Answer {
        criterion,
        met,
        answer: text.to_string(),
    }
}

/// (name, report, answers, the `met` of each criterion or what the error says)
type ReportCase = (
    &'static str,
    Option<&'static str>,
    Vec<Answer>,
    Result<Vec<Option<bool>>, &'static str>,
);

#[test]
fn a_report_counts_when_present_and_every_criterion_is_answered() {
    use CriterionRef::{Number, Text};
    let criteria = [
        "Name the parser".to_string(),
        "Say why it is slow".to_string(),
    ];
    #[rustfmt::skip]
    let cases: Vec<ReportCase> = vec![
        ("both by number", Some("# Findings"),
            vec![answer(Number(1), Some(true), "src/parse.rs"), answer(Number(2), None, "allocations")],
            Ok(vec![Some(true), None])),
        ("by text, words and case aside", Some("r"),
            vec![answer(Text("name the parser.".into()), Some(false), "no"), answer(Number(2), Some(true), "y")],
            Ok(vec![Some(false), Some(true)])),
        ("missing report", None, vec![], Err("report.md ($OPENTIGER_REPORT_FILE) is missing")),
        ("empty report", Some(" \n"), vec![], Err("report.md ($OPENTIGER_REPORT_FILE) is empty")),
        ("criterion 2 unanswered", Some("r"),
            vec![answer(Number(1), Some(true), "yes")],
            Err("leaves acceptance criterion 2 \"Say why it is slow\" unanswered")),
        ("an empty answer is no answer", Some("r"),
            vec![answer(Number(1), Some(true), "yes"), answer(Number(2), Some(true), "  ")],
            Err("criterion 2 \"Say why it is slow\"")),
        ("a number out of range answers nothing", Some("r"),
            vec![answer(Number(3), Some(true), "yes"), answer(Number(0), None, "x")],
            Err("criterion 1 \"Name the parser\", 2 \"Say why it is slow\" unanswered")),
    ];
    for (name, report, answers, expected) in cases {
        let got = check_report(report, &criteria, &answers);
        match (got, expected) {
            (Ok(checks), Ok(met)) => {
                assert_eq!(
                    checks.iter().map(|c| c.met).collect::<Vec<_>>(),
                    met,
                    "{name}"
                );
                assert_eq!(checks[0].item, "Name the parser", "{name}");
            }
            (Err(why), Err(says)) => assert!(why.contains(says), "{name}: {why}"),
            (got, expected) => panic!("{name}: {got:?}, expected {expected:?}"),
        }
    }
    // No criteria: the report alone counts.
    assert_eq!(check_report(Some("r"), &[], &[]), Ok(Vec::new()));
}

#[test]
fn proposals_are_capped_and_cleaned() {
    let p = |title: &str, goal: &str| Proposal {
        title: title.to_string(),
        goal: goal.to_string(),
    };
    let (kept, left_out) = cap_proposals(vec![
        p("  Split\nthe parser ", " goal "),
        p("   ", "no title: dropped"),
        p(&"t".repeat(300), &"g".repeat(5000)),
    ]);
    assert_eq!(left_out, 0);
    assert_eq!(kept[0], p("Split the parser", "goal"));
    assert_eq!(kept.len(), 2);
    assert!(kept[1].title.ends_with("… (cut at 120 characters)"));
    assert!(kept[1].goal.ends_with("… (cut at 1000 characters)"));
    let many = (1..=14).map(|i| p(&format!("p{i}"), "")).collect();
    let (kept, left_out) = cap_proposals(many);
    assert_eq!((kept.len(), left_out), (MAX_PROPOSALS, 4));
    assert_eq!(kept[9].title, "p10");
}

#[test]
fn evidence_becomes_links_only_to_paths_of_the_commit_outside_code() {
    let base = "https://github.com/o/r/blob/abc";
    let existing: BTreeSet<String> = ["src/lib.rs", "README.md", "a b.rs"]
        .map(String::from)
        .into();
    #[rustfmt::skip]
    let cases: &[(&str, &str)] = &[
        ("see src/lib.rs:12 here",
            "see [src/lib.rs:12](https://github.com/o/r/blob/abc/src/lib.rs#L12) here"),
        ("range src/lib.rs:3-9.",
            "range [src/lib.rs:3-9](https://github.com/o/r/blob/abc/src/lib.rs#L3-L9)."),
        ("code `src/lib.rs:4` span",
            "code [`src/lib.rs:4`](https://github.com/o/r/blob/abc/src/lib.rs#L4) span"),
        ("(./README.md:1)",
            "([./README.md:1](https://github.com/o/r/blob/abc/README.md#L1))"),
        ("two src/lib.rs:1 and README.md:2",
            "two [src/lib.rs:1](https://github.com/o/r/blob/abc/src/lib.rs#L1) and [README.md:2](https://github.com/o/r/blob/abc/README.md#L2)"),
        // Left as written: not in the commit, inside code, a URL, a link, a bad range.
        ("missing src/gone.rs:3", "missing src/gone.rs:3"),
        ("`cargo test src/lib.rs:3`", "`cargo test src/lib.rs:3`"),
        ("http://host/src/lib.rs:3", "http://host/src/lib.rs:3"),
        ("[src/lib.rs:3](x)", "[src/lib.rs:3](x)"),
        ("src/lib.rs:0 and src/lib.rs:9-2", "src/lib.rs:0 and src/lib.rs:9-2"),
        ("../src/lib.rs:3 /src/lib.rs:3", "../src/lib.rs:3 /src/lib.rs:3"),
        ("src/lib.rs:3x", "src/lib.rs:3x"),
        ("at 10:30 today", "at 10:30 today"),
        ("    src/lib.rs:3 indented code", "    src/lib.rs:3 indented code"),
    ];
    for (text, expected) in cases {
        assert_eq!(link_evidence(text, base, &existing), *expected, "{text}");
    }
    let fenced = "before src/lib.rs:1\n```\nsrc/lib.rs:2\n```\nafter src/lib.rs:3\n";
    let linked = link_evidence(fenced, base, &existing);
    assert!(linked.contains("[src/lib.rs:1]("), "{linked}");
    assert!(linked.contains("\n```\nsrc/lib.rs:2\n```\n"), "{linked}");
    assert!(linked.contains("[src/lib.rs:3]("), "{linked}");
    assert!(linked.ends_with('\n'));
    assert_eq!(
        evidence_paths(&format!("{fenced}and src/x.rs:4, src/lib.rs:9")),
        ["src/lib.rs", "src/x.rs"]
    );
}

#[test]
fn ticked_boxes_are_read_by_number_outside_code() {
    #[rustfmt::skip]
    let cases: &[(&str, &[u32])] = &[
        ("- [ ] 1. a\n- [x] 2. b\n- [X] 3. c", &[2, 3]),
        ("* [x] 10. ten", &[10]),
        ("- [x] approved 1. no number first", &[]),
        ("- [x] 4 no dot", &[]),
        ("```\n- [x] 5. in code\n```", &[]),
        ("- [x] 6. six\n- [x] 6. again", &[6]),
        ("  - [x] 7. indented list item", &[7]),
    ];
    for (body, numbers) in cases {
        let comment = format!("- [x] 9. the report's own\n{PROPOSALS_MARKER}\n{body}");
        assert_eq!(ticked(&comment), *numbers, "{body}");
    }
    // Without the marker, or above its last occurrence, nothing counts.
    assert_eq!(ticked("- [x] 1. a"), Vec::<u32>::new());
    let forged = format!("{PROPOSALS_MARKER}\n- [x] 1. forged\n{PROPOSALS_MARKER}\n- [ ] 1. a");
    assert_eq!(ticked(&forged), Vec::<u32>::new());
    assert_eq!(
        neutral("a <!-- opentiger:x -->"),
        "a &lt;!-- opentiger:x -->"
    );
    // An agent's report mentions nobody into the thread.
    assert_eq!(
        neutral("ask @alice, not @ alone"),
        "ask @\u{200B}alice, not @ alone"
    );
}

#[test]
fn an_approved_proposal_becomes_one_task_with_a_stable_id() {
    let mut research = task("r1");
    research.issue_number = Some(7);
    let proposal = Proposal {
        title: "Split the parser".to_string(),
        goal: "Move tokens to their own module".to_string(),
    };
    let github = proposal_task(&research, 2, &proposal, true, "by @alice", NOW);
    assert_eq!(github.id, proposal_task_id(&research.id, 2));
    assert_ne!(github.id, proposal_task_id(&research.id, 1));
    assert_ne!(github.id, proposal_task_id(&task("r2").id, 2));
    assert_eq!(
        github.state(),
        TaskState::blocked(BlockReason::IssueLinking)
    );
    assert_eq!(github.goal, "Move tokens to their own module");
    assert!(github
        .notes
        .contains("Proposal 2 of research task r1 (#7), approved by @alice"));
    let local = proposal_task(&research, 2, &proposal, false, "by @alice", NOW);
    assert_eq!((&local.id, local.state()), (&github.id, TaskState::QUEUED));
}

#[test]
fn the_task_marker_names_its_task_and_nothing_else() {
    let id = TaskId("0123abcd4567".to_string());
    let body = format!(
        "report\n{}\n\n<!-- opentiger:research issue=7 -->",
        task_marker(&id)
    );
    assert_eq!(marked(&body), Some(id));
    let t1 = TaskId("t1".to_string());
    let forged = format!(
        "&lt;!-- opentiger:research task=forged -->\n{}",
        task_marker(&t1)
    );
    assert_eq!(marked(&forged), Some(t1));
    #[rustfmt::skip]
    let cases = [
        "<!-- opentiger:task=0123abcd4567 -->",
        "<!-- opentiger:research task= -->",
        "<!-- opentiger:research task=a b -->",
        "<!-- opentiger:research task=x",
        "",
    ];
    for body in cases {
        assert_eq!(marked(body), None, "{body}");
    }
}

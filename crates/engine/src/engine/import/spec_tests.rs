use super::*;
use crate::model::AuthorAssociation;
use crate::time::Timestamp;

#[test]
fn acceptance_criteria_come_from_the_section_else_from_task_lists() {
    let cases: Vec<(&str, &str, Vec<&str>)> = vec![
        ("no criteria", "Please add a greeting.\n- a note\n", vec![]),
        (
            "a section, any list style, until the next heading",
            "Intro\n\n## Acceptance Criteria\n- hello prints hi\n* [ ] bye prints bye\n1. exit 0\n\n## Notes\n- not an item\n",
            vec!["hello prints hi", "bye prints bye", "exit 0"],
        ),
        (
            "a bold heading with a colon",
            "**Acceptance criteria:**\n- [x] done already\n- still to do\n",
            vec!["done already", "still to do"],
        ),
        (
            "task lists anywhere when there is no section",
            "Steps\n- [ ] write `a.txt`\n  - [X] nested box\ntext\n- plain item\n",
            vec!["write `a.txt`", "nested box"],
        ),
        (
            "items inside code fences are not items",
            "## Acceptance criteria\n```\n- [ ] fake\n```\n- real\n~~~~\n- fake too\n~~~~\n",
            vec!["real"],
        ),
        (
            "an empty section falls back to task lists",
            "## Acceptance criteria\n\nsee below\n\n- [ ] from the list\n",
            vec!["from the list"],
        ),
    ];
    for (name, body, expected) in cases {
        assert_eq!(acceptance_criteria(body), expected, "{name}");
    }
}

#[test]
fn criteria_are_bounded_in_number_and_length() {
    let body: String = (0..50).map(|i| format!("- [ ] item {i}\n")).collect();
    assert_eq!(acceptance_criteria(&body).len(), 20);
    let long = format!("- [ ] {}", "é".repeat(400));
    let items = acceptance_criteria(&long);
    assert!(
        items[0].len() <= CRITERION_CAP + '…'.len_utf8(),
        "{}",
        items[0].len()
    );
    assert!(items[0].ends_with('…'));
}

#[test]
fn a_long_body_keeps_its_head_a_cut_note_and_its_criteria() {
    let filler = "lorem ipsum dolor sit amet\n".repeat(40_000);
    let body = format!(
        "Write `hello.txt` containing hi.\n\n{filler}\n## Acceptance criteria\n- hello.txt says hi\n- nothing else changes\n"
    );
    let capped = cap_body(&body, BODY_CAP);
    assert!(capped.len() <= BODY_CAP, "{}", capped.len());
    assert!(capped.starts_with("Write `hello.txt` containing hi."));
    let kept_head = capped.split("\n\n[… cut here").next().unwrap().len();
    let note = format!(
        "[… cut here: {} bytes of the issue body were left out to fit the prompt; the acceptance criteria follow, listed again …]",
        body.len() - kept_head
    );
    assert!(capped.contains(&note), "{capped}");
    assert!(capped.ends_with(
        "## Acceptance criteria\n\n- [ ] hello.txt says hi\n- [ ] nothing else changes\n"
    ));
    // Short bodies are untouched; a multi-byte body is cut on a character boundary.
    assert_eq!(cap_body("short", BODY_CAP), "short");
    let wide = "日本語".repeat(10_000);
    let capped = cap_body(&wide, 1_000);
    assert!(capped.contains("cut here") && capped.len() <= 1_200);
}

#[test]
fn titles_are_one_line_and_bounded() {
    assert_eq!(cap_title("Add\n  a greeting\t"), "Add a greeting");
    let long = "x".repeat(1_000);
    assert_eq!(cap_title(&long).len(), TITLE_CAP + '…'.len_utf8());
}

fn issue(body: &str, association: AuthorAssociation) -> Issue {
    Issue {
        number: 7,
        title: "Greeting".into(),
        body: body.into(),
        labels: vec!["opentiger".into()],
        author: "alice".into(),
        author_association: association,
        state: "open".into(),
        updated_at: Timestamp(1_000),
        html_url: "https://github.com/acme/widgets/issues/7".into(),
        labelled_by: Vec::new(),
    }
}

#[test]
fn edits_change_the_spec_only_when_the_author_is_trusted() {
    let config = BacklogConfig::default();
    let kept = spec_of(&issue("write a.txt", AuthorAssociation::Owner));
    let moved = Issue {
        updated_at: Timestamp(2_000),
        ..issue("write a.txt", AuthorAssociation::Owner)
    };
    let cases: Vec<(&str, Issue, Option<&IssueSpec>, &str)> = vec![
        (
            "first read",
            issue("write a.txt", AuthorAssociation::Owner),
            None,
            "new",
        ),
        (
            "same text, newer timestamp",
            moved,
            Some(&kept),
            "unchanged",
        ),
        (
            "owner edits",
            issue("write b.txt", AuthorAssociation::Owner),
            Some(&kept),
            "edited",
        ),
        (
            "member edits",
            issue("write b.txt", AuthorAssociation::Member),
            Some(&kept),
            "edited",
        ),
        (
            "outsider's issue edited",
            issue("write b.txt", AuthorAssociation::None),
            Some(&kept),
            "untrusted",
        ),
        (
            "contributor's issue edited",
            issue("rm -rf", AuthorAssociation::Contributor),
            Some(&kept),
            "untrusted",
        ),
    ];
    for (name, fresh, kept, expected) in cases {
        let got = match spec_change(&fresh, kept, &config) {
            SpecChange::New(s) => {
                assert_eq!(s.body, fresh.body, "{name}");
                "new"
            }
            SpecChange::Edited(s) => {
                assert_eq!(s.body, fresh.body, "{name}");
                "edited"
            }
            SpecChange::Unchanged => "unchanged",
            SpecChange::UntrustedEdit { author } => {
                assert_eq!(author, "alice", "{name}");
                "untrusted"
            }
        };
        assert_eq!(got, expected, "{name}");
    }
}

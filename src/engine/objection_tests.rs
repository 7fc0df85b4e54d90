use super::*;
use crate::model::ReviewLine;
use crate::time::SECOND;
use ReviewState::{Approved, ChangesRequested, Commented, Dismissed};

/// A review by `author` of `sha`, submitted at second `s`.
fn review(id: u64, author: &str, state: ReviewState, sha: &str, s: i64) -> PullReview {
    PullReview {
        id,
        pr: 7,
        author: author.into(),
        state,
        body: "text".into(),
        commit_id: sha.into(),
        submitted_at: Timestamp(s * SECOND),
        lines: Vec::new(),
    }
}

fn lined(r: PullReview, n: usize) -> PullReview {
    PullReview {
        lines: (1..=n as u64)
            .map(|i| ReviewLine {
                path: "notes.txt".into(),
                start_line: None,
                line: i,
                body: format!("line {i}"),
            })
            .collect(),
        ..r
    }
}

/// The decision in short: "clear amy,bob", "fix @bob on aaaa", "held <who>|<who>".
fn short(word: &LastWord) -> String {
    match word {
        LastWord::Clear { approved_by } => format!("clear {}", approved_by.join(",")),
        LastWord::Fix {
            conclusion: JudgeConclusion::RequestChanges { summary, .. },
            ..
        } => format!("fix {}", summary.replace(" requested changes", "")),
        LastWord::Fix { conclusion, .. } => format!("{conclusion:?}"),
        LastWord::Held(holds) => format!(
            "held {}",
            holds.iter().map(Hold::who).collect::<Vec<_>>().join("|")
        ),
    }
}

#[test]
fn last_word_table() {
    let merge = MergeConfig::default();
    let none: Vec<String> = Vec::new();
    let hold_label = vec!["bug".to_string(), "Do-Not-Merge".to_string()];
    /// (name, reviews, labels, held by, AutoFix made in second, decision)
    type Case<'a> = (
        &'a str,
        Vec<PullReview>,
        &'a Vec<String>,
        Option<&'a str>,
        Option<i64>,
        &'a str,
    );
    #[rustfmt::skip]
    let cases: Vec<Case> = vec![
        ("nobody said anything", vec![], &none, None, None, "clear "),
        ("approved this head", vec![review(1, "amy", Approved, "head", 10)], &none, None, None, "clear amy"),
        ("approved an older head only", vec![review(1, "amy", Approved, "old", 10)], &none, None, None, "clear "),
        ("a comment only", vec![review(1, "amy", Commented, "head", 10)], &none, None, None, "clear "),
        ("changes requested, no AutoFix yet", vec![review(1, "bob", ChangesRequested, "head", 10)], &none, None, None, "fix @bob on head"),
        // The judge's update (base merged in) moved the head: the request still stands, unanswered.
        ("changes requested on an older head, unanswered", vec![review(1, "bob", ChangesRequested, "old", 10)], &none, None, None, "fix @bob on old"),
        ("answered by an AutoFix a second later: held", vec![review(1, "bob", ChangesRequested, "old", 10)], &none, None, Some(11), "held @bob's review (changes requested on old)"),
        ("same second as the AutoFix: answered again", vec![review(1, "bob", ChangesRequested, "old", 10)], &none, None, Some(10), "fix @bob on old"),
        ("written after the AutoFix", vec![review(1, "bob", ChangesRequested, "head", 20)], &none, None, Some(11), "fix @bob on head"),
        ("a later approval lifts it", vec![review(1, "bob", ChangesRequested, "old", 10), review(2, "bob", Approved, "head", 30)], &none, None, Some(11), "clear bob"),
        ("a later comment does not", vec![review(1, "bob", ChangesRequested, "old", 10), review(2, "bob", Commented, "head", 30)], &none, None, Some(11), "held @bob's review (changes requested on old)"),
        ("dismissed: lifted", vec![review(1, "bob", Dismissed, "old", 10)], &none, None, Some(11), "clear "),
        ("dismissed after an approval of an older head", vec![review(1, "bob", Approved, "old", 5), review(2, "bob", Dismissed, "old", 10)], &none, None, None, "clear "),
        ("an approval after the request, then a new request", vec![review(1, "bob", ChangesRequested, "a", 10), review(2, "bob", Approved, "b", 20), review(3, "bob", ChangesRequested, "head", 30)], &none, None, Some(25), "fix @bob on head"),
        ("one approval does not outvote another's request", vec![review(1, "amy", Approved, "head", 10), review(2, "bob", ChangesRequested, "head", 11)], &none, None, None, "fix @bob on head"),
        ("line comments on this head", vec![lined(review(1, "amy", Commented, "head", 10), 1)], &none, None, None, "fix @amy on head"),
        ("line comments on an older head were answered by the push", vec![lined(review(1, "amy", Commented, "old", 10), 1)], &none, None, None, "clear "),
        ("line comments answered by an AutoFix", vec![lined(review(1, "amy", Commented, "head", 10), 1)], &none, None, Some(12), "clear "),
        ("a hold label, any case", vec![], &hold_label, None, None, "held the label `Do-Not-Merge`"),
        ("a hold comment", vec![], &none, Some("maint"), None, "held @maint's `/opentiger hold`"),
        ("held by all three", vec![review(1, "bob", ChangesRequested, "old", 10)], &hold_label, Some("maint"), Some(11), "held @bob's review (changes requested on old)|the label `Do-Not-Merge`|@maint's `/opentiger hold`"),
        ("an unanswered request is fixed even when held", vec![review(1, "bob", ChangesRequested, "old", 10)], &hold_label, Some("maint"), None, "fix @bob on old"),
    ];
    for (name, reviews, labels, held_by, fixed_at, want) in cases {
        let say = PeopleSay {
            head: "head",
            reviews: &reviews,
            labels,
            held_by,
            fixed_at: fixed_at.map(|s| Timestamp(s * SECOND + 999)),
        };
        assert_eq!(short(&last_word(&say, &merge)), want, "{name}");
    }
}

/// An objection is never ignored, whatever `merge.human_approval` says.
#[test]
fn an_objection_holds_in_every_approval_mode() {
    use crate::config::HumanApproval;
    let reviews = vec![review(1, "bob", ChangesRequested, "head", 10)];
    for mode in [
        HumanApproval::Required,
        HumanApproval::Counts,
        HumanApproval::Ignored,
    ] {
        let merge = MergeConfig {
            human_approval: mode,
            ..MergeConfig::default()
        };
        let say = PeopleSay {
            head: "head",
            reviews: &reviews,
            labels: &[],
            held_by: None,
            fixed_at: None,
        };
        assert!(
            matches!(last_word(&say, &merge), LastWord::Fix { .. }),
            "{mode:?}"
        );
        let answered = PeopleSay {
            fixed_at: Some(Timestamp(11 * SECOND)),
            ..say
        };
        assert!(
            matches!(last_word(&answered, &merge), LastWord::Held(_)),
            "{mode:?}"
        );
    }
}

/// 300 review comments: the AutoFix's findings name a bounded number of ranges.
#[test]
fn many_commented_ranges_are_capped() {
    let reviews = vec![lined(review(1, "bob", ChangesRequested, "head", 10), 300)];
    let say = PeopleSay {
        head: "head",
        reviews: &reviews,
        labels: &[],
        held_by: None,
        fixed_at: None,
    };
    let LastWord::Fix {
        conclusion: JudgeConclusion::RequestChanges { findings, .. },
        held_by,
    } = last_word(&say, &MergeConfig::default())
    else {
        panic!("a request for changes gets an AutoFix");
    };
    assert_eq!(held_by, "@bob's review (changes requested on head)");
    assert_eq!(findings.len(), MAX_RANGES + 1, "{findings:?}");
    assert_eq!(
        findings[0],
        "notes.txt:1: see @bob's review comment on these lines"
    );
    assert!(findings[MAX_RANGES].starts_with("280 more commented ranges"));
}

#[test]
fn what_a_hold_says() {
    let word = LastWord::Held(vec![
        Hold::Review {
            author: "maint".into(),
            commit: "3f2a1c0".into(),
        },
        Hold::Label("do-not-merge".into()),
    ]);
    assert_eq!(
        word.held_text().unwrap(),
        "held by @maint's review (changes requested on 3f2a1c0) (to release: @maint approves the PR, or a maintainer dismisses the review); held by the label `do-not-merge` (to release: remove the label `do-not-merge`)"
    );
    assert_eq!(
        LastWord::Clear {
            approved_by: vec![]
        }
        .held_text(),
        None
    );
}

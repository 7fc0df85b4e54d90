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
/// What people said of `head` through `reviews` alone: no label, no hold, no fix yet.
fn reviews_only(reviews: &[PullReview]) -> PeopleSay<'_> {
    PeopleSay {
        head: "head",
        reviews,
        labels: &[],
        held_by: None,
        fixed_at: None,
    }
}

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
        let say = reviews_only(&reviews);
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
    let say = reviews_only(&reviews);
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

/// The rule inside the plan (github mode): task `a` waits on PR #7, head `aaa` green; what
/// people said decides between the review, an AutoFix and a wait that says who holds it.
#[test]
fn the_plan_follows_peoples_last_word() {
    use crate::config::{Config, HumanApproval};
    use crate::engine::testkit::{at, checks_on, plan_with, reasons, run, snapshot, task, TaskExt};
    use crate::engine::PullState;
    use crate::model::{BlockReason, RunStatus, TaskId, TaskKind, TaskStatus};

    let carol = |state, sha: &str| PullReview {
        submitted_at: at(-5),
        ..review(1, "carol", state, sha, 0)
    };
    // name, reviews, labels, hold, an AutoFix made after the review, approval mode,
    // what the plan writes first (empty: waits), a reason that must show.
    type Row<'a> = (
        &'a str,
        Vec<PullReview>,
        Vec<String>,
        Option<&'a str>,
        bool,
        HumanApproval,
        &'a str,
        &'a str,
    );
    #[rustfmt::skip]
    let cases: Vec<Row> = vec![
        ("nobody objects", vec![], vec![], None, false, HumanApproval::Counts, "judge.review a judge r1", "not judged yet"),
        ("an unanswered request on an older head", vec![carol(ChangesRequested, "old")], vec![], None, false, HumanApproval::Counts,
            "judge.autofix_child", "held by @carol's review (changes requested on old)"),
        ("the same, approvals ignored", vec![carol(ChangesRequested, "aaa")], vec![], None, false, HumanApproval::Ignored,
            "judge.autofix_child", "held by @carol's review"),
        ("answered, still standing", vec![carol(ChangesRequested, "old")], vec![], None, true, HumanApproval::Counts,
            "", "held by @carol's review (changes requested on old) (to release: @carol approves the PR, or a maintainer dismisses the review); AutoFix 1/3 done"),
        ("answered, then approved", vec![carol(ChangesRequested, "old"), PullReview { submitted_at: at(-1), ..review(2, "carol", Approved, "aaa", 0) }], vec![], None, true, HumanApproval::Required,
            "judge.review a judge r1", "not judged yet"),
        ("a hold label", vec![], vec!["opentiger:hold".into()], None, false, HumanApproval::Counts,
            "", "not merged: held by the label `opentiger:hold`"),
        ("a hold comment", vec![], vec![], Some("maint"), false, HumanApproval::Counts,
            "", "held by @maint's `/opentiger hold`"),
    ];
    for (name, reviews, labels, hold, answered, mode, first, reason) in cases {
        let mut r1 = run("r1", "a", RunStatus::Success, at(-10));
        r1.pr_number = Some(7);
        r1.head_sha = Some("aaa".into());
        let mut tasks = vec![task("a")
            .blocked(BlockReason::AwaitingJudge)
            .with(|t| t.source_pr = Some(7))];
        if answered {
            let mut fix = task("fix0");
            fix.title = "AutoFix 1/3: task a".into();
            fix.kind = TaskKind::Autofix;
            fix.parent_task_id = Some(TaskId::from("a"));
            fix.status = TaskStatus::Done;
            fix.created_at = at(-3);
            tasks.push(fix);
        }
        let mut snap = snapshot(tasks, vec![r1], vec![]);
        let obs = &mut snap.observations;
        obs.pull_requests.insert(7, PullState::Open);
        obs.pull_checks
            .insert(7, checks_on("aaa", &["test"], &[], &[]));
        obs.reviews.insert(7, reviews);
        obs.pull_labels.insert(7, labels);
        if let Some(by) = hold {
            obs.holds.insert(7, by.to_string());
        }
        let mut config = Config::default();
        config.merge.human_approval = mode;
        let plan = plan_with(&snap, &config);
        let writes = crate::engine::testkit::writes(&plan);
        match first {
            "" => assert!(writes.is_empty(), "{name}: {writes:?}"),
            first => assert!(
                writes.first().is_some_and(|w| w.starts_with(first)),
                "{name}: {writes:?}"
            ),
        }
        let all = reasons(&plan, "a").join(" | ");
        assert!(all.contains(reason), "{name}: {all}");
    }
}

//! PRs people open (`backlog.import_open_prs`): a collaborator's PR is reviewed and
//! commented like the bot's own and left to a person to merge unless configured; an outsider's
//! is not reviewed.

use super::*;

/// Pushes a branch with one commit to origin, as a person working on the repository would.
fn push_branch(s: &Setup, branch: &str, file: &str, text: &str) {
    git(&s.clone, &["checkout", "-q", "-B", branch, "origin/main"]);
    std::fs::write(s.clone.join(file), text).unwrap();
    git(&s.clone, &["add", file]);
    git(&s.clone, &["commit", "-q", "-m", &format!("Edit {file}")]);
    git(&s.clone, &["push", "-q", "-f", "origin", branch]);
    git(&s.clone, &["checkout", "-q", "main"]);
}

/// PR import on (with `extra` backlog keys), and a PR by bob, a collaborator, on his branch.
fn bobs_pr(s: &Setup, extra: &str) -> u64 {
    let path = s.clone.join(".opentiger.yml");
    let mut config = std::fs::read_to_string(&path).unwrap();
    config.push_str(&format!("backlog:\n  import_open_prs: true\n{extra}"));
    std::fs::write(path, config).unwrap();
    s.server.set_permission("bob", "write");
    push_branch(s, "bob-feature", "bob.txt", "hello from bob\n");
    s.server
        .add_pull("Add bob.txt", "Adds a file.", "bob-feature", "main", "bob")
}

/// `backlog.import_open_prs`: a collaborator's PR is reviewed like the bot's own (CI first,
/// then the judge), the verdict is a comment, and it is not merged unless configured. An
/// outsider's PR is not reviewed; a new push is reviewed again.
#[test]
fn a_collaborators_pr_is_reviewed_and_commented_but_left_to_a_person_to_merge() {
    let s = setup();
    let pr = bobs_pr(&s, "");
    push_branch(&s, "eve-feature", "eve.txt", "hi\n");
    let outsider = s
        .server
        .add_pull("Add eve.txt", "please", "eve-feature", "main", "eve");
    let out = tick(&s, "2026-11-21T12:00:00Z");
    assert!(out.contains(&format!("review PR #{pr} by @bob")), "{out}");
    assert!(
        out.contains(&format!(
            "PR #{outsider} not reviewed: opened by @eve (NONE)"
        )),
        "{out}"
    );
    // CI on its head is read next tick; there is none, so the judge reviews it.
    tick(&s, "2026-11-21T12:01:00Z");
    let reviews = kind_of_tasks(&s, "pr_review");
    assert_eq!(reviews.len(), 1, "{reviews:?}");
    assert_eq!(reviews[0]["status"], "done", "{reviews:?}");
    let comments = s.server.comments(pr);
    let verdict: Vec<_> = comments
        .iter()
        .filter(|c| c.body.contains("opentiger:verdict"))
        .collect();
    assert_eq!(verdict.len(), 1, "{comments:?}");
    assert!(verdict[0].body.contains("approved") && verdict[0].body.contains("merge_imported_prs"));
    assert!(!s.server.pull(pr).unwrap().merged, "not merged by default");
    assert!(s.server.comments(outsider).is_empty());
    // Nothing was pushed to bob's branch.
    let head = s.server.pull(pr).unwrap().head_sha;
    assert_eq!(git(&s.origin, &["rev-parse", "bob-feature"]), head);
    // A quiet tick reviews nothing again; a push is a new head, reviewed once more.
    tick(&s, "2026-11-21T12:05:00Z");
    assert_eq!(kind_of_tasks(&s, "pr_review").len(), 1);
    push_branch(&s, "bob-feature", "bob.txt", "hello again\n");
    let out = tick(&s, "2026-11-21T12:10:00Z");
    assert!(out.contains(&format!("review PR #{pr}")), "{out}");
    tick(&s, "2026-11-21T12:11:00Z");
    let reviews = kind_of_tasks(&s, "pr_review");
    assert_eq!(reviews.len(), 2, "{reviews:?}");
    assert!(reviews.iter().all(|r| r["status"] == "done"), "{reviews:?}");
}

#[test]
fn imported_prs_are_merged_when_configured_and_their_branch_is_kept() {
    let s = setup();
    let pr = bobs_pr(&s, "  merge_imported_prs: true\n");
    tick(&s, "2026-11-21T12:00:00Z");
    // Reviewed and approved once its CI was read; merged by the first tick after the review
    // window (issue 38), without a second review.
    let out = tick(&s, "2026-11-21T12:01:00Z");
    assert!(out.contains("merges after the review window"), "{out}");
    let out = tick(&s, "2026-11-21T12:10:00Z");
    assert!(out.contains("approved and merged"), "{out}");
    assert!(s.server.pull(pr).unwrap().merged);
    assert_eq!(kind_of_tasks(&s, "pr_review")[0]["status"], "done");
    assert!(
        !git(&s.origin, &["branch", "--list", "bob-feature"]).is_empty(),
        "a person's branch is theirs to delete"
    );
    assert_eq!(git(&s.origin, &["show", "main:bob.txt"]), "hello from bob");
}

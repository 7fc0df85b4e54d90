//! A tick's default output speaks the user's words (issue 51): each task, what ran, what it
//! cost, what is next; the rules' labels, leases and rounds arithmetic are `-v`'s.

use crate::common::{GitRepo, Setup, NOW};

#[test]
fn the_default_tick_output_is_plain_and_v_adds_the_internals() {
    let g = GitRepo::with(Setup::default());
    g.agent("#!/bin/sh\necho hi > \"$OPENTIGER_TASK_ID.txt\"\n");
    g.repo
        .add(&["--title", "Say hello", "--goal", "a file", "--id", "hello"]);
    let plain = g.repo.run_at(NOW, &["tick"]).ok().stdout;
    assert!(
        plain.starts_with("tick ")
            && plain
                .lines()
                .next()
                .unwrap()
                .ends_with(": ran 1 agent, reviewed 1 change, merged 1, 1 task done"),
        "{plain}"
    );
    assert!(
        plain.contains("  hello \"Say hello\": worker ran; waits for its review\n"),
        "{plain}"
    );
    assert!(
        plain.contains("  hello \"Say hello\": review: approved and merged as "),
        "{plain}"
    );
    for internal in [
        "[",
        "lease until",
        "its work may take",
        "decision(s)",
        "round ",
    ] {
        assert!(
            !plain.contains(internal),
            "`{internal}` in the plain output:\n{plain}"
        );
    }

    g.repo
        .add(&["--title", "Say more", "--goal", "a file", "--id", "more"]);
    let verbose = g.repo.run_at(NOW, &["-v", "tick"]).ok().stdout;
    for internal in [
        "[dispatch.claim] more: claim and run (run ",
        "lease until",
        "[outcome] more: running → blocked(awaiting_judge)",
        "[round 2] its work may take ",
        "1 run(s), 1 review(s) in 2 rounds",
    ] {
        assert!(
            verbose.contains(internal),
            "`{internal}` missing with -v:\n{verbose}"
        );
    }
}

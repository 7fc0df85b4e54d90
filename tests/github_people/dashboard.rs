//! The dashboard issue as people's switchboard: its pause box holds the repository until
//! resumed, and a ticked box acts once and is unticked.

use super::*;

#[test]
fn the_dashboard_pauses_the_repository_until_resumed() {
    let s = setup("");
    std::fs::write(s.dir.path().join("ok"), "").unwrap();
    let path = s.clone.join(".opentiger.yml");
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        config.replace("dashboard_issue: false", "dashboard_issue: true"),
    )
    .unwrap();
    s.server
        .add_issue("First", "Please.", &["opentiger"], "acme", "OWNER");
    s.tick(0);
    let dashboard = s
        .server
        .issues()
        .into_iter()
        .find(|i| i.labels.iter().any(|l| l == "opentiger:dashboard"))
        .expect("a dashboard issue")
        .number;
    s.server.advance(60);
    let pause = s.server.add_comment(dashboard, "/opentiger pause", "acme");
    let second = s
        .server
        .add_issue("Second", "Please.", &["opentiger"], "acme", "OWNER");
    s.tick(5);
    let replies = s.replies(dashboard, pause);
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert!(replies[0].contains("Paused by @acme"), "{}", replies[0]);
    let status = s.run("2026-11-21T12:06:00Z", &["status"]);
    let text = String::from_utf8_lossy(&status.stdout).into_owned();
    assert!(
        text.contains("Paused: by @acme") && text.contains("/opentiger resume"),
        "{text}"
    );
    for minute in [10, 15] {
        s.tick(minute);
    }
    let held = s.task_where("2026-11-21T12:16:00Z", "issue", second.into());
    assert_eq!(held["status"], "queued", "{held}");
    assert!(
        held["next_action"]
            .as_str()
            .unwrap_or("")
            .contains("paused by @acme"),
        "{held}"
    );
    let board = s.server.issue(dashboard).unwrap().body.unwrap_or_default();
    assert!(board.contains("**Paused:**"), "{board}");

    s.server.advance(60);
    let resume = s.server.add_comment(dashboard, "/opentiger resume", "acme");
    s.tick(20);
    assert_eq!(s.replies(dashboard, resume).len(), 1);
    let second_task = s.task_where("2026-11-21T12:21:00Z", "issue", second.into());
    assert_ne!(
        second_task["status"], "queued",
        "claimed after resume: {second_task}"
    );
}

/// Renovate-style checkboxes: a person ticks "retry" under a waiting task on the dashboard,
/// the next tick acts on it once and rewrites the dashboard unticked; a quiet tick still costs
/// at most 3 conditional requests (the dashboard comes back with the backlog listing).
#[test]
fn a_ticked_dashboard_box_acts_once_and_is_unticked() {
    let s = setup("");
    common::enable_dashboard(&s.clone);
    s.task_awaiting_human();
    s.tick(2);
    s.tick(3);
    let dashboard = || {
        s.server
            .issues()
            .into_iter()
            .find(|i| i.labels.iter().any(|l| l == "opentiger:dashboard"))
            .expect("a dashboard issue")
    };
    let board = dashboard();
    assert!(
        board.labels.iter().any(|l| l == "opentiger"),
        "listed with the backlog: {:?}",
        board.labels
    );
    let body = board.body.clone().unwrap_or_default();
    let id = s.task()["id"].as_str().unwrap().to_string();
    let retry_box = format!("  - [ ] retry (recommended) <!-- opentiger:box={id}:retry:");
    assert!(body.contains(&retry_box), "{body}");
    assert!(body.contains(&format!("  - [ ] cancel <!-- opentiger:box={id}:cancel:")));
    assert!(
        !body.contains("approve <!--"),
        "only the boxes its state allows: {body}"
    );

    // A person ticks "retry" (GitHub rewrites `[ ]` to `[x]` in the body).
    std::fs::write(s.dir.path().join("ok"), "").unwrap();
    s.server.advance(60);
    s.server.edit_issue_body(
        board.number,
        &body.replace("  - [ ] retry (recommended)", "  - [x] retry (recommended)"),
    );
    let out = s.tick(5);
    assert!(
        out.contains(&format!("checkbox `retry` for task {id}: Retried")),
        "{out}"
    );
    // Queued by the box and run by the same tick.
    assert_eq!(s.state(), "blocked(awaiting_judge)", "{}", s.task());
    let after = dashboard().body.unwrap_or_default();
    assert!(!after.contains("[x]"), "rewritten unticked: {after}");

    for minute in [10, 15, 20, 25, 30] {
        let out = s.tick(minute);
        assert!(
            !out.contains("checkbox `retry`"),
            "acted again at {minute}: {out}"
        );
    }
    assert_eq!(s.events_mentioning("retried from a dashboard checkbox"), 1);

    // The box of a task that moved on is stale: ticking it again changes nothing.
    s.server.advance(60);
    s.server.edit_issue_body(
        board.number,
        &body.replace("  - [ ] retry (recommended)", "  - [x] retry (recommended)"),
    );
    let out = s.tick(35);
    assert!(out.contains("ignored, task"), "{out}");
    assert_eq!(s.events_mentioning("retried from a dashboard checkbox"), 1);

    // Quiet again: at most 3 requests, all conditional.
    s.tick(40);
    s.tick(45);
    s.quiet_tick(50);
}

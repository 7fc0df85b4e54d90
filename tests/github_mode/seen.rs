//! What people see of github-mode ticks: the dashboard issue and the job summary, `tick --json`
//! counts, a dry run's view of what it would import, and no secret an agent echoes in any PR,
//! comment, state or log.

use super::*;

/// DESIGN §9: after a tick that changed something, the dashboard issue says what waits on whom
/// (one issue, found again by its label and marker, edited in place); with
/// `$GITHUB_STEP_SUMMARY` set the tick appends its job summary; a quiet tick costs no dashboard
/// request.
#[test]
fn the_dashboard_issue_and_job_summary_follow_the_ticks() {
    let s = setup();
    common::enable_dashboard(&s.clone);
    let summary_file = s.clone.parent().unwrap().join("step-summary.md");
    let tick_with_summary = |now: &str| {
        let out = opentiger_in(&s, &s.clone, now, &["tick"])
            .env("GITHUB_STEP_SUMMARY", &summary_file)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    s.server.add_issue(
        "Add a greeting",
        "Please add a greeting file. cc @someone",
        &["opentiger"],
        "alice",
        "OWNER",
    );
    tick_with_summary("2026-11-21T12:00:00Z");
    let dashboards = || -> Vec<_> {
        s.server
            .issues()
            .into_iter()
            .filter(|i| i.labels.iter().any(|l| l == "opentiger:dashboard"))
            .collect()
    };
    let first = dashboards();
    assert_eq!(first.len(), 1, "{first:?}");
    let body = first[0].body.clone().unwrap_or_default();
    assert!(body.contains("<!-- opentiger:dashboard -->"), "{body}");
    assert!(body.contains("**Add a greeting**"), "{body}");
    assert!(body.contains("awaiting_judge"), "{body}");
    assert!(body.contains("**Spend:**"), "{body}");
    let job = std::fs::read_to_string(&summary_file).unwrap();
    assert!(job.contains("## opentiger tick"), "{job}");
    assert!(job.contains("What this tick did"), "{job}");
    assert!(job.contains("# opentiger dashboard"), "{job}");

    // The judge approved in the first tick's next round; the first tick after the review
    // window merges: the same issue is edited, none added.
    let job = std::fs::read_to_string(&summary_file).unwrap();
    assert!(job.contains("in 2 rounds"), "{job}");
    assert!(
        !job.contains("[round "),
        "plain lines only (issue 51): {job}"
    );
    tick_with_summary("2026-11-21T12:10:00Z");
    let second = dashboards();
    assert_eq!(second.len(), 1, "{second:?}");
    assert_eq!(second[0].number, first[0].number);
    let body = second[0].body.clone().unwrap_or_default();
    assert!(body.contains("## Recently finished"), "{body}");
    assert!(body.contains("Nothing waits on a person."), "{body}");
    assert_eq!(
        std::fs::read_to_string(&summary_file)
            .unwrap()
            .matches("## opentiger tick")
            .count(),
        2
    );

    // A quiet tick: the usual conditional requests only, nothing for the dashboard.
    tick(&s, "2026-11-21T12:15:00Z");
    s.server.reset_counts();
    tick(&s, "2026-11-21T12:20:00Z");
    let calls = s.server.requests();
    assert!(
        calls.iter().all(
            |r| !r.path_and_query.contains("labels=opentiger%3Adashboard")
                && !r.path_and_query.contains("labels=opentiger:dashboard")
        ),
        "{calls:?}"
    );
    assert!(calls.len() <= 3, "{calls:?}");
    // Issue 17: the comment feed (for `/opentiger` commands) is one of them; all conditional.
    assert!(calls.iter().all(|r| r.conditional), "{calls:?}");
    assert!(
        calls
            .iter()
            .any(|r| r.path_and_query.contains("/issues/comments?")),
        "{calls:?}"
    );
}

/// What the GitHub Action reads off `tick --json`: runs, PRs opened, merges, tasks done.
#[test]
fn tick_json_counts_prs_opened_merges_and_tasks_done() {
    let s = setup();
    s.server.add_issue(
        "Add a greeting",
        "Please.",
        &["opentiger"],
        "alice",
        "OWNER",
    );
    let json = |now: &str| -> serde_json::Value {
        let out = opentiger(&s, now, &["tick", "--json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let first = json("2026-11-21T12:00:00Z");
    assert_eq!(
        (
            &first["runs"],
            &first["prs_opened"],
            &first["prs_updated"],
            &first["merged"],
            &first["tasks_done"]
        ),
        (&1.into(), &1.into(), &0.into(), &0.into(), &0.into()),
        "{first}"
    );
    assert_eq!(first["failures"], serde_json::json!([]));
    // No CI configured: the judge reviews in the tick's next round (issue 38) and GitHub merges
    // at the first tick after the review window, without a second review by the agent.
    assert_eq!(
        (&first["reviews"], &first["rounds"]),
        (&1.into(), &2.into()),
        "{first}"
    );
    let second = json("2026-11-21T12:10:00Z");
    assert_eq!(
        (
            &second["reviews"],
            &second["merged"],
            &second["tasks_done"],
            &second["prs_opened"]
        ),
        (&1.into(), &1.into(), &1.into(), &0.into()),
        "{second}"
    );
    assert!(s.server.pulls()[0].merged);
}

/// Issue 15 item 9: a dry run reads GitHub (GETs only, conditional where it can) and shows
/// what a real tick would import and start, writing nothing; `--offline` asks GitHub nothing.
#[test]
fn a_dry_run_reads_github_and_shows_what_it_would_import() {
    let s = setup();
    let n = s.server.add_issue(
        "Add a greeting",
        "Please add a greeting file.",
        &["opentiger"],
        "alice",
        "OWNER",
    );
    s.server.reset_counts();
    let out = opentiger(&s, "2026-11-21T12:00:00Z", &["tick", "--dry-run"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("a real tick would first apply"), "{text}");
    assert!(text.contains(&format!("imported issue #{n}")), "{text}");
    assert!(
        text.contains("claim and run"),
        "the imported task would start:\n{text}"
    );
    let requests = s.server.requests();
    assert!(!requests.is_empty(), "GitHub was asked");
    assert!(
        requests.iter().all(|r| r.method == "GET"),
        "read-only: {requests:?}"
    );
    assert!(tasks(&s).is_empty(), "nothing was written");
    let json = opentiger(&s, "2026-11-21T12:00:00Z", &["tick", "--dry-run", "--json"]);
    let plan: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert!(
        plan["observed"].to_string().contains(&format!("#{n}")),
        "{plan}"
    );

    s.server.reset_counts();
    let offline = opentiger(
        &s,
        "2026-11-21T12:00:00Z",
        &["tick", "--dry-run", "--offline"],
    );
    let text = String::from_utf8_lossy(&offline.stdout);
    assert!(offline.status.success(), "{text}");
    assert!(!text.contains("imported issue"), "{text}");
    assert_eq!(s.server.request_count(), 0, "--offline asks GitHub nothing");
}

/// issue 16: secrets an agent echoes (its passthrough key, a token shape) reach no PR body, no
/// comment, no state and no log; the forge token never reaches the agent.
#[test]
fn secrets_an_agent_echoes_reach_no_pr_comment_state_or_log() {
    use std::os::unix::fs::PermissionsExt;
    const KEY: &str = "sk-ant-api03-PASSTHROUGHkey0123456789abcdefghijk";
    let s = setup();
    let tools = s.clone.parent().unwrap().to_path_buf();
    let seen = tools.join("seen-env.txt");
    let agent = tools.join("agent.sh");
    std::fs::write(&agent, format!("#!/bin/sh\nenv >> {seen}\necho \"by $OPENTIGER_TASK_ID\" > \"work-$OPENTIGER_TASK_ID.txt\"\necho \"{{\\\"summary\\\": \\\"wrote it with $ANTHROPIC_API_KEY\\\"}}\" > \"$OPENTIGER_RESULT_FILE\"\n", seen = seen.display())).unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let judge = tools.join("judge.sh");
    std::fs::write(&judge, "#!/bin/sh\necho \"{\\\"verdict\\\": \\\"request_changes\\\", \\\"summary\\\": \\\"uses $ANTHROPIC_API_KEY\\\", \\\"findings\\\": [\\\"line 1 holds $ANTHROPIC_API_KEY\\\"]}\" > \"$OPENTIGER_RESULT_FILE\"\n").unwrap();
    std::fs::set_permissions(&judge, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = std::fs::read_to_string(s.clone.join(".opentiger.yml")).unwrap();
    let config = config.replace(
        "    timeout_minutes: 1\n  judge:",
        "    timeout_minutes: 1\n    env_passthrough: [ANTHROPIC_API_KEY]\n  judge:",
    );
    let config = config.replace(
        "  judge:\n    executor: command\n",
        "  judge:\n    executor: command\n    env_passthrough: [ANTHROPIC_API_KEY]\n",
    );
    // The agent writes what it saw outside its workspace: no Landlock for this one.
    let config = format!("{config}sandbox:\n  filesystem: none\n");
    std::fs::write(s.clone.join(".opentiger.yml"), config).unwrap();
    git(&s.clone, &["commit", "-q", "-am", "pass the key"]);
    git(&s.clone, &["push", "-q", "origin", "main"]);
    let issue = s
        .server
        .add_issue("Add a file", "Please.", &["opentiger"], "alice", "OWNER");
    let mut logs = String::new();
    for now in [
        "2026-11-21T12:00:00Z",
        "2026-11-21T12:10:00Z",
        "2026-11-21T12:20:00Z",
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_opentiger"))
            .arg("--repo")
            .arg(&s.clone)
            .args(["--now", now, "-v", "tick"])
            .env("GITHUB_TOKEN", s.server.token())
            .env("GITHUB_API_URL", s.server.base_url())
            .env("GITHUB_REPOSITORY", "acme/widgets")
            .env("ANTHROPIC_API_KEY", KEY)
            .env_remove("OPENTIGER_GITHUB_TOKEN")
            .env_remove("GITHUB_RUN_ID")
            .env_remove("GITHUB_STEP_SUMMARY")
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        logs.push_str(&String::from_utf8_lossy(&out.stdout));
        logs.push_str(&String::from_utf8_lossy(&out.stderr));
    }
    let pulls = s.server.pulls();
    assert!(!pulls.is_empty(), "a PR was opened: {logs}");
    let mut posted = String::new();
    for pull in &pulls {
        posted.push_str(&format!(
            "{}\n{}\n",
            pull.title,
            pull.body.clone().unwrap_or_default()
        ));
        for c in s.server.comments(pull.number) {
            posted.push_str(&c.body);
        }
    }
    for c in s.server.comments(issue) {
        posted.push_str(&c.body);
    }
    assert!(
        posted.contains("[REDACTED]"),
        "the echoes were posted, redacted: {posted}"
    );
    // Every object of the origin, the state branch's chunks included, as raw bytes.
    let objects = Command::new("git")
        .current_dir(&s.origin)
        .args(["cat-file", "--batch-all-objects", "--batch"])
        .output()
        .unwrap()
        .stdout;
    let token = s.server.token().to_string();
    for secret in [KEY, token.as_str()] {
        assert!(!posted.contains(secret), "posted: {posted}");
        assert!(!logs.contains(secret), "logged: {logs}");
        assert!(
            !objects
                .windows(secret.len())
                .any(|w| w == secret.as_bytes()),
            "a secret is in the repository or its state"
        );
    }
    let env = std::fs::read_to_string(&seen).unwrap();
    assert!(!env.contains(&token), "the agent saw the forge token");
}

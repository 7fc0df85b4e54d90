//! `/opentiger stop` on a task's issue (issue 51), end to end against the local GitHub
//! stand-in: while a tick runs the task's ten-minute agent, a collaborator comments; a second
//! tick — another job, as the workflow starts one for the comment, with no agent run of its
//! own — reads it through its people feed and writes the request to the state branch; the first
//! tick's agent ends within 30 s and the task says who stopped it.

use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::github::{opentiger_against, tick_output, GithubServer};
use crate::common::{bare_origin, clone, git};

#[test]
fn a_stop_comment_ends_the_running_agent_through_another_tick() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let origin = bare_origin(dir.path());
    let repo = dir.path().join("clone");
    clone(&origin, &repo);
    let agent = dir.path().join("agent.sh");
    std::fs::write(
        &agent,
        format!(
            "#!/bin/sh\necho $$ > '{pid}'\nsleep 600\n",
            pid = dir.path().join("agent.pid").display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        repo.join(".opentiger.yml"),
        format!(
            "mode: github\nagents:\n  default:\n    executor: command\n    command: [\"{}\"]\n    timeout_minutes: 15\nreport:\n  dashboard_issue: false\nsandbox:\n  filesystem: none\n",
            agent.display()
        ),
    )
    .unwrap();
    std::fs::write(repo.join("README.md"), "# widgets\n").unwrap();
    git(&repo, &["add", "-A"]);
    git(&repo, &["commit", "-q", "-m", "initial"]);
    git(&repo, &["push", "-q", "origin", "main"]);
    let server = GithubServer::start("acme", "widgets").with_git(&origin);
    let now = "2026-11-21T12:00:00Z";
    server.set_now(now);
    let issue = server.add_issue("Add a greeting", "Please.", &["opentiger"], "acme", "OWNER");

    let running = opentiger_against(&server, &repo, now)
        .arg("tick")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pidfile = dir.path().join("agent.pid");
    let until = Instant::now() + Duration::from_secs(120);
    while !pidfile.exists() {
        assert!(Instant::now() < until, "the agent never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    server.set_permission("bob", "write");
    server.advance(60);
    let comment = server.add_comment(issue, "/opentiger stop", "bob");
    let later = "2026-11-21T12:01:00Z";
    let second = opentiger_against(&server, &repo, later)
        .args(["tick", "--max-runs", "0"])
        .output()
        .unwrap();
    let said = tick_output(second, later);
    assert!(said.contains("command `/opentiger stop` by @bob"), "{said}");
    let replies: Vec<String> = server
        .comments(issue)
        .into_iter()
        .filter(|c| {
            c.body
                .contains(&format!("<!-- opentiger:reply={comment} -->"))
        })
        .map(|c| c.body)
        .collect();
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert!(replies[0].contains("Stop asked by @bob"), "{}", replies[0]);

    let out = super::stop::wait_within(running, super::stop::TICK_LIMIT);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("stopped by @bob"), "{text}");
    let status = opentiger_against(&server, &repo, later)
        .args(["status", "--json", "--all"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let task = &json["tasks"][0];
    assert_eq!(task["status"], "blocked", "{json}");
    assert_eq!(task["block_reason"], "awaiting_human", "{json}");
    assert!(task.to_string().contains("stopped by @bob at "), "{task}");
}

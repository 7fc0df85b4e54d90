//! People steer from GitHub (issue 17), end to end against the local GitHub stand-in:
//! `/opentiger` comment commands act once and are answered once, outsiders change nothing,
//! bad commands are refused, the dashboard pauses the repository, a task waiting on a person
//! gets one escalation comment, and a quiet tick stays within its request budget. By family:
//! approvals in ask mode (`github_people/approvals.rs`), the dashboard's boxes (`dashboard.rs`).

#[path = "github_people/approvals.rs"]
mod approvals;
use crate::common;
#[path = "github_people/dashboard.rs"]
mod dashboard;

use std::path::PathBuf;

use common::github::{opentiger_against, GithubServer};
use common::{bare_origin, git};

struct Setup {
    dir: tempfile::TempDir,
    clone: PathBuf,
    server: GithubServer,
}

/// A repository whose worker writes a file only once `ok` exists next to it (until then its
/// runs change nothing, and a `noop` budget of 0 sends the task to a person at once). Each run
/// leaves its prompt in `prompt.md` next to it where the sandbox lets it write there.
fn setup(extra_config: &str) -> Setup {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let origin = bare_origin(dir.path());
    let clone = dir.path().join("clone");
    common::clone(&origin, &clone);
    let ok = dir.path().join("ok");
    let agent = dir.path().join("agent.sh");
    std::fs::write(
        &agent,
        format!(
            "#!/bin/sh\ncp \"$OPENTIGER_PROMPT_FILE\" '{}'\nif [ -f '{}' ]; then echo \"done by $OPENTIGER_TASK_ID\" > \"work-$OPENTIGER_TASK_ID.txt\"; fi\necho '{{\"summary\": \"tried\"}}' > \"$OPENTIGER_RESULT_FILE\"\n",
            dir.path().join("prompt.md").display(),
            ok.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let judge = dir.path().join("judge.sh");
    std::fs::write(&judge, "#!/bin/sh\necho '{\"verdict\": \"approve\", \"summary\": \"looks right\", \"findings\": []}' > \"$OPENTIGER_RESULT_FILE\"\n").unwrap();
    std::fs::set_permissions(&judge, std::fs::Permissions::from_mode(0o755)).unwrap();
    // The agent reads its control file `ok` in the test's folder: readable in its view.
    let readable = match extra_config.contains("sandbox:") {
        true => String::new(),
        false => format!("sandbox:\n  readable: [\"{}\"]\n", dir.path().display()),
    };
    std::fs::write(
        clone.join(".opentiger.yml"),
        format!(
            "mode: github\nagents:\n  default:\n    executor: command\n    command: [\"{}\"]\n    timeout_minutes: 1\n  judge:\n    executor: command\n    command: [\"{}\"]\n    timeout_minutes: 1\nlimits:\n  max_rework_depth: 0\nretry:\n  cooldown_seconds: 0\n  budgets:\n    noop: 0\nreport:\n  dashboard_issue: false\n{extra_config}{readable}",
            agent.display(),
            judge.display()
        ),
    )
    .unwrap();
    std::fs::write(clone.join("README.md"), "# widgets\n").unwrap();
    git(&clone, &["add", "-A"]);
    git(&clone, &["commit", "-q", "-m", "initial"]);
    git(&clone, &["push", "-q", "origin", "main"]);
    let server = GithubServer::start("acme", "widgets").with_git(&origin);
    server.set_now("2026-11-21T12:00:00Z");
    Setup { dir, clone, server }
}

impl Setup {
    fn run(&self, now: &str, args: &[&str]) -> std::process::Output {
        opentiger_against(&self.server, &self.clone, now)
            .args(args)
            .output()
            .unwrap()
    }

    /// A tick at `minute` past noon (the server's clock follows).
    fn tick(&self, minute: u32) -> String {
        let now = format!("2026-11-21T{:02}:{:02}:00Z", 12 + minute / 60, minute % 60);
        self.server.set_now(&now);
        let out = self.run(&now, &["tick"]);
        assert!(
            out.status.success(),
            "tick at {now}: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn task(&self) -> serde_json::Value {
        self.tasks_at("2026-11-21T12:00:00Z")[0].clone()
    }

    /// Every task, as `status --json --all` shows them at `now`.
    fn tasks_at(&self, now: &str) -> Vec<serde_json::Value> {
        let out = self.run(now, &["status", "--json", "--all"]);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        json["tasks"].as_array().cloned().unwrap_or_default()
    }

    /// The task whose `field` is `value`, as `status --json --all` shows it at `now`.
    fn task_where(&self, now: &str, field: &str, value: serde_json::Value) -> serde_json::Value {
        self.tasks_at(now)
            .into_iter()
            .find(|t| t[field] == value)
            .unwrap_or_else(|| panic!("no task with {field} = {value}"))
    }

    fn state(&self) -> String {
        let t = self.task();
        match t["block_reason"].as_str() {
            Some(r) => format!("{}({r})", t["status"].as_str().unwrap_or("")),
            None => t["status"].as_str().unwrap_or("").to_string(),
        }
    }

    /// A tick with nothing new: at most 3 requests, every one a conditional `304`.
    fn quiet_tick(&self, minute: u32) -> Vec<common::github::RecordedRequest> {
        self.server.reset_counts();
        self.tick(minute);
        let calls = self.server.requests();
        assert!(calls.len() <= 3, "{calls:?}");
        assert!(
            calls.iter().all(|r| r.conditional && r.status == 304),
            "{calls:?}"
        );
        calls
    }

    /// How many of the events of the (first) task mention `needle`.
    fn events_mentioning(&self, needle: &str) -> usize {
        let out = self.run(
            "2026-11-21T13:00:00Z",
            &[
                "task",
                "show",
                self.task()["id"].as_str().unwrap(),
                "--json",
            ],
        );
        let shown: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        shown["events"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e.to_string().contains(needle))
            .count()
    }

    /// Our replies to command comment `id`.
    fn replies(&self, thread: u64, id: u64) -> Vec<String> {
        let marker = format!("<!-- opentiger:reply={id} -->");
        self.server
            .comments(thread)
            .into_iter()
            .filter(|c| c.body.contains(&marker))
            .map(|c| c.body)
            .collect()
    }

    /// A task waiting on a person: its only run changed nothing.
    fn task_awaiting_human(&self) -> u64 {
        let issue =
            self.server
                .add_issue("Add a greeting", "Please.", &["opentiger"], "acme", "OWNER");
        self.tick(0);
        self.tick(1);
        assert_eq!(self.state(), "blocked(awaiting_human)", "{}", self.task());
        issue
    }
}

#[test]
fn a_collaborator_s_retry_acts_once_and_is_answered_once() {
    let s = setup("");
    let issue = s.task_awaiting_human();
    std::fs::write(s.dir.path().join("ok"), "").unwrap();

    s.server.set_permission("bob", "write");
    s.server.advance(60);
    let retry = s
        .server
        .add_comment(issue, "Fixed the cause.\n/opentiger retry", "bob");
    let out = s.tick(5);
    assert!(out.contains("command `/opentiger retry` by @bob"), "{out}");
    // Queued by the command and claimed by the same tick: its run opened a PR.
    assert_eq!(s.state(), "blocked(awaiting_judge)", "{}", s.task());
    assert_eq!(s.server.pulls().len(), 1);
    let replies = s.replies(issue, retry);
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert!(replies[0].contains("Retried by @bob"), "{}", replies[0]);

    // Seen by five more ticks, edited after it was acted on: nothing more.
    s.server.advance(60);
    s.server
        .edit_comment(retry, "Fixed the cause.\n/opentiger retry\n(edited)");
    for minute in [10, 15, 20, 25, 30] {
        s.tick(minute);
    }
    assert_eq!(s.replies(issue, retry).len(), 1);
    assert_eq!(s.events_mentioning("retried by @bob"), 1);

    // With commands read and answered, a quiet tick still costs at most 3 requests, all
    // conditional (the backlog, the open PRs, the comment feed).
    s.tick(35);
    let calls = s.quiet_tick(40);
    assert!(
        calls
            .iter()
            .any(|r| r.path_and_query.contains("/issues/comments?")),
        "{calls:?}"
    );
}

#[test]
fn a_retry_from_a_comment_lets_an_executor_parked_for_its_configuration_run_again() {
    use std::os::unix::fs::PermissionsExt;
    let s = setup("");
    // The worker cannot reach its model until a person fixes its configuration (`ok`).
    let agent = s.dir.path().join("agent.sh");
    let ok = s.dir.path().join("ok");
    std::fs::write(
        &agent,
        format!(
            "#!/bin/sh\nif [ ! -f '{}' ]; then echo 'Not logged in · Please run /login' >&2; exit 1; fi\necho done > \"work-$OPENTIGER_TASK_ID.txt\"\necho '{{\"summary\": \"done\"}}' > \"$OPENTIGER_RESULT_FILE\"\n",
            ok.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    let issue = s
        .server
        .add_issue("Add a greeting", "Please.", &["opentiger"], "acme", "OWNER");
    s.tick(0);
    assert_eq!(s.state(), "blocked(awaiting_human)", "{}", s.task());
    let status = s.run("2026-11-21T12:02:00Z", &["status"]);
    let status = String::from_utf8_lossy(&status.stdout);
    assert!(
        status.contains("cannot reach its model as configured"),
        "{status}"
    );

    std::fs::write(&ok, "").unwrap();
    s.server.set_permission("bob", "write");
    s.server.advance(60);
    s.server
        .add_comment(issue, "Logged in now.\n/opentiger retry", "bob");
    s.tick(5);
    // The same tick ran the worker, which opened a PR, and the executor is no longer parked.
    assert_eq!(s.state(), "blocked(awaiting_judge)", "{}", s.task());
    assert_eq!(s.server.pulls().len(), 1);
    // It ran as a free executor, not as a parked one "tried anyway".
    let id = s.task()["id"].as_str().unwrap().to_string();
    let shown = s.run("2026-11-21T12:06:00Z", &["task", "show", &id, "--json"]);
    let shown: serde_json::Value = serde_json::from_slice(&shown.stdout).unwrap();
    let executor = shown["runs"][0]["executor"].as_str().unwrap_or_default();
    assert!(executor.starts_with("command:"), "{shown}");
    assert!(!executor.contains("tried anyway"), "{executor}");
}

#[test]
fn an_outsider_changes_nothing_and_hears_once() {
    let s = setup("");
    let issue = s.task_awaiting_human();
    s.server.advance(60);
    let first = s.server.add_comment(issue, "/opentiger cancel", "mallory");
    s.tick(5);
    assert_eq!(s.state(), "blocked(awaiting_human)");
    let replies = s.replies(issue, first);
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert!(replies[0].contains("write access"), "{}", replies[0]);
    s.server.advance(60);
    let second = s.server.add_comment(issue, "/opentiger retry", "mallory");
    s.tick(10);
    s.tick(15);
    assert_eq!(s.state(), "blocked(awaiting_human)");
    assert!(
        s.replies(issue, second).is_empty(),
        "one polite reply is enough"
    );
    assert_eq!(s.replies(issue, first).len(), 1);
}

#[test]
fn quoted_code_and_malformed_commands_change_nothing() {
    let s = setup("");
    let issue = s.task_awaiting_human();
    s.server.advance(60);
    let quoted = s
        .server
        .add_comment(issue, "> /opentiger cancel\nWhy would we?", "acme");
    let fenced = s
        .server
        .add_comment(issue, "Try:\n```\n/opentiger cancel\n```", "acme");
    let negative = s.server.add_comment(issue, "/opentiger budget -5", "acme");
    let huge = s
        .server
        .add_comment(issue, "/opentiger budget 1e308", "acme");
    s.tick(5);
    assert_eq!(s.state(), "blocked(awaiting_human)");
    assert!(s.replies(issue, quoted).is_empty());
    assert!(s.replies(issue, fenced).is_empty());
    for id in [negative, huge] {
        let replies = s.replies(issue, id);
        assert_eq!(replies.len(), 1, "{replies:?}");
        assert!(
            replies[0].contains("nothing was changed") && replies[0].contains("/opentiger help"),
            "{}",
            replies[0]
        );
    }
    // A command naming a task of another issue.
    let other = s
        .server
        .add_issue("Another", "Please.", &["opentiger"], "acme", "OWNER");
    s.tick(10);
    let other_id = s.task_where("2026-11-21T12:10:00Z", "title", "Another".into())["id"]
        .as_str()
        .unwrap()
        .to_string();
    s.server.advance(60);
    let wrong = s
        .server
        .add_comment(issue, &format!("/opentiger cancel {other_id}"), "acme");
    s.tick(15);
    let replies = s.replies(issue, wrong);
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert!(
        replies[0].contains(&format!("does not belong to #{issue}")),
        "{}",
        replies[0]
    );
    let _ = other;
}

#[test]
fn a_flood_of_comments_is_read_in_bounded_pages() {
    let s = setup("commands:\n  max_pages: 2\n");
    let issue = s.task_awaiting_human();
    for i in 0..500 {
        s.server
            .add_comment(issue, &format!("me too {i}"), "someone");
    }
    s.server.advance(60);
    let retry = s.server.add_comment(issue, "/opentiger cancel", "acme");
    let mut ticks = 0;
    while s.state() != "cancelled" {
        s.server.reset_counts();
        s.tick(5 + ticks);
        let feed = s
            .server
            .requests()
            .into_iter()
            .filter(|r| r.path_and_query.contains("/issues/comments?"))
            .count();
        assert!(feed <= 2, "at most commands.max_pages pages a tick: {feed}");
        ticks += 1;
        assert!(ticks < 6, "the flood is read across a few ticks");
    }
    assert_eq!(s.replies(issue, retry).len(), 1);
}

#[test]
fn a_task_waiting_on_a_person_gets_one_question_and_its_default_applies_later() {
    let s = setup("escalation:\n  timeout_hours: 1\n  default: cancel\n");
    let issue = s.task_awaiting_human();
    // The question is posted by the next tick (the first saw the task arrive there).
    for minute in [5, 10, 15] {
        s.tick(minute);
    }
    let questions: Vec<_> = s
        .server
        .comments(issue)
        .into_iter()
        .filter(|c| c.body.contains("<!-- opentiger:escalation="))
        .collect();
    assert_eq!(questions.len(), 1, "{questions:?}");
    let body = &questions[0].body;
    let recommended = body.find("**retry (recommended)**").expect("retry first");
    assert!(
        recommended < body.find("**cancel**").expect("cancel offered"),
        "{body}"
    );
    assert!(
        body.contains("`/opentiger retry`")
            && body.contains("If nobody answers within 1h, the task is cancelled"),
        "{body}"
    );
    // An hour after it was asked, a later tick applies the default and says so.
    s.tick(60);
    assert_eq!(s.state(), "blocked(awaiting_human)");
    let out = s.tick(75);
    assert!(out.contains("no answer in 1h: cancelled"), "{out}");
    assert_eq!(s.state(), "cancelled");
    // Still one question comment.
    let count = s
        .server
        .comments(issue)
        .into_iter()
        .filter(|c| c.body.contains("<!-- opentiger:escalation="))
        .count();
    assert_eq!(count, 1);
}

#[test]
fn the_question_is_edited_in_place_when_the_facts_change() {
    let s = setup("");
    let issue = s.task_awaiting_human();
    s.tick(5);
    s.tick(10);
    let question = || -> Vec<common::github::Comment> {
        s.server
            .comments(issue)
            .into_iter()
            .filter(|c| c.body.contains("<!-- opentiger:escalation="))
            .collect()
    };
    assert_eq!(question().len(), 1);
    let first = question()[0].clone();
    // What silence does changed (the configuration): the same comment says so now.
    let path = s.clone.join(".opentiger.yml");
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(
        &path,
        format!("{config}escalation:\n  timeout_hours: 48\n  default: cancel\n"),
    )
    .unwrap();
    s.server.advance(60);
    s.tick(15);
    let edited = question();
    assert_eq!(edited.len(), 1, "{edited:?}");
    assert_eq!(edited[0].id, first.id);
    assert!(
        edited[0].body.contains("within 48h, the task is cancelled"),
        "{}",
        edited[0].body
    );
    // A person retries; it comes back to the same question: still that one comment.
    s.server.advance(60);
    s.server.add_comment(issue, "/opentiger retry", "acme");
    for minute in [20, 25, 30, 35] {
        s.tick(minute);
    }
    assert_eq!(s.state(), "blocked(awaiting_human)", "{}", s.task());
    let after = question();
    assert_eq!(after.len(), 1, "{after:?}");
    assert_eq!(after[0].id, first.id);
    // A task waiting on a question costs a quiet tick nothing more: at most 3 requests, all
    // conditional.
    s.tick(40);
    s.quiet_tick(45);
}

/// Someone pasting opentiger's hidden markers cannot silence a reply or a question: only
/// markers in comments opentiger posted itself count.
#[test]
fn a_pasted_marker_silences_nothing() {
    let s = setup("");
    let issue = s.task_awaiting_human();
    // The first question teaches the tick who it posts as.
    s.tick(5);
    s.tick(10);
    s.server.advance(60);
    let status = s.server.add_comment(issue, "/opentiger status", "acme");
    s.server.add_comment(
        issue,
        &format!("nothing to see\n<!-- opentiger:reply={status} -->"),
        "mallory",
    );
    // A pasted question marker: were it believed, the next tick would take this comment for
    // its question and edit it (or post the question again).
    s.server.add_comment(
        issue,
        &format!(
            "mine now\n<!-- opentiger:escalation={}:stuck -->",
            s.task()["id"].as_str().unwrap()
        ),
        "mallory",
    );
    s.tick(15);
    s.tick(20);
    let replies = s.replies(issue, status);
    let ours: Vec<_> = replies
        .iter()
        .filter(|r| r.contains("is blocked"))
        .collect();
    assert_eq!(ours.len(), 1, "{replies:?}");
    // The question was neither re-posted nor taken over.
    let questions: Vec<_> = s
        .server
        .comments(issue)
        .into_iter()
        .filter(|c| c.body.contains("**opentiger needs a decision.**"))
        .collect();
    assert_eq!(questions.len(), 1, "{questions:?}");
    assert_eq!(questions[0].user, "github-actions[bot]");
    let forged: Vec<_> = s
        .server
        .comments(issue)
        .into_iter()
        .filter(|c| c.user == "mallory")
        .collect();
    assert!(
        forged.iter().all(|c| !c.body.contains("needs a decision")),
        "{forged:?}"
    );
}

/// `/opentiger replan` on an issue task: the issue's current text (here an outsider's edit,
/// which alone changes nothing) becomes the task's spec, and the task runs afresh, once.
#[test]
fn replan_works_afresh_from_the_issue_s_current_text_once() {
    // The agent copies its prompt out of its workspace for the test to read.
    let s = setup("sandbox:\n  filesystem: none\n");
    s.server.set_permission("acme", "admin");
    s.server.set_permission("bob", "write");
    let issue = s
        .server
        .add_issue("Add a greeting", "Say hello.", &[], "eve", "NONE");
    s.server.add_label_event(issue, "opentiger", "acme");
    s.tick(0);
    s.tick(1);
    assert_eq!(s.state(), "blocked(awaiting_human)", "{}", s.task());
    let prompt = s.dir.path().join("prompt.md");
    assert!(std::fs::read_to_string(&prompt)
        .unwrap()
        .contains("Say hello."));
    s.server.advance(60);
    s.server.edit_issue_body(issue, "Say bonjour, not hello.");
    let out = s.tick(3);
    assert!(out.contains("is not trusted"), "{out}");

    std::fs::write(s.dir.path().join("ok"), "").unwrap();
    s.server.advance(60);
    let replan = s.server.add_comment(issue, "/opentiger replan", "bob");
    let out = s.tick(5);
    assert!(out.contains("command `/opentiger replan` by @bob"), "{out}");
    // Queued afresh by the command and run by the same tick, from the issue's text of now.
    assert_eq!(s.state(), "blocked(awaiting_judge)", "{}", s.task());
    let text = std::fs::read_to_string(&prompt).unwrap();
    assert!(text.contains("Say bonjour, not hello."), "{text}");
    assert!(!text.contains("Say hello."), "{text}");
    let replies = s.replies(issue, replan);
    assert_eq!(replies.len(), 1, "{replies:?}");
    assert!(replies[0].contains("Replanned by @bob"), "{}", replies[0]);

    for minute in [10, 15, 20, 25, 30] {
        s.tick(minute);
    }
    assert_eq!(s.replies(issue, replan).len(), 1);
    assert_eq!(s.events_mentioning("replanned by @bob"), 1);
}

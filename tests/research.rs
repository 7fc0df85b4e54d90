//! Research tasks (issue 28) end to end, against the local GitHub stand-in: an issue labelled
//! `opentiger:research` (riding on the backlog label) gets one report comment with its
//! evidence linked at the base commit, no branch and no PR; an unchanged report costs no
//! request, a rerun edits the same comment; `/opentiger approve <n>` by a trusted person and a
//! ticked box of the report each open exactly one issue; an outsider's approve is refused; a
//! report leaving a criterion unanswered fails its run, naming the criterion.

use crate::common;

use common::scripted::{self, prompts, tasks, tick, Setup};

const QUESTION: &str = "Where is the project named? CITE README.md:1 and CITE src/gone.rs:3.\n\
PROPOSE greeting\nPROPOSE farewell\n\n## Acceptance criteria\n\n- Name the file\n- Say the line\n";

fn research_issue(s: &Setup, body: &str) -> u64 {
    s.server.add_issue(
        "Where is the name?",
        body,
        &["opentiger", "opentiger:research"],
        "alice",
        "OWNER",
    )
}

fn research_task(s: &Setup) -> serde_json::Value {
    tasks(s)
        .into_iter()
        .find(|t| t["role"] == "research")
        .expect("a research task")
}

/// Our report comments on `issue`.
fn reports(s: &Setup, issue: u64) -> Vec<common::github::Comment> {
    s.server
        .comments(issue)
        .into_iter()
        .filter(|c| c.body.contains("<!-- opentiger:research issue="))
        .collect()
}

fn origin_branches(s: &Setup) -> String {
    common::git(
        &s.origin,
        &["branch", "--list", "--format=%(refname:short)"],
    )
}

/// The issues opentiger opened (a proposal's each).
fn opened_issues(s: &Setup) -> Vec<String> {
    s.server
        .issues()
        .into_iter()
        .filter(|i| i.user != "alice")
        .map(|i| i.title)
        .collect()
}

#[test]
fn a_research_issue_gets_one_report_and_approved_proposals_open_one_issue_each() {
    let s = scripted::setup();
    let issue = research_issue(&s, QUESTION);
    let out = tick(&s, "2026-11-21T12:00:00Z");
    let task = research_task(&s);
    assert_eq!(task["status"], "done", "{out}\n{task}");
    assert_eq!(task["kind"], "research", "{task}");
    // The question reached the prompt (inside the issue's fence), with the base commit.
    let prompt = prompts(&s, "research").pop().expect("a research prompt");
    let base = common::git(&s.origin, &["rev-parse", "main"]);
    assert!(scripted::fenced(&prompt, "the issue").contains("CITE README.md:1"));
    assert!(
        prompt.contains(&format!("The workspace holds commit `{base}`")),
        "{prompt}"
    );
    // One comment: the evidence linked at the base commit, the missing file not; criteria
    // answered; proposals as boxes.
    let comments = reports(&s, issue);
    assert_eq!(comments.len(), 1, "{comments:?}");
    let body = &comments[0].body;
    let link = format!("[README.md:1](https://github.com/acme/widgets/blob/{base}/README.md#L1)");
    assert!(body.contains(&link), "{body}");
    assert!(body.contains("the answer is at src/gone.rs:3"), "{body}");
    assert!(body.contains("1. **Name the file** (met): see"), "{body}");
    assert!(
        body.contains("- [ ] 1. Do greeting — Make greeting happen"),
        "{body}"
    );
    assert!(body.contains("- [ ] 2. Do farewell"), "{body}");
    // `task show` says what the report holds and where it is.
    let id = task["id"].as_str().unwrap().to_string();
    let shown = scripted::opentiger(&s, "2026-11-21T12:01:00Z", &["task", "show", &id]);
    let shown = String::from_utf8_lossy(&shown.stdout);
    assert!(shown.contains("phase:    completed"), "{shown}");
    assert!(shown.contains("Report:\n## Findings\n"), "{shown}");
    assert!(
        shown.contains("2 criteria (2 met or not), 2 proposal(s), 0 approved (its comment on #1)"),
        "{shown}"
    );
    // Nothing pushed, no PR.
    assert!(
        !origin_branches(&s).contains("opentiger/task-"),
        "{}",
        origin_branches(&s)
    );
    assert!(s.server.pulls().is_empty());

    // A second tick posts nothing: the report is unchanged (a quiet tick's requests only).
    s.server.reset_counts();
    tick(&s, "2026-11-21T12:05:00Z");
    let calls = s.server.requests();
    assert!(calls.len() <= 3, "{calls:?}");
    assert!(calls.iter().all(|r| r.method == "GET"), "{calls:?}");

    // An outsider's approve is refused and opens nothing.
    s.server
        .add_comment(issue, "/opentiger approve 1", "mallory");
    tick(&s, "2026-11-21T12:10:00Z");
    assert!(opened_issues(&s).is_empty());
    // A trusted person approves proposal 1: one issue, the report shows it approved.
    s.server.set_permission("bob", "write");
    s.server.add_comment(issue, "/opentiger approve 1", "bob");
    tick(&s, "2026-11-21T12:15:00Z");
    tick(&s, "2026-11-21T12:20:00Z");
    tick(&s, "2026-11-21T12:25:00Z");
    assert_eq!(opened_issues(&s), ["Do greeting"]);
    let comments = reports(&s, issue);
    assert_eq!(comments.len(), 1);
    let opened = s
        .server
        .issues()
        .into_iter()
        .find(|i| i.title == "Do greeting")
        .unwrap();
    let approved = format!(
        "- [x] 1. Do greeting — Make greeting happen → #{}",
        opened.number
    );
    assert!(comments[0].body.contains(&approved), "{}", comments[0].body);
    // The same approval again: "already approved", nothing opened.
    s.server.add_comment(issue, "/opentiger approve 1", "bob");
    tick(&s, "2026-11-21T12:30:00Z");
    assert_eq!(opened_issues(&s), ["Do greeting"]);
    let replies: Vec<String> = s
        .server
        .comments(issue)
        .into_iter()
        .map(|c| c.body)
        .filter(|b| b.contains("already approved"))
        .collect();
    assert_eq!(replies.len(), 1, "{replies:?}");

    // A trusted person ticks box 2 of the report (only they can edit opentiger's comment).
    let ticked = comments[0]
        .body
        .replace("- [ ] 2. Do farewell", "- [x] 2. Do farewell");
    s.server.edit_comment(comments[0].id, &ticked);
    tick(&s, "2026-11-21T12:35:00Z");
    tick(&s, "2026-11-21T12:40:00Z");
    let mut titles = opened_issues(&s);
    titles.sort();
    assert_eq!(titles, ["Do farewell", "Do greeting"]);
    let comments = reports(&s, issue);
    assert_eq!(comments.len(), 1);
    assert!(
        comments[0].body.contains("- [x] 2. Do farewell"),
        "{}",
        comments[0].body
    );

    // A rerun: the author edits the question, a new research task answers it, and the same
    // comment is edited to show the new report.
    s.server.set_now("2026-11-21T12:45:00Z");
    s.server.edit_issue_body(
        issue,
        &QUESTION.replace("CITE README.md:1", "CITE README.md:1-2"),
    );
    let mut out = tick(&s, "2026-11-21T12:50:00Z");
    out.push_str(&tick(&s, "2026-11-21T12:55:00Z"));
    let after = reports(&s, issue);
    assert_eq!(after.len(), 1, "{out}\n{after:?}");
    assert_eq!(after[0].id, comments[0].id);
    assert!(
        after[0].body.contains("/README.md#L1-L2)"),
        "{out}\n{}",
        after[0].body
    );
    assert!(
        after[0].body.contains("- [ ] 1. Do greeting"),
        "{}",
        after[0].body
    );
    // The research task never had a branch (its proposals' tasks may have theirs).
    let short = &id[..8.min(id.len())];
    assert!(
        !origin_branches(&s).contains(short),
        "{}",
        origin_branches(&s)
    );
}

#[test]
fn a_report_leaving_a_criterion_unanswered_fails_its_run_naming_it() {
    let s = scripted::setup();
    let body = format!("{QUESTION}\nLEAVE 2\n");
    let issue = research_issue(&s, &body);
    let out = tick(&s, "2026-11-21T12:00:00Z");
    let task = research_task(&s);
    assert_ne!(task["status"], "done", "{out}");
    assert!(
        out.contains("leaves acceptance criterion 2 \"Say the line\" unanswered"),
        "{out}"
    );
    assert!(reports(&s, issue).is_empty());
    assert!(s.server.pulls().is_empty());
}

/// The attack (issue 16's way, as an unprivileged user when the tests run as root): a research
/// agent under Landlock tries to write a file into its workspace and, by their paths, into the
/// runner's repository — its work tree, a tracked file, its `.git` (a file, the config, a ref)
/// — and fails at each; its run still succeeds with a report, so nothing it tried got through
/// unseen, and nothing of the runner's repository changed.
#[test]
fn a_research_agent_cannot_write_its_workspace_or_git() {
    use common::unprivileged::Jail;
    if opentiger::sandbox::landlock::abi_version().is_none() {
        eprintln!("no Landlock on this kernel: nothing to check");
        return;
    }
    let jail = Jail::new(common::Setup {
        extra: "sandbox:\n  filesystem: landlock\n",
        ..common::Setup::default()
    });
    let runner = jail.g.path().to_path_buf();
    jail.g.agent(&format!(
        r###"#!/bin/sh
R='{runner}'
r="$OPENTIGER_REPORT_FILE"
echo "## Findings" > "$r"
(echo pwned > "$OPENTIGER_WORKSPACE/pwned.txt") 2>/dev/null && echo "WROTE-WORKSPACE" >> "$r"
(echo pwned > "$OPENTIGER_WORKSPACE/README.md") 2>/dev/null && echo "WROTE-README" >> "$r"
(echo pwned > "$R/pwned.txt") 2>/dev/null && echo "WROTE-RUNNER-TREE" >> "$r"
(echo pwned >> "$R/README.md") 2>/dev/null && echo "WROTE-RUNNER-README" >> "$r"
(echo pwned > "$R/.git/pwned-research") 2>/dev/null && echo "WROTE-GIT" >> "$r"
(printf '[core]\n\thooksPath = /tmp\n' >> "$R/.git/config") 2>/dev/null && echo "WROTE-GIT-CONFIG" >> "$r"
(git -C "$R" rev-parse HEAD > "$R/.git/refs/heads/pwned") 2>/dev/null && echo "WROTE-GIT-REF" >> "$r"
echo "tried every write" >> "$r"
summary=$(tr '\n' ' ' < "$r")
echo "{{\"summary\": \"$summary\"}}" > "$OPENTIGER_RESULT_FILE"
"###,
        runner = runner.display()
    ));
    let aimed = [
        "pwned.txt",
        "README.md",
        ".git/pwned-research",
        ".git/config",
        ".git/refs/heads/pwned",
    ];
    let read_all = || -> Vec<Option<String>> {
        aimed
            .iter()
            .map(|p| std::fs::read_to_string(runner.join(p)).ok())
            .collect()
    };
    let before = read_all();
    let id = jail.add_task(&[
        "--title",
        "Where is the name?",
        "--goal",
        "Say where the project is named",
        "--role",
        "research",
    ]);
    let out = jail.run(&common::minute(0), &["tick"], &[]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let runs = jail.runs(&id);
    let run = &runs[0];
    assert_eq!(run["status"], "success", "{run}\n{}", out.stdout);
    let summary = run["summary"].as_str().unwrap_or_default();
    assert!(summary.contains("tried every write"), "{summary}");
    assert!(!summary.contains("WROTE-"), "{summary}");
    assert_eq!(read_all(), before, "the runner's repository changed");
    // Nothing was committed or branched for it.
    let branches = common::git(jail.g.path(), &["branch", "--list", "opentiger/task-*"]);
    assert!(branches.trim().is_empty(), "{branches}");
}

/// The fan-out split (issue 28 item 7: as for workers): the work job runs the research without
/// a token and writes its result; `apply`, the job with the token, records it and posts the one
/// report comment. Nothing is pushed by either.
#[test]
fn a_research_run_worked_without_a_token_is_posted_by_apply() {
    let s = scripted::setup();
    let issue = research_issue(&s, QUESTION);
    let at = "2026-11-21T12:00:00Z";
    let job = |name: &str| {
        let path = s.dir.path().join(name);
        common::clone(&s.origin, &path);
        path
    };
    let run = |dir: &std::path::Path, token: bool, args: &[&str]| {
        let mut cmd = common::github::opentiger_against(&s.server, dir, at);
        cmd.env("PROMPTS", s.dir.path().join("prompts")).args(args);
        if !token {
            cmd.env_remove("GITHUB_TOKEN");
        }
        common::github::tick_output(cmd.output().unwrap(), at)
    };
    let claimed: serde_json::Value =
        serde_json::from_str(&run(&s.clone, true, &["tick", "--fan-out", "1", "--json"])).unwrap();
    let run_id = claimed["matrix"]["include"][0]["run"]
        .as_str()
        .unwrap_or_else(|| panic!("no run claimed: {claimed}"))
        .to_string();
    let out_dir = s.dir.path().join("out");
    let work = job("work-job");
    let requests = s.server.request_count();
    let out_arg = out_dir.display().to_string();
    let said = run(
        &work,
        false,
        &["work", "--run", &run_id, "--output", &out_arg],
    );
    assert!(said.contains("result written to"), "{said}");
    assert_eq!(
        s.server.request_count(),
        requests,
        "the work job asks GitHub nothing"
    );
    assert!(reports(&s, issue).is_empty());

    let applied = run(&job("apply-job"), true, &["apply", &out_arg]);
    let comments = reports(&s, issue);
    assert_eq!(comments.len(), 1, "{applied}");
    let base = common::git(&s.origin, &["rev-parse", "main"]);
    assert!(
        comments[0]
            .body
            .contains(&format!("/blob/{base}/README.md#L1)")),
        "{}",
        comments[0].body
    );
    assert!(comments[0].body.contains("- [ ] 1. Do greeting"));
    assert_eq!(research_task(&s)["status"], "done");
    assert!(s.server.pulls().is_empty());
    assert!(!origin_branches(&s).contains("opentiger/task-"));
}

/// aider only edits the repository's files and answers: it cannot write a research report.
/// A research task given aider waits for a person with the fix before any agent starts (no
/// run paid for, no retry); the twin: the same task with the command agent reports (above).
#[test]
fn research_on_aider_waits_for_a_person_with_the_fix_before_any_agent_starts() {
    let s = scripted::setup();
    let started = s.dir.path().join("aider-started");
    let aider = s.dir.path().join("aider.sh");
    std::fs::write(
        &aider,
        format!("#!/bin/sh\ntouch '{}'\n", started.display()),
    )
    .unwrap();
    std::fs::set_permissions(&aider, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let path = s.clone.join(".opentiger.yml");
    let config = std::fs::read_to_string(&path).unwrap();
    let at = config.find("  research:\n").expect("a research entry");
    let end = config[at..].find("\nreport:").unwrap() + at;
    let config = format!(
        "{}  research:\n    executor: aider\n    command: [\"{}\"]\n    env_passthrough: [ANTHROPIC_API_KEY]{}",
        &config[..at],
        aider.display(),
        &config[end..]
    );
    std::fs::write(&path, config).unwrap();
    research_issue(&s, QUESTION);
    let out = common::github::opentiger_against(&s.server, &s.clone, "2026-11-21T12:00:00Z")
        .env("ANTHROPIC_API_KEY", "sk-ant-test-key")
        .arg("tick")
        .output()
        .unwrap();
    let out = common::github::tick_output(out, "2026-11-21T12:00:00Z");
    let task = research_task(&s);
    assert_eq!(task["status"], "blocked", "{out}");
    assert_eq!(task["block_reason"], "awaiting_human", "{task}");
    assert!(
        task["reason"]
            .as_str()
            .unwrap()
            .contains("fix: set `agents.research.executor` to claude-code, codex or opencode"),
        "{task}"
    );
    assert!(!started.exists(), "aider was started: {out}");
}

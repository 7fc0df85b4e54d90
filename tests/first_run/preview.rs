//! The first-run preview (issue 51): `opentiger init --preview` says what opentiger would do —
//! which issues it takes, which agents, the budget, the paths — and writes nothing; the first
//! tick on a repository in github mode says it too (output, log, job summary), the next does not.

use crate::common::github::opentiger_against;
use crate::common::scripted;

#[test]
fn the_first_tick_in_github_mode_says_what_it_will_do_and_the_next_does_not() {
    let s = scripted::setup();
    let issue = scripted::owners_issue(&s, "Greeting", "CREATE hello.txt");
    let summary = s.dir.path().join("summary.md");
    let now = "2026-11-21T12:00:00Z";
    let out = opentiger_against(&s.server, &s.clone, now)
        .arg("tick")
        .env("PROMPTS", s.dir.path().join("prompts"))
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    let text = crate::common::github::tick_output(out, now);
    for needle in [
        "First tick on this repository. What opentiger will do here (before any agent runs):",
        &format!("(issue #{issue})"),
        "\"Greeting\"",
        "- Runs:",
        "- Spends at most: $5.00 a task",
        "- May change: `**` — never `.github/workflows/**`",
    ] {
        assert!(text.contains(needle), "{needle} not in:\n{text}");
    }
    let job = std::fs::read_to_string(&summary).unwrap();
    assert!(job.contains("### First tick on this repository"), "{job}");
    let next = scripted::tick(&s, "2026-11-21T12:05:00Z");
    assert!(!next.contains("First tick on this repository"), "{next}");
}

#[test]
fn init_preview_lists_the_issues_it_would_take_and_writes_nothing() {
    let s = scripted::setup();
    scripted::owners_issue(&s, "Greeting", "CREATE hello.txt");
    let config = std::fs::read_to_string(s.clone.join(".opentiger.yml")).unwrap();
    let out = opentiger_against(&s.server, &s.clone, "2026-11-21T12:00:00Z")
        .args(["init", "--preview"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("  - #1 \"Greeting\" by @alice (OWNER): taken\n"),
        "{text}"
    );
    assert!(
        text.contains(".opentiger.yml as it is; nothing was written)"),
        "{text}"
    );
    assert_eq!(
        std::fs::read_to_string(s.clone.join(".opentiger.yml")).unwrap(),
        config
    );
    assert!(!s.clone.join(".github/workflows/opentiger.yml").exists());

    // Without a token, and without a configuration: the one init would write, and how to list.
    let empty = tempfile::tempdir().unwrap();
    crate::common::git(empty.path(), &["init", "-q", "-b", "main"]);
    let bare = std::process::Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .current_dir(empty.path())
        .args(["init", "--preview"])
        .env_remove("GITHUB_TOKEN")
        .env_remove("OPENTIGER_GITHUB_TOKEN")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&bare.stdout);
    assert!(bare.status.success(), "{text}");
    assert!(
        text.contains("`export GITHUB_TOKEN=$(gh auth token)`"),
        "{text}"
    );
    assert!(
        text.contains(
            "(from the .opentiger.yml `opentiger init` would write; nothing was written)"
        ),
        "{text}"
    );
    assert!(!empty.path().join(".opentiger.yml").exists());
}

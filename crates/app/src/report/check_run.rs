//! The text of opentiger's check runs (issue 28): `opentiger / verify` lists each verification
//! command with its exit, duration and output tail; `opentiger / judge` gives the verdict, the
//! acceptance checklist and the findings. A `file:line` in a failing command's output or in a
//! finding becomes an annotation; summary and text keep within GitHub's 65,535 characters each.
//! Rendering only. Not for: when a check is created or updated (`engine::checks`), or writing it
//! to GitHub (`tick::checks`, `forge::checks`).

use std::fmt::Write as _;

use crate::model::checks::{
    Annotation, CheckConclusion, CheckReport, CheckStatus, CommandReport, JUDGE_CHECK, VERIFY_CHECK,
};
use crate::model::CriterionCheck;

/// GitHub's limit on a check run's `output.summary` and `output.text`, in characters.
pub const OUTPUT_LIMIT: usize = 65_535;
/// Annotations opentiger publishes on one check run at most (GitHub takes 50 per request).
pub const ANNOTATIONS_MAX: usize = 100;

/// `task=<id> run=<id>`: which run a check run reports.
pub fn external_id(task: &str, run: &str) -> String {
    format!("task={task} run={run}")
}

/// The verification check run of `head`. `merged_with`: the base, when the commands ran on the
/// head merged with it (the judge's run) rather than on the head alone (the worker's).
/// `known`: whether a path is a file of the repository (an annotation must point at one).
pub fn verify_report(
    head: &str,
    external_id: String,
    commands: &[CommandReport],
    merged_with: Option<&str>,
    known: &dyn Fn(&str) -> bool,
) -> CheckReport {
    let on = match merged_with {
        Some(base) => format!("this head merged with `{base}`"),
        None => "this head".to_string(),
    };
    let failed = commands.iter().find(|c| !c.passed());
    let (conclusion, title) = match failed {
        _ if commands.is_empty() => (
            CheckConclusion::Neutral,
            "no verification command to run".to_string(),
        ),
        Some(c) => (
            CheckConclusion::Failure,
            format!("`{}` failed ({})", cut(&c.command, 80), ending(c)),
        ),
        None => (
            CheckConclusion::Success,
            format!("{} verification command(s) passed", commands.len()),
        ),
    };
    let mut summary = format!("opentiger ran its verification commands on {on}.\n\n");
    if commands.is_empty() {
        summary.push_str("The task and the configuration name no command for this change.\n");
    } else {
        summary.push_str("| # | command | exit | duration |\n|---|---|---|---|\n");
        for (i, c) in commands.iter().enumerate() {
            let _ = writeln!(
                summary,
                "| {} | {} | {} | {} |",
                i + 1,
                code_span(&cut(&c.command, 200)),
                ending(c),
                duration(c.duration_ms)
            );
        }
    }
    let mut text = String::new();
    for (i, c) in commands.iter().enumerate() {
        let _ = writeln!(
            text,
            "### {}. {} [{}]\n",
            i + 1,
            code_span(&cut(&c.command, 200)),
            c.source
        );
        if c.tail.trim().is_empty() {
            text.push_str("(no output)\n\n");
        } else {
            let _ = writeln!(text, "{}\n", fenced(c.tail.trim()));
        }
    }
    let annotations = failed
        .map(|c| {
            locations(&c.tail, known)
                .into_iter()
                .map(|(path, line, said)| Annotation {
                    path,
                    line,
                    title: format!("`{}` failed", cut(&c.command, 80)),
                    message: said,
                })
                .take(ANNOTATIONS_MAX)
                .collect()
        })
        .unwrap_or_default();
    CheckReport {
        name: VERIFY_CHECK,
        head_sha: head.to_string(),
        external_id,
        status: CheckStatus::Completed(conclusion),
        title,
        summary: capped(&summary),
        text: (!text.is_empty()).then(|| capped(&text)),
        annotations,
    }
}

/// What a review said, for the judge's check run.
pub struct ReviewText<'a> {
    pub summary: &'a str,
    pub findings: &'a [String],
    pub criteria: &'a [CriterionCheck],
}

/// The judge's check run of `head` in `status`, titled `title`, with the review when there is
/// one.
pub fn judge_report(
    head: &str,
    external_id: String,
    (status, title): (CheckStatus, String),
    review: Option<&ReviewText<'_>>,
    known: &dyn Fn(&str) -> bool,
) -> CheckReport {
    let mut summary = match status {
        CheckStatus::Queued => {
            "The change waits for opentiger's judge: its checks again on the change merged with the base, then its review.\n".to_string()
        }
        CheckStatus::InProgress => "opentiger's judge is reviewing this head.\n".to_string(),
        CheckStatus::Completed(_) => String::new(),
    };
    let mut annotations = Vec::new();
    if let Some(review) = review {
        let _ = writeln!(summary, "**Verdict:** {}\n", review.summary.trim());
        if !review.criteria.is_empty() {
            summary.push_str("**Acceptance checklist**\n\n");
            summary.push_str(&super::progress::checklist(review.criteria));
            summary.push('\n');
        }
        if !review.findings.is_empty() {
            summary.push_str("**Findings**\n\n");
            for f in review.findings {
                let _ = writeln!(summary, "- {}", one_line(f));
                for (path, line, _) in locations(f, known) {
                    annotations.push(Annotation {
                        path,
                        line,
                        title: "opentiger judge".to_string(),
                        message: cut(f.trim(), 600),
                    });
                }
            }
        }
    }
    annotations.truncate(ANNOTATIONS_MAX);
    CheckReport {
        name: JUDGE_CHECK,
        head_sha: head.to_string(),
        external_id,
        status,
        title: cut(&title, 200),
        summary: capped(&summary),
        text: None,
        annotations,
    }
}

/// Each `path:line` (or `path:line:column`) in `text` whose path is a file of the repository
/// (`known`), once per place, with the line of text it was found on. Compiler-style arrows
/// (`--> src/lib.rs:3:5`) and quoted or bracketed paths count; absolute paths and `..` do not.
pub fn locations(text: &str, known: &dyn Fn(&str) -> bool) -> Vec<(String, u32, String)> {
    let mut found: Vec<(String, u32, String)> = Vec::new();
    for line in text.lines() {
        for word in line.split(|c: char| c.is_whitespace() || "()[]<>'\"`,;".contains(c)) {
            let word = word.trim_start_matches("./");
            let mut parts = word.split(':');
            let (Some(path), Some(number)) = (parts.next(), parts.next()) else {
                continue;
            };
            let Ok(number) = number.parse::<u32>() else {
                continue;
            };
            let relative = !path.is_empty()
                && !path.starts_with('/')
                && !path.split('/').any(|p| p == ".." || p.is_empty());
            if number == 0 || !relative || !known(path) {
                continue;
            }
            if !found.iter().any(|(p, n, _)| p == path && *n == number) {
                found.push((path.to_string(), number, cut(line.trim(), 600)));
            }
        }
    }
    found
}

fn ending(c: &CommandReport) -> String {
    match (c.timed_out, c.exit) {
        (true, _) => "timed out".to_string(),
        (false, Some(code)) => format!("exit {code}"),
        (false, None) => "killed or not started".to_string(),
    }
}

fn duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms} ms")
    } else {
        format!("{:.1} s", ms as f64 / 1000.0)
    }
}

fn one_line(text: &str) -> String {
    cut(&text.split_whitespace().collect::<Vec<_>>().join(" "), 300)
}

/// `text` in a fence longer than any run of backticks inside it: output cannot close it.
fn fenced(text: &str) -> String {
    let longest = text.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest.max(2) + 1);
    format!("{fence}text\n{text}\n{fence}")
}

/// A command as inline code, whatever backticks it holds.
fn code_span(text: &str) -> String {
    let text = text.replace('|', "\\|");
    if text.contains('`') {
        format!("`` {text} ``")
    } else {
        format!("`{text}`")
    }
}

fn cut(text: &str, chars: usize) -> String {
    match text.char_indices().nth(chars) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_string(),
    }
}

/// Within GitHub's limit, cut at a line with a note saying so.
fn capped(text: &str) -> String {
    const NOTE: &str = "\n… (cut to GitHub's limit; the whole output is in the task's runs: `opentiger task show`)\n";
    if text.chars().count() <= OUTPUT_LIMIT {
        return text.to_string();
    }
    let room = OUTPUT_LIMIT - NOTE.chars().count();
    let kept: String = text.chars().take(room).collect();
    let kept = match kept.rfind('\n') {
        Some(at) if at > room / 2 => kept[..at].to_string(),
        _ => kept,
    };
    format!("{kept}{NOTE}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn command(text: &str, exit: Option<i32>, tail: &str) -> CommandReport {
        CommandReport {
            command: text.to_string(),
            source: "task".to_string(),
            exit,
            timed_out: false,
            duration_ms: 1500,
            tail: tail.to_string(),
            unstarted: None,
        }
    }

    fn repo_files(path: &str) -> bool {
        ["src/lib.rs", "tests/it.rs", "README.md"].contains(&path)
    }

    #[test]
    fn file_and_line_references_of_repository_files_are_found() {
        #[rustfmt::skip]
        let cases: &[(&str, &[(&str, u32)])] = &[
            ("error[E0308]: mismatched types\n  --> src/lib.rs:12:5", &[("src/lib.rs", 12)]),
            ("tests/it.rs:3: assertion failed", &[("tests/it.rs", 3)]),
            ("at ./src/lib.rs:7 and (README.md:2)", &[("src/lib.rs", 7), ("README.md", 2)]),
            ("src/lib.rs:12:5 again src/lib.rs:12", &[("src/lib.rs", 12)]),
            // Not the repository's: absolute, outside, unknown, no line, line 0, a URL.
            ("/usr/lib/x.rs:3 ../src/lib.rs:4 src/other.rs:5 src/lib.rs: src/lib.rs:0", &[]),
            ("see https://example.com:443/src/lib.rs:9", &[]),
        ];
        for (text, expected) in cases {
            let got: Vec<(String, u32)> = locations(text, &repo_files)
                .into_iter()
                .map(|(p, n, _)| (p, n))
                .collect();
            let expected: Vec<(String, u32)> =
                expected.iter().map(|(p, n)| (p.to_string(), *n)).collect();
            assert_eq!(got, expected, "{text}");
        }
    }

    #[test]
    fn the_verify_check_lists_each_command_and_annotates_the_failing_one() {
        let commands = [
            command("cargo build", Some(0), "Finished"),
            command(
                "cargo test",
                Some(101),
                "thread 'it' panicked at tests/it.rs:9:5:\nassertion failed",
            ),
        ];
        let report = verify_report("abc", external_id("t", "r"), &commands, None, &repo_files);
        assert_eq!(
            report.status,
            CheckStatus::Completed(CheckConclusion::Failure)
        );
        assert_eq!(report.title, "`cargo test` failed (exit 101)");
        assert!(report
            .summary
            .contains("| 1 | `cargo build` | exit 0 | 1.5 s |"));
        assert!(report
            .summary
            .contains("| 2 | `cargo test` | exit 101 | 1.5 s |"));
        let text = report.text.expect("the tails");
        assert!(text.contains("assertion failed"), "{text}");
        assert_eq!(report.annotations.len(), 1);
        assert_eq!(report.annotations[0].path, "tests/it.rs");
        assert_eq!(report.annotations[0].line, 9);

        let passed = verify_report(
            "abc",
            external_id("t", "r"),
            &commands[..1],
            Some("main"),
            &repo_files,
        );
        assert_eq!(
            passed.status,
            CheckStatus::Completed(CheckConclusion::Success)
        );
        assert!(passed.summary.contains("merged with `main`"));
        assert!(passed.annotations.is_empty());
        let none = verify_report("abc", external_id("t", "r"), &[], None, &repo_files);
        assert_eq!(
            none.status,
            CheckStatus::Completed(CheckConclusion::Neutral)
        );
    }

    #[test]
    fn output_stays_within_github_limits_and_inside_its_fence() {
        let long = "x".repeat(3000);
        let commands: Vec<CommandReport> = (0..40)
            .map(|i| command(&format!("step {i}"), Some(0), &format!("{long}\n````\nend")))
            .collect();
        let report = verify_report("abc", external_id("t", "r"), &commands, None, &repo_files);
        let text = report.text.expect("text");
        assert!(text.chars().count() <= OUTPUT_LIMIT, "{}", text.len());
        assert!(text.contains("cut to GitHub's limit"));
        assert!(
            text.contains("`````text\n"),
            "a fence longer than the output's"
        );
    }

    #[test]
    fn the_judge_check_answers_each_criterion_and_annotates_findings() {
        let criteria = [
            CriterionCheck {
                item: "greets the reader".to_string(),
                met: Some(true),
                reason: "HELLO.md says hello".to_string(),
            },
            CriterionCheck {
                item: "has a test".to_string(),
                met: Some(false),
                reason: "no test added".to_string(),
            },
            CriterionCheck {
                item: "documented".to_string(),
                met: None,
                reason: String::new(),
            },
        ];
        let findings = ["src/lib.rs:4: unwrap on user input".to_string()];
        let review = ReviewText {
            summary: "needs a test",
            findings: &findings,
            criteria: &criteria,
        };
        let report = judge_report(
            "abc",
            external_id("t", "r"),
            (
                CheckStatus::Completed(CheckConclusion::Failure),
                "changes requested".to_string(),
            ),
            Some(&review),
            &repo_files,
        );
        for says in [
            "- [x] greets the reader — **met**: HELLO.md says hello",
            "- [ ] has a test — **not met**: no test added",
            "- [ ] documented — **not judged yet**",
            "- src/lib.rs:4: unwrap on user input",
        ] {
            assert!(report.summary.contains(says), "{says}\n{}", report.summary);
        }
        assert_eq!(report.annotations.len(), 1);
        assert_eq!(
            (
                report.annotations[0].path.as_str(),
                report.annotations[0].line
            ),
            ("src/lib.rs", 4)
        );
    }
}

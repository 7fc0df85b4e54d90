//! The pictures of docs/github-view.md (issue 51): what people see on GitHub — the progress
//! comment on an issue, the dashboard issue, a pull request's body and a check run — drawn from
//! what a real github-mode tick wrote to the local GitHub stand-in, never by hand. This test
//! draws them again and compares them with `docs/img/` (ids, times and sizes aside);
//! `scripts/docs-pictures.sh` writes them (`OPENTIGER_WRITE_PICTURES=1`).

use crate::common;
#[path = "docs_pictures/svg.rs"]
mod svg;

use std::path::Path;

use common::scripted;

/// The pictures, by file name: what a tick on a labelled issue wrote, drawn.
fn pictures() -> Vec<(&'static str, String)> {
    let s = scripted::setup();
    common::enable_dashboard(&s.clone);
    let issue = s.server.add_issue(
        "Greet the reader",
        "The README should greet whoever opens it.\n\n## Acceptance criteria\n\n1. hello.txt exists and says hello\n\nCREATE hello.txt\n",
        &["opentiger"],
        "alice",
        "OWNER",
    );
    // A fixed host name: the dashboard names the tick's holder (`local:<host>:<pid>`).
    let now = "2026-11-21T12:00:00Z";
    let out = common::github::opentiger_against(&s.server, &s.clone, now)
        .arg("tick")
        .env("PROMPTS", s.dir.path().join("prompts"))
        .env("HOSTNAME", "runner")
        .output()
        .unwrap();
    common::github::tick_output(out, now);
    let progress = s
        .server
        .comments(issue)
        .into_iter()
        .find(|c| c.body.contains("<!-- opentiger:task="))
        .expect("the issue's progress comment")
        .body;
    let dashboard = s
        .server
        .issues()
        .into_iter()
        .find(|i| i.labels.iter().any(|l| l == "opentiger:dashboard"))
        .expect("the dashboard issue");
    let pull = s.server.pulls().into_iter().next().expect("the task's PR");
    let judge = s
        .server
        .check_runs_named(&pull.head_sha, "opentiger / judge")
        .pop()
        .expect("the judge's check run");
    let check = format!(
        "### {}\n\n{}\n\n{}",
        judge.title.clone().unwrap_or_default(),
        judge.summary.clone().unwrap_or_default(),
        judge.text.clone().unwrap_or_default()
    );
    vec![
        (
            "progress-comment.svg",
            svg::render(
                &format!("opentiger commented on issue #{issue} \u{b7} Greet the reader"),
                "Open",
                &progress,
            ),
        ),
        (
            "dashboard-issue.svg",
            svg::render(
                &format!("#{} {}", dashboard.number, dashboard.title),
                "Open",
                dashboard.body.as_deref().unwrap_or_default(),
            ),
        ),
        (
            "pull-request.svg",
            svg::render(
                &format!(
                    "#{} {} \u{b7} {} → {}",
                    pull.number, pull.title, pull.head_ref, pull.base_ref
                ),
                "Open",
                pull.body.as_deref().unwrap_or_default(),
            ),
        ),
        (
            "check-run.svg",
            svg::render(
                &format!("Checks \u{b7} {}", judge.name),
                judge.conclusion.as_deref().unwrap_or(&judge.status),
                &check,
            ),
        ),
    ]
}

/// The picture with what changes from one drawing to the next taken out: ids and commits (runs
/// of hex digits), then every number, whatever its length (times, durations, the holder's pid,
/// the coordinates they move).
fn normalised(svg: &str) -> String {
    let mut out = String::with_capacity(svg.len());
    let mut run = String::new();
    let flush = |out: &mut String, run: &mut String| {
        if run.chars().count() >= 7 {
            out.push('#');
        } else {
            out.extend(
                run.chars()
                    .map(|c| if c.is_ascii_digit() { '0' } else { c }),
            );
        }
        run.clear();
    };
    for c in svg.chars() {
        if c.is_ascii_hexdigit() && !c.is_ascii_uppercase() {
            run.push(c);
        } else {
            flush(&mut out, &mut run);
            out.push(if c.is_ascii_digit() { '0' } else { c });
        }
    }
    flush(&mut out, &mut run);
    // `local:runner:5265` and `local:runner:10706` alike: one zero for a run of them.
    let mut numbers = String::with_capacity(out.len());
    for c in out.chars() {
        if !(c == '0' && numbers.ends_with('0')) {
            numbers.push(c);
        }
    }
    numbers
}

#[test]
fn the_pictures_of_what_people_see_on_github_are_up_to_date() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let dir = root.join("docs/img");
    let drawn = pictures();
    if std::env::var_os("OPENTIGER_WRITE_PICTURES").is_some() {
        std::fs::create_dir_all(&dir).unwrap();
        for (name, svg) in &drawn {
            std::fs::write(dir.join(name), svg).unwrap();
        }
        return;
    }
    let page = std::fs::read_to_string(root.join("docs/github-view.md")).unwrap();
    for (name, svg) in &drawn {
        assert!(
            page.contains(&format!("(img/{name})")),
            "docs/github-view.md shows no img/{name}"
        );
        let committed = std::fs::read_to_string(dir.join(name))
            .unwrap_or_else(|_| panic!("docs/img/{name} is missing: run scripts/docs-pictures.sh"));
        assert!(
            normalised(&committed) == normalised(svg),
            "docs/img/{name} is out of date with what a tick writes: run scripts/docs-pictures.sh"
        );
    }
}

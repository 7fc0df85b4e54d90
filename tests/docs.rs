//! The documentation holds to the code: README stays a landing page linking the docs, every
//! relative link of README.md, docs/ and ARCHITECTURE.md resolves (file and heading),
//! ARCHITECTURE.md stays short and names only paths that exist, the configuration reference is
//! what the code generates, the task-state diagram draws only legal moves, and no page names a
//! file users do not have.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use opentiger::model::{check_transition, BlockReason, TaskState, TaskStatus};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// README.md and every page of docs/.
fn pages() -> Vec<PathBuf> {
    let mut pages = vec![root().join("README.md")];
    let mut docs: Vec<PathBuf> = std::fs::read_dir(root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "md"))
        .collect();
    docs.sort();
    pages.extend(docs);
    pages
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The text outside fenced code blocks (links in code are not links).
fn prose(text: &str) -> String {
    let mut out = String::new();
    let mut fenced = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            fenced = !fenced;
            continue;
        }
        if !fenced {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// Every `[text](target)` link's target, inline code left out.
fn links(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for line in prose(text).lines() {
        // Drop inline code spans, which may hold brackets.
        let mut plain = String::new();
        for (i, piece) in line.split('`').enumerate() {
            if i % 2 == 0 {
                plain.push_str(piece);
            }
        }
        let mut rest = plain.as_str();
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(end) = after.find(')') else { break };
            out.push(after[..end].to_string());
            rest = &after[end..];
        }
    }
    out
}

/// GitHub's anchor for a heading: lower case, punctuation other than `-` and `_` dropped,
/// spaces as `-`.
fn slug(heading: &str) -> String {
    heading
        .trim()
        .to_lowercase()
        .chars()
        .filter_map(|c| match c {
            ' ' => Some('-'),
            '-' | '_' => Some(c),
            c if c.is_alphanumeric() => Some(c),
            _ => None,
        })
        .collect()
}

/// The anchors of a page's headings, with GitHub's `-1`, `-2` for repeats.
fn anchors(text: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    for line in prose(text).lines() {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let base = slug(heading);
        let mut anchor = base.clone();
        let mut n = 0;
        while seen.contains(&anchor) {
            n += 1;
            anchor = format!("{base}-{n}");
        }
        seen.insert(anchor);
    }
    seen
}

#[test]
fn every_relative_link_resolves_to_a_file_and_a_heading() {
    let mut broken = Vec::new();
    for page in pages().into_iter().chain([root().join("ARCHITECTURE.md")]) {
        let text = read(&page);
        for target in links(&text) {
            if target.contains("://") || target.starts_with("mailto:") {
                continue;
            }
            let (file, anchor) = match target.split_once('#') {
                Some((file, anchor)) => (file, Some(anchor)),
                None => (target.as_str(), None),
            };
            let resolved = if file.is_empty() {
                page.clone()
            } else {
                page.parent().unwrap().join(file)
            };
            if !resolved.exists() {
                broken.push(format!("{}: {target} (no such file)", page.display()));
                continue;
            }
            if let Some(anchor) = anchor {
                let headings = anchors(&read(&resolved));
                if !headings.contains(anchor) {
                    broken.push(format!("{}: {target} (no such heading)", page.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

/// ARCHITECTURE.md is a map a newcomer reads in an hour, naming only what exists: at most 300
/// lines (the detail is the module docs'), and every path of the repository it names in
/// backticks (`src/…`, `tests/…`; a glob by its folder) is there.
#[test]
fn the_architecture_map_is_short_and_names_paths_that_exist() {
    let text = read(&root().join("ARCHITECTURE.md"));
    let lines = text.lines().count();
    assert!(
        lines <= 300,
        "ARCHITECTURE.md has {lines} lines: leave the detail to the module docs"
    );
    let roots = [
        "src/", "crates/", "tests/", "benches/", "scripts/", "docs/", ".github/",
    ];
    let mut missing = Vec::new();
    for (i, span) in prose(&text).split('`').enumerate() {
        if i % 2 == 0 || !roots.iter().any(|r| span.starts_with(r)) {
            continue;
        }
        let path = match span.split_once('*') {
            Some((head, _)) => head.rsplit_once('/').map_or(head, |(dir, _)| dir),
            None => span,
        };
        if !root().join(path).exists() {
            missing.push(span.to_string());
        }
    }
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

#[test]
fn the_readme_is_a_landing_page_linking_the_docs() {
    let readme = read(&root().join("README.md"));
    let lines = readme.lines().count();
    assert!(
        lines <= 200,
        "README.md has {lines} lines: move detail into docs/"
    );
    for page in [
        "docs/getting-started.md",
        "docs/configuration.md",
        "docs/security.md",
        "docs/troubleshooting.md",
    ] {
        assert!(readme.contains(&format!("]({page}")), "README links {page}");
    }
    // The two set-up commands come first, as a newcomer reads them.
    let setup = readme
        .split("## Set up on a fresh machine")
        .nth(1)
        .expect("a set-up section");
    let block = setup.split("```").nth(1).expect("a code block");
    let commands: Vec<&str> = block
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(commands.len(), 2, "{commands:?}");
    assert!(commands[0].starts_with("cargo run -- demo"), "{commands:?}");
    assert!(commands[1].starts_with("cargo test"), "{commands:?}");
}

#[test]
fn the_configuration_reference_is_what_the_code_generates() {
    let page = read(&root().join("docs/configuration.md"));
    assert!(
        page == opentiger::config::reference_markdown(),
        "docs/configuration.md is out of date: run `cargo run -q -- config reference > docs/configuration.md`"
    );
}

#[test]
fn the_pages_name_nothing_users_do_not_have() {
    for page in pages() {
        let text = read(&page);
        for (n, line) in text.lines().enumerate() {
            let issue = line
                .match_indices("issue ")
                .any(|(i, _)| line[i + 6..].starts_with(|c: char| c.is_ascii_digit()));
            assert!(
                !issue && !line.contains("spec §") && !line.contains("DESIGN"),
                "{}:{}: names a document users do not have: {line}",
                page.display(),
                n + 1
            );
        }
    }
}

/// The state diagram of docs/concepts.md: each `a --> b` between named states is a move the
/// code allows (`model::check_transition`).
#[test]
fn the_task_state_diagram_draws_only_legal_moves() {
    let page = read(&root().join("docs/concepts.md"));
    let diagram = page
        .split("```mermaid\nstateDiagram-v2\n")
        .nth(1)
        .and_then(|d| d.split("```").next())
        .expect("a state diagram in docs/concepts.md");
    let state = |name: &str| -> Option<TaskState> {
        let name = name.trim();
        if let Ok(status) = TaskStatus::from_str(name) {
            return Some(TaskState::new(status, None));
        }
        BlockReason::from_str(name)
            .ok()
            .map(|r| TaskState::new(TaskStatus::Blocked, Some(r)))
    };
    let mut edges = 0;
    for line in diagram.lines() {
        let Some((from, rest)) = line.split_once("-->") else {
            continue;
        };
        let to = rest.split(':').next().unwrap_or_default();
        if from.trim() == "[*]" || to.trim() == "[*]" {
            continue;
        }
        let (Some(a), Some(b)) = (state(from), state(to)) else {
            panic!("`{line}` names a state the code does not have");
        };
        assert!(
            check_transition(a, b).is_ok(),
            "`{line}` is not a legal move"
        );
        edges += 1;
    }
    assert!(edges >= 15, "only {edges} moves drawn");
}

/// Every test a page names as its evidence exists: a `` `snake_case_name` `` of five words or
/// more (settings have fewer) is looked for as `fn name` under tests/ or src/ (a name cut with
/// `…` as a prefix).
#[test]
fn every_test_the_docs_name_exists() {
    fn sources(dir: &Path, out: &mut String) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push_str(&read(&path));
            }
        }
    }
    let mut code = String::new();
    sources(&root().join("tests"), &mut code);
    sources(&root().join("src"), &mut code);
    sources(&root().join("crates"), &mut code);
    let mut missing = Vec::new();
    let mut named = 0;
    for page in pages() {
        let text = read(&page);
        for (i, span) in text.split('`').enumerate() {
            if i % 2 == 0 {
                continue;
            }
            let (name, cut) = match span.strip_suffix('…') {
                Some(prefix) => (prefix.trim_end_matches('_'), true),
                None => (span, false),
            };
            let is_name = name.split('_').count() >= 5
                && name
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
            if !is_name {
                continue;
            }
            named += 1;
            let wanted = format!("fn {name}");
            let found = code.match_indices(&wanted).any(|(at, _)| {
                let next = code[at + wanted.len()..].chars().next();
                cut || matches!(next, Some('(') | Some('<'))
            });
            if !found {
                missing.push(format!("{}: `{span}`", page.display()));
            }
        }
    }
    assert!(named >= 40, "only {named} test names found in the docs");
    assert!(
        missing.is_empty(),
        "the docs name tests that do not exist:\n{}",
        missing.join("\n")
    );
}

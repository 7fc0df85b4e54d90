//! The past changes an eval replays, read from the repository's history without writing to it:
//! the commits a selection names (`--last N` first-parent commits, `--range A..B`, a listing
//! file), each with its parent, its message made into a task, and the test files it added or
//! changed (the hidden tests, by path pattern).
//! Not for: running anything on them (`eval::task`), or which of them to run first and how many
//! (`eval`, the orchestration).

use std::path::Path;

use crate::failure::Failure;
use crate::git::Git;
use crate::policy::Glob;

/// Where tests usually live, when `--tests` names none: test folders, and the file names the
/// common test runners look for (Rust's `tests/`, Python's `test_*.py` and `*_test.py`, Go's
/// `*_test.go`, JavaScript's `*.test.js`, `*.spec.ts` and `__tests__/`, Ruby's `spec/`).
pub const DEFAULT_TEST_GLOBS: [&str; 9] = [
    "tests/**",
    "test/**",
    "spec/**",
    "**/__tests__/**",
    "**/test_*.*",
    "**/*_test.*",
    "**/*.test.*",
    "**/*_spec.*",
    "**/*.spec.*",
];

/// How the changes to replay are chosen.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Selection {
    /// The last N first-parent commits of the base branch that change a test (a merged pull
    /// request is one first-parent commit, squashed or merged).
    Last(usize),
    /// The first-parent commits of `A..B`.
    Range(String),
    /// A file listing one commit a line, optionally followed by the task's text.
    Listing(std::path::PathBuf),
}

/// One past change: commit `commit`, whose parent `parent` the loop starts from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change {
    pub commit: String,
    pub parent: String,
    pub title: String,
    pub goal: String,
    /// Every path the change touched (for `verify.when_changed`).
    pub paths: Vec<String>,
    /// The test files the change added, changed or deleted: kept from the agent, applied as
    /// the change has them on top of what the loop delivered.
    pub hidden: Vec<String>,
}

/// A change picked but not replayed, and why.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Skipped {
    pub commit: String,
    pub title: String,
    pub why: String,
}

/// The compiled test patterns; a bad one is a usage error naming it.
pub fn test_globs(given: &[String]) -> Result<Vec<Glob>, Failure> {
    let patterns: Vec<String> = if given.is_empty() {
        DEFAULT_TEST_GLOBS.iter().map(|g| g.to_string()).collect()
    } else {
        given.to_vec()
    };
    patterns
        .iter()
        .map(|p| {
            Glob::new(p).map_err(|e| {
                Failure::usage(format!(
                    "--tests {p}: {e}\n  fix: give a path pattern such as `tests/**` or `**/*_test.py`"
                ))
            })
        })
        .collect()
}

/// A commit message as a task: the subject is the title, the whole message the goal (the
/// subject alone when there is no body). Pure.
pub fn task_text(message: &str) -> (String, String) {
    let message = message.trim();
    let title = message
        .lines()
        .next()
        .unwrap_or_default()
        .trim()
        .to_string();
    let title = if title.is_empty() {
        "(a change with no message)".to_string()
    } else {
        title
    };
    let body = message
        .split_once('\n')
        .map(|(_, rest)| rest.trim())
        .unwrap_or_default();
    let goal = if body.is_empty() {
        title.clone()
    } else {
        format!("{title}\n\n{body}")
    };
    (title, goal)
}

/// The hidden tests among `paths`: those a test pattern matches. Pure.
pub fn hidden_tests(paths: &[String], globs: &[Glob]) -> Vec<String> {
    paths
        .iter()
        .filter(|p| globs.iter().any(|g| g.matches(p)))
        .cloned()
        .collect()
}

/// A listing file's lines as `(commit, task text)`: blank lines and `#` comments skipped; the
/// text after the commit, when given, replaces the commit message. Pure.
pub fn parse_listing(text: &str) -> Vec<(String, Option<String>)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| match l.split_once(char::is_whitespace) {
            Some((rev, rest)) if !rest.trim().is_empty() => {
                (rev.to_string(), Some(rest.trim().to_string()))
            }
            _ => (l.split_whitespace().next().unwrap_or(l).to_string(), None),
        })
        .collect()
}

fn git_failure(what: &str, e: impl std::fmt::Display) -> Failure {
    Failure::usage(format!("eval: could not {what}: {e}"))
}

/// The commits `selection` names, newest first, each with the task text a listing gave it.
fn commits(
    git: &Git,
    repo: &Path,
    base: &str,
    selection: &Selection,
) -> Result<Vec<(String, Option<String>)>, Failure> {
    let first_parent = |range: &str| -> Result<Vec<(String, Option<String>)>, Failure> {
        let out = git
            .run(&["rev-list", "--first-parent", range])
            .map_err(|e| git_failure(&format!("list the commits of {range}"), e))?;
        Ok(out.lines().map(|l| (l.to_string(), None)).collect())
    };
    match selection {
        Selection::Last(_) => {
            let head = git.resolve(base).ok().flatten().ok_or_else(|| {
                Failure::usage(format!(
                    "eval: the base branch `{base}` does not exist in {}\n  fix: set base_branch in the configuration, or pick the changes with --range A..B",
                    repo.display()
                ))
            })?;
            first_parent(&head)
        }
        Selection::Range(range) => {
            if !range.contains("..") {
                return Err(Failure::usage(format!(
                    "--range {range}: not a range\n  fix: give two revisions as A..B (the changes after A up to B)"
                )));
            }
            first_parent(range)
        }
        Selection::Listing(file) => {
            let text = std::fs::read_to_string(file).map_err(|e| {
                Failure::usage(format!(
                    "--commits {}: {e}\n  fix: give a file listing one commit a line",
                    file.display()
                ))
            })?;
            let mut out = Vec::new();
            for (rev, text) in parse_listing(&text) {
                let sha = git
                    .resolve(&format!("{rev}^{{commit}}"))
                    .ok()
                    .flatten()
                    .ok_or_else(|| {
                        Failure::usage(format!(
                            "--commits {}: `{rev}` is not a commit of {}\n  fix: list commits of this repository",
                            file.display(),
                            repo.display()
                        ))
                    })?;
                out.push((sha, text));
            }
            Ok(out)
        }
    }
}

/// The changes `selection` names, newest first, and those left out with why: a root commit
/// (no parent to start from) and, unless `keep_untested`, a change that touches no test. With
/// `--last N` the walk goes on until N changes are kept. With `linked` (github mode, a token),
/// a task made from a commit message also gets the text of the pull request and issues it
/// links to.
pub fn pick(
    repo: &Path,
    base: &str,
    selection: &Selection,
    globs: &[Glob],
    keep_untested: bool,
    linked: Option<&super::linked::Linked>,
) -> Result<(Vec<Change>, Vec<Skipped>), Failure> {
    let git = Git::new(repo);
    let wanted = match selection {
        Selection::Last(n) => Some(*n),
        Selection::Range(_) | Selection::Listing(_) => None,
    };
    let mut kept = Vec::new();
    let mut skipped = Vec::new();
    for (sha, text) in commits(&git, repo, base, selection)? {
        if wanted.is_some_and(|n| kept.len() >= n) {
            break;
        }
        let message = git
            .run(&["log", "-1", "--format=%B", &sha])
            .map_err(|e| git_failure(&format!("read the message of {sha}"), e))?;
        let (title, mut goal) = match &text {
            Some(text) => task_text(text),
            None => task_text(&message),
        };
        let parent = match git.resolve(&format!("{sha}^1")).ok().flatten() {
            Some(p) => p,
            None => {
                skipped.push(Skipped {
                    commit: sha,
                    title,
                    why: "a root commit: there is no parent to start from".into(),
                });
                continue;
            }
        };
        let names = git
            .run(&["diff", "--name-only", "--no-renames", "-z", &parent, &sha])
            .map_err(|e| git_failure(&format!("list what {sha} changed"), e))?;
        let paths: Vec<String> = names
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(String::from)
            .collect();
        let hidden = hidden_tests(&paths, globs);
        if hidden.is_empty() && !keep_untested {
            skipped.push(Skipped {
                commit: sha,
                title,
                why: "changes no test file (the --tests patterns): nothing would tell whether it was resolved (--keep-untested keeps such changes)".into(),
            });
            continue;
        }
        if hidden.len() == paths.len() {
            skipped.push(Skipped {
                commit: sha,
                title,
                why: "changes only test files: the agent would have nothing to do".into(),
            });
            continue;
        }
        if let Some(more) = linked
            .filter(|_| text.is_none())
            .and_then(|l| l.text_for(&message))
        {
            goal = format!("{goal}\n\n{more}");
        }
        kept.push(Change {
            commit: sha,
            parent,
            title,
            goal,
            paths,
            hidden,
        });
    }
    Ok((kept, skipped))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_becomes_a_title_and_a_goal() {
        for (message, title, goal) in [
            ("Add double(x)\n", "Add double(x)", "Add double(x)"),
            (
                "Add double(x)\n\ndouble(x) returns twice x.\n",
                "Add double(x)",
                "Add double(x)\n\ndouble(x) returns twice x.",
            ),
            (
                "",
                "(a change with no message)",
                "(a change with no message)",
            ),
        ] {
            assert_eq!(
                task_text(message),
                (title.into(), goal.into()),
                "{message:?}"
            );
        }
    }

    #[test]
    fn the_default_patterns_find_the_usual_test_files() {
        let globs = test_globs(&[]).unwrap();
        let paths: Vec<String> = [
            "src/lib.rs",
            "tests/eval.rs",
            "pkg/test_math.py",
            "test_top.py",
            "math_test.go",
            "web/src/app.test.ts",
            "web/__tests__/a.js",
            "spec/models/user_spec.rb",
            "README.md",
            "latest.txt",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        assert_eq!(
            hidden_tests(&paths, &globs),
            [
                "tests/eval.rs",
                "pkg/test_math.py",
                "test_top.py",
                "math_test.go",
                "web/src/app.test.ts",
                "web/__tests__/a.js",
                "spec/models/user_spec.rb"
            ]
        );
        let own = test_globs(&["checks/**".to_string()]).unwrap();
        assert_eq!(hidden_tests(&paths, &own), Vec::<String>::new());
    }

    #[test]
    fn a_listing_names_commits_and_may_give_the_task() {
        assert_eq!(
            parse_listing("# picked by hand\nabc123\n\ndef456  Make the parser strict\n"),
            [
                ("abc123".to_string(), None),
                (
                    "def456".to_string(),
                    Some("Make the parser strict".to_string())
                )
            ]
        );
    }

    #[test]
    fn a_bad_pattern_is_named() {
        let e = test_globs(&["/abs/**".to_string()]).unwrap_err();
        assert!(e.message.contains("--tests /abs/**"), "{}", e.message);
    }
}

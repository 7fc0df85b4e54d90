use std::time::{Duration, Instant};

use super::*;

fn glob(pattern: &str) -> Glob {
    match Glob::new(pattern) {
        Ok(glob) => glob,
        Err(err) => panic!("{err}"),
    }
}

#[test]
fn glob_matches_table() {
    #[rustfmt::skip]
    let cases: &[(&str, &str, bool)] = &[
        // `**` at the start: zero or more segments.
        ("**/*.pem", "a.pem", true),
        ("**/*.pem", "x/y/a.pem", true),
        ("**/*.pem", "x/y/a.pem.bak", false),
        ("**/.env*", ".env", true),
        ("**/.env*", "app/.env.local", true),
        // A trailing `**`: one or more segments, never the directory itself.
        ("src/**", "src/a", true),
        ("src/**", "src/a/b", true),
        ("src/**", "src", false),
        ("src/**", "srcx/a", false),
        ("src/**", "lib/src/a", false),
        ("src/**/", "src/a", true),
        ("src/**/**", "src", false),
        (".github/workflows/**", ".github/workflows/ci.yml", true),
        (".github/workflows/**", ".github/ci.yml", false),
        ("**", "a", true),
        ("**", "a/b/.c", true),
        // `**` in the middle: zero or more.
        ("a/**/b", "a/b", true),
        ("a/**/b", "a/x/y/b", true),
        ("a/**/b", "a/x/y/c", false),
        ("a/**/b/**/c", "a/b/b/c/c", true),
        ("**/**/**/a", "a", true),
        ("**/**/**/a", "x/y/z/w/a", true),
        // Anchored: no `/` does not mean "any depth".
        (".env*", ".env", true),
        (".env*", ".env.local", true),
        (".env*", "a/.env", false),
        ("*.pem", "a.pem", true),
        ("*.pem", "keys/a.pem", false),
        (".opentiger.yml", ".opentiger.yml", true),
        (".opentiger.yml", "x/.opentiger.yml", false),
        // `*` stays within a segment and includes dotfiles.
        ("*", ".hidden", true),
        ("*", "a/b", false),
        ("src/*", "src/a.rs", true),
        ("src/*", "src/a/b.rs", false),
        ("src/*.rs", "src/.rs", true),
        ("a*b*c", "abc", true),
        ("a*b*c", "axxbyyc", true),
        ("a*b*c", "axxbyy", false),
        ("a**b", "axxb", true),
        ("a**b", "ax/xb", false),
        // `?` and classes.
        ("?.txt", "a.txt", true),
        ("?.txt", "ab.txt", false),
        ("?", "é", true),
        ("[abc].rs", "b.rs", true),
        ("[abc].rs", "d.rs", false),
        ("[a-z]1", "q1", true),
        ("[a-z]1", "Q1", false),
        ("[!a]x", "bx", true),
        ("[!a]x", "ax", false),
        ("[^a]x", "ax", false),
        ("[]]", "]", true),
        ("[-a]", "-", true),
        ("[a-]", "-", true),
        ("x[\\]]", "x]", true),
        ("[0-9a-f]?", "7z", true),
        // Escapes and literals.
        ("\\*.md", "*.md", true),
        ("\\*.md", "a.md", false),
        ("pages/\\[id\\].tsx", "pages/[id].tsx", true),
        ("\\!important", "!important", true),
        ("{id}.rs", "{id}.rs", true),
        ("README.md", "readme.md", false),
        // Trailing `/` means everything under.
        ("build/", "build/out.o", true),
        ("build/", "build", false),
        // `./` is ignored on both sides; odd paths.
        ("./src/**", "src/a", true),
        ("src/**", "./src/a", true),
        ("src/*", "src//a", true),
        ("**", "", false),
        ("**", "/etc/passwd", false),
        ("**", "../outside", false),
        ("**", "a/../../b", false),
    ];
    for (pattern, path, expected) in cases {
        assert_eq!(
            glob(pattern).matches(path),
            *expected,
            "`{pattern}` against `{path}`"
        );
    }
}

#[test]
fn glob_rejects_table() {
    #[rustfmt::skip]
    let cases: &[(&str, GlobProblem, &str)] = &[
        ("", GlobProblem::Empty, "is empty"),
        ("   ", GlobProblem::Empty, "use `**`"),
        ("./", GlobProblem::Empty, "is empty"),
        ("/etc/**", GlobProblem::Absolute, "drop the leading `/`"),
        ("../x", GlobProblem::ParentSegment, "`..`"),
        ("a/../b", GlobProblem::ParentSegment, "leave the repository"),
        ("a/./b", GlobProblem::DotSegment, "`.` segment"),
        ("a//b", GlobProblem::EmptySegment, "`//`"),
        ("src/[ab", GlobProblem::UnbalancedBracket, "never closed"),
        ("[a/b]", GlobProblem::UnbalancedBracket, "`\\[`"),
        ("[]", GlobProblem::UnbalancedBracket, "never closed"),
        ("[z-a]", GlobProblem::ReversedRange { from: 'z', to: 'a' }, "write `a-z`"),
        ("a\\", GlobProblem::TrailingBackslash, "escapes nothing"),
        ("!src/**", GlobProblem::Negation, "denied_paths"),
        ("src/**/*.{ts,tsx}", GlobProblem::BraceAlternatives, "one pattern per alternative"),
    ];
    for (pattern, problem, text) in cases {
        let err = match Glob::new(pattern) {
            Ok(glob) => panic!("`{pattern}` compiled: {glob:?}"),
            Err(err) => err,
        };
        assert_eq!(&err.problem, problem, "`{pattern}`");
        let shown = err.to_string();
        assert!(
            shown.contains(&format!("`{pattern}`")) && shown.contains(text),
            "`{pattern}`: {shown}"
        );
    }
}

#[test]
fn glob_keeps_its_pattern() {
    let g = glob("./src/**");
    assert_eq!(g.as_str(), "./src/**");
    assert_eq!(g.to_string(), "./src/**");
}

/// A naive backtracking matcher takes exponential time on these; ours is pattern × path.
#[test]
fn pathological_patterns_finish_quickly() {
    let deep = vec!["a"; 400].join("/");
    let wide = "a".repeat(5_000);
    let segments = format!("{}/b", vec!["**/a"; 40].join("/"));
    let stars = format!("{}b", "a*".repeat(60));
    #[rustfmt::skip]
    let cases: Vec<(String, String, bool)> = vec![
        ("**/**/**/**/**/**/**/**/a/b".to_string(), deep.clone(), false),
        (segments.clone(), deep.clone(), false),
        (segments, format!("{deep}/b"), true),
        (stars.clone(), wide.clone(), false),
        (stars, format!("{wide}b"), true),
    ];
    let started = Instant::now();
    for (pattern, path, expected) in &cases {
        assert_eq!(glob(pattern).matches(path), *expected, "`{pattern}`");
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "took {:?}",
        started.elapsed()
    );
}

fn changed(path: &str, added: u32, removed: u32) -> ChangedFile {
    ChangedFile {
        path: path.to_string(),
        added,
        removed,
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn policy(allowed: &[&str], denied: &[&str], max_files: u32, max_lines: u32) -> PathPolicy {
    match PathPolicy::new(&strings(allowed), &strings(denied), max_files, max_lines) {
        Ok(policy) => policy,
        Err(err) => panic!("{err}"),
    }
}

/// The denied paths of `PolicyConfig::default`, copied so these tests pin the behaviour.
const DEFAULT_DENIED: &[&str] = &[
    ".github/workflows/**",
    ".opentiger.yml",
    ".opentiger/**",
    ".env*",
    "**/.env*",
    "**/*.pem",
    "**/*.key",
];

#[test]
fn check_table() {
    let denied_env = || Violation::Denied {
        path: "app/.env".to_string(),
        pattern: "**/.env*".to_string(),
    };
    let outside = |path: &str| Violation::OutsideAllowed {
        path: path.to_string(),
    };
    #[rustfmt::skip]
    let cases: Vec<(PathPolicy, Vec<ChangedFile>, Vec<Violation>)> = vec![
        (policy(&["**"], DEFAULT_DENIED, 50, 2000), vec![changed("src/a.rs", 10, 2)], vec![]),
        (policy(&["**"], DEFAULT_DENIED, 50, 2000), vec![], vec![]),
        // Denied wins over allowed, and names the first denied pattern that matched.
        (policy(&["**"], DEFAULT_DENIED, 50, 2000), vec![changed("app/.env", 1, 0)], vec![denied_env()]),
        (policy(&["**"], DEFAULT_DENIED, 0, 0), vec![changed(".env", 1, 0)], vec![Violation::Denied {
            path: ".env".to_string(), pattern: ".env*".to_string() }]),
        (policy(&["**"], DEFAULT_DENIED, 0, 0), vec![changed(".github/workflows/ci.yml", 1, 0)],
            vec![Violation::Denied { path: ".github/workflows/ci.yml".to_string(),
                pattern: ".github/workflows/**".to_string() }]),
        // Outside the task's allowed paths, in the given order.
        (policy(&["src/**", "Cargo.toml"], &[], 0, 0),
            vec![changed("README.md", 1, 0), changed("src/lib.rs", 1, 0), changed("Cargo.toml", 1, 1),
                 changed("docs/a.md", 1, 0)],
            vec![outside("README.md"), outside("docs/a.md")]),
        (policy(&[], &[], 0, 0), vec![changed("src/a.rs", 1, 0)], vec![outside("src/a.rs")]),
        (policy(&["**"], &[], 0, 0), vec![changed("../escape", 1, 0)], vec![outside("../escape")]),
        // Limits: 0 is no limit; exactly at the limit is fine.
        (policy(&["**"], &[], 2, 0), vec![changed("a", 1, 0), changed("b", 1, 0)], vec![]),
        (policy(&["**"], &[], 2, 0), vec![changed("a", 1, 0), changed("b", 1, 0), changed("c", 1, 0)],
            vec![Violation::TooManyFiles { count: 3, max: 2 }]),
        (policy(&["**"], &[], 0, 10), vec![changed("a", 5, 5)], vec![]),
        (policy(&["**"], &[], 0, 10), vec![changed("a", 5, 4), changed("b", 1, 1)],
            vec![Violation::TooManyLines { count: 11, max: 10 }]),
        (policy(&["**"], &[], 0, 10), vec![changed("a", u32::MAX, u32::MAX)],
            vec![Violation::TooManyLines { count: u32::MAX, max: 10 }]),
        // Everything at once: paths first, then files, then lines.
        (policy(&["src/**"], DEFAULT_DENIED, 1, 1),
            vec![changed("app/.env", 1, 0), changed("x", 1, 0)],
            vec![Violation::Denied { path: "app/.env".to_string(), pattern: "**/.env*".to_string() },
                 outside("x"), Violation::TooManyFiles { count: 2, max: 1 },
                 Violation::TooManyLines { count: 2, max: 1 }]),
    ];
    for (i, (policy, changes, expected)) in cases.iter().enumerate() {
        assert_eq!(&policy.check(changes), expected, "case {i}");
    }
}

#[test]
fn new_reports_the_bad_pattern() {
    let err = PathPolicy::new(&strings(&["src/**"]), &strings(&["/abs"]), 0, 0);
    match err {
        Ok(policy) => panic!("compiled: {policy:?}"),
        Err(err) => assert!(err.to_string().contains("`/abs`"), "{err}"),
    }
}

#[test]
fn violation_display_table() {
    #[rustfmt::skip]
    let cases: Vec<(Violation, &str)> = vec![
        (Violation::Denied { path: ".env".to_string(), pattern: ".env*".to_string() },
            "change to denied path: .env (matches .env*)"),
        (Violation::OutsideAllowed { path: "a/b.rs".to_string() },
            "change outside allowed paths: a/b.rs"),
        (Violation::TooManyFiles { count: 51, max: 50 }, "51 files changed (limit 50)"),
        (Violation::TooManyLines { count: 2001, max: 2000 }, "2001 lines changed (limit 2000)"),
    ];
    for (violation, expected) in cases {
        assert_eq!(violation.to_string(), expected);
    }
}

#[test]
fn summary_table() {
    let outside = |i: usize| Violation::OutsideAllowed {
        path: format!("f{i}"),
    };
    let many = |n: usize| (0..n).map(outside).collect::<Vec<_>>();
    let lines = |n: usize| {
        (0..n)
            .map(|i| format!("change outside allowed paths: f{i}"))
            .collect::<Vec<_>>()
    };
    let with_more = |mut v: Vec<String>, more: &str| {
        v.push(more.to_string());
        v.join("\n")
    };
    #[rustfmt::skip]
    let cases: Vec<(Vec<Violation>, String)> = vec![
        (vec![], String::new()),
        (many(1), "change outside allowed paths: f0".to_string()),
        (many(20), lines(20).join("\n")),
        (many(21), with_more(lines(20), "... and 1 more")),
        (many(45), with_more(lines(20), "... and 25 more")),
    ];
    for (violations, expected) in cases {
        assert_eq!(
            summary(&violations),
            expected,
            "{} violations",
            violations.len()
        );
    }
}

/// Issue 36: a denied `dir/**` denies `dir` itself, and a path above a denied pattern's fixed
/// folders stands for it (a link named `.github` shadows `.github/workflows/**`).
#[test]
fn denied_folders_cover_their_own_name_and_the_folders_above_them() {
    let denied = [
        ".github/workflows/**",
        ".opentiger/**",
        ".opentiger.yml",
        "**/.env*",
        "secrets/*.pem",
    ];
    let p = policy(&["**"], &denied, 0, 0);
    #[rustfmt::skip]
    let cases: &[(&str, Option<&str>, Option<&str>)] = &[
        // path, denied_by, shadows_denied
        (".opentiger", Some(".opentiger/**"), Some(".opentiger/**")),
        (".opentiger/templates/judge.md.hbs", Some(".opentiger/**"), None),
        (".github/workflows", Some(".github/workflows/**"), Some(".github/workflows/**")),
        (".github", None, Some(".github/workflows/**")),
        (".github/ISSUE_TEMPLATE", None, None),
        (".opentiger.yml", Some(".opentiger.yml"), Some(".opentiger.yml")),
        ("secrets", None, Some("secrets/*.pem")),
        ("app/.env", Some("**/.env*"), None),
        ("src", None, None),
        ("src/.github", None, None),
    ];
    for (path, by, shadows) in cases {
        assert_eq!(p.denied_by(path), *by, "denied_by {path}");
        assert_eq!(p.shadows_denied(path), *shadows, "shadows_denied {path}");
        assert_eq!(p.permits(path), by.is_none(), "permits {path}");
    }
}

#[test]
fn sizes_are_checked_per_file_and_for_the_change() {
    let files = |sizes: &[u64]| -> Vec<(String, u64)> {
        sizes
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("f{i}"), *s))
            .collect()
    };
    assert!(size_violations(&files(&[10, 20]), 100, 1000).is_empty());
    assert!(
        size_violations(&files(&[u64::MAX, u64::MAX]), 0, 0).is_empty(),
        "0: no limit"
    );
    let over = size_violations(
        &files(&[400 * 1024 * 1024, 5]),
        5 * 1024 * 1024,
        20 * 1024 * 1024,
    );
    let text: Vec<String> = over.iter().map(ToString::to_string).collect();
    assert_eq!(
        text,
        [
            "f0 is 419430400 bytes, over policy.max_file_bytes = 5242880",
            "the change is 419430405 bytes in all, over policy.max_change_bytes = 20971520",
        ]
    );
    // A sparse 3 GB file counts by its apparent size; the sum never overflows.
    let huge = size_violations(&files(&[3 << 30, u64::MAX]), 1 << 20, 1 << 30);
    assert_eq!(huge.len(), 3, "{huge:?}");
}

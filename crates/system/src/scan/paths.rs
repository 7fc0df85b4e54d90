//! What kind of file a path names, for the scan's rules: a build, install, CI or
//! package-manager script, prose, a generated file. Pure, by the name alone.
//!
//! Not for: what the rules look for in such a file (`rules.rs`, `supply.rs`).

/// Whether `path` is a build, install, CI or package-manager script: a file whose code runs
/// when the project is built, installed, tested or checked in CI — with that job's secrets.
pub fn is_script(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    let lower = name.to_ascii_lowercase();
    let in_folder = |folder: &str| {
        path.starts_with(&format!("{folder}/")) || path.contains(&format!("/{folder}/"))
    };
    const NAMES: [&str; 22] = [
        "makefile",
        "gnumakefile",
        "justfile",
        "rakefile",
        "jenkinsfile",
        "build.rs",
        "setup.py",
        "setup.cfg",
        "pyproject.toml",
        "package.json",
        "cargo.toml",
        "gemfile",
        "composer.json",
        "cmakelists.txt",
        "configure",
        "containerfile",
        ".npmrc",
        ".yarnrc",
        ".yarnrc.yml",
        ".gitlab-ci.yml",
        ".travis.yml",
        ".pre-commit-config.yaml",
    ];
    const SUFFIXES: [&str; 11] = [
        ".sh",
        ".bash",
        ".zsh",
        ".ps1",
        ".bat",
        ".cmd",
        ".mk",
        ".gradle",
        ".gradle.kts",
        ".cmake",
        ".gemspec",
    ];
    if prose(path) {
        return false;
    }
    NAMES.contains(&lower.as_str())
        || SUFFIXES.iter().any(|s| lower.ends_with(s))
        || lower.starts_with("dockerfile")
        || lower == "install"
        || lower.starts_with("install.")
        || lower.starts_with("azure-pipelines")
        || [
            "scripts",
            "script",
            "bin",
            ".github",
            ".circleci",
            ".husky",
            "ci",
            ".ci",
        ]
        .iter()
        .any(|f| in_folder(f))
}

/// Files whose long unbroken lines are expected (generated, minified, data).
pub(super) fn generated(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [
        ".min.js",
        ".min.css",
        ".map",
        ".lock",
        "-lock.json",
        ".lock.json",
        ".svg",
        ".snap",
        ".pb.go",
        ".sum",
        ".json",
        ".jsonl",
        ".ndjson",
    ]
    .iter()
    .any(|s| lower.ends_with(s))
}

pub(super) fn prose(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    [".md", ".markdown", ".txt", ".rst", ".adoc"]
        .iter()
        .any(|s| lower.ends_with(s))
}

//! The worker's mapping of a failed verification command to a failure code (spec §3.2, last
//! paragraph): a missing make target, script or test files, an unsupported command format, a
//! missing tool or package (setup), a build output gone after a clean (sequence), else a plain
//! verification failure. Not for: running the commands (`runner::checks`) or whether the code
//! is retried (`classify` in [`super`]).

use super::*;

/// Build-output directory names (spec §3.2 sequence_issue).
#[rustfmt::skip]
const GENERATED_DIRS: &[&str] = &[
    "artifact",
    "artifacts",
    "build",
    "debug",
    "dist",
    "out",
    "release",
    "target",
];

/// Whether `path` has `<generated dir>/` at its start or after whitespace, a quote, `.` or `/`.
pub(super) fn names_generated_dir(path: &str) -> bool {
    let bytes = path.as_bytes();
    GENERATED_DIRS.iter().any(|dir| {
        path.match_indices(dir).any(|(at, _)| {
            let end = at + dir.len();
            let starts_segment = at == 0
                || matches!(bytes[at - 1], b'"' | b'\'' | b'.' | b'/')
                || bytes[at - 1].is_ascii_whitespace();
            starts_segment && bytes.get(end) == Some(&b'/')
        })
    })
}

/// Maps a failed verification command to a failure code, the worker's
/// `resolveVerificationCommandFailureCode` (spec §3.2, last paragraph); the first match wins.
///
/// `previous_command` is the verification command that ran just before this one, if any: a
/// missing build output right after a clean is a sequencing problem, not a test failure.
pub fn verification_failure_code(
    command: &str,
    output: &str,
    previous_command: Option<&str>,
) -> FailureCode {
    let out = output.to_lowercase();
    if out.contains("no rule to make target") {
        return FailureCode::VerificationCommandMissingMakeTarget;
    }
    if contains_any(&out, NO_TEST_FILES) {
        return FailureCode::VerificationCommandNoTestFiles;
    }
    let missing_script = contains_any(&out, &["err_pnpm_no_script", "missing script"])
        || contains_all(&out, &["command", "not found", "script"]);
    let missing_manifest = out.contains("could not read package.json")
        || contains_all(&out, &["enoent", "package.json"]);
    if missing_script || missing_manifest {
        return FailureCode::VerificationCommandMissingScript;
    }
    #[rustfmt::skip]
    const UNSUPPORTED: &[&str] = &[
        "unsupported command format", "unsupported shell builtin in verification command",
    ];
    let unsupported = contains_any(&out, UNSUPPORTED)
        || contains_all(&out, &["shell operators", "not allowed"])
        || command.contains("$(");
    if unsupported {
        return FailureCode::VerificationCommandUnsupportedFormat;
    }
    if is_missing_tool_output(&out)
        || is_runtime_mismatch_output(&out)
        || is_missing_package_output(&out)
    {
        return FailureCode::SetupOrBootstrapIssue;
    }
    if is_sequence_issue(command, output, previous_command) {
        return FailureCode::VerificationCommandSequenceIssue;
    }
    FailureCode::VerificationCommandFailed
}

pub(super) fn is_missing_tool_output(out: &str) -> bool {
    #[rustfmt::skip]
    const PHRASES: &[&str] = &[
        "missing dependency", "cannot find dependency", "command not found", "spawn enoent",
    ];
    contains_any(out, PHRASES) || contains_all(out, &["sh:", "not found"])
}

pub(super) fn is_runtime_mismatch_output(out: &str) -> bool {
    contains_all(out, &["unsupported engine", "\"node\""])
        || contains_any(out, &["requires node", "expected node version"])
        || (out.contains("err_require_esm") && contains_any(out, &["node_modules", "/.pnpm/"]))
        || contains_all(out, &["not supported", "node"])
}

/// A package (not a file of the repository) that the toolchain cannot resolve: dependencies were
/// never installed.
pub(super) fn is_missing_package_output(out: &str) -> bool {
    if out.contains("cannot find package")
        || contains_all(out, &["module path", "to exist, but none could be found"])
    {
        return true;
    }
    let Some(specifier) = quoted_after(out, "cannot find module ")
        .or_else(|| quoted_before(out, "module path ", " to exist"))
    else {
        return false;
    };
    if is_local_specifier(specifier) {
        return false;
    }
    contains_all(out, &["failed to load config from", "node_modules"])
        || contains_all(out, &["imported from", "node_modules"])
}

/// The first `'…'` or `"…"` right after `prefix`.
fn quoted_after<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    text.match_indices(prefix)
        .find_map(|(at, m)| quoted_at(&text[at + m.len()..]).map(|(inner, _)| inner))
}

/// The first `prefix '…' suffix`.
fn quoted_before<'a>(text: &'a str, prefix: &str, suffix: &str) -> Option<&'a str> {
    text.match_indices(prefix).find_map(|(at, m)| {
        let (inner, rest) = quoted_at(&text[at + m.len()..])?;
        rest.starts_with(suffix).then_some(inner)
    })
}

/// A non-empty quoted string at the start of `text`, and what follows it.
fn quoted_at(text: &str) -> Option<(&str, &str)> {
    let body = text.strip_prefix(['\'', '"'])?;
    // As `['"]([^'"]+)['"]`: any quote closes.
    let close = body.find(['\'', '"'])?;
    (close > 0).then(|| (&body[..close], &body[close + 1..]))
}

fn is_local_specifier(specifier: &str) -> bool {
    let s = specifier.trim();
    let bytes = s.as_bytes();
    let drive = bytes.len() >= 3
        && bytes[0].is_ascii_alphabetic()
        && bytes[1] == b':'
        && matches!(bytes[2], b'/' | b'\\');
    s.starts_with('.') || s.starts_with('/') || drive
}

/// spec §3.2: `test -f|-s <generated path>` with no output, right after a clean-like command.
fn is_sequence_issue(command: &str, output: &str, previous_command: Option<&str>) -> bool {
    let Some(previous) = previous_command else {
        return false;
    };
    let Some(path) = artifact_check_path(command) else {
        return false;
    };
    let path = path.to_lowercase();
    let generated = !path.contains("..")
        && !path.contains('*')
        && path
            .split('/')
            .any(|segment| GENERATED_DIRS.contains(&segment));
    generated && output.trim().is_empty() && is_clean_like(previous)
}

/// The path of a `test -f <path>` / `test -s <path>` command, unquoted and normalized.
fn artifact_check_path(command: &str) -> Option<String> {
    let mut words = command.split_whitespace();
    if !words.next()?.eq_ignore_ascii_case("test") {
        return None;
    }
    let flag = words.next()?;
    if !(flag.eq_ignore_ascii_case("-f") || flag.eq_ignore_ascii_case("-s")) {
        return None;
    }
    let rest = command.trim_start();
    let rest = rest[4..].trim_start();
    let rest = rest[2..].trim();
    if rest.is_empty() {
        return None;
    }
    let unquoted = strip_wrapping_quotes(rest).replace('\\', "/");
    let mut path = unquoted.as_str();
    while let Some(stripped) = path.strip_prefix("./") {
        path = stripped;
    }
    (!path.is_empty()).then(|| path.to_string())
}

fn strip_wrapping_quotes(text: &str) -> &str {
    let t = text.trim();
    for quote in ['"', '\''] {
        if t.len() >= 2 && t.starts_with(quote) && t.ends_with(quote) {
            return &t[1..t.len() - 1];
        }
    }
    t
}

/// `make *clean*`, or `<pm> [run] clean|distclean|clobber`.
fn is_clean_like(command: &str) -> bool {
    let mut words = command.split_whitespace();
    let Some(first) = words.next().map(str::to_lowercase) else {
        return false;
    };
    let rest: Vec<String> = words.map(str::to_lowercase).collect();
    match first.as_str() {
        "make" => rest.iter().any(|w| w.contains("clean")),
        "npm" | "pnpm" | "yarn" | "bun" => {
            let joined = rest.join(" ");
            ["clean", "distclean", "clobber"]
                .iter()
                .any(|word| has_word(&joined, word))
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[allow(unused_imports)]
    use crate::model::{FailureCategory as C, FailureCode as F};

    #[test]
    fn verification_output_maps_to_codes() {
        #[rustfmt::skip]
        let cases: &[(&str, &str, Option<&str>, F)] = &[
            ("make check", "make: *** No rule to make target 'check'.", None, F::VerificationCommandMissingMakeTarget),
            ("pnpm test", "No test files found, exiting with code 1", None, F::VerificationCommandNoTestFiles),
            ("pnpm lint", "ERR_PNPM_NO_SCRIPT  Missing script: lint", None, F::VerificationCommandMissingScript),
            ("yarn run x", "error Command \"x\" not found. Did you mean script y?", None, F::VerificationCommandMissingScript),
            ("npm test", "npm ERR! enoent Could not read package.json", None, F::VerificationCommandMissingScript),
            ("echo $(date)", "", None, F::VerificationCommandUnsupportedFormat),
            ("cd x", "unsupported shell builtin in verification command: cd", None, F::VerificationCommandUnsupportedFormat),
            ("a | b", "shell operators (|) are not allowed", None, F::VerificationCommandUnsupportedFormat),
            ("cargo test", "sh: 1: cargo: not found", None, F::SetupOrBootstrapIssue),
            ("pnpm build", "Error: spawn ENOENT", None, F::SetupOrBootstrapIssue),
            ("pnpm i", "Unsupported engine: wanted: {\"node\":\">=22\"}", None, F::SetupOrBootstrapIssue),
            ("pnpm test", "This package requires Node >= 20", None, F::SetupOrBootstrapIssue),
            ("pnpm test", "Error [ERR_REQUIRE_ESM]: in /w/node_modules/.pnpm/x/index.js", None, F::SetupOrBootstrapIssue),
            ("vitest", "Error: Cannot find package 'vite' imported from /w/x.ts", None, F::SetupOrBootstrapIssue),
            ("vitest", "Error: Cannot find module 'vitest/config' imported from /w/node_modules/x.js", None, F::SetupOrBootstrapIssue),
            // A module of the repository itself is a real failure, not a setup problem.
            ("vitest", "Error: Cannot find module './util' imported from /w/node_modules/x.js", None, F::VerificationCommandFailed),
            ("test -f build/app.bin", "", Some("make clean"), F::VerificationCommandSequenceIssue),
            ("test -s \"dist/index.js\"", "  \n", Some("pnpm run distclean"), F::VerificationCommandSequenceIssue),
            // Needs all three: a generated path, no output, and a clean-like command just before.
            ("test -f build/app.bin", "", Some("make all"), F::VerificationCommandFailed),
            ("test -f build/app.bin", "", None, F::VerificationCommandFailed),
            ("test -f src/app.c", "", Some("make clean"), F::VerificationCommandFailed),
            ("test -f build/app.bin", "missing", Some("make clean"), F::VerificationCommandFailed),
            ("test -f ../build/app.bin", "", Some("make clean"), F::VerificationCommandFailed),
            ("cargo test", "test result: FAILED. 1 passed; 1 failed", None, F::VerificationCommandFailed),
        ];
        for (command, output, previous, expected) in cases {
            let got = verification_failure_code(command, output, *previous);
            assert_eq!(got, *expected, "{command:?} / {output:?}");
        }
    }
}

//! What a change holds, read from the runner's repository as a stream: links (resolved inside
//! the tree), the names it adds (issue 48: no control character, portable by default), the
//! paths that wait for a person, secrets plain or encoded on any added line, and the threat
//! scan's findings (issue 36). The diff is read line by line, each line cut at [`LINE_MAX`], so no change an
//! agent makes can make the runner hold it whole. Not for: the patterns that find (`redact`,
//! `scan`, `policy`), the changed paths' policy and the verification commands (`runner::checks`),
//! or keeping a held change back (`runner::work_held`).

use std::io::{BufRead, BufReader};

use super::checks::{allowed_paths, CheckFailure};
use crate::config::Config;
use crate::git::Git;
use crate::model::{FailureCode, Task};
use crate::policy::{ContentViolation, DiffWalker, PathPolicy};
use crate::redact::Redactor;
use crate::scan::{Finding, Rule, Scanner};
use crate::workspace::LinkEntry;

/// The longest piece of one diff line that is scanned (the rest of the line is skipped).
const LINE_MAX: usize = 64 * 1024;

/// What the change holds. `range` is what `git diff` compares in the runner's repository (two
/// trees or commits); `links` are the links the change writes (resolved by `workspace`);
/// `texts` the agent's texts that would be posted with it (`("the PR body", summary)`).
/// `Err`: a policy violation — a link out of bounds, a secret (plain or encoded). `Ok`: the
/// threat scan's findings that hold the change for a person (empty when `scan.rules` is off).
/// Messages name files and lines, never a secret.
pub fn check_content(
    task: &Task,
    config: &Config,
    git: &Git,
    range: &[&str],
    links: &[LinkEntry],
    redactor: &Redactor,
    texts: &[(&str, &str)],
) -> Result<Vec<Finding>, CheckFailure> {
    let policy = PathPolicy::new(
        &allowed_paths(task, config),
        &config.policy.denied_paths,
        0,
        0,
    )
    .map_err(|e| CheckFailure {
        code: FailureCode::PolicyViolation,
        message: format!("the path policy is invalid: {e}"),
    })?;
    let runner_error = |e: crate::git::GitError| CheckFailure {
        code: FailureCode::ExecutionFailed,
        message: format!("runner error: {e}"),
    };
    let mut found: Vec<String> = links
        .iter()
        .filter_map(|link| link_violation(link, &policy))
        .map(|v| v.to_string())
        .collect();
    let named = changed_names(git, range).map_err(runner_error)?;
    found.extend(
        name_violations(git, range, &named, config.policy.portable_names).map_err(runner_error)?,
    );
    let mut scanner = Scanner::new(redactor.values());
    let held_paths = config.held_paths().map_err(|e| CheckFailure {
        code: FailureCode::PolicyViolation,
        message: format!("the held paths are invalid: {e}"),
    })?;
    let mut sensitive = Vec::new();
    for (status, path) in &named {
        if let Some((pattern, why)) = held_paths.held(path) {
            sensitive.push(Finding {
                place: crate::policy::names::shown(path),
                line: None,
                rule: Rule::SensitivePath,
                detail: format!("a path that waits for a person ({pattern}: {why})"),
            });
        }
        if *status == 'A' {
            scanner.name(&crate::policy::names::shown(path));
        }
    }
    let mut secrets = 0;
    for_each_added_line(git, range, |path, line, text| {
        if secrets < 20 {
            if let Some(kind) = redactor.secret_in(&String::from_utf8_lossy(text)) {
                secrets += 1;
                found.push(
                    ContentViolation::Secret {
                        path: path.to_string(),
                        line,
                        kind,
                    }
                    .to_string(),
                );
            }
        }
        scanner.added_line(path, line, text);
    })
    .map_err(runner_error)?;
    for (place, text) in texts {
        scanner.text(place, text);
    }
    let (refused, held): (Vec<Finding>, Vec<Finding>) = scanner
        .findings()
        .into_iter()
        .partition(|f| f.rule.refuses());
    found.extend(refused.iter().map(ToString::to_string));
    if !found.is_empty() {
        found.truncate(20);
        return Err(CheckFailure {
            code: FailureCode::PolicyViolation,
            message: format!("Policy violation: {}", found.join("; ")),
        });
    }
    // Issue 48: a held path waits for a person whatever `scan.rules` says.
    sensitive.extend(held.into_iter().filter(|_| config.scan.rules));
    Ok(sensitive)
}

/// Each path the change adds (`A`), changes or deletes, with git's status letter, from the
/// trees (`diff-tree -z`: names as bytes, never split at a newline).
fn changed_names(git: &Git, range: &[&str]) -> Result<Vec<(char, String)>, crate::git::GitError> {
    let [from, to] = range else {
        return Ok(Vec::new());
    };
    let raw = git.run_bytes(&[
        "diff-tree",
        "-r",
        "-z",
        "--no-renames",
        "--name-status",
        from,
        to,
    ])?;
    let mut fields = raw.split(|b| *b == 0).filter(|f| !f.is_empty());
    let mut out = Vec::new();
    while let (Some(status), Some(path)) = (fields.next(), fields.next()) {
        let status = status.first().map_or('M', |b| char::from(*b));
        out.push((status, String::from_utf8_lossy(path).into_owned()));
    }
    Ok(out)
}

/// The names the change adds that no checkout may hold (a control character) or that some
/// cannot (`policy.portable_names`): against the whole tree after the change for names that
/// differ only by case, leaving out pairs that were both there before.
fn name_violations(
    git: &Git,
    range: &[&str],
    named: &[(char, String)],
    portable: bool,
) -> Result<Vec<String>, crate::git::GitError> {
    use crate::policy::names::{
        case_collisions, has_control, name_problem, NameProblem, NameViolation,
    };
    let added: Vec<&str> = named
        .iter()
        .filter(|(status, _)| *status == 'A')
        .map(|(_, p)| p.as_str())
        .collect();
    let mut out = Vec::new();
    for path in &added {
        let problem = match name_problem(path) {
            Some(NameProblem::Control) => Some(NameProblem::Control),
            Some(other) if portable => Some(other),
            _ if has_control(path) => Some(NameProblem::Control),
            _ => None,
        };
        if let Some(problem) = problem {
            out.push(
                NameViolation {
                    path: path.to_string(),
                    problem,
                }
                .to_string(),
            );
        }
    }
    let ([from, to], false, true) = (range, added.is_empty(), portable) else {
        return Ok(out);
    };
    let list = |tree: &str| -> Result<Vec<String>, crate::git::GitError> {
        let raw = git.run_bytes(&["ls-tree", "-r", "-t", "-z", "--name-only", tree])?;
        Ok(raw
            .split(|b| *b == 0)
            .filter(|f| !f.is_empty())
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect())
    };
    let after = list(to)?;
    let mut before: Option<std::collections::HashSet<String>> = None;
    let mut failed = None;
    let pairs = case_collisions(after.iter().map(String::as_str), &added, |a, b| {
        if before.is_none() {
            match list(from) {
                Ok(names) => before = Some(names.into_iter().collect()),
                Err(e) => failed = Some(e),
            }
        }
        before
            .as_ref()
            .is_some_and(|names| names.contains(a) && names.contains(b))
    });
    if let Some(e) = failed {
        return Err(e);
    }
    for (path, other) in pairs {
        out.push(
            NameViolation {
                path,
                problem: NameProblem::Case { other },
            }
            .to_string(),
        );
    }
    Ok(out)
}

/// Streams `git diff -U0 --text` of `range` and calls `each` with every added line (its file,
/// its line in the new file, at most [`LINE_MAX`] bytes of it).
fn for_each_added_line(
    git: &Git,
    range: &[&str],
    mut each: impl FnMut(&str, u32, &[u8]),
) -> Result<(), crate::git::GitError> {
    let mut args = vec![
        "-c",
        "core.quotePath=false",
        "diff",
        "-U0",
        "--text",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
    ];
    args.extend_from_slice(range);
    let mut child = git.spawn(&args)?;
    let Some(output) = child.stdout.take() else {
        let _ = child.kill();
        let _ = git.finish(&args, child);
        return Err(git.failure(&args, "no pipe from git"));
    };
    drop(child.stdin.take());
    let mut reader = BufReader::with_capacity(64 * 1024, output);
    let mut walker = DiffWalker::default();
    let mut line = Vec::with_capacity(1024);
    let read = loop {
        match read_capped(&mut reader, &mut line, LINE_MAX) {
            Ok(false) => break Ok(()),
            Ok(true) => {
                if let Some((path, at, text)) = walker.feed(&line) {
                    each(path, at, text);
                }
            }
            Err(e) => break Err(e),
        }
    };
    drop(reader);
    let finished = git.finish(&args, child);
    read.map_err(|e| git.failure(&args, format!("reading the diff: {e}")))?;
    finished.map(|_| ())
}

/// Reads one line (without its newline) into `line`, keeping at most `cap` bytes of it and
/// skipping the rest; `false` at the end.
fn read_capped(reader: &mut impl BufRead, line: &mut Vec<u8>, cap: usize) -> std::io::Result<bool> {
    line.clear();
    let mut any = false;
    loop {
        let buf = reader.fill_buf()?;
        if buf.is_empty() {
            return Ok(any);
        }
        any = true;
        let (chunk, done) = match buf.iter().position(|b| *b == b'\n') {
            Some(i) => (&buf[..i], Some(i + 1)),
            None => (buf, None),
        };
        let room = cap.saturating_sub(line.len());
        line.extend_from_slice(&chunk[..chunk.len().min(room)]);
        match done {
            Some(used) => {
                reader.consume(used);
                return Ok(true);
            }
            None => {
                let used = buf.len();
                reader.consume(used);
            }
        }
    }
}

/// A symbolic link whose own path is denied or stands for a denied folder, that leaves the
/// tree, goes into a `.git` or to a denied path, or leads outside the allowed paths (issue 36).
fn link_violation(link: &LinkEntry, policy: &PathPolicy) -> Option<ContentViolation> {
    if let Some(pattern) = policy
        .denied_by(&link.path)
        .or_else(|| policy.shadows_denied(&link.path))
    {
        return Some(ContentViolation::LinkDenied {
            path: link.path.clone(),
            pattern: pattern.to_string(),
        });
    }
    let Some(resolved) = &link.resolved else {
        return Some(ContentViolation::LinkOutsideWorktree {
            path: link.path.clone(),
        });
    };
    let into_git = resolved.split('/').any(|c| c.eq_ignore_ascii_case(".git"));
    // A target that is a denied folder (or lies above one) stands for it as the link's own
    // path would: `x -> .github` reaches `.github/workflows/...` through `x`.
    let denied = policy
        .denied_by(resolved)
        .or_else(|| policy.shadows_denied(resolved))
        .or(into_git.then_some(".git"));
    if let Some(pattern) = denied {
        return Some(ContentViolation::LinkToDenied {
            path: link.path.clone(),
            target: resolved.clone(),
            pattern: pattern.to_string(),
        });
    }
    (!policy.permits(resolved)).then(|| ContentViolation::LinkOutsideAllowed {
        path: link.path.clone(),
        target: resolved.clone(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 36: a link is judged by its own path and by its target: a target that is denied,
    /// stands for a denied folder, or lies inside a `.git` is refused, naming both.
    #[test]
    fn links_are_refused_by_their_path_and_by_their_target() {
        let denied = [".github/workflows/**", ".opentiger/**", ".opentiger.yml"].map(String::from);
        let policy = PathPolicy::new(&["**".to_string()], &denied, 0, 0).unwrap();
        let link = |path: &str, resolved: Option<&str>| LinkEntry {
            path: path.into(),
            target: resolved.unwrap_or("../../etc").into(),
            resolved: resolved.map(String::from),
        };
        #[rustfmt::skip]
        let cases: Vec<(LinkEntry, Option<&str>)> = vec![
            (link("x", Some(".github/workflows/ci.yml")), Some("symbolic link x points to .github/workflows/ci.yml")),
            (link("x", Some(".github")), Some("(.github/workflows/**)")),
            (link("docs/conf", Some(".opentiger")), Some("(.opentiger/**)")),
            (link("cfg", Some(".opentiger.yml")), Some("(.opentiger.yml)")),
            (link("h", Some(".git/hooks/pre-commit")), Some("(.git)")),
            (link("h", Some("vendor/lib/.GIT/config")), Some("(.git)")),
            (link(".github", Some("mine")), Some("symbolic link .github stands where a denied path is")),
            (link("out", None), Some("points outside the worktree")),
            (link("docs/readme", Some("README.md")), None),
            (link("src/github", Some("src/.github-ish/a")), None),
        ];
        for (entry, says) in cases {
            let got = link_violation(&entry, &policy).map(|v| v.to_string());
            match says {
                Some(part) => assert!(
                    got.as_deref().is_some_and(|g| g.contains(part)),
                    "{} -> {:?}: {got:?}",
                    entry.path,
                    entry.resolved
                ),
                None => assert_eq!(got, None, "{} -> {:?}", entry.path, entry.resolved),
            }
        }
    }

    #[test]
    fn lines_are_read_whole_up_to_the_cap_and_cut_after_it() {
        let long = "x".repeat(100);
        let input = format!("short\n{long}\nlast");
        let mut reader = BufReader::with_capacity(8, input.as_bytes());
        let mut line = Vec::new();
        let mut got = Vec::new();
        while read_capped(&mut reader, &mut line, 10).unwrap() {
            got.push(String::from_utf8(line.clone()).unwrap());
        }
        assert_eq!(got, ["short", "xxxxxxxxxx", "last"]);
    }
}

//! Reading what an issue's text says: role lines, priority and risk labels, allowed paths,
//! dependencies, and the closing keywords of pull requests. Pure string work for [`super`].
//! Not for: what the import makes of it (`engine::import`), the spec's size cap and acceptance
//! criteria (`engine::import::spec`), or whether a path pattern works (the path policy's check,
//! passed in by the caller).

use std::collections::BTreeSet;

use crate::model::{Issue, PullRequest};
use crate::model::{Risk, Role};

/// The label that makes a backlog issue a research task (a question, not a change).
pub const RESEARCH_LABEL: &str = "opentiger:research";

/// The role the issue names, and where it says so: a label, else a `Role:` line of the body.
pub(super) fn explicit_role(issue: &Issue) -> Option<(Role, String)> {
    let from_label = issue.labels.iter().find_map(|label| {
        let word = squash(label);
        // Issue 28: `opentiger:research` rides on a backlog-labelled issue.
        if word == RESEARCH_LABEL {
            return Some((Role::Research, format!("from label `{}`", label.trim())));
        }
        let bare = word
            .strip_prefix("role:")
            .or_else(|| word.strip_prefix("agent:"))
            .unwrap_or(&word);
        let role = bare.parse::<Role>().ok()?;
        Some((role, format!("from label `{}`", label.trim())))
    });
    from_label.or_else(|| {
        issue.body.lines().find_map(|line| {
            let (key, value) = key_value(line)?;
            if !matches!(key.as_str(), "role" | "agent" | "agent role") {
                return None;
            }
            let word = value
                .split_whitespace()
                .next()?
                .trim_matches(|c: char| !c.is_alphanumeric())
                .to_lowercase();
            let role = word.parse::<Role>().ok()?;
            Some((role, format!("from a `{key}:` line of the issue body")))
        })
    })
}

/// `- **Key**: value` → (`key`, `value`): optional bullet, emphasis, `:` or full-width `：`.
pub(super) fn key_value(line: &str) -> Option<(String, &str)> {
    let line = line.trim_start();
    let line = line
        .strip_prefix(['-', '*', '+'])
        .filter(|rest| rest.starts_with(char::is_whitespace))
        .unwrap_or(line);
    let (key, value) = line.split_once([':', '：'])?;
    let key = key
        .trim_matches(|c: char| c.is_whitespace() || matches!(c, '*' | '_' | '`'))
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    // The closing `**` of `**Role:** tester`, not a `**` glob.
    let value = value.trim();
    let emphasis = value.trim_start_matches(['*', '_']);
    let value = if emphasis.starts_with(char::is_whitespace) {
        emphasis.trim_start()
    } else {
        value
    };
    Some((key, value))
}

/// A label as one lower-case word: `Priority: High` → `priority:high`.
pub(super) fn squash(label: &str) -> String {
    let word: String = label.chars().filter(|c| !c.is_whitespace()).collect();
    word.to_lowercase()
}

/// spec §6 item 4: `priority:high`/`p0`/`p1` → 90, `priority:medium`/`p2` → 60, else 40.
pub(super) fn priority(labels: &[String]) -> i64 {
    let has = |names: &[&str]| labels.iter().any(|l| names.contains(&squash(l).as_str()));
    if has(&["priority:high", "p0", "p1"]) {
        90
    } else if has(&["priority:medium", "p2"]) {
        60
    } else {
        40
    }
}

/// spec §6 item 4: critical/security/urgent → high, bug/important/fix → medium, else low. A label
/// counts by its words, so `type: bug` and `priority: critical` count and `debug` does not.
pub(super) fn risk(labels: &[String]) -> Risk {
    let words: BTreeSet<String> = labels
        .iter()
        .flat_map(|l| {
            l.split(|c: char| !c.is_alphanumeric())
                .map(str::to_lowercase)
        })
        .collect();
    let has = |names: &[&str]| names.iter().any(|n| words.contains(*n));
    if has(&["critical", "security", "urgent"]) {
        Risk::High
    } else if has(&["bug", "important", "fix"]) {
        Risk::Medium
    } else {
        Risk::Low
    }
}

/// A markdown heading's text, lower case without trailing `#`s and `:`; `None` for other lines.
pub(super) fn heading(line: &str) -> Option<String> {
    let line = line.trim();
    let hashes = line.chars().take_while(|c| *c == '#').count();
    let rest = &line[hashes..];
    if !(1..=6).contains(&hashes) || !(rest.is_empty() || rest.starts_with(char::is_whitespace)) {
        return None;
    }
    let title = rest.trim().trim_end_matches(['#', ':', '：']);
    Some(title.trim().to_lowercase())
}

/// The lines of every section whose heading is one of `names`.
pub(super) fn section_lines<'b>(body: &'b str, names: &[&str]) -> Vec<&'b str> {
    let mut inside = false;
    let mut lines = Vec::new();
    for line in body.lines() {
        if let Some(title) = heading(line) {
            inside = names.contains(&title.as_str());
        } else if inside {
            lines.push(line);
        }
    }
    lines
}

/// spec §6 item 4: the paths of the `## Allowed Paths` section (one per line or bullet) and of
/// inline `Allowed paths: a, b` lines, and a note per path dropped.
pub(super) fn allowed_paths(
    body: &str,
    pattern_problem: &dyn Fn(&str) -> Option<String>,
) -> (Vec<String>, Vec<String>) {
    let section = section_lines(body, &["allowed paths", "allowed path"])
        .into_iter()
        .map(|line| line.trim())
        .filter(|line| !line.starts_with("```") && !line.starts_with("~~~"))
        .map(|line| {
            line.strip_prefix(['-', '*', '+'])
                .map_or(line, str::trim_start)
        });
    let inline = body
        .lines()
        .filter(|l| heading(l).is_none())
        .filter_map(|line| {
            let (key, value) = key_value(line)?;
            matches!(key.as_str(), "allowed paths" | "allowed path").then_some(value)
        });
    let (mut accepted, mut dropped) = (Vec::new(), Vec::new());
    for token in section.chain(inline).flat_map(tokens) {
        match normalize_path(token, pattern_problem) {
            Ok(list) => list.into_iter().for_each(|p| {
                if !accepted.contains(&p) {
                    accepted.push(p);
                }
            }),
            Err(problem) => dropped.push(dropped_note(token, &problem)),
        }
    }
    (accepted, dropped)
}

/// The comma-separated parts of `text`, each one's backticked spans when it has any; blank
/// parts skipped.
pub(super) fn tokens(text: &str) -> Vec<&str> {
    text.split(',')
        .filter(|part| !part.trim().is_empty())
        .flat_map(|part| {
            if part.contains('`') {
                part.split('`').skip(1).step_by(2).collect()
            } else {
                vec![part]
            }
        })
        .collect()
}

/// One path as written → the patterns it stands for, or why it is refused.
pub(super) fn normalize_path(
    token: &str,
    pattern_problem: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<String>, String> {
    let quotes = ['`', '"', '\'', '“', '”', '‘', '’'];
    let mut path = token.trim().trim_matches(quotes).trim();
    while let Some(rest) = path.strip_prefix("./") {
        path = rest;
    }
    if matches!(path, "" | "." | "/") {
        return Ok(vec!["**".to_string()]);
    }
    if path.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(
            "it contains spaces; write one path per line or separate them by commas".to_string(),
        );
    }
    let bytes = path.as_bytes();
    let drive = bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':';
    if path.starts_with(['/', '\\', '~']) || drive {
        return Err("it is absolute; write it relative to the repository root".to_string());
    }
    if path.split(['/', '\\']).any(|segment| segment == "..") {
        return Err("it has a `..` segment, which would leave the repository".to_string());
    }
    if path.contains(['*', '?', '[', '{', '!', '\\']) {
        // Issue 15: checked by the matcher the runner's policy uses, so a task is never created
        // with a pattern its run would then fail on.
        return match pattern_problem(path) {
            None => Ok(vec![path.to_string()]),
            Some(problem) => Err(format!(
                "it is not a pattern the path policy can use: {problem}"
            )),
        };
    }
    let path = path.trim_end_matches('/');
    let last = path.rsplit('/').next().unwrap_or(path);
    if last.contains('.') {
        return Ok(vec![path.to_string()]);
    }
    Ok(vec![path.to_string(), format!("{path}/**")])
}

/// The note for a dropped path. The path is issue text: it is quoted only when it is made of
/// plain path characters, so no sentence of the body reaches the trusted notes.
pub(super) fn dropped_note(token: &str, problem: &str) -> String {
    let path = token.trim();
    let plain = path.len() <= 120
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "._-/\\*?~:[]{}".contains(c));
    if plain {
        format!("Allowed path `{path}` from the issue was dropped: {problem}.")
    } else {
        format!("An allowed path from the issue (not quoted here) was dropped: {problem}.")
    }
}

pub(super) fn is_word_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// Leading digits of `text` as a number, when no word character follows them.
pub(super) fn number(text: &str) -> Option<u64> {
    let end = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    if end == 0 || text[end..].starts_with(is_word_char) {
        return None;
    }
    text[..end].parse().ok()
}

/// Every `#N` of `text` that is a reference on its own (not `o/r#N`, not `#N2x`).
pub(super) fn hash_refs(text: &str) -> Vec<u64> {
    text.char_indices()
        .filter(|(i, c)| *c == '#' && !text[..*i].ends_with(|p: char| is_word_char(p) || p == '/'))
        .filter_map(|(i, _)| number(&text[i + 1..]))
        .collect()
}

/// Does `line` (lower case) contain `phrase` as whole words?
pub(super) fn has_phrase(line: &str, phrase: &str) -> bool {
    line.match_indices(phrase).any(|(i, _)| {
        !line[..i].ends_with(is_word_char) && !line[i + phrase.len()..].starts_with(is_word_char)
    })
}

/// spec §6 item 5: issues this one depends on, in order of mention.
pub(super) fn dependencies(body: &str) -> Vec<u64> {
    const SECTIONS: &[&str] = &["dependencies", "dependency", "depends on", "blocked by"];
    const PHRASES: &[&str] = &[
        "depends on",
        "blocked by",
        "requires",
        "dependency",
        "dependencies",
    ];
    let mut refs: Vec<u64> = Vec::new();
    let section = section_lines(body, SECTIONS);
    let mentions = body.lines().filter(|line| {
        let lower = line.to_lowercase();
        PHRASES.iter().any(|p| has_phrase(&lower, p))
    });
    for line in section.into_iter().chain(mentions) {
        for n in hash_refs(line) {
            if !refs.contains(&n) {
                refs.push(n);
            }
        }
    }
    refs
}

/// The lowest-numbered open PR that says it closes issue `n`.
pub(super) fn referencing_pr(n: u64, prs: &[PullRequest]) -> Option<u64> {
    prs.iter()
        .filter(|pr| pr.state.trim().eq_ignore_ascii_case("open"))
        .filter(|pr| {
            closing_references(&pr.title).contains(&n) || closing_references(&pr.body).contains(&n)
        })
        .map(|pr| pr.number)
        .min()
}

/// Issue numbers after GitHub's closing keywords: `fixes #N`, `Closes: o/r#N`,
/// `resolved https://…/issues/N` (whole words, any case).
pub(super) fn closing_references(text: &str) -> Vec<u64> {
    const KEYWORDS: &[&str] = &[
        "close", "closes", "closed", "fix", "fixes", "fixed", "resolve", "resolves", "resolved",
    ];
    let words: Vec<&str> = text.split_whitespace().collect();
    words
        .windows(2)
        .filter_map(|pair| {
            let keyword = pair[0]
                .trim_start_matches(|c: char| !c.is_alphanumeric())
                .trim_end_matches([':', '*', '_'])
                .to_lowercase();
            KEYWORDS
                .contains(&keyword.as_str())
                .then(|| reference(pair[1]))?
        })
        .collect()
}

/// The issue a closing keyword points at: `#N`, `owner/repo#N` or a URL ending in `/issues/N`.
pub(super) fn reference(word: &str) -> Option<u64> {
    let word = word.trim_start_matches(['(', '[']);
    if let Some((_, tail)) = word.rsplit_once("/issues/") {
        return number(tail);
    }
    let (repo, num) = word.split_once('#')?;
    let slug = |s: &str| {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
    };
    let repo_ok = repo.is_empty()
        || repo
            .split_once('/')
            .is_some_and(|(o, r)| slug(o) && slug(r));
    repo_ok.then(|| number(num))?
}

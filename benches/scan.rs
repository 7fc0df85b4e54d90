//! `cargo bench --bench scan [-- REPO [N]]`: the threat scan's rate of false positives on
//! ordinary changes (issue 36): the last `N` (default 200) non-merge commits of `REPO` (default
//! this repository), each scanned as a change would be — its added lines streamed through the
//! rules, with no secret known. Prints how many commits the scan would hold, by rule, each
//! held commit with its first finding, and the scan's speed.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Instant;

use opentiger::policy::DiffWalker;
use opentiger::scan::{Rule, Scanner};

fn main() {
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let repo = args
        .first()
        .cloned()
        .unwrap_or_else(|| env!("CARGO_MANIFEST_DIR").to_string());
    let n: usize = args.get(1).and_then(|n| n.parse().ok()).unwrap_or(200);
    let commits = git(
        &repo,
        &["rev-list", "--no-merges", "-n", &n.to_string(), "HEAD"],
    );
    let commits: Vec<&str> = commits.lines().collect();
    let mut held = 0;
    let mut by_rule: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut bytes = 0u64;
    let started = Instant::now();
    for commit in &commits {
        let mut scanner = Scanner::new(&[]);
        let mut child = Command::new("git")
            .args([
                "-C",
                &repo,
                "show",
                "--format=",
                "-U0",
                "--text",
                "--no-color",
                "--no-renames",
                commit,
            ])
            .stdout(Stdio::piped())
            .spawn()
            .expect("git show");
        let mut walker = DiffWalker::default();
        let mut line = Vec::new();
        let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
        while reader.read_until(b'\n', &mut line).expect("read") > 0 {
            bytes += line.len() as u64;
            if line.last() == Some(&b'\n') {
                line.pop();
            }
            if let Some((path, at, text)) = walker.feed(&line) {
                scanner.added_line(path, at, text);
            }
            line.clear();
        }
        child.wait().expect("git show");
        let findings: Vec<_> = scanner
            .findings()
            .into_iter()
            .filter(|f| f.rule != Rule::EncodedSecret)
            .collect();
        if let Some(first) = findings.first() {
            held += 1;
            let mut rules: Vec<&str> = findings.iter().map(|f| f.rule.word()).collect();
            rules.dedup();
            for r in &rules {
                *by_rule.entry(r).or_default() += 1;
            }
            let subject = git(&repo, &["log", "-1", "--format=%s", commit]);
            println!(
                "held {} {:.60} — {first} [{}]",
                &commit[..10],
                subject.trim(),
                rules.join(", ")
            );
        }
    }
    let took = started.elapsed();
    println!(
        "\n{repo}: {held} of {} commits held ({:.1}%); by rule: {by_rule:?}",
        commits.len(),
        100.0 * held as f64 / commits.len().max(1) as f64
    );
    println!(
        "scanned {:.1} MiB of diffs in {:.2} s ({:.1} MiB/s, git show included)",
        bytes as f64 / 1048576.0,
        took.as_secs_f64(),
        bytes as f64 / 1048576.0 / took.as_secs_f64()
    );
}

fn git(repo: &str, args: &[&str]) -> String {
    let out = Command::new("git")
        .args(["-C", repo])
        .args(args)
        .output()
        .expect("git");
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

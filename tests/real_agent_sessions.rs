//! Opt-in: whole ticks with the real agent CLIs against a local stand-in model server
//! (`tests/common/model_server.rs`), networkless (issue 18 item 7).
//!
//! ```sh
//! OPENTIGER_REAL_CLI_TESTS=1 cargo test --test suite real_agent_sessions:: -- --ignored --nocapture
//! ```
//!
//! `scripts/real-clis.sh` installs the pinned CLIs (cached). For each CLI and each scenario the
//! stand-in plays — a tool call that writes a file then an answer, HTTP 429 with a long
//! `retry-after`, HTTP 401, a tool call on every turn — a local-git repository runs its worker as
//! that CLI through `opentiger tick`, and the test checks what opentiger recorded. The CLIs reach
//! the stand-in as real runs reach a provider: through their door on opentiger's proxy (issue
//! 37), the providers' hosts mapped to the stand-in by `OPENTIGER_EGRESS_RESOLVE`, the key held
//! by the runner. Each CLI's
//! stdout is kept (a `tee` between opentiger and the CLI) and printed; with
//! `OPENTIGER_REAL_CLI_RECORD=<dir>` it is also written to `<dir>/<cli>/<scenario>.out`, which
//! is how the fixtures under `tests/fixtures/agents/` were recorded.

use crate::common;

use std::fs;
use std::path::{Path, PathBuf};

use common::model_server::{self, ModelServer, Scenario};
use common::{minute, real_clis, GitRepo, Setup};

/// Names (of variables, or of files under the home) and their values.
type Pairs = Vec<(&'static str, String)>;

/// A worker run as the state records it.
#[derive(Clone, Debug)]
struct RunRow {
    failure_code: Option<String>,
    error: Option<String>,
    cost_usd: f64,
    input_tokens: i64,
    output_tokens: i64,
}

/// One CLI as a worker: how it is configured and pointed at the stand-in.
struct Cli {
    executor: &'static str,
    program: &'static str,
    model: &'static str,
    /// Its key (set to a fake value; the stand-in checks none).
    key: &'static str,
    /// Variables it is given besides its door's, and files it reads from its home: (path under
    /// home, text).
    point: fn(base: &str) -> (Pairs, Pairs),
    /// The scenarios it is run with.
    scenarios: &'static [Scenario],
}

const ALL: &[Scenario] = &[
    Scenario::Success,
    Scenario::RateLimited,
    Scenario::Unauthorized,
    Scenario::ToolLoop,
];

const CLAUDE: Cli = Cli {
    executor: "claude-code",
    program: "claude",
    model: "claude-sonnet-4-5",
    key: "ANTHROPIC_API_KEY",
    point: |_| (Vec::new(), Vec::new()),
    scenarios: ALL,
};

/// codex has no turn cap of its own: opentiger counts its tool calls against `max_turns`.
const CODEX: Cli = Cli {
    executor: "codex",
    program: "codex",
    model: "gpt-5-codex",
    key: "OPENAI_API_KEY",
    point: |_| (Vec::new(), Vec::new()),
    scenarios: ALL,
};

const OPENCODE: Cli = Cli {
    executor: "opencode",
    program: "opencode",
    model: "anthropic/claude-sonnet-4-5",
    key: "ANTHROPIC_API_KEY",
    point: |_| {
        let config = "{\"$schema\": \"https://opencode.ai/config.json\", \"autoupdate\": false, \"share\": \"disabled\"}".to_string();
        (Vec::new(), vec![(".config/opencode/opencode.json", config)])
    },
    scenarios: ALL,
};

/// aider makes no tool calls (it edits by SEARCH/REPLACE blocks in its answer), so it has no
/// turn cap to test.
const AIDER: Cli = Cli {
    executor: "aider",
    program: "aider",
    model: "anthropic/claude-sonnet-4-5",
    key: "ANTHROPIC_API_KEY",
    point: |_| (Vec::new(), Vec::new()),
    scenarios: &[
        Scenario::Success,
        Scenario::RateLimited,
        Scenario::Unauthorized,
    ],
};

/// What one session left behind.
struct Session {
    g: GitRepo,
    id: String,
    server: ModelServer,
    /// The worker runs, oldest first.
    runs: Vec<RunRow>,
    output: String,
}

impl Session {
    /// The task the session added (none for the planner's).
    fn task(&self) -> serde_json::Value {
        if self.id.is_empty() {
            return serde_json::Value::Null;
        }
        self.g.task_json(&self.id)
    }

    fn describe(&self) -> String {
        format!(
            "task: {}\nruns: {:?}\nrequests:\n{}\nCLI output:\n{}",
            self.task(),
            self.runs,
            model_server::describe(&self.server.seen()),
            self.output
        )
    }
}

fn scenario_name(s: Scenario) -> &'static str {
    match s {
        Scenario::Success => "success",
        Scenario::RateLimited => "rate_limited_429",
        Scenario::Unauthorized => "unauthorized_401",
        Scenario::ToolLoop => "tool_loop",
        Scenario::Reply(_) => "reply",
    }
}

/// Which agent the real CLI plays in a session.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Part {
    /// The worker, ticked with its key.
    Worker,
    /// The worker, ticked without its key: refused before a run.
    WorkerNoKey,
    /// The judge, after a scripted worker wrote the file.
    Judge,
    /// The planner, run by `opentiger plan` on a requirement.
    Planner,
}

/// A one-line verdict longer than aider's 80 columns (issue 39: it wrapped it).
const VERDICT: &str = "{\"verdict\": \"approve\", \"summary\": \"The change adds sub.txt with a correct sub(a, b) function, as the task asked; nothing else changed.\", \"findings\": []}";
/// A one-line plan of one task, also longer than 80 columns.
const PLAN: &str = "{\"tasks\": [{\"key\": \"sub\", \"title\": \"Add sub to the calculator\", \"goal\": \"sub.txt holds a sub(a, b) function that returns a - b\", \"allowed_paths\": [\"sub.txt\"]}]}";

/// A repository whose worker is `cli`, run through `tee` into `record`, ticked until its task
/// leaves the queue for good (at most `ticks` ticks, a minute apart).
fn session(cli: &Cli, bins: &[PathBuf], scenario: Scenario, ticks: u32) -> Session {
    session_as(cli, bins, scenario, ticks, Part::Worker)
}

/// As [`session`], with the real CLI playing `part`. No `filesystem: none` anywhere: the
/// default sandbox, plus the recording's folder writable.
fn session_as(cli: &Cli, bins: &[PathBuf], scenario: Scenario, ticks: u32, part: Part) -> Session {
    let server = ModelServer::start(scenario);
    let g = GitRepo::with(Setup::default());
    let home = g.tools_path().join("home");
    let (vars, files) = (cli.point)(&server.base_url());
    for (path, text) in &files {
        let path = home.join(path);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }
    fs::create_dir_all(&home).unwrap();
    // The CLI runs under the default sandbox (Landlock, a private home, its own network): its
    // recording goes to the one folder the configuration adds to what it may write.
    let record_dir = g.tools_path().join("record");
    fs::create_dir_all(&record_dir).unwrap();
    let record = record_dir.join("stdout");
    let tee = g.tools_path().join("tee.sh");
    fs::write(
        &tee,
        format!(
            "#!/bin/bash\nset -o pipefail\n\"$@\" | tee -a '{}'\n",
            record.display()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&tee, fs::Permissions::from_mode(0o755)).unwrap();
    let passed: Vec<&str> = vars.iter().map(|(k, _)| *k).collect();
    let role = match part {
        Part::Worker | Part::WorkerNoKey => "worker",
        Part::Judge => "judge",
        Part::Planner => "planner",
    };
    let agent = format!(
        "  {role}:\n    executor: {}\n    command: [\"{}\", \"{}\"]\n    model: {}\n    max_turns: 3\n    timeout_minutes: 2\n    env_passthrough: [{}]\n    pricing: {{ input_per_mtok: 1.25, cached_input_per_mtok: 0.125, output_per_mtok: 10 }}\n",
        cli.executor,
        tee.display(),
        real_clis::program(bins, cli.program).display(),
        cli.model,
        passed.join(", ")
    );
    let path = g.path().join(".opentiger.yml");
    let scripted = |name: &str| {
        format!(
            "  {name}:\n    command: [\"{}\"]\n",
            g.tools_path().join(format!("{name}.sh")).display()
        )
    };
    let config = fs::read_to_string(&path).unwrap();
    let config = match part {
        Part::Worker | Part::WorkerNoKey => config.replace("  worker:\n", &agent),
        Part::Judge | Part::Planner => {
            assert!(config.contains(&scripted(role)), "{config}");
            config.replace(&scripted(role), &agent)
        }
    };
    if part == Part::Planner {
        g.repo.file("docs/requirement.md", "# Calculator\n\n## Goal\nA sub(a, b) function in sub.txt.\n\n## Allowed Paths\n- `sub.txt`\n");
        common::git(g.path(), &["add", "-A"]);
        common::git(g.path(), &["commit", "-q", "-m", "requirement"]);
    }
    let config = config.replace(
        "sandbox:\n  filesystem: none\n",
        &format!("sandbox:\n  writable: [\"{}\"]\n", record_dir.display()),
    );
    assert!(!config.contains("filesystem: none"), "{config}");
    fs::write(path, config).unwrap();
    if part != Part::Worker && part != Part::WorkerNoKey {
        // A scripted worker writes the file; the real CLI reviews or plans.
        g.agent(&format!(
            "#!/bin/sh\nprintf '{}' > {}\n",
            model_server::CONTENT.replace('\n', "\\n"),
            model_server::FILE
        ));
    }
    let id = if part == Part::Planner {
        String::new()
    } else {
        g.repo.add(&[
            "--title",
            "Add sub",
            "--goal",
            "Write sub.txt with a sub(a, b) function.",
        ])
    };
    let path_var = bins
        .iter()
        .map(|b| b.display().to_string())
        .chain(["/usr/local/bin", "/usr/bin", "/bin"].map(String::from))
        .collect::<Vec<_>>()
        .join(":");
    let addr = server.base_url().trim_start_matches("http://").to_string();
    let mut env: Vec<(&str, String)> = vec![
        ("HOME", home.display().to_string()),
        ("PATH", path_var),
        (
            "OPENTIGER_EGRESS_RESOLVE",
            format!("api.anthropic.com={addr},api.openai.com={addr}"),
        ),
    ];
    if part != Part::WorkerNoKey {
        env.push((cli.key, "sk-standin-not-a-key".to_string()));
    }
    env.extend(vars);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut last = String::new();
    if part == Part::Planner {
        let out = g.repo.run_env(&minute(0), &["plan"], &env);
        last = format!("plan: exit {}\n{}\n{}", out.code, out.stdout, out.stderr);
    }
    for m in 0..ticks {
        let out = g.tick_env(&minute(m * 3), &env);
        last = format!("tick: exit {}\n{}\n{}", out.code, out.stdout, out.stderr);
        if part == Part::WorkerNoKey {
            break;
        }
        assert!(out.code == 0, "{last}");
        let active = g.repo.run(&["status", "--json"]).ok().json()["tasks"]
            .as_array()
            .map_or(0, Vec::len);
        if active == 0 && m > 0 {
            break;
        }
    }
    let runs = worker_runs(g.path(), &id);
    let output = fs::read_to_string(&record).unwrap_or_default();
    if let Ok(dir) = std::env::var("OPENTIGER_REAL_CLI_RECORD") {
        let dir = Path::new(&dir).join(cli.executor);
        fs::create_dir_all(&dir).unwrap();
        fs::write(
            dir.join(format!("{}.out", scenario_name(scenario))),
            &output,
        )
        .unwrap();
    }
    Session {
        g,
        id,
        server,
        runs,
        output: format!("{output}\n{last}"),
    }
}

fn worker_runs(repo: &Path, id: &str) -> Vec<RunRow> {
    let db = rusqlite::Connection::open(repo.join(".opentiger/state.sqlite")).unwrap();
    let mut q = db
        .prepare(
            "SELECT failure_code, error, cost_usd, input_tokens, output_tokens FROM runs \
             WHERE task_id = ?1 AND role = 'worker' ORDER BY started_at, rowid",
        )
        .unwrap();
    let rows = q
        .query_map([id], |r| {
            Ok(RunRow {
                failure_code: r.get(0)?,
                error: r.get(1)?,
                cost_usd: r.get(2)?,
                input_tokens: r.get(3)?,
                output_tokens: r.get(4)?,
            })
        })
        .unwrap();
    rows.map(Result::unwrap).collect()
}

/// Runs `cli` through every scenario it has and checks what opentiger recorded.
fn check(cli: &Cli) {
    let Some(bins) = real_clis::install() else {
        return;
    };
    for &scenario in cli.scenarios {
        let ticks = if scenario == Scenario::Success { 6 } else { 1 };
        let s = session(cli, &bins, scenario, ticks);
        eprintln!(
            "=== {} {}:\n{}",
            cli.executor,
            scenario_name(scenario),
            s.describe()
        );
        assert!(!s.server.seen().is_empty(), "the stand-in was never asked");
        let first = s
            .runs
            .first()
            .cloned()
            .unwrap_or_else(|| panic!("no run\n{}", s.describe()));
        let RunRow {
            failure_code: code,
            error,
            cost_usd: cost,
            input_tokens: input,
            output_tokens: output,
        } = first;
        let error = error.unwrap_or_default();
        let task = s.task();
        match scenario {
            Scenario::Success => {
                assert_eq!(code, None, "{}", s.describe());
                assert_eq!(task["status"], "done", "{}", s.describe());
                assert_eq!(
                    s.g.file_on_main(model_server::FILE).as_deref(),
                    Some(model_server::CONTENT),
                    "{}",
                    s.describe()
                );
                assert!(input > 0 && output > 0, "tokens: {}", s.describe());
                assert!(cost > 0.0, "cost: {}", s.describe());
            }
            Scenario::RateLimited => {
                assert_eq!(code.as_deref(), Some("quota_failure"), "{}", s.describe());
                assert!(error.contains("quota or rate limit"), "{}", s.describe());
                // Issue 37: opentiger's proxy saw the 429 and kept the provider's retry time.
                assert!(error.contains("retry in 3600s"), "{}", s.describe());
                let parked = s.g.repo.run(&["status", "--json"]).ok().json();
                assert!(
                    parked["parked_executors"]
                        .to_string()
                        .contains(cli.executor),
                    "{parked}"
                );
            }
            Scenario::Unauthorized => {
                assert_eq!(code.as_deref(), Some("agent_config"), "{}", s.describe());
                assert_eq!(
                    (task["status"].as_str(), task["block_reason"].as_str()),
                    (Some("blocked"), Some("awaiting_human")),
                    "{}",
                    s.describe()
                );
                assert!(
                    task["reason"].as_str().unwrap().contains("fix: set"),
                    "{}",
                    s.describe()
                );
            }
            Scenario::Reply(_) => panic!("a judge's or planner's scenario, not a worker's"),
            Scenario::ToolLoop => {
                assert!(
                    error.contains("the agent used all its turns (agents.worker.max_turns = 3)"),
                    "{}",
                    s.describe()
                );
            }
        }
    }
}

/// Issue 18: a CLI given no key is not started: the tick says so with the fix, and the model
/// is never asked.
fn check_no_key(cli: &Cli, bins: &[PathBuf]) {
    let s = session_as(cli, bins, Scenario::Success, 1, Part::WorkerNoKey);
    eprintln!("=== {} no key:\n{}", cli.executor, s.describe());
    assert!(s.server.seen().is_empty(), "{}", s.describe());
    assert!(s.runs.is_empty(), "{}", s.describe());
    assert!(s.output.contains("tick: exit 2"), "{}", s.describe());
    assert!(s.output.contains(cli.key), "{}", s.describe());
}

/// Issue 39: the real CLI as the judge, the stand-in answering one verdict line longer than 80
/// columns, no terminal and no `COLUMNS` set: the verdict is understood and the task merges.
fn check_judge(cli: &Cli, bins: &[PathBuf]) {
    assert!(std::env::var_os("COLUMNS").is_none(), "run without COLUMNS");
    let s = session_as(cli, bins, Scenario::Reply(VERDICT), 4, Part::Judge);
    eprintln!("=== {} judge:\n{}", cli.executor, s.describe());
    assert!(
        !s.server.seen().is_empty(),
        "the judge never asked: {}",
        s.describe()
    );
    assert_eq!(s.task()["status"], "done", "{}", s.describe());
    assert_eq!(
        s.g.file_on_main(model_server::FILE).as_deref(),
        Some(model_server::CONTENT),
        "{}",
        s.describe()
    );
}

/// Issue 39: the real CLI as the planner, the stand-in answering one plan line: the plan is
/// understood (its task made), and the task it planned merges.
fn check_planner(cli: &Cli, bins: &[PathBuf]) {
    let s = session_as(cli, bins, Scenario::Reply(PLAN), 4, Part::Planner);
    eprintln!("=== {} planner:\n{}", cli.executor, s.describe());
    let all =
        s.g.repo
            .run(&["task", "list", "--all", "--json"])
            .ok()
            .json();
    let planned = all
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["title"] == "Add sub to the calculator")
        .unwrap_or_else(|| panic!("no planned task in {all}\n{}", s.describe()))
        .clone();
    assert_eq!(planned["status"], "done", "{planned}\n{}", s.describe());
    assert_eq!(
        s.g.file_on_main(model_server::FILE).as_deref(),
        Some(model_server::CONTENT)
    );
}

#[test]
#[ignore = "installs the real agent CLIs; set OPENTIGER_REAL_CLI_TESTS=1 and pass --ignored"]
fn every_cli_without_a_key_is_refused_before_a_run() {
    let Some(bins) = real_clis::install() else {
        return;
    };
    for cli in [&CLAUDE, &CODEX, &OPENCODE, &AIDER] {
        check_no_key(cli, &bins);
    }
}

#[test]
#[ignore = "installs the real agent CLIs; set OPENTIGER_REAL_CLI_TESTS=1 and pass --ignored"]
fn every_cli_as_the_judge_merges_on_a_one_line_verdict() {
    let Some(bins) = real_clis::install() else {
        return;
    };
    for cli in [&AIDER, &CODEX, &CLAUDE, &OPENCODE] {
        check_judge(cli, &bins);
    }
}

#[test]
#[ignore = "installs the real agent CLIs; set OPENTIGER_REAL_CLI_TESTS=1 and pass --ignored"]
fn aider_as_the_planner_is_understood() {
    let Some(bins) = real_clis::install() else {
        return;
    };
    check_planner(&AIDER, &bins);
}

#[test]
#[ignore = "installs the real agent CLIs; set OPENTIGER_REAL_CLI_TESTS=1 and pass --ignored"]
fn claude_against_the_stand_in() {
    check(&CLAUDE);
}

#[test]
#[ignore = "installs the real agent CLIs; set OPENTIGER_REAL_CLI_TESTS=1 and pass --ignored"]
fn codex_against_the_stand_in() {
    check(&CODEX);
}

#[test]
#[ignore = "installs the real agent CLIs; set OPENTIGER_REAL_CLI_TESTS=1 and pass --ignored"]
fn opencode_against_the_stand_in() {
    check(&OPENCODE);
}

#[test]
#[ignore = "installs the real agent CLIs; set OPENTIGER_REAL_CLI_TESTS=1 and pass --ignored"]
fn aider_against_the_stand_in() {
    check(&AIDER);
}

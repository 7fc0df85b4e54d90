//! Opt-in: whole ticks with the real agent CLIs against a local stand-in model server
//! (`tests/common/model_server.rs`), networkless (issue 18 item 7).
//!
//! ```sh
//! OPENTIGER_REAL_CLI_TESTS=1 cargo test --test real_agent_sessions -- --ignored --nocapture
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

mod common;

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

/// codex has no turn cap of its own (`max_turns` does not apply; the timeout bounds a run).
const CODEX: Cli = Cli {
    executor: "codex",
    program: "codex",
    model: "gpt-5-codex",
    key: "OPENAI_API_KEY",
    point: |_| (Vec::new(), Vec::new()),
    scenarios: &[
        Scenario::Success,
        Scenario::RateLimited,
        Scenario::Unauthorized,
    ],
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
    fn task(&self) -> serde_json::Value {
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
    }
}

/// A repository whose worker is `cli`, run through `tee` into `record`, ticked until its task
/// leaves the queue for good (at most `ticks` ticks, a minute apart).
fn session(cli: &Cli, bins: &[PathBuf], scenario: Scenario, ticks: u32) -> Session {
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
    let worker = format!(
        "  worker:\n    executor: {}\n    command: [\"{}\", \"{}\"]\n    model: {}\n    max_turns: 3\n    timeout_minutes: 2\n    env_passthrough: [{}]\n    pricing: {{ input_per_mtok: 1.25, cached_input_per_mtok: 0.125, output_per_mtok: 10 }}\n",
        cli.executor,
        tee.display(),
        real_clis::program(bins, cli.program).display(),
        cli.model,
        passed.join(", ")
    );
    let path = g.path().join(".opentiger.yml");
    let config = fs::read_to_string(&path)
        .unwrap()
        .replace("  worker:\n", &worker)
        .replace(
            "sandbox:\n  filesystem: none\n",
            &format!("sandbox:\n  writable: [\"{}\"]\n", record_dir.display()),
        );
    assert!(!config.contains("filesystem: none"), "{config}");
    fs::write(path, config).unwrap();
    let id = g.repo.add(&[
        "--title",
        "Add sub",
        "--goal",
        "Write sub.txt with a sub(a, b) function.",
    ]);
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
        (cli.key, "sk-standin-not-a-key".to_string()),
        (
            "OPENTIGER_EGRESS_RESOLVE",
            format!("api.anthropic.com={addr},api.openai.com={addr}"),
        ),
    ];
    env.extend(vars);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    for m in 0..ticks {
        let out = g.tick_env(&minute(m * 3), &env);
        assert!(out.code == 0, "tick: {}\n{}", out.stdout, out.stderr);
        let task = g.task_json(&id);
        if task["status"] != "queued" && task["status"] != "running" && m > 0 {
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
        output,
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

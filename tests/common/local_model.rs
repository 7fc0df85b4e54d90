//! docs/agents.md's local-model recipe (the block between `<!-- local-model:start -->` and
//! `<!-- local-model:end -->`), run as written with bash in a fresh `my-project`, for the
//! opt-in tests that serve a model on 127.0.0.1:8080 (`tests/local_model.rs` with a stand-in,
//! `tests/real_model.rs` with SmolLM2); and what opentiger's proxy metered, read from the state.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::Out;

/// Where the recipe's model is served, and its name there.
pub const ADDR: &str = "127.0.0.1:8080";
pub const MODEL: &str = "local-model";
/// The file the recipe's task asks for.
pub const FILE: &str = "sub.py";

/// The shell block of the recipe, as written.
pub fn recipe() -> String {
    super::marked_block(include_str!("../../docs/agents.md"), "local-model")
}

/// Runs the recipe with `AGENT=agent` in `dir`/my-project (a git repository with a commit on
/// `main`), `opentiger` and `bins` first on PATH, `dir`/home the runner's home, no model key
/// in the environment; returns the project and the output.
pub fn run_recipe(dir: &Path, agent: &str, bins: &[PathBuf]) -> (PathBuf, Out) {
    let project = super::my_project(dir);
    let out = recipe_command(dir, agent, bins, &recipe())
        .output()
        .expect("bash");
    (project, Out::from(out))
}

/// `script` as the recipe runs (see [`run_recipe`]), in `dir`.
pub fn recipe_command(dir: &Path, agent: &str, bins: &[PathBuf], script: &str) -> Command {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let link = bin.join("opentiger");
    if !link.exists() {
        std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_opentiger"), &link).unwrap();
    }
    let home = dir.join("home");
    std::fs::create_dir_all(&home).unwrap();
    let mut path: Vec<String> = vec![bin.display().to_string()];
    path.extend(bins.iter().map(|b| b.display().to_string()));
    path.extend(["/usr/local/bin", "/usr/bin", "/bin"].map(String::from));
    let mut command = Command::new("bash");
    command
        .args(["-euo", "pipefail", "-c", script])
        .current_dir(dir)
        .env_clear()
        .env("PATH", path.join(":"))
        .env("HOME", &home)
        .env("AGENT", agent)
        .envs([
            ("GIT_AUTHOR_NAME", "t"),
            ("GIT_AUTHOR_EMAIL", "t@t"),
            ("GIT_COMMITTER_NAME", "t"),
            ("GIT_COMMITTER_EMAIL", "t@t"),
        ]);
    command
}

/// What opentiger's proxy metered over every run and review of `project`: input and output
/// tokens, answers, and USD; with a line per run for the person reading.
pub fn metered(project: &Path) -> ((u64, u64, u64, f64), Vec<String>) {
    let file = project.join(".opentiger/state.sqlite");
    if !file.exists() {
        return (
            (0, 0, 0, 0.0),
            vec![format!("no state: {}", file.display())],
        );
    }
    let db = rusqlite::Connection::open(file).unwrap();
    let mut rows = Vec::new();
    let mut all = Vec::new();
    let mut q = db
        .prepare(
            "SELECT role, status, failure_code, error, executor, cost_usd, metered, refused FROM runs ORDER BY started_at, rowid",
        )
        .unwrap();
    let runs = q
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, Option<String>>(3)?,
                r.get::<_, Option<String>>(4)?,
                r.get::<_, f64>(5)?,
                r.get::<_, Option<String>>(6)?,
                r.get::<_, String>(7)?,
            ))
        })
        .unwrap();
    for run in runs {
        let (role, status, code, error, executor, cost, m, refused) = run.unwrap();
        rows.push(format!(
            "run {role} {executor:?} {status} {code:?} ${cost} metered {m:?} refused {refused} error {error:?}"
        ));
        all.extend(m);
    }
    let mut q = db
        .prepare("SELECT role, executor, metered, refused FROM agent_spend ORDER BY at, id")
        .unwrap();
    let spends = q
        .query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, Option<String>>(1)?,
                r.get::<_, Option<String>>(2)?,
                r.get::<_, String>(3)?,
            ))
        })
        .unwrap();
    for spend in spends {
        let (role, executor, m, refused) = spend.unwrap();
        rows.push(format!(
            "spend {role} {executor:?} metered {m:?} refused {refused}"
        ));
        all.extend(m);
    }
    let mut total = (0, 0, 0, 0.0);
    for m in all {
        let m: serde_json::Value = serde_json::from_str(&m).unwrap();
        total.3 += m["usd"].as_f64().unwrap_or(0.0);
        for tokens in m["models"].as_object().into_iter().flat_map(|o| o.values()) {
            total.0 += tokens["input"].as_u64().unwrap_or(0);
            total.1 += tokens["output"].as_u64().unwrap_or(0);
            total.2 += tokens["answers"].as_u64().unwrap_or(0);
        }
    }
    (total, rows)
}

/// `path` on `project`'s `main`, if it is there.
pub fn on_main(project: &Path, path: &str) -> Option<String> {
    let out = Command::new("git")
        .current_dir(project)
        .args(["show", &format!("main:{path}")])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

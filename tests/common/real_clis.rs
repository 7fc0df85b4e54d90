//! The real agent CLIs for the opt-in tests (`tests/real_agent_clis.rs`,
//! `tests/real_agent_sessions.rs`): installed by `scripts/real-clis.sh` at the pinned versions
//! into `OPENTIGER_REAL_CLI_PREFIX` (default `~/.cache/opentiger/real-clis`).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The variable that turns the opt-in tests on.
pub const ENABLE: &str = "OPENTIGER_REAL_CLI_TESTS";

/// The folders holding the real CLIs' programs, installed when missing; `None` (and a note on
/// stderr) when the opt-in tests are not turned on.
pub fn install() -> Option<Vec<PathBuf>> {
    if std::env::var(ENABLE).as_deref() != Ok("1") {
        eprintln!("skipped: set {ENABLE}=1 to install and run the real agent CLIs");
        return None;
    }
    Some(install_now())
}

/// The folders holding the real CLIs' programs, installed when missing (for a test another
/// variable turns on: the real model's).
pub fn install_now() -> Vec<PathBuf> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/real-clis.sh");
    let out = Command::new(&script)
        .output()
        .expect("run scripts/real-clis.sh");
    assert!(
        out.status.success(),
        "scripts/real-clis.sh failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect()
}

/// The full path of `program` in one of `bins`.
pub fn program(bins: &[PathBuf], program: &str) -> PathBuf {
    bins.iter()
        .map(|b| b.join(program))
        .find(|p| p.exists())
        .unwrap_or_else(|| panic!("{program} was not installed in {bins:?}"))
}

//! The GitHub Action's scripts (scripts/action/*.sh), exercised by tests/action/tick_test.sh
//! with fake runner files and both a fake and the real `opentiger`. Needs bash and jq (GitHub's
//! runners have both); without them the test says so and passes, except under CI, where
//! `.ci/run` installs them.

use std::path::Path;
use std::process::Command;

fn have(program: &str) -> bool {
    Command::new(program)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

#[test]
fn action_scripts_turn_a_tick_into_outputs_annotations_and_a_summary() {
    for tool in ["bash", "jq", "git"] {
        if !have(tool) {
            let why = format!("`{tool}` is not installed: the action script test cannot run");
            if std::env::var_os("CI").is_some() {
                panic!("{why}; CI must run it (.ci/run installs jq)");
            }
            eprintln!("skipped: {why}");
            return;
        }
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/action/tick_test.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(env!("CARGO_BIN_EXE_opentiger"))
        // The runner's own variables, if this runs inside GitHub Actions, must not leak in.
        .env_remove("GITHUB_OUTPUT")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_ACTIONS")
        .env_remove("OPENTIGER_GITHUB_TOKEN")
        .env_remove("OPENTIGER_CONFIG")
        .env_remove("OPENTIGER_REPO")
        .env_remove("OPENTIGER_NOW")
        .env_remove("GITHUB_RUN_ID")
        .output()
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "tests/action/tick_test.sh failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains(" passed, 0 failed"),
        "no tally:\n{stdout}\n{stderr}"
    );
    println!("{stdout}");
}

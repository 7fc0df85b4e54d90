//! An agent asking for 3 GiB of memory, 2,000 processes, a 6 GiB file in its workspace or in
//! its temp folder: each is stopped at its limit (`limits.run`, set low here so the tests stay
//! quick), the run fails naming the limit and its setting, and the plain task beside it lands.
//! On this machine memory and processes are held by rlimits (no delegated cgroup v2); the
//! cgroup's file protocol is `sandbox::cgroup`'s unit tests.

use super::Case;

const LIMITS: &str =
    "limits:\n  run:\n    memory_mb: 512\n    processes: 128\n    file_mb: 64\n    tmp_mb: 32\n";

/// Without any namespace (`sandbox.network.isolation: landlock`, `sandbox.view: none`) the
/// process limit counts from what the user runs already (`RLIMIT_NPROC` counts every process of
/// the user there): the fork bomb stops all the same and the plain task lands.
const NO_NAMESPACE: &str = "limits:\n  run:\n    processes: 128\nsandbox:\n  filesystem: none\n  view: none\n  network:\n    isolation: landlock\n";

/// Runs `attack` as the agent of the ATTACK task: its run fails saying it was stopped at the
/// limit `setting`, and the plain task lands.
fn stopped_at(attack: &str, setting: &str) {
    stopped_in(LIMITS, attack, setting);
}

fn stopped_in(config: &'static str, attack: &str, setting: &str) {
    let case = Case::new(config);
    case.agent(attack);
    let (id, _) = case.tasks();
    let said = case.until_plain_lands();
    let runs = case.jail.runs(&id);
    let run = runs.last().expect("the attack ran");
    let error = run["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("the agent was stopped at its")
            && error.contains(setting)
            && error.contains("fix: raise"),
        "{error}\n{said}"
    );
    assert_eq!(run["failure_code"], "execution_failed", "{run}");
    assert!(!case.landed("attacked.txt"));
}

#[test]
fn three_gib_of_memory_are_refused_at_the_memory_limit() {
    stopped_at(
        "python3 -c 'b = bytearray(3 << 30); b[-1] = 1' || exit 1",
        "its memory limit (limits.run.memory_mb = 512 MiB",
    );
}

#[test]
fn two_thousand_processes_stop_at_the_process_limit() {
    stopped_at(
        "sh -c 'i=0; while [ $i -lt 2000 ]; do sleep 30 >/dev/null 2>&1 & i=$((i+1)); done' 2>&1 | tail -3; exit 3",
        "its process limit (limits.run.processes = 128",
    );
}

#[test]
fn without_namespaces_the_process_limit_counts_from_what_the_user_runs() {
    stopped_in(
        NO_NAMESPACE,
        "sh -c 'i=0; while [ $i -lt 2000 ]; do sleep 30 >/dev/null 2>&1 & i=$((i+1)); done' 2>&1 | tail -3; exit 3",
        "its process limit (limits.run.processes = 128",
    );
}

#[test]
fn a_six_gib_file_stops_at_the_file_size_limit() {
    stopped_at(
        "head -c 6G /dev/zero > big.bin || exit 1",
        "its file size limit (limits.run.file_mb = 64 MiB",
    );
}

#[test]
fn a_six_gib_file_in_the_temp_folder_stops_at_its_size() {
    stopped_at(
        "head -c 6G /dev/zero > \"$TMPDIR/big\" || exit 1",
        "its temp folder limit (limits.run.tmp_mb = 32 MiB",
    );
}

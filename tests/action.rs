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

/// install.sh against a fake release served over HTTP from a temp folder: a good asset, a bad
/// checksum, a missing asset, the wrong architecture (tests/action/install_test.sh).
#[test]
fn install_sh_installs_only_checked_release_assets_and_builds_only_without_one() {
    for tool in ["bash", "curl", "tar", "sha256sum"] {
        if !have(tool) {
            let why = format!("`{tool}` is not installed: the install.sh test cannot run");
            if std::env::var_os("CI").is_some() {
                panic!("{why}; CI must run it");
            }
            eprintln!("skipped: {why}");
            return;
        }
    }
    let served = tempfile::tempdir().expect("temp dir");
    let base_url = serve_files(served.path().to_path_buf());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/action/install_test.sh");
    let out = Command::new("bash")
        .arg(&script)
        .arg(served.path())
        .arg(&base_url)
        .env_remove("GITHUB_OUTPUT")
        .env_remove("GITHUB_STEP_SUMMARY")
        .env_remove("GITHUB_PATH")
        .env_remove("VERSION")
        .env_remove("GH_TOKEN")
        .output()
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "tests/action/install_test.sh failed:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains(" passed, 0 failed"),
        "no tally:\n{stdout}\n{stderr}"
    );
    println!("{stdout}");
}

/// A static file server on 127.0.0.1 for GETs under `root` (404 for anything else), like a
/// release download host; it lives as long as the test process. Returns its base URL.
fn serve_files(root: std::path::PathBuf) -> String {
    use std::io::{BufRead, BufReader, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut reader = BufReader::new(&stream);
            let mut request = String::new();
            if reader.read_line(&mut request).is_err() {
                continue;
            }
            // The headers, up to the blank line; nothing in them matters here.
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 0) && line.trim() != "" {
                line.clear();
            }
            let path = request.split_whitespace().nth(1).unwrap_or("/");
            let file = (!path.contains(".."))
                .then(|| root.join(path.trim_start_matches('/')))
                .filter(|p| p.is_file())
                .and_then(|p| std::fs::read(p).ok());
            let mut stream = &stream;
            let _ = match file {
                Some(body) => stream
                    .write_all(
                        format!(
                            "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                            body.len()
                        )
                        .as_bytes(),
                    )
                    .and_then(|()| stream.write_all(&body)),
                None => stream.write_all(
                    b"HTTP/1.1 404 Not Found\r\ncontent-length: 9\r\nconnection: close\r\n\r\nNot Found",
                ),
            };
        }
    });
    url
}

/// actionlint checks workflows, not action metadata: this checks what it would miss in
/// action.yml — every run step has a shell and calls a script that exists, every `inputs.X`
/// is declared, every `steps.ID` exists, and every output the action promises is written by the
/// script of its step.
#[test]
fn action_yml_refers_only_to_what_it_declares() {
    use std::collections::BTreeMap;

    #[derive(serde::Deserialize)]
    struct Action {
        inputs: BTreeMap<String, serde_json::Value>,
        outputs: BTreeMap<String, Output>,
        runs: Runs,
    }
    #[derive(serde::Deserialize)]
    struct Output {
        value: String,
    }
    #[derive(serde::Deserialize)]
    struct Runs {
        using: String,
        steps: Vec<Step>,
    }
    #[derive(serde::Deserialize)]
    struct Step {
        id: Option<String>,
        run: Option<String>,
        shell: Option<String>,
        uses: Option<String>,
        #[serde(rename = "if")]
        condition: Option<String>,
        #[serde(default)]
        env: BTreeMap<String, String>,
        #[serde(default)]
        with: BTreeMap<String, String>,
    }

    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(root.join("action.yml")).unwrap();
    let action: Action = serde_saphyr::from_str(&text).unwrap();
    assert_eq!(action.runs.using, "composite");

    // `prefix.NAME` references (NAME: letters, digits, `-`, `_`) in a text.
    fn names<'t>(text: &'t str, prefix: &str) -> Vec<&'t str> {
        text.match_indices(prefix)
            .map(|(i, _)| {
                let rest = &text[i + prefix.len()..];
                let end = rest
                    .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
                    .unwrap_or(rest.len());
                &rest[..end]
            })
            .collect()
    }

    let ids: Vec<&str> = action
        .runs
        .steps
        .iter()
        .filter_map(|s| s.id.as_deref())
        .collect();
    let scripts = |id: &str| -> String {
        let step = action
            .runs
            .steps
            .iter()
            .find(|s| s.id.as_deref() == Some(id))
            .unwrap();
        let run = step.run.as_deref().unwrap_or_default();
        let script = run
            .split_whitespace()
            .find_map(|w| w.trim_matches('"').strip_prefix("$GITHUB_ACTION_PATH/"))
            .unwrap_or_else(|| panic!("step {id} runs no script of the action: {run}"));
        std::fs::read_to_string(root.join(script)).unwrap()
    };
    for step in &action.runs.steps {
        let mut texts: Vec<&str> = step
            .env
            .values()
            .chain(step.with.values())
            .map(String::as_str)
            .collect();
        texts.extend(step.condition.as_deref());
        texts.extend(step.run.as_deref());
        if let Some(run) = &step.run {
            assert_eq!(
                step.shell.as_deref(),
                Some("bash"),
                "composite run steps need a shell: {run}"
            );
            assert!(
                !run.contains("${{"),
                "expressions go through env, not into the script: {run}"
            );
        } else {
            assert!(step.uses.is_some(), "a step either runs or uses");
        }
        for text in texts {
            for input in names(text, "inputs.") {
                assert!(
                    action.inputs.contains_key(input),
                    "undeclared input {input}"
                );
            }
            for id in names(text, "steps.") {
                assert!(ids.contains(&id), "no step {id}");
            }
            for name in names(text, "steps.download.outputs.")
                .into_iter()
                .chain(names(text, "steps.build.outputs."))
                .chain(names(text, "steps.installed.outputs."))
            {
                if name == "cache-hit" {
                    continue;
                }
                let script = scripts("download");
                assert!(
                    script.contains(&format!("output {name} ")),
                    "install.sh never writes {name}"
                );
            }
        }
    }
    // Every output is the tick's (tick.sh), except the installed binary's path (install.sh).
    for (name, output) in &action.outputs {
        let step = if name == "bin" { "installed" } else { "tick" };
        assert_eq!(
            output.value,
            format!("${{{{ steps.{step}.outputs.{name} }}}}")
        );
        assert!(
            scripts(step).contains(&format!("output {name} ")),
            "the script of step {step} never writes the output {name}"
        );
    }
}

/// drop-sudo.sh with a fake `sudo` and `id` (tests/action/drop_sudo_test.sh): the hosted rule
/// is removed and the Docker socket closed, nothing to drop is fine, a rule it cannot find or a
/// job running as root fails the step.
#[test]
fn drop_sudo_removes_the_rule_and_fails_when_sudo_survives() {
    if !have("bash") {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the drop-sudo test"
        );
        eprintln!("skipped: `bash` is not installed");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/action/drop_sudo_test.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "tests/action/drop_sudo_test.sh failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// userns.sh with a fake `sudo` and `sysctl` (tests/action/userns_test.sh): Ubuntu 24.04's
/// AppArmor restriction and Debian's switch are lifted with sudo before drop-sudo; nothing is
/// done where namespaces are allowed; without sudo the step warns that UDP and DNS stay open.
#[test]
fn userns_lifts_the_namespace_restriction_while_sudo_is_at_hand() {
    if !have("bash") {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI must run the userns test"
        );
        eprintln!("skipped: `bash` is not installed");
        return;
    }
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/action/userns_test.sh");
    let out = Command::new("bash")
        .arg(&script)
        .output()
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && stdout.contains(" passed, 0 failed"),
        "tests/action/userns_test.sh failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

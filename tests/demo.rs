//! README's first command: `opentiger demo` runs the whole loop on the built-in sample.

#[test]
fn readme_first_command_is_the_demo_and_it_converges() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    assert!(
        readme.contains("cargo run -- demo"),
        "README's first command changed: update this test"
    );
    let keep = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .args(["demo", "--keep"])
        .arg(keep.path())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for needle in [
        "Every task is done",
        "Verification failed at",
        "retry 1/3",
        "changes requested: mul is only tested with positive numbers",
        "AutoFix 1/3: Add multiplication",
        "done through",
        "[opentiger] Document the calculator",
    ] {
        assert!(
            text.contains(needle),
            "`{needle}` missing from the demo report:\n{text}"
        );
    }
    // The kept repository is a real one: its main has every change, its state says done.
    let lib = std::fs::read_to_string(keep.path().join("calc/src/lib.rs")).unwrap();
    assert!(
        lib.contains("a - b") && lib.contains("multiplies_negative_numbers"),
        "{lib}"
    );
    let status = std::process::Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .args(["--repo"])
        .arg(keep.path().join("calc"))
        .args(["status", "--json", "--all"])
        .output()
        .unwrap();
    let json: serde_json::Value = serde_json::from_slice(&status.stdout).unwrap();
    let tasks = json["tasks"].as_array().unwrap();
    assert_eq!(tasks.len(), 4, "three tasks and one AutoFix");
    assert!(tasks.iter().all(|t| t["status"] == "done"), "{json}");
}

//! scripts/install.sh, the one-line install of a release binary (issue 40), run offline
//! against a fake release laid out like GitHub's downloads under a `file://` URL: the latest
//! and a named release install a binary that runs; a checksum that does not match, an asset
//! SHA256SUMS does not list and a release without SHA256SUMS install nothing.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

const TARGETS: [&str; 4] = [
    "x86_64-unknown-linux-musl",
    "aarch64-unknown-linux-musl",
    "x86_64-apple-darwin",
    "aarch64-apple-darwin",
];

fn have(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum")
        .arg(path)
        .output()
        .expect("sha256sum");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_string()
}

/// A release in `dir` (`<releases>/download/<tag>/`, and `latest/download/` for the latest):
/// one archive per target holding a stand-in `opentiger` that prints `version`, and SHA256SUMS.
fn release(releases: &Path, tag: &str, version: &str, latest: bool) {
    let dir = if latest {
        releases.join("latest/download")
    } else {
        releases.join("download").join(tag)
    };
    let build = tempfile::tempdir().expect("temp dir");
    let bin = build.path().join("opentiger");
    std::fs::write(&bin, format!("#!/bin/sh\necho 'opentiger {version}'\n")).unwrap();
    std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    let mut sums = String::new();
    for target in TARGETS {
        let asset = format!("opentiger-{target}.tar.gz");
        let ok = Command::new("tar")
            .arg("-czf")
            .arg(dir.join(&asset))
            .arg("-C")
            .arg(build.path())
            .arg("opentiger")
            .status()
            .expect("tar")
            .success();
        assert!(ok);
        sums.push_str(&format!("{}  {asset}\n", sha256(&dir.join(&asset))));
    }
    std::fs::write(dir.join("SHA256SUMS"), sums).unwrap();
}

/// Runs the script as `curl … | sh -s -- <args>` would, with the releases at `releases`.
fn install(releases: &Path, home: &Path, args: &[&str]) -> (bool, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install.sh");
    let out = Command::new("sh")
        .arg("-s")
        .arg("--")
        .args(args)
        .stdin(std::fs::File::open(script).expect("the script"))
        .env(
            "OPENTIGER_RELEASES",
            format!("file://{}", releases.display()),
        )
        .env("HOME", home)
        .env_remove("OPENTIGER_VERSION")
        .env_remove("OPENTIGER_INSTALL_DIR")
        .output()
        .expect("run sh");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    (out.status.success(), text)
}

fn version_of(bin: &Path) -> String {
    let out = Command::new(bin).arg("--version").output().expect("run it");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

#[test]
fn the_install_script_installs_only_a_checked_release_binary() {
    for tool in ["curl", "tar", "sha256sum"] {
        if !have(tool) {
            let why = format!("`{tool}` is not installed: the install script test cannot run");
            assert!(std::env::var_os("CI").is_none(), "{why}; CI must run it");
            eprintln!("skipped: {why}");
            return;
        }
    }
    let root = tempfile::tempdir().expect("temp dir");
    let (releases, home) = (root.path().join("releases"), root.path().join("home"));
    std::fs::create_dir_all(&home).unwrap();
    release(&releases, "v9.9.9", "9.9.9", true);
    release(&releases, "v1.2.3", "1.2.3", false);

    // The latest, into ~/.local/bin.
    let (ok, text) = install(&releases, &home, &[]);
    assert!(ok, "{text}");
    let installed = home.join(".local/bin/opentiger");
    assert_eq!(version_of(&installed), "opentiger 9.9.9", "{text}");
    assert!(text.contains("matches SHA256SUMS"), "{text}");
    assert!(text.contains("is not on your PATH"), "{text}");

    // A named release, into a given folder.
    let dir = root.path().join("bin");
    let (ok, text) = install(
        &releases,
        &home,
        &["--version", "v1.2.3", "--dir", dir.to_str().unwrap()],
    );
    assert!(ok, "{text}");
    assert_eq!(version_of(&dir.join("opentiger")), "opentiger 1.2.3");

    // A checksum that does not match: refused, nothing installed, the old binary kept.
    let sums = releases.join("download/v1.2.3/SHA256SUMS");
    let good = std::fs::read_to_string(&sums).unwrap();
    let tampered: String = good
        .lines()
        .map(|l| format!("{}{}\n", "0".repeat(64), &l[64..]))
        .collect();
    std::fs::write(&sums, tampered).unwrap();
    let fresh = root.path().join("fresh");
    let (ok, text) = install(
        &releases,
        &home,
        &["--version", "v1.2.3", "--dir", fresh.to_str().unwrap()],
    );
    assert!(!ok, "{text}");
    assert!(
        text.contains("does not match the release's SHA256SUMS")
            && text.contains("nothing installed"),
        "{text}"
    );
    assert!(!fresh.join("opentiger").exists(), "{text}");

    // SHA256SUMS without this machine's asset, and a release without SHA256SUMS.
    std::fs::write(&sums, "0000  something-else.tar.gz\n").unwrap();
    let (ok, text) = install(
        &releases,
        &home,
        &["--version", "v1.2.3", "--dir", fresh.to_str().unwrap()],
    );
    assert!(!ok && text.contains("lists no opentiger-"), "{text}");
    std::fs::remove_file(&sums).unwrap();
    let (ok, text) = install(
        &releases,
        &home,
        &["--version", "v1.2.3", "--dir", fresh.to_str().unwrap()],
    );
    assert!(!ok && text.contains("has no SHA256SUMS"), "{text}");
    assert!(!fresh.join("opentiger").exists(), "{text}");
    assert_eq!(version_of(&installed), "opentiger 9.9.9", "untouched");

    // A release that does not exist, and a mistyped option.
    let (ok, text) = install(&releases, &home, &["--version", "v0.0.0"]);
    assert!(!ok && text.contains("could not download"), "{text}");
    let (ok, text) = install(&releases, &home, &["--versoin", "v1"]);
    assert!(!ok && text.contains("unknown option `--versoin`"), "{text}");
}

/// The script downloads from the repository Cargo.toml names (the one place naming it).
#[test]
fn the_install_script_names_the_project_s_repository() {
    let script =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/install.sh"))
            .unwrap();
    let repository = env!("CARGO_PKG_REPOSITORY");
    assert!(
        script.contains(&format!("{repository}/releases}}")),
        "scripts/install.sh must download from {repository}/releases"
    );
    let raw = repository.replace("https://github.com/", "https://raw.githubusercontent.com/");
    assert!(script.contains(&format!("{raw}/main/scripts/install.sh")));
}

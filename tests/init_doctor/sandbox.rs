//! `doctor` on the sandbox: what each network setting leaves open with a network fix, and the
//! writable folders (with `task show` listing every check).

use super::*;

/// A new repository in `dir`, `init` run in local-git mode, its agent the scripted one.
pub(super) fn initialised_with_scripted_agent(dir: &std::path::Path) -> std::path::PathBuf {
    let repo = dir.join("r");
    std::fs::create_dir(&repo).unwrap();
    git(&repo, &["init", "-q", "-b", "main"]);
    git(&repo, &["commit", "-q", "--allow-empty", "-m", "initial"]);
    opentiger(&repo, &["--mode", "local-git", "init"], &[]).ok();
    use_scripted_agent(&repo);
    repo
}

/// Issue 37: `doctor` says what confines the agents' network with each setting, and when
/// nothing does, the fix it gives is about the network (not the filesystem's).
#[test]
fn doctor_says_what_each_network_setting_leaves_open_with_a_network_fix() {
    let dir = tempfile::tempdir().unwrap();
    let repo = initialised_with_scripted_agent(dir.path());
    let config = repo.join(".opentiger.yml");
    let base = std::fs::read_to_string(&config).unwrap();

    let with = |isolation: &str| {
        std::fs::write(
            &config,
            format!("{base}\nsandbox:\n  network:\n    isolation: {isolation}\n"),
        )
        .unwrap();
        opentiger(&repo, &["doctor"], &[]).stdout
    };

    let open = with("none");
    let warned = lines_at(&open, "warn");
    assert!(
        warned
            .iter()
            .any(|l| l.contains("network: sandbox.network.isolation is none")),
        "{open}"
    );
    assert!(
        open.contains("set `sandbox.network.isolation: auto`"),
        "the fix is the network's: {open}"
    );

    // Landlock's TCP rules (Linux 6.7+) say what they leave open; a kernel without them is a
    // refusal whose fix is the network's too.
    let landlock = with("landlock");
    assert!(
        landlock.contains("UDP, DNS and raw sockets are not blocked")
            || landlock.contains("has no TCP rules"),
        "{landlock}"
    );
    assert!(
        !landlock.contains("sandbox.filesystem: landlock`"),
        "{landlock}"
    );
}

/// Issue 39: `doctor` lists the folders `sandbox.writable` opens, and `task show` every check
/// that runs on the task's change with where it comes from.
#[test]
fn doctor_lists_writable_folders_and_task_show_every_check() {
    let dir = tempfile::tempdir().unwrap();
    let repo = initialised_with_scripted_agent(dir.path());
    let path = repo.join(".opentiger.yml");
    let shared = dir.path().join("shared-cache");
    let config = format!(
        "mode: local-git\nagents:\n  default:\n    executor: scripted\nsandbox:\n  writable: [\"{}\"]\nverify:\n  commands: [\"./check.sh\"]\n  by_role:\n    worker: [\"./lint.sh\"]\n  when_changed:\n    - paths: [\"web/**\"]\n      commands: [\"npm test\"]\n",
        shared.display()
    );
    std::fs::write(&path, config).unwrap();
    // (It fails for the scripts this test does not commit: only the listing matters here.)
    let doctor = opentiger(&repo, &["doctor"], &[]);
    let want = format!(
        "sandbox.writable opens 1 folder(s) to every agent and check: {}",
        shared.display()
    );
    assert!(doctor.stdout.contains(&want), "{}", doctor.stdout);

    let added = opentiger(
        &repo,
        &[
            "task",
            "add",
            "--title",
            "t",
            "--goal",
            "g",
            "--command",
            "cargo test",
        ],
        &[],
    )
    .ok();
    let id = added
        .stdout
        .split_whitespace()
        .find(|w| w.len() == 12)
        .unwrap()
        .to_string();
    let shown = opentiger(&repo, &["task", "show", &id], &[]).ok().stdout;
    for line in [
        "  checks:   cargo test  (the task's commands)",
        "            ./check.sh  (verify.commands)",
        "            ./lint.sh   (verify.by_role.worker)",
        "            npm test    (verify.when_changed[0], when a change touches web/**)",
    ] {
        assert!(shown.contains(line), "{line:?} not in\n{shown}");
    }
    let json = opentiger(&repo, &["task", "show", &id, "--json"], &[])
        .ok()
        .json();
    assert_eq!(json["checks"][1]["from"], "verify.commands", "{json}");
}

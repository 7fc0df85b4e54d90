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

/// Issue 51: the demo prints each tick as it happens. Its header for tick 2 is read while
/// `main` still has only the sample's commit — tick 3 merges the first change — so tick 1's
/// lines arrived before any later tick ran (a buffered report would come after every merge).
#[test]
fn the_demo_streams_tick_by_tick() {
    use std::io::BufRead;
    let keep = tempfile::tempdir().unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .args(["demo", "--keep"])
        .arg(keep.path())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let commits_on_main = || {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(keep.path().join("calc"))
            .args(["rev-list", "--count", "main"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    };
    let mut seen = Vec::new();
    let mut at_tick_two = None;
    for line in std::io::BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        if line.starts_with("── tick 2 ") {
            at_tick_two = Some(commits_on_main());
        }
        seen.push(line);
    }
    assert!(child.wait().unwrap().success(), "{seen:#?}");
    let tick_one = seen
        .iter()
        .position(|l| l.starts_with("── tick 1 "))
        .unwrap();
    let tick_two = seen
        .iter()
        .position(|l| l.starts_with("── tick 2 "))
        .unwrap();
    assert!(
        seen[tick_one..tick_two]
            .iter()
            .any(|l| l.contains("Add subtraction")),
        "tick 1 said what it ran: {seen:#?}"
    );
    assert_eq!(
        at_tick_two.as_deref(),
        Some("1"),
        "tick 1's lines came before any merge: {seen:#?}"
    );
    assert_eq!(commits_on_main(), "4", "the demo merged its three changes");
}

/// `cargo` in `dir` as a person's shell runs it: without the variables cargo gives a test
/// (CARGO_PKG_NAME, CARGO_MANIFEST_DIR…), which build scripts such as ring's watch, so cargo
/// would take them for a change and build those crates again. The shell's own (CARGO_HOME,
/// CARGO_INCREMENTAL…) stay, as they were when the tests were built.
fn cargo_as_a_shell_runs_it(dir: &std::path::Path) -> std::process::Command {
    const SET_FOR_A_TEST: [&str; 7] = [
        "CARGO_PKG_",
        "CARGO_MANIFEST_",
        "CARGO_CRATE_",
        "CARGO_BIN_",
        "CARGO_PRIMARY_PACKAGE",
        "CARGO_TARGET_TMPDIR",
        "CARGO_RUSTC_CURRENT_DIR",
    ];
    let mut cargo = std::process::Command::new("cargo");
    cargo.current_dir(dir);
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy();
        if name == "CARGO" || SET_FOR_A_TEST.iter().any(|p| name.starts_with(p)) {
            cargo.env_remove(&*name);
        }
    }
    cargo
}

/// Issue 51: the README's command that puts the binary on PATH after the demo copies the build
/// the demo ran — cargo compiles nothing — and `opentiger` is then found on PATH.
#[test]
fn the_readme_puts_the_demo_build_on_path() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let command = readme
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with("cargo install --locked --offline --debug")
        })
        .expect("README says how to put the demo's build on PATH")
        .split('#')
        .next()
        .unwrap()
        .trim();
    assert_eq!(command, opentiger::demo::INSTALL_THIS_BUILD);
    let bin = std::path::Path::new(env!("CARGO_BIN_EXE_opentiger"));
    let debug = bin.parent().unwrap();
    if !debug.ends_with("debug") {
        eprintln!("skipped: the tests were built with another profile than dev ({debug:?})");
        return;
    }
    // The tests' own target folder stands for the README's `target` (they may be elsewhere).
    let args: Vec<std::ffi::OsString> = command
        .split_whitespace()
        .skip(1)
        .map(|a| match a {
            "target" => debug.parent().unwrap().as_os_str().to_owned(),
            _ => a.into(),
        })
        .collect();
    let install_root = tempfile::tempdir().unwrap();
    let out = cargo_as_a_shell_runs_it(root)
        .args(&args)
        .env("CARGO_INSTALL_ROOT", install_root.path())
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{said}");
    assert!(!said.contains("Compiling"), "a second build: {said}");
    let found = std::process::Command::new("/bin/sh")
        .args(["-c", "command -v opentiger && opentiger --version"])
        .env("PATH", install_root.path().join("bin"))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&found.stdout);
    assert!(found.status.success(), "{text}");
    assert!(text.contains("opentiger 0.1.0"), "{text}");
}

/// What the kept sample holds at one moment: its refs and the bytes of its state folder (the
/// state file and its journal). A tick that does anything changes one of them.
fn sample_now(calc: &std::path::Path) -> Vec<u8> {
    let refs = std::process::Command::new("git")
        .arg("-C")
        .arg(calc)
        .args(["for-each-ref", "--format=%(refname) %(objectname)"])
        .output()
        .unwrap();
    let mut seen = refs.stdout;
    let mut files: Vec<_> = std::fs::read_dir(calc.join(".opentiger"))
        .map(|dir| dir.map(|e| e.unwrap().path()).collect())
        .unwrap_or_default();
    files.sort();
    for file in files {
        seen.extend(file.to_string_lossy().as_bytes());
        seen.extend(std::fs::read(&file).unwrap_or_default());
    }
    seen
}

/// Issue 51, for every tick: the demo hands out a tick's lines once that tick has done its
/// work and before the next one starts — the sample is the same when tick N's lines go out as
/// when tick N+1's header does, which comes before tick N+1 runs (the command writes and
/// flushes each piece as it gets it: `the_demo_streams_tick_by_tick`).
#[test]
fn each_ticks_lines_go_out_before_the_next_tick_starts() {
    let keep = tempfile::tempdir().unwrap();
    let calc = keep.path().join("calc");
    let base = opentiger::tick::Context::load(&opentiger::tick::ContextOptions {
        repo: keep.path().to_path_buf(),
        ..Default::default()
    })
    .unwrap();
    let mut pieces: Vec<(String, Vec<u8>)> = Vec::new();
    let report = opentiger::demo::run(&base, Some(keep.path()), &mut |text| {
        pieces.push((text.to_string(), sample_now(&calc)));
        Ok(())
    })
    .unwrap();
    assert!(report.converged, "{}", report.text);
    let headers: Vec<usize> = (0..pieces.len())
        .filter(|&i| pieces[i].0.starts_with("\n── tick "))
        .collect();
    assert_eq!(headers.len(), report.ticks as usize, "one header a tick");
    let mut ticks_that_worked = 0;
    for (n, &header) in headers.iter().enumerate() {
        let (lines, after) = &pieces[header + 1];
        assert!(
            lines.starts_with("  "),
            "tick {}'s lines follow its header: {pieces:?}",
            n + 1
        );
        if !lines.contains("(nothing to do") {
            ticks_that_worked += 1;
            assert_ne!(
                &pieces[header].1,
                after,
                "tick {}'s lines went out after its work",
                n + 1
            );
        }
        let next = &pieces[header + 2];
        assert_eq!(
            &next.1,
            after,
            "nothing of what follows tick {} had happened when its lines went out: {}",
            n + 1,
            next.0
        );
    }
    assert!(ticks_that_worked >= 3, "{}", report.text);
}

/// The README's count of the crates a first build compiles is the dependency graph's: every
/// package cargo builds for `cargo run` (normal and build dependencies, opentiger itself).
#[test]
fn the_readme_counts_the_crates_a_first_build_compiles() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let said: usize = readme
        .split_once(" crates (")
        .and_then(|(before, _)| before.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .expect("README says how many crates the first build compiles: `N crates (`");
    let out = cargo_as_a_shell_runs_it(root)
        .args(["tree", "--offline", "--locked", "--prefix", "none"])
        .args(["-e", "normal,build"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `serde v1.0.0 (*)` repeats a package shown before; a package is its name and version.
    let packages: std::collections::BTreeSet<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| {
            let mut words = l.split_whitespace();
            Some(format!("{} {}", words.next()?, words.next()?))
        })
        .collect();
    assert_eq!(
        said,
        packages.len(),
        "README says {said} crates; the graph has {}: {packages:?}",
        packages.len()
    );
}

//! The state branch as chunks: a save writes what changed, old single-blob states load and are
//! migrated, concurrent savers never both win, and a damaged state is an error, never a wrong
//! state.

use crate::common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::{Arc, Barrier};

use common::{bare_origin, clone, git};
use opentiger::statebranch::{LoadError, SaveError, StateRef};

/// A SQLite file of about 1.3 MiB (some 20 chunks): 3000 rows of 400 bytes.
fn sqlite_file(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute_batch("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)")
        .unwrap();
    let tx = conn.unchecked_transaction().unwrap();
    for i in 0..3000 {
        tx.execute(
            "INSERT INTO t (id, body) VALUES (?1, ?2)",
            rusqlite::params![i, format!("{i:05}").repeat(80)],
        )
        .unwrap();
    }
    tx.commit().unwrap();
}

/// Changes one row, far from the start of the file.
fn change_one_row(path: &Path) {
    let conn = rusqlite::Connection::open(path).unwrap();
    conn.execute(
        "UPDATE t SET body = ?1 WHERE id = 2500",
        ["changed".repeat(50)],
    )
    .unwrap();
}

/// How many objects of `kind` the repository holds, and how many loose objects.
fn objects(repo: &Path, kind: &str) -> (usize, usize) {
    let all = git(
        repo,
        &[
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objecttype)",
        ],
    );
    let count = all.lines().filter(|l| *l == kind).count();
    let loose = git(repo, &["count-objects", "-v"])
        .lines()
        .find_map(|l| l.strip_prefix("count: ").map(|n| n.parse().unwrap()))
        .unwrap();
    (count, loose)
}

#[test]
fn a_save_after_one_row_changes_writes_at_most_three_blobs() {
    let dir = tempfile::tempdir().unwrap();
    let origin = bare_origin(dir.path());
    let a = dir.path().join("a");
    clone(&origin, &a);
    let state = StateRef::new(&a, "opentiger/state", "origin", 100);
    let file = dir.path().join("state.sqlite");
    sqlite_file(&file);

    let first = state.load_into(&file.with_extension("unused")).unwrap();
    let saved = state.save_file(&first, &file, "# s\n", "first").unwrap();
    assert!(saved.chunks_total >= 15, "{saved:?}");
    assert_eq!(
        saved.chunks_written, saved.chunks_total,
        "a first save writes all"
    );

    let work = dir.path().join("work.sqlite");
    let loaded = state.load_into(&work).unwrap();
    assert_eq!(std::fs::read(&work).unwrap(), std::fs::read(&file).unwrap());
    change_one_row(&work);
    let (local_blobs, _) = objects(&a, "blob");
    let (origin_blobs, _) = objects(&origin, "blob");
    let (_, local_loose) = objects(&a, "blob");
    let saved = state.save_file(&loaded, &work, "# s\n", "one row").unwrap();

    // The SQLite header page, the row's page, and the manifest.
    let local_new = objects(&a, "blob").0 - local_blobs;
    let pushed = objects(&origin, "blob").0 - origin_blobs;
    eprintln!("one row changed: {local_new} new blobs, {pushed} pushed: {saved:?}");
    assert!(local_new <= 3, "{local_new} new blobs: {saved:?}");
    assert!(pushed <= 3, "{pushed} blobs pushed: {saved:?}");
    assert!(saved.chunks_written <= 2, "{saved:?}");
    // Written straight into a pack.
    assert_eq!(objects(&a, "blob").1, local_loose, "no new loose objects");

    // Another clone reads exactly the changed file.
    let b = dir.path().join("b");
    clone(&origin, &b);
    let theirs = StateRef::new(&b, "opentiger/state", "origin", 100)
        .load()
        .unwrap();
    assert_eq!(theirs.bytes, std::fs::read(&work).unwrap());
    assert_eq!(theirs.commit.as_deref(), Some(saved.commit.as_str()));
}

/// The tree a save made before chunks: `state.sqlite` and `STATE.md`, committed to `reference`.
fn single_blob_state(repo: &Path, reference: &str, bytes: &[u8]) -> String {
    let hash = |input: &[u8]| {
        let mut child = Command::new("git")
            .current_dir(repo)
            .args(["hash-object", "-w", "--stdin"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        use std::io::Write;
        child.stdin.take().unwrap().write_all(input).unwrap();
        let out = child.wait_with_output().unwrap();
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    let db = hash(bytes);
    let md = hash(b"# old summary\n");
    let listing = format!("100644 blob {db}\tstate.sqlite\n100644 blob {md}\tSTATE.md\n");
    let mut mktree = Command::new("git")
        .current_dir(repo)
        .arg("mktree")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    mktree
        .stdin
        .take()
        .unwrap()
        .write_all(listing.as_bytes())
        .unwrap();
    let tree = String::from_utf8(mktree.wait_with_output().unwrap().stdout).unwrap();
    let commit = git(repo, &["commit-tree", tree.trim(), "-m", "old save"]);
    git(repo, &["update-ref", reference, &commit]);
    commit
}

#[test]
fn a_single_blob_state_loads_and_is_migrated_by_its_first_save() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    let file = repo.join("old.sqlite");
    sqlite_file(&file);
    let old = std::fs::read(&file).unwrap();
    let reference = "refs/opentiger/state";
    single_blob_state(repo, reference, &old);

    let state = StateRef::new(repo, reference, "origin", 100);
    let loaded = state.load().unwrap();
    assert_eq!(loaded.bytes, old, "the old state loads as it was");
    let saved = state.save(&loaded, &old, "# s\n", "migrate").unwrap();
    assert_eq!(saved.chunks_written, saved.chunks_total);
    let listing = git(repo, &["ls-tree", "--name-only", reference]);
    assert_eq!(listing, "STATE.md\nchunks\nmanifest", "migrated to chunks");
    assert_eq!(state.load().unwrap().bytes, old);
    assert_eq!(
        state.history_len().unwrap(),
        2,
        "the migration is a save like any other"
    );
}

#[test]
fn a_state_written_by_the_previous_binary_is_read_and_migrated_by_the_commands() {
    let repo = common::TestRepo::new();
    repo.file(
        ".opentiger.yml",
        "mode: local-git\nstate:\n  store: branch\n  branch: refs/opentiger/state\n",
    );
    git(repo.path(), &["init", "-q", "-b", "main"]);
    // A state made by the file store, then stored the old way.
    let scratch = common::TestRepo::new();
    scratch.add(&[
        "--title",
        "Kept across the migration",
        "--goal",
        "g",
        "--id",
        "kept",
    ]);
    let old = std::fs::read(scratch.state_path()).unwrap();
    single_blob_state(repo.path(), "refs/opentiger/state", &old);

    let status = repo.run(&["status", "--json", "--all"]).ok().json();
    assert_eq!(status["tasks"][0]["id"], "kept", "{status}");
    repo.add(&["--title", "Added after", "--goal", "g", "--id", "after"]);
    let listing = git(
        repo.path(),
        &["ls-tree", "--name-only", "refs/opentiger/state"],
    );
    assert_eq!(listing, "STATE.md\nchunks\nmanifest");
    let status = repo.run(&["status", "--json", "--all"]).ok().json();
    let ids: Vec<&str> = status["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids.len(), 2, "{status}");
    assert!(ids.contains(&"kept") && ids.contains(&"after"), "{ids:?}");
}

#[test]
fn concurrent_savers_never_both_win() {
    let dir = tempfile::tempdir().unwrap();
    let origin = bare_origin(dir.path());
    let file = dir.path().join("seed.sqlite");
    sqlite_file(&file);
    let seed = dir.path().join("seed");
    clone(&origin, &seed);
    let state = StateRef::new(&seed, "opentiger/state", "origin", 100);
    let empty = state.load().unwrap();
    state
        .save(&empty, &std::fs::read(&file).unwrap(), "# s\n", "seed")
        .unwrap();

    const SAVERS: usize = 4;
    for round in 0..3 {
        let barrier = Arc::new(Barrier::new(SAVERS));
        let savers: Vec<_> = (0..SAVERS)
            .map(|i| {
                let repo = dir.path().join(format!("r{round}-{i}"));
                clone(&origin, &repo);
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    let state = StateRef::new(&repo, "opentiger/state", "origin", 100);
                    let work = repo.join("work.sqlite");
                    let loaded = state.load_into(&work).unwrap();
                    let conn = rusqlite::Connection::open(&work).unwrap();
                    conn.execute(
                        "UPDATE t SET body = ?1 WHERE id = ?2",
                        rusqlite::params![format!("saver {i}"), (i * 700) as i64],
                    )
                    .unwrap();
                    drop(conn);
                    // Everyone has loaded the same commit before anyone saves.
                    barrier.wait();
                    match state.save_file(&loaded, &work, "# s\n", &format!("saver {i}")) {
                        Ok(_) => Some(i),
                        Err(SaveError::Conflict(_)) => None,
                        Err(e) => panic!("saver {i}: {e}"),
                    }
                })
            })
            .collect();
        let winners: Vec<usize> = savers
            .into_iter()
            .filter_map(|s| s.join().unwrap())
            .collect();
        assert_eq!(
            winners.len(),
            1,
            "round {round}: exactly one wins: {winners:?}"
        );
        // The state is the winner's, whole.
        let now = state.load().unwrap();
        let copy = dir.path().join(format!("check{round}.sqlite"));
        std::fs::write(&copy, &now.bytes).unwrap();
        let conn = rusqlite::Connection::open(&copy).unwrap();
        let body: String = conn
            .query_row(
                "SELECT body FROM t WHERE id = ?1",
                [(winners[0] * 700) as i64],
                |r| r.get(0),
            )
            .unwrap();
        assert_eq!(body, format!("saver {}", winners[0]));
        let ok: String = conn
            .query_row("PRAGMA integrity_check", [], |r| r.get(0))
            .unwrap();
        assert_eq!(ok, "ok");
    }
}

/// Replaces (or with `None` removes) one path in the tree of `reference`'s commit, as a new
/// commit on it.
fn tamper(repo: &Path, reference: &str, path: &str, blob: Option<&str>) {
    let index = repo.join("tamper-index");
    let with_index = |args: &[&str]| {
        let out = Command::new("git")
            .current_dir(repo)
            .env("GIT_INDEX_FILE", &index)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "{args:?}: {out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    };
    with_index(&["read-tree", reference]);
    match blob {
        Some(blob) => with_index(&[
            "update-index",
            "--cacheinfo",
            &format!("100644,{blob},{path}"),
        ]),
        None => with_index(&["update-index", "--force-remove", path]),
    };
    let tree = with_index(&["write-tree"]);
    let commit = with_index(&["commit-tree", &tree, "-p", reference, "-m", "tampered"]);
    git(repo, &["update-ref", reference, &commit]);
    std::fs::remove_file(&index).unwrap();
}

#[test]
fn a_truncated_or_missing_chunk_is_damage_naming_the_ref_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path();
    git(repo, &["init", "-q", "-b", "main"]);
    std::fs::write(
        repo.join(".opentiger.yml"),
        "mode: local-git\nstate:\n  store: branch\n  branch: refs/opentiger/state\n",
    )
    .unwrap();
    let reference = "refs/opentiger/state";
    let state = StateRef::new(repo, reference, "origin", 100);
    let file = repo.join("s.sqlite");
    sqlite_file(&file);
    let empty = state.load().unwrap();
    state
        .save(&empty, &std::fs::read(&file).unwrap(), "# s\n", "good")
        .unwrap();
    let good = git(repo, &["rev-parse", reference]);

    // A chunk cut short, a chunk gone, and a chunk swapped for another of the right length.
    let short = {
        let chunk = git(repo, &["rev-parse", &format!("{reference}:chunks/0000/03")]);
        let content = Command::new("git")
            .current_dir(repo)
            .args(["cat-file", "blob", &chunk])
            .output()
            .unwrap()
            .stdout;
        std::fs::write(repo.join("short"), &content[..1000]).unwrap();
        git(repo, &["hash-object", "-w", "short"])
    };
    let other = git(repo, &["rev-parse", &format!("{reference}:chunks/0000/05")]);
    for (what, path, blob) in [
        ("truncated", "chunks/0000/03", Some(short.as_str())),
        ("missing", "chunks/0000/04", None),
        ("swapped", "chunks/0000/02", Some(other.as_str())),
    ] {
        git(repo, &["update-ref", reference, &good]);
        tamper(repo, reference, path, blob);
        let err = state.load().unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, LoadError::Damaged { .. }), "{what}: {text}");
        assert!(text.contains(reference), "{what}: names the ref: {text}");
        assert!(text.contains("fix:"), "{what}: says the fix: {text}");
        if blob.is_none() || what == "truncated" {
            assert!(text.contains(path), "{what}: names the chunk: {text}");
        } else {
            assert!(text.contains("checksum"), "{what}: {text}");
        }

        // The commands refuse it the same way (exit 2), and change nothing.
        let before = git(repo, &["rev-parse", reference]);
        let out = Command::new(env!("CARGO_BIN_EXE_opentiger"))
            .arg("--repo")
            .arg(repo)
            .args(["task", "add", "--title", "x", "--goal", "x"])
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
        assert!(
            stderr.contains("damaged")
                && stderr.contains(reference)
                && stderr.contains("update-ref"),
            "{what}: {stderr}"
        );
        assert_eq!(git(repo, &["rev-parse", reference]), before, "{what}");
    }
}

#[test]
fn a_quiet_tick_commits_nothing_and_a_busy_tick_at_most_twice_a_round() {
    let g = common::GitRepo::with(common::Setup {
        extra: "state:\n  store: branch\n  branch: refs/opentiger/state\n",
        ..Default::default()
    });
    g.agent("#!/bin/sh\necho done > done.txt\n");
    let commits = || -> u32 {
        git(g.path(), &["rev-list", "--count", "refs/opentiger/state"])
            .parse()
            .unwrap()
    };
    g.repo.add(&[
        "--title",
        "Write done.txt",
        "--goal",
        "done.txt",
        "--id",
        "one",
    ]);
    assert_eq!(commits(), 1, "task add saves once");

    // Busy ticks until the task is done: the run (claim, record), then the judge's merge,
    // rounds of one tick (issue 38): each round claims, then records.
    let mut per_tick = Vec::new();
    for minute in 1..=6 {
        let before = commits();
        let out = g.tick(&common::minute(minute));
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        let rounds = if out.stdout.contains(" in 2 rounds") {
            2
        } else {
            1
        };
        per_tick.push((rounds, commits() - before));
        if g.task_json("one")["status"] == "done" {
            break;
        }
    }
    assert_eq!(g.task_json("one")["status"], "done", "{per_tick:?}");
    assert_eq!(
        per_tick,
        [(2, 4)],
        "one tick, two rounds, each saved once or twice (claim, record): {per_tick:?}"
    );

    // Quiet ticks within the hour of the last heartbeat save nothing.
    for minute in 10..13 {
        let before = commits();
        let out = g.tick(&common::minute(minute));
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        assert_eq!(
            commits(),
            before,
            "a quiet tick commits nothing: {}",
            out.stdout
        );
    }
}

//! Running things and measuring them: the real binary with its process tree's peak memory,
//! git, and sizes on disk.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// One run of a command.
#[derive(Clone, Debug)]
pub struct Measured {
    pub time: Duration,
    /// Peak resident memory of the largest process of the tree, KiB.
    pub peak_kib: u64,
    pub stdout: Vec<u8>,
}

/// Runs `opentiger --repo <repo> <args>`, which must succeed, under `/usr/bin/time`: wall time
/// and the peak resident memory of the largest process of its tree. Measured through `time`,
/// a small process, because Linux counts a spawned child's peak from the memory of the process
/// that spawned it, and this one holds a whole state.
pub fn opentiger(repo: &Path, args: &[&str]) -> Measured {
    let mut all = vec!["--repo", repo.to_str().expect("utf-8")];
    all.extend_from_slice(args);
    timed(env!("CARGO_BIN_EXE_opentiger"), &all)
}

/// `sqlite3 FILE "select count(*) from tasks"`: the floor of any command on the file store (a
/// process started, the file opened, one query), measured the same way as [`opentiger`].
pub fn sqlite3_floor(file: &Path) -> Measured {
    timed(
        "sqlite3",
        &[file.to_str().expect("utf-8"), "select count(*) from tasks"],
    )
}

/// Runs `program args`, which must succeed, under `/usr/bin/time` (see [`opentiger`]).
fn timed(program: &str, args: &[&str]) -> Measured {
    let report = tempfile::NamedTempFile::new().expect("temp file");
    let started = Instant::now();
    let out = Command::new("/usr/bin/time")
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(report.path())
        .arg(program)
        .args(args)
        .env_remove("GITHUB_RUN_ID")
        .env_remove("GITHUB_STEP_SUMMARY")
        .output()
        .expect("start /usr/bin/time");
    let time = started.elapsed();
    assert!(
        out.status.success(),
        "{program} {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let peak_kib = std::fs::read_to_string(report.path())
        .expect("time's report")
        .trim()
        .parse()
        .expect("time's %M");
    Measured {
        time,
        peak_kib,
        stdout: out.stdout,
    }
}

/// `n` runs: the median time, the largest peak, the last output.
pub fn median(n: usize, mut f: impl FnMut() -> Measured) -> Measured {
    let runs: Vec<Measured> = (0..n).map(|_| f()).collect();
    let mut times: Vec<Duration> = runs.iter().map(|m| m.time).collect();
    times.sort();
    Measured {
        time: times[n / 2],
        peak_kib: runs.iter().map(|m| m.peak_kib).max().unwrap_or(0),
        stdout: runs.last().map(|m| m.stdout.clone()).unwrap_or_default(),
    }
}

pub fn ms(d: Duration) -> String {
    format!("{:.0} ms", d.as_secs_f64() * 1000.0)
}

pub fn git(cwd: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(cwd)
        .args(["-c", "user.name=b", "-c", "user.email=b@b"])
        .args(args)
        .output()
        .expect("git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// A bare `origin` and a clone `name` of it whose configuration keeps the state on a branch.
pub fn clone_with_config(dir: &Path, origin: &Path, name: &str) -> PathBuf {
    let origin_text = origin.to_str().expect("utf-8");
    git(dir, &["init", "-q", "--bare", "-b", "main", origin_text]);
    let clone = dir.join(name);
    git(
        dir,
        &["clone", "-q", origin_text, clone.to_str().expect("utf-8")],
    );
    std::fs::write(
        clone.join(".opentiger.yml"),
        "mode: local-git\nstate:\n  store: branch\n",
    )
    .expect("config");
    git(&clone, &["add", "-A"]);
    git(&clone, &["commit", "-q", "-m", "i"]);
    git(&clone, &["push", "-q", "origin", "main"]);
    clone
}

/// The bytes `git push` sends for `new` to a remote that has `old`: the thin pack between them.
pub fn thin_pack_bytes(repo: &Path, old: &str, new: &str) -> usize {
    let pack = Command::new("git")
        .current_dir(repo)
        .args(["pack-objects", "--revs", "--thin", "--stdout", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write;
            if let Some(mut stdin) = child.stdin.take() {
                writeln!(stdin, "{new}\n^{old}")?;
            }
            child.wait_with_output()
        })
        .expect("pack-objects");
    pack.stdout.len()
}

pub fn dir_size(path: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(path).expect("read dir").flatten() {
        let meta = entry.metadata().expect("metadata");
        total += if meta.is_dir() {
            dir_size(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

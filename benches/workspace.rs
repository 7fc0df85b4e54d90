//! `cargo bench --bench workspace`: what a run's own workspace costs (issue 35), against what a
//! linked worktree cost before it, on a repository of 10,000 files (`WORKSPACE_BENCH_FILES`).
//!
//! - Setting up: `Workspace::open_detached` (the runner writes the files from its objects and
//!   makes the agent's `.git`) against `git worktree add --detach`.
//! - Importing a change of 20 files (10 changed, 5 added, 5 deleted): `Workspace::import` against
//!   `git add -A` and `git diff --cached --numstat` in the worktree (what a run did before).
//! - Removing: dropping the workspace (`scratch::remove_tree`) against `git worktree remove`.
//!
//! Figures, not assertions; medians of `WORKSPACE_BENCH_RUNS` (default 7). Memory: each way runs
//! once more in a process of its own (this binary with `--one <way>`), which reports the peak
//! resident size of the set-up (its own and its git children's largest), then forks: the child
//! imports the change and reports its own peak and that of the git processes the import
//! started, apart from the set-up's.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use opentiger::git::Git;
use opentiger::workspace::Workspace;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--one") {
        let way = args.get(i + 1).map(String::as_str).unwrap_or("");
        let repo = PathBuf::from(args.get(i + 2).expect("a repository"));
        one(way, &repo);
        return;
    }
    let files: usize = env_or("WORKSPACE_BENCH_FILES", 10_000);
    let runs: usize = env_or("WORKSPACE_BENCH_RUNS", 7);
    let dir = tempfile::tempdir().expect("temp");
    let repo = dir.path().join("repo");
    make_repo(&repo, files);
    let git = Git::new(&repo);
    let head = git.run(&["rev-parse", "HEAD"]).expect("head");
    println!("repository: {files} files, {} MiB", size_mib(&repo));

    let mut setup_old = Vec::new();
    let mut setup_new = Vec::new();
    let mut import_old = Vec::new();
    let mut import_new = Vec::new();
    let mut remove_old = Vec::new();
    let mut remove_new = Vec::new();
    for i in 0..runs {
        let wt = dir.path().join(format!("wt{i}"));
        let start = Instant::now();
        git.run(&[
            "worktree",
            "add",
            "-q",
            "--detach",
            wt.to_str().unwrap(),
            &head,
        ])
        .expect("worktree add");
        setup_old.push(start.elapsed());
        change(&wt);
        let wt_git = Git::new(&wt);
        let start = Instant::now();
        wt_git.run(&["add", "-A"]).expect("add");
        let numstat = wt_git
            .run(&[
                "diff",
                "--cached",
                "--numstat",
                "-z",
                "--no-renames",
                "HEAD",
            ])
            .expect("diff");
        import_old.push(start.elapsed());
        assert_eq!(numstat.matches('\0').count(), 20);
        let start = Instant::now();
        git.run(&["worktree", "remove", "--force", wt.to_str().unwrap()])
            .expect("worktree remove");
        remove_old.push(start.elapsed());

        let start = Instant::now();
        let ws = Workspace::open_detached(&git, "bench", &head).expect("workspace");
        setup_new.push(start.elapsed());
        change(&ws.path);
        let start = Instant::now();
        let imported = ws
            .import(opentiger::workspace::SizeLimits { file: 0, change: 0 })
            .expect("import");
        import_new.push(start.elapsed());
        assert_eq!(imported.changes.len(), 20);
        let start = Instant::now();
        drop(ws);
        remove_new.push(start.elapsed());
    }
    report("set up", &setup_old, &setup_new, "git worktree add");
    report(
        "import a change",
        &import_old,
        &import_new,
        "git add -A + diff --cached",
    );
    report("remove", &remove_old, &remove_new, "git worktree remove");

    println!(
        "\npeak memory (one process each way, the import in a forked child; git: the largest one):"
    );
    for way in ["worktree", "workspace"] {
        let out = Command::new(std::env::current_exe().expect("this bench"))
            .args(["--one", way, repo.to_str().unwrap()])
            .output()
            .expect("run one way");
        print!("{}", String::from_utf8_lossy(&out.stdout));
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
}

/// One way, in a process of its own, for its peak memory: the set-up here, the import in a
/// forked child (so its git processes are counted apart from the set-up's).
fn one(way: &str, repo: &Path) {
    let git = Git::new(repo);
    let head = git.run(&["rev-parse", "HEAD"]).expect("head");
    let tmp = tempfile::tempdir().expect("temp");
    let wt = tmp.path().join("wt");
    let ws = match way {
        "worktree" => {
            git.run(&[
                "worktree",
                "add",
                "-q",
                "--detach",
                wt.to_str().unwrap(),
                &head,
            ])
            .expect("worktree add");
            change(&wt);
            None
        }
        _ => {
            let ws = Workspace::open_detached(&git, "bench", &head).expect("workspace");
            change(&ws.path);
            Some(ws)
        }
    };
    say(way, "set up", peak_kib());
    // SAFETY: this process has no other thread now (the set-up's have ended); the child only
    // imports, prints and leaves with `_exit`, running no destructor of the parent's values.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0, "fork failed");
    if pid == 0 {
        match &ws {
            None => {
                let wt_git = Git::new(&wt);
                wt_git.run(&["add", "-A"]).expect("add");
                wt_git
                    .run(&["diff", "--cached", "--numstat", "HEAD"])
                    .expect("diff");
            }
            Some(ws) => {
                ws.import(opentiger::workspace::SizeLimits { file: 0, change: 0 })
                    .expect("import");
            }
        }
        say(way, "import", peak_kib());
        use std::io::Write;
        let _ = std::io::stdout().flush();
        // SAFETY: ends the forked child at once, as above.
        unsafe { libc::_exit(0) };
    }
    let mut status = 0;
    // SAFETY: waits for the child just forked; `status` lives for the call.
    unsafe { libc::waitpid(pid, &mut status, 0) };
    assert!(libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0);
    if ws.is_none() {
        git.run(&["worktree", "remove", "--force", wt.to_str().unwrap()])
            .expect("remove");
    }
}

fn say(way: &str, what: &str, (own, children): (i64, i64)) {
    println!(
        "  {way:<10} {what:<7} this process {:>6.1} MiB, git {:>6.1} MiB",
        own as f64 / 1024.0,
        children as f64 / 1024.0
    );
}

/// `(self, largest child)` peak resident size in KiB.
fn peak_kib() -> (i64, i64) {
    let usage = |who| {
        // SAFETY: an all-zero rusage is valid to be overwritten; getrusage writes only into it.
        let mut u: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: as above.
        unsafe { libc::getrusage(who, &mut u) };
        u.ru_maxrss
    };
    (usage(libc::RUSAGE_SELF), usage(libc::RUSAGE_CHILDREN))
}

/// A repository of `files` files of about 1 KiB in folders of 100, one commit.
fn make_repo(repo: &Path, files: usize) {
    std::fs::create_dir_all(repo).expect("repo");
    let git = Git::new(repo);
    git.run(&["init", "-q"]).expect("init");
    for i in 0..files {
        let dir = repo.join(format!("src/m{:03}", i / 100));
        std::fs::create_dir_all(&dir).expect("dir");
        let line = format!("fn f{i}() -> usize {{ {i} }}\n");
        std::fs::write(dir.join(format!("f{i}.rs")), line.repeat(30)).expect("file");
    }
    git.run(&["add", "-A"]).expect("add");
    git.run(&["commit", "-q", "-m", "files"]).expect("commit");
    git.run(&["gc", "-q"]).expect("gc");
}

/// The agent's work: 10 files changed, 5 added, 5 deleted.
fn change(root: &Path) {
    for i in 0..10 {
        let path = root.join(format!("src/m{:03}/f{}.rs", i, i * 100));
        std::fs::write(path, format!("changed {i}\n")).expect("change");
    }
    for i in 0..5 {
        std::fs::write(root.join(format!("new{i}.txt")), "new\n").expect("add");
        let gone = root.join(format!("src/m{:03}/f{}.rs", 50 + i, (50 + i) * 100 + 1));
        std::fs::remove_file(gone).expect("delete");
    }
}

fn report(what: &str, old: &[Duration], new: &[Duration], before: &str) {
    let (o, n) = (median(old), median(new));
    println!(
        "{what:<16} before ({before}) {:>8.1} ms   workspace {:>8.1} ms   ratio {:.2}",
        ms(o),
        ms(n),
        n.as_secs_f64() / o.as_secs_f64()
    );
}

fn median(samples: &[Duration]) -> Duration {
    let mut sorted = samples.to_vec();
    sorted.sort();
    sorted[sorted.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn size_mib(dir: &Path) -> u64 {
    let out = Command::new("du")
        .args(["-sm"])
        .arg(dir)
        .output()
        .expect("du");
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

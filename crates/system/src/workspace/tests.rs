use super::*;
use crate::git::temp_repo;
use std::path::Path;

const NO_LIMITS: SizeLimits = SizeLimits { file: 0, change: 0 };

fn commit_files(git: &Git, files: &[(&str, &str)]) -> String {
    for (path, text) in files {
        let full = git.dir().join(path);
        std::fs::create_dir_all(full.parent().unwrap()).unwrap();
        std::fs::write(full, text).unwrap();
    }
    git.run(&["add", "-A"]).unwrap();
    git.run(&["commit", "-q", "-m", "c"]).unwrap();
    git.run(&["rev-parse", "HEAD"]).unwrap()
}

fn sample() -> (tempfile::TempDir, Git, String) {
    let (dir, git) = temp_repo();
    let root = dir.path();
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::os::unix::fs::symlink("src/a.rs", root.join("link")).unwrap();
    std::fs::write(root.join("run.sh"), "#!/bin/sh\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let head = commit_files(
        &git,
        &[
            ("src/a.rs", "fn a() {}\n"),
            ("src/deep/b.rs", "fn b() {}\n"),
            ("README.md", "# r\n"),
            (".gitignore", "target/\n"),
        ],
    );
    (dir, git, head)
}

fn kinds(imported: &Imported) -> Vec<(String, Option<String>)> {
    imported
        .changes
        .iter()
        .map(|c| (c.path.clone(), c.after.as_ref().map(|(m, _)| m.clone())))
        .collect()
}

/// The files, modes and links of the commit, and a repository the agent owns.
#[test]
fn a_workspace_holds_the_commit_s_files_and_a_repository_of_its_own() {
    let (_dir, git, head) = sample();
    let ws = Workspace::open_detached(&git, "t", &head).unwrap();
    assert!(ws.path.starts_with(ws.run_folder()));
    assert!(!ws.path.starts_with(git.dir()));
    assert_eq!(
        std::fs::read_to_string(ws.path.join("src/deep/b.rs")).unwrap(),
        "fn b() {}\n"
    );
    assert_eq!(
        std::fs::read_link(ws.path.join("link")).unwrap(),
        std::path::Path::new("src/a.rs")
    );
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(ws.path.join("run.sh"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111);
    // The agent's git sees a clean checkout of the commit, with the runner's objects borrowed.
    let agent = std::process::Command::new("git")
        .current_dir(&ws.path)
        .args(["status", "--porcelain"])
        .output()
        .unwrap();
    assert!(agent.status.success(), "{agent:?}");
    assert_eq!(String::from_utf8_lossy(&agent.stdout), "");
    let agent_head = std::process::Command::new("git")
        .current_dir(&ws.path)
        .args(["rev-parse", "HEAD"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&agent_head.stdout).trim(), head);
    assert!(ws.import(NO_LIMITS).unwrap().is_empty(), "nothing changed");
    let folder = ws.run_folder().to_path_buf();
    drop(ws);
    assert!(!folder.exists(), "the run's folder goes with the workspace");
}

/// What the agent changed — content, mode, deletions, new files, a folder turned into a link —
/// comes back as data; ignored files stay out.
#[test]
fn the_import_reads_every_kind_of_change() {
    let (_dir, git, head) = sample();
    let ws = Workspace::open_detached(&git, "t", &head).unwrap();
    let w = &ws.path;
    std::fs::write(w.join("src/a.rs"), "fn a() { changed }\n").unwrap();
    std::fs::remove_file(w.join("README.md")).unwrap();
    std::fs::write(w.join("new.txt"), "new\n").unwrap();
    std::fs::create_dir_all(w.join("target")).unwrap();
    std::fs::write(w.join("target/out.o"), "ignored").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        w.join("src/deep/b.rs"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    // Touched but the same bytes: not a change.
    std::fs::write(w.join("run.sh"), "#!/bin/sh\n").unwrap();
    let imported = ws.import(NO_LIMITS).unwrap();
    assert_eq!(
        kinds(&imported),
        [
            ("README.md".to_string(), None),
            ("new.txt".to_string(), Some("100644".to_string())),
            ("src/a.rs".to_string(), Some("100644".to_string())),
            ("src/deep/b.rs".to_string(), Some("100755".to_string())),
        ]
    );
    let a = git
        .run(&["cat-file", "-p", &format!("{}:src/a.rs", imported.tree)])
        .unwrap();
    assert_eq!(a, "fn a() { changed }");
    assert_eq!(imported.numstat.len(), 4);
    // A folder replaced by a link to somewhere else: its files are gone, the link is new, and
    // nothing is read through it.
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("b.rs"), "outside").unwrap();
    std::fs::remove_dir_all(w.join("src/deep")).unwrap();
    std::os::unix::fs::symlink(outside.path(), w.join("src/deep")).unwrap();
    let imported = ws.import(NO_LIMITS).unwrap();
    let paths = kinds(&imported);
    assert!(
        paths.contains(&("src/deep/b.rs".to_string(), None)),
        "{paths:?}"
    );
    assert!(
        paths.contains(&("src/deep".to_string(), Some("120000".to_string()))),
        "{paths:?}"
    );
    let link = imported
        .links
        .iter()
        .find(|l| l.path == "src/deep")
        .unwrap();
    assert_eq!(link.resolved, None, "out of the tree");
}

/// Issue 35: the runner never runs git with what the agent wrote. A filter the person
/// configured, named by the agent's `.gitattributes`, and one in the agent's own `.git/config`,
/// never run; a nested repository is refused by name.
#[test]
fn the_import_runs_no_filter_and_refuses_nested_repositories() {
    let (_dir, git, head) = sample();
    let marker = tempfile::tempdir().unwrap();
    let ran = marker.path().join("ran");
    let program = format!("sh -c 'touch {}; cat'", ran.display());
    git.run(&["config", "filter.person.clean", &program])
        .unwrap();
    let ws = Workspace::open_detached(&git, "t", &head).unwrap();
    let w = &ws.path;
    std::fs::write(w.join(".gitattributes"), "* filter=person filter=agent\n").unwrap();
    let mut config = std::fs::read_to_string(w.join(".git/config")).unwrap();
    config.push_str(&format!("[filter \"agent\"]\n\tclean = {program}\n"));
    std::fs::write(w.join(".git/config"), config).unwrap();
    std::fs::write(w.join("src/a.rs"), "changed\n").unwrap();
    let imported = ws.import(NO_LIMITS).unwrap();
    assert!(!ran.exists(), "a filter ran");
    let a = git
        .run(&["cat-file", "-p", &format!("{}:src/a.rs", imported.tree)])
        .unwrap();
    assert_eq!(a, "changed", "the bytes as written");
    // The agent's .git is never part of the change.
    assert!(imported
        .changes
        .iter()
        .all(|c| !c.path.starts_with(".git/")));
    // A repository inside the change.
    std::fs::create_dir_all(w.join("vendor/x")).unwrap();
    let init = std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(w.join("vendor/x"))
        .status()
        .unwrap();
    assert!(init.success());
    let refused = ws.import(NO_LIMITS).expect_err("refused").to_string();
    assert!(
        refused.contains("vendor/x is a git repository inside the change"),
        "{refused}"
    );
}

/// A `.git` anywhere in the result but the top's own — a repository made in a tracked folder,
/// a `gitdir:` file naming nothing in a new one, a link named `.git` — is refused by its path;
/// one in a folder nothing comes from (an ignored one) is not the change's.
#[test]
fn a_dot_git_anywhere_in_the_result_is_refused_by_its_path() {
    let (_dir, git, head) = sample();
    let refused = |make: &dyn Fn(&Path)| {
        let ws = Workspace::open_detached(&git, "t", &head).unwrap();
        std::fs::write(ws.path.join("src/a.rs"), "changed\n").unwrap();
        make(&ws.path);
        match ws.import(NO_LIMITS) {
            Ok(imported) => Ok(kinds(&imported)),
            Err(e) => Err(e.to_string()),
        }
    };
    let init = |dir: &Path| {
        let ok = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(dir)
            .status()
            .unwrap();
        assert!(ok.success());
    };
    let nested = refused(&|w| init(&w.join("src"))).unwrap_err();
    assert!(nested.contains("src/.git is a git repository"), "{nested}");
    let gitdir = refused(&|w| {
        std::fs::create_dir(w.join("lib")).unwrap();
        std::fs::write(w.join("lib/.git"), "gitdir: /nowhere\n").unwrap();
        std::fs::write(w.join("lib/x.rs"), "x\n").unwrap();
    })
    .unwrap_err();
    assert!(gitdir.contains("lib/.git is a git repository"), "{gitdir}");
    let link = refused(&|w| {
        std::os::unix::fs::symlink("../../.git", w.join("src/deep/.git")).unwrap();
    })
    .unwrap_err();
    assert!(link.contains("src/deep/.git is a git repository"), "{link}");
    // The twin: a repository in an ignored folder, and the agent's own `.git` at the top.
    let ignored = refused(&|w| {
        std::fs::create_dir_all(w.join("target/dep")).unwrap();
        init(&w.join("target/dep"));
        std::fs::write(w.join(".git/description"), "mine\n").unwrap();
    });
    assert_eq!(
        ignored,
        Ok(vec![("src/a.rs".to_string(), Some("100644".to_string()))])
    );
}

/// A submodule checked out in its gitlink's folder (its `.git` there) is no repository inside
/// the change: git lists none of its files, and the gitlink stays as it was.
#[test]
fn a_submodule_checked_out_in_its_own_folder_changes_nothing() {
    let (_dir, git, head) = sample();
    let commit = format!("160000,{head},sub");
    git.run(&["update-index", "--add", "--cacheinfo", &commit])
        .unwrap();
    git.run(&["commit", "-q", "-m", "a submodule"]).unwrap();
    let with_sub = git.run(&["rev-parse", "HEAD"]).unwrap();
    let ws = Workspace::open_detached(&git, "t", &with_sub).unwrap();
    assert!(ws.path.join("sub").is_dir());
    std::fs::write(ws.path.join("sub/.git"), "gitdir: /elsewhere\n").unwrap();
    std::fs::write(ws.path.join("sub/inside.rs"), "x\n").unwrap();
    assert!(ws.import(NO_LIMITS).unwrap().is_empty());
}

/// A pipe is never read (it would block): one in the work tree — new, or a tracked file turned
/// into one — is refused by name (issue 48: git would leave it out without a word, and wait on
/// one named `.gitignore`).
#[test]
fn a_fifo_is_refused_by_name_and_never_read() {
    let (_dir, git, head) = sample();
    let ws = Workspace::open_detached(&git, "t", &head).unwrap();
    std::fs::remove_file(ws.path.join("README.md")).unwrap();
    let readme = std::ffi::CString::new(ws.path.join("README.md").display().to_string()).unwrap();
    // SAFETY: test-only mkfifo with a valid path.
    assert_eq!(unsafe { libc::mkfifo(readme.as_ptr(), 0o644) }, 0);
    match ws.import(NO_LIMITS) {
        Err(ImportError::Refused(why)) => {
            assert!(why.starts_with("README.md is a pipe (FIFO)"), "{why}")
        }
        other => panic!("{other:?}"),
    }
    std::fs::remove_file(ws.path.join("README.md")).unwrap();
    std::fs::create_dir(ws.path.join("sub")).unwrap();
    let ignore =
        std::ffi::CString::new(ws.path.join("sub/.gitignore").display().to_string()).unwrap();
    // SAFETY: as above.
    assert_eq!(unsafe { libc::mkfifo(ignore.as_ptr(), 0o644) }, 0);
    match ws.import(NO_LIMITS) {
        Err(ImportError::Refused(why)) => {
            assert!(why.starts_with("sub/.gitignore is a pipe"), "{why}")
        }
        other => panic!("{other:?}"),
    }
}

/// The runner commits on the task branch from the start only: a compare-and-swap.
#[test]
fn commits_move_the_task_branch_from_its_start() {
    let (_dir, git, head) = sample();
    git.run(&["branch", "task", &head]).unwrap();
    let ws = Workspace::open(&git, "task", "HEAD", None).unwrap();
    std::fs::write(ws.path.join("x.txt"), "x\n").unwrap();
    let imported = ws.import(NO_LIMITS).unwrap();
    let new = ws
        .commit(&imported.tree, None, "subject", "Task: t")
        .unwrap();
    assert_eq!(
        git.resolve("refs/heads/task").unwrap().as_deref(),
        Some(new.as_str())
    );
    let moved = ws.commit(&imported.tree, None, "again", "Task: t");
    assert!(moved.is_err(), "the branch is no longer at the start");
}

#[test]
fn merges_are_made_without_a_work_tree() {
    let (_dir, git, base) = sample();
    git.run(&["checkout", "-q", "-b", "topic"]).unwrap();
    let topic = commit_files(&git, &[("src/a.rs", "topic\n"), ("t.txt", "t\n")]);
    git.run(&["checkout", "-q", "-"]).unwrap();
    let moved = commit_files(&git, &[("m.txt", "m\n")]);
    let Merge::Clean { commit } = merge_with(&git, &topic, &moved, "m").unwrap() else {
        panic!("clean")
    };
    let files = git.run(&["ls-tree", "--name-only", &commit]).unwrap();
    assert!(
        files.contains("m.txt") && files.contains("t.txt"),
        "{files}"
    );
    assert_eq!(
        merge_with(&git, &commit, &moved, "m").unwrap(),
        Merge::Clean {
            commit: commit.clone()
        },
        "already holds the base"
    );
    let conflicting = commit_files(&git, &[("src/a.rs", "base side\n")]);
    let Merge::Conflict { tree, files } = merge_with(&git, &topic, &conflicting, "m").unwrap()
    else {
        panic!("conflict")
    };
    assert_eq!(files, ["src/a.rs"]);
    let marked = git
        .run(&["cat-file", "-p", &format!("{tree}:src/a.rs")])
        .unwrap();
    assert!(
        marked.contains("<<<<<<<") && marked.contains(">>>>>>>"),
        "{marked}"
    );
    let _ = base;
}

/// The trees written on the changed paths alone are the trees an index would give, for files
/// turned into folders and back, folders emptied, new deep paths and everything deleted.
#[test]
fn trees_rebuilt_on_changed_paths_match_an_index() {
    let (_dir, git) = temp_repo();
    let base = commit_files(
        &git,
        &[
            ("a/b/c.txt", "c\n"),
            ("a/d.txt", "d\n"),
            ("e", "e\n"),
            ("f/g.txt", "g\n"),
        ],
    );
    let base_tree = git
        .run(&["rev-parse", &format!("{base}^{{tree}}")])
        .unwrap();
    let blob = git
        .run_with_input(&["hash-object", "-w", "--stdin"], b"new\n")
        .unwrap();
    let change = |path: &str, after: Option<&str>| Change {
        path: path.to_string(),
        after: after.map(|m| (m.to_string(), blob.clone())),
        size: 4,
    };
    let cases: Vec<Vec<Change>> = vec![
        vec![change("a/b/c.txt", Some("100644"))],
        vec![change("e", None), change("e/inside.txt", Some("100755"))],
        vec![change("f/g.txt", None), change("f", Some("100644"))],
        vec![
            change("a/b/c.txt", None),
            change("x/y/z/deep.txt", Some("100644")),
        ],
        vec![
            change("a/b/c.txt", None),
            change("a/d.txt", None),
            change("e", None),
            change("f/g.txt", None),
        ],
    ];
    let filled_at = tempfile::tempdir().unwrap();
    let filled = fill::write_tree(&git, &base_tree, filled_at.path()).unwrap();
    for changes in cases {
        let writer = trees::TreeWriter::start(&git).unwrap();
        let got = trees::apply(writer, &filled.files, &filled.folders, &changes).unwrap();
        let index = tempfile::NamedTempFile::new().unwrap();
        let with = git.with_env("GIT_INDEX_FILE", &index.path().display().to_string());
        with.run(&["read-tree", &base_tree]).unwrap();
        let mut info = String::new();
        for c in changes.iter().filter(|c| c.after.is_none()) {
            info.push_str(&format!("0 {}\t{}\0", "0".repeat(40), c.path));
        }
        for c in &changes {
            if let Some((mode, oid)) = &c.after {
                info.push_str(&format!("{mode} {oid}\t{}\0", c.path));
            }
        }
        with.run_with_input(&["update-index", "-z", "--index-info"], info.as_bytes())
            .unwrap();
        let want = with.run(&["write-tree"]).unwrap();
        assert_eq!(got, want, "{changes:?}");
    }
}

/// Issue 36: sizes before contents. A sparse 3 GB file (which costs the agent nothing) is refused
/// from its `lstat` alone, named with its apparent size and the setting; nothing reads it.
#[test]
fn a_file_over_the_size_limit_is_refused_before_anything_reads_it() {
    let (_dir, git, head) = sample();
    let ws = Workspace::open_detached(&git, "t", &head).unwrap();
    let sparse = std::fs::File::create(ws.path.join("huge.bin")).unwrap();
    sparse.set_len(3 << 30).unwrap();
    let limits = SizeLimits {
        file: 5 << 20,
        change: 20 << 20,
    };
    let objects = || git.run(&["count-objects"]).unwrap();
    let before = objects();
    let refused = ws.import(limits).expect_err("refused").to_string();
    assert!(
        refused.contains("huge.bin is 3221225472 bytes, over policy.max_file_bytes = 5242880"),
        "{refused}"
    );
    assert!(refused.contains("policy.max_change_bytes"), "{refused}");
    assert_eq!(objects(), before, "nothing was hashed into the repository");
}

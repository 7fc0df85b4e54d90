//! Tests of the git wrapper: errors, finding the common git folder.

use super::*;

#[test]
fn the_common_dir_comes_from_the_files_never_from_a_git_run_there() {
    let (dir, git) = temp_repo();
    let common = dir.path().join(".git").canonicalize().unwrap();
    std::fs::create_dir(dir.path().join("sub")).unwrap();
    assert_eq!(git.common_dir().unwrap().canonicalize().unwrap(), common);
    let sub = Git::new(dir.path().join("sub"));
    assert_eq!(sub.common_dir().unwrap().canonicalize().unwrap(), common);
    // A `commondir` that cannot be read (a folder) names nothing: an error, not a guess.
    std::fs::create_dir(common.join("commondir")).unwrap();
    let err = git.common_dir().unwrap_err();
    assert!(err.detail.contains("commondir"), "{err}");
}

/// Issue 49: whatever ended git, the error carries its words, or the signal that ended it,
/// or that it said nothing: never an empty detail after "failed:".
#[test]
fn a_failure_always_says_what_git_said_or_what_ended_it() {
    let git = Git::new("/repo");
    /// The raw wait status, stderr, stdout, the exit code and the detail expected.
    type Case = (i32, &'static [u8], &'static [u8], Option<i32>, &'static str);
    let cases: [Case; 5] = [
        (
            2,
            b"",
            b"",
            None,
            "ended by SIGINT (2) before it printed anything",
        ),
        (
            15,
            b"fatal: remote hung up\n",
            b"",
            None,
            "ended by SIGTERM (15); it printed: fatal: remote hung up",
        ),
        (1 << 8, b"", b"", Some(1), "git printed nothing"),
        (128 << 8, b"fatal: bad\n", b"", Some(128), "fatal: bad"),
        (1 << 8, b"", b"! [rejected] x\n", Some(1), "! [rejected] x"),
    ];
    for (raw, stderr, stdout, code, detail) in cases {
        let status = ExitStatus::from_raw(raw);
        let err = git.failed(&["push", "origin"], status, stderr, stdout);
        assert_eq!((err.code, err.detail.as_str()), (code, detail), "{raw}");
        assert!(
            err.to_string()
                .starts_with("git push origin (in /repo) failed"),
            "{err}"
        );
    }
}

#[test]
fn errors_name_directory_and_arguments() {
    let dir = tempfile::tempdir().unwrap();
    let err = Git::new(dir.path()).run(&["log", "-1"]).unwrap_err();
    let text = err.to_string();
    assert!(text.starts_with("git log -1 (in "), "{text}");
    assert!(text.contains("not a git repository"), "{text}");
}

/// Issue 49: only a git a group's interrupt ended before it said anything runs again.
#[test]
fn only_a_git_an_interrupt_cut_before_it_ran_runs_again() {
    /// A case's name, the raw wait status, what it printed, and whether it runs again.
    type Case<'a> = (&'a str, i32, &'a [u8], bool);
    let cases: [Case; 5] = [
        ("SIGINT, nothing said", libc::SIGINT, b"", true),
        ("SIGTERM, nothing said", libc::SIGTERM, b"", true),
        ("SIGKILL: the runner's own end", libc::SIGKILL, b"", false),
        ("it ran: it printed", libc::SIGINT, b"fatal: x\n", false),
        ("an exit, not a signal", 1 << 8, b"", false),
    ];
    for (name, raw, said, again) in cases {
        let status = ExitStatus::from_raw(raw);
        assert_eq!(cut_before_it_ran(&status, b"", said), again, "{name}");
        assert_eq!(cut_before_it_ran(&status, said, b""), again, "{name}");
    }
}

//! Tests of running a program: exit codes, stdin, environment, tails, timeouts, groups.

use super::*;

fn sh(script: &str, timeout_ms: u64) -> ProcessSpec {
    ProcessSpec {
        program: "sh".into(),
        args: vec!["-c".into(), script.into()],
        cwd: std::env::temp_dir(),
        env: vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())],
        stdin: None,
        timeout: Duration::from_millis(timeout_ms),
        tail_bytes: 4096,
        watch: None,
        group_record: None,
        confine: None,
        network: None,
        sentinel: None,
    }
}

/// Runs `script`, which starts `sleep 60 &` and writes its pid to a file, and checks that the
/// sleep is dead (or a zombie nobody reaped: in a container, pid 1 may never reap) afterwards.
fn run_leaving_a_grandchild(script: &str, timeout_ms: u64) -> ProcessOutput {
    let dir = tempfile::tempdir().unwrap();
    let mut spec = sh(script, timeout_ms);
    spec.cwd = dir.path().to_path_buf();
    let out = run(&spec).unwrap();
    assert!(out.duration < Duration::from_secs(2), "{:?}", out.duration);
    let pid = fs::read_to_string(dir.path().join("grandchild.pid")).unwrap();
    let pid: libc::pid_t = pid.trim().parse().unwrap();
    let dead = (0..100).any(|_| {
        thread::sleep(Duration::from_millis(10));
        // SAFETY: signal 0 only checks that the process exists.
        let gone = unsafe { libc::kill(pid, 0) } != 0;
        let stat = fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        gone || stat.rsplit(") ").next().unwrap_or("").starts_with('Z')
    });
    assert!(dead, "grandchild {pid} survived");
    out
}

#[test]
fn exit_codes_and_signals() {
    let cases = [
        ("exit 0", ExitStatusKind::Code(0)),
        ("exit 3", ExitStatusKind::Code(3)),
        ("kill -TERM $$", ExitStatusKind::Signal(libc::SIGTERM)),
    ];
    for (script, expected) in cases {
        let out = run(&sh(script, 5_000)).unwrap();
        assert_eq!((out.status, out.timed_out), (expected, false), "{script}");
    }
}

#[test]
fn stdin_is_delivered_then_closed_and_need_not_be_read() {
    let mut spec = sh("cat; echo '<eof>'", 5_000);
    spec.stdin = Some(b"the prompt\n".to_vec());
    let out = run(&spec).unwrap();
    assert_eq!(out.stdout_tail, "the prompt\n<eof>\n");
    assert_eq!(out.output_tail, out.stdout_tail);

    // Far more than a pipe buffer, to a child that never reads it.
    let mut spec = sh("echo ignored", 5_000);
    spec.stdin = Some(vec![b'x'; 4 * 1024 * 1024]);
    let out = run(&spec).unwrap();
    assert_eq!(
        (out.status, out.stdout_tail.as_str()),
        (ExitStatusKind::Code(0), "ignored\n")
    );
}

#[test]
fn environment_is_only_what_the_spec_gives() {
    let mut spec = sh("env", 5_000);
    spec.env.push(("OT_GIVEN".into(), "yes".into()));
    let out = run(&spec).unwrap();
    assert!(
        out.stdout_tail.contains("OT_GIVEN=yes\n"),
        "{}",
        out.stdout_tail
    );
    // What the test process has (HOME, CARGO_*, ...) must not show up; only what we passed
    // and what the shell sets for itself.
    let allowed = ["PATH", "OT_GIVEN", "PWD", "OLDPWD", "SHLVL", "_"];
    for line in out.stdout_tail.lines() {
        let key = line.split('=').next().unwrap_or("");
        assert!(allowed.contains(&key), "inherited variable leaked: {line}");
    }
    assert!(std::env::vars().any(|(k, _)| !allowed.contains(&k.as_str())));
}

#[test]
fn only_the_tail_of_a_huge_output_is_kept() {
    let script = "head -c 5000000 /dev/zero | tr '\\0' a; printf END; echo oops >&2";
    let mut spec = sh(script, 10_000);
    spec.tail_bytes = 1000;
    let out = run(&spec).unwrap();
    assert_eq!((out.stdout_bytes, out.stdout_tail.len()), (5_000_003, 1000));
    assert!(out.stdout_tail.ends_with("aaaEND"));
    assert_eq!((out.stderr_tail.as_str(), out.stderr_bytes), ("oops\n", 5));
    assert!(out.output_tail.starts_with("[stdout]\naaa"));
    assert!(out.output_tail.ends_with("END\n[stderr]\noops\n"));
}

#[test]
fn ring_buffer_keeps_the_end_and_drops_a_cut_character() {
    let mut tail = Tail::new(5);
    tail.push(b"abc");
    tail.push(b"def");
    assert_eq!(tail.text(), "bcdef");
    tail.push("xé".as_bytes()); // "efx" + the 2 bytes of é
    assert_eq!(tail.text(), "efxé");
    tail.push("éé".as_bytes()); // the first é loses its first byte
    assert_eq!(tail.text(), "éé");
    tail.push(&[b'z'; 12]);
    assert_eq!((tail.text().as_str(), tail.total), ("zzzzz", 25));
    let mut nothing = Tail::new(0);
    nothing.push(b"abc");
    assert_eq!((nothing.text().as_str(), nothing.total), ("", 3));
}

#[test]
fn timeout_kills_the_whole_process_group() {
    let script = "sleep 60 & echo $! > grandchild.pid; echo started; wait";
    let out = run_leaving_a_grandchild(script, 300);
    assert_eq!(
        (out.status, out.timed_out),
        (ExitStatusKind::TimedOut, true)
    );
    assert_eq!(out.stdout_tail, "started\n");
}

#[test]
fn what_the_program_leaves_running_is_killed_when_it_exits() {
    // The background sleep holds stdout open: without the group kill we would wait 60 s.
    let out = run_leaving_a_grandchild("sleep 60 & echo $! > grandchild.pid", 5_000);
    assert_eq!(
        (out.status, out.timed_out),
        (ExitStatusKind::Code(0), false)
    );
}

#[test]
fn bare_names_are_looked_up_on_the_given_path_only() {
    let dir = tempfile::tempdir().unwrap();
    // A symlink, not a written script: exec of a just-written file can fail with ETXTBSY
    // while other test threads fork.
    std::os::unix::fs::symlink("/bin/sh", dir.path().join("my-agent")).unwrap();
    let mut spec = sh("echo found", 5_000);
    spec.program = "my-agent".into();
    spec.env = vec![("PATH".into(), dir.path().display().to_string())];
    assert_eq!(run(&spec).unwrap().stdout_tail, "found\n");

    spec.program = "./my-agent".into();
    spec.cwd = dir.path().to_path_buf();
    assert_eq!(run(&spec).unwrap().stdout_tail, "found\n");
}

#[test]
fn errors_say_what_is_missing() {
    let mut spec = sh("", 1_000);
    spec.program = "claude".into();
    spec.env = vec![("PATH".into(), "/nonexistent/bin:/also/not".into())];
    let err = run(&spec).unwrap_err();
    assert!(matches!(err, ProcessError::NotFound { .. }));
    let expected = "`claude` was not found on PATH (/nonexistent/bin:/also/not, the PATH \
                    given to the process); install it, or give its full path";
    assert_eq!(err.to_string(), expected);

    spec.env.clear();
    assert!(run(&spec)
        .unwrap_err()
        .to_string()
        .contains("no PATH was given"));

    let dir = tempfile::tempdir().unwrap();
    spec.cwd = dir.path().to_path_buf();
    spec.program = "./agent.sh".into();
    let err = run(&spec).unwrap_err().to_string();
    assert!(err.contains("`./agent.sh` was not found"), "{err}");

    fs::write(dir.path().join("agent.sh"), "#!/bin/sh\n").unwrap();
    let err = run(&spec).unwrap_err();
    assert!(matches!(err, ProcessError::NotExecutable { .. }), "{err}");
    assert!(err.to_string().contains("chmod +x"));

    spec.program = "/bin/sh".into();
    spec.cwd = dir.path().join("gone");
    let err = run(&spec).unwrap_err().to_string();
    assert!(
        err.contains("working directory") && err.contains("does not exist"),
        "{err}"
    );
}

/// Stops after `n` lines saying `step`.
struct StopAfter(usize);

impl OutputWatch for StopAfter {
    fn line(&mut self, line: &str, _at: Duration) -> Option<String> {
        if line == "step" {
            self.0 = self.0.saturating_sub(1);
        }
        (self.0 == 0).then(|| "three steps".to_string())
    }
}

/// Stops on its first poll.
struct StopAtOnce;

impl OutputWatch for StopAtOnce {
    fn line(&mut self, _line: &str, _at: Duration) -> Option<String> {
        None
    }
    fn poll(&mut self, _at: Duration) -> Option<String> {
        Some("stalled".to_string())
    }
}

#[test]
fn a_watch_stops_the_program_on_what_it_prints() {
    let mut spec = sh("while :; do echo step; sleep 0.01; done", 60_000);
    spec.watch = Some(Watch::new(StopAfter(3)));
    let out = run(&spec).unwrap();
    assert_eq!(out.stopped.as_deref(), Some("three steps"));
    assert!(!out.timed_out);
    assert!(
        out.stdout_tail.starts_with("step\nstep\nstep\n"),
        "{}",
        out.stdout_tail
    );

    let mut spec = sh("sleep 60", 60_000);
    spec.watch = Some(Watch::new(StopAtOnce));
    let out = run(&spec).unwrap();
    assert_eq!(out.stopped.as_deref(), Some("stalled"));

    // Lines on stderr count too (opencode's log, issue 18).
    let mut spec = sh("while :; do echo step >&2; sleep 0.01; done", 60_000);
    spec.watch = Some(Watch::new(StopAfter(3)));
    let out = run(&spec).unwrap();
    assert_eq!(out.stopped.as_deref(), Some("three steps"));
    assert!(!out.timed_out);

    // A program that ends first is not stopped.
    let mut spec = sh("echo step; echo done", 60_000);
    spec.watch = Some(Watch::new(StopAfter(3)));
    let out = run(&spec).unwrap();
    assert_eq!((out.stopped, out.status), (None, ExitStatusKind::Code(0)));
}

//! Running one program without a shell: bounded in time and in memory, and killable as a whole.
//!
//! This is the one place where opentiger starts another program (agent CLIs, verification
//! commands). [`run`] takes a [`ProcessSpec`] and returns a [`ProcessOutput`]:
//!
//! - No shell: `program` is resolved and executed directly with `args` as argv.
//! - The environment is cleared and only `spec.env` is set. The caller decides what the child
//!   sees, so `PATH`, `HOME` and anything else the program needs must be passed explicitly
//!   (DESIGN §6: the forge token is never passed). A bare program name is looked up on the `PATH`
//!   given in `spec.env`, never on our own.
//! - On Linux the child gets `PR_SET_PDEATHSIG` (`SIGKILL`): it dies with the runner, even when
//!   the runner itself is killed with `SIGKILL` and can clean nothing up.
//! - The child leads its own process group. On timeout, or if reading its output fails, the whole
//!   group gets `SIGKILL`, so grandchildren die too. When the program exits by itself, whatever
//!   it left running in its group is killed as well; and when the runner is a child subreaper
//!   (`crate::reaper`), so is whatever it moved out of its group (a new session, a double fork): nothing
//!   it started outlives the run.
//! - stdin is written from a thread and then closed, so a child that never reads it cannot
//!   deadlock us. stdout and stderr are read concurrently; only the last `tail_bytes` of each are
//!   kept (an agent can print gigabytes), plus the total byte counts.
//! - An optional [`Watch`] reads stdout and stderr line by line while the program runs and may
//!   stop it early (`watch.rs`): its reason is [`ProcessOutput::stopped`].
//! - An interrupt of the runner ([`interrupt`]) stops it too, gently: SIGTERM to its group,
//!   SIGKILL after a grace period; the reason says which signal.
//! - An optional [`Sentinel`] is asked while it runs whether something besides its output says
//!   stop (its network door saw a quota answer, it has been idle too long).
//! - With `network`, it starts in a network namespace of its own (`sandbox::netns`), whose
//!   proxy listener goes to the runner; with `confine`, in its view, Landlock domain and
//!   limits (`child.rs`).
//!
//! Not here: deciding what a failure means (the engine's `classify`), and redacting the output
//! (the caller passes the tails through `redact::Redactor` before storing or showing them).

mod child;
pub mod interrupt;
mod watch;
use std::collections::VecDeque;
use std::fs;
use std::io::{self, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;
use std::time::{Duration, Instant};
pub use watch::{OutputWatch, Seen, Sentinel, Watch};

/// How often the exit of the child is checked for.
const POLL_INTERVAL: Duration = Duration::from_millis(20);
/// How long, after the process group is gone, we still wait for its output pipes to close. Only a
/// process that left the group (`setsid`) while holding a pipe can make this wait run out.
const DRAIN_GRACE: Duration = Duration::from_secs(1);

/// What to run, where, with what, and for how long.
#[derive(Clone, Debug)]
pub struct ProcessSpec {
    /// A bare name (looked up on the `PATH` in `env`), or a path containing `/` (a relative one
    /// is relative to `cwd`).
    pub program: String,
    pub args: Vec<String>,
    pub cwd: PathBuf,
    /// The complete environment of the child: nothing else is inherited. Pass `PATH` and `HOME`.
    pub env: Vec<(String, String)>,
    /// Bytes written to the child's stdin, which is then closed. `None`: stdin is `/dev/null`.
    pub stdin: Option<Vec<u8>>,
    pub timeout: Duration,
    /// How many bytes of the end of stdout, and of stderr, are kept.
    pub tail_bytes: usize,
    /// Reads stdout while the program runs and may stop it early.
    pub watch: Option<Watch>,
    /// A file recording the child's process group while it runs (`sandbox::groups`), so a
    /// later tick can kill what a killed runner left behind. Removed after the group is killed.
    pub group_record: Option<PathBuf>,
    /// What confines the child (`sandbox::Confinement`): its view, Landlock domain, socket
    /// filter and limits; what it reached of its limits is noted there after the run.
    pub confine: Option<std::sync::Arc<crate::sandbox::Confinement>>,
    /// A network namespace of its own, its proxy listener delivered to the runner
    /// (`sandbox::netns`).
    pub network: Option<crate::sandbox::netns::Door>,
    /// Asked while it runs whether to stop it early, besides its output.
    pub sentinel: Option<Arc<dyn Sentinel>>,
}

impl ProcessSpec {
    /// The `PATH` the child is given, if any.
    pub fn path_var(&self) -> Option<&str> {
        let path = self.env.iter().rev().find(|(k, _)| k == "PATH");
        path.map(|(_, v)| v.as_str())
    }
}

/// How the program ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExitStatusKind {
    /// It exited with this code.
    Code(i32),
    /// A signal killed it (not ours: a timeout is [`ExitStatusKind::TimedOut`]).
    Signal(i32),
    /// It ran past `spec.timeout` and its process group was killed.
    TimedOut,
}

/// The end of what the program printed, and how it ended.
#[derive(Clone, Debug)]
pub struct ProcessOutput {
    pub status: ExitStatusKind,
    /// Both tails: stdout then stderr, each under a `[stdout]` / `[stderr]` label when both are
    /// non-empty; otherwise just the non-empty one. Lossy UTF-8.
    pub output_tail: String,
    pub stdout_tail: String,
    pub stderr_tail: String,
    /// Total bytes read from stdout / stderr, of which the tails are the last `tail_bytes`.
    pub stdout_bytes: u64,
    pub stderr_bytes: u64,
    pub duration: Duration,
    pub timed_out: bool,
    /// The [`Watch`] stopped it (its group was killed), for this reason.
    pub stopped: Option<String>,
}

impl ProcessOutput {
    /// Exit code 0.
    pub fn success(&self) -> bool {
        self.status == ExitStatusKind::Code(0)
    }
}

/// Why the program could not be run.
#[derive(Debug, thiserror::Error)]
pub enum ProcessError {
    #[error("{}", not_found_text(program, path_var.as_deref(), cwd))]
    NotFound {
        program: String,
        /// The `PATH` that was searched (from `spec.env`), if the name was bare.
        path_var: Option<String>,
        cwd: PathBuf,
    },
    #[error(
        "`{program}` was found at {} but is not an executable file; \
         check its permissions (`chmod +x`) or give the path of the real program",
        path.display()
    )]
    NotExecutable { program: String, path: PathBuf },
    #[error("could not run `{program}`: {source}")]
    Spawn {
        program: String,
        #[source]
        source: io::Error,
    },
}

fn not_found_text(program: &str, path_var: Option<&str>, cwd: &Path) -> String {
    if program.contains('/') {
        return format!(
            "`{program}` was not found (relative paths are taken from the working directory {}); \
             check the path",
            cwd.display()
        );
    }
    match path_var {
        Some(path) => format!(
            "`{program}` was not found on PATH ({path}, the PATH given to the process); \
             install it, or give its full path"
        ),
        None => format!(
            "`{program}` was not found: no PATH was given to the process, so a bare name cannot \
             be looked up; pass PATH in its environment, or give the program's full path"
        ),
    }
}

/// Runs `spec` to completion or timeout. See the module documentation for the guarantees.
///
/// A program that runs but fails is an `Ok` with its status; `Err` means it never started.
#[tracing::instrument(skip_all, fields(program = %spec.program))]
pub fn run(spec: &ProcessSpec) -> Result<ProcessOutput, ProcessError> {
    let executable = resolve(spec)?;
    let stdin = if spec.stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    };
    let mut command = Command::new(&executable);
    command
        .arg0(&spec.program)
        .args(&spec.args)
        .current_dir(&spec.cwd)
        .env_clear()
        .envs(spec.env.iter().map(|(k, v)| (k, v)))
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut spawn =
        child::prepare(&mut command, spec, &executable).map_err(|e| spawn_failed(spec, e))?;

    let started = Instant::now();
    // Issue 49: kept from the moment it starts, so a second interrupt ends its group with the
    // runner (`reaper::end_all`).
    let (mut child, _kept) =
        crate::reaper::Kept::start(&mut command).map_err(|source| match source.kind() {
            io::ErrorKind::PermissionDenied => not_executable(spec, executable),
            _ => spawn_failed(spec, child::failure(&spawn, source)),
        })?;
    let pid = child.id();
    tracing::debug!(pid, "started");
    if let Err(e) = child::deliver(&mut spawn, spec) {
        kill_group(pid);
        let _ = child.wait();
        return Err(spawn_failed(spec, e));
    }
    if let Some(record) = &spec.group_record {
        if let Err(e) = crate::sandbox::groups::write_record(record, pid) {
            tracing::warn!(
                "could not record the process group of {}: {e}",
                spec.program
            );
        }
    }
    let stop = Arc::new(Mutex::new(None));
    // Both streams: a CLI may say on stderr (its log) what it does not print as an event.
    let feeds = spec.watch.clone().map(|w| {
        (
            (watch::LineFeed::new(w.clone(), stop.clone()), started),
            (watch::LineFeed::new(w, stop.clone()), started),
        )
    });
    let (stdout, stderr) = match start_threads(&mut child, spec, feeds) {
        Ok(captures) => captures,
        Err(source) => {
            kill_group(pid);
            let _ = child.wait();
            return Err(spawn_failed(spec, source));
        }
    };
    let end = watch(pid, started, spec, [&stdout, &stderr], &stop);
    let timed_out = matches!(end, End::TimedOut);
    let stopped = match end {
        End::Stopped(reason) => Some(reason),
        End::Exited | End::TimedOut => None,
    };
    // The leader is a zombie now (or dying of our SIGKILL), which keeps its pid, and so the group
    // id, from being reused: killing the group here can only hit what the program left behind.
    kill_group(pid);
    if let Some(record) = &spec.group_record {
        let _ = fs::remove_file(record);
    }
    let status = child.wait().map_err(|e| {
        let message = format!("lost track of it while waiting for it to exit: {e}");
        spawn_failed(spec, io::Error::new(e.kind(), message))
    })?;
    // What left the group: re-parented to us (the subreaper), killed before anything else runs.
    crate::reaper::sweep();
    let drain_until = Instant::now() + DRAIN_GRACE;
    while !(stdout.lock().finished && stderr.lock().finished) {
        if Instant::now() >= drain_until {
            tracing::warn!(pid, "output still open after its group ended; not waiting");
            break;
        }
        thread::sleep(POLL_INTERVAL);
    }
    let duration = started.elapsed();

    let (stdout_tail, stdout_bytes) = stdout.snapshot();
    let (stderr_tail, stderr_bytes) = stderr.snapshot();
    let status = match (timed_out, status.code(), status.signal()) {
        (true, _, _) => ExitStatusKind::TimedOut,
        (false, Some(code), _) => ExitStatusKind::Code(code),
        (false, None, Some(signal)) => ExitStatusKind::Signal(signal),
        (false, None, None) => ExitStatusKind::Code(-1), // not on Unix: one of the two is set
    };
    child::finish(spawn, spec, status, &combine(&stdout_tail, &stderr_tail));
    tracing::debug!(?status, ?duration, stdout_bytes, stderr_bytes, "finished");
    Ok(ProcessOutput {
        status,
        output_tail: combine(&stdout_tail, &stderr_tail),
        stdout_tail,
        stderr_tail,
        stdout_bytes,
        stderr_bytes,
        duration,
        timed_out,
        stopped,
    })
}

/// Finds the file to execute: `program` with a `/` as a path (relative to `cwd`), a bare name on
/// the `PATH` of `spec.env`.
fn resolve(spec: &ProcessSpec) -> Result<PathBuf, ProcessError> {
    if !spec.cwd.is_dir() {
        let message = format!(
            "the working directory {} does not exist",
            spec.cwd.display()
        );
        return Err(spawn_failed(
            spec,
            io::Error::new(io::ErrorKind::NotFound, message),
        ));
    }
    let not_found = |path_var: Option<&str>| ProcessError::NotFound {
        program: spec.program.clone(),
        path_var: path_var.map(str::to_string),
        cwd: spec.cwd.clone(),
    };
    if spec.program.contains('/') {
        let path = spec.cwd.join(&spec.program);
        return match fs::metadata(&path) {
            Ok(meta) if is_executable(&meta) => Ok(path),
            Ok(_) => Err(not_executable(spec, path)),
            Err(_) => Err(not_found(None)),
        };
    }
    let (Some(path_var), false) = (spec.path_var(), spec.program.is_empty()) else {
        return Err(not_found(None));
    };
    let mut found_file = None;
    for dir in path_var.split(':') {
        // POSIX: an empty PATH entry means the current directory, here the child's.
        let candidate = spec.cwd.join(dir).join(&spec.program);
        match fs::metadata(&candidate) {
            Ok(meta) if is_executable(&meta) => return Ok(candidate),
            Ok(meta) if meta.is_file() => found_file = found_file.or(Some(candidate)),
            _ => {}
        }
    }
    Err(match found_file {
        Some(path) => not_executable(spec, path),
        None => not_found(Some(path_var)),
    })
}

fn not_executable(spec: &ProcessSpec, path: PathBuf) -> ProcessError {
    ProcessError::NotExecutable {
        program: spec.program.clone(),
        path,
    }
}

fn spawn_failed(spec: &ProcessSpec, source: io::Error) -> ProcessError {
    ProcessError::Spawn {
        program: spec.program.clone(),
        source,
    }
}

fn is_executable(meta: &fs::Metadata) -> bool {
    meta.is_file() && meta.permissions().mode() & 0o111 != 0
}

/// What a reader thread has captured of one stream so far, shared with `run`.
#[derive(Clone)]
struct Capture(Arc<Mutex<Tail>>);

impl Capture {
    fn new(capacity: usize) -> Self {
        Capture(Arc::new(Mutex::new(Tail::new(capacity))))
    }

    /// A panicking reader leaves a consistent buffer behind: poisoning is ignored.
    fn lock(&self) -> MutexGuard<'_, Tail> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn snapshot(&self) -> (String, u64) {
        let tail = self.lock();
        (tail.text(), tail.total)
    }
}

/// Starts the stdin writer and the two readers; returns the stdout and stderr captures.
fn start_threads(
    child: &mut Child,
    spec: &ProcessSpec,
    feeds: Option<((watch::LineFeed, Instant), (watch::LineFeed, Instant))>,
) -> io::Result<(Capture, Capture)> {
    if let (Some(mut stdin), Some(bytes)) = (child.stdin.take(), spec.stdin.clone()) {
        // Not joined: if the child never reads, the write ends with a broken pipe once it exits.
        // Dropping `stdin` at the end closes it, so the child sees end of file.
        thread::Builder::new()
            .name("process-stdin".into())
            .spawn(move || {
                match stdin.write_all(&bytes) {
                    Ok(()) => {}
                    // The child exited or closed stdin without reading it all: its business.
                    Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
                    Err(e) => tracing::debug!(error = %e, "writing stdin failed"),
                }
            })?;
    }
    let (stdout, stderr) = (Capture::new(spec.tail_bytes), Capture::new(spec.tail_bytes));
    let (out_feed, err_feed) = feeds.map_or((None, None), |(o, e)| (Some(o), Some(e)));
    start_reader("process-stdout", child.stdout.take(), &stdout, out_feed)?;
    start_reader("process-stderr", child.stderr.take(), &stderr, err_feed)?;
    Ok((stdout, stderr))
}

fn start_reader(
    name: &str,
    source: Option<impl Read + Send + 'static>,
    capture: &Capture,
    mut feed: Option<(watch::LineFeed, Instant)>,
) -> io::Result<()> {
    let capture = capture.clone();
    let Some(mut source) = source else {
        capture.lock().finished = true;
        return Ok(());
    };
    thread::Builder::new().name(name.into()).spawn(move || {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            match source.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    capture.lock().push(&buf[..n]);
                    if let Some((feed, started)) = feed.as_mut() {
                        feed.push(&buf[..n], started.elapsed());
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    capture.lock().error = Some(e);
                    break;
                }
            }
        }
        capture.lock().finished = true;
    })?;
    Ok(())
}

/// How a run ended, as [`watch`] saw it.
enum End {
    Exited,
    TimedOut,
    Stopped(String),
}

/// Waits until the leader exits (left unreaped), the timeout passes or the spec's [`Watch`] says
/// stop (then kills the group). Kills the group early if reading its output fails.
fn watch(
    pid: u32,
    started: Instant,
    spec: &ProcessSpec,
    captures: [&Capture; 2],
    stop: &Mutex<Option<String>>,
) -> End {
    let deadline = started + spec.timeout;
    let mut killed = false;
    while !has_exited(pid) {
        if let Some(signal) = interrupt::requested() {
            tracing::info!(pid, "interrupted; ending its process group");
            interrupt::end_group(pid, has_exited);
            return End::Stopped(format!("interrupted by {}", signal.name()));
        }
        let now = Instant::now();
        if now >= deadline {
            tracing::warn!(pid, "timed out; killing its process group");
            kill_group(pid);
            return End::TimedOut;
        }
        let polled = spec.watch.as_ref().and_then(|w| w.poll(now - started));
        let sentinel = spec.sentinel.as_ref().and_then(|s| {
            let last = captures
                .iter()
                .filter_map(|c| c.lock().last)
                .max()
                .unwrap_or(started);
            s.check(&Seen {
                quiet: now.saturating_duration_since(last),
                elapsed: now - started,
                lines: captures.iter().map(|c| c.lock().lines).sum(),
            })
        });
        let gently = sentinel.is_some() && spec.sentinel.as_ref().is_some_and(|s| s.gently());
        let reason = stop
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .or(polled)
            .or(sentinel);
        if let Some(reason) = reason {
            tracing::info!(pid, %reason, gently, "stopped; ending its process group");
            match gently {
                true => interrupt::end_group(pid, has_exited),
                false => kill_group(pid),
            }
            return End::Stopped(reason);
        }
        for capture in captures {
            if let (Some(e), false) = (&capture.lock().error, killed) {
                tracing::warn!(pid, error = %e, "reading its output failed; killing it");
                kill_group(pid);
                killed = true;
            }
        }
        thread::sleep(POLL_INTERVAL.min(deadline - now));
    }
    End::Exited
}

/// Whether `pid` (our child) has exited, without reaping it (`WNOWAIT`).
fn has_exited(pid: u32) -> bool {
    loop {
        // SAFETY: `info` is a plain C struct that waitid fills in; zeroed is a valid value.
        let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
        let options = libc::WEXITED | libc::WNOHANG | libc::WNOWAIT;
        // SAFETY: waitid only writes into `info`, which lives for the whole call.
        let rc = unsafe { libc::waitid(libc::P_PID, libc::id_t::from(pid), &mut info, options) };
        if rc == 0 {
            // POSIX: with WNOHANG and no child ready, si_signo (and si_pid) are left zero.
            return info.si_signo != 0;
        }
        if io::Error::last_os_error().kind() != io::ErrorKind::Interrupted {
            // ECHILD: nothing left to wait for; `Child::wait` reports the real problem, if any.
            return true;
        }
    }
}

/// SIGKILL to every process in the group that `pid` leads. Errors (no such group) are ignored.
fn kill_group(pid: u32) {
    // Never signal "every process" (-1) or our own group (0).
    if let Ok(pgid @ 2..) = libc::pid_t::try_from(pid) {
        // SAFETY: kill has no memory effects; a negative pid addresses the process group.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
    }
}

fn combine(stdout: &str, stderr: &str) -> String {
    match (stdout.is_empty(), stderr.is_empty()) {
        (false, false) => {
            let sep = if stdout.ends_with('\n') { "" } else { "\n" };
            format!("[stdout]\n{stdout}{sep}[stderr]\n{stderr}")
        }
        (false, true) => stdout.to_string(),
        (true, _) => stderr.to_string(),
    }
}

/// The last `capacity` bytes of a stream (a ring buffer), how many bytes passed through, and
/// whether the stream has ended (`finished`) or failed (`error`).
struct Tail {
    buf: VecDeque<u8>,
    capacity: usize,
    total: u64,
    finished: bool,
    error: Option<io::Error>,
    /// When the program last wrote to this stream.
    last: Option<Instant>,
    /// Lines written so far (newlines seen).
    lines: u64,
}

impl Tail {
    fn new(capacity: usize) -> Self {
        let buf = VecDeque::with_capacity(capacity.min(1 << 20));
        Tail {
            buf,
            capacity,
            total: 0,
            finished: false,
            error: None,
            last: None,
            lines: 0,
        }
    }

    fn push(&mut self, bytes: &[u8]) {
        self.last = Some(Instant::now());
        self.total += bytes.len() as u64;
        self.lines += bytes.iter().filter(|b| **b == b'\n').count() as u64;
        if bytes.len() >= self.capacity {
            self.buf.clear();
            self.buf.extend(&bytes[bytes.len() - self.capacity..]);
            return;
        }
        let overflow = (self.buf.len() + bytes.len()).saturating_sub(self.capacity);
        self.buf.drain(..overflow);
        self.buf.extend(bytes);
    }

    /// Lossy UTF-8; when the start was cut off, a partial character there is dropped.
    fn text(&self) -> String {
        let (a, b) = self.buf.as_slices();
        let mut bytes = Vec::with_capacity(self.buf.len());
        bytes.extend_from_slice(a);
        bytes.extend_from_slice(b);
        let cut = self.total > bytes.len() as u64;
        let continuation = |b: &&u8| *b & 0b1100_0000 == 0b1000_0000;
        let skip = if cut {
            bytes.iter().take(3).take_while(continuation).count()
        } else {
            0
        };
        String::from_utf8_lossy(&bytes[skip..]).into_owned()
    }
}
#[cfg(test)]
mod tests;

//! The `git` command line behind one wrapper: a minimal environment, the `-c` overrides of
//! [`HARDENING`], a process group of its own for every git the runner starts (issue 49: a
//! terminal's Ctrl-C, which goes to the tick's process group, never cuts a state save; the
//! interrupt decides, `process::interrupt`), and failures that name the directory, the
//! arguments and git's own output — or the signal that ended it. The
//! CLI, not libgit2: it honours the credentials CI checkouts configure, sends thin packs, has
//! `--force-with-lease`, and keeps the build free of a C library (DESIGN §14).
//! Not for: which `git` runs (`programs`), the token a remote command gets (`credentials`), or
//! what opentiger does with workspaces, branches and merges (`workspace`).

use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

use crate::credentials;

/// `-c` settings on every git command of the runner. Command-line settings win over every
/// configuration file, so none of these can be turned back on by a repository, a worktree, an
/// included file or the user's own configuration. An empty `diff.external` would break every
/// diff, so diffs pass `--no-ext-diff`. Filters and merge drivers, which have free names, cannot
/// be switched off here; no agent can set one for the runner's git, which reads only the
/// runner's own git folder (out of every agent's reach under Landlock: issue 35, `workspace`)
/// and hashes what it takes from a workspace with `--no-filters`.
pub const HARDENING: [&str; 13] = [
    "commit.gpgsign=false",
    "tag.gpgsign=false",
    "core.hooksPath=/dev/null",
    "core.fsmonitor=false",
    "core.pager=cat",
    "core.editor=true",
    "sequence.editor=true",
    "core.askPass=",
    "protocol.ext.allow=never",
    "protocol.file.allow=user",
    "submodule.recurse=false",
    "fetch.recurseSubmodules=false",
    "core.gitProxy=",
];

/// Variables of the runner's environment git may see (no token is among them: that was taken
/// out of the environment when the runner started, `credentials::take_from_env`).
const PASSED_VARS: [&str; 6] = [
    "PATH",
    "HOME",
    "TMPDIR",
    "XDG_CONFIG_HOME",
    "SSH_AUTH_SOCK",
    "GIT_EXEC_PATH",
];

/// Whether a git command talks to a remote (and may need credentials).
fn talks_to_remote(args: &[&str]) -> bool {
    matches!(
        args.first(),
        Some(&("push" | "fetch" | "ls-remote" | "pull" | "clone" | "remote"))
    )
}

/// A failed git invocation.
#[derive(Debug, Clone, thiserror::Error)]
#[error("git {args} (in {dir}) failed{}: {detail}", code.map(|c| format!(" with exit code {c}")).unwrap_or_default())]
pub struct GitError {
    pub dir: String,
    pub args: String,
    pub code: Option<i32>,
    pub detail: String,
}

/// What a git command printed, and its exit code.
#[derive(Clone, Debug)]
pub struct GitOutput {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// A repository or worktree directory.
#[derive(Clone, Debug)]
pub struct Git {
    dir: PathBuf,
    env: Vec<(String, String)>,
    /// The token its commands that talk to a remote use.
    token: credentials::Token,
    /// Runs beside an agent ([`Git::beside_a_run`]).
    beside_a_run: bool,
}

/// Identity for commits the runner makes.
pub const AUTHOR_NAME: &str = "opentiger";
pub const AUTHOR_EMAIL: &str = "opentiger@users.noreply.github.com";

impl Git {
    pub fn new(dir: impl Into<PathBuf>) -> Git {
        Git {
            dir: dir.into(),
            env: Vec::new(),
            token: credentials::Token::Forge,
            beside_a_run: false,
        }
    }

    /// The same repository for a thread that reads while an agent runs (issue 51: a person's
    /// stop request, `tick::stop_watch`): its remote commands do not sweep (the running agent
    /// is a child of the runner the sweep would end), and they are kept from the sweep the end
    /// of that run makes (so none is killed holding a ref lock). Nothing strays meanwhile from
    /// the runner's own earlier git: the run's set-up swept after its last remote command.
    pub fn beside_a_run(&self) -> Git {
        let mut g = self.clone();
        g.beside_a_run = true;
        g
    }

    /// The same repository talking to remotes with the token `which` (issue 36: agents' heads
    /// are pushed with the push token under `scan.ci` other than `on-push`).
    pub fn talking_with(&self, which: credentials::Token) -> Git {
        let mut g = self.clone();
        g.token = which;
        g
    }

    /// The same repository with extra environment for every call (e.g. `GIT_INDEX_FILE`).
    pub fn with_env(&self, key: &str, value: &str) -> Git {
        let mut g = self.clone();
        g.env.push((key.to_string(), value.to_string()));
        g
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// git with a minimal environment and the overrides of [`HARDENING`]: whatever an agent
    /// wrote into a repository's or the user's configuration, the runner's git runs none of it
    /// and sends no credential it did not choose (DESIGN §10). The program is the one
    /// `programs` resolved at start, away from anything an agent could write, and its `PATH`
    /// is filtered the same way. A command that talks to a remote gets the forge token in its
    /// own environment (for the askpass, `credentials`), and only over https.
    ///
    /// No signal to the tick's process group (a terminal's Ctrl-C, a `kill` of the group)
    /// reaches a git of the runner's, so its own writes finish or are ended by the runner
    /// (`reaper::end_all`), never half-way by a key press. A local git leads a process group of
    /// its own (started by `posix_spawn`, as cheap as before: a forked runner costs a copy of its
    /// page tables per git, milliseconds each); should a signal to the runner's group reach it
    /// in the moment before it leaves that group, it dies before it runs, and is run again
    /// ([`cut_before_it_ran`]). One that talks to a remote leads a session of
    /// its own, with no terminal, so an ssh prompt fails instead of stopping it in the
    /// background, and dies with the runner (`PR_SET_PDEATHSIG`): a runner killed outright leaves
    /// no push going on behind it (a local git ends by itself once its pipes close). Its output
    /// is captured unless a caller says otherwise.
    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(crate::programs::git());
        if talks_to_remote(args) {
            // SAFETY: between fork and exec only async-signal-safe calls: setsid and prctl
            // take plain integers and touch no memory of ours.
            unsafe {
                cmd.pre_exec(|| {
                    if libc::setsid() < 0 {
                        return Err(std::io::Error::last_os_error());
                    }
                    #[cfg(target_os = "linux")]
                    libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
                    Ok(())
                });
            }
        } else {
            cmd.process_group(0);
        }
        cmd.current_dir(&self.dir).env_clear().args([
            "-c",
            &format!("user.name={AUTHOR_NAME}"),
            "-c",
            &format!("user.email={AUTHOR_EMAIL}"),
        ]);
        for setting in HARDENING {
            cmd.args(["-c", setting]);
        }
        for name in PASSED_VARS {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        if let Some(path) = crate::programs::git_path_var() {
            cmd.env("PATH", path);
        }
        cmd.env("GIT_TERMINAL_PROMPT", "0")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("LC_ALL", "C")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if talks_to_remote(args) {
            // No automatic maintenance behind a fetch or a push: git would start it in the
            // background, the sweep after the command ends it, and a ref lock it held then
            // fails the next fetch ("cannot lock ref … File exists"), which ticks with several
            // rounds, saving after each, run into.
            cmd.args(["-c", "maintenance.auto=false", "-c", "gc.auto=0"]);
        }
        let token = credentials::token(self.token);
        if let Some(token) = token.filter(|_| talks_to_remote(args)) {
            // Only our token, only through our askpass: no helper, no ssh program of theirs.
            cmd.args(["-c", "credential.helper=", "-c", "core.sshCommand=ssh"]);
            if let Ok(exe) = std::env::current_exe() {
                cmd.env("GIT_ASKPASS", exe)
                    .env(credentials::ASKPASS_TOKEN_VAR, token);
            }
        } else if !talks_to_remote(args) {
            cmd.args(["-c", "credential.helper="]);
        }
        cmd.args(args);
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    /// Runs `cmd` (git with `args`) to its end, kept by the reaper while it runs (so an exit at
    /// once ends it, `reaper::end_all`). A command that talks to a remote (the one kind that
    /// holds a token, for its askpass) starts only once whatever the runner's earlier git
    /// commands left running has been ended (`reaper::sweep`: a background process of a git,
    /// which no process group holds), and what it left itself is ended after it.
    ///
    /// A git the runner's own interrupt ended before it ran is run again, once
    /// ([`cut_before_it_ran`]).
    fn output_of(&self, args: &[&str], cmd: &mut Command) -> std::io::Result<std::process::Output> {
        if self.beside_a_run {
            let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn()?;
            let pid = child.id();
            crate::reaper::keep(pid);
            let out = child.wait_with_output();
            crate::reaper::release(pid);
            return out;
        }
        let remote = talks_to_remote(args);
        let mut again = true;
        loop {
            if remote {
                crate::reaper::sweep();
            }
            let child = crate::reaper::start(cmd)?;
            let pid = child.id();
            let out = child.wait_with_output();
            crate::reaper::release(pid);
            if remote {
                crate::reaper::sweep();
            }
            match out {
                Ok(out) if again && cut_before_it_ran(&out.status, &out.stdout, &out.stderr) => {
                    again = false;
                }
                out => return out,
            }
        }
    }

    fn error(&self, args: &[&str], code: Option<i32>, detail: String) -> GitError {
        GitError {
            dir: self.dir.display().to_string(),
            args: args.join(" "),
            code,
            detail,
        }
    }

    /// The error of a git that ended with `status`, having printed `stderr` (and `stdout`):
    /// always git's own words, or, when it printed nothing, the signal that ended it or that it
    /// said nothing.
    fn failed(&self, args: &[&str], status: ExitStatus, stderr: &[u8], stdout: &[u8]) -> GitError {
        let mut said = String::from_utf8_lossy(stderr).trim().to_string();
        let printed = String::from_utf8_lossy(stdout).trim().to_string();
        if !printed.is_empty() {
            said = if said.is_empty() {
                printed
            } else {
                format!("{said}\n{printed}")
            };
        }
        let said = tail(&said, 2000);
        let detail = match (status.signal(), said.is_empty()) {
            (Some(signal), true) => format!(
                "ended by {} before it printed anything",
                signal_name(signal)
            ),
            (Some(signal), false) => {
                format!("ended by {}; it printed: {said}", signal_name(signal))
            }
            (None, true) => "git printed nothing".to_string(),
            (None, false) => said,
        };
        self.error(args, status.code(), detail)
    }

    /// Runs git and returns trimmed stdout; a non-zero exit is an error with stderr attached.
    pub fn run(&self, args: &[&str]) -> Result<String, GitError> {
        let out = self
            .output_of(args, &mut self.command(args))
            .map_err(|e| self.error(args, None, format!("could not start git: {e}")))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
        } else {
            Err(self.failed(args, out.status, &out.stderr, &out.stdout))
        }
    }

    /// Runs git with stdout written to `file` (large blobs never pass through memory).
    pub fn run_to_file(&self, args: &[&str], file: &Path) -> Result<(), GitError> {
        let out = std::fs::File::create(file).map_err(|e| {
            self.error(
                args,
                None,
                format!("could not create {}: {e}", file.display()),
            )
        })?;
        let mut cmd = self.command(args);
        cmd.stdout(out);
        let result = self
            .output_of(args, &mut cmd)
            .map_err(|e| self.error(args, None, format!("could not start git: {e}")))?;
        if result.status.success() {
            Ok(())
        } else {
            Err(self.failed(args, result.status, &result.stderr, &[]))
        }
    }

    /// Runs git and returns stdout as bytes (blobs).
    pub fn run_bytes(&self, args: &[&str]) -> Result<Vec<u8>, GitError> {
        let out = self
            .output_of(args, &mut self.command(args))
            .map_err(|e| self.error(args, None, format!("could not start git: {e}")))?;
        if out.status.success() {
            Ok(out.stdout)
        } else {
            Err(self.failed(args, out.status, &out.stderr, &[]))
        }
    }

    /// Runs git; `Ok(None)` when it exits non-zero (for questions like "is this an ancestor?").
    /// A git a signal ended gave no answer: an error.
    pub fn try_run(&self, args: &[&str]) -> Result<Option<String>, GitError> {
        let out = self
            .output_of(args, &mut self.command(args))
            .map_err(|e| self.error(args, None, format!("could not start git: {e}")))?;
        if out.status.signal().is_some() {
            return Err(self.failed(args, out.status, &out.stderr, &[]));
        }
        Ok(out
            .status
            .success()
            .then(|| String::from_utf8_lossy(&out.stdout).trim_end().to_string()))
    }

    /// Runs git with `input` on stdin, written from a thread so that a git answering while it
    /// reads (`hash-object --stdin-paths`) never fills its output pipe while we still write.
    /// Like [`Git::run`], a git the runner's interrupt ended before it ran is run again, once.
    pub fn run_with_input(&self, args: &[&str], input: &[u8]) -> Result<String, GitError> {
        let mut cmd = self.command(args);
        cmd.stdin(Stdio::piped());
        let mut out = self.fed(args, &mut cmd, input)?;
        if cut_before_it_ran(&out.status, &out.stdout, &out.stderr) {
            out = self.fed(args, &mut cmd, input)?;
        }
        self.output_to_result(args, out)
    }

    /// Runs `cmd` with `input` written to its stdin; what it printed, whatever its exit.
    fn fed(
        &self,
        args: &[&str],
        cmd: &mut Command,
        input: &[u8],
    ) -> Result<std::process::Output, GitError> {
        use std::io::Write;
        let mut child = crate::reaper::start(cmd)
            .map_err(|e| self.error(args, None, format!("could not start git: {e}")))?;
        let pid = child.id();
        let stdin = child.stdin.take();
        let written = std::thread::scope(|scope| {
            let writer = scope.spawn(move || match stdin {
                Some(mut stdin) => stdin.write_all(input),
                None => Ok(()),
            });
            let out = child.wait_with_output();
            (writer.join(), out)
        });
        crate::reaper::release(pid);
        match written {
            (Ok(Ok(())), Ok(out)) => Ok(out),
            (_, Ok(out)) if !out.status.success() => Ok(out),
            (Ok(Err(e)), _) => Err(self.error(args, None, format!("could not write to git: {e}"))),
            (_, Err(e)) => Err(self.error(args, None, format!("git did not finish: {e}"))),
            (Err(_), _) => Err(self.error(args, None, "the writing thread failed".to_string())),
        }
    }

    fn output_to_result(
        &self,
        args: &[&str],
        out: std::process::Output,
    ) -> Result<String, GitError> {
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
        } else {
            Err(self.failed(args, out.status, &out.stderr, &[]))
        }
    }

    /// Runs git and returns what it printed and its exit code, whatever the code (for
    /// commands whose exit code is an answer, such as `merge-tree`). A git a signal ended gave
    /// no answer: an error.
    pub fn try_run_output(&self, args: &[&str]) -> Result<GitOutput, GitError> {
        let out = self
            .output_of(args, &mut self.command(args))
            .map_err(|e| self.error(args, None, format!("could not start git: {e}")))?;
        if out.status.signal().is_some() {
            return Err(self.failed(args, out.status, &out.stderr, &[]));
        }
        Ok(GitOutput {
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        })
    }

    /// Starts a long-lived git process with piped stdin, stdout and stderr, for conversations
    /// such as `cat-file --batch` or `fast-import`; [`Git::finish`] reaps it.
    /// Only for local commands: credentials live as long as one call, so a command that talks
    /// to a remote is refused here.
    pub fn spawn(&self, args: &[&str]) -> Result<std::process::Child, GitError> {
        if talks_to_remote(args) {
            return Err(self.error(
                args,
                None,
                "a command that talks to a remote cannot be spawned: run it with `run`".into(),
            ));
        }
        let mut cmd = self.command(args);
        // Forked, not spawned: a long-lived git cannot be run again should a signal to the
        // runner's group end it before its exec, so it is forked, and a forked child takes that
        // signal in the runner's handler, which does nothing outside the runner
        // (`process::interrupt`). A few per tick: the fork's cost does not add up.
        // SAFETY: the closure does nothing.
        unsafe {
            cmd.pre_exec(|| Ok(()));
        }
        // A child of ours on purpose: the sweep after a run must spare it.
        crate::reaper::start(cmd.stdin(Stdio::piped()))
            .map_err(|e| self.error(args, None, format!("could not start git: {e}")))
    }

    /// Waits for a process from [`Git::spawn`] (its stdin already closed) and returns what is
    /// left on its stdout; a non-zero exit is an error with stderr attached.
    pub fn finish(&self, args: &[&str], child: std::process::Child) -> Result<String, GitError> {
        let pid = child.id();
        let out = child.wait_with_output();
        crate::reaper::release(pid);
        let out = out.map_err(|e| self.error(args, None, format!("git did not finish: {e}")))?;
        if out.status.success() {
            Ok(String::from_utf8_lossy(&out.stdout).trim_end().to_string())
        } else {
            Err(self.failed(args, out.status, &out.stderr, &[]))
        }
    }

    /// An error about `args` found by the caller (e.g. a process that answered nonsense).
    pub fn failure(&self, args: &[&str], detail: impl Into<String>) -> GitError {
        self.error(args, None, detail.into())
    }

    /// The commit a revision names, or `None` if it does not exist.
    pub fn resolve(&self, rev: &str) -> Result<Option<String>, GitError> {
        self.try_run(&[
            "rev-parse",
            "--verify",
            "--quiet",
            &format!("{rev}^{{commit}}"),
        ])
    }

    pub fn branch_exists(&self, branch: &str) -> Result<bool, GitError> {
        Ok(self.resolve(&format!("refs/heads/{branch}"))?.is_some())
    }

    /// `.git` of the main repository, shared by all worktrees, read from the files of the work
    /// tree holding this folder (no process: a quiet tick asks this). Never asked of a git
    /// run there: only the runner's own repository is ever asked, and a git folder that its
    /// files do not name (an unreadable `commondir`) is an error, not a guess.
    pub fn common_dir(&self) -> Result<PathBuf, GitError> {
        work_tree_top(&self.dir)
            .and_then(|top| common_dir_at(&top))
            .ok_or_else(|| {
                self.error(
                    &["rev-parse", "--git-common-dir"],
                    None,
                    "no work tree with a readable .git (and commondir) holds this folder"
                        .to_string(),
                )
            })
    }

    pub fn is_repository(dir: &Path) -> bool {
        if git_dir_at(dir).is_some() {
            return true;
        }
        Git::new(dir)
            .try_run(&["rev-parse", "--git-dir"])
            .ok()
            .flatten()
            .is_some()
    }
}

/// The top of the work tree holding `dir`, as `git rev-parse --show-toplevel` finds it: the
/// nearest folder, `dir` or above, with a `.git` folder (a repository) or a `.git` file naming
/// its git folder (a linked worktree, a submodule). `None` outside any repository. Reads files
/// only: finding the repository costs no process.
pub fn work_tree_top(dir: &Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| git_dir_at(d).is_some())
        .map(Path::to_path_buf)
}

/// The git folder of the work tree whose top is `top`: its `.git` folder, or the folder its
/// `.git` file points to; `None` when `top` has neither (or it holds no `HEAD`).
fn git_dir_at(top: &Path) -> Option<PathBuf> {
    let dot_git = top.join(".git");
    let meta = std::fs::metadata(&dot_git).ok()?;
    let git_dir = if meta.is_dir() {
        dot_git
    } else {
        let text = std::fs::read_to_string(&dot_git).ok()?;
        top.join(text.trim().strip_prefix("gitdir:")?.trim())
    };
    git_dir.join("HEAD").exists().then_some(git_dir)
}

/// The common git folder of the work tree whose top is `top` (a linked worktree's `commondir`
/// file names it), read from the files.
fn common_dir_at(top: &Path) -> Option<PathBuf> {
    let git_dir = git_dir_at(top)?;
    match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) => {
            // `../..` from `.git/worktrees/<name>`: made plain, as git prints it.
            let common = git_dir.join(text.trim());
            Some(common.canonicalize().unwrap_or(common))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(git_dir),
        Err(_) => None,
    }
}

/// Whether a git ended by SIGINT or SIGTERM having printed nothing: a git of the runner's
/// leads a group of its own, which no signal to the runner's group reaches, and the runner
/// ends its own with SIGKILL; so such a git was reached in the moment it still shared the
/// runner's group, before it ran anything (`process::interrupt`), or by a signal sent to every
/// process, the runner's included. Either way, running it again, once, is what the runner's
/// save needs.
fn cut_before_it_ran(status: &ExitStatus, stdout: &[u8], stderr: &[u8]) -> bool {
    matches!(status.signal(), Some(libc::SIGINT | libc::SIGTERM))
        && stdout.is_empty()
        && stderr.is_empty()
}

/// How people name a signal: `SIGINT (2)`.
fn signal_name(signal: i32) -> String {
    let name = match signal {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    };
    format!("{name} ({signal})")
}

/// The last `max` characters of `text`.
fn tail(text: &str, max: usize) -> String {
    let count = text.chars().count();
    if count <= max {
        return text.to_string();
    }
    let cut: String = text.chars().skip(count - max).collect();
    format!("…{cut}")
}

/// An empty repository in a temporary folder, for tests: this crate's and the store's.
#[doc(hidden)]
pub fn temp_repo() -> (tempfile::TempDir, Git) {
    let dir = tempfile::tempdir().expect("temp dir");
    let git = Git::new(dir.path());
    git.run(&["init", "-q"]).expect("git init");
    (dir, git)
}
#[path = "git_numstat.rs"]
mod numstat;
#[cfg(test)]
#[path = "git_tests.rs"]
mod tests;
pub use numstat::{parse_numstat_z, NumstatEntry};

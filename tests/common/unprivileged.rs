//! Running the real binary as GitHub's hosted runner runs it: as a user who is not root, from a
//! shell whose environment holds the forge token (the composite action's step exports it), with
//! `$HOME/.local/bin` first on `PATH` (as on GitHub's Ubuntu images).
//!
//! Root reads every process's `/proc/<pid>/environ` whatever the sandbox, so an attack test run
//! as root proves nothing about what an agent can reach on a runner. When the tests run as root
//! (CI here), the ticks run as `nobody` (uid 65534) on folders handed over to it; when they run
//! as another user, as that user. Where root cannot switch users (no `CAP_SETUID`), the tests
//! say so loudly and run as root.

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use super::{GitRepo, Out, Setup};

/// The forge token in the parent shell's environment.
pub const CANARY: &str = "ghp_CANARYcanary0123456789abcdefghijklmn";

/// The folder of the reachable binary (`User::binary`), removed at exit.
static BINARY_DIR: OnceLock<PathBuf> = OnceLock::new();

extern "C" fn remove_binary_dir() {
    if let Some(dir) = BINARY_DIR.get() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// The user the ticks run as.
pub struct User {
    /// `(uid, gid)` to switch to; `None`: the tests' own user.
    pub ids: Option<(u32, u32)>,
}

/// The unprivileged user of this test process.
pub fn runner_user() -> &'static User {
    static USER: OnceLock<User> = OnceLock::new();
    USER.get_or_init(|| {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return User { ids: None };
        }
        let ids = (65534, 65534);
        let works = Command::new("/bin/true")
            .uid(ids.0)
            .gid(ids.1)
            .status()
            .is_ok_and(|s| s.success());
        if works {
            User { ids: Some(ids) }
        } else {
            eprintln!(
                "\n!!! ATTACK TESTS RUN AS ROOT: this root cannot switch to uid 65534 (no CAP_SETUID?). \
                 Root reads every process's environment whatever the sandbox, so these tests do not show \
                 what an agent can reach on a hosted runner. !!!\n"
            );
            User { ids: None }
        }
    })
}

impl User {
    /// Whether the ticks run as a user other than root.
    pub fn unprivileged(&self) -> bool {
        // SAFETY: geteuid has no preconditions.
        self.ids.is_some() || unsafe { libc::geteuid() } != 0
    }

    /// The binary as the user can reach it. The build folder may sit inside a folder only root
    /// may enter (a clone in a `mktemp -d` folder): the user then runs a link to it made in a
    /// folder of its own, removed when the tests end.
    pub fn binary(&self) -> PathBuf {
        static REACHABLE: OnceLock<PathBuf> = OnceLock::new();
        let built = PathBuf::from(env!("CARGO_BIN_EXE_opentiger"));
        if self.ids.is_none() {
            return built;
        }
        REACHABLE
            .get_or_init(|| {
                let dir =
                    std::env::temp_dir().join(format!("opentiger-bin-{}", std::process::id()));
                let _ = std::fs::remove_dir_all(&dir);
                std::fs::create_dir(&dir).expect("binary folder");
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755))
                    .expect("chmod");
                let link = dir.join("opentiger");
                if std::fs::hard_link(&built, &link).is_err() {
                    std::fs::copy(&built, &link).expect("copy the binary");
                }
                BINARY_DIR.get_or_init(|| dir.clone());
                // SAFETY: registers a plain extern "C" function with no captured state.
                unsafe { libc::atexit(remove_binary_dir) };
                link
            })
            .clone()
    }

    /// Makes the user own `paths` (recursively), so its ticks can write there.
    pub fn give(&self, paths: &[&Path]) {
        let Some((uid, gid)) = self.ids else {
            return;
        };
        for path in paths {
            let status = Command::new("chown")
                .args(["-R", &format!("{uid}:{gid}")])
                .arg(path)
                .status()
                .expect("chown");
            assert!(status.success(), "chown {}", path.display());
        }
    }

    /// `program` to be run as the user.
    pub fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new(program);
        if let Some((uid, gid)) = self.ids {
            cmd.uid(uid).gid(gid);
        }
        cmd
    }

    /// Whether `program --version` runs for the user with this `PATH` and environment.
    pub fn can_run(&self, program: &str, env: &[(&str, &str)]) -> bool {
        self.command(program)
            .arg("--version")
            .env_clear()
            .envs(env.iter().copied())
            .current_dir("/")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    }
}

/// A repository under attack, run as the runner's user: its own temp folder, its own `HOME`
/// (with `~/.local/bin` and `~/.cargo/bin` first on `PATH`), and a loot folder no agent's
/// sandbox lets it write: what lands there ran outside the sandbox.
pub struct Jail {
    pub g: GitRepo,
    pub tmp: tempfile::TempDir,
    pub home: tempfile::TempDir,
    pub loot: PathBuf,
    pub user: &'static User,
}

impl Jail {
    pub fn new(setup: Setup) -> Jail {
        let g = GitRepo::with(setup);
        let tmp = tempfile::tempdir().expect("tmp");
        let home = tempfile::tempdir().expect("home");
        for dir in [".local/bin", ".cargo/bin"] {
            std::fs::create_dir_all(home.path().join(dir)).expect("home bin");
        }
        std::fs::create_dir_all(g.tools_path().join("loot")).expect("loot folder");
        let loot = g.tools_path().join("loot/loot.txt");
        Jail {
            g,
            tmp,
            home,
            loot,
            user: runner_user(),
        }
    }

    /// A case whose agents run under Landlock (`sandbox.filesystem: landlock`) and in a view
    /// of their own where the kernel allows it, allowed to write the loot folder besides their
    /// own (`sandbox.writable`): what an agent found, it drops there, and so does whatever ran
    /// outside its sandbox. The tools folder, where the case's agent programs and their helper
    /// scripts live (as a CLI's installation would), is readable in their view
    /// (`sandbox.readable`).
    pub fn confined(setup: Setup) -> Jail {
        let jail = Jail::new(setup);
        let config_path = jail.g.path().join(".opentiger.yml");
        let config = std::fs::read_to_string(&config_path).expect("config");
        let sandbox = format!(
            "sandbox:\n  filesystem: landlock\n  writable: [\"{}\"]\n  readable: [\"{}\"]\n",
            jail.loot.parent().expect("loot folder").display(),
            jail.g.tools_path().display()
        );
        assert!(
            config.contains("sandbox:\n  filesystem: none\n"),
            "{config}"
        );
        std::fs::write(
            &config_path,
            config.replace("sandbox:\n  filesystem: none\n", &sandbox),
        )
        .expect("config");
        jail
    }

    /// What agents and escaped programs dropped in the loot folder.
    pub fn loot_text(&self) -> String {
        let mut text = String::new();
        for entry in std::fs::read_dir(self.loot.parent().expect("loot folder"))
            .into_iter()
            .flatten()
            .flatten()
        {
            text.push_str(&String::from_utf8_lossy(
                &std::fs::read(entry.path()).unwrap_or_default(),
            ));
        }
        text
    }

    /// The `PATH` of the runner's step: its home's bins first, as on GitHub's images.
    pub fn path_var(&self) -> String {
        let h = self.home.path().display();
        format!("{h}/.local/bin:{h}/.cargo/bin:/usr/local/bin:/usr/bin:/bin")
    }

    /// Hands every folder of the case to the user (files the test wrote since included).
    pub fn hand_over(&self) {
        self.user.give(&[
            self.g.path(),
            self.g.tools_path(),
            self.tmp.path(),
            self.home.path(),
        ]);
    }

    /// `opentiger --repo <repo> --now <now> <args>` as the user, from a bash whose environment
    /// holds the canary token, killed after 120 s.
    pub fn run(&self, now: &str, args: &[&str], env: &[(&str, &str)]) -> Out {
        let child = self.spawn(now, args, env);
        wait_bounded(child)
    }

    /// The same, started: the child is the step's bash, the tick its only child.
    pub fn spawn(&self, now: &str, args: &[&str], env: &[(&str, &str)]) -> std::process::Child {
        self.spawn_after(&[], now, args, env)
    }

    /// The same, the tick started by `common::peak`'s small parent, which writes its peak to
    /// `report`: the step's bash, then the parent, then the tick.
    pub fn spawn_measured(
        &self,
        report: &Path,
        now: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> std::process::Child {
        self.spawn_after(&super::peak::parent(report), now, args, env)
    }

    /// The step's bash running `before`, then the tick.
    fn spawn_after(
        &self,
        before: &[std::ffi::OsString],
        now: &str,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> std::process::Child {
        self.hand_over();
        let mut cmd = self.user.command("/bin/bash");
        // Not `exec`: the shell stays the tick's parent, with the token in its environment.
        cmd.args(["-c", "\"$@\"; status=$?; exit $status", "step-shell"])
            .args(before)
            .arg(self.user.binary())
            .arg("--repo")
            .arg(self.g.path())
            .args(["--now", now])
            .args(args)
            .current_dir(self.g.path())
            .env_clear()
            .env("GITHUB_TOKEN", CANARY)
            .env("HOME", self.home.path())
            .env("PATH", self.path_var())
            .env("TMPDIR", self.tmp.path())
            .env("LANG", "C.UTF-8")
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        cmd.spawn().expect("start opentiger")
    }

    pub fn add_task(&self, args: &[&str]) -> String {
        let mut all = vec!["task", "add"];
        all.extend_from_slice(args);
        let out = self.run(super::NOW, &all, &[]).ok();
        out.stdout.trim().to_string()
    }

    /// The task's runs as `task show --json` lists them, newest first.
    pub fn runs(&self, id: &str) -> Vec<serde_json::Value> {
        let shown = self
            .run(super::NOW, &["task", "show", id, "--json"], &[])
            .ok()
            .json();
        shown["runs"].as_array().cloned().unwrap_or_default()
    }

    /// Processes still alive whose command line holds `marker` (a case's tools folder).
    pub fn alive_with(&self, marker: &str) -> Vec<String> {
        let me = std::process::id().to_string();
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_str()
                    .is_some_and(|n| n.parse::<u32>().is_ok())
            })
            .filter(|e| e.file_name().to_str() != Some(me.as_str()))
            .filter_map(|e| {
                let cmdline = std::fs::read(e.path().join("cmdline")).ok()?;
                let text = String::from_utf8_lossy(&cmdline).replace('\0', " ");
                let stat = std::fs::read_to_string(e.path().join("stat")).ok()?;
                let zombie = stat.rsplit(')').next()?.trim_start().starts_with('Z');
                (text.contains(marker) && !zombie).then_some(text)
            })
            .collect()
    }
}

/// Waits at most 120 s for `child`, then kills it and fails.
pub fn wait_bounded(mut child: std::process::Child) -> Out {
    let deadline = Instant::now() + Duration::from_secs(120);
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("output");
            panic!("opentiger hung: {}", String::from_utf8_lossy(&out.stderr));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    child.wait_with_output().expect("output").into()
}

/// `text` in base64 (the standard alphabet, padded): how a token hides in an HTTP header.
pub fn base64_of(text: &str) -> String {
    const ABC: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let bytes = text.as_bytes();
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(ABC[((n >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

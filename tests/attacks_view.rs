//! Issue 47: what an agent sees of the machine, tried as an attacker would, as GitHub's runner
//! user (`common::unprivileged`: the ticks run as an unprivileged user from a shell whose
//! environment holds the token). In its view of its own (the default where user namespaces are
//! allowed) a per-user service's socket file, a token in the runner's home and the runner's
//! processes are simply not there; without one (`sandbox.view: none`) the socket filter still
//! refuses the service. Memory, processes, one file and the temp folder are bounded: the run
//! that reaches one fails naming the limit and its setting, and the next task lands.
//!
//! The agent script reads its prompt: a task whose title says ATTACK runs the attack, any other
//! task writes `plain.txt`.

use crate::common;
#[path = "attacks_view/limits.rs"]
mod limits;

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use common::unprivileged::{Jail, CANARY};
use common::{git, minute, Setup};

/// The model key in the step shell's environment, beside the token (`CANARY`).
const MODEL_KEY: &str = "sk-ant-CANARYmodelKEY0123456789abcdefghij";

/// One case: its jail, the agent's attack.
struct Case {
    jail: Jail,
}

impl Case {
    /// A case with these top-level configuration lines (a `sandbox:` block is kept as
    /// written, under the jail's Landlock lines).
    fn new(extra: &'static str) -> Case {
        Case {
            jail: Jail::confined(Setup {
                extra,
                ..Setup::default()
            }),
        }
    }

    /// The agent: `attack` (bash lines, `$LOOT` set) for the task titled ATTACK.
    fn agent(&self, attack: &str) {
        self.jail.g.agent(&format!(
            "#!/bin/bash\nLOOT={loot}\nif grep -q ATTACK \"$OPENTIGER_PROMPT_FILE\"; then\n{attack}\necho attacked > attacked.txt\nelse\necho plain > plain.txt\nfi\n",
            loot = self.jail.loot.display()
        ));
    }

    /// The attack task and a plain one; their ids.
    fn tasks(&self) -> (String, String) {
        let attack = self
            .jail
            .add_task(&["--title", "ATTACK", "--goal", "anything"]);
        let plain = self
            .jail
            .add_task(&["--title", "Plain", "--goal", "plain.txt says plain"]);
        (attack, plain)
    }

    /// A tick at `at` minutes, a model key beside the token in the step shell: it succeeds
    /// and neither canary is found anywhere.
    fn tick(&self, at: u32) -> common::Out {
        let key = [("ANTHROPIC_API_KEY", MODEL_KEY)];
        let out = self.jail.run(&minute(at), &["tick"], &key);
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        let loot = self.jail.loot_text();
        let all = git(self.jail.g.path(), &["log", "--all", "-p", "--format=%B"]);
        for canary in [CANARY, MODEL_KEY] {
            assert!(!loot.contains(canary), "a canary was found:\n{loot}");
            assert!(!out.stdout.contains(canary) && !out.stderr.contains(canary));
            assert!(!all.contains(canary), "{all}");
        }
        out
    }

    /// Ticks until the plain task landed (at most 6 ticks); their output.
    fn until_plain_lands(&self) -> String {
        let mut said = String::new();
        for i in 0..6 {
            let out = self.tick(i * 10);
            said.push_str(&out.stdout);
            said.push_str(&out.stderr);
            if self.landed("plain.txt") {
                return said;
            }
        }
        panic!("the plain task never landed:\n{said}\n{}", self.loot());
    }

    fn landed(&self, file: &str) -> bool {
        self.jail.g.file_on_main(file).is_some()
    }

    fn loot(&self) -> String {
        self.jail.loot_text()
    }

    /// A folder of its own the runner's user may read (a temp folder is 0700).
    fn open_folder(&self, name: &str) -> PathBuf {
        let dir = self.jail.g.tools_path().parent().unwrap().join(format!(
            "{}-{name}",
            self.jail
                .g
                .tools_path()
                .file_name()
                .unwrap()
                .to_string_lossy()
        ));
        std::fs::create_dir_all(&dir).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        dir
    }
}

/// A per-user service listening on a socket file, as `systemd --user`'s bus, a rootless docker
/// API or an IDE's daemon would: it logs every line it receives (a real one would run what it
/// is asked to, outside any sandbox) and answers `ok`.
struct Service {
    path: PathBuf,
    heard: Arc<Mutex<Vec<String>>>,
}

impl Service {
    fn start(path: PathBuf) -> Service {
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o777)).unwrap();
        let heard = Arc::new(Mutex::new(Vec::new()));
        let log = heard.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let mut reply = conn.try_clone().unwrap();
                for line in BufReader::new(conn).lines().map_while(Result::ok) {
                    log.lock().unwrap().push(line);
                    let _ = reply.write_all(b"ok\n");
                }
            }
        });
        Service { path, heard }
    }

    fn heard(&self) -> Vec<String> {
        self.heard.lock().unwrap().clone()
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The attack on the services: connect to each socket file, ask it to run a command that
/// reads every process's environment, note in the loot what happened.
const KNOCK: &str = r#"import socket, sys
loot = sys.argv[1]
for path in sys.argv[2:]:
    try:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.sendall(b"RUN cat /proc/*/environ\n")
        s.recv(16)
        said = f"reached: {path}"
    except OSError as e:
        said = f"refused: {path}: {e.strerror}"
    open(loot, "a").write(said + "\n")
"#;

/// The services in the runner's home and in the host's `/tmp`, and the agent knocking on them
/// in a case with `extra` configuration lines; the loot after the plain task landed.
fn knock(extra: &'static str) -> (Case, Vec<Service>, String) {
    let case = Case::new(extra);
    let home = case.jail.home.path().join(".service");
    std::fs::create_dir_all(&home).unwrap();
    let tmp = PathBuf::from(format!("/tmp/opentiger-bus-{}", std::process::id()));
    let services = vec![
        Service::start(home.join("bus")),
        Service::start(tmp.with_extension(extra.len().to_string())),
    ];
    let script = case.jail.g.tools_path().join("knock.py");
    std::fs::write(&script, KNOCK).unwrap();
    let paths: Vec<String> = services
        .iter()
        .map(|s| s.path.display().to_string())
        .collect();
    case.agent(&format!(
        "python3 {} \"$LOOT\" {}",
        script.display(),
        paths.join(" ")
    ));
    case.tasks();
    let said = case.until_plain_lands();
    assert!(case.landed("attacked.txt"), "{said}");
    (case, services, said)
}

#[test]
fn in_its_view_an_agent_finds_no_socket_file_of_the_runner_s_user() {
    let (case, services, _) = knock("");
    let loot = case.loot();
    for service in &services {
        let refused = format!(
            "refused: {}: No such file or directory",
            service.path.display()
        );
        assert!(loot.contains(&refused), "{loot}");
        assert_eq!(
            service.heard(),
            Vec::<String>::new(),
            "the service heard it"
        );
    }
}

#[test]
fn without_a_view_the_socket_filter_refuses_the_service() {
    let (case, services, said) = knock("sandbox:\n  filesystem: none\n  view: none\n");
    let loot = case.loot();
    for service in &services {
        let refused = format!("refused: {}: Permission denied", service.path.display());
        assert!(loot.contains(&refused), "{loot}");
        assert_eq!(
            service.heard(),
            Vec::<String>::new(),
            "the service heard it"
        );
    }
    // The tick says what is not enforced there.
    assert!(
        said.contains("warning: agents' files: sandbox.view is none: no view of their own"),
        "{said}"
    );
}

/// The twin: unconfined (`sandbox.filesystem: none`), the agent reaches both services.
#[test]
fn unconfined_an_agent_reaches_the_service() {
    let case = Case {
        jail: Jail::new(Setup::default()),
    };
    let home = case.jail.home.path().join(".service");
    std::fs::create_dir_all(&home).unwrap();
    let service = Service::start(home.join("bus"));
    let script = case.jail.g.tools_path().join("knock.py");
    std::fs::write(&script, KNOCK).unwrap();
    case.agent(&format!(
        "python3 {} \"$LOOT\" {}",
        script.display(),
        service.path.display()
    ));
    case.tasks();
    case.until_plain_lands();
    assert!(case.loot().contains("reached: "), "{}", case.loot());
    assert_eq!(service.heard(), ["RUN cat /proc/*/environ"]);
}

const HOME_TOKEN: &str = "gho_HOMEtokenNEVERgivenTOopentiger0123456789";

#[test]
fn a_token_in_the_runner_s_home_is_not_in_the_view_and_sandbox_readable_is() {
    let case = Case::new("");
    let gh = case.jail.home.path().join(".config/gh");
    std::fs::create_dir_all(&gh).unwrap();
    std::fs::write(
        gh.join("hosts.yml"),
        format!("github.com:\n  oauth_token: {HOME_TOKEN}\n"),
    )
    .unwrap();
    let shared = case.open_folder("shared");
    std::fs::write(shared.join("notes.txt"), "shared-notes-visible\n").unwrap();
    allow_reading(&case, &shared);
    let home = case.jail.home.path().display();
    case.agent(&format!(
        "cat {home}/.config/gh/hosts.yml >> \"$LOOT\" 2>&1\nrev {home}/.config/gh/hosts.yml > leaked.txt 2>/dev/null\nls -a {home} >> \"$LOOT\" 2>&1\ncat {shared}/notes.txt >> \"$LOOT\"",
        shared = shared.display()
    ));
    case.tasks();
    case.until_plain_lands();
    let loot = case.loot();
    assert!(loot.contains("shared-notes-visible"), "the twin: {loot}");
    assert!(!loot.contains(HOME_TOKEN), "{loot}");
    assert!(
        loot.contains("hosts.yml: No such file or directory"),
        "the twin: it looked: {loot}"
    );
    assert!(
        !loot.lines().any(|l| l == ".config"),
        "the runner's home was listed: {loot}"
    );
    let reversed: String = HOME_TOKEN.chars().rev().collect();
    let all = git(case.jail.g.path(), &["log", "--all", "-p", "--format=%B"]);
    assert!(
        !all.contains(HOME_TOKEN) && !all.contains(&reversed),
        "{all}"
    );
}

/// Adds `dir` to the case's `sandbox.readable`.
fn allow_reading(case: &Case, dir: &Path) {
    let path = case.jail.g.path().join(".opentiger.yml");
    let config = std::fs::read_to_string(&path).unwrap();
    let tools = case.jail.g.tools_path().display().to_string();
    let old = format!("readable: [\"{tools}\"]");
    assert!(config.contains(&old), "{config}");
    let new = format!("readable: [\"{tools}\", \"{}\"]", dir.display());
    std::fs::write(&path, config.replace(&old, &new)).unwrap();
}

#[test]
fn an_agent_sees_only_its_own_processes() {
    let case = Case::new("");
    case.agent(
        "echo \"pids: $(ls /proc | grep -E '^[0-9]+$' | tr '\\n' ' ')\" >> \"$LOOT\"\ncat /proc/1/environ >> \"$LOOT\" 2>/dev/null\nfor p in /proc/[0-9]*; do tr '\\0' '\\n' < $p/environ 2>/dev/null | grep -a TOKEN >> \"$LOOT\"; done",
    );
    case.tasks();
    let shell = case.jail.spawn(&minute(0), &["tick"], &[]);
    let shell_pid = shell.id();
    let out = common::unprivileged::wait_bounded(shell);
    assert_eq!(out.code, 0, "{}", out.stderr);
    case.until_plain_lands();
    let loot = case.loot();
    let line = loot
        .lines()
        .find_map(|l| l.strip_prefix("pids: "))
        .unwrap_or_else(|| panic!("the twin: it listed /proc: {loot}"));
    let pids: Vec<u32> = line
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    assert!(pids.contains(&1), "its namespace's first process: {pids:?}");
    assert!(
        !pids.contains(&shell_pid),
        "the step shell is seen: {pids:?}"
    );
    assert!(pids.len() <= 10, "more than its own processes: {pids:?}");
    assert!(!loot.contains("TOKEN"), "{loot}");
}

#[test]
fn sandbox_require_refuses_to_run_without_a_view_and_runs_with_one() {
    let case = Case::new("sandbox:\n  filesystem: none\n  view: none\n  require: true\n");
    case.agent("true");
    let (attack, _) = case.tasks();
    case.tick(0);
    let runs = case.jail.runs(&attack);
    let error = runs[0]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("sandbox.require is true, but a protection is not in force here (own view: sandbox.view is none"),
        "{error}"
    );
    assert!(!case.landed("attacked.txt"));
    // The twin: with the view (the default), the same requirement runs it.
    let twin = Case::new("sandbox:\n  filesystem: none\n  require: true\n");
    twin.agent("true");
    twin.tasks();
    twin.until_plain_lands();
    assert!(twin.landed("attacked.txt"));
}

#[test]
fn doctor_says_which_walls_and_limits_hold() {
    let case = Case::new("sandbox:\n  filesystem: none\n  view: none\n");
    let out = case.jail.run(common::NOW, &["doctor"], &[]);
    let text = format!("{}{}", out.stdout, out.stderr);
    for said in [
        "own view: sandbox.view is none: no view of their own",
        "unix sockets: a seccomp filter refuses every unix socket",
        "resource limits: each agent run and check: limits.run.memory_mb = 4096 MiB, limits.run.processes = 1024, limits.run.file_mb = 4096 MiB, limits.run.tmp_mb = 1024 MiB",
    ] {
        assert!(text.contains(said), "{said:?} not in:\n{text}");
    }
    let view = Case::new("");
    let out = view.jail.run(common::NOW, &["doctor"], &[]);
    let text = format!("{}{}", out.stdout, out.stderr);
    assert!(
        text.contains("own view: agents and checks run in a view of their own"),
        "{text}"
    );
}

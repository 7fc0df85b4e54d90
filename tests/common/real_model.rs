//! The opt-in real model (`tests/real_model.rs`, `tests/eval_real_model.rs`): the pinned pieces
//! installed by `scripts/real-model.sh`, and the model served on 127.0.0.1 by
//! `scripts/real-model-server.py`, which logs the server's own token counts.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The name the server gives the model, and aider's model (litellm's OpenAI-compatible route).
pub const ALIAS: &str = "smollm2-135m";

/// The server, killed when the test ends.
pub struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Runs `scripts/real-model.sh`: the model file, the server's python, aider's bin folder.
pub fn install() -> (PathBuf, PathBuf, PathBuf) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/real-model.sh");
    let out = Command::new(&script)
        .output()
        .expect("run scripts/real-model.sh");
    assert!(
        out.status.success(),
        "scripts/real-model.sh failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<PathBuf> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(PathBuf::from)
        .collect();
    assert_eq!(lines.len(), 3, "{lines:?}");
    (lines[0].clone(), lines[1].clone(), lines[2].clone())
}

/// A GET of `path` on the server: its status line, or `None` while it does not answer.
fn get(port: u16, path: &str) -> Option<String> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).ok()?;
    answer.lines().next().map(String::from)
}

/// Serves `model` as [`ALIAS`] on a free port, each answer's token counts appended to
/// `usage_log`: the server (killed when dropped) and its port, once it answers.
pub fn serve(model: &Path, python: &Path, usage_log: &Path) -> (Server, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    (serve_at(model, python, usage_log, port, ALIAS), port)
}

/// Serves `model` as `alias` on `port` of 127.0.0.1 (see [`serve`]), once it answers.
pub fn serve_at(model: &Path, python: &Path, usage_log: &Path, port: u16, alias: &str) -> Server {
    let exchanges = usage_log.with_file_name("exchanges.jsonl");
    assert!(
        std::net::TcpListener::bind(("127.0.0.1", port)).is_ok(),
        "port {port} of 127.0.0.1 is taken: the model is served there"
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/real-model-server.py");
    let child = Command::new(python)
        .arg(script)
        .arg(model)
        .arg(alias)
        .arg(port.to_string())
        .arg(usage_log)
        .arg(&exchanges)
        .stdin(Stdio::null())
        .spawn()
        .expect("start the model server");
    let server = Server(child);
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(180) {
        if get(port, "/v1/models").is_some_and(|s| s.contains(" 200")) {
            return server;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    panic!("the model server did not answer on port {port} within 180 s");
}

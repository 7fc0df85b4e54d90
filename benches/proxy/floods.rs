//! The proxy's bounds under an agent's floods (issue 46): connections holding unfinished request
//! heads, and thousands of refused hosts — what the process holds meanwhile, and what the
//! refusals come to in the state and in `status --json`.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use opentiger::egress::MAX_CONNECTIONS;

use super::{door, ms, proxy_addr, rss_kib};

fn open_files() -> usize {
    std::fs::read_dir("/proc/self/fd").map_or(0, |d| d.count())
}

/// `count` connections, each sending an unfinished 60 KB head and held: resident memory and
/// files before, at the peak, and once the proxy dropped the overdue heads.
pub fn connections(count: usize) {
    let door = door(super::stand_in());
    let proxy = proxy_addr(&door);
    let (rss_before, files_before) = (rss_kib(), open_files());
    let head = format!(
        "GET /anthropic/v1/models HTTP/1.1\r\nhost: x\r\nx-slow: {}",
        "a".repeat(60_000)
    );
    let start = Instant::now();
    let mut held = Vec::with_capacity(count);
    for _ in 0..count {
        let Ok(mut s) = TcpStream::connect(proxy) else {
            continue;
        };
        let _ = s.set_nonblocking(true);
        let _ = s.write(head.as_bytes());
        held.push(s);
    }
    std::thread::sleep(Duration::from_millis(500));
    let (rss_peak, files_peak) = (rss_kib(), open_files());
    let open = door.session().open_connections();
    let mut turned_away = 0;
    for s in &mut held {
        let _ = s.set_nonblocking(false);
        let _ = s.set_read_timeout(Some(Duration::from_millis(20)));
        let mut answer = [0u8; 12];
        if s.read(&mut answer)
            .is_ok_and(|n| answer[..n].starts_with(b"HTTP/1.1 503"))
        {
            turned_away += 1;
        }
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while door.session().open_connections() > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    let dropped_after = start.elapsed();
    println!(
        "{count} connections with unfinished 60 KB heads: {open} held (cap {MAX_CONNECTIONS}), {turned_away} turned away; resident memory {rss_before} KiB before, {rss_peak} KiB held (+{} KiB); files held by the proxy +{} (beyond this bench's own {count}); all dropped {:.1} s after the first",
        rss_peak.saturating_sub(rss_before),
        files_peak.saturating_sub(files_before + count),
        dropped_after.as_secs_f64()
    );
    drop(held);
}

/// `count` CONNECTs to distinct hosts off the allow list, a thousand to a connection: their
/// time, the refusals' size, and `status --json` on a state holding them.
pub fn refusals(count: usize) {
    let door = door(super::stand_in());
    let proxy = proxy_addr(&door);
    let start = Instant::now();
    let mut answered = 0;
    for batch in (0..count).collect::<Vec<_>>().chunks(1000) {
        let Ok(mut s) = TcpStream::connect(proxy) else {
            continue;
        };
        let mut requests: String = batch
            .iter()
            .map(|i| {
                format!("CONNECT h{i}.flood.test:443 HTTP/1.1\r\nhost: h{i}.flood.test:443\r\n\r\n")
            })
            .collect();
        requests.push_str("GET /none/ HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n");
        let _ = s.write_all(requests.as_bytes());
        let mut answers = String::new();
        let _ = s.read_to_string(&mut answers);
        answered += answers.matches("HTTP/1.1 403").count();
    }
    let took = start.elapsed();
    let refused = door.close().refused;
    let json = serde_json::to_string(&refused).unwrap_or_default();
    println!(
        "{count} refused hosts: {answered} refusals in {:.2} s ({:.1} µs each); recorded as {} entries, {} bytes of JSON",
        took.as_secs_f64(),
        super::us(took) / count.max(1) as f64,
        refused.len(),
        json.len()
    );
    status_after(refused);
}

/// `status --json` of a repository whose state holds `refused` for one judge's review and one
/// task's run (as the runner records them).
fn status_after(refused: Vec<opentiger::model::network::Refusal>) {
    use opentiger::store::{AgentSpend, Store, Writer};
    let dir = tempfile::tempdir().expect("temp");
    let repo = dir.path();
    let git = |args: &[&str]| {
        std::process::Command::new("git")
            .current_dir(repo)
            .args(["-c", "user.name=b", "-c", "user.email=b@b"])
            .args(args)
            .output()
            .expect("git")
    };
    git(&["init", "-q", "-b", "main"]);
    std::fs::write(repo.join(".opentiger.yml"), "mode: local-git\n").expect("config");
    git(&["add", "-A"]);
    git(&["commit", "-q", "-m", "initial"]);
    let mut store = Store::open_file(&repo.join(".opentiger/state.sqlite")).expect("state");
    for task in ["a", "b"] {
        let spend = AgentSpend {
            role: "judge".to_string(),
            task_id: Some(opentiger::model::TaskId::from(task)),
            refused: refused.clone(),
            ..AgentSpend::default()
        };
        let writer = Writer {
            tick_id: None,
            actor: "bench",
            now: opentiger::time::Timestamp(0),
        };
        store.record_agent_spend(&spend, writer).expect("record");
    }
    drop(store);
    let start = Instant::now();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_opentiger"))
        .args(["--repo", repo.to_str().unwrap_or("."), "status", "--json"])
        .output()
        .expect("status");
    println!(
        "status --json on that state: {:.0} ms, {} bytes (exit {})",
        ms(start.elapsed()),
        out.stdout.len(),
        out.status.code().unwrap_or(-1)
    );
}

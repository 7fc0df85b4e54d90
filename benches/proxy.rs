//! `cargo bench --bench proxy`: what opentiger's egress proxy costs (issues 37 and 46).
//!
//! - Added latency per request: the same small JSON answer fetched from a stand-in model API
//!   directly, then through a door on the proxy (its model route: key in its slot, body read for
//!   tools, answer metered and filtered for secrets), over one keep-alive connection each;
//!   medians and 99th percentiles.
//! - The secret filter alone: a long SSE answer through `scrub::Scrubber` in 64 KiB chunks,
//!   with no secret and with four.
//! - A spawn in a network namespace of its own (`process::run` of `true`), against one
//!   without, for scale.
//! - Memory with streaming answers: a long SSE answer (Anthropic events, `PROXY_BENCH_MB`
//!   megabytes, default 256) streamed through the proxy and read by the client as it comes;
//!   the process's resident memory is sampled while it streams, and the metered tokens are
//!   checked against what the stand-in sent.
//! - Floods (`proxy/floods.rs`): 1,500 connections each holding an unfinished 60 KB request
//!   head (`PROXY_BENCH_SLOW`), then 20,000 refused hosts (`PROXY_BENCH_REFUSED`): resident
//!   memory, files held, the refusals' size, and `status --json` on a state holding them.
//!
//! Figures, not assertions.

#[path = "proxy/floods.rs"]
mod floods;

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use opentiger::config::{AgentRole, NetworkUser};
use opentiger::egress::{self, Door, SessionSpec};
use opentiger::model::Role;
use opentiger::sandbox::NetIsolation;

const SMALL: &str = r#"{"type":"message","model":"claude-sonnet-4-5","content":[{"type":"text","text":"ok"}],"usage":{"input_tokens":1200,"output_tokens":80}}"#;

fn main() {
    let requests: usize = env_or("PROXY_BENCH_REQUESTS", 2000);
    let megabytes: usize = env_or("PROXY_BENCH_MB", 256);
    let upstream = stand_in();
    let door = door(upstream);
    let proxy = proxy_addr(&door);

    let key = door
        .env()
        .iter()
        .find(|(k, _)| k == "ANTHROPIC_API_KEY")
        .map(|(_, v)| v.clone())
        .unwrap_or_default();
    let direct = timings(upstream, "/v1/messages", &key, requests);
    let proxied = timings(proxy, "/anthropic/v1/messages", &key, requests);
    println!(
        "small JSON answer, direct:          median {:>7.1} µs, p99 {:>7.1} µs ({requests} requests)",
        us(pct(&direct, 50)),
        us(pct(&direct, 99))
    );
    println!(
        "small JSON answer, through proxy:   median {:>7.1} µs, p99 {:>7.1} µs",
        us(pct(&proxied, 50)),
        us(pct(&proxied, 99))
    );
    println!(
        "added per request:                  median {:>7.1} µs",
        us(pct(&proxied, 50)) - us(pct(&direct, 50))
    );
    let metered = door.session().traffic().metering;
    println!(
        "metered: {} answers, {} input tokens",
        metered.total().answers,
        metered.total().input
    );

    filter_alone(megabytes);
    namespace_spawns();
    streaming(upstream, megabytes);
    floods::connections(env_or("PROXY_BENCH_SLOW", 1500));
    floods::refusals(env_or("PROXY_BENCH_REFUSED", 20_000));
}

pub fn env_or(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// What a runner typically holds besides the route's key: another provider's key, two forge
/// tokens.
fn held() -> Vec<String> {
    vec![
        "sk-proj-bench-openai-0123456789abcdef".to_string(),
        "ghs_benchINSTALLATIONtoken0123456789ab".to_string(),
        "ghp_benchPUSHtoken0123456789abcdefghij".to_string(),
    ]
}

/// A door for a worker whose Anthropic route reaches `upstream`.
pub fn door(upstream: SocketAddr) -> Door {
    let routes = egress::routes(&["ANTHROPIC_API_KEY"], |_| {
        Some("sk-ant-bench-key-0123456789".to_string())
    });
    let spec = SessionSpec {
        user: NetworkUser::Agent(AgentRole::Task(Role::Worker)),
        allow: Vec::new(),
        routes,
        prices: egress::pricing::Prices::new(&BTreeMap::new()),
        budget: None,
        resolve: [("api.anthropic.com".to_string(), upstream)]
            .into_iter()
            .collect(),
        provider_tools: Vec::new(),
        secrets: egress::Secrets::new(held()),
        own_traffic: egress::OwnTraffic::default(),
    };
    let isolation = NetIsolation::Open {
        why: "the bench".to_string(),
    };
    Door::open(spec, isolation).expect("the proxy")
}

pub fn proxy_addr(door: &Door) -> SocketAddr {
    let proxy = door
        .env()
        .iter()
        .find(|(k, _)| k == "OPENTIGER_PROXY")
        .expect("the proxy's address")
        .1
        .trim_start_matches("http://")
        .to_string();
    proxy.parse().expect("an address")
}

/// The stand-in model API: `/v1/messages` answers `SMALL`, or, when the body names
/// `"stream_mb": <mb>`, streams `<mb>` megabytes of Anthropic SSE events.
pub fn stand_in() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let addr = listener.local_addr().expect("addr");
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            std::thread::spawn(move || serve(stream));
        }
    });
    addr
}

fn serve(stream: TcpStream) {
    let _ = stream.set_nodelay(true);
    let mut writer = stream.try_clone().expect("clone");
    let mut reader = BufReader::new(stream);
    loop {
        let Some((path, length)) = read_head(&mut reader) else {
            return;
        };
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let asked: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        if let Some(mb) = asked.get("stream_mb").and_then(|m| m.as_u64()) {
            stream_events(&mut writer, mb as usize);
            return;
        }
        let _ = path;
        let head = format!(
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
            SMALL.len()
        );
        if writer.write_all(head.as_bytes()).is_err() || writer.write_all(SMALL.as_bytes()).is_err()
        {
            return;
        }
    }
}

/// One text delta event of about 1 KiB.
fn delta() -> String {
    let text = "x".repeat(1000);
    format!("event: content_block_delta\ndata: {{\"type\":\"content_block_delta\",\"index\":0,\"delta\":{{\"type\":\"text_delta\",\"text\":\"{text}\"}}}}\n\n")
}

const START: &str = "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"model\":\"claude-sonnet-4-5\",\"usage\":{\"input_tokens\":1200,\"output_tokens\":1}}}\n\n";
const STOP: &str = "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{},\"usage\":{\"output_tokens\":80}}\n\nevent: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

fn stream_events(writer: &mut TcpStream, megabytes: usize) {
    let event = delta();
    let count = megabytes * 1024 * 1024 / event.len();
    let length = START.len() + count * event.len() + STOP.len();
    let head = format!(
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: {length}\r\nconnection: close\r\n\r\n"
    );
    let _ = writer.write_all(head.as_bytes());
    let _ = writer.write_all(START.as_bytes());
    let batch = event.repeat(64);
    let mut left = count;
    while left >= 64 {
        if writer.write_all(batch.as_bytes()).is_err() {
            return;
        }
        left -= 64;
    }
    for _ in 0..left {
        let _ = writer.write_all(event.as_bytes());
    }
    let _ = writer.write_all(STOP.as_bytes());
}

/// The request path and content length of the next request, `None` at the end.
fn read_head(reader: &mut impl BufRead) -> Option<(String, usize)> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let path = line.split_whitespace().nth(1)?.to_string();
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).ok()? == 0 {
            return None;
        }
        if header == "\r\n" {
            return Some((path, length));
        }
        if let Some((k, v)) = header.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
    }
}

/// `n` requests over one keep-alive connection to `addr`; each one's time.
fn timings(addr: SocketAddr, path: &str, key: &str, n: usize) -> Vec<Duration> {
    let stream = TcpStream::connect(addr).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let mut writer = stream.try_clone().expect("clone");
    let mut reader = BufReader::new(stream);
    let request = format!(
        "POST {path} HTTP/1.1\r\nhost: 127.0.0.1\r\nx-api-key: {key}\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{{}}"
    );
    let mut times = Vec::with_capacity(n);
    for _ in 0..n {
        let start = Instant::now();
        writer.write_all(request.as_bytes()).expect("send");
        let length = read_response_head(&mut reader);
        let mut body = vec![0u8; length];
        reader.read_exact(&mut body).expect("body");
        times.push(start.elapsed());
    }
    times
}

fn read_response_head(reader: &mut impl BufRead) -> usize {
    let mut length = 0;
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("head");
        if line == "\r\n" || line.is_empty() {
            return length;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
    }
}

fn namespace_spawns() {
    let Some(network) = door_in_namespace() else {
        println!("namespace spawn: no unprivileged namespaces here");
        return;
    };
    let dir = tempfile::tempdir().expect("temp");
    let spec = |network| opentiger::process::ProcessSpec {
        program: "true".into(),
        args: Vec::new(),
        cwd: dir.path().to_path_buf(),
        env: vec![("PATH".into(), "/usr/bin:/bin".into())],
        stdin: None,
        timeout: Duration::from_secs(60),
        tail_bytes: 1024,
        watch: None,
        group_record: None,
        confine: None,
        network,
        sentinel: None,
    };
    let run = |network: Option<opentiger::sandbox::netns::Door>| {
        let times: Vec<Duration> = (0..100)
            .map(|_| {
                let start = Instant::now();
                let out = opentiger::process::run(&spec(network.clone())).expect("true");
                assert!(out.success());
                start.elapsed()
            })
            .collect();
        pct(&times, 50)
    };
    let plain = run(None);
    let spaced = run(Some(network.netns().expect("namespace door")));
    println!(
        "process::run(true):                 {:>7.2} ms; in a namespace of its own {:>7.2} ms (medians of 100)",
        ms(plain),
        ms(spaced)
    );
}

/// A door in a namespace, when this machine allows one.
fn door_in_namespace() -> Option<Door> {
    opentiger::sandbox::netns::available().ok()?;
    let spec = SessionSpec {
        user: NetworkUser::Checks,
        allow: Vec::new(),
        routes: Vec::new(),
        prices: egress::pricing::Prices::default(),
        budget: None,
        resolve: BTreeMap::new(),
        provider_tools: Vec::new(),
        secrets: egress::Secrets::default(),
        own_traffic: egress::OwnTraffic::default(),
    };
    Door::open(spec, NetIsolation::Namespace).ok()
}

fn streaming(upstream: SocketAddr, megabytes: usize) {
    let door = door(upstream);
    let proxy = proxy_addr(&door);
    let before = rss_kib();
    let stream = TcpStream::connect(proxy).expect("connect");
    let mut writer = stream.try_clone().expect("clone");
    let mut reader = BufReader::new(stream);
    let body = format!("{{\"stream_mb\": {megabytes}}}");
    let request = format!(
        "POST /anthropic/v1/messages HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    writer.write_all(request.as_bytes()).expect("send");
    let start = Instant::now();
    let length = read_response_head(&mut reader);
    let mut buf = vec![0u8; 64 * 1024];
    let (mut read, mut peak) = (0usize, before);
    while read < length {
        let n = reader.read(&mut buf).expect("stream");
        if n == 0 {
            break;
        }
        read += n;
        if read % (16 << 20) < n {
            peak = peak.max(rss_kib());
        }
    }
    let took = start.elapsed();
    peak = peak.max(rss_kib());
    // The body ended; give the proxy's task a moment to count the last event.
    std::thread::sleep(Duration::from_millis(100));
    let metered = door.close().metering.total();
    println!(
        "streamed {:.0} MB of SSE through the proxy in {:.2} s ({:.0} MB/s); resident memory {} KiB before, peak {} KiB while streaming (+{} KiB); metered {} answer(s), {} in / {} out tokens",
        read as f64 / 1048576.0,
        took.as_secs_f64(),
        read as f64 / 1048576.0 / took.as_secs_f64(),
        before,
        peak,
        peak.saturating_sub(before),
        metered.answers,
        metered.input,
        metered.output
    );
}

/// The secret filter alone over `megabytes` of SSE in 64 KiB chunks: with no secret, and with
/// four (a key and the held tokens).
fn filter_alone(megabytes: usize) {
    use egress::scrub::Scrubber;
    let event = delta();
    let chunk: Vec<u8> = event.repeat(64 * 1024 / event.len()).into_bytes();
    let chunks = megabytes * 1024 * 1024 / chunk.len();
    for (label, secrets) in [
        ("no secret", egress::Secrets::default()),
        (
            "four secrets",
            egress::Secrets::new(held()).with(["sk-ant-bench-key-0123456789".to_string()]),
        ),
    ] {
        let mut scrubber = Scrubber::new(std::sync::Arc::new(secrets));
        let (mut out, mut held_most) = (0usize, 0usize);
        let start = Instant::now();
        for _ in 0..chunks {
            scrubber.content(&chunk);
            out += scrubber.take().len();
            held_most = held_most.max(scrubber.held());
        }
        out += scrubber.finish().len();
        let took = start.elapsed();
        println!(
            "secret filter, {label:<12}        {:>7.0} MB/s over {:.0} MB ({:.1} µs per 64 KiB chunk), at most {held_most} bytes held",
            out as f64 / 1048576.0 / took.as_secs_f64(),
            out as f64 / 1048576.0,
            us(took) / chunks as f64,
        );
    }
}

pub fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmRSS:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

pub fn pct(times: &[Duration], p: usize) -> Duration {
    let mut v = times.to_vec();
    v.sort();
    v[(v.len() * p / 100).min(v.len() - 1)]
}

pub fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

pub fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

//! Issue 46 tried as an attacker would: ticks as the unprivileged user (`common::unprivileged`,
//! the forge token and the model key in the shell that starts them), the provider's host mapped
//! to a stand-in that reflects every header it got when asked for an unknown `anthropic-beta`.
//!
//! - The worker, the judge and the planner each try to read their model key back
//!   (`tests/fixtures/agents/key-reflection.py`): the placeholder in a header the provider
//!   quotes, in the query, the path; the key's reflection; bodies asking the provider to reach
//!   another host; other paths. The stand-in sees the key only in the credential header; no
//!   agent reads it, in any encoding; nothing derived from it reaches a branch, the state or a
//!   report; no body naming an MCP server or a fetch tool reaches the stand-in — and each role's
//!   ordinary model call is answered and metered (the twin). The same on a provider of the
//!   configuration (`providers:`): an Anthropic-shaped gateway on loopback whose key the
//!   runner holds in a variable of its own.
//! - A worker holding 1,500 slow connections and trying 20,000 refused hosts
//!   (`tests/fixtures/agents/door-flood.py`): its run ends well within its timeout, the runner
//!   stays under 256 MiB, `status --json` under 1 MB, the refused hosts ten names and a count.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::model_server::{ModelServer, Scenario};
use common::unprivileged::{wait_bounded, Jail, CANARY};
use common::{git, minute, Setup};

// Put together at run time: a checkout of these tests must not hold it whole.
fn key() -> String {
    [
        "sk-ant-api03-",
        "REFLECTkeyOfTheRunner",
        "0123456789abcdefXY",
    ]
    .concat()
}

/// `secret` as the checks look for it: as it is, reversed, hex, and base64 at each of the three
/// alignments it can take inside a longer text (its edge characters dropped).
fn forms(secret: &str) -> Vec<String> {
    use std::fmt::Write;
    let b64 = |bytes: &[u8]| {
        const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let n =
                chunk.iter().fold(0u32, |n, b| n << 8 | u32::from(*b)) << (8 * (3 - chunk.len()));
            for i in 0..=chunk.len() {
                out.push(A[(n >> (18 - 6 * i) & 63) as usize] as char);
            }
        }
        out
    };
    let mut out = vec![
        secret.to_string(),
        secret.chars().rev().collect(),
        secret.bytes().fold(String::new(), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        }),
    ];
    for pad in 0..3 {
        let mut bytes = vec![b'.'; pad];
        bytes.extend(secret.as_bytes());
        let encoded = b64(&bytes);
        let skip = if pad == 0 { 0 } else { 4 };
        out.push(encoded[skip..encoded.len() - 4].to_string());
    }
    out
}

fn assert_nowhere(place: &str, text: &str, secret: &str) {
    for form in forms(secret) {
        assert!(!text.contains(&form), "{place} holds the key (as {form})");
    }
}

/// The fixture, where the unprivileged user can read it.
fn fixture(jail: &Jail, name: &str) -> String {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/agents")
        .join(name);
    let to = jail.g.tools_path().join(name);
    std::fs::copy(from, &to).unwrap();
    to.display().to_string()
}

#[test]
fn no_role_reads_its_model_key_back() {
    let key = key();
    let server = ModelServer::reflecting(Scenario::Reply("fine"));
    let resolve = format!(
        "api.anthropic.com={}",
        server.base_url().trim_start_matches("http://")
    );
    let env = [
        ("ANTHROPIC_API_KEY", key.as_str()),
        ("OPENTIGER_EGRESS_RESOLVE", resolve.as_str()),
    ];
    reads_no_key_back(
        &server,
        "    env_passthrough: [ANTHROPIC_API_KEY]\n",
        "",
        &env,
        &key,
    );
}

/// The same attacks on a provider of the configuration (`providers:`, issue 50): an
/// Anthropic-shaped gateway on loopback, its key in `GATEWAY_KEY`, which the runner holds.
#[test]
fn no_role_reads_a_configured_provider_s_key_back() {
    let key = key();
    let server = ModelServer::reflecting(Scenario::Reply("fine"));
    let extra = format!(
        "providers:\n  gateway:\n    api: anthropic\n    base_url: {}\n    key: GATEWAY_KEY\n",
        server.base_url()
    );
    let env = [("GATEWAY_KEY", key.as_str())];
    reads_no_key_back(
        &server,
        "    provider: gateway\n    model: claude-sonnet-4-5\n",
        &extra,
        &env,
        &key,
    );
}

/// Every role of a repository whose agents are `key-reflection.py`, with `default_agent` and
/// the top-level `extra` lines, ticked with `env`, tries to read `key` back through `server`.
fn reads_no_key_back(
    server: &ModelServer,
    default_agent: &'static str,
    extra: &str,
    env: &[(&str, &str)],
    key: &str,
) {
    let key = key.to_string();
    let jail = Jail::confined(Setup {
        default_agent,
        ..Setup::default()
    });
    // The threat scan would hold the worker's encoded answers for a person (its own defence);
    // what is tried here is that they hold nothing to find.
    let config = jail.g.path().join(".opentiger.yml");
    let text = std::fs::read_to_string(&config).unwrap() + "scan:\n  rules: false\n" + extra;
    std::fs::write(&config, text).unwrap();
    let script = fixture(&jail, "key-reflection.py");
    let loot = jail.loot.parent().unwrap().display().to_string();
    jail.g
        .agent(&format!("#!/bin/sh\nexec python3 {script} worker {loot}\n"));
    jail.g
        .judge(&format!("#!/bin/sh\nexec python3 {script} judge {loot}\n"));
    jail.g.planner(&format!(
        "#!/bin/sh\nexec python3 {script} planner {loot}\n"
    ));
    let id = jail.add_task(&["--title", "Read back", "--goal", "answers.txt"]);
    let mut outputs = String::new();
    for at in [0, 10] {
        let out = jail.run(&minute(at), &["tick"], env);
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        outputs.push_str(&(out.stdout + &out.stderr));
    }
    jail.g.repo.file(
        "docs/requirement.md",
        "# R\n\n## Goal\nA thing.\n\n## Acceptance Criteria\n- [ ] it works\n",
    );
    let planned = jail.run(&minute(20), &["plan"], env);
    outputs.push_str(&(planned.stdout + &planned.stderr));

    // What each role read: the refusals naming where its placeholder stood, the reflection
    // without the key, its ordinary call answered.
    for role in ["worker", "judge", "planner"] {
        let read = std::fs::read_to_string(jail.loot.with_file_name(format!("{role}.txt")))
            .unwrap_or_else(|_| panic!("{role} ran: {outputs}"));
        for expected in [
            "beta-header: 400",
            "the header `anthropic-beta`",
            "other-header: 400",
            "query: 400",
            "the query parameter `beta`",
            "path: 400",
            "reflected: 400",
            "opentiger-unknown-beta",
            "[REDACTED]",
            "mcp: 403",
            "`mcp_servers`",
            "web-fetch: 403",
            "web-search: 403",
            "image-url: 403",
            "files: 404",
            "batches: 404",
            "ordinary: 200",
        ] {
            assert!(read.contains(expected), "{role}: {expected}\n{read}");
        }
        assert_nowhere(role, &read, &key);
    }
    let loot = jail.loot_text();
    assert_nowhere("the loot", &loot, &key);
    assert!(!loot.contains(CANARY));

    // The stand-in: the key only in a credential header; no refused call reached it.
    let seen = server.seen();
    assert!(!seen.is_empty());
    for s in &seen {
        for line in s.head.lines().filter(|l| l.contains(&key)) {
            assert!(
                line == format!("x-api-key: {key}")
                    || line == format!("authorization: Bearer {key}"),
                "the key in `{line}`"
            );
        }
        let body = s.body.to_string();
        for word in [
            "mcp_servers",
            "web_fetch",
            "web_search",
            "evil.test",
            "opentiger-placeholder",
        ] {
            assert!(!body.contains(word), "{word} reached the provider: {body}");
        }
        assert!(s.path == "/v1/messages", "{} reached the provider", s.path);
    }

    // Nothing derived from it on any branch, in the state, in a report.
    let log = git(jail.g.path(), &["log", "--all", "-p"]);
    assert!(
        log.contains("reflected: 400"),
        "the worker's answers were committed: {log}"
    );
    let state =
        String::from_utf8_lossy(&std::fs::read(jail.g.repo.state_path()).unwrap()).into_owned();
    let reports = [
        vec!["status"],
        vec!["status", "--json"],
        vec!["task", "show", &id],
        vec!["task", "show", &id, "--json"],
    ]
    .iter()
    .map(|args| {
        let out = jail.run(common::NOW, args, &[]);
        out.stdout + &out.stderr
    })
    .collect::<String>();
    for (place, text) in [
        ("the branches", &log),
        ("the state", &state),
        ("the reports", &reports),
        ("the ticks' output", &outputs),
    ] {
        assert_nowhere(place, text, &key);
    }

    // The twin: each role's ordinary call was metered.
    let shown = jail
        .run(common::NOW, &["task", "show", &id, "--json"], &[])
        .ok()
        .json();
    for metered in [
        &shown["runs"][0]["metered"],
        &shown["reviews"][0]["metered"],
    ] {
        assert!(
            metered["models"]["claude-sonnet-4-5"]["input"].as_u64() > Some(0),
            "{shown}"
        );
    }
    let status = jail
        .run(&minute(20), &["status", "--json"], &[])
        .ok()
        .json();
    assert!(
        status["spend"]["by_role"]["planner"].as_f64() > Some(0.0),
        "{status}"
    );
}

/// The tick's process under `bash` (the step's shell), once it has started.
fn tick_pid(shell: u32) -> Option<u32> {
    let children = std::fs::read_to_string(format!("/proc/{shell}/task/{shell}/children")).ok()?;
    children.split_whitespace().next()?.parse().ok()
}

/// `VmHWM` of `pid` in KiB: its resident memory's peak so far.
fn peak_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

#[test]
fn a_flood_of_connections_and_refused_hosts_leaves_the_runner_small() {
    let jail = Jail::confined(Setup::default());
    let script = fixture(&jail, "door-flood.py");
    let loot = jail.loot.parent().unwrap().display().to_string();
    jail.g.agent(&format!(
        "#!/bin/sh\nexec python3 {script} {loot} 1500 20000\n"
    ));
    let id = jail.add_task(&["--title", "Flood", "--goal", "done.txt"]);
    let child = jail.spawn(&minute(0), &["tick"], &[]);
    let shell = child.id();
    let started = Instant::now();
    let mut peak = 0;
    let mut tick = None;
    while started.elapsed() < Duration::from_secs(110) {
        tick = tick.or_else(|| tick_pid(shell));
        match tick.and_then(peak_kib) {
            Some(kib) => peak = peak.max(kib),
            None if tick.is_some() => break,
            None => {}
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = wait_bounded(child);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    let flood = std::fs::read_to_string(jail.loot.with_file_name("flood.txt")).unwrap_or_default();
    assert!(flood.contains("refused 20000"), "{flood}\n{}", out.stderr);
    assert!(peak > 0, "the tick was measured");
    assert!(
        peak < 256 * 1024,
        "the runner peaked at {peak} KiB with 1,500 connections held: {flood}"
    );
    // The run ended on its own, well within its minute.
    let runs = jail.runs(&id);
    assert_eq!(runs[0]["status"], "success", "{runs:?}");
    let status = jail
        .run(common::NOW, &["status", "--json"], &[])
        .ok()
        .stdout;
    assert!(
        status.len() < 1 << 20,
        "status --json is {} bytes",
        status.len()
    );
    let shown = jail
        .run(common::NOW, &["task", "show", &id], &[])
        .ok()
        .stdout;
    assert_eq!(
        shown
            .matches(".flood.test:443` refused for the worker")
            .count(),
        10,
        "{shown}"
    );
    assert!(
        shown.contains("20010 more refusal(s) of other hosts for the worker"),
        "{shown}"
    );
}

//! `cargo bench --bench probe`: what the host snapshot and the lessons cost (issue 52).
//!
//! - Every tick that runs an agent asks whether the stored snapshot will do: the fingerprint
//!   of what it depends on (`uname`, the `sandbox:` settings, `PATH`, the checks' programs)
//!   and its age. That is the whole per-tick cost while the snapshot holds.
//! - The probe itself, once per `context.host_ttl_hours` (or when the fingerprint changes):
//!   `uname`, `cat /etc/os-release` and each tool's version flag inside a worker's sandbox,
//!   with `sandbox.filesystem: none` and with the default walls (Landlock, the view where the
//!   kernel allows one), on this machine's `PATH`.
//! - A prompt's two sections from 500 lessons (the most a state could ever hold is 12 by
//!   default; 500 is the worst case of a book never pruned).
//!
//! Figures, not assertions; medians. `PROBE_BENCH_RUNS` (default 5) sets how many probes each
//! way.

use std::time::{Duration, Instant};

use opentiger::config::{Config, ContextConfig, FilesystemSandbox};
use opentiger::engine::learned::{host, inject};
use opentiger::model::learned::{Lesson, Signature};
use opentiger::runner::probe;
use opentiger::time::Timestamp;

fn main() {
    let _ = opentiger::reaper::become_subreaper();
    let repo = tempfile::tempdir().expect("temp");
    let mut config = Config::default();
    config.verify.commands = vec!["npm test".into(), "cargo test".into()];

    let stored = probe::take(&config, repo.path(), Timestamp(0)).expect("probe");
    let checks: Vec<Duration> = (0..1000)
        .map(|_| {
            let start = Instant::now();
            let fingerprint = probe::fingerprint(&config);
            let due = host::freshness(Some(&stored), &fingerprint, Timestamp(1), 24);
            assert!(!due.due());
            start.elapsed()
        })
        .collect();
    println!(
        "per tick, the snapshot holds (fingerprint + age): {:>8.3} ms (median of 1000)",
        ms(median(checks))
    );

    let runs: usize = std::env::var("PROBE_BENCH_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5);
    for (name, filesystem) in [
        ("sandbox.filesystem: none", FilesystemSandbox::None),
        (
            "default walls (Landlock, view)",
            FilesystemSandbox::Landlock,
        ),
    ] {
        config.sandbox.filesystem = filesystem;
        let mut found = 0;
        let mut looked = 0;
        let times: Vec<Duration> = (0..runs)
            .map(|_| {
                let start = Instant::now();
                let snapshot = probe::take(&config, repo.path(), Timestamp(0)).expect("probe");
                found = snapshot.tools.iter().filter(|t| t.present).count();
                looked = snapshot.tools.len();
                start.elapsed()
            })
            .collect();
        println!(
            "one probe, {name:<31} {:>8.1} ms (median of {runs}; {found} of {looked} tools found)",
            ms(median(times))
        );
    }

    let lessons: Vec<Lesson> = (0..500u32)
        .map(|i| {
            let signature = Signature::MissingScript {
                command: format!("npm run job-{i}"),
            };
            Lesson {
                id: signature.id(),
                signature,
                count: i % 7 + 1,
                first_seen: Timestamp(0),
                last_seen: Timestamp(i64::from(i)),
            }
        })
        .collect();
    let scope = inject::Scope {
        commands: vec!["npm test".into(), "npm run job-7".into()],
    };
    let context = ContextConfig::default();
    let mut sizes = (0, 0);
    let times: Vec<Duration> = (0..200)
        .map(|_| {
            let start = Instant::now();
            let s = inject::sections(Some(&stored), &lessons, &scope, &context);
            sizes = (s.host.chars().count(), s.hints.chars().count());
            start.elapsed()
        })
        .collect();
    println!(
        "a prompt's sections from 500 lessons:             {:>8.3} ms (median of 200; host {} chars, hints {} chars)",
        ms(median(times)),
        sizes.0,
        sizes.1
    );
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

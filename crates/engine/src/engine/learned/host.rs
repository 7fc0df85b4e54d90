//! The host snapshot's rules: which tools a probe looks for (the programs the checks name, then
//! [`COMMON_TOOLS`]) and how each is asked its version, what a snapshot depends on (its
//! fingerprint), whether the one stored is still good (its age against `context.host_ttl_hours`,
//! its fingerprint against today's), and reading a version or a system name out of what a
//! program printed. Pure.
//!
//! Not for: running the probe (`runner::probe`), or what a prompt says of it (`inject.rs`).

use crate::config::Config;
use crate::engine::classify::lesson::program_of;
use crate::model::learned::{HostSnapshot, COMMON_TOOLS};
use crate::model::short_hash;
use crate::time::{Timestamp, HOUR};

/// Bumped when the probe looks for other things or reads them otherwise: every snapshot
/// taken before is then out of date.
pub const PROBE_VERSION: &str = "1";

/// What a snapshot depends on, each as the shell read it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostInputs {
    /// The programs the configured checks name ([`configured_programs`]).
    pub programs: Vec<String>,
    /// The `sandbox:` settings, as JSON.
    pub sandbox: String,
    /// The `PATH` an agent is given.
    pub path: String,
    /// The runner's system, kernel release and machine (`uname`).
    pub system: String,
}

/// The fingerprint of `inputs`: another value makes a stored snapshot out of date.
pub fn fingerprint(inputs: &HostInputs) -> String {
    let programs = inputs.programs.join(" ");
    short_hash(&[
        "host",
        PROBE_VERSION,
        &programs,
        &inputs.sandbox,
        &inputs.path,
        &inputs.system,
    ])
}

/// Whether the stored snapshot will do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Freshness {
    Fresh,
    /// None was ever taken.
    Missing,
    /// Older than `context.host_ttl_hours`.
    Expired,
    /// What it depends on changed.
    Changed,
}

impl Freshness {
    /// Whether a probe is due.
    pub fn due(self) -> bool {
        self != Freshness::Fresh
    }

    /// For people: `fresh`, `none taken yet`, ...
    pub fn word(self) -> &'static str {
        match self {
            Freshness::Fresh => "fresh",
            Freshness::Missing => "none taken yet",
            Freshness::Expired => "out of date (older than context.host_ttl_hours)",
            Freshness::Changed => {
                "out of date (the checks' programs, the sandbox settings, PATH or the system changed)"
            }
        }
    }
}

/// Whether a snapshot is wanted at all: a prompt has room for it (`context.host_chars`).
pub fn wanted(context: &crate::config::ContextConfig) -> bool {
    context.host_chars > 0
}

/// spec §1.13: the snapshot lives `ttl_hours` and as long as its fingerprint holds.
pub fn freshness(
    stored: Option<&HostSnapshot>,
    fingerprint: &str,
    now: Timestamp,
    ttl_hours: u32,
) -> Freshness {
    match stored {
        None => Freshness::Missing,
        Some(s) if s.fingerprint != fingerprint => Freshness::Changed,
        // A snapshot from the future (a clock set back) is as good as expired.
        Some(s) if now.minus(s.taken_at) >= i64::from(ttl_hours) * HOUR || now < s.taken_at => {
            Freshness::Expired
        }
        Some(_) => Freshness::Fresh,
    }
}

/// The programs the configured checks name (`verify.commands`, `by_role`, `when_changed`),
/// bare names only, each once, in the order written.
pub fn configured_programs(config: &Config) -> Vec<String> {
    let verify = &config.verify;
    let all = verify
        .commands
        .iter()
        .chain(verify.by_role.values().flatten())
        .chain(verify.when_changed.iter().flat_map(|w| w.commands.iter()));
    let mut out: Vec<String> = Vec::new();
    for command in all {
        for piece in command.split("&&") {
            if let Some(p) = program_of(piece.trim()) {
                if !out.contains(&p) {
                    out.push(p);
                }
            }
        }
    }
    out
}

/// What a probe looks for: the checks' programs, then the common tools, each once.
pub fn probe_list(configured: &[String]) -> Vec<String> {
    let mut out: Vec<String> = configured.to_vec();
    for tool in COMMON_TOOLS {
        if !out.iter().any(|t| t == tool) {
            out.push((*tool).to_string());
        }
    }
    out
}

/// The arguments that make `program` print its version and exit.
pub fn version_args(program: &str) -> &'static [&'static str] {
    match program {
        "go" => &["version"],
        "java" => &["-version"],
        _ => &["--version"],
    }
}

/// The longest version kept.
const VERSION_MAX: usize = 24;

/// The first version in `output` (`v20.11.1` → `20.11.1`, `go1.22.1` → `1.22.1`, `GNU bash,
/// version 5.2.15(1)-release` → `5.2.15`): a word starting with a digit and holding a dot,
/// digits, letters and `.+-` only, at most 24 characters.
pub fn version_in(output: &str) -> Option<String> {
    for line in output.lines().take(5) {
        for word in line.split(|c: char| c.is_whitespace() || "\"',;()[]".contains(c)) {
            let word = word
                .strip_prefix("go")
                .or_else(|| word.strip_prefix('v'))
                .unwrap_or(word);
            if !word.starts_with(|c: char| c.is_ascii_digit()) || !word.contains('.') {
                continue;
            }
            let kept: String = word
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || ".+-".contains(*c))
                .take(VERSION_MAX)
                .collect();
            let kept = kept.trim_end_matches(['.', '-', '+']);
            if kept.contains('.') {
                return Some(kept.to_string());
            }
        }
    }
    None
}

/// The system's name from `/etc/os-release` (`PRETTY_NAME`, else `NAME` and `VERSION_ID`),
/// letters, digits, spaces and `./()_-` only, at most 60 characters.
pub fn os_name(os_release: &str) -> Option<String> {
    let value = |key: &str| {
        os_release.lines().find_map(|l| {
            let (k, v) = l.split_once('=')?;
            (k.trim() == key).then(|| v.trim().trim_matches('"').to_string())
        })
    };
    let name = value("PRETTY_NAME").or_else(|| {
        let name = value("NAME")?;
        Some(match value("VERSION_ID") {
            Some(v) => format!("{name} {v}"),
            None => name,
        })
    })?;
    let clean = plain(&name, 60);
    (!clean.is_empty()).then_some(clean)
}

/// `text` with anything but letters, digits, spaces and `./()_-:+` left out, cut to `max`.
pub fn plain(text: &str, max: usize) -> String {
    text.chars()
        .filter(|c| c.is_ascii_alphanumeric() || " ./()_-:+".contains(*c))
        .take(max)
        .collect::<String>()
        .trim()
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot(at: i64, fingerprint: &str) -> HostSnapshot {
        HostSnapshot {
            taken_at: Timestamp(at),
            fingerprint: fingerprint.to_string(),
            ..Default::default()
        }
    }

    #[test]
    fn a_snapshot_lives_its_ttl_and_its_fingerprint() {
        let day = 24 * HOUR;
        #[rustfmt::skip]
        let cases = [
            (None, "f", 0, Freshness::Missing),
            (Some(snapshot(0, "f")), "f", day - 1, Freshness::Fresh),
            (Some(snapshot(0, "f")), "f", day, Freshness::Expired),
            (Some(snapshot(0, "f")), "g", 1, Freshness::Changed),
            (Some(snapshot(10 * HOUR, "f")), "f", HOUR, Freshness::Expired),
        ];
        for (stored, fingerprint, now, expected) in cases {
            assert_eq!(
                freshness(stored.as_ref(), fingerprint, Timestamp(now), 24),
                expected,
                "{stored:?} at {now}"
            );
        }
        assert!(!Freshness::Fresh.due() && Freshness::Changed.due());
    }

    #[test]
    fn the_fingerprint_follows_each_input() {
        let base = HostInputs {
            programs: vec!["pnpm".into()],
            sandbox: "{}".into(),
            path: "/usr/bin".into(),
            system: "Linux 6.8 x86_64".into(),
        };
        let f = fingerprint(&base);
        assert_eq!(f, fingerprint(&base.clone()));
        let changed = [
            HostInputs {
                programs: vec!["npm".into()],
                ..base.clone()
            },
            HostInputs {
                sandbox: "{\"view\":\"off\"}".into(),
                ..base.clone()
            },
            HostInputs {
                path: "/bin".into(),
                ..base.clone()
            },
            HostInputs {
                system: "Linux 6.9 x86_64".into(),
                ..base.clone()
            },
        ];
        for inputs in changed {
            assert_ne!(fingerprint(&inputs), f, "{inputs:?}");
        }
    }

    #[test]
    fn versions_and_systems_read_from_what_programs_print() {
        #[rustfmt::skip]
        let cases = [
            ("v20.11.1\n", Some("20.11.1")), ("10.2.4", Some("10.2.4")),
            ("Python 3.11.4", Some("3.11.4")), ("cargo 1.80.0 (376290515 2024-07-16)", Some("1.80.0")),
            ("go version go1.22.1 linux/amd64", Some("1.22.1")), ("GNU Make 4.3\nBuilt for x86_64", Some("4.3")),
            ("git version 2.43.0", Some("2.43.0")),
            ("openjdk version \"17.0.2\" 2022-01-18", Some("17.0.2")),
            ("GNU bash, version 5.2.15(1)-release (x86_64-pc-linux-gnu)", Some("5.2.15")),
            ("pip 24.0 from /usr/lib/python3/dist-packages/pip (python 3.11)", Some("24.0")),
            ("usage: tool [options]", None), ("", None),
            ("9.99999999999999999999999999999999", Some("9.9999999999999999999999")),
        ];
        for (output, expected) in cases {
            assert_eq!(version_in(output).as_deref(), expected, "{output:?}");
        }
        let debian = "PRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\nNAME=\"Debian GNU/Linux\"\nVERSION_ID=\"12\"\n";
        assert_eq!(
            os_name(debian).as_deref(),
            Some("Debian GNU/Linux 12 (bookworm)")
        );
        assert_eq!(
            os_name("NAME=Alpine\nVERSION_ID=3.19\n").as_deref(),
            Some("Alpine 3.19")
        );
        assert_eq!(
            os_name("PRETTY_NAME=\"`rm` <b>x</b>\"").as_deref(),
            Some("rm bx/b")
        );
        assert_eq!(os_name("nothing"), None);
    }

    #[test]
    fn the_probe_looks_for_the_checks_programs_first() {
        let mut config = Config::default();
        config.verify.commands = vec![
            "pnpm test".into(),
            "CI=1 tox -e py && make lint".into(),
            "./check.sh".into(),
        ];
        config.verify.when_changed = vec![crate::config::WhenChanged {
            paths: vec!["web/**".into()],
            commands: vec!["pnpm lint".into()],
        }];
        let programs = configured_programs(&config);
        assert_eq!(programs, ["pnpm", "tox", "make"]);
        let list = probe_list(&programs);
        assert_eq!(&list[..4], ["pnpm", "tox", "make", "node"]);
        assert_eq!(list.iter().filter(|t| *t == "pnpm").count(), 1);
        assert_eq!(version_args("go"), ["version"]);
        assert_eq!(version_args("node"), ["--version"]);
    }
}

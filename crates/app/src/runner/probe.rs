//! The host probe (issue 52; spec §1.13's `agent-profile.json`): what a worker's sandbox offers,
//! found from inside it. One launch (`launch::probe`: a worker's environment, view, Landlock
//! rules and limits, a door that lets nothing through), then, without a shell, `uname -s -r
//! -m`, `cat /etc/os-release` and each tool's own version flag (`node --version`, `go
//! version`), each bounded in time and in what is read of its output. A tool is present when
//! it started there and succeeded or said its version (not a script whose interpreter is
//! missing, exit 126 or 127, nor a rustup proxy with no toolchain).
//! Every value kept is read by the engine's rules into digits, letters and a few marks.
//!
//! Not for: when a probe is due or what a prompt says of it (`engine::learned`), keeping the
//! snapshot (`store::learned`, from `tick`).

use std::ffi::CStr;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::config::Config;
use crate::engine::learned::host::{self, HostInputs};
use crate::model::learned::{HostSnapshot, ToolFact};
use crate::process::{self, ProcessSpec};
use crate::time::Timestamp;

/// How long one program of the probe may take.
const PROGRAM_TIMEOUT: Duration = Duration::from_secs(10);
/// How much of each program's output is read.
const OUTPUT_BYTES: usize = 2048;

/// What a snapshot taken now would depend on, as this machine and `config` say.
pub fn inputs(config: &Config) -> HostInputs {
    let (sysname, release, machine) = uname();
    HostInputs {
        programs: host::configured_programs(config),
        sandbox: serde_json::to_string(&config.sandbox).unwrap_or_default(),
        path: std::env::var("PATH").unwrap_or_default(),
        system: format!("{sysname} {release} {machine}"),
    }
}

/// The fingerprint a snapshot taken now would have.
pub fn fingerprint(config: &Config) -> String {
    host::fingerprint(&inputs(config))
}

/// Probes a worker's sandbox for the runner's repository `repo`; the snapshot is dated `now`.
/// `Err`: the sandbox could not be made (the same error an agent's run would meet).
pub fn take(config: &Config, repo: &Path, now: Timestamp) -> Result<HostSnapshot, String> {
    let started = Instant::now();
    let inputs = inputs(config);
    let launched = super::launch::probe(config, repo)?;
    let run = |program: &str, args: &[&str]| -> Option<process::ProcessOutput> {
        let spec = ProcessSpec {
            program: program.to_string(),
            args: args.iter().map(|a| a.to_string()).collect(),
            cwd: launched.workspace.clone(),
            env: launched.env.clone(),
            stdin: None,
            timeout: PROGRAM_TIMEOUT,
            tail_bytes: OUTPUT_BYTES,
            watch: None,
            group_record: launched.group_record.clone(),
            confine: Some(launched.confine.clone()),
            network: launched.door.netns(),
            sentinel: None,
        };
        let out = process::run(&spec).ok()?;
        let missing = matches!(out.status, process::ExitStatusKind::Code(126 | 127));
        (!missing && !out.timed_out).then_some(out)
    };
    // A tool is there when it started and either succeeded or said its version (a rustup
    // proxy with no toolchain starts, fails and says nothing: it does not work there).
    let version_of = |out: &process::ProcessOutput| {
        host::version_in(&out.stdout_tail).or_else(|| host::version_in(&out.stderr_tail))
    };
    let (sysname, release, machine) = uname();
    let inside = run("uname", &["-s", "-r", "-m"])
        .filter(|o| o.success())
        .map(|o| o.stdout_tail)
        .unwrap_or_default();
    let mut words = inside.split_whitespace();
    let (kernel_name, kernel_release, arch) = match (words.next(), words.next(), words.next()) {
        (Some(s), Some(r), Some(m)) => (s.to_string(), r.to_string(), m.to_string()),
        _ => (sysname.clone(), release, machine),
    };
    let os = run("cat", &["/etc/os-release"])
        .filter(|o| o.success())
        .and_then(|o| host::os_name(&o.stdout_tail))
        .unwrap_or_else(|| host::plain(&sysname, 60));
    let mut tools = Vec::new();
    for name in host::probe_list(&inputs.programs) {
        let out = run(&name, host::version_args(&name));
        let version = out.as_ref().and_then(version_of);
        tools.push(ToolFact {
            present: out.is_some_and(|o| o.success() || version.is_some()),
            version,
            name,
        });
    }
    launched.door.close();
    Ok(HostSnapshot {
        taken_at: now,
        fingerprint: host::fingerprint(&inputs),
        os,
        kernel: host::plain(&format!("{kernel_name} {kernel_release}"), 80),
        arch: host::plain(&arch, 24),
        shell: shell(),
        tools,
        probe_ms: u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
    })
}

/// What `/bin/sh` is: the name of the program it links to (`dash`, `bash`), else `sh`. The
/// view shows the system's `/bin` as it is.
fn shell() -> Option<String> {
    let target = std::fs::canonicalize("/bin/sh").ok()?;
    let name = target.file_name()?.to_string_lossy().into_owned();
    Some(host::plain(&name, 24)).filter(|n| !n.is_empty())
}

/// The runner's system name, kernel release and machine.
fn uname() -> (String, String, String) {
    // SAFETY: `utsname` is plain bytes; all-zero is a valid value for it.
    let mut u: libc::utsname = unsafe { std::mem::zeroed() };
    // SAFETY: `uname` fills the struct it is given and nothing else.
    if unsafe { libc::uname(&mut u) } != 0 {
        return (
            std::env::consts::OS.to_string(),
            String::new(),
            std::env::consts::ARCH.to_string(),
        );
    }
    let field = |f: &[libc::c_char]| {
        // SAFETY: the kernel NUL-terminates each field within its array (zeroed above).
        unsafe { CStr::from_ptr(f.as_ptr()) }
            .to_string_lossy()
            .into_owned()
    };
    (field(&u.sysname), field(&u.release), field(&u.machine))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probe finds what this machine's `PATH` offers (`sh` is everywhere; the runner's
    /// own git is on it in every test set-up) and reads the system.
    #[test]
    fn the_probe_reads_the_system_and_the_tools_of_the_sandbox() {
        let repo = tempfile::tempdir().unwrap();
        let mut config = Config::default();
        config.sandbox.filesystem = crate::config::FilesystemSandbox::None;
        config.verify.commands = vec!["definitely-not-a-tool-52 run".into()];
        let snapshot = take(&config, repo.path(), Timestamp(7)).unwrap();
        assert_eq!(snapshot.taken_at, Timestamp(7));
        assert_eq!(snapshot.fingerprint, fingerprint(&config));
        assert!(
            !snapshot.os.is_empty() && !snapshot.kernel.is_empty(),
            "{snapshot:?}"
        );
        assert_eq!(snapshot.arch, std::env::consts::ARCH);
        assert_eq!(snapshot.tools[0].name, "definitely-not-a-tool-52");
        assert!(snapshot.lacks("definitely-not-a-tool-52"));
        assert!(snapshot.has("git"), "{snapshot:?}");
        assert!(
            snapshot.tool("git").unwrap().version.is_some(),
            "{snapshot:?}"
        );
    }
}

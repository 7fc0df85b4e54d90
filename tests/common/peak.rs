//! A program's peak resident memory, measured by a small parent. What `wait4` reports for a
//! child starts at the size of the process it was forked from (the pages it shares until it
//! execs count as its own), and the test binary, running many tests at once, is large: measured
//! from it, a 10 MiB program can read as 150 MiB. So a small Python parent starts the program,
//! waits for it and writes down what `wait4` says of it and of every process it waited for.
//! Not for: the resident size of a tree added up (`threat_scan`'s sampler).

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;

/// The parent: `python3 -c PARENT <report> <program> <args>...` forks, runs the program, writes
/// its peak (KiB) to `<report>` and exits as the program did (128 + the signal if one ended it).
const PARENT: &str = r#"
import os, sys
report = sys.argv[1]
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, status, usage = os.wait4(pid, 0)
with open(report, "w") as f:
    f.write(str(usage.ru_maxrss))
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"#;

/// The words that put the parent before a program: `python3 -c PARENT <report>`.
pub fn parent(report: &Path) -> Vec<OsString> {
    vec![
        "python3".into(),
        "-c".into(),
        PARENT.into(),
        report.as_os_str().to_owned(),
    ]
}

/// `cmd` started by the parent: the same program, arguments, environment changes and folder.
/// An `env_clear` is not carried over (a `Command` does not tell it): clear the returned one too.
pub fn measured(cmd: &Command, report: &Path) -> Command {
    let mut words = parent(report);
    let mut out = Command::new(words.remove(0));
    out.args(words).arg(cmd.get_program()).args(cmd.get_args());
    for (key, value) in cmd.get_envs() {
        match value {
            Some(value) => out.env(key, value),
            None => out.env_remove(key),
        };
    }
    if let Some(dir) = cmd.get_current_dir() {
        out.current_dir(dir);
    }
    out
}

/// The peak (KiB) the parent wrote to `report`, once it has exited.
pub fn reported_kib(report: &Path) -> i64 {
    let text = std::fs::read_to_string(report).expect("the measuring parent's report");
    text.trim().parse().expect("a peak in KiB")
}

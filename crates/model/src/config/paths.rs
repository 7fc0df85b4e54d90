//! Paths in the configuration that the file system could never hold (issue 40): longer than a
//! path may be (`PATH_MAX`, 4096 bytes on Linux, with its terminating byte), or with a part
//! longer than a file name may be (`NAME_MAX`, 255 bytes). Refused at load, naming the key,
//! instead of failing later with a bare "File name too long". Pure; `load.rs` adds the line.
//! Not for: where a path must point (inside `$HOME`, absolute: `config::agent_values`), path
//! patterns (`config::entry`), or whether a file is there (`doctor::files`).

use crate::config::Config;

/// The longest path, in bytes (`PATH_MAX` without its terminating byte).
pub const MAX_PATH: usize = 4095;
/// The longest file or folder name, in bytes (`NAME_MAX`).
pub const MAX_NAME: usize = 255;

/// What the state file's name gets added for its siblings (`.lock`, SQLite's `-journal`).
const STATE_SUFFIX: usize = "-journal".len();

/// The first configured path the file system cannot hold, as `(key, message, fix)`.
pub(in crate::config) fn check(config: &Config) -> Result<(), (String, String, String)> {
    let mut paths: Vec<(String, &str, usize)> = vec![
        (
            "state.path".into(),
            config.state.path.as_str(),
            STATE_SUFFIX,
        ),
        // A ref is a file under `.git/refs` (or a line of packed-refs): the same limits.
        ("state.branch".into(), config.state.branch.as_str(), 0),
        ("requirement".into(), config.requirement.as_str(), 0),
    ];
    for (i, dir) in config.sandbox.writable.iter().enumerate() {
        paths.push((format!("sandbox.writable[{i}]"), dir, 0));
    }
    for (i, path) in config.sandbox.readable.iter().enumerate() {
        paths.push((format!("sandbox.readable[{i}]"), path, 0));
    }
    for (at, program) in programs(config) {
        paths.push((at, program, 0));
    }
    for (key, path, suffix) in paths {
        if let Some((message, fix)) = too_long(path, suffix) {
            return Err((key, message, fix));
        }
    }
    Ok(())
}

/// The programs agents run by path (`command[0]` with a `/`), by key.
fn programs(config: &Config) -> Vec<(String, &str)> {
    let mut out = Vec::new();
    for (at, entry) in super::entries(config) {
        if let Some(first) = entry.command.as_ref().and_then(|c| c.first()) {
            if first.contains('/') {
                out.push((format!("{at}.command[0]"), first.as_str()));
            }
        }
    }
    out
}

/// Why `path` (which gets `suffix` more bytes on its last part) cannot be a path, and the fix.
fn too_long(path: &str, suffix: usize) -> Option<(String, String)> {
    if path.len() + suffix > MAX_PATH {
        return Some((
            format!(
                "the path is {} bytes long; the file system takes at most {MAX_PATH}{}",
                path.len(),
                if suffix > 0 {
                    format!(" (less {suffix} for the files made beside it)")
                } else {
                    String::new()
                }
            ),
            "give a shorter path".to_string(),
        ));
    }
    let parts: Vec<&str> = path.split('/').collect();
    let last = parts.len() - 1;
    for (i, part) in parts.iter().enumerate() {
        let room = if i == last {
            MAX_NAME - suffix
        } else {
            MAX_NAME
        };
        if part.len() > room {
            let start: String = part.chars().take(24).collect();
            return Some((
                format!(
                    "`{start}…` is {} bytes long: a file or folder name may be at most {room} bytes{}",
                    part.len(),
                    if i == last && suffix > 0 {
                        format!(" here ({MAX_NAME}, less {suffix} for the files made beside it)")
                    } else {
                        String::new()
                    }
                ),
                "give it a shorter name".to_string(),
            ));
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::config::load_str;

    #[test]
    fn paths_too_long_for_the_file_system_are_refused_at_load() {
        let long = "a".repeat(5000);
        let name = "b".repeat(256);
        let state_name = "c".repeat(250);
        let ok_name = "d".repeat(247);
        #[rustfmt::skip]
        let cases: Vec<(String, u64, &str, &str)> = vec![
            (format!("mode: local-git\nstate:\n  path: {long}\n"), 3, "state.path", "the path is 5000 bytes long; the file system takes at most 4095"),
            (format!("mode: local-git\nstate:\n  path: x/{name}/s.sqlite\n"), 3, "state.path", "is 256 bytes long: a file or folder name may be at most 255 bytes"),
            (format!("mode: local-git\nstate:\n  path: {state_name}\n"), 3, "state.path", "may be at most 247 bytes here (255, less 8 for the files made beside it)"),
            (format!("state:\n  branch: opentiger/{name}\n"), 2, "state.branch", "256 bytes long"),
            (format!("requirement: docs/{name}.md\n"), 1, "requirement", "259 bytes long"),
            (format!("sandbox:\n  writable: [/tmp/{name}]\n"), 2, "sandbox.writable[0]", "256 bytes long"),
            (format!("agents:\n  default:\n    executor: command\n    command: [\"./{name}\"]\n"), 4, "agents.default.command[0]", "256 bytes long"),
        ];
        for (text, line, key, says) in cases {
            let err = load_str(&text, ".opentiger.yml").unwrap_err();
            assert_eq!(err.key, key, "{err}");
            assert_eq!(err.line, Some(line), "{err}");
            assert!(err.message.contains(says), "{says}: {err}");
            assert!(err.fix.contains("shorter"), "{err}");
            assert!(
                err.to_string().len() < 400,
                "the message quotes a bounded start: {err}"
            );
        }
        let fits = format!("mode: local-git\nstate:\n  path: {ok_name}\n");
        assert!(load_str(&fits, ".opentiger.yml").is_ok());
    }
}

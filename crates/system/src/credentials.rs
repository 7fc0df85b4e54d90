//! The forge token, held by the runner alone (DESIGN §10).
//!
//! [`take_from_env`] runs first thing in `main`, before any thread or child exists: it reads
//! `OPENTIGER_GITHUB_TOKEN` / `GITHUB_TOKEN` / `OPENTIGER_PUSH_TOKEN` / `GH_TOKEN` once, keeps
//! them in memory and removes them from the process environment, so no child (git, an agent, a
//! verification command) inherits them. Everything that needs the token asks [`lookup`]
//! instead of `std::env::var`.
//!
//! Two tokens may be held (issue 36, `scan.ci`): the forge token for everything, and the push
//! token (`OPENTIGER_PUSH_TOKEN`, the workflow's own `GITHUB_TOKEN`, which starts no workflow)
//! for pushing agents' heads and opening their PRs, so CI starts only when opentiger starts it.
//!
//! The runner's git gets the token only for commands that talk to an `https` remote, through
//! `GIT_ASKPASS` pointing at this same binary ([`answer_askpass`]), which finds it in its own
//! environment under [`ASKPASS_TOKEN_VAR`], inherited from that one git command: never in an
//! argument list (`/proc/<pid>/cmdline` is readable by everyone) and never in a file. A file,
//! however private, is readable by every process of the runner's user, an agent's among them
//! (Landlock confines writes, not reads); another process's environment is not readable from
//! the agent's Landlock domain (`/proc/<pid>/environ` needs ptrace access, which Landlock denies
//! across domains), and no process of an agent outlives its run (`reaper`).
//!
//! Not here: what the token may do (the forge), redacting it (`redact`, which asks [`lookup`]).

use std::sync::OnceLock;

/// The variables that may hold a forge token.
pub const TOKEN_VARS: [&str; 4] = [
    "OPENTIGER_GITHUB_TOKEN",
    "GITHUB_TOKEN",
    PUSH_TOKEN_VAR,
    "GH_TOKEN",
];

/// The token agents' heads are pushed (and their PRs opened) with under `scan.ci: after-scan`
/// or `after-review`: the workflow's own `GITHUB_TOKEN`, whose pushes start no workflow.
pub const PUSH_TOKEN_VAR: &str = "OPENTIGER_PUSH_TOKEN";

/// Which of the held tokens a git command talks to the remote with.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Token {
    /// The forge token ([`forge_token`]).
    #[default]
    Forge,
    /// The push token ([`push_token`]): agents' heads under `scan.ci` other than `on-push`.
    Push,
}

/// The variable holding the token, set only in the environment of a git command that pushes or
/// fetches over https (and so of the askpass it starts).
pub const ASKPASS_TOKEN_VAR: &str = "OPENTIGER_ASKPASS_TOKEN";

/// The user name GitHub expects with a token over https.
const ASKPASS_USER: &str = "x-access-token";

static HELD: OnceLock<Vec<(String, String)>> = OnceLock::new();

/// Reads the token variables once and removes them from the environment. Call before any thread
/// starts (the environment is process-wide); later calls keep what the first one read.
pub fn take_from_env() {
    HELD.get_or_init(|| {
        let mut held = Vec::new();
        for name in TOKEN_VARS {
            if let Ok(value) = std::env::var(name) {
                if !value.trim().is_empty() {
                    held.push((name.to_string(), value));
                }
            }
        }
        scrub_initial_environment();
        for name in TOKEN_VARS {
            std::env::remove_var(name);
        }
        held
    });
}

/// Overwrites the values of the token variables where the process was given them.
/// `/proc/<pid>/environ` shows that memory as it is now, and removing a variable only drops its
/// pointer; a reader allowed past `PR_SET_DUMPABLE` (root, as on hosted runners) would still find
/// the token there.
#[cfg(unix)]
fn scrub_initial_environment() {
    extern "C" {
        static mut environ: *mut *mut libc::c_char;
    }
    // SAFETY: called once, before any other thread exists, so nothing reads or changes the
    // environment meanwhile. `environ` is the NULL-terminated array of NUL-terminated strings
    // libc keeps; each string is only overwritten within its own length, never resized.
    unsafe {
        let mut entry = environ;
        if entry.is_null() {
            return;
        }
        while !(*entry).is_null() {
            let text = std::ffi::CStr::from_ptr(*entry).to_bytes();
            let len = text.len();
            if let Some(eq) = text.iter().position(|&b| b == b'=') {
                let name = &text[..eq];
                if TOKEN_VARS.iter().any(|v| v.as_bytes() == name) {
                    let value = (*entry).add(eq + 1);
                    std::ptr::write_bytes(value, b'x', len - eq - 1);
                }
            }
            entry = entry.add(1);
        }
    }
}

/// A variable as the runner sees it: a held token variable from memory, anything else from the
/// environment. Use this wherever `std::env::var` would read a token.
pub fn lookup(name: &str) -> Option<String> {
    if let Some(held) = HELD.get() {
        if TOKEN_VARS.contains(&name) {
            return held.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone());
        }
    }
    std::env::var(name).ok()
}

/// The forge token the runner pushes with, if it holds one.
pub fn forge_token() -> Option<String> {
    ["OPENTIGER_GITHUB_TOKEN", "GITHUB_TOKEN"]
        .into_iter()
        .find_map(lookup)
        .filter(|t| !t.trim().is_empty())
}

impl Token {
    /// What agents' heads are pushed with: the push token in github mode under `scan.ci`
    /// other than `on-push` (issue 36), else the forge token.
    pub fn for_heads(config: &crate::config::Config) -> Token {
        match (config.mode, config.scan.ci) {
            (crate::model::Mode::Github, crate::config::CiStart::AfterScan)
            | (crate::model::Mode::Github, crate::config::CiStart::AfterReview) => Token::Push,
            (_, crate::config::CiStart::OnPush)
            | (crate::model::Mode::LocalGit | crate::model::Mode::Direct, _) => Token::Forge,
        }
    }
}

/// The push token, if the runner holds one (issue 36).
pub fn push_token() -> Option<String> {
    lookup(PUSH_TOKEN_VAR).filter(|t| !t.trim().is_empty())
}

/// The token `which` names, if the runner holds it.
pub fn token(which: Token) -> Option<String> {
    match which {
        Token::Forge => forge_token(),
        Token::Push => push_token(),
    }
}

/// Issue 36: with `scan.ci` other than `on-push` in github mode, agents' heads must be pushed
/// with the push token; without one the tick refuses (pushing with the forge token would start
/// CI on heads before the scan and the review allowed it). The message names the fix.
pub fn missing_push_token(config: &crate::config::Config) -> Option<String> {
    let needed = Token::for_heads(config) == Token::Push;
    (needed && push_token().is_none()).then(|| {
        format!(
            "`scan.ci: {}` pushes agents' heads with a token that starts no workflow, but {PUSH_TOKEN_VAR} is not set, so nothing was pushed\n  fix: give opentiger the workflow's own token as {PUSH_TOKEN_VAR} (the action's `push-token` input, whose default is `${{{{ github.token }}}}`), or set `scan.ci: on-push`",
            match config.scan.ci {
                crate::config::CiStart::AfterScan => "after-scan",
                crate::config::CiStart::AfterReview => "after-review",
                crate::config::CiStart::OnPush => "on-push",
            }
        )
    })
}

/// When git runs this binary as its `GIT_ASKPASS` (the token variable set, one argument: the
/// prompt), the answer to print: the user name, or the token. `None`: this is not an askpass
/// call.
pub fn answer_askpass(
    args: &[String],
    env: impl Fn(&str) -> Option<String>,
) -> Option<Result<String, String>> {
    let token = env(ASKPASS_TOKEN_VAR)?;
    let [_, prompt] = args else {
        return None;
    };
    Some(if prompt.starts_with("Username") {
        Ok(ASKPASS_USER.to_string())
    } else if token.trim().is_empty() {
        Err("opentiger askpass: git asked for a password, but no token was handed over".into())
    } else {
        Ok(token.trim().to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn askpass_answers_the_user_then_the_token_from_its_own_environment() {
        let env = |k: &str| (k == ASKPASS_TOKEN_VAR).then(|| "tok-123456789".to_string());
        let args = |p: &str| vec!["opentiger".to_string(), p.to_string()];
        assert_eq!(
            answer_askpass(&args("Username for 'https://github.com': "), env),
            Some(Ok("x-access-token".to_string()))
        );
        assert_eq!(
            answer_askpass(&args("Password for 'https://x@github.com': "), env),
            Some(Ok("tok-123456789".to_string()))
        );
        // Not an askpass call: no token handed over, or not the one argument git passes.
        assert_eq!(answer_askpass(&args("Password"), |_| None), None);
        assert_eq!(answer_askpass(&["opentiger".to_string()], env), None);
        let empty = |k: &str| (k == ASKPASS_TOKEN_VAR).then(String::new);
        assert!(matches!(
            answer_askpass(&args("Password"), empty),
            Some(Err(_))
        ));
    }
}

//! doctor's credentials check (issues 47 and 51): every credential an agent could read in the
//! repository's git configuration, the files it includes and the runner's user's own, one line
//! each naming the file (and the include line that brings it in) with what to do about it.
//!
//! Not for: finding them (`sandbox::credentials`) or taking them away (a tick does, for the
//! job's: `sandbox::checkout`).

use std::path::Path;

use super::{Check, Vars};
use crate::git::Git;
use crate::sandbox::credentials::{FileKind, Finding, Owner, Places, What};

/// The fix for a token actions/checkout left.
pub const CHECKOUT_FIX: &str = "set `persist-credentials: false` on the actions/checkout step (v4 keeps the token in .git/config, v6 in $RUNNER_TEMP/git-credentials-*.config, included from .git/config; `opentiger init` writes it so): opentiger pushes with its own token. Until then each tick takes it away before any agent starts and puts it back when it ends";

/// One check per credential found, or one `ok` saying where none is.
pub fn checks(repo: &Path, vars: Vars<'_>) -> Vec<Check> {
    let places = Places::of(repo, vars);
    let found = match crate::sandbox::checkout_left_credentials(&Git::new(repo), &places) {
        Ok(found) => found,
        Err(e) => {
            return vec![Check::fail(
                "credentials",
                format!("could not read the repository's git configuration: {e}"),
                "fix the configuration file git names (`git config --list --show-origin` shows which); no agent starts while it cannot be read",
            )]
        }
    };
    if found.is_empty() {
        return vec![Check::ok(
            "credentials",
            "none in the repository's git configuration, the files it includes, your git configuration or git's credential files",
        )];
    }
    found
        .iter()
        .map(|f| Check::warn("credentials", detail(f, &places), fix(f)))
        .collect()
}

fn detail(finding: &Finding, places: &Places) -> String {
    let whose = match finding.owner {
        Owner::Job => "left by this job (actions/checkout's token, or a step's): readable by any agent until a tick takes it away",
        Owner::Person => "yours: opentiger leaves it where it is, and an agent may read it wherever the runner's home and repository are not hidden from it (with Landlock alone, agents read everything your user may)",
    };
    format!("{}; {whose}", finding.describe(places))
}

fn fix(finding: &Finding) -> String {
    let job = finding.owner == Owner::Job;
    let checkout = match &finding.what {
        What::Header => {
            job || finding
                .via
                .iter()
                .any(|(_, key)| key.starts_with("includeif.gitdir:"))
        }
        What::File(_, FileKind::SshKey) => job,
        _ => false,
    };
    if checkout {
        return CHECKOUT_FIX.to_string();
    }
    match &finding.what {
        What::UrlPassword if job => "a step of this job wrote a token into the URL: let that step run after opentiger (which pushes with its own token); until then each tick takes it out of the URL while agents run and puts it back when it ends".to_string(),
        What::Header | What::UrlPassword => "take the token out (`git config --unset` the line, or set the URL without `user:password@`): opentiger pushes with its own token; if a step of your workflow wrote it, let that step run after opentiger".to_string(),
        What::Helper(name) => format!(
            "agents can run `git credential fill` and get what `{name}` answers: tick as a user without it (in CI, configure no helper), or where agents cannot see your home (docs/security.md)"
        ),
        What::File(_, FileKind::Store) => "tick as a user without stored passwords (in CI, store none), or remove the file if you no longer need it".to_string(),
        What::File(_, FileKind::CacheSocket) => "run `git credential-cache exit` before ticking, or tick as a user without a cache helper".to_string(),
        What::File(_, FileKind::Cookies | FileKind::SshKey | FileKind::SslKey) => "tick as a user or on a machine that does not hold this file (in CI, write it only in the steps that need it, after opentiger)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sandbox::credentials::{classify, parse_listing};

    /// The fix fits whose it is and what: the checkout's token, a step's, the person's helper.
    #[test]
    fn each_finding_gets_the_fix_for_what_it_is() {
        let places = Places {
            repo: "/w/r".into(),
            home: Some("/h".into()),
            in_actions: true,
            ..Places::default()
        };
        // scope, file, key, value, the fix says, the secret
        let cases = [
            (
                "local",
                ".git/config",
                "http.https://github.com/.extraheader",
                "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46eA==",
                "persist-credentials: false",
                "eC1hY2Nlc3MtdG9rZW46eA==",
            ),
            (
                "local",
                ".git/config",
                "remote.origin.url",
                "https://x-access-token:t0k3n@github.com/o/r",
                "a step of this job wrote a token into the URL",
                "t0k3n",
            ),
            (
                "global",
                "/h/.gitconfig",
                "url.https://me:s3cr3t@github.com/.insteadof",
                "https://github.com/",
                "take the token out",
                "s3cr3t",
            ),
            (
                "global",
                "/h/.gitconfig",
                "credential.helper",
                "osxkeychain",
                "`git credential fill`",
                "no secret here",
            ),
        ];
        for (scope, file, key, value, fix_says, secret) in cases {
            let listing = format!("{scope}\0file:{file}\0{key}\n{value}\0");
            let found = classify(&parse_listing(&listing, &places, None), &places);
            let first = found.iter().find(|f| f.key.is_some()).expect("found");
            assert!(fix(first).contains(fix_says), "{key}: {}", fix(first));
            let shown = detail(first, &places);
            assert!(!shown.contains(secret), "no secret shown: {shown}");
        }
    }
}

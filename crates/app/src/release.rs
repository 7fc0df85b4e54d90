//! What this build of opentiger is as a published release: the GitHub repository it comes from
//! (Cargo.toml's `repository`, the one place that names it), its release tag (`v0.1.0`) and the
//! major tag a workflow pins the action to (`v0`), and how a workflow's `uses:` of the action
//! is pinned.
//!
//! Not for: downloading or verifying anything (scripts/action/install.sh does that in
//! Actions) — these are plain values, known at compile time, and pure functions over text.

/// The repository opentiger is published from, `owner/name` (from Cargo.toml's `repository`).
pub fn repository() -> &'static str {
    let url = env!("CARGO_PKG_REPOSITORY");
    url.strip_prefix("https://github.com/").unwrap_or(url)
}

/// This build's release tag, e.g. `v0.1.0`: what a workflow's `version:` pins.
pub fn release_tag() -> String {
    format!("v{}", env!("CARGO_PKG_VERSION"))
}

/// The major tag the release workflow moves to the newest release of this major version, e.g.
/// `v0`: what a workflow's `uses: owner/opentiger@…` pins.
pub fn major_tag() -> String {
    format!("v{}", env!("CARGO_PKG_VERSION_MAJOR"))
}

/// The action as a workflow should use it: `owner/opentiger@v0`.
pub fn action_reference() -> String {
    format!("{}@{}", repository(), major_tag())
}

/// What a `uses: …@ref` of the action is pinned to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pin {
    /// A release tag, `v1` or `v1.2.3` (a major tag moves only to releases).
    Release(String),
    /// A full commit id: fixed forever.
    Commit(String),
    /// Anything else: a branch (or a tag that is not a release), which moves with every push.
    Branch(String),
}

/// What `reference` (the part after `@`) pins.
pub fn pin_of(reference: &str) -> Pin {
    let is_commit = reference.len() == 40 && reference.bytes().all(|b| b.is_ascii_hexdigit());
    if is_commit {
        return Pin::Commit(reference.to_string());
    }
    // `v1`, `v1.2`, `v1.2.3`, and pre-releases of a full version (`v1.2.3-rc.1`).
    let is_release = reference.strip_prefix('v').is_some_and(|rest| {
        let (numbers, pre) = match rest.split_once('-') {
            Some((numbers, pre)) => (numbers, Some(pre)),
            None => (rest, None),
        };
        let parts: Vec<&str> = numbers.split('.').collect();
        let numeric = parts
            .iter()
            .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit()));
        numeric
            && match pre {
                None => parts.len() <= 3,
                Some(pre) => parts.len() == 3 && !pre.is_empty(),
            }
    });
    if is_release {
        Pin::Release(reference.to_string())
    } else {
        Pin::Branch(reference.to_string())
    }
}

/// When `uses` (a step's `uses:` value) is opentiger's action from a repository — any owner's
/// `opentiger`, or a sub-action of it — the reference it pins; `None` for other actions and for
/// a local `./` action (built from the checkout itself).
pub fn action_pin(uses: &str) -> Option<Pin> {
    let (path, reference) = uses.trim().split_once('@')?;
    let mut parts = path.split('/');
    let _owner = parts.next().filter(|o| !o.is_empty() && *o != ".")?;
    let name = parts.next()?;
    let ours = name.eq_ignore_ascii_case("opentiger")
        || repository()
            .split_once('/')
            .is_some_and(|(_, n)| name.eq_ignore_ascii_case(n));
    ours.then(|| pin_of(reference))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_are_releases_commits_or_branches() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let cases = [
            ("v1", Pin::Release("v1".into())),
            ("v0.1.0", Pin::Release("v0.1.0".into())),
            ("v2.0.0-rc.1", Pin::Release("v2.0.0-rc.1".into())),
            (sha, Pin::Commit(sha.into())),
            ("main", Pin::Branch("main".into())),
            ("master", Pin::Branch("master".into())),
            ("v1-beta-branch", Pin::Branch("v1-beta-branch".into())),
            ("v", Pin::Branch("v".into())),
            ("v1.2.3.4", Pin::Branch("v1.2.3.4".into())),
            ("0123abc", Pin::Branch("0123abc".into())),
        ];
        for (reference, expected) in cases {
            assert_eq!(pin_of(reference), expected, "{reference}");
        }
    }

    #[test]
    fn only_the_opentiger_action_is_recognised() {
        let cases = [
            ("opentiger/opentiger@main", Some(Pin::Branch("main".into()))),
            ("acme/opentiger@v1", Some(Pin::Release("v1".into()))),
            ("acme/OpenTiger/install@v1", Some(Pin::Release("v1".into()))),
            ("actions/checkout@v4", None),
            ("./", None),
            ("./.github/actions/opentiger", None),
            ("opentiger/opentiger", None),
        ];
        for (uses, expected) in cases {
            assert_eq!(action_pin(uses), expected, "{uses}");
        }
    }

    #[test]
    fn the_action_reference_is_the_repository_at_the_major_tag() {
        assert_eq!(repository().split('/').count(), 2, "{}", repository());
        assert!(release_tag().starts_with(&major_tag()));
        assert_eq!(
            action_reference(),
            format!("{}@{}", repository(), major_tag())
        );
        assert_eq!(pin_of(&major_tag()), Pin::Release(major_tag()));
    }
}

//! The credentials git would use from the runner's repository, and the files it would read them
//! from, found where an agent could read them (issue 47). An agent runs as the runner's user:
//! where nothing hides the runner's repository and home from it (Landlock confines writes, not
//! reads), it can read `.git/config`, follow its includes as git would, and read what they name.
//!
//! What is looked at: every entry of the repository's configuration (`.git/config`, the worktree
//! configuration) and of the runner's user's (`~/.gitconfig`, `$XDG_CONFIG_HOME/git/config`),
//! with every file they include followed, whatever its condition (`includeIf.gitdir:…` that does
//! not match here still names a file an agent can read), and the files git reads credentials
//! from by default (`~/.git-credentials`, `$XDG_CONFIG_HOME/git/credentials`). The system
//! configuration is not: the runner's git reads none (`GIT_CONFIG_NOSYSTEM`), and it belongs to
//! the machine.
//!
//! What counts as a credential: `http.<url>.extraheader` (actions/checkout's token: v4 writes it
//! into `.git/config`, v6 into `$RUNNER_TEMP/git-credentials-<uuid>.config` included from
//! `.git/config` by `includeIf.gitdir:…`), a password in a URL (a remote, `url.<base>.insteadOf`,
//! a proxy), a credential helper (any program of the user may ask it), the files the `store` and
//! `cache` helpers keep, `http.cookieFile`, `http.sslKey`, and the key `core.sshCommand` names
//! with `-i` (checkout's `ssh-key`).
//!
//! Whose it is ([`Owner`]) decides what a tick does with it: the job's is taken away while
//! agents run (`checkout`), the person's is never touched, only named.
//!
//! Not for: taking anything away (`checkout`), or the rules of the runner's own git
//! (`git::HARDENING`, which turns credential helpers off for it).

use std::collections::BTreeSet;
use std::path::{Component, Path, PathBuf};

use crate::git::{Git, GitError};

/// Where a configuration entry was read: the scope of the file (or of the file that included it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    /// The runner's user's own configuration (`~/.gitconfig`, `$XDG_CONFIG_HOME/git/config`).
    Global,
    /// The repository's `.git/config`.
    Local,
    /// The worktree's `config.worktree`.
    Worktree,
}

impl Scope {
    fn parse(word: &str) -> Option<Scope> {
        match word {
            "global" => Some(Scope::Global),
            "local" => Some(Scope::Local),
            "worktree" => Some(Scope::Worktree),
            _ => None,
        }
    }
}

/// One configuration entry as git lists it: its key with the section and name in lower case
/// (the subsection as written).
#[derive(Clone, PartialEq, Eq)]
pub struct Entry {
    pub scope: Scope,
    /// The file it is in, absolute.
    pub file: PathBuf,
    pub key: String,
    /// `None` for a bare `key` line (a boolean true).
    pub value: Option<String>,
}

impl std::fmt::Debug for Entry {
    // The value may be a token: never shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?} {} {}", self.scope, self.file.display(), self.key)
    }
}

/// The places the runner's environment names, as the checks read them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Places {
    /// The repository's work tree: relative origins git prints are relative to it.
    pub repo: PathBuf,
    pub home: Option<PathBuf>,
    pub xdg_config_home: Option<PathBuf>,
    pub xdg_cache_home: Option<PathBuf>,
    /// `$RUNNER_TEMP`, where actions/checkout v6 keeps its credentials file.
    pub runner_temp: Option<PathBuf>,
    /// In GitHub Actions (`GITHUB_ACTIONS=true`): the repository's own configuration was written
    /// by this job's steps, for this job.
    pub in_actions: bool,
}

impl Places {
    /// The places of `repo` with the variables `var` gives.
    pub fn of(repo: &Path, var: &dyn Fn(&str) -> Option<String>) -> Places {
        let path = |name: &str| var(name).filter(|v| v.starts_with('/')).map(PathBuf::from);
        Places {
            repo: repo.to_path_buf(),
            home: path("HOME"),
            xdg_config_home: path("XDG_CONFIG_HOME"),
            xdg_cache_home: path("XDG_CACHE_HOME"),
            runner_temp: path("RUNNER_TEMP"),
            in_actions: var("GITHUB_ACTIONS").as_deref() == Some("true"),
        }
    }

    /// `$XDG_CONFIG_HOME`, else `~/.config`.
    fn config_home(&self) -> Option<PathBuf> {
        self.xdg_config_home
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".config")))
    }

    /// `$XDG_CACHE_HOME`, else `~/.cache`.
    fn cache_home(&self) -> Option<PathBuf> {
        self.xdg_cache_home
            .clone()
            .or_else(|| self.home.as_ref().map(|h| h.join(".cache")))
    }

    /// A path as git reads it in a file of `base`'s folder: `~/` is the home, a relative path is
    /// relative to that folder.
    pub(super) fn resolve(&self, value: &str, base: &Path) -> Option<PathBuf> {
        let path = if let Some(rest) = value.strip_prefix("~/") {
            self.home.as_ref()?.join(rest)
        } else if Path::new(value).is_absolute() {
            PathBuf::from(value)
        } else {
            base.parent()?.join(value)
        };
        Some(normal(&path))
    }

    /// A path for a person to read: relative to the repository inside it, else as it is.
    pub fn shown(&self, path: &Path) -> String {
        match path.strip_prefix(&self.repo) {
            Ok(inside) if !inside.as_os_str().is_empty() => inside.display().to_string(),
            _ => path.display().to_string(),
        }
    }
}

/// `path` with `.` and `..` taken out as written (no link followed).
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// What a credential is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum What {
    /// `http.<url>.extraheader`: a header git sends with every request, a token in it.
    Header,
    /// A user and password in a URL (`https://user:token@host/`), in the value or the key.
    UrlPassword,
    /// `credential.helper`: git asks this program for passwords, and so can any program of the
    /// user.
    Helper(String),
    /// A file credentials are kept in.
    File(PathBuf, FileKind),
}

/// What a credential file is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// The `store` helper's passwords, in plain text.
    Store,
    /// The `cache` helper's socket: it answers any program of the user.
    CacheSocket,
    /// `http.cookieFile`.
    Cookies,
    /// The private key `core.sshCommand` passes with `-i`.
    SshKey,
    /// `http.sslKey`, a client certificate's key.
    SslKey,
}

/// Whose a credential is, which decides what a tick does with it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Owner {
    /// Left by this job for this job: actions/checkout's token (in `.git/config`, or its
    /// `$RUNNER_TEMP/git-credentials-*.config` and the include lines naming it), and in GitHub
    /// Actions any token in the repository's own configuration or an ssh key under
    /// `$RUNNER_TEMP` it names. A tick takes it away while agents run and puts it back.
    Job,
    /// Anything else: the person's, never touched by opentiger, only named by `doctor`.
    Person,
}

/// One credential found, where it is, and whose.
#[derive(Clone, PartialEq, Eq)]
pub struct Finding {
    pub what: What,
    /// The configuration file holding the entry, or for a credential file git reads without
    /// one (`~/.git-credentials`), that file.
    pub file: PathBuf,
    /// The entry's key; `None` for a credential file found by its default place.
    pub key: Option<String>,
    /// The include lines that bring `file` in: the file holding the line, and its key.
    pub via: Vec<(PathBuf, String)>,
    pub owner: Owner,
    /// The entry's value, to take it away and put it back: never shown.
    pub(super) value: Option<String>,
}

impl std::fmt::Debug for Finding {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Finding")
            .field("what", &self.what)
            .field("file", &self.file)
            .field("key", &self.key)
            .field("via", &self.via)
            .field("owner", &self.owner)
            .finish()
    }
}

impl Finding {
    /// Where it is and what it is, in one line that holds no secret.
    pub fn describe(&self, places: &Places) -> String {
        let what = match &self.what {
            What::Header => "a header git sends with every request (a token)".to_string(),
            What::UrlPassword => "a URL with a password in it".to_string(),
            What::Helper(name) => format!(
                "the credential helper `{name}`: git, and any program of this user, may ask it for passwords"
            ),
            What::File(path, kind) => format!(
                "{} {}",
                match kind {
                    FileKind::Store => "passwords in plain text in",
                    FileKind::CacheSocket => "the cache helper's socket, answering any program of this user, at",
                    FileKind::Cookies => "cookies git sends, in",
                    FileKind::SshKey => "the ssh key",
                    FileKind::SslKey => "the client certificate's key",
                },
                places.shown(path)
            ),
        };
        let mut text = match &self.key {
            Some(key) => format!(
                "{}: {} is {what}",
                places.shown(&self.file),
                without_password(key)
            ),
            None => what,
        };
        for (file, key) in &self.via {
            text.push_str(&format!(", included by `{key}` in {}", places.shown(file)));
        }
        text
    }
}

/// Every configuration entry in git's `config --list --show-scope --show-origin -z` output
/// (`scope NUL origin NUL key LF value NUL`); `scope`, when given, replaces the listed one (a
/// file listed with `--file` is in the scope of the file that includes it). Entries git was
/// given on its command line, and any not read from a file, are left out.
pub fn parse_listing(raw: &str, places: &Places, scope: Option<Scope>) -> Vec<Entry> {
    let mut fields = raw.split('\0');
    let mut out = Vec::new();
    while let (Some(listed), Some(origin), Some(pair)) =
        (fields.next(), fields.next(), fields.next())
    {
        let Some(file) = origin.strip_prefix("file:") else {
            continue;
        };
        let Some(scope) = scope.or_else(|| Scope::parse(listed)) else {
            continue;
        };
        let (key, value) = match pair.split_once('\n') {
            Some((key, value)) => (key, Some(value.to_string())),
            None => (pair, None),
        };
        out.push(Entry {
            scope,
            file: normal(&places.repo.join(file)),
            key: key.to_string(),
            value,
        });
    }
    out
}

/// Whether `key` is an include line (`include.path`, `includeIf.<condition>.path`).
fn is_include(key: &str) -> bool {
    key == "include.path" || (key.starts_with("includeif.") && key.ends_with(".path"))
}

/// The files `entries` include, whatever their condition, with the scope of the line naming
/// each: the ones git read already are among the entries' files, the others an agent could read
/// all the same.
pub fn include_targets(entries: &[Entry], places: &Places) -> Vec<(PathBuf, Scope)> {
    let listed: BTreeSet<&Path> = entries.iter().map(|e| e.file.as_path()).collect();
    let mut out: Vec<(PathBuf, Scope)> = Vec::new();
    for entry in entries.iter().filter(|e| is_include(&e.key)) {
        let Some(target) = entry
            .value
            .as_deref()
            .and_then(|v| places.resolve(v, &entry.file))
        else {
            continue;
        };
        if !listed.contains(target.as_path()) && !out.iter().any(|(t, _)| *t == target) {
            out.push((target, entry.scope));
        }
    }
    out
}

/// The credentials in `entries` and the files git reads them from by default, with whose each
/// is. Files are named whether they exist or not ([`find`] keeps those that do).
pub fn classify(entries: &[Entry], places: &Places) -> Vec<Finding> {
    let mut out = Vec::new();
    for entry in entries {
        let via: Vec<(PathBuf, String)> = entries
            .iter()
            .filter(|e| is_include(&e.key))
            .filter(|e| {
                e.value
                    .as_deref()
                    .and_then(|v| places.resolve(v, &e.file))
                    .is_some_and(|t| t == entry.file)
            })
            .map(|e| (e.file.clone(), e.key.clone()))
            .collect();
        // In the repository's configuration, or a file it includes (which takes its scope).
        let repository = matches!(entry.scope, Scope::Local | Scope::Worktree);
        let own = repository && via.is_empty();
        let value = entry.value.as_deref().unwrap_or("");
        for what in credentials_in(entry, places) {
            let owner = match &what {
                What::Header if own && (places.in_actions || checkout_header(value)) => Owner::Job,
                What::Header
                    if repository
                        && !via.is_empty()
                        && checkout_file(&entry.file, entries, places) =>
                {
                    Owner::Job
                }
                What::UrlPassword if own && places.in_actions => Owner::Job,
                What::File(path, FileKind::SshKey)
                    if own && places.in_actions && under_runner_temp(path, places) =>
                {
                    Owner::Job
                }
                _ => Owner::Person,
            };
            out.push(Finding {
                what,
                file: entry.file.clone(),
                key: Some(entry.key.clone()),
                via: via.clone(),
                owner,
                value: entry.value.clone(),
            });
        }
    }
    let defaults = [
        places.home.as_ref().map(|h| h.join(".git-credentials")),
        places.config_home().map(|c| c.join("git/credentials")),
    ];
    for path in defaults.into_iter().flatten() {
        let named = out
            .iter()
            .any(|f| matches!(&f.what, What::File(p, _) if *p == path));
        if !named {
            out.push(Finding {
                what: What::File(path.clone(), FileKind::Store),
                file: path,
                key: None,
                via: Vec::new(),
                owner: Owner::Person,
                value: None,
            });
        }
    }
    out
}

/// The credentials one entry is, or names.
fn credentials_in(entry: &Entry, places: &Places) -> Vec<What> {
    let key = entry.key.as_str();
    let Some(value) = entry.value.as_deref().filter(|v| !v.trim().is_empty()) else {
        return Vec::new();
    };
    let (section, name) = match (key.split_once('.'), key.rsplit_once('.')) {
        (Some((section, _)), Some((_, name))) => (section, name),
        _ => return Vec::new(),
    };
    let file = |kind| {
        places
            .resolve(value, &entry.file)
            .map(|path| What::File(path, kind))
    };
    let mut out = Vec::new();
    if url_password(key).is_some() || url_password(value).is_some() {
        out.push(What::UrlPassword);
    }
    match (section, name) {
        ("http", "extraheader") => out.push(What::Header),
        ("http", "cookiefile") => out.extend(file(FileKind::Cookies)),
        ("http", "sslkey") => out.extend(file(FileKind::SslKey)),
        ("credential", "helper") => {
            out.push(What::Helper(
                value.split_whitespace().next().unwrap_or(value).to_string(),
            ));
            out.extend(helper_files(value, entry, places));
        }
        ("core", "sshcommand") => out.extend(
            ssh_identities(value, places)
                .into_iter()
                .map(|path| What::File(path, FileKind::SshKey)),
        ),
        _ => {}
    }
    out
}

/// The files the `store` and `cache` helpers keep, as `helper` sets them up.
fn helper_files(helper: &str, entry: &Entry, places: &Places) -> Vec<What> {
    let words: Vec<&str> = helper.split_whitespace().collect();
    let option = |name: &str| {
        words.iter().enumerate().find_map(|(i, w)| {
            w.strip_prefix(&format!("--{name}="))
                .or_else(|| (*w == format!("--{name}")).then(|| words.get(i + 1).copied())?)
        })
    };
    let program = words
        .first()
        .map(|w| w.trim_start_matches("git-credential-"));
    match program {
        Some("store") => match option("file") {
            Some(file) => places
                .resolve(file, &entry.file)
                .map(|p| vec![What::File(p, FileKind::Store)])
                .unwrap_or_default(),
            // The defaults are named for every repository (`classify`).
            None => Vec::new(),
        },
        Some("cache") => {
            let socket = match option("socket") {
                Some(socket) => places.resolve(socket, &entry.file),
                None => places.cache_home().map(|c| c.join("git/credential/socket")),
            };
            socket
                .map(|p| vec![What::File(p, FileKind::CacheSocket)])
                .unwrap_or_default()
        }
        _ => Vec::new(),
    }
}

/// The files `core.sshCommand` passes to ssh with `-i`, `$RUNNER_TEMP` and `$HOME` expanded.
fn ssh_identities(command: &str, places: &Places) -> Vec<PathBuf> {
    let words: Vec<String> = command
        .split_whitespace()
        .map(|w| w.trim_matches(|c| c == '"' || c == '\''))
        .map(|w| {
            let mut w = w.to_string();
            for (name, value) in [("RUNNER_TEMP", &places.runner_temp), ("HOME", &places.home)] {
                if let Some(value) = value {
                    let value = value.display().to_string();
                    w = w
                        .replace(&format!("${{{name}}}"), &value)
                        .replace(&format!("${name}"), &value);
                }
            }
            w
        })
        .collect();
    words
        .iter()
        .enumerate()
        .filter_map(|(i, w)| match w.strip_prefix("-i") {
            Some("") => words.get(i + 1).cloned(),
            Some(attached) => Some(attached.to_string()),
            None => None,
        })
        .filter_map(|p| places.resolve(&p, &places.repo.join("-")))
        .collect()
}

/// Where a URL's `user:password@` is in `text` (from the scheme's `//` to the `@`).
pub fn url_password(text: &str) -> Option<std::ops::Range<usize>> {
    let start = text.find("://")? + 3;
    let rest = &text[start..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let at = rest[..authority_end].rfind('@')?;
    let (_, password) = rest[..at].split_once(':')?;
    (!password.is_empty()).then_some(start..start + at + 1)
}

/// `text` with a URL's password (`url.https://me:pw@host/.insteadOf`) shown as `***`.
pub fn without_password(text: &str) -> String {
    match url_password(text) {
        Some(range) => {
            let userinfo = &text[range.clone()];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}{user}:***@{}", &text[..range.start], &text[range.end..])
        }
        None => text.to_string(),
    }
}

/// The header actions/checkout writes: `AUTHORIZATION: basic ` and base64 of
/// `x-access-token:` followed by the token's.
fn checkout_header(value: &str) -> bool {
    const PREFIX: &str = "authorization: basic ec1hy2nlc3mtdg9rzw46";
    value
        .get(..PREFIX.len())
        .is_some_and(|p| p.eq_ignore_ascii_case(PREFIX))
}

fn under_runner_temp(path: &Path, places: &Places) -> bool {
    places
        .runner_temp
        .as_ref()
        .is_some_and(|temp| path.starts_with(temp))
}

/// Whether `file` is actions/checkout v6's credentials file: named `git-credentials-<uuid>.config`,
/// under `$RUNNER_TEMP`, holding nothing but `http.<url>.extraheader`.
pub fn checkout_file(file: &Path, entries: &[Entry], places: &Places) -> bool {
    let named = file
        .file_name()
        .and_then(|n| n.to_str())
        .and_then(|n| n.strip_prefix("git-credentials-"))
        .and_then(|n| n.strip_suffix(".config"))
        .is_some_and(|id| !id.is_empty() && id.chars().all(|c| c.is_ascii_hexdigit() || c == '-'));
    named
        && under_runner_temp(file, places)
        && entries
            .iter()
            .filter(|e| e.file == file)
            .all(|e| e.key.starts_with("http.") && e.key.ends_with(".extraheader"))
}

/// Files listed at most, following includes (git itself stops at a depth of 10).
const MOST_FILES: usize = 64;

/// Every credential git would use in `git`'s repository, or could be led to by its
/// configuration, with the credential files that exist. Runs the runner's git: its command-line
/// settings are left out, and so is the system's configuration, which it does not read.
pub fn find(git: &Git, places: &Places) -> Result<Vec<Finding>, GitError> {
    let listed = git.run(&[
        "config",
        "--list",
        "--show-scope",
        "--show-origin",
        "--includes",
        "-z",
    ])?;
    let mut entries = parse_listing(&listed, places, None);
    let mut read: BTreeSet<PathBuf> = BTreeSet::new();
    while read.len() < MOST_FILES {
        let Some((target, scope)) = include_targets(&entries, places)
            .into_iter()
            .find(|(t, _)| !read.contains(t))
        else {
            break;
        };
        read.insert(target.clone());
        if !target.is_file() {
            continue;
        }
        let path = target.display().to_string();
        // A file that is not git configuration holds none of git's credentials.
        let args = [
            "config",
            "--file",
            &path,
            "--list",
            "--show-scope",
            "--show-origin",
            "-z",
        ];
        if let Some(listed) = git.try_run(&args)? {
            entries.extend(parse_listing(&listed, places, Some(scope)));
        }
    }
    Ok(classify(&entries, places)
        .into_iter()
        .filter(|f| match &f.what {
            What::File(path, _) => std::fs::symlink_metadata(path).is_ok(),
            _ => true,
        })
        .collect())
}

#[cfg(test)]
#[path = "credentials_tests.rs"]
mod tests;

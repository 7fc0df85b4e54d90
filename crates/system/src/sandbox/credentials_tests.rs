//! The discovery's pure part: git's `--show-scope --show-origin -z` listing in, the
//! credentials and whose each is out.

use super::*;

const REPO: &str = "/home/runner/work/widgets/widgets";
const TEMP: &str = "/home/runner/work/_temp";
const CREDS: &str =
    "/home/runner/work/_temp/git-credentials-5b1f3c1e-9d2a-4f7b-8e44-0c6d1a2b3c4d.config";
const HEADER: &str = "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3NlY3JldA==";

fn places(in_actions: bool) -> Places {
    Places {
        repo: PathBuf::from(REPO),
        home: Some(PathBuf::from("/home/runner")),
        xdg_config_home: None,
        xdg_cache_home: None,
        runner_temp: Some(PathBuf::from(TEMP)),
        in_actions,
    }
}

/// One listed entry, as `git config --list --show-scope --show-origin -z` prints it.
fn line(scope: &str, file: &str, key: &str, value: &str) -> String {
    format!("{scope}\0file:{file}\0{key}\n{value}\0")
}

/// What actions/checkout v6 leaves: four include lines in `.git/config` (the host's and the
/// container's paths, each for the repository and its worktrees) naming its file under
/// `$RUNNER_TEMP`; git follows the one whose `gitdir:` matches and lists the file's header after
/// it.
fn checkout_v6() -> String {
    let container =
        "/github/runner_temp/git-credentials-5b1f3c1e-9d2a-4f7b-8e44-0c6d1a2b3c4d.config";
    [
        line("local", ".git/config", "core.bare", "false"),
        line(
            "local",
            ".git/config",
            &format!("includeif.gitdir:{REPO}/.git.path"),
            CREDS,
        ),
        line(
            "local",
            CREDS,
            "http.https://github.com/.extraheader",
            HEADER,
        ),
        line(
            "local",
            ".git/config",
            &format!("includeif.gitdir:{REPO}/.git/worktrees/*.path"),
            CREDS,
        ),
        line(
            "local",
            ".git/config",
            "includeif.gitdir:/github/workspace/.git.path",
            container,
        ),
        line(
            "local",
            ".git/config",
            "includeif.gitdir:/github/workspace/.git/worktrees/*.path",
            container,
        ),
        line(
            "local",
            ".git/config",
            "remote.origin.url",
            "https://github.com/o/widgets",
        ),
        "command\0command line:\0credential.helper\n\0".to_string(),
    ]
    .concat()
}

#[test]
fn the_listing_is_read_into_entries_with_their_files_and_scopes() {
    let entries = parse_listing(&checkout_v6(), &places(true), None);
    assert_eq!(
        entries.len(),
        7,
        "the command line's entry is left out: {entries:?}"
    );
    assert_eq!(
        entries[0].file,
        PathBuf::from(format!("{REPO}/.git/config"))
    );
    assert_eq!(entries[0].scope, Scope::Local);
    assert_eq!(entries[2].file, PathBuf::from(CREDS));
    assert_eq!(entries[2].key, "http.https://github.com/.extraheader");
    assert_eq!(entries[2].value.as_deref(), Some(HEADER));
    // A bare key (a boolean true) has no value; a `--file` listing takes the includer's scope.
    let bare = parse_listing(
        "command\0file:/x/a.config\0core.bare\0",
        &places(true),
        Some(Scope::Global),
    );
    assert_eq!(bare[0].value, None);
    assert_eq!(bare[0].scope, Scope::Global);
}

#[test]
fn checkout_v6_s_header_is_the_job_s_and_named_with_its_include_lines() {
    let p = places(false);
    let found = classify(&parse_listing(&checkout_v6(), &p, None), &p);
    let headers: Vec<&Finding> = found.iter().filter(|f| f.what == What::Header).collect();
    assert_eq!(headers.len(), 1, "{found:?}");
    let header = headers[0];
    assert_eq!(header.owner, Owner::Job);
    assert_eq!(header.file, PathBuf::from(CREDS));
    let via: Vec<&str> = header.via.iter().map(|(_, k)| k.as_str()).collect();
    assert_eq!(
        via,
        [
            format!("includeif.gitdir:{REPO}/.git.path"),
            format!("includeif.gitdir:{REPO}/.git/worktrees/*.path")
        ]
    );
    let text = header.describe(&p);
    assert!(text.starts_with(CREDS), "{text}");
    assert!(
        text.contains(&format!(
            "included by `includeif.gitdir:{REPO}/.git.path` in .git/config"
        )),
        "{text}"
    );
    assert!(
        !text.contains("eC1hY2") && !format!("{header:?}").contains("eC1hY2"),
        "no secret shown: {text}"
    );
}

#[test]
fn an_include_file_that_is_not_the_checkout_s_is_the_person_s() {
    let p = places(true);
    let cases = [
        // Not under $RUNNER_TEMP.
        ("/home/runner/git-credentials-5b1f3c1e.config", vec![]),
        // Not the checkout's name.
        ("/home/runner/work/_temp/tokens.config", vec![]),
        // More than a header in it.
        (CREDS, vec![line("local", CREDS, "user.name", "me")]),
        // Included from the person's own configuration, not the repository's.
        (
            CREDS,
            vec![line(
                "global",
                "/home/runner/.gitconfig",
                "include.path",
                CREDS,
            )],
        ),
    ];
    for (file, extra) in cases {
        let global = extra.iter().any(|l| l.starts_with("global"));
        let scope = if global { "global" } else { "local" };
        let mut listing = extra.concat();
        if !global {
            listing = line("local", ".git/config", "include.path", file) + &listing;
        }
        listing.push_str(&line(
            scope,
            file,
            "http.https://github.com/.extraheader",
            HEADER,
        ));
        let found = classify(&parse_listing(&listing, &p, None), &p);
        let header = found
            .iter()
            .find(|f| f.what == What::Header)
            .expect("a header");
        assert_eq!(header.owner, Owner::Person, "{file}");
    }
}

#[test]
fn include_targets_are_every_include_whatever_its_condition() {
    let p = places(true);
    let mut listing = checkout_v6();
    listing.push_str(&line(
        "local",
        ".git/config",
        "include.path",
        "extra.config",
    ));
    listing.push_str(&line(
        "global",
        "/home/runner/.gitconfig",
        "include.path",
        "~/.gitconfig-work",
    ));
    let targets = include_targets(&parse_listing(&listing, &p, None), &p);
    let paths: Vec<String> = targets
        .iter()
        .map(|(t, _)| t.display().to_string())
        .collect();
    assert_eq!(
        paths,
        [
            "/github/runner_temp/git-credentials-5b1f3c1e-9d2a-4f7b-8e44-0c6d1a2b3c4d.config"
                .to_string(),
            format!("{REPO}/.git/extra.config"),
            "/home/runner/.gitconfig-work".to_string(),
        ],
        "the one git read is not listed again; a relative path is the including file's folder's"
    );
    assert_eq!(targets[2].1, Scope::Global);
}

/// scope, file, key, value, in GitHub Actions; what is found, whose the first is.
type Case = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    bool,
    Vec<What>,
    Owner,
);

#[test]
fn each_kind_of_credential_is_found_with_whose_it_is() {
    let git = ".git/config";
    let global = "/home/runner/.gitconfig";
    let cases: Vec<Case> = vec![
        (
            "local",
            git,
            "http.https://github.com/.extraheader",
            HEADER,
            false,
            vec![What::Header],
            Owner::Job,
        ),
        (
            "local",
            git,
            "http.extraheader",
            "Authorization: Bearer mine",
            false,
            vec![What::Header],
            Owner::Person,
        ),
        (
            "local",
            git,
            "http.extraheader",
            "Authorization: Bearer job",
            true,
            vec![What::Header],
            Owner::Job,
        ),
        (
            "global",
            global,
            "http.https://github.com/.extraheader",
            HEADER,
            true,
            vec![What::Header],
            Owner::Person,
        ),
        (
            "local",
            git,
            "remote.origin.url",
            "https://x-access-token:ghs_x@github.com/o/r",
            true,
            vec![What::UrlPassword],
            Owner::Job,
        ),
        (
            "local",
            git,
            "remote.origin.url",
            "https://me:pw@example.com/r",
            false,
            vec![What::UrlPassword],
            Owner::Person,
        ),
        (
            "local",
            git,
            "remote.origin.url",
            "https://me@example.com/r",
            true,
            vec![],
            Owner::Person,
        ),
        (
            "global",
            global,
            "url.https://me:pw@github.com/.insteadof",
            "https://github.com/",
            false,
            vec![What::UrlPassword],
            Owner::Person,
        ),
        (
            "global",
            global,
            "credential.helper",
            "store --file ~/.my-creds",
            false,
            vec![
                What::Helper("store".into()),
                What::File("/home/runner/.my-creds".into(), FileKind::Store),
            ],
            Owner::Person,
        ),
        (
            "global",
            global,
            "credential.https://github.com.helper",
            "cache --timeout 300",
            false,
            vec![
                What::Helper("cache".into()),
                What::File(
                    "/home/runner/.cache/git/credential/socket".into(),
                    FileKind::CacheSocket,
                ),
            ],
            Owner::Person,
        ),
        (
            "global",
            global,
            "credential.helper",
            "!gh auth git-credential",
            false,
            vec![What::Helper("!gh".into())],
            Owner::Person,
        ),
        (
            "global",
            global,
            "credential.helper",
            "",
            false,
            vec![],
            Owner::Person,
        ),
        (
            "local",
            git,
            "http.cookiefile",
            "cookies.txt",
            false,
            vec![What::File(
                format!("{REPO}/.git/cookies.txt").into(),
                FileKind::Cookies,
            )],
            Owner::Person,
        ),
        (
            "global",
            global,
            "http.sslkey",
            "/etc/client.key",
            false,
            vec![What::File("/etc/client.key".into(), FileKind::SslKey)],
            Owner::Person,
        ),
        (
            "local",
            git,
            "core.sshcommand",
            "\"/usr/bin/ssh\" -i \"$RUNNER_TEMP/0f9e8d7c\" -o StrictHostKeyChecking=yes",
            true,
            vec![What::File(
                format!("{TEMP}/0f9e8d7c").into(),
                FileKind::SshKey,
            )],
            Owner::Job,
        ),
        (
            "local",
            git,
            "core.sshcommand",
            "ssh -i ~/.ssh/deploy",
            true,
            vec![What::File(
                "/home/runner/.ssh/deploy".into(),
                FileKind::SshKey,
            )],
            Owner::Person,
        ),
        (
            "local",
            git,
            "user.name",
            "https://not:a@credential.example",
            false,
            vec![What::UrlPassword],
            Owner::Person,
        ),
        (
            "local",
            git,
            "core.editor",
            "vim",
            true,
            vec![],
            Owner::Person,
        ),
    ];
    for (scope, file, key, value, in_actions, want, owner) in cases {
        let p = places(in_actions);
        let entries = parse_listing(&line(scope, file, key, value), &p, None);
        let found: Vec<Finding> = classify(&entries, &p)
            .into_iter()
            .filter(|f| f.key.is_some())
            .collect();
        let whats: Vec<What> = found.iter().map(|f| f.what.clone()).collect();
        assert_eq!(whats, want, "{key} = {value}");
        for f in &found {
            let expected = if f.what == want[0] {
                owner
            } else {
                Owner::Person
            };
            assert_eq!(f.owner, expected, "{key} = {value}");
        }
    }
}

#[test]
fn the_files_git_reads_credentials_from_by_default_are_always_named() {
    let mut p = places(false);
    p.xdg_config_home = Some("/home/runner/.xdg".into());
    let found = classify(&[], &p);
    let files: Vec<&What> = found.iter().map(|f| &f.what).collect();
    assert_eq!(
        files,
        [
            &What::File("/home/runner/.git-credentials".into(), FileKind::Store),
            &What::File("/home/runner/.xdg/git/credentials".into(), FileKind::Store),
        ]
    );
    assert!(found
        .iter()
        .all(|f| f.key.is_none() && f.owner == Owner::Person));
}

#[test]
fn a_url_s_password_is_found_only_in_its_authority() {
    let cases = [
        ("https://u:p@host/x", Some("u:p@")),
        (
            "https://x-access-token:ghs_1@github.com/o/r.git",
            Some("x-access-token:ghs_1@"),
        ),
        ("https://u@host/x", None),
        ("https://u:@host/x", None),
        ("https://host/x?u=a:b@c", None),
        ("git@github.com:o/r.git", None),
        ("plain text", None),
    ];
    for (text, want) in cases {
        assert_eq!(url_password(text).map(|r| &text[r]), want, "{text}");
    }
    assert_eq!(
        without_password("url.https://me:s3cr3t@github.com/.insteadof"),
        "url.https://me:***@github.com/.insteadof"
    );
    assert_eq!(without_password("remote.origin.url"), "remote.origin.url");
}

//! `doctor` on the credentials an agent could read (issues 47 and 51): actions/checkout v6's
//! token, in `$RUNNER_TEMP/git-credentials-<uuid>.config` included from `.git/config`, is named
//! with its file, the include line that brings it in and the fix; the person's own are named as
//! theirs; none, and it says so.

use super::sandbox::initialised_with_scripted_agent;
use super::*;

const TOKEN: &str = "ghs_checkoutLeftThisToken0123456789abcd";

/// A repository as a job leaves it after `actions/checkout@v6`, `$RUNNER_TEMP` beside it, and a
/// home of its own; the variables doctor runs with there.
struct Job {
    _dir: tempfile::TempDir,
    repo: std::path::PathBuf,
    temp: std::path::PathBuf,
    home: std::path::PathBuf,
}

impl Job {
    fn new() -> Job {
        let dir = tempfile::tempdir().unwrap();
        let repo = initialised_with_scripted_agent(dir.path());
        let temp = dir.path().join("_temp");
        let home = dir.path().join("home");
        std::fs::create_dir_all(&temp).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        Job {
            _dir: dir,
            repo,
            temp,
            home,
        }
    }

    fn doctor(&self) -> Out {
        let temp = self.temp.display().to_string();
        let home = self.home.display().to_string();
        opentiger(
            &self.repo,
            &["doctor"],
            &[("RUNNER_TEMP", &temp), ("HOME", &home)],
        )
    }
}

#[test]
fn doctor_names_checkout_v6_s_credentials_file_its_include_and_the_fix() {
    let job = Job::new();
    let creds = job
        .temp
        .join("git-credentials-9c0e1d2f-3a4b-4c5d-8e6f-7a8b9c0d1e2f.config");
    std::fs::write(
        &creds,
        format!("[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic {TOKEN}\n"),
    )
    .unwrap();
    let gitdir = job.repo.join(".git").display().to_string();
    let include = format!("includeIf.gitdir:{gitdir}.path");
    git(
        &job.repo,
        &["config", &include, &creds.display().to_string()],
    );

    let out = job.doctor();
    assert_eq!(out.code, 0, "a warning, not a failure:\n{}", out.stdout);
    assert!(!out.stdout.contains(TOKEN) && !out.stderr.contains(TOKEN));
    let warned = lines_at(&out.stdout, "warn");
    let line = warned
        .iter()
        .find(|l| l.contains(&creds.display().to_string()))
        .unwrap_or_else(|| panic!("the file is named:\n{}", out.stdout));
    assert!(line.contains("credentials"), "{line}");
    assert!(
        line.contains("http.https://github.com/.extraheader"),
        "{line}"
    );
    assert!(
        line.contains(&format!(
            "included by `includeif.gitdir:{gitdir}.path` in .git/config"
        )),
        "{line}"
    );
    assert!(line.contains("left by this job"), "{line}");
    assert!(
        out.stdout
            .contains("fix: set `persist-credentials: false` on the actions/checkout step"),
        "{}",
        out.stdout
    );
}

/// The person's own: a `store` helper in their git configuration and its file. Named as theirs,
/// with what it means; never the password.
#[test]
fn doctor_names_the_person_s_helper_and_stored_passwords_as_theirs() {
    let job = Job::new();
    std::fs::write(
        job.home.join(".gitconfig"),
        "[credential]\n\thelper = store\n",
    )
    .unwrap();
    std::fs::write(
        job.home.join(".git-credentials"),
        format!("https://me:{TOKEN}@github.com\n"),
    )
    .unwrap();
    let out = job.doctor();
    assert_eq!(out.code, 0, "{}", out.stdout);
    assert!(!out.stdout.contains(TOKEN));
    let warned = lines_at(&out.stdout, "warn");
    let yours: Vec<&String> = warned.iter().filter(|l| l.contains("yours")).collect();
    assert!(
        yours
            .iter()
            .any(|l| l.contains(".gitconfig: credential.helper is the credential helper `store`")),
        "{}",
        out.stdout
    );
    assert!(
        yours
            .iter()
            .any(|l| l.contains("passwords in plain text in") && l.contains(".git-credentials")),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("git credential fill"), "{}", out.stdout);
}

/// The twin: with `persist-credentials: false` and nothing stored, doctor says there is none.
#[test]
fn doctor_says_when_no_credential_is_in_reach() {
    let job = Job::new();
    let out = job.doctor();
    assert!(
        lines_at(&out.stdout, "ok")
            .iter()
            .any(|l| l.contains("credentials")
                && l.contains("none in the repository's git configuration")),
        "{}",
        out.stdout
    );
    assert!(!lines_at(&out.stdout, "warn")
        .iter()
        .any(|l| l.contains("credentials  ")));
}

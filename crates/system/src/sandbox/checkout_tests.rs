//! Taking the job's credentials away and putting them back, on real repositories.

use std::sync::Mutex;

use super::*;

/// What is held is one per process: these tests take turns.
static TURN: Mutex<()> = Mutex::new(());

const HEADER: &str = "AUTHORIZATION: basic eC1hY2Nlc3MtdG9rZW46Z2hzX3NlY3JldA==";

struct Layout {
    _dir: tempfile::TempDir,
    repo: PathBuf,
    places: Places,
}

fn layout(in_actions: bool) -> Layout {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("work/widgets");
    let temp = dir.path().join("work/_temp");
    std::fs::create_dir_all(&repo).unwrap();
    std::fs::create_dir_all(&temp).unwrap();
    Git::new(&repo).run(&["init", "-q"]).unwrap();
    let places = Places {
        repo: repo.clone(),
        home: Some(dir.path().join("home")),
        runner_temp: Some(temp),
        in_actions,
        ..Places::default()
    };
    Layout {
        _dir: dir,
        repo,
        places,
    }
}

fn config(repo: &Path) -> String {
    std::fs::read_to_string(repo.join(".git/config")).unwrap()
}

fn job_findings(l: &Layout) -> Vec<Finding> {
    credentials::find(&Git::new(&l.repo), &l.places)
        .unwrap()
        .into_iter()
        .filter(|f| f.owner == Owner::Job)
        .collect()
}

/// actions/checkout v6's file and include lines go, and come back as they were.
#[test]
fn checkout_v6_s_file_and_include_lines_are_taken_and_put_back() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let l = layout(false);
    let temp = l.places.runner_temp.clone().unwrap();
    let creds = temp.join("git-credentials-5b1f3c1e-9d2a-4f7b-8e44-0c6d1a2b3c4d.config");
    let body = format!("[http \"https://github.com/\"]\n\textraheader = {HEADER}\n");
    std::fs::write(&creds, &body).unwrap();
    std::fs::set_permissions(&creds, std::fs::Permissions::from_mode(0o640)).unwrap();
    let git = Git::new(&l.repo);
    let gitdir = l.repo.join(".git").display().to_string();
    let path = creds.display().to_string();
    for key in [
        format!("includeIf.gitdir:{gitdir}.path"),
        format!("includeIf.gitdir:{gitdir}/worktrees/*.path"),
    ] {
        git.run(&["config", &key, &path]).unwrap();
    }
    git.run(&["config", "include.path", "other.config"])
        .unwrap();
    let before = config(&l.repo);

    let found = job_findings(&l);
    assert_eq!(found.len(), 1, "{found:?}");
    let taken = take(&found, &l.places).unwrap();
    assert!(
        taken.iter().any(|t| t.contains("git-credentials-")),
        "{taken:?}"
    );
    assert!(!creds.exists(), "the file is gone while agents run");
    let during = config(&l.repo);
    assert!(!during.contains("git-credentials-"), "{during}");
    assert!(
        during.contains("other.config"),
        "another include stays: {during}"
    );
    assert!(job_findings(&l).is_empty(), "taking again finds nothing");
    assert!(take(&job_findings(&l), &l.places).unwrap().is_empty());

    assert!(put_back().is_empty());
    assert_eq!(std::fs::read_to_string(&creds).unwrap(), body);
    let mode = std::fs::metadata(&creds).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
    let after = config(&l.repo);
    for line in before.lines().filter(|l| l.contains("git-credentials-")) {
        assert!(after.contains(line), "{line} is back: {after}");
    }
    assert_eq!(job_findings(&l).len(), 1, "found again as before");
    assert!(put_back().is_empty(), "nothing is held twice");
    assert_eq!(std::fs::read_to_string(&creds).unwrap(), body);
}

/// v4's header in `.git/config`, and in GitHub Actions a token in the remote's URL.
#[test]
fn a_header_and_a_url_s_password_in_git_config_are_taken_and_put_back() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let l = layout(true);
    let git = Git::new(&l.repo);
    let url = "https://x-access-token:ghs_secret@github.com/o/widgets";
    git.run(&["config", "http.https://github.com/.extraheader", HEADER])
        .unwrap();
    git.run(&["config", "remote.origin.url", url]).unwrap();

    take(&job_findings(&l), &l.places).unwrap();
    let during = config(&l.repo);
    assert!(
        !during.contains("extraheader") && !during.contains("ghs_secret"),
        "{during}"
    );
    assert_eq!(
        git.run(&["config", "remote.origin.url"]).unwrap(),
        "https://github.com/o/widgets",
        "the remote still works, with the runner's own token"
    );
    assert!(put_back().is_empty());
    assert_eq!(git.run(&["config", "remote.origin.url"]).unwrap(), url);
    assert_eq!(
        git.run(&["config", "http.https://github.com/.extraheader"])
            .unwrap(),
        HEADER
    );
}

/// The person's are not touched; what is there again when putting back is not overwritten.
#[test]
fn the_person_s_are_left_and_nothing_is_overwritten() {
    let _turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
    let l = layout(false);
    let git = Git::new(&l.repo);
    git.run(&["config", "remote.origin.url", "https://me:pw@example.com/r"])
        .unwrap();
    git.run(&["config", "http.extraheader", "Authorization: Bearer mine"])
        .unwrap();
    let before = config(&l.repo);
    let found = credentials::find(&git, &l.places).unwrap();
    assert!(found.iter().all(|f| f.owner == Owner::Person), "{found:?}");
    assert!(take(&found, &l.places).unwrap().is_empty());
    assert_eq!(config(&l.repo), before);

    let temp = l.places.runner_temp.clone().unwrap();
    let creds = temp.join("git-credentials-0a1b.config");
    std::fs::write(&creds, format!("[http]\n\textraheader = {HEADER}\n")).unwrap();
    git.run(&["config", "include.path", &creds.display().to_string()])
        .unwrap();
    take(&job_findings(&l), &l.places).unwrap();
    std::fs::write(&creds, "[user]\n\tname = someone else\n").unwrap();
    assert!(put_back().is_empty());
    assert_eq!(
        std::fs::read_to_string(&creds).unwrap(),
        "[user]\n\tname = someone else\n"
    );
}

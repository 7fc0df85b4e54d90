//! The token actions/checkout v6 persists (issue 47, point 3): a file
//! `$RUNNER_TEMP/git-credentials-<uuid>.config` holding `http.https://github.com/.extraheader`,
//! pulled in by four `includeIf.gitdir:…` lines in `.git/config` (the host's and the container's
//! paths, each for the repository and its worktrees). An agent that reads `.git/config`, follows
//! its includes and reads every file it can find writes whatever it found into its change as
//! decimal codes, reversed and in base64: nothing derived from the token reaches a branch, the
//! state or the tick's output, and the file and its lines are back when the tick ends.
//!
//! The ticks run as an unprivileged user from a shell holding the canary token
//! (`common::unprivileged`), under Landlock, which lets agents read everything that user may.

use crate::common;

use std::path::PathBuf;

use common::unprivileged::{base64_of, Jail, CANARY};
use common::{git, minute, Setup};

/// What actions/checkout v6 left in the runner's repository and temp folder.
struct Checkout {
    jail: Jail,
    /// `$RUNNER_TEMP`, under the runner's home as on GitHub's hosted runners.
    temp: PathBuf,
    /// The checkout's credentials file, and what it held.
    creds: PathBuf,
    body: String,
}

/// A marker in a file `.git/config` includes that holds no credential: the agent finding it
/// shows it followed the includes.
const MARKER: &str = "marker-of-an-included-settings-file";

impl Checkout {
    /// A repository as a job leaves it after `actions/checkout@v6`: with the checkout's
    /// credentials (`persisted`) or, as with `persist-credentials: false`, without. Either way
    /// `.git/config` includes a settings file of the workflow's. Without a `view` of their own
    /// (`sandbox.view: none`) agents may read every file the runner's user may: taking the
    /// credentials away is then the only wall between them and the token.
    fn new(persisted: bool, view: bool) -> Checkout {
        let jail = Jail::confined(Setup::default());
        if !view {
            let path = jail.g.path().join(".opentiger.yml");
            let config = std::fs::read_to_string(&path).unwrap();
            let config = config.replace(
                "sandbox:\n  filesystem: landlock\n",
                "sandbox:\n  filesystem: landlock\n  view: none\n",
            );
            assert!(config.contains("view: none"), "{config}");
            std::fs::write(&path, config).unwrap();
        }
        let temp = jail.home.path().join("work/_temp");
        std::fs::create_dir_all(&temp).unwrap();
        let creds = temp.join("git-credentials-3f1c2b4a-8d7e-4f60-9a1b-2c3d4e5f6a7b.config");
        let body = format!(
            "[http \"https://github.com/\"]\n\textraheader = AUTHORIZATION: basic {}\n",
            base64_of(&format!("x-access-token:{CANARY}"))
        );
        let repo = jail.g.path();
        let settings = temp.join("settings.config");
        std::fs::write(&settings, format!("# {MARKER}\n[core]\n\tabbrev = 12\n")).unwrap();
        git(
            repo,
            &["config", "include.path", &settings.display().to_string()],
        );
        if persisted {
            std::fs::write(&creds, &body).unwrap();
            let host = repo.join(".git").display().to_string();
            let container =
                "/github/runner_temp/git-credentials-3f1c2b4a-8d7e-4f60-9a1b-2c3d4e5f6a7b.config";
            let path = creds.display().to_string();
            for (key, value) in [
                (format!("includeIf.gitdir:{host}.path"), path.as_str()),
                (
                    format!("includeIf.gitdir:{host}/worktrees/*.path"),
                    path.as_str(),
                ),
                (
                    "includeIf.gitdir:/github/workspace/.git.path".to_string(),
                    container,
                ),
                (
                    "includeIf.gitdir:/github/workspace/.git/worktrees/*.path".to_string(),
                    container,
                ),
            ] {
                git(repo, &["config", &key, value]);
            }
        }
        Checkout {
            jail,
            temp,
            creds,
            body,
        }
    }

    fn config(&self) -> String {
        std::fs::read_to_string(self.jail.g.path().join(".git/config")).unwrap()
    }

    /// The entries of `.git/config` as git reads them, sorted: what was put back is appended,
    /// its section name in git's lower case.
    fn entries(&self) -> Vec<String> {
        let path = self.jail.g.path().join(".git/config");
        let listed = git(
            self.jail.g.path(),
            &["config", "--file", &path.display().to_string(), "--list"],
        );
        let mut entries: Vec<String> = listed.lines().map(str::to_string).collect();
        entries.sort();
        entries
    }

    /// The tick's variables: `$RUNNER_TEMP`, as in a job.
    fn env(&self) -> Vec<(&'static str, String)> {
        vec![("RUNNER_TEMP", self.temp.display().to_string())]
    }

    fn tick(&self, at: u32) -> common::Out {
        let env = self.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        self.jail.run(&minute(at), &["tick"], &env)
    }

    /// Whether the attack task's change is on `main`.
    fn landed(&self) -> bool {
        self.jail.g.file_on_main("attacked.txt").is_some()
    }

    /// The agent: everything it can find of git's configuration and what it includes, the temp
    /// folder and the home into the loot; a token found there into its change, as decimal
    /// codes, reversed and in base64, with every line that mentions one.
    fn hunting_agent(&self, before: &str) {
        let script = format!(
            r#"#!/bin/sh
LOOT={loot}
REPO={repo}
TEMP={temp}
HOMEDIR={home}
{before}
{{
  echo "== config"; cat "$REPO/.git/config"
  echo "== git"; git -C "$REPO" config --list --show-origin --includes
  echo "== includes"
  for f in $(sed -n 's/^[[:space:]]*path = //p' "$REPO/.git/config"); do echo "-- $f"; cat "$f"; done
  echo "== temp"
  for f in "$TEMP"/* "$TEMP"/.[!.]*; do [ -f "$f" ] && {{ echo "-- $f"; cat "$f"; }}; done
  echo "== home"; grep -ra -e extraheader -e 'basic ' "$HOMEDIR"
}} >> "$LOOT" 2>&1
found=$(grep -ao 'basic [A-Za-z0-9+/=]*' "$LOOT" | head -n 1 | cut -d' ' -f2)
token=$(printf '%s' "$found" | base64 -d 2>/dev/null | cut -d: -f2)
printf '%s' "$token" | od -An -tu1 > decimal.txt
printf '%s' "$token" | rev > reversed.txt
printf '%s' "$token" | base64 > encoded.txt
grep -a -e extraheader -e basic -e access-token "$LOOT" | od -An -tu1 > lines.txt
echo done > attacked.txt
"#,
            loot = self.jail.loot.display(),
            repo = self.jail.g.path().display(),
            temp = self.temp.display(),
            home = self.jail.home.path().display(),
        );
        self.jail.g.agent(&script);
    }

    /// Nothing derived from the token in the loot, on any branch, in the state or the output.
    fn assert_nothing_derived(&self, outs: &[common::Out]) {
        let forms = token_forms();
        let loot = self.jail.loot_text();
        let branches = git(self.jail.g.path(), &["log", "--all", "-p", "--format=%B"]);
        let state =
            std::fs::read(self.jail.g.path().join(".opentiger/state.sqlite")).unwrap_or_default();
        let state = String::from_utf8_lossy(&state);
        let mut places: Vec<(&str, &str)> =
            vec![("loot", &loot), ("branches", &branches), ("state", &state)];
        for out in outs {
            places.push(("stdout", &out.stdout));
            places.push(("stderr", &out.stderr));
        }
        for (name, text) in places {
            for form in &forms {
                assert!(
                    !text.contains(form.as_str()),
                    "{name} holds {form}:\n{text}"
                );
            }
            assert!(
                !holds_decimal_codes(text, CANARY),
                "{name} holds the token's codes:\n{text}"
            );
        }
    }
}

/// The token as an agent could write it: plain, reversed, in base64, and the checkout's header.
fn token_forms() -> Vec<String> {
    vec![
        CANARY.to_string(),
        CANARY.chars().rev().collect(),
        base64_of(CANARY),
        base64_of(&format!("x-access-token:{CANARY}")),
    ]
}

/// Whether the numbers in `text`, in order, hold `secret`'s bytes one after the other.
fn holds_decimal_codes(text: &str, secret: &str) -> bool {
    let numbers: Vec<u32> = text
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|n| n.parse().ok())
        .collect();
    let want: Vec<u32> = secret.bytes().map(u32::from).collect();
    numbers.windows(want.len()).any(|w| w == want.as_slice())
}

/// Ticks from minute `start` until the attack's change lands (at most four ticks); their
/// outputs.
fn ticks_until_landed(c: &Checkout, start: u32) -> Vec<common::Out> {
    let mut outs = Vec::new();
    for i in 0..4 {
        let out = c.tick(start + i * 10);
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        outs.push(out);
        if c.landed() {
            break;
        }
    }
    outs
}

/// The hunting agent on a task, ticked until its change landed: the repository's entries before,
/// then nothing derived from the token anywhere, and the included settings file found.
fn hunted(c: &Checkout) -> Vec<String> {
    let before = hunt(c);
    let loot = c.jail.loot_text();
    assert!(
        loot.contains(MARKER),
        "the agent followed the includes:\n{loot}"
    );
    before
}

/// The hunting agent on a task, ticked until its change landed: the repository's entries before,
/// then nothing derived from the token anywhere.
fn hunt(c: &Checkout) -> Vec<String> {
    let before = c.entries();
    c.hunting_agent("");
    c.jail
        .add_task(&["--title", "ATTACK", "--goal", "anything"]);
    let outs = ticks_until_landed(c, 0);
    assert!(c.landed(), "the change lands, without the token");
    c.assert_nothing_derived(&outs);
    let loot = c.jail.loot_text();
    assert!(loot.contains("== home"), "{loot}");
    before
}

#[test]
fn checkout_v6_s_token_never_reaches_a_branch_and_is_put_back_after_the_tick() {
    let c = Checkout::new(true, false);
    let before = hunted(&c);
    // Put back as it was: the file byte for byte, each include line.
    assert_eq!(std::fs::read_to_string(&c.creds).unwrap(), c.body);
    assert_eq!(c.entries(), before);
}

/// In a view of its own (the default where the kernel allows one) the agent finds neither the
/// runner's repository nor its temp folder: no `.git/config` to follow, nothing derived from the
/// token anywhere, and the credentials are put back all the same.
#[test]
fn in_its_view_the_agent_finds_no_git_config_to_follow() {
    let c = Checkout::new(true, true);
    if let Err(why) = opentiger::sandbox::view::available() {
        eprintln!("skipped: no view of its own here: {why}");
        return;
    }
    let before = hunt(&c);
    let loot = c.jail.loot_text();
    assert!(!loot.contains(MARKER), "{loot}");
    assert!(
        loot.contains(".git/config: No such file or directory"),
        "{loot}"
    );
    assert_eq!(std::fs::read_to_string(&c.creds).unwrap(), c.body);
    assert_eq!(c.entries(), before);
}

/// The twin: without the checkout's credentials the same agent's change lands as well, and it
/// finds the included settings file the same way.
#[test]
fn without_the_checkout_s_credentials_the_task_lands_as_before() {
    let c = Checkout::new(false, false);
    let text = c.config();
    hunted(&c);
    assert_eq!(c.config(), text, "nothing in .git/config was touched");
}

/// A tick stopped while its agent runs: with SIGTERM (how a cancelled job's step ends) the
/// credentials are put back; with SIGKILL they cannot be, and are gone whole (no include line
/// left naming a missing file), never readable by what the agent left; the next tick works.
#[test]
fn a_stopped_tick_puts_the_credentials_back_and_a_killed_one_leaves_them_gone_whole() {
    let c = Checkout::new(true, false);
    let before = c.entries();
    // The first two runs wait to be stopped; the third hunts.
    c.hunting_agent(&format!(
        "n=$(grep -c '^started' \"$LOOT\" 2>/dev/null)\necho started >> \"$LOOT\"\nif [ \"${{n:-0}}\" -lt 2 ]; then\n  {}\n  sleep 60\nfi",
        "[ -e \"$TEMP/git-credentials-3f1c2b4a-8d7e-4f60-9a1b-2c3d4e5f6a7b.config\" ] && echo \"readable while running\" >> \"$LOOT\""
    ));
    c.jail
        .add_task(&["--title", "ATTACK", "--goal", "anything"]);
    let host = c.creds.display().to_string();
    for (signal, started) in [(libc::SIGTERM, 1), (libc::SIGKILL, 2)] {
        let env = c.env();
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let mut shell = c.jail.spawn(&minute(started * 10), &["tick"], &env);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while c.jail.loot_text().matches("started").count() < started as usize {
            assert!(
                std::time::Instant::now() < deadline,
                "the agent never started"
            );
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        assert!(!c.creds.exists(), "taken away while the agent runs");
        assert!(!c.config().contains(&host), "{}", c.config());
        let tick = opentiger::reaper::children_of(shell.id());
        assert_eq!(tick.len(), 1, "{tick:?}");
        // SAFETY: kill has no memory effects; the pid is our grandchild, still unreaped.
        unsafe { libc::kill(tick[0] as i32, signal) };
        let status = shell.wait().unwrap();
        if signal == libc::SIGTERM {
            assert_eq!(status.code(), Some(143));
            assert_eq!(std::fs::read_to_string(&c.creds).unwrap(), c.body);
            assert_eq!(c.config().matches(host.as_str()).count(), 2);
        } else {
            assert!(!c.creds.exists(), "a killed tick cannot put the file back");
            assert!(!c.config().contains(&host), "nor leaves a line naming it");
        }
    }
    assert!(!c.jail.loot_text().contains("readable while running"));
    let outs = ticks_until_landed(&c, 30);
    assert!(c.landed());
    c.assert_nothing_derived(&outs);
    // What the killed tick could not put back stays gone; everything else is as it was.
    let kept: Vec<String> = before.into_iter().filter(|e| !e.contains(&host)).collect();
    assert_eq!(c.entries(), kept);
}

//! The agent's own git folder: a workspace `.git` file or `commondir` redirected to a git folder
//! the agent built (filters, attributes, borrowed objects) runs nothing of it in the runner, for a
//! worker and for a judge.

use super::*;

/// Shell lines that build a git folder of the agent's own at `$EVIL` (inside the runner's
/// `.git` when the sandbox lets it, else in its run folder): the refs and `HEAD` of its
/// workspace repository, objects borrowed through `alternates`, and a `filter.x.clean` /
/// `smudge` / `textconv` program (`$FILTER`) that every file gets by `info/attributes`.
const EVIL_GIT_DIR: &str = r#"OWN="$(git rev-parse --absolute-git-dir)"
EVIL="$RUNNER_GIT/evil"
mkdir -p "$EVIL" 2>/dev/null || EVIL="$(dirname "$PWD")/evil"
mkdir -p "$EVIL/objects/info" "$EVIL/refs/heads" "$EVIL/info"
cp "$OWN/HEAD" "$EVIL/HEAD"
cp -r "$OWN/refs/." "$EVIL/refs/"
git for-each-ref --format='%(objectname) %(refname)' > "$EVIL/packed-refs"
echo "$OWN/objects" > "$EVIL/objects/info/alternates"
cat "$OWN/objects/info/alternates" >> "$EVIL/objects/info/alternates"
printf '[core]\n\trepositoryformatversion = 0\n\tbare = false\n[filter "x"]\n\tclean = %s\n\tsmudge = %s\n[diff "x"]\n\ttextconv = %s\n' "$FILTER" "$FILTER" "$FILTER" > "$EVIL/config"
echo '* filter=x diff=x' > "$EVIL/info/attributes"
echo '* filter=x diff=x' > .gitattributes"#;

/// The filter an agent plants: it says who ran it (`$WHO`, set by the agent when it runs git
/// itself), looks for the token everywhere, and passes the bytes through.
fn evil_filter(a: &Attack) -> String {
    leftover(
        a,
        "filter.sh",
        "steal \"filter by ${WHO:-someone else}\"\ncat",
    )
}

/// The agent's own git, after the redirect: the filter works (the twin of the checks below).
const AGENT_RUNS_IT: &str = "WHO=agent git add -A >/dev/null 2>&1";

/// The attack's checks for a redirect: the filter ran when the agent's own git ran it (so the
/// redirect works), never for anyone else (the runner), the token nowhere, and a plain task
/// beside it landed.
fn redirect_failed(a: &Attack) {
    let loot = a.loot();
    assert!(
        loot.contains("ran: filter by agent"),
        "the twin: the filter works:\n{loot}"
    );
    assert!(
        !loot.contains("ran: filter by someone else"),
        "the runner ran the agent's filter:\n{loot}"
    );
    assert!(!loot.contains(CANARY), "{loot}");
    assert!(
        a.landed("plain.txt"),
        "a plain task beside the attack lands"
    );
    assert!(
        !a.jail.g.path().join(".git/evil").exists(),
        "the runner's .git is out of reach"
    );
}

/// Issue 35, redirect 1: the workspace's `.git` becomes a `gitdir:` file naming a git folder the
/// agent built, with a filter every file gets. The runner never runs git with it.
#[test]
fn a_workspace_git_file_redirected_to_the_agent_s_git_folder_runs_nothing_of_its() {
    let a = Attack::plain();
    let filter = evil_filter(&a);
    a.agent(&format!(
        "RUNNER_GIT={runner}\nFILTER={filter}\n{EVIL_GIT_DIR}\nrm -rf \"$OWN\" 2>/dev/null\necho \"gitdir: $EVIL\" > .git\n{AGENT_RUNS_IT}",
        runner = a.jail.g.path().join(".git").display()
    ));
    let (attack, _) = a.tasks(&[]);
    a.ticks(&[]);
    redirect_failed(&a);
    let run = &a.runs(&attack)[0];
    assert_eq!(run["status"], "success", "an ordinary change: {run}");
}

/// Redirect 2: the workspace repository's `commondir` names the agent's git folder.
#[test]
fn a_commondir_pointing_at_the_agent_s_git_folder_runs_nothing_of_its() {
    let a = Attack::plain();
    let filter = evil_filter(&a);
    a.agent(&format!(
        "RUNNER_GIT={runner}\nFILTER={filter}\n{EVIL_GIT_DIR}\necho \"$EVIL\" > \"$OWN/commondir\"\n{AGENT_RUNS_IT}",
        runner = a.jail.g.path().join(".git").display()
    ));
    let (attack, _) = a.tasks(&[]);
    a.ticks(&[]);
    redirect_failed(&a);
    let run = &a.runs(&attack)[0];
    assert_eq!(run["status"], "success", "{run}");
}

/// Redirect 3: the judge tries it in its review workspace, which it may read but not write
/// (issue 47): every write there is refused, nothing of it runs, the runner reads nothing back
/// from it, and the reviewed change merges as it was pushed.
#[test]
fn a_judge_redirecting_its_workspace_git_runs_nothing_and_changes_nothing() {
    let a = Attack::plain();
    let filter = evil_filter(&a);
    a.agent("true");
    a.jail.g.judge(&format!(
        "#!/bin/sh\nLOOT={loot}\n{STEAL}cd \"$OPENTIGER_WORKSPACE\"\nRUNNER_GIT={runner}\nFILTER={filter}\n{EVIL_GIT_DIR}\nrm -rf \"$OWN\" 2>/dev/null\necho \"gitdir: $EVIL\" > .git\necho judged > judged.txt\n{AGENT_RUNS_IT}\nif [ -e judged.txt ]; then echo 'WROTE: the judge' >> \"$LOOT\"; else echo 'refused: the judge' >> \"$LOOT\"; fi\necho '{{\"verdict\": \"approve\", \"summary\": \"fine\"}}' > \"$OPENTIGER_RESULT_FILE\"\n",
        loot = a.jail.loot.display(),
        runner = a.jail.g.path().join(".git").display()
    ));
    a.tasks(&[]);
    a.ticks(&[]);
    let loot = a.loot();
    assert!(
        loot.contains("refused: the judge"),
        "the twin: the judge ran:\n{loot}"
    );
    assert!(
        !loot.contains("WROTE"),
        "the judge wrote its workspace:\n{loot}"
    );
    assert!(!loot.contains("ran: filter"), "the filter ran:\n{loot}");
    assert!(!loot.contains(CANARY), "{loot}");
    assert!(!a.jail.g.path().join(".git/evil").exists());
    assert!(a.landed("attacked.txt") && a.landed("plain.txt"));
    assert!(
        !a.landed("judged.txt"),
        "nothing the judge wrote is read back"
    );
    assert!(!a.landed(".gitattributes"));
}

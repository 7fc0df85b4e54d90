//! Issue 35: a task's checks (`--command`) run after the agent, and the runner must take
//! nothing of the workspace's `.git` to decide where their process group is recorded: not
//! its `commondir`, not a `gitdir:` file. A check a killed tick leaves running (in a session
//! of its own) is ended by the next tick.

use super::common::minute;
use super::{commit_on_main, kill_the_tick_once_left, leftover, without_view, Attack};

/// A redirect of the workspace's git folder (`redirect`: shell lines, `$OWN` the agent's own
/// git folder, `$ELSEWHERE` a folder the runner's user may write and the agent may not) on a
/// task with a check: the check ran (the twin), nothing was made there, and both tasks landed.
fn a_redirect_before_a_check_makes_nothing(redirect: &str) {
    let a = Attack::plain();
    let elsewhere = a.jail.g.tools_path().join("elsewhere");
    commit_on_main(
        &a,
        &[(
            "check.sh",
            &format!("echo 'ran: check' >> {}\n", a.jail.loot.display()),
        )],
    );
    a.agent(&format!(
        "OWN=\"$(git rev-parse --absolute-git-dir)\"\nELSEWHERE={}\n{redirect}",
        elsewhere.display()
    ));
    let (attack, _) = a.tasks(&["sh check.sh"]);
    a.ticks(&[]);
    assert!(a.loot().contains("ran: check"), "the twin: {}", a.loot());
    assert!(
        !elsewhere.exists(),
        "the runner wrote where the agent's git folder said: {}",
        elsewhere.display()
    );
    let run = &a.runs(&attack)[0];
    assert_eq!(run["status"], "success", "{run}");
    assert!(a.landed("attacked.txt") && a.landed("plain.txt"));
}

#[test]
fn a_commondir_redirect_on_a_task_with_a_check_makes_nothing_where_it_points() {
    a_redirect_before_a_check_makes_nothing("echo \"$ELSEWHERE\" > \"$OWN/commondir\"");
}

#[test]
fn a_gitdir_redirect_on_a_task_with_a_check_makes_nothing_where_it_points() {
    a_redirect_before_a_check_makes_nothing(
        "EVIL=\"$(dirname \"$PWD\")/evil\"\nmkdir -p \"$EVIL\"\ncp \"$OWN/HEAD\" \"$EVIL/HEAD\"\necho \"$ELSEWHERE\" > \"$EVIL/commondir\"\nrm -rf \"$OWN\"\necho \"gitdir: $EVIL\" > .git",
    );
}

/// A check whose first run leaves a process in a session of its own and waits to be killed
/// with its tick: without a view (`sandbox.view: none`) the next tick ends it (its group was
/// recorded under the runner's own repository), and the task lands.
#[test]
fn after_a_tick_killed_during_a_check_the_next_one_ends_what_the_check_left() {
    check_leftover_of_a_killed_tick(false);
}

/// In its view, the check's leftover ends with the killed tick (issue 47).
#[test]
fn a_tick_killed_during_a_check_in_a_view_takes_what_it_left_with_it() {
    check_leftover_of_a_killed_tick(true);
}

fn check_leftover_of_a_killed_tick(view: bool) {
    let a = Attack::new(without_view(view));
    let script = leftover(
        &a,
        "check-lingerer.sh",
        "while :; do steal check-lingerer; sleep 0.2; done",
    );
    commit_on_main(
        &a,
        &[(
            "check.sh",
            &format!(
                "if mkdir {loot}.first 2>/dev/null; then setsid {script} </dev/null >/dev/null 2>&1 & sleep 60; fi\n",
                loot = a.jail.loot.display()
            ),
        )],
    );
    a.agent("true");
    let attack = a.jail.add_task(&[
        "--title",
        "ATTACK",
        "--goal",
        "anything",
        "--command",
        "sh check.sh",
    ]);
    let shell = a.jail.spawn(&minute(0), &["tick"], &[]);
    kill_the_tick_once_left(&a, shell, &script, !view);
    // `tick` checks that nothing of the case is alive after it.
    for i in 1..6 {
        a.tick(i * 10, &[]);
    }
    assert!(a.loot().contains("ran: check-lingerer"), "{}", a.loot());
    assert!(a.landed("attacked.txt"), "{:?}", a.runs(&attack));
}

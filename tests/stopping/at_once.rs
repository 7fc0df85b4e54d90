//! A tick ended at once rather than stopped gently: by a second signal while an agent runs,
//! or because its save outlasted the stop's bound (`process::interrupt`'s 20 s) after one.
//! Nothing it started runs on, and the next tick accounts for its runs with nothing counted.
//! Not here: a save that one signal lets finish, a kill, a killed claim (`super`).

use super::*;

/// SIGINT twice while the agent runs, an agent that ignores the gentle stop: the tick exits 130
/// at once and ends the agent and its child with it; the next tick reads the interrupt's note,
/// queues the run again with no lost run counted, and the task lands.
#[test]
fn a_second_signal_while_the_agent_runs_ends_it_and_costs_nothing() {
    // Unconfined (its processes in the runner's process namespace) and in the default sandbox.
    for g in [GitRepo::with(Setup::default()), repo("", "")] {
        second_signal_while_the_agent_runs(&g);
    }
}

fn second_signal_while_the_agent_runs(g: &GitRepo) {
    let tools = g.tools_path().to_path_buf();
    let t = tools.display();
    // The agent and its child name the tools folder in their command lines: seen from here
    // whatever process namespace the agent runs in.
    g.agent(&format!(
        "#!/bin/sh\necho \"start $OPENTIGER_TASK_ID\" >> {t}/runs\nif [ ! -f {t}/first ]; then\n  touch {t}/first; trap '' TERM INT\n  sh -c 'sleep 120; true' {t}/child & touch {t}/hung; wait\nfi\necho done > \"out-$OPENTIGER_TASK_ID.txt\"\necho \"end $OPENTIGER_TASK_ID\" >> {t}/runs\n"
    ));
    let now = minute(0);
    let id = add_task(g, &now, "Stubborn");
    let mut tick = start_tick(g, &now);
    wait_for(&tools.join("hung"), &mut tick);
    // What the check after the tick looks for is there while it runs.
    let seen = running_in(&tools).join("\n");
    assert!(
        seen.contains("agent.sh") && seen.contains("/child"),
        "{seen}"
    );
    signal_group(&tick, libc::SIGINT);
    std::thread::sleep(Duration::from_millis(300));
    signal_group(&tick, libc::SIGINT);
    let out = tick_output(&mut tick);
    assert_eq!(out.code, 130, "{}\n{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("interrupted again"), "{}", out.stderr);
    nothing_left(&[g.path(), &tools]);
    let next = g.tick(&minute(5));
    assert_eq!(next.code, 0, "{}", next.stderr);
    assert!(
        next.stdout
            .contains("interrupted by SIGINT (its tick exited at once")
            && !next.stdout.contains("requeue_lost"),
        "{}",
        next.stdout
    );
    g.run_until_quiet(10, 5, 30);
    assert_eq!(g.task_json(&id)["status"], "done");
    assert_eq!(lost_runs(g, &id), 0);
    assert_eq!(
        agent_runs(&tools, &id),
        (2, 1),
        "stopped once, then run once"
    );
    nothing_left(&[g.path(), &tools]);
}

/// One SIGTERM while a save hangs (its remote holds the push past the stop's 20 s): the tick
/// ends it and exits 143 saying why; nothing it started runs on; the finished run whose record
/// that save held is recorded by the next tick from what the tick kept, never run again.
#[test]
fn a_save_that_outlasts_the_stop_is_ended_with_the_tick() {
    let g = saving_repo(true);
    let tools = g.tools_path().to_path_buf();
    let now = minute(0);
    let id = add_task(&g, &now, "Held");
    let mut tick = start_tick(&g, &now);
    wait_for(&tools.join("saving"), &mut tick);
    signal_group(&tick, libc::SIGTERM);
    // Never released: the push would hang 30 s.
    let out = tick_output(&mut tick);
    assert_eq!(out.code, 143, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stderr
            .contains("still not stopped 20 s after the interrupt"),
        "{}",
        out.stderr
    );
    let _ = std::fs::remove_file(tools.join("saving"));
    nothing_left(&[g.path(), &tools]);
    let next = g.tick(&minute(5));
    assert!(
        next.stdout.contains("left unsaved when it ended") && !next.stdout.contains("requeue_lost"),
        "{}",
        next.stdout
    );
    g.run_until_quiet(10, 5, 30);
    assert_eq!(g.task_json(&id)["status"], "done");
    assert_eq!(agent_runs(&tools, &id), (1, 1), "run again");
    assert_eq!(lost_runs(&g, &id), 0);
}

//! Issue 35, every role: the planner, an AutoFix, a conflict fix and a run worked by
//! `work --output` each try to write the runner's repository by its path — a new file in its
//! work tree, a tracked file, its `.git` config, a hook, attributes, a ref, a file in `.git`,
//! and `git branch` run there — and nothing changes there. (The worker and the judge: the
//! redirect tests beside these; research: `tests/research.rs`.)

use std::path::Path;

use super::common::{self, git, minute};
use super::Attack;

/// The roles tried here.
#[derive(Clone, Copy, Debug)]
enum Role {
    Planner,
    AutoFix,
    ConflictFix,
    WorkOutput,
}

/// Shell lines that try every write into the runner's repository `runner`, each one that
/// works said in the loot as `WROTE`, then `tried: <role> <task>` (the twin: it ran).
fn trespass(runner: &Path) -> String {
    format!(
        r#"R='{runner}'
WHO="$OPENTIGER_ROLE $OPENTIGER_TASK_ID"
wrote() {{ echo "WROTE: $1 by $WHO" >> "$LOOT"; }}
(echo x > "$R/escape.txt") 2>/dev/null && wrote worktree
(echo x >> "$R/README.md") 2>/dev/null && wrote tracked
(printf '[core]\n\thooksPath = /tmp\n' >> "$R/.git/config") 2>/dev/null && wrote config
(echo x > "$R/.git/hooks/post-commit") 2>/dev/null && wrote hook
(mkdir -p "$R/.git/info" && echo '* filter=x' >> "$R/.git/info/attributes") 2>/dev/null && wrote attributes
(git -C "$R" rev-parse HEAD > "$R/.git/refs/heads/escape") 2>/dev/null && wrote ref
(echo x > "$R/.git/escape") 2>/dev/null && wrote git-file
git -C "$R" branch escape-by-git >/dev/null 2>&1 && wrote git-branch
echo "tried: $WHO" >> "$LOOT"
"#,
        runner = runner.display()
    )
}

/// What of the runner's repository the trespass aims at, to compare before and after.
fn aimed_at(runner: &Path) -> Vec<(String, Option<String>)> {
    [
        "escape.txt",
        "README.md",
        ".git/config",
        ".git/hooks/post-commit",
        ".git/info/attributes",
        ".git/refs/heads/escape",
        ".git/refs/heads/escape-by-git",
        ".git/escape",
    ]
    .iter()
    .map(|p| (p.to_string(), std::fs::read_to_string(runner.join(p)).ok()))
    .collect()
}

/// Task ids of one kind.
fn of_kind(a: &Attack, kind: &str) -> Vec<String> {
    let all = a
        .jail
        .run(common::NOW, &["task", "list", "--all", "--json"], &[])
        .ok()
        .json();
    all.as_array()
        .into_iter()
        .flatten()
        .filter(|t| t["kind"] == kind)
        .filter_map(|t| t["id"].as_str().map(str::to_string))
        .collect()
}

/// `role`'s agent tries to write the runner's repository: every attempt ran (`tried` for the
/// role's run), none wrote anything, and what it aimed at is as it was.
fn no_role_writes_the_runner_s_repository(role: Role) {
    let a = Attack::plain();
    let runner = a.jail.g.path().to_path_buf();
    let before = aimed_at(&runner);
    let stealer = a.stealer();
    let trespass = trespass(&runner);
    let reviews = a.jail.loot.with_file_name("reviews");
    let tried_by = match role {
        Role::Planner => {
            super::commit_on_main(
                &a,
                &[("docs/requirement.md", "# Greeter\n\n## Goal\nGreet.\n")],
            );
            // Issue 47: the planner reads its workspace; it may not write it either.
            let own = "(echo x > \"$OPENTIGER_WORKSPACE/own.txt\") 2>/dev/null && wrote own-workspace || echo \"refused: own workspace by $WHO\" >> \"$LOOT\"\n";
            a.jail.g.planner(&format!(
                "#!/bin/sh\n{stealer}{trespass}{own}echo '{{\"tasks\": []}}' > \"$OPENTIGER_RESULT_FILE\"\n"
            ));
            "planner".to_string()
        }
        Role::AutoFix => {
            a.jail.g.agent(&format!(
                "#!/bin/sh\n{stealer}{trespass}echo \"$OPENTIGER_TASK_ID\" >> notes.txt\n"
            ));
            a.jail.g.judge(&format!(
                "#!/bin/sh\nn=$(cat {c} 2>/dev/null || echo 0); n=$((n+1)); echo $n > {c}\nif [ $n -le 1 ]; then echo '{{\"verdict\": \"request_changes\", \"summary\": \"more\", \"findings\": [\"more\"]}}' > \"$OPENTIGER_RESULT_FILE\"; else echo '{{\"verdict\": \"approve\", \"summary\": \"good\"}}' > \"$OPENTIGER_RESULT_FILE\"; fi\n",
                c = reviews.display()
            ));
            a.jail
                .add_task(&["--title", "Notes", "--goal", "notes.txt"]);
            String::new()
        }
        Role::ConflictFix => {
            a.jail.g.agent(&format!(
                "#!/bin/sh\n{stealer}{trespass}echo \"$OPENTIGER_TASK_ID\" > shared.txt\n"
            ));
            for (id, priority) in [("a", "9"), ("b", "1")] {
                a.jail.add_task(&[
                    "--title",
                    id,
                    "--goal",
                    "shared.txt",
                    "--id",
                    id,
                    "--priority",
                    priority,
                ]);
            }
            // The first tick runs a; the second runs b from the same base, then merges a.
            a.tick(0, &[]);
            a.tick(1, &[]);
            String::new()
        }
        Role::WorkOutput => {
            a.jail.g.agent(&format!(
                "#!/bin/sh\n{stealer}{trespass}echo work > work.txt\n"
            ));
            let id = a.jail.add_task(&["--title", "Work", "--goal", "work.txt"]);
            let claimed = a
                .jail
                .run(&minute(0), &["tick", "--fan-out", "1", "--json"], &[])
                .ok()
                .json();
            let run = claimed["matrix"]["include"][0]["run"]
                .as_str()
                .unwrap_or_else(|| panic!("no run claimed: {claimed}"))
                .to_string();
            let out_dir = a.jail.tmp.path().join("out");
            let out_arg = out_dir.display().to_string();
            let said = a.jail.run(
                &minute(1),
                &["work", "--run", &run, "--output", &out_arg],
                &[],
            );
            assert!(
                said.stdout.contains("succeeded"),
                "{}\n{}",
                said.stdout,
                said.stderr
            );
            assert!(out_dir.join("change.bundle").exists());
            format!("worker {id}")
        }
    };
    if !matches!(role, Role::WorkOutput) {
        for i in 2..10 {
            a.tick(i * 10, &[]);
        }
    }
    let tried_by = match role {
        Role::AutoFix => format!(
            "worker {}",
            of_kind(&a, "autofix").first().expect("an AutoFix ran")
        ),
        Role::ConflictFix => format!(
            "worker {}",
            of_kind(&a, "autofix_conflict")
                .first()
                .expect("a conflict fix ran")
        ),
        Role::Planner | Role::WorkOutput => tried_by,
    };
    let loot = a.loot();
    assert!(
        loot.contains(&format!("tried: {tried_by}")),
        "{role:?}, the twin:\n{loot}"
    );
    assert!(
        !loot.contains("WROTE"),
        "{role:?} wrote the runner's repository:\n{loot}"
    );
    if matches!(role, Role::Planner) {
        assert!(loot.contains("refused: own workspace by planner"), "{loot}");
    }
    assert_eq!(aimed_at(&runner), before, "{role:?}");
    let heads = git(
        &runner,
        &["for-each-ref", "--format=%(refname)", "refs/heads"],
    );
    assert!(!heads.contains("escape"), "{heads}");
}

#[test]
fn the_planner_cannot_write_the_runner_s_repository() {
    no_role_writes_the_runner_s_repository(Role::Planner);
}

#[test]
fn an_autofix_cannot_write_the_runner_s_repository() {
    no_role_writes_the_runner_s_repository(Role::AutoFix);
}

#[test]
fn a_conflict_fix_cannot_write_the_runner_s_repository() {
    no_role_writes_the_runner_s_repository(Role::ConflictFix);
}

#[test]
fn a_run_worked_by_work_output_cannot_write_the_runner_s_repository() {
    no_role_writes_the_runner_s_repository(Role::WorkOutput);
}

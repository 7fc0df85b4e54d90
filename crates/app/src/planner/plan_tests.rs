//! Table tests of plan parsing, validation, task building and the fallback plan.

use serde_json::json;

use super::*;
use crate::model::{TaskKind, TaskStatus};
use crate::planner::requirement::parse_requirement;

const SIG: &str = "sig-1";
const NOW: Timestamp = Timestamp(1_700_000_000_000);

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn planned(key: &str) -> PlannedTask {
    PlannedTask {
        key: key.to_string(),
        title: format!("Do {key}"),
        goal: format!("{key} is done"),
        role: "worker".to_string(),
        allowed_paths: Vec::new(),
        commands: Vec::new(),
        depends_on: Vec::new(),
        priority: None,
        risk: None,
        touches: Vec::new(),
        notes: String::new(),
        target_area: None,
    }
}

fn ctx<'a>(existing: &'a [Task], default_allowed: &'a [String]) -> PlanContext<'a> {
    PlanContext {
        existing,
        max_tasks: 5,
        signature: SIG,
        now: NOW,
        default_allowed,
    }
}

fn id(key: &str) -> TaskId {
    task_id(SIG, key)
}

#[test]
fn parse_plan_reads_the_design_example_with_defaults() {
    let value = json!({"tasks": [
        {"key": "a", "title": "T", "goal": "G", "role": "worker", "allowed_paths": ["src/**"],
         "commands": ["cargo test"], "depends_on": ["b"], "priority": 50, "risk": "low",
         "touches": ["src/x.rs"]},
        {"key": "b", "title": "T2", "goal": "G2"}
    ]});
    let tasks = parse_plan(&value).expect("the DESIGN §6 example parses");
    assert_eq!(tasks.len(), 2);
    assert_eq!(tasks[0].depends_on, strings(&["b"]));
    assert_eq!(tasks[0].priority, Some(50));
    let mut b = planned("b");
    b.title = "T2".into();
    b.goal = "G2".into();
    assert_eq!(tasks[1], b);
}

#[test]
fn parse_plan_reports_every_bad_task() {
    let cases: &[(&str, serde_json::Value, &[&str])] = &[
        (
            "a typo is not dropped silently",
            json!({"tasks": [{"key": "a", "title": "T", "goal": "G", "depends": ["b"]}]}),
            &["`a` (tasks[0]): unknown field `depends`, expected one of"],
        ),
        (
            "missing key, wrong type, both reported",
            json!({"tasks": [
                {"title": "T", "goal": "G"},
                {"key": "p", "title": "T", "goal": "G", "priority": "high"}
            ]}),
            &[
                "tasks[0]: missing field `key`",
                "`p` (tasks[1]): field `priority`: invalid type: string \"high\"",
            ],
        ),
        (
            "not a task list",
            json!({"task": []}),
            &["the planner result must be {\"tasks\": "],
        ),
        (
            "tasks is not an array",
            json!({"tasks": {"a": 1}}),
            &["the planner result must be {\"tasks\": "],
        ),
        (
            "not an object",
            json!([[{"key": "a", "title": "T", "goal": "G"}]]),
            &["the planner result must be {\"tasks\": [{\"key\": \"...\", \"title\": \"...\", \"goal\": \"...\", ...}]}; found an array"],
        ),
        (
            "tasks by position",
            json!({"tasks": [["a", "T", "G"], 3]}),
            &[
                "tasks[0]: a task must be an object with `key`, `title` and `goal`; found an array",
                "tasks[1]: a task must be an object with `key`, `title` and `goal`; found a number",
            ],
        ),
    ];
    for (name, value, expected) in cases {
        let errors = parse_plan(value).expect_err(name);
        assert_eq!(errors.len(), expected.len(), "{name}: {errors:#?}");
        for (error, prefix) in errors.iter().zip(expected.iter()) {
            assert!(error.starts_with(prefix), "{name}: {error}");
        }
    }
}

#[test]
fn a_valid_plan_becomes_tasks_with_stable_ids_and_edges() {
    let existing = vec![Task::new(
        TaskId::from("old123"),
        "Old",
        "old",
        Timestamp(0),
    )];
    let default_allowed = strings(&["src/**"]);
    let mut db = planned("db");
    db.touches = strings(&["migrations/001.sql"]);
    db.commands = strings(&["cargo test", "cargo test"]);
    db.risk = Some("High".into());
    let mut api = planned("api");
    api.depends_on = strings(&["db", "old123", "db"]);
    api.allowed_paths = strings(&["api/**"]);
    api.priority = Some(7);
    let mut docs = planned("docs");
    docs.role = "docser".into();
    docs.allowed_paths = strings(&["docs/guide/**"]);
    docs.notes = "see the API".into();
    let plan = validate_plan(&[db, api, docs], &ctx(&existing, &default_allowed))
        .expect("the plan is valid");
    let summary: Vec<_> = plan
        .tasks
        .iter()
        .map(|t| {
            (
                t.id.clone(),
                t.role,
                t.lane,
                t.risk,
                t.priority,
                t.allowed_paths.clone(),
                t.target_area.clone(),
                t.dependencies.clone(),
            )
        })
        .collect();
    let area = |a: &str| Some(a.to_string());
    assert_eq!(
        summary,
        vec![
            (
                id("db"),
                Role::Worker,
                Lane::Feature,
                Risk::High,
                30,
                strings(&["src/**"]),
                area("path:migrations"),
                vec![],
            ),
            (
                id("api"),
                Role::Worker,
                Lane::Feature,
                Risk::Low,
                7,
                strings(&["api/**"]),
                area("path:api"),
                vec![id("db"), TaskId::from("old123")],
            ),
            (
                id("docs"),
                Role::Docser,
                Lane::Docser,
                Risk::Low,
                10,
                strings(&["docs/guide/**"]),
                area("path:docs/guide"),
                vec![],
            ),
        ]
    );
    let db = &plan.tasks[0];
    assert_eq!(db.commands, strings(&["cargo test"]));
    assert_eq!(db.touches, strings(&["migrations/001.sql"]));
    assert_eq!(
        (db.kind, db.status, db.created_at, db.updated_at),
        (TaskKind::Feature, TaskStatus::Queued, NOW, NOW)
    );
    assert_eq!(db.title, "Do db");
    assert_eq!(plan.tasks[2].notes, "see the API");
    // Replaying the plan yields the same ids; another signature other ids.
    assert_eq!(id("db"), TaskId(short_hash(&["plan", SIG, "db"])));
    assert_ne!(id("db"), task_id("sig-2", "db"));
}

#[test]
fn allowed_paths_default_to_the_requirement_unless_it_is_everything() {
    let cases: &[(&[&str], &[&str], &[&str])] = &[
        (&[], &["src/**"], &["src/**"]),
        (&[], &["**"], &[]),
        (&["**"], &["src/**"], &["**"]),
        (&["lib/**"], &["**"], &["lib/**"]),
    ];
    for (own, default, expected) in cases {
        let mut task = planned("a");
        task.allowed_paths = strings(own);
        let default = strings(default);
        let plan = validate_plan(&[task], &ctx(&[], &default)).expect("valid");
        assert_eq!(
            plan.tasks[0].allowed_paths,
            strings(expected),
            "{own:?} {default:?}"
        );
    }
}

#[test]
fn each_rejection_names_the_task_and_the_fix() {
    let existing = vec![Task::new(
        TaskId::from("old123"),
        "Old",
        "old",
        Timestamp(0),
    )];
    let with = |key: &str, edit: &dyn Fn(&mut PlannedTask)| {
        let mut t = planned(key);
        edit(&mut t);
        t
    };
    let cases: Vec<(&str, Vec<PlannedTask>, &[&str])> =
        vec![
        ("empty plan", vec![], &["the plan has no tasks"]),
        (
            "too many tasks",
            ["a", "b", "c", "d", "e", "f"].iter().map(|k| planned(k)).collect(),
            &["the plan has 6 tasks, more than the limit of 5 (`planner.max_tasks`)"],
        ),
        (
            "empty key",
            vec![planned(" ")],
            &["tasks[0]: `key` is empty"],
        ),
        (
            "duplicate key",
            vec![planned("a"), planned("b"), planned("a")],
            &["`a`: the key is used by tasks[0], tasks[2]; give each task its own key"],
        ),
        (
            "empty title and goal",
            vec![with("a", &|t| {
                t.title = " ".into();
                t.goal = String::new();
            })],
            &["`a`: `title` is empty", "`a`: `goal` is empty"],
        ),
        (
            "unknown role",
            vec![with("a", &|t| t.role = "manager".into())],
            &["`a`: role `manager` is unknown; use worker, tester or docser"],
        ),
        (
            "unknown risk",
            vec![with("a", &|t| t.risk = Some("severe".into()))],
            &["`a`: risk `severe` is unknown; use low, medium or high"],
        ),
        (
            "unknown dependency",
            vec![with("api", &|t| t.depends_on = strings(&["db", "old123"]))],
            &["`api`: depends on `db`, which is neither a key in this plan nor an existing task"],
        ),
        (
            "self dependency",
            vec![with("a", &|t| t.depends_on = strings(&["a"]))],
            &["`a`: depends on itself; remove `a` from its `depends_on`"],
        ),
        (
            "cycle",
            vec![
                with("a", &|t| t.depends_on = strings(&["b"])),
                with("b", &|t| t.depends_on = strings(&["c"])),
                with("c", &|t| t.depends_on = strings(&["a"])),
            ],
            &["`a`: the dependencies form a cycle (a → b → c → a)"],
        ),
        (
            "bad paths",
            vec![with("a", &|t| {
                t.allowed_paths = strings(&["/etc/**", "src/../../x", "a//b", "C:\\x"]);
                t.touches = strings(&["{a,b}.rs"]);
            })],
            &[
                "`a`: `allowed_paths` entry `/etc/**` is absolute",
                "`a`: `allowed_paths` entry `src/../../x` has a `..` segment",
                "`a`: `allowed_paths` entry `a//b` is not a valid pattern: it has an empty segment",
                "`a`: `allowed_paths` entry `C:\\x` is absolute",
                "`a`: `touches` entry `{a,b}.rs` is not a valid pattern: `{a,b}` alternatives",
            ],
        ),
        (
            "commands that need a shell",
            vec![with("a", &|t| {
                t.commands = strings(&["cargo test", "cat x | grep y", "cd web && npm test", ""]);
            })],
            &[
                "`a`: `commands[1]`: cannot run `cat x | grep y`",
                "`a`: `commands[2]`: cannot run `cd web && npm test`: `cd` is a shell builtin",
                "`a`: `commands[3]`: the verification command is empty",
            ],
        ),
    ];
    let default_allowed = strings(&["**"]);
    for (name, tasks, expected) in cases {
        let errors = validate_plan(&tasks, &ctx(&existing, &default_allowed)).expect_err(name);
        assert_eq!(errors.len(), expected.len(), "{name}: {errors:#?}");
        for (error, prefix) in errors.iter().zip(expected.iter()) {
            assert!(error.starts_with(prefix), "{name}: {error}");
        }
    }
}

#[test]
fn several_problems_are_all_reported_at_once() {
    let mut a = planned("a");
    a.role = "boss".into();
    a.depends_on = strings(&["ghost"]);
    let mut b = planned("b");
    b.commands = strings(&["make; make install"]);
    b.goal = String::new();
    let tasks = vec![a, b, planned("a"), planned("c"), planned("d"), planned("e")];
    let default_allowed = strings(&["../outside/**"]);
    let errors = validate_plan(&tasks, &ctx(&[], &default_allowed)).expect_err("invalid");
    let starts: Vec<&str> = errors
        .iter()
        .map(|e| e.split(';').next().unwrap_or_default())
        .collect();
    assert_eq!(
        starts,
        vec![
            "the plan has 6 tasks, more than the limit of 5 (`planner.max_tasks`)",
            "`a`: the key is used by tasks[0], tasks[2]",
            "`a`: role `boss` is unknown",
            "`a`: depends on `ghost`, which is neither a key in this plan nor an existing task",
            "`b`: `goal` is empty",
            "`b`: `commands[0]`: cannot run `make",
            "the requirement's Allowed Paths entry `../outside/**` has a `..` segment, which \
             would leave the repository",
        ]
    );
}

#[test]
fn overlapping_tasks_wait_for_each_other_and_for_active_tasks() {
    let mut active = Task::new(TaskId::from("old123"), "Old", "old", Timestamp(0));
    active.touches = strings(&["src/store/mod.rs"]);
    let existing = vec![active];
    let mut a = planned("a");
    a.touches = strings(&["src/store/tasks.rs"]);
    let mut b = planned("b");
    b.touches = strings(&["web/app.ts"]);
    b.depends_on = strings(&["c"]);
    let mut c = planned("c");
    c.touches = strings(&["web/app.ts"]);
    let mut d = planned("d");
    d.target_area = Some("docser:global".into());
    d.touches = strings(&["README.md"]);
    let default_allowed = strings(&["**"]);
    let plan = validate_plan(&[a, b, c, d], &ctx(&existing, &default_allowed)).expect("valid");
    let edges: Vec<(TaskId, Option<String>, Vec<TaskId>)> = plan
        .tasks
        .iter()
        .map(|t| (t.id.clone(), t.target_area.clone(), t.dependencies.clone()))
        .collect();
    assert_eq!(
        edges,
        vec![
            // Same area (`path:src`) as the active task.
            (
                id("a"),
                Some("path:src".into()),
                vec![TaskId::from("old123")]
            ),
            // b and c share a file, but c → b would close the cycle b → c → b: skipped.
            (id("b"), Some("path:web".into()), vec![id("c")]),
            (id("c"), Some("path:web".into()), vec![]),
            (id("d"), Some("docser:global".into()), vec![]),
        ]
    );
    // Priorities stay as planned: (n - index) * 10.
    let priorities: Vec<i64> = plan.tasks.iter().map(|t| t.priority).collect();
    assert_eq!(priorities, vec![40, 30, 20, 10]);
}

#[test]
fn the_fallback_plans_one_task_per_criterion() {
    let doc = "## Goal\nShip\n## Acceptance Criteria\n\
               - [ ] Short one\n\
               - [ ] A criterion that is much longer than fifty characters, so its title is cut\n\
               ## Allowed Paths\n- `src/**`\n\
               ## Risk Assessment\n| r | medium | m |\n";
    let req = parse_requirement(doc);
    let tasks = fallback_plan(&req);
    let summary: Vec<_> = tasks
        .iter()
        .map(|t| {
            (
                t.key.as_str(),
                t.title.as_str(),
                t.goal.as_str(),
                t.priority,
                t.risk.as_deref(),
                t.allowed_paths.clone(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            (
                "ac-1",
                "Implement: Short one",
                "Short one",
                Some(20),
                Some("medium"),
                strings(&["src/**"]),
            ),
            (
                "ac-2",
                "Implement: A criterion that is much longer than fifty charact…",
                "A criterion that is much longer than fifty characters, so its title is cut",
                Some(10),
                Some("medium"),
                strings(&["src/**"]),
            ),
        ]
    );
    assert!(tasks
        .iter()
        .all(|t| t.role == "worker" && t.commands.is_empty() && t.depends_on.is_empty()));
    let plan = validate_plan(&tasks, &ctx(&[], &req.allowed_paths)).expect("the fallback is valid");
    // Both tasks work in `src`: the second waits for the first.
    assert_eq!(plan.tasks[1].dependencies, vec![task_id(SIG, "ac-1")]);
    assert_eq!(plan.tasks[0].risk, Risk::Medium);
}

#[test]
fn the_fallback_of_a_bare_document_leaves_paths_to_the_config() {
    let req = parse_requirement("Make it faster.");
    let tasks = fallback_plan(&req);
    assert_eq!(tasks.len(), 1);
    assert_eq!(
        tasks[0].title,
        "Implement: Deliver a verifiable first increment toward: Make…"
    );
    assert_eq!(tasks[0].risk.as_deref(), Some("low"));
    assert!(tasks[0].allowed_paths.is_empty());
    let plan = validate_plan(&tasks, &ctx(&[], &req.allowed_paths)).expect("valid");
    assert!(plan.tasks[0].allowed_paths.is_empty());
    assert_eq!(plan.tasks[0].target_area, None);
}

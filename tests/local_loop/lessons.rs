//! Issue 52: what the loop learned reaches the next agent. A JavaScript repository whose
//! `npm test` runs its tests through pnpm, on a machine whose agents have node and npm but no
//! pnpm (the `PATH` every program gets is built here, so pnpm cannot be there): the first task
//! fails on the missing command; the snapshot (probed once, inside the agents' sandbox) and the
//! lesson reach the next task's prompt, whose agent — scripted as an agent that follows such a
//! hint would act — runs the repository's tests with npm instead, and succeeds on its first run.

use std::path::{Path, PathBuf};

use super::common::{git, GitRepo, Setup, NOW};

/// The first `name` on this test's own `PATH`.
fn find(name: &str) -> PathBuf {
    std::env::var("PATH")
        .unwrap_or_default()
        .split(':')
        .map(|dir| Path::new(dir).join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("`{name}` is needed on PATH for this test (node and npm: Node 18+)")
        })
}

/// A folder holding only the programs the agents and checks of this test may run.
fn agents_path(dir: &Path) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    for name in ["sh", "cat", "grep", "sed", "node", "npm"] {
        std::os::unix::fs::symlink(find(name), bin.join(name)).unwrap();
    }
    assert!(!bin.join("pnpm").exists());
    bin
}

#[test]
fn a_missing_command_learned_once_leads_the_next_task_to_the_tool_that_exists() {
    let g = GitRepo::with(Setup {
        extra: "verify:\n  commands: [\"npm test\"]\ncontext:\n  host_ttl_hours: 24\n",
        ..Setup::default()
    });
    let tools = g.tools_path().display().to_string();
    // The agents write their prompts to the tools folder: the sandbox lets them, nothing else.
    let config = std::fs::read_to_string(g.path().join(".opentiger.yml")).unwrap();
    g.repo.file(
        ".opentiger.yml",
        &config.replace(
            "sandbox:\n  filesystem: none\n",
            &format!("sandbox:\n  writable: [\"{tools}\"]\n"),
        ),
    );
    g.repo.file(
        "package.json",
        "{\"name\": \"app\", \"version\": \"1.0.0\", \"scripts\": {\"test\": \"pnpm run unit\", \"unit\": \"node test.js\"}}\n",
    );
    g.repo.file("test.js", "console.log('unit tests pass');\n");
    git(g.path(), &["add", "-A"]);
    git(g.path(), &["commit", "-q", "-m", "a pnpm project"]);
    // Following a hint about pnpm, an agent runs the repository's tests with npm.
    g.agent(&format!(
        "#!/bin/sh\ncat > {tools}/prompt-$OPENTIGER_TASK_ID.md\necho \"$OPENTIGER_TASK_ID\" > \"feature-$OPENTIGER_TASK_ID.txt\"\nif grep -q 'pnpm is not installed in the sandbox' {tools}/prompt-$OPENTIGER_TASK_ID.md; then sed -i 's/pnpm run unit/npm run unit/' package.json; fi\n"
    ));
    let bin = agents_path(g.tools_path());
    let git_program = find("git").display().to_string();
    let env = [
        ("PATH", bin.to_str().unwrap()),
        ("OPENTIGER_GIT", git_program.as_str()),
    ];
    let tick = |env: &[(&str, &str)]| {
        let out = g.repo.run_env(NOW, &["tick"], env);
        assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
        out
    };
    let run = |args: &[&str]| g.repo.run_env(NOW, args, &env);

    let a = g
        .repo
        .add(&["--title", "First", "--goal", "write feature-a", "--id", "a"]);
    let first = tick(&env);
    assert!(first.stdout.contains("host probe ("), "{}", first.stdout);
    assert!(
        first.stdout.contains("a \"First\": worker failed"),
        "{}",
        first.stdout
    );
    let shown = run(&["task", "show", &a, "--json"]).ok().json();
    let error = shown["runs"][0]["error"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert_eq!(shown["runs"][0]["status"], "failed", "{shown}");
    assert!(error.contains("pnpm: not found"), "{error}");

    // The snapshot: taken inside the sandbox, with npm and without pnpm; one lesson.
    let learned = run(&["lessons", "--json"]).ok().json();
    let host = &learned["host"];
    let tool = |name: &str| {
        host["tools"]
            .as_array()
            .unwrap()
            .iter()
            .find(|t| t["name"] == name)
            .cloned()
            .unwrap_or_else(|| panic!("{name} not looked for: {host}"))
    };
    assert_eq!(tool("npm")["present"], true, "{host}");
    assert_eq!(tool("node")["present"], true, "{host}");
    assert_eq!(tool("pnpm")["present"], false, "{host}");
    // Only what the built PATH holds: no git, no python, whatever this machine has.
    assert_eq!(tool("git")["present"], false, "{host}");
    let os = host["os"].as_str().unwrap().to_string();
    let npm_version = tool("npm")["version"].as_str().unwrap().to_string();
    assert!(!os.is_empty());
    let lessons = learned["lessons"].as_array().unwrap();
    assert_eq!(lessons.len(), 1, "{learned}");
    assert_eq!(lessons[0]["kind"], "missing_command");
    assert_eq!(lessons[0]["signature"]["program"], "pnpm");
    assert_eq!(lessons[0]["signature"]["command"], "npm test");
    let fact = lessons[0]["fact"].as_str().unwrap();
    assert_eq!(
        fact,
        format!("pnpm is not installed in the sandbox (`npm test` runs it); the sandbox has npm {npm_version}: use that")
    );
    // What failed is shown to people, not quoted into the lesson.
    assert!(
        !lessons[0].to_string().contains("not found"),
        "{}",
        lessons[0]
    );
    let status = run(&["status", "-v"]).ok().stdout;
    assert!(status.contains(&format!("Host: {os}")), "{status}");
    assert!(
        status.contains("Lesson: ") && status.contains("missing_command"),
        "{status}"
    );
    let doctor = run(&["doctor"]).stdout;
    assert!(doctor.contains("`opentiger lessons clear "), "{doctor}");
    let unknown = run(&["lessons", "clear", "ffffffffffff"]);
    assert_eq!(unknown.code, 2, "{}", unknown.stderr);

    // The next task: its prompt says pnpm is missing, and its first run succeeds.
    let b = g.repo.add(&[
        "--title",
        "Second",
        "--goal",
        "write feature-b",
        "--id",
        "b",
        "--priority",
        "9",
    ]);
    let second = tick(&env);
    assert!(
        !second.stdout.contains("host probe ("),
        "probed again:\n{}",
        second.stdout
    );
    let prompt = std::fs::read_to_string(g.tools_path().join(format!("prompt-{b}.md"))).unwrap();
    assert!(prompt.contains("## Failure hints"), "{prompt}");
    assert!(prompt.contains(fact), "{prompt}");
    assert!(prompt.contains("## Host context"), "{prompt}");
    assert!(prompt.contains(&format!("System: {os}")), "{prompt}");
    assert!(prompt.contains(&format!("npm {npm_version}")), "{prompt}");
    assert!(
        prompt.contains("Not installed or not working (do not use): pnpm"),
        "{prompt}"
    );
    let first_prompt =
        std::fs::read_to_string(g.tools_path().join(format!("prompt-{a}.md"))).unwrap();
    assert!(first_prompt.contains("## Host context") && !first_prompt.contains("## Failure hints"));
    let shown = run(&["task", "show", &b, "--json"]).ok().json();
    let runs = shown["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 1, "{shown}");
    assert_eq!(runs[0]["status"], "success", "{shown}");
    assert_eq!(g.file_on_main("feature-b.txt").as_deref(), Some("b\n"));
    assert!(g
        .file_on_main("package.json")
        .unwrap()
        .contains("npm run unit"));
    // Its prompt's size, and what the learned context took of it, within the budget.
    let prompts = shown["prompts"].as_array().unwrap();
    let (host_chars, hints_chars) = (
        prompts[0]["host_chars"].as_u64().unwrap(),
        prompts[0]["hints_chars"].as_u64().unwrap(),
    );
    assert!(host_chars > 0 && host_chars <= 550 && hints_chars > 0 && hints_chars <= 350);
    assert_eq!(
        prompts[0]["chars"].as_u64().unwrap(),
        prompt.chars().count() as u64
    );
    let verbose = run(&["task", "show", &b, "-v"]).ok().stdout;
    assert!(
        verbose.contains(&format!(
            "(host context {host_chars}, failure hints {hints_chars})"
        )),
        "{verbose}"
    );
    // `npm test` passed since: the lesson is contradicted, and gone.
    let after = run(&["lessons", "--json"]).ok().json();
    assert_eq!(after["lessons"].as_array().unwrap().len(), 0, "{after}");
    assert_eq!(
        run(&["lessons", "clear", "--all"]).ok().stdout.trim(),
        "cleared 0 lesson(s)"
    );
}

/// The planner is told which tools the agents' sandbox lacks, and a command it proposes anyway
/// is run by a tool of its kind the sandbox has, or left out, the task's notes saying which.
#[test]
fn the_planner_proposes_no_command_the_host_lacks() {
    let g = GitRepo::with(Setup {
        extra: "context:\n  host_ttl_hours: 24\n",
        ..Setup::default()
    });
    let tools = g.tools_path().display().to_string();
    g.repo.file(
        "docs/requirement.md",
        "# Tool\n\n## Goal\nA tool.\n\n## Acceptance Criteria\n- [ ] it works\n\n## Allowed Paths\n- `src/**`\n",
    );
    g.planner(&format!(
        "#!/bin/sh\ncat > {tools}/planner-prompt.md\ncat > \"$OPENTIGER_RESULT_FILE\" <<'PLAN'\n{{\"tasks\": [{{\"key\": \"a\", \"title\": \"Tool\", \"goal\": \"it works\", \"allowed_paths\": [\"src/**\"], \"commands\": [\"pnpm test\", \"npm run lint\", \"go vet ./...\"]}}]}}\nPLAN\n"
    ));
    let bin = agents_path(g.tools_path());
    let git_program = find("git").display().to_string();
    let env = [
        ("PATH", bin.to_str().unwrap()),
        ("OPENTIGER_GIT", git_program.as_str()),
    ];
    let out = g.repo.run_env(NOW, &["plan"], &env).ok();
    assert!(out.stdout.contains("1 task(s) created"), "{}", out.stdout);
    let prompt = std::fs::read_to_string(g.tools_path().join("planner-prompt.md")).unwrap();
    assert!(prompt.contains("## Host context"), "{prompt}");
    assert!(
        prompt.contains("no task's `commands` may need one of them (`pnpm`, `yarn`"),
        "{prompt}"
    );
    let tasks = g
        .repo
        .run_env(NOW, &["task", "list", "--json"], &env)
        .ok()
        .json();
    let task = &tasks[0];
    assert_eq!(
        task["commands"],
        serde_json::json!(["npm test", "npm run lint"]),
        "{task}"
    );
    let notes = task["notes"].as_str().unwrap();
    assert!(
        notes.contains(
            "`pnpm test`; its program is not installed in the sandbox, so `npm test` runs instead"
        ),
        "{notes}"
    );
    assert!(
        notes.contains("`go vet ./...`; go is not installed in the sandbox"),
        "{notes}"
    );
    // The snapshot the plan took is kept: the next tick does not probe again.
    let learned = g
        .repo
        .run_env(NOW, &["lessons", "--json"], &env)
        .ok()
        .json();
    assert_eq!(learned["host_state"], "fresh", "{learned}");
}

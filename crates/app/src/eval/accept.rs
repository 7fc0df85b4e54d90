//! Hidden acceptance: the test command run on a tree of the throw-away clone (the merged base,
//! the loop's last change, the parent, the change itself) with the change's test files put on
//! top. It runs as the loop's checks run — no shell, the checks' sandbox and network door, the
//! verification timeout (`runner::run_commands_in`) — and its output is kept in the task's logs.
//! Not for: which files are hidden tests (`eval::change`), or what a pass means (`eval::rules`).

use std::path::Path;

use crate::config::{Config, VerifyConfig};
use crate::failure::Failure;
use crate::git::Git;
use crate::model::Role;
use crate::redact::Redactor;
use crate::verify::{self, VerifyPlan};

use super::clone;

/// What decides resolution: `--test-command`, or the configuration's verification commands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TestCommand {
    Given(String),
    Configured,
}

impl TestCommand {
    /// The commands to run for a change touching `paths` (for `verify.when_changed`), parsed and
    /// checked against the denied commands as verification's are. Empty is a usage error.
    pub fn plan(&self, config: &Config, paths: &[String]) -> Result<VerifyPlan, Failure> {
        let planned = match self {
            TestCommand::Given(text) => {
                let only = VerifyConfig {
                    commands: Vec::new(),
                    by_role: Default::default(),
                    when_changed: Vec::new(),
                    ..config.verify.clone()
                };
                verify::plan_commands(std::slice::from_ref(text), &only, Role::Worker, &[])
                    .map_err(|e| {
                        Failure::usage(format!(
                            "--test-command: {e}\n  fix: give one command without shell syntax (`python3 -m pytest -q`), or a script that runs the tests"
                        ))
                    })?
            }
            TestCommand::Configured => {
                verify::plan_commands(&[], &config.verify, Role::Worker, paths)
                    .map_err(|e| Failure::usage(format!("verify: {e}")))?
            }
        };
        if planned.commands.is_empty() {
            return Err(Failure::usage(
                "eval: nothing would decide whether a task was resolved: the configuration has no verify.commands\n  fix: give the test command with --test-command CMD (e.g. `--test-command \"cargo test\"`)",
            ));
        }
        Ok(planned)
    }
}

/// Where the hidden tests are run, and with what.
pub struct Acceptance<'a> {
    /// The user's repository, which holds the change's test files.
    pub source: &'a Git,
    pub clone: &'a Git,
    pub config: &'a Config,
    pub plan: &'a VerifyPlan,
    pub redactor: &'a Redactor,
    pub commit: &'a str,
    pub hidden: &'a [String],
    /// The task's log folder.
    pub logs: &'a Path,
}

/// Which tree the hidden tests run on.
pub enum Tree<'a> {
    /// A revision of the clone (the parent, the merged base, the loop's last change).
    Clone(&'a str),
    /// The change itself, which the clone does not hold: written from the user's repository.
    Change,
}

impl Acceptance<'_> {
    /// Writes `tree` under `dir`, puts the hidden tests on it and runs the test command there:
    /// whether it passed. The output goes to `<logs>/<name>.txt`.
    pub fn run_on(&self, tree: Tree<'_>, dir: &Path, name: &str) -> Result<bool, Failure> {
        let rev = match tree {
            Tree::Clone(rev) => {
                clone::tree_at(self.clone, rev, dir)?;
                rev
            }
            Tree::Change => {
                std::fs::create_dir_all(dir).map_err(|e| {
                    Failure::tick(format!("eval: could not make {}: {e}", dir.display()))
                })?;
                clone::tree_of_source(self.source, self.commit, dir, &dir.with_extension("index"))?;
                self.commit
            }
        };
        let tree = dir.to_path_buf();
        clone::apply_hidden(self.source, self.commit, self.hidden, &tree)?;
        let done = crate::runner::run_commands_in(
            self.config,
            self.clone.dir(),
            &tree,
            self.plan,
            self.redactor,
        );
        let mut log = format!(
            "hidden tests on {rev} ({name}), with {} test file(s) of {}:\n",
            self.hidden.len(),
            self.commit
        );
        for file in self.hidden {
            log.push_str(&format!("  {file}\n"));
        }
        for c in &done.commands {
            log.push_str(&format!(
                "\n$ {}\nexit: {}\n{}\n",
                c.command,
                c.exit.map_or_else(
                    || if c.timed_out {
                        "timed out".into()
                    } else {
                        "none".into()
                    },
                    |code| code.to_string()
                ),
                c.tail
            ));
        }
        if let Some(failure) = &done.failure {
            let headline = failure.message.lines().next().unwrap_or_default();
            log.push_str(&format!("\nFAILED: {headline}\n"));
        } else {
            log.push_str("\nPASSED\n");
        }
        std::fs::write(self.logs.join(format!("{name}.txt")), log)
            .map_err(|e| Failure::tick(format!("eval: could not write the test log: {e}")))?;
        // The work tree goes; the clone's list of work trees forgets it.
        let _ = std::fs::remove_dir_all(&tree);
        let _ = self.clone.run(&["worktree", "prune"]);
        Ok(done.failure.is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_test_command_is_parsed_as_verification_commands_are() {
        let mut config = Config::default();
        let given = TestCommand::Given("python3 -m unittest -q && make check".into());
        let plan = given.plan(&config, &[]).unwrap();
        let programs: Vec<&str> = plan
            .commands
            .iter()
            .map(|c| c.spec.program.as_str())
            .collect();
        assert_eq!(programs, ["python3", "make"]);
        let e = TestCommand::Given("make | tee log".into())
            .plan(&config, &[])
            .unwrap_err();
        assert!(e.message.contains("--test-command"), "{}", e.message);
        let e = TestCommand::Configured.plan(&config, &[]).unwrap_err();
        assert!(e.message.contains("--test-command CMD"), "{}", e.message);
        config.verify.commands = vec!["cargo test".into()];
        let plan = TestCommand::Configured.plan(&config, &[]).unwrap();
        assert_eq!(plan.commands[0].spec.text, "cargo test");
    }
}

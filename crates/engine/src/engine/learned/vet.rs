//! The planner proposes no verification command the host lacks (issue 52): a proposed command
//! whose program the snapshot did not find (or a lesson says is missing) is written for a tool
//! of its group the sandbox has (`pnpm test` → `npm test`, `python` → `python3`), or dropped.
//! Pure.
//!
//! Not for: validating a plan (`planner`), running the planner (`runner::planner`).

use crate::engine::classify::lesson::program_of;
use crate::model::learned::{HostSnapshot, Lesson, Signature, ALTERNATIVES};

/// What became of one proposed command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Vetted {
    Kept(String),
    /// Its program is missing; `to` runs a tool of its group the sandbox has.
    Rewritten {
        from: String,
        to: String,
    },
    /// Its program is missing and nothing stands in for it.
    Dropped {
        command: String,
        program: String,
    },
}

impl Vetted {
    /// The command to keep, if any.
    pub fn command(&self) -> Option<&str> {
        match self {
            Vetted::Kept(c) | Vetted::Rewritten { to: c, .. } => Some(c),
            Vetted::Dropped { .. } => None,
        }
    }

    /// For the task's notes: what was changed and why; `None` when kept.
    pub fn note(&self) -> Option<String> {
        match self {
            Vetted::Kept(_) => None,
            Vetted::Rewritten { from, to } => Some(format!(
                "The planner proposed `{from}`; its program is not installed in the sandbox, so `{to}` runs instead."
            )),
            Vetted::Dropped { command, program } => Some(format!(
                "The planner proposed `{command}`; {program} is not installed in the sandbox and nothing stands in for it, so it was left out."
            )),
        }
    }
}

/// `command` against what the sandbox has.
pub fn vet(command: &str, host: Option<&HostSnapshot>, lessons: &[Lesson]) -> Vetted {
    let Some(program) = program_of(command) else {
        return Vetted::Kept(command.to_string());
    };
    let lacks = host.is_some_and(|h| h.lacks(&program)) || lessons.iter().any(|l| {
        matches!(&l.signature, Signature::MissingCommand { program: Some(p), .. } if *p == program)
            && host.is_none_or(|h| !h.has(&program))
    });
    if !lacks {
        return Vetted::Kept(command.to_string());
    }
    let instead = host.and_then(|h| {
        ALTERNATIVES
            .iter()
            .find(|g| g.contains(&program.as_str()))?
            .iter()
            .find(|t| **t != program && h.has(t))
            .copied()
    });
    match instead.and_then(|to| rewrite(command, &program, to)) {
        Some(to) => Vetted::Rewritten {
            from: command.to_string(),
            to,
        },
        None => Vetted::Dropped {
            command: command.to_string(),
            program,
        },
    }
}

/// `command` run by `to` instead of `from` where the two take the same words for it: npm for
/// another JavaScript package manager's `test`, `run <script>`, `install`, `exec`, a bare
/// script name; any of Python's interpreters or pips for another.
fn rewrite(command: &str, from: &str, to: &str) -> Option<String> {
    let words: Vec<&str> = command.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| w.trim_matches(['"', '\'']) == from)?;
    let (lead, args) = (&words[..at], &words[at + 1..]);
    let js = ["pnpm", "yarn", "bun", "npm"];
    let body = if js.contains(&from) && to == "npm" {
        match args.first().copied() {
            None => vec!["npm", "install"],
            Some("install" | "i") if args.len() == 1 => vec!["npm", "install"],
            Some("test" | "t") => [&["npm", "test"][..], &args[1..]].concat(),
            Some("run" | "run-script") => [&["npm", "run"][..], &args[1..]].concat(),
            Some("exec" | "dlx" | "x") => [&["npx"][..], &args[1..]].concat(),
            Some(script) if from == "yarn" && !script.starts_with('-') => {
                [&["npm", "run"][..], args].concat()
            }
            Some(_) => return None,
        }
    } else if from.starts_with("python") || from.starts_with("pip") {
        [&[to][..], args].concat()
    } else {
        return None;
    };
    Some([lead, &body[..]].concat().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::learned::ToolFact;
    use crate::time::Timestamp;

    fn host(found: &[&str], missing: &[&str]) -> HostSnapshot {
        let fact = |name: &&str, present| ToolFact {
            name: name.to_string(),
            present,
            version: None,
        };
        HostSnapshot {
            tools: found
                .iter()
                .map(|n| fact(n, true))
                .chain(missing.iter().map(|n| fact(n, false)))
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn proposed_commands_are_kept_rewritten_or_dropped() {
        let node = host(
            &["npm", "node", "python3", "pip3"],
            &["pnpm", "yarn", "python", "pip", "go", "docker"],
        );
        #[rustfmt::skip]
        let cases = [
            ("npm test", Vetted::Kept("npm test".into())),
            ("./check.sh", Vetted::Kept("./check.sh".into())),
            ("cargo test", Vetted::Kept("cargo test".into())),
            ("pnpm test", Vetted::Rewritten { from: "pnpm test".into(), to: "npm test".into() }),
            ("CI=1 pnpm test -- --run", Vetted::Rewritten { from: "CI=1 pnpm test -- --run".into(), to: "CI=1 npm test -- --run".into() }),
            ("pnpm run lint", Vetted::Rewritten { from: "pnpm run lint".into(), to: "npm run lint".into() }),
            ("yarn lint", Vetted::Rewritten { from: "yarn lint".into(), to: "npm run lint".into() }),
            ("yarn", Vetted::Rewritten { from: "yarn".into(), to: "npm install".into() }),
            ("pnpm dlx tsc", Vetted::Rewritten { from: "pnpm dlx tsc".into(), to: "npx tsc".into() }),
            ("python -m pytest", Vetted::Rewritten { from: "python -m pytest".into(), to: "python3 -m pytest".into() }),
            ("pip install -e .", Vetted::Rewritten { from: "pip install -e .".into(), to: "pip3 install -e .".into() }),
            ("pnpm --filter web test", Vetted::Dropped { command: "pnpm --filter web test".into(), program: "pnpm".into() }),
            ("go test ./...", Vetted::Dropped { command: "go test ./...".into(), program: "go".into() }),
            ("docker compose up", Vetted::Dropped { command: "docker compose up".into(), program: "docker".into() }),
        ];
        for (command, expected) in cases {
            assert_eq!(vet(command, Some(&node), &[]), expected, "{command}");
        }
        assert!(vet("pnpm test", Some(&node), &[])
            .note()
            .unwrap()
            .contains("`npm test` runs instead"));
        assert_eq!(vet("npm test", Some(&node), &[]).note(), None);
    }

    #[test]
    fn a_lesson_says_what_no_snapshot_looked_for() {
        let lesson = |program: &str| {
            let signature = Signature::MissingCommand {
                program: Some(program.into()),
                command: "make check".into(),
            };
            Lesson {
                id: signature.id(),
                signature,
                count: 1,
                first_seen: Timestamp(0),
                last_seen: Timestamp(0),
            }
        };
        let lessons = [lesson("tox")];
        assert_eq!(
            vet("tox -e py", None, &lessons),
            Vetted::Dropped {
                command: "tox -e py".into(),
                program: "tox".into()
            }
        );
        // A snapshot that found it wins over the lesson.
        assert_eq!(
            vet("tox -e py", Some(&host(&["tox"], &[])), &lessons),
            Vetted::Kept("tox -e py".into())
        );
        assert_eq!(
            vet("pnpm test", None, &[]),
            Vetted::Kept("pnpm test".into())
        );
    }
}

//! Target areas and hot-file planning (spec §2.1 step 8): which tasks of a plan would edit the
//! same part of the repository, and the dependencies that keep them from running at once.
//!
//! A task's target area is a coarse name for where it works (`path:src`, `path:apps/web`); the
//! dispatcher never runs two tasks of the same area together. Hot-file planning goes further at
//! plan time: a new task waits for every earlier task of its plan and every active task with the
//! same area or overlapping paths, so two changes to one file are made one after the other rather
//! than conflicting at merge.
//!
//! Not for: matching paths against changed files (that is [`crate::policy::Glob`]); overlap here
//! is a cheap, conservative guess on the patterns alone. Pure: no I/O.

use std::collections::BTreeMap;

use crate::model::graph::find_cycle;
use crate::model::{Task, TaskId};

/// Top-level directories whose second segment names the area (`apps/web`, `packages/core`).
const TWO_LEVEL_ROOTS: &[&str] = &[
    "apps",
    "packages",
    "docs",
    "ops",
    "scripts",
    "templates",
    "assets",
];

/// The target area of a task: `explicit` when given, else `path:<area>` from `touches`, else
/// from `allowed`; `None` when no path names an area (only `*`/`**`, or no paths).
pub fn target_area(
    explicit: Option<&str>,
    touches: &[String],
    allowed: &[String],
) -> Option<String> {
    if let Some(explicit) = explicit.map(str::trim).filter(|e| !e.is_empty()) {
        return Some(explicit.to_string());
    }
    path_area(touches)
        .or_else(|| path_area(allowed))
        .map(|area| format!("path:{area}"))
}

/// The lexicographically smallest area of the paths, so the answer does not depend on order.
fn path_area(paths: &[String]) -> Option<String> {
    paths.iter().filter_map(|p| area_of(p)).min()
}

/// The first literal segment, or the first two under [`TWO_LEVEL_ROOTS`].
fn area_of(path: &str) -> Option<String> {
    let literal = literal_segments(path);
    match literal.as_slice() {
        [] => None,
        [first, second, ..] if TWO_LEVEL_ROOTS.contains(first) => Some(format!("{first}/{second}")),
        [first, ..] => Some((*first).to_string()),
    }
}

/// The segments of a pattern before the first one with a glob character (`*`, `?`, `[`, or a
/// `\` escape), ignoring a leading `./`, `.` segments and empty segments.
fn literal_segments(path: &str) -> Vec<&str> {
    let path = path.trim();
    let path = path.strip_prefix("./").unwrap_or(path);
    path.split('/')
        .filter(|s| !s.is_empty() && *s != ".")
        .take_while(|s| !s.contains(['*', '?', '[', '\\']))
        .collect()
}

/// Whether two path patterns may name a common file: one's literal prefix contains the other's,
/// segment by segment (`src/**` and `src/lib.rs` overlap, `src` and `src2` do not). A pattern
/// without a literal prefix (`**`, `*.md`) overlaps everything.
pub fn paths_overlap(a: &str, b: &str) -> bool {
    let (a, b) = (literal_segments(a), literal_segments(b));
    let common = a.len().min(b.len());
    a[..common] == b[..common]
}

/// What hot-file planning compares: a task's id, area and paths (touches ∪ allowed paths).
struct Footprint<'a> {
    id: &'a TaskId,
    area: Option<String>,
    paths: Vec<&'a str>,
}

impl<'a> Footprint<'a> {
    fn of(task: &'a Task) -> Footprint<'a> {
        Footprint {
            id: &task.id,
            area: target_area(
                task.target_area.as_deref(),
                &task.touches,
                &task.allowed_paths,
            ),
            paths: task
                .touches
                .iter()
                .chain(&task.allowed_paths)
                .map(String::as_str)
                .collect(),
        }
    }

    fn conflicts(&self, other: &Footprint<'_>) -> bool {
        let same_area = matches!((&self.area, &other.area), (Some(a), Some(b)) if a == b);
        same_area
            || self
                .paths
                .iter()
                .any(|p| other.paths.iter().any(|q| paths_overlap(p, q)))
    }
}

/// Adds to each new task a dependency on every earlier task of the plan and every existing task
/// it conflicts with (same target area, or overlapping paths). An edge is skipped when it is
/// already there, points at the task itself, or would close a dependency cycle. Existing tasks
/// never depend on new ones, so only the new tasks' edges can form a cycle.
pub fn add_hot_file_dependencies(tasks: &mut [Task], existing: &[Task]) {
    let mut edges: BTreeMap<TaskId, Vec<TaskId>> = tasks
        .iter()
        .map(|t| (t.id.clone(), t.dependencies.clone()))
        .collect();
    let new: Vec<Footprint<'_>> = tasks.iter().map(Footprint::of).collect();
    let old: Vec<Footprint<'_>> = existing.iter().map(Footprint::of).collect();
    for (index, task) in new.iter().enumerate() {
        for other in new[..index].iter().chain(&old) {
            if other.id == task.id || !task.conflicts(other) {
                continue;
            }
            let Some(deps) = edges.get_mut(task.id) else {
                continue;
            };
            if deps.contains(other.id) {
                continue;
            }
            deps.push(other.id.clone());
            if find_cycle(&edges).is_some() {
                if let Some(deps) = edges.get_mut(task.id) {
                    deps.pop();
                }
            }
        }
    }
    for task in tasks.iter_mut() {
        if let Some(deps) = edges.remove(&task.id) {
            task.dependencies = deps;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::time::Timestamp;

    fn strings(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn target_areas() {
        type Case<'a> = (
            Option<&'a str>,
            &'a [&'a str],
            &'a [&'a str],
            Option<&'a str>,
        );
        let cases: &[Case] = &[
            (
                Some("docser:global"),
                &["docs/a.md"],
                &["docs/**"],
                Some("docser:global"),
            ),
            (Some("  "), &["src/a.rs"], &[], Some("path:src")),
            (
                None,
                &["apps/judge/src/loops.ts", "apps/judge/src/retry.ts"],
                &["apps/**"],
                Some("path:apps/judge"),
            ),
            (None, &[], &["packages/core/**"], Some("path:packages/core")),
            (
                None,
                &[],
                &["src/**", "Cargo.toml"],
                Some("path:Cargo.toml"),
            ),
            (None, &["src/main.rs"], &["Cargo.toml"], Some("path:src")),
            (None, &["README.md"], &[], Some("path:README.md")),
            (None, &["apps/*/src/x.ts"], &[], Some("path:apps")),
            (None, &["docs/api/v1/**"], &[], Some("path:docs/api")),
            (None, &["./src/lib.rs"], &[], Some("path:src")),
            (None, &["*.md"], &["src/**"], Some("path:src")),
            (None, &["**"], &["*"], None),
            (None, &["**/*.rs", "[ab]/x"], &[], None),
            (None, &[], &[], None),
            (None, &["zeta/a", "alpha/b"], &[], Some("path:alpha")),
        ];
        for (explicit, touches, allowed, expected) in cases {
            assert_eq!(
                target_area(*explicit, &strings(touches), &strings(allowed)).as_deref(),
                *expected,
                "{explicit:?} {touches:?} {allowed:?}"
            );
        }
    }

    #[test]
    fn overlaps() {
        let cases: &[(&str, &str, bool)] = &[
            ("**", "anything/at/all", true),
            ("src/**", "src/lib.rs", true),
            ("src/lib.rs", "src/lib.rs", true),
            ("src/*.rs", "src/deep/mod.rs", true),
            ("src/**", "tests/**", false),
            ("src", "src2/x", false),
            ("src/lib.rs", "src/main.rs", false),
            ("apps/web/**", "apps/api/**", false),
            ("*.md", "src/x", true),
        ];
        for (a, b, expected) in cases {
            assert_eq!(paths_overlap(a, b), *expected, "{a} vs {b}");
            assert_eq!(paths_overlap(b, a), *expected, "{b} vs {a}");
        }
    }

    fn task(id: &str, touches: &[&str], allowed: &[&str], deps: &[&str]) -> Task {
        let mut t = Task::new(TaskId::from(id), id, id, Timestamp(0));
        t.touches = strings(touches);
        t.allowed_paths = strings(allowed);
        t.dependencies = deps.iter().map(|d| TaskId::from(*d)).collect();
        t
    }

    fn deps_of(tasks: &[Task]) -> Vec<(String, Vec<String>)> {
        tasks
            .iter()
            .map(|t| {
                (
                    t.id.to_string(),
                    t.dependencies.iter().map(TaskId::to_string).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn hot_file_dependencies() {
        type Spec<'a> = (&'a str, &'a [&'a str], &'a [&'a str], &'a [&'a str]);
        type Case<'a> = (
            &'a str,
            &'a [Spec<'a>],
            &'a [Spec<'a>],
            &'a [(&'a str, &'a [&'a str])],
        );
        let cases: &[Case] = &[
            (
                "same area and overlap within the plan, earlier tasks only",
                &[
                    ("a", &["src/a.rs"], &[], &[]),
                    ("b", &["src/b.rs"], &[], &[]),
                    ("c", &["docs/x.md"], &[], &[]),
                ],
                &[],
                &[("a", &[]), ("b", &["a"]), ("c", &[])],
            ),
            (
                "an active task with overlapping paths",
                &[
                    ("a", &["lib/x.rs"], &[], &[]),
                    ("b", &["web/y.ts"], &[], &[]),
                ],
                &[("old", &[], &["lib/**"], &[])],
                &[("a", &["old"]), ("b", &[])],
            ),
            (
                "an active task in the same area",
                &[("a", &["ops/ci/x.yml"], &[], &[])],
                &[("old", &["ops/ci/y.yml"], &[], &[])],
                &[("a", &["old"])],
            ),
            (
                "`**` overlaps everything; explicit edges are kept, not duplicated",
                &[("a", &[], &["**"], &[]), ("b", &["z/q"], &[], &["a"])],
                &[],
                &[("a", &[]), ("b", &["a"])],
            ),
            (
                "no edge that would close a cycle",
                &[
                    ("a", &["src/a.rs"], &[], &["b"]),
                    ("b", &["src/b.rs"], &[], &[]),
                ],
                &[],
                &[("a", &["b"]), ("b", &[])],
            ),
            (
                "never itself (a replayed plan finds its own ids active)",
                &[("a", &["src/a.rs"], &[], &[])],
                &[("a", &["src/a.rs"], &[], &[])],
                &[("a", &[])],
            ),
        ];
        for (name, new, existing, expected) in cases {
            let build = |specs: &[Spec]| -> Vec<Task> {
                specs
                    .iter()
                    .map(|(id, touches, allowed, deps)| task(id, touches, allowed, deps))
                    .collect()
            };
            let mut tasks = build(new);
            add_hot_file_dependencies(&mut tasks, &build(existing));
            let expected: Vec<(String, Vec<String>)> = expected
                .iter()
                .map(|(id, deps)| (id.to_string(), strings(deps)))
                .collect();
            assert_eq!(deps_of(&tasks), expected, "{name}");
        }
    }

    #[test]
    fn stored_areas_of_active_tasks_count() {
        let mut old = task("old", &[], &[], &[]);
        old.target_area = Some("docser:global".into());
        let mut new = vec![task("a", &[], &[], &[])];
        new[0].target_area = Some("docser:global".into());
        add_hot_file_dependencies(&mut new, &[old]);
        assert_eq!(new[0].dependencies, vec![TaskId::from("old")]);
    }
}

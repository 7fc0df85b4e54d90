//! Dependency graph checks shared by `task add`, the planner, the backlog import and the store:
//! a cycle found and said in words, and what a task reaches through its dependencies. Not for:
//! drawing the graph (`report::graph`) or when a dependency counts as met (`engine::dispatch`).

use std::collections::{BTreeMap, BTreeSet};

use super::TaskId;

/// A cycle in `edges` (task → its dependencies), as the ids along it, first id repeated last.
pub fn find_cycle(edges: &BTreeMap<TaskId, Vec<TaskId>>) -> Option<Vec<TaskId>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Visiting,
        Done,
    }
    let mut marks: BTreeMap<&TaskId, Mark> = BTreeMap::new();
    for start in edges.keys() {
        if marks.contains_key(start) {
            continue;
        }
        // Iterative DFS: (node, index of next dependency to visit).
        let mut stack: Vec<(&TaskId, usize)> = vec![(start, 0)];
        marks.insert(start, Mark::Visiting);
        while let Some((node, next)) = stack.last().copied() {
            let deps = edges.get(node).map_or(&[][..], Vec::as_slice);
            if next < deps.len() {
                if let Some(top) = stack.last_mut() {
                    top.1 += 1;
                }
                let dep = &deps[next];
                match marks.get(dep) {
                    Some(Mark::Visiting) => {
                        let from = stack.iter().position(|(n, _)| *n == dep).unwrap_or(0);
                        let mut cycle: Vec<TaskId> =
                            stack[from..].iter().map(|(n, _)| (*n).clone()).collect();
                        cycle.push(dep.clone());
                        return Some(cycle);
                    }
                    Some(Mark::Done) => {}
                    None => {
                        marks.insert(dep, Mark::Visiting);
                        stack.push((dep, 0));
                    }
                }
            } else {
                marks.insert(node, Mark::Done);
                stack.pop();
            }
        }
    }
    None
}

/// `a → b → a`
pub fn describe_cycle(cycle: &[TaskId]) -> String {
    cycle
        .iter()
        .map(TaskId::as_str)
        .collect::<Vec<_>>()
        .join(" → ")
}

/// Ids reachable from `start` through dependencies (not including `start`).
pub fn reachable(edges: &BTreeMap<TaskId, Vec<TaskId>>, start: &TaskId) -> BTreeSet<TaskId> {
    let mut seen = BTreeSet::new();
    let mut todo = vec![start.clone()];
    while let Some(node) = todo.pop() {
        for dep in edges.get(&node).into_iter().flatten() {
            if seen.insert(dep.clone()) {
                todo.push(dep.clone());
            }
        }
    }
    seen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(edges: &[(&str, &[&str])]) -> BTreeMap<TaskId, Vec<TaskId>> {
        edges
            .iter()
            .map(|(k, deps)| {
                (
                    TaskId::from(*k),
                    deps.iter().map(|d| TaskId::from(*d)).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn cycles_are_found_and_named() {
        type Edges<'a> = &'a [(&'a str, &'a [&'a str])];
        let cases: &[(Edges, Option<&str>)] = &[
            (&[("a", &["b"]), ("b", &["c"]), ("c", &[])], None),
            (&[("a", &["a"])], Some("a → a")),
            (&[("a", &["b"]), ("b", &["a"])], Some("a → b → a")),
            (
                &[("x", &["a"]), ("a", &["b"]), ("b", &["c"]), ("c", &["a"])],
                Some("a → b → c → a"),
            ),
            (
                &[("a", &["b", "c"]), ("b", &["d"]), ("c", &["d"]), ("d", &[])],
                None,
            ),
        ];
        for (edges, expected) in cases {
            let found = find_cycle(&graph(edges)).map(|c| describe_cycle(&c));
            assert_eq!(found.as_deref(), *expected, "{edges:?}");
        }
    }

    #[test]
    fn reachability_follows_dependencies() {
        let g = graph(&[("a", &["b"]), ("b", &["c"]), ("c", &[]), ("d", &["a"])]);
        let from_a: Vec<_> = reachable(&g, &TaskId::from("a")).into_iter().collect();
        assert_eq!(from_a, vec![TaskId::from("b"), TaskId::from("c")]);
    }
}

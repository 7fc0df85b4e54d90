//! The task graph as a Mermaid `flowchart` (issue 40): a node per task with a short title and its
//! state as a colour, an arrow from each dependency to the task that waits for it, a dotted one to
//! the AutoFix, rework or conflict fix working on it; drawn by `status --graph`, the dashboard and
//! the plan comment. Issue 51: a waiting box says in a few words what it waits for, and a
//! legend names the colours and arrows drawn. A title keeps letters, digits, spaces and harmless marks, the rest as entity
//! codes (`#35;`), so it cannot end the label, the diagram or the fence. Pure text.
//! Not for: picking the tasks (`tick::status`) or the graph's cycle checks (`model::graph`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::model::{BlockReason, Task, TaskId, TaskStatus};

/// The most tasks one graph draws; a backlog past it gets a note of what was left out.
pub const MAX_NODES: usize = 60;
/// Characters of a title a node shows.
const TITLE_CHARS: usize = 40;
/// Characters of the reason a waiting node shows.
const WHY_CHARS: usize = 40;

/// The colour class of a task's state. People-facing groups: what waits on a person stands
/// out from what waits on the loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Shade {
    Queued,
    Running,
    /// Blocked on the loop: the judge, a rework, a quota, its issue.
    Waiting,
    /// Blocked on a person: a question, an approval, a pause.
    Person,
    Failed,
    Done,
    Cancelled,
    /// Named by a dependency or a parent, but not among the tasks drawn.
    Missing,
}

impl Shade {
    fn of(task: &Task) -> Shade {
        match (task.status, task.block_reason) {
            (TaskStatus::Queued, _) => Shade::Queued,
            (TaskStatus::Running, _) => Shade::Running,
            (
                TaskStatus::Blocked,
                None | Some(BlockReason::AwaitingHuman | BlockReason::Paused),
            ) => Shade::Person,
            (
                TaskStatus::Blocked,
                Some(
                    BlockReason::AwaitingJudge
                    | BlockReason::NeedsRework
                    | BlockReason::QuotaWait
                    | BlockReason::IssueLinking,
                ),
            ) => Shade::Waiting,
            (TaskStatus::Failed, _) => Shade::Failed,
            (TaskStatus::Done, _) => Shade::Done,
            (TaskStatus::Cancelled, _) => Shade::Cancelled,
        }
    }

    /// What the colour means, for the legend.
    fn meaning(self) -> &'static str {
        match self {
            Shade::Queued => "queued",
            Shade::Running => "running",
            Shade::Waiting => "waits for the loop (review, fix, quota)",
            Shade::Person => "waits for a person",
            Shade::Failed => "failed",
            Shade::Done => "done",
            Shade::Cancelled => "cancelled",
            Shade::Missing => "not drawn here",
        }
    }

    fn class(self) -> &'static str {
        match self {
            Shade::Queued => "queued",
            Shade::Running => "running",
            Shade::Waiting => "waiting",
            Shade::Person => "person",
            Shade::Failed => "failed",
            Shade::Done => "done",
            Shade::Cancelled => "cancelled",
            Shade::Missing => "missing",
        }
    }

    /// The `classDef` line body: fill, border and text colours readable in light and dark.
    fn style(self) -> &'static str {
        match self {
            Shade::Queued => "fill:#eef1f5,stroke:#8c959f,color:#24292f",
            Shade::Running => "fill:#ddf4ff,stroke:#0969da,color:#0a3069",
            Shade::Waiting => "fill:#fff8c5,stroke:#bf8700,color:#4d2d00",
            Shade::Person => "fill:#ffd8b5,stroke:#bc4c00,color:#3d1300,stroke-width:2px",
            Shade::Failed => "fill:#ffebe9,stroke:#cf222e,color:#82071e",
            Shade::Done => "fill:#dafbe1,stroke:#1a7f37,color:#044f1e",
            Shade::Cancelled => "fill:#f6f8fa,stroke:#8c959f,color:#57606a,stroke-dasharray:4 3",
            Shade::Missing => "fill:#ffffff,stroke:#8c959f,color:#57606a,stroke-dasharray:2 2",
        }
    }

    const ALL: [Shade; 8] = [
        Shade::Queued,
        Shade::Running,
        Shade::Waiting,
        Shade::Person,
        Shade::Failed,
        Shade::Done,
        Shade::Cancelled,
        Shade::Missing,
    ];
}

/// The Mermaid text of the graph of `tasks` (without a markdown fence), or `None` when there
/// is no task. Active tasks are drawn first; past [`MAX_NODES`] the rest are counted in a note
/// node, never silently dropped.
pub fn mermaid(tasks: &[Task]) -> Option<String> {
    if tasks.is_empty() {
        return None;
    }
    let mut ordered: Vec<&Task> = tasks.iter().collect();
    // Active first (what people act on), then the finished ones they depend on; stable within.
    ordered.sort_by_key(|t| t.status.is_terminal());
    let (drawn, left_out) = ordered.split_at(ordered.len().min(MAX_NODES));
    let nodes: BTreeMap<TaskId, String> = drawn
        .iter()
        .enumerate()
        .map(|(i, task)| (task.id.clone(), format!("t{i}")))
        .collect();
    let all: BTreeMap<&TaskId, &Task> = tasks.iter().map(|t| (&t.id, t)).collect();
    let mut out = String::from("flowchart LR\n");
    let mut used = vec![false; Shade::ALL.len()];
    for task in drawn {
        let shade = Shade::of(task);
        used[shade as usize] = true;
        let _ = writeln!(
            out,
            "  {}[\"{}\"]:::{}",
            nodes[&task.id],
            label(task, waits_for(task, &all).as_deref()),
            shade.class()
        );
    }
    // Tasks named by a drawn one but not drawn themselves: a plain node each.
    let mut missing: BTreeMap<TaskId, String> = BTreeMap::new();
    let mut node_of = |id: &TaskId| -> String {
        if let Some(node) = nodes.get(id) {
            return node.clone();
        }
        let next = format!("m{}", missing.len());
        missing.entry(id.clone()).or_insert(next).clone()
    };
    let mut edges = Vec::new();
    for task in drawn {
        let to = nodes[&task.id].clone();
        for dep in &task.dependencies {
            edges.push(format!("  {} --> {to}", node_of(dep)));
        }
        if let Some(parent) = &task.parent_task_id {
            edges.push(format!("  {} -. {} .-> {to}", node_of(parent), task.kind));
        }
    }
    for (id, node) in &missing {
        used[Shade::Missing as usize] = true;
        let _ = writeln!(
            out,
            "  {node}[\"{}\"]:::missing",
            escape(&format!("{} (not shown)", short(id)))
        );
    }
    let has_edges = drawn.iter().any(|t| !t.dependencies.is_empty());
    let has_fixes = drawn.iter().any(|t| t.parent_task_id.is_some());
    for edge in edges {
        out.push_str(&edge);
        out.push('\n');
    }
    if !left_out.is_empty() {
        let _ = writeln!(
            out,
            "  more[\"{}\"]",
            escape(&format!(
                "and {} more task(s) not drawn: opentiger status lists them all",
                left_out.len()
            ))
        );
    }
    out.push_str(&legend(&used, has_edges, has_fixes));
    for shade in Shade::ALL {
        if used[shade as usize] {
            let _ = writeln!(out, "  classDef {} {}", shade.class(), shade.style());
        }
    }
    Some(out)
}

/// The legend (issue 51): a box per colour drawn, and what each kind of arrow drawn means.
fn legend(used: &[bool], has_edges: bool, has_fixes: bool) -> String {
    let mut out = String::from("  subgraph legend[\"Legend\"]\n    direction LR\n");
    for shade in Shade::ALL.into_iter().filter(|s| used[*s as usize]) {
        let _ = writeln!(
            out,
            "    legend_{}[\"{}\"]:::{}",
            shade.class(),
            escape(shade.meaning()),
            shade.class()
        );
    }
    if has_edges {
        out.push_str("    legend_a[\"A\"] --> legend_b[\"B: waits for A to be done\"]\n");
    }
    if has_fixes {
        out.push_str(
            "    legend_c[\"C\"] -. autofix .-> legend_d[\"D: fixes C, which follows it\"]\n",
        );
    }
    out.push_str("  end\n");
    out
}

/// What a waiting task waits for, in a few words (issue 51): the dependencies not done yet,
/// or the reason of its block. `None` for a task that waits for nothing.
fn waits_for(task: &Task, all: &BTreeMap<&TaskId, &Task>) -> Option<String> {
    let open: Vec<&str> = task
        .dependencies
        .iter()
        .filter(|d| all.get(d).is_none_or(|t| t.status != TaskStatus::Done))
        .map(short)
        .collect();
    match (task.status, task.block_reason) {
        (TaskStatus::Queued, _) if !open.is_empty() => {
            Some(format!("waits for {}", open.join(", ")))
        }
        (TaskStatus::Blocked, reason) => {
            let what = match reason {
                Some(BlockReason::AwaitingJudge) => "waits for its review",
                Some(BlockReason::NeedsRework) => "waits for its fix",
                Some(BlockReason::QuotaWait) => "waits for its agent's quota",
                Some(BlockReason::IssueLinking) => "waits for its issue",
                Some(BlockReason::Paused) => "paused",
                Some(BlockReason::AwaitingHuman) | None => "waits for you",
            };
            let why = task
                .status_reason
                .as_deref()
                .filter(|_| matches!(reason, Some(BlockReason::AwaitingHuman) | None))
                .map(|r| {
                    let first = r.split([':', ';']).next().unwrap_or(r);
                    format!(": {}", crate::report::truncate(&flat(first), WHY_CHARS))
                })
                .unwrap_or_default();
            Some(format!("{what}{why}"))
        }
        (
            TaskStatus::Queued
            | TaskStatus::Running
            | TaskStatus::Failed
            | TaskStatus::Done
            | TaskStatus::Cancelled,
            _,
        ) => None,
    }
}

/// The graph as a fenced markdown block, for the dashboard and comments.
pub fn fenced(tasks: &[Task]) -> Option<String> {
    mermaid(tasks).map(|text| format!("```mermaid\n{text}```\n"))
}

/// `323f7aee: First task` over its state word and, for a waiting task, what it waits for;
/// escaped.
fn label(task: &Task, waits: Option<&str>) -> String {
    let title = crate::report::truncate(&flat(&task.title), TITLE_CHARS);
    let why = waits
        .map(|w| format!("<br>{}", escape(w)))
        .unwrap_or_default();
    format!(
        "{}: {}<br>{}{why}",
        escape(short(&task.id)),
        escape(&title),
        escape(&task.state().to_string())
    )
}

fn short(id: &TaskId) -> &str {
    let s = id.as_str();
    s.get(..8).unwrap_or(s)
}

/// One line: newlines and runs of blanks become one space.
fn flat(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Label text Mermaid reads as plain text: letters, digits, spaces and `.,:_/+=-` as they are,
/// every other character as its entity code. Control and format characters are dropped.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if c.is_control() || is_format(c) {
            continue;
        }
        if c.is_alphanumeric() || matches!(c, ' ' | '.' | ',' | ':' | '_' | '/' | '+' | '=' | '-') {
            out.push(c);
        } else {
            let _ = write!(out, "#{};", u32::from(c));
        }
    }
    out
}

/// Unicode format characters (bidirectional overrides, zero-width ones): invisible, and able
/// to make a label read other than it is.
fn is_format(c: char) -> bool {
    matches!(c, '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{2069}' | '\u{FEFF}')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testkit::{task, TaskExt};

    /// What is left of a label once our own `<br>` and the entity codes are taken out.
    fn residue(label: &str) -> String {
        let mut out = String::new();
        let mut rest = label.replace("<br>", " ");
        while let Some(at) = rest.find('#') {
            out.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            let digits = after.chars().take_while(char::is_ascii_digit).count();
            assert!(
                digits > 0 && after[digits..].starts_with(';'),
                "a bare # in {label}"
            );
            rest = after[digits + 1..].to_string();
        }
        out.push_str(&rest);
        out
    }

    /// Each state its colour class, each dependency an arrow into the task that waits, a
    /// rework a dotted arrow from the task it fixes.
    #[test]
    fn tasks_are_nodes_states_are_classes_and_dependencies_are_edges() {
        let tasks = vec![
            task("aaaa1111").with(|t| t.title = "Build the parser".into()),
            task("bbbb2222")
                .deps(&["aaaa1111"])
                .blocked(BlockReason::AwaitingHuman)
                .with(|t| t.title = "Use it".into()),
            task("cccc3333").status(TaskStatus::Running).with(|t| {
                t.title = "Rework: Build the parser".into();
                t.kind = crate::model::TaskKind::Rework;
                t.parent_task_id = Some(TaskId("aaaa1111".into()));
            }),
            task("dddd4444")
                .deps(&["gone0000"])
                .status(TaskStatus::Failed),
            task("eeee5555").blocked(BlockReason::AwaitingJudge),
            task("ffff6666").deps(&["aaaa1111"]),
        ];
        let mut tasks = tasks;
        tasks[1].status_reason =
            Some("two reviews said no: `opentiger task retry bbbb2222`".into());
        let text = mermaid(&tasks).unwrap();
        let got: Vec<&str> = text.lines().map(str::trim).collect();
        assert_eq!(got[0], "flowchart LR", "{text}");
        #[rustfmt::skip]
        let expected = [
            ("t0[\"aaaa1111: Build the parser<br>queued\"]:::queued", "a queued task"),
            ("t1[\"bbbb2222: Use it<br>blocked#40;awaiting_human#41;<br>waits for you: two reviews said no\"]:::person", "one waiting on a person, and why"),
            ("t2[\"cccc3333: Rework: Build the parser<br>running\"]:::running", "a running one"),
            ("t3[\"dddd4444: task dddd4444<br>failed\"]:::failed", "a failed one"),
            ("t4[\"eeee5555: task eeee5555<br>blocked#40;awaiting_judge#41;<br>waits for its review\"]:::waiting", "one waiting on the loop"),
            ("t5[\"ffff6666: task ffff6666<br>queued<br>waits for aaaa1111\"]:::queued", "one waiting for a dependency"),
            ("subgraph legend[\"Legend\"]", "a legend"),
            ("legend_person[\"waits for a person\"]:::person", "each colour drawn, named"),
            ("legend_a[\"A\"] --> legend_b[\"B: waits for A to be done\"]", "the dependency arrow, named"),
            ("legend_c[\"C\"] -. autofix .-> legend_d[\"D: fixes C, which follows it\"]", "the fix arrow, named"),
            ("m0[\"gone0000 #40;not shown#41;\"]:::missing", "a dependency not drawn"),
            ("t0 --> t1", "the dependency's edge"),
            ("t0 -. rework .-> t2", "the rework's edge"),
            ("m0 --> t3", "an edge from a task not drawn"),
            ("classDef person fill:#ffd8b5,stroke:#bc4c00,color:#3d1300,stroke-width:2px", "the person colour"),
            ("classDef missing fill:#ffffff,stroke:#8c959f,color:#57606a,stroke-dasharray:2 2", "the not-drawn colour"),
        ];
        for (needle, why) in expected {
            assert!(got.contains(&needle), "{why}: `{needle}` not in:\n{text}");
        }
        assert!(
            !text.contains("classDef done") && !text.contains("legend_done"),
            "unused classes are left out:\n{text}"
        );
        assert_eq!(mermaid(&[]), None);
        assert_eq!(
            fenced(&tasks[..1]).unwrap(),
            format!("```mermaid\n{}```\n", mermaid(&tasks[..1]).unwrap())
        );
    }

    /// Titles come from issues: nothing in one ends the label, the diagram or the fence, or
    /// adds markup; what is left of a label besides entity codes is plain.
    #[test]
    fn labels_are_escaped() {
        #[rustfmt::skip]
        let cases: &[(&str, &str)] = &[
            ("say \"hi\"", "say #34;hi#34;"),
            ("a\"]; click t0 href \"x\"", "a#34;#93;#59; click t0 href #34;x#34;"),
            ("```\nend", "#96;#96;#96; end"),
            ("<img src=x onerror=alert(1)>", "#60;img src=x onerror=alert#40;1#41;#62;"),
            ("line\nbreak\r\nhere", "line break here"),
            ("50% #1 {x} |y|", "50#37; #35;1 #123;x#125; #124;y#124;"),
            ("tab\there", "tab here"),
            ("rtl\u{202E}txt zero\u{200B}width", "rtltxt zerowidth"),
            ("émoji ✓ 中文", "émoji #10003; 中文"),
        ];
        for (title, shown) in cases {
            let t = task("aaaa1111").with(|t| t.title = (*title).into());
            let text = mermaid(&[t]).unwrap();
            let node = text.lines().nth(1).unwrap();
            assert!(
                node.contains(&format!("aaaa1111: {shown}<br>")),
                "{title:?}: {node}"
            );
            let label = node
                .split_once("[\"")
                .unwrap()
                .1
                .rsplit_once("\"]")
                .unwrap()
                .0;
            let plain = residue(label);
            assert!(
                plain
                    .chars()
                    .all(|c| c.is_alphanumeric() || " .,:_/+=-".contains(c)),
                "{title:?}: {plain:?} left in {label}"
            );
        }
    }

    /// A big backlog draws the cap and says how many were left out; active tasks are drawn
    /// before finished ones.
    #[test]
    fn a_big_backlog_is_capped_and_says_what_is_left_out() {
        let mut tasks: Vec<Task> = (0..MAX_NODES + 5)
            .map(|i| task(&format!("t{i:07}")).status(TaskStatus::Done))
            .collect();
        tasks.push(task("active00").with(|t| t.title = "Still to do".into()));
        let text = mermaid(&tasks).unwrap();
        let nodes = text
            .lines()
            .filter(|l| l.contains(":::") && !l.contains("legend_"))
            .count();
        assert_eq!(nodes, MAX_NODES, "{text}");
        assert!(
            text.contains("t0[\"active00: Still to do"),
            "active first:\n{text}"
        );
        assert!(
            text.contains(
                "more[\"and 6 more task#40;s#41; not drawn: opentiger status lists them all\"]"
            ),
            "{text}"
        );
    }
}

//! codex's turn cap, kept by opentiger: `codex exec` has no `--max-turns`, so a model that calls
//! a tool on every turn runs until the agent's timeout (recorded with 0.169.0 against a stand-in
//! answering every request with a shell call: 958 commands in two minutes). [`ToolCap`] counts
//! the tool calls codex reports (`item.started` / `item.completed` of a command, a file change,
//! an MCP tool call or a web search, each item once by its id) and stops codex when it begins
//! one past `agents.<role>.max_turns`: for codex a turn is a tool call. Not for: the reconnect
//! loop (`executor::codex::ReconnectWatch`), reading the result (`executor::codex::parse`), or
//! what a turn-cap failure does to the task (`engine::outcome`).

use std::collections::HashSet;
use std::time::Duration;

use super::adapter::Watcher;
use super::report::{self, text_at};
use super::{AgentFailure, AgentFailureKind};

/// The item types codex reports for a tool it called (`codex exec --json`).
const TOOL_ITEMS: &[&str] = &[
    "command_execution",
    "file_change",
    "mcp_tool_call",
    "web_search",
];

/// Counts codex's tool calls and stops it at the one past the cap (see the module documentation).
pub struct ToolCap {
    max_turns: u32,
    /// The tool calls counted so far.
    calls: u32,
    /// Their ids, so that an item's start and end count once: at most `max_turns` + 1 (that one
    /// stops the run).
    seen: HashSet<String>,
}

impl ToolCap {
    pub fn new(max_turns: u32) -> ToolCap {
        ToolCap {
            max_turns,
            calls: 0,
            seen: HashSet::new(),
        }
    }
}

impl Watcher for ToolCap {
    fn line(&mut self, line: &str, _at: Duration) -> Option<AgentFailure> {
        let event = serde_json::from_str::<serde_json::Value>(line).ok()?;
        if !matches!(
            text_at(&event, "/type"),
            Some("item.started" | "item.completed")
        ) {
            return None;
        }
        let kind = text_at(&event, "/item/type")?;
        if !TOOL_ITEMS.contains(&kind) {
            return None;
        }
        // An item without an id is counted as a new one: a cap holds even then.
        match text_at(&event, "/item/id") {
            Some(id) if !id.is_empty() && !self.seen.insert(id.to_string()) => return None,
            _ => {}
        }
        if self.calls >= self.max_turns {
            return Some(report::failure(
                AgentFailureKind::MaxTurns,
                format!(
                    "codex began tool call {} (cap {}: for codex `max_turns` counts its tool calls) and was stopped",
                    self.calls + 1,
                    self.max_turns
                ),
            ));
        }
        self.calls += 1;
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> String {
        crate::executor::recorded("codex", name)
    }

    /// The line a cap of `max_turns` stops codex's recorded output at, with the failure.
    fn stopped_at(max_turns: u32, name: &str) -> Option<(usize, AgentFailure)> {
        let mut cap = ToolCap::new(max_turns);
        fixture(name)
            .lines()
            .enumerate()
            .find_map(|(i, line)| cap.line(line, Duration::ZERO).map(|f| (i, f)))
    }

    /// Recorded with the real codex 0.169.0 against the stand-in's tool loop: each command is an
    /// `item.started` then an `item.completed` of the same id, counted once; the fourth command
    /// is stopped as it starts, before it runs, as a turn-cap failure.
    #[test]
    fn a_tool_loop_is_stopped_at_the_call_past_the_cap() {
        let recorded = fixture("tool_loop.jsonl");
        let (at, f) = stopped_at(3, "tool_loop.jsonl").expect("stopped");
        let line = recorded.lines().nth(at).unwrap();
        assert!(
            line.contains("\"item.started\"") && line.contains("\"id\":\"item_5\""),
            "{line}"
        );
        assert_eq!(f.kind, AgentFailureKind::MaxTurns);
        assert_eq!(
            f.message,
            "codex began tool call 4 (cap 3: for codex `max_turns` counts its tool calls) and was stopped"
        );
        // A cap the run stays within never stops it: the recorded success calls two tools (a
        // command, a file change); reconnects are no tool calls.
        assert!(stopped_at(8, "tool_loop.jsonl").is_none());
        assert!(stopped_at(2, "success.jsonl").is_none());
        assert!(stopped_at(1, "success.jsonl").is_some());
        for name in ["network_retries.jsonl", "websocket_fallback.jsonl"] {
            assert!(stopped_at(1, name).is_none(), "{name}");
        }
    }

    /// Every kind of tool item counts once, whether codex reports its start, its end or both;
    /// messages, reasoning and errors never count.
    #[test]
    fn each_tool_item_counts_once_and_nothing_else_counts() {
        #[rustfmt::skip]
        let cases: &[(&str, &[&str], bool)] = &[
            ("a started and completed command is one call",
                &[r#"{"type":"item.started","item":{"id":"a","type":"command_execution"}}"#,
                  r#"{"type":"item.completed","item":{"id":"a","type":"command_execution"}}"#], false),
            ("two file changes are two calls",
                &[r#"{"type":"item.completed","item":{"id":"a","type":"file_change"}}"#,
                  r#"{"type":"item.completed","item":{"id":"b","type":"file_change"}}"#], true),
            ("an MCP call then a web search",
                &[r#"{"type":"item.started","item":{"id":"a","type":"mcp_tool_call"}}"#,
                  r#"{"type":"item.completed","item":{"id":"b","type":"web_search"}}"#], true),
            ("items without ids each count",
                &[r#"{"type":"item.completed","item":{"type":"command_execution"}}"#,
                  r#"{"type":"item.completed","item":{"type":"command_execution"}}"#], true),
            ("messages, reasoning, errors and plans are not tool calls",
                &[r#"{"type":"item.completed","item":{"id":"a","type":"command_execution"}}"#,
                  r#"{"type":"item.completed","item":{"id":"b","type":"agent_message","text":"x"}}"#,
                  r#"{"type":"item.completed","item":{"id":"c","type":"reasoning","text":"x"}}"#,
                  r#"{"type":"item.completed","item":{"id":"d","type":"error","message":"x"}}"#,
                  r#"{"type":"item.updated","item":{"id":"e","type":"todo_list"}}"#,
                  r#"{"type":"turn.completed","usage":{}}"#,
                  "not json"], false),
        ];
        for (what, lines, stops) in cases {
            let mut cap = ToolCap::new(1);
            let stopped = lines
                .iter()
                .any(|line| cap.line(line, Duration::ZERO).is_some());
            assert_eq!(stopped, *stops, "{what}");
        }
        // Items without ids go on counting past the first.
        let bare = r#"{"type":"item.completed","item":{"type":"command_execution"}}"#;
        let mut cap = ToolCap::new(2);
        let stopped = (1..=5).find(|_| cap.line(bare, Duration::ZERO).is_some());
        assert_eq!(stopped, Some(3));
    }
}

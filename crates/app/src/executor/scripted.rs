//! The `scripted` executor: a deterministic agent that follows a JSON script. `opentiger demo`
//! runs the whole loop with it, and tests use it where a shell script would be clumsier.
//! Not for: the demo's sample repository and its script (`demo`), or running a shell script as
//! the agent (`executor::command`).
//!
//! ```json
//! {"tasks":   [{"match": "Add subtraction", "attempts": [{"write": {"src/ops.py": "..."}}, ...]}],
//!  "reviews": [{"match": "Document",        "verdicts": [{"verdict": "request_changes", ...}, ...]}]}
//! ```
//! A task uses the longest entry whose `match` is part of its title, and attempt N its N-th step
//! (the last step repeats). A review uses the N-th verdict for the N-th review of that change.
//! No entry: a task changes nothing, a review approves.

use std::collections::BTreeMap;
use std::path::{Component, Path};

use serde::Deserialize;

use super::{AgentExit, AgentRequest, AgentResult, Executor, ExecutorError};
use crate::config::AgentRole;

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Script {
    #[serde(default)]
    pub tasks: Vec<TaskScript>,
    #[serde(default)]
    pub reviews: Vec<ReviewScript>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaskScript {
    #[serde(rename = "match")]
    pub pattern: String,
    pub attempts: Vec<Step>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Step {
    /// Files to write, relative to the workspace.
    pub write: BTreeMap<String, String>,
    pub delete: Vec<String>,
    /// Print this and exit with code 1 instead of finishing (e.g. a quota message).
    pub fail: Option<String>,
    pub summary: Option<String>,
    pub cost_usd: Option<f64>,
}

#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReviewScript {
    #[serde(rename = "match")]
    pub pattern: String,
    pub verdicts: Vec<serde_json::Value>,
}

impl Script {
    pub fn load(path: &Path) -> Result<Script, ExecutorError> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            ExecutorError::Unavailable(format!(
                "scripted agent: cannot read {}: {e}",
                path.display()
            ))
        })?;
        Script::parse(&text).map_err(|e| {
            ExecutorError::Unavailable(format!("scripted agent: {}: {e}", path.display()))
        })
    }

    pub fn parse(text: &str) -> Result<Script, String> {
        serde_json::from_str(text).map_err(|e| format!("line {}: {e}", e.line()))
    }
}

pub struct ScriptedExecutor {
    script: Script,
}

impl ScriptedExecutor {
    pub fn new(script: Script) -> ScriptedExecutor {
        ScriptedExecutor { script }
    }

    fn work(&self, req: &AgentRequest<'_>) -> Result<AgentResult, ExecutorError> {
        // The most specific entry wins: "AutoFix 1/3: Add x" over "Add x".
        let entry = self
            .script
            .tasks
            .iter()
            .filter(|t| req.task.title.contains(&t.pattern))
            .max_by_key(|t| t.pattern.len());
        let Some(entry) = entry.filter(|e| !e.attempts.is_empty()) else {
            let mut r = AgentResult::finished(Some(
                serde_json::json!({"summary": "no script step for this task: nothing changed"}),
            ));
            r.output_tail = format!("scripted agent: no script for \"{}\"", req.task.title);
            return Ok(r);
        };
        let index = (req.attempt as usize).min(entry.attempts.len() - 1);
        let step = &entry.attempts[index];
        for (path, text) in &step.write {
            let target = safe_join(req.workspace, path)?;
            if let Some(dir) = target.parent() {
                std::fs::create_dir_all(dir).map_err(|e| ExecutorError::Io(e.to_string()))?;
            }
            std::fs::write(&target, text)
                .map_err(|e| ExecutorError::Io(format!("{}: {e}", target.display())))?;
        }
        for path in &step.delete {
            let _ = std::fs::remove_file(safe_join(req.workspace, path)?);
        }
        if let Some(message) = &step.fail {
            let mut r = AgentResult::finished(None);
            r.exit = AgentExit::Failed(Some(1));
            r.output_tail = message.clone();
            return Ok(r);
        }
        let summary = step.summary.clone().unwrap_or_else(|| {
            format!(
                "step {} of \"{}\": wrote {} file(s)",
                index + 1,
                entry.pattern,
                step.write.len()
            )
        });
        let mut r = AgentResult::finished(Some(serde_json::json!({
            "summary": summary,
            "cost_usd": step.cost_usd.unwrap_or(0.0),
        })));
        r.output_tail = format!("scripted agent: {summary}");
        Ok(r)
    }

    fn review(&self, req: &AgentRequest<'_>) -> AgentResult {
        let verdict = self
            .script
            .reviews
            .iter()
            .find(|r| req.task.title.contains(&r.pattern))
            .and_then(|r| r.verdicts.get((req.attempt as usize).min(r.verdicts.len().saturating_sub(1))))
            .cloned()
            .unwrap_or_else(|| serde_json::json!({"verdict": "approve", "summary": "scripted review: looks good", "findings": []}));
        let mut r = AgentResult::finished(Some(verdict));
        r.output_tail = "scripted judge".to_string();
        r
    }
}

/// `path` inside `root`, refusing absolute paths and `..`.
fn safe_join(root: &Path, path: &str) -> Result<std::path::PathBuf, ExecutorError> {
    let p = Path::new(path);
    let ok = !path.is_empty()
        && p.components()
            .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
    if ok {
        Ok(root.join(p))
    } else {
        Err(ExecutorError::Unavailable(format!(
            "scripted agent: `{path}` is not a path inside the workspace"
        )))
    }
}

impl Executor for ScriptedExecutor {
    fn name(&self) -> &str {
        "scripted"
    }

    fn run(&self, req: &AgentRequest<'_>) -> Result<AgentResult, ExecutorError> {
        match req.role {
            AgentRole::Judge => Ok(self.review(req)),
            AgentRole::Task(_) => self.work(req),
            AgentRole::Planner => Ok(AgentResult::finished(Some(
                serde_json::json!({"tasks": []}),
            ))),
            // The demo's changes are its own: nothing to flag.
            AgentRole::Detector => Ok(AgentResult::finished(Some(
                serde_json::json!({"verdict": "clean", "findings": []}),
            ))),
        }
    }
}

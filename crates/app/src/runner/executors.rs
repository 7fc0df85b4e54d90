//! Which executor of its role's chain an agent run uses (issue 9 fallbacks): every entry is
//! built (a missing program, an unreadable script or a missing key makes it unavailable), then
//! `engine::fallback::choose_executor` picks the first that can run and is not parked (on a
//! quota, or for a configuration that failed and has not changed: issue 18). Not for: the rule
//! that picks and parks (`engine::fallback`), building an entry (`executor::chain`), or keeping
//! the parks (`store::executors`).

use super::Act;
use crate::config::{AgentRole, EffectiveAgent};
use crate::engine::fallback::{choose_executor, ChainEntry, ExecutorUse};
use crate::executor::{self, Executor, ExecutorError};

/// The executor a run uses, and how it was chosen.
pub struct Chosen {
    pub agent: EffectiveAgent,
    pub exec: Box<dyn Executor>,
    /// What the run records as its executor, e.g. `codex (fallback 1: claude-code waits on
    /// quota until 2026-11-21T12:40:00Z)`.
    pub label: String,
    pub usage: ExecutorUse,
}

/// Why no executor of the role's chain can run.
#[derive(Debug)]
pub struct NoExecutor {
    pub message: String,
    /// Every executor lacks a key (or the parked ones failed on their configuration): a person
    /// fixes the configuration; retrying would not help (issue 18).
    pub config: bool,
}

impl std::fmt::Display for NoExecutor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl From<NoExecutor> for String {
    fn from(e: NoExecutor) -> String {
        e.message
    }
}

/// Chooses the role's executor; `Err` when none can run, naming each one's problem.
pub fn choose(act: &Act<'_>, role: AgentRole) -> Result<Chosen, NoExecutor> {
    let chain = act.config.agents.chain(role);
    let mut built: Vec<_> = chain
        .iter()
        .map(|agent| executor::build(agent, role, act.repo))
        .collect();
    let entries: Vec<ChainEntry> = chain
        .iter()
        .zip(&built)
        .map(|(agent, exec)| ChainEntry {
            key: agent.executor_key(),
            available: exec.is_ok(),
            config: executor::config_fingerprint(agent, |k| std::env::var(k).ok()),
        })
        .collect();
    let choice = choose_executor(&entries, act.executor_waits, act.now);
    if !entries[choice.index].available {
        let errors: Vec<&ExecutorError> = built.iter().filter_map(|b| b.as_ref().err()).collect();
        let config = errors
            .iter()
            .all(|e| matches!(e, ExecutorError::Misconfigured(_)));
        let texts: Vec<String> = errors.iter().map(|e| e.to_string()).collect();
        return Err(NoExecutor {
            message: executor::none_usable(role, &chain, &texts),
            config,
        });
    }
    let exec = built.swap_remove(choice.index).map_err(|e| NoExecutor {
        message: e.to_string(),
        config: false,
    })?;
    let label = choice.label(&entries);
    if choice.index > 0 || !choice.ready {
        tracing::info!(role = role.name(), executor = %label, "executor chosen");
    }
    Ok(Chosen {
        agent: chain[choice.index].clone(),
        exec,
        label,
        usage: ExecutorUse {
            chain: entries,
            index: choice.index,
        },
    })
}

//! Which executor of its role's chain an agent run uses (issue 9 fallbacks): every entry is
//! built (a missing program or an unreadable script makes it unavailable), then
//! `engine::fallback::choose_executor` picks the first that can run and is not parked on a quota.

use super::Act;
use crate::config::{AgentRole, EffectiveAgent};
use crate::engine::fallback::{choose_executor, ChainEntry, ExecutorUse};
use crate::executor::{self, Executor};

/// The executor a run uses, and how it was chosen.
pub struct Chosen {
    pub agent: EffectiveAgent,
    pub exec: Box<dyn Executor>,
    /// What the run records as its executor, e.g. `codex (fallback 1: claude-code waits on
    /// quota until 2026-11-21T12:40:00Z)`.
    pub label: String,
    pub usage: ExecutorUse,
}

/// Chooses the role's executor; `Err` when none can run, naming each one's problem.
pub fn choose(act: &Act<'_>, role: AgentRole) -> Result<Chosen, String> {
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
        })
        .collect();
    let choice = choose_executor(&entries, act.executor_waits, act.now);
    if !entries[choice.index].available {
        let errors: Vec<String> = built
            .iter()
            .filter_map(|b| b.as_ref().err().map(|e| e.to_string()))
            .collect();
        return Err(executor::none_usable(role, &chain, &errors));
    }
    let exec = built.swap_remove(choice.index).map_err(|e| e.to_string())?;
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
